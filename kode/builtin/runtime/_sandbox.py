"""The OS sandbox of commands that run without a person's approval: bubblewrap, on Linux.

This module owns what a sandboxed ``bash_run`` command may touch and how that is enforced: `Sandbox`
(the settings of one command, from the `RuntimePolicy` and the workspace) turns into a ``bwrap``
command line; `sandbox_support` says, once per process and program, whether bubblewrap works here at
all (it runs it); `seccomp_program` is the system-call filter the sandbox loads. It does not decide
whether a command needs approval (`kode.builtin.runtime._policy`) and does not run or kill anything
(`kode.builtin.runtime._processes`, `kode.builtin.runtime._launch_and_kill`).

What a sandboxed command gets:

- the whole file system read-only (``--ro-bind / /``), with a private ``/tmp`` and
  ``/var/tmp`` (empty, writable, gone when it ends), a private ``/run`` (sockets of system
  services, such as Docker's, are not reachable), a minimal ``/dev`` and its own ``/proc``;
- the workspace (root and extra paths) writable under ``workspace-write``, read-only under
  ``read-only``; the workspace's ``.git`` stays read-only in both (a hook or a config written
  there would run outside the sandbox, the next time a person uses git);
- the hidden paths (`DEFAULT_HIDDEN_PATHS`, or the policy's): a directory is replaced by an
  empty read-only one, a file by an empty file;
- the agent's skill folders read-only, wherever they are (in the workspace, under ``/tmp``);
- no network (a network namespace of its own, with only a loopback nobody listens on) unless
  the policy allows it; no Unix-domain socket either way (a system-call filter refuses to
  make one, on x86-64 and arm64); no kernel keyrings;
- a PID namespace of its own: it sees only its own processes, cannot signal anything outside,
  and every process in it dies with the namespace's first process, the command's supervisor
  (``--as-pid-1``), which cannot be signalled from inside and exits when the kode process has
  ended (a pipe only kode writes to reaches its end; see
  `kode.builtin.runtime._launch_and_kill.lifeline`), so even a SIGKILL of kode leaves nothing
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
import platform
import shutil
import struct
import subprocess
import sys
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

__all__ = [
    "DEFAULT_HIDDEN_PATHS",
    "SANDBOX_MODES",
    "Sandbox",
    "SandboxMode",
    "SandboxSupport",
    "announce_unavailable",
    "known_support",
    "sandbox_support",
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
    "~/.bash_history",
    "~/.zsh_history",
    "~/.python_history",
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/sudoers",
    "/etc/sudoers.d",
    "/etc/ssh/ssh_host_*_key",
)
"""What sandboxed commands see empty by default: credentials of cloud, package and version
control tools, keys, browser profiles, shell histories, and the system's password hashes and
host keys. ``~`` is the kode process's home; ``*`` and ``?`` match as in the shell; a relative
path is taken from the workspace root. Paths that do not exist are skipped."""

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
    found = shutil.which(program)
    if found is None:
        return SandboxSupport(
            available=False,
            reason=f"bubblewrap ({program!r}) is not installed (Debian and Ubuntu: apt install "
            "bubblewrap; Fedora: dnf install bubblewrap)",
        )
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
                env={"PATH": os.environ.get("PATH", os.defpath)},
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
        "kode: no OS sandbox for shell commands: %s. Commands that are not on the safe list of "
        "read-only commands will ask for approval, whatever the policy's ask level. Install "
        "bubblewrap, or set RuntimePolicy(sandbox='off') to run commands unconfined on "
        "purpose.",
        support.reason,
    )
    return support


# --- the system-call filter -----------------------------------------------------------------------

# struct sock_filter {u16 code; u8 jt; u8 jf; u32 k}, over struct seccomp_data {int nr; u32 arch;
# u64 ip; u64 args[6]}: the low half of args[0] is at offset 16 on little-endian machines.
_LD = 0x20  # BPF_LD | BPF_W | BPF_ABS, at one of these offsets:
_NR, _ARCH, _ARG0 = 0, 4, 16
_JEQ = 0x15
_JSET = 0x45
_RET = 0x06
_ALLOW = 0x7FFF0000
_KILL = 0x80000000
_EPERM = 0x00050000 | 1
_AF_UNIX = 1

# arch: (audit arch, socket, socketcall or None, keyring calls, x32 bit)
_ARCHES: dict[str, list[tuple[int, int, int | None, tuple[int, ...], int]]] = {
    "x86_64": [
        (0xC000003E, 41, None, (248, 249, 250), 0x40000000),
        (0x40000003, 359, 102, (286, 287, 288), 0),  # i386 programs
    ],
    "aarch64": [
        (0xC00000B7, 198, None, (217, 218, 219), 0),
        (0x40000028, 281, None, (309, 310, 311), 0),  # 32-bit ARM programs
    ],
}


def seccomp_program(machine: str | None = None) -> bytes | None:
    """The filter a sandboxed command runs under (`None` on an architecture it does not know).

    It refuses, with EPERM, to create a Unix-domain socket (``socket(AF_UNIX, ...)``, and on
    32-bit x86 ``socketcall`` altogether) and the kernel keyring calls (``add_key``,
    ``request_key``, ``keyctl``); it kills x32-ABI calls on x86-64; everything else is allowed.
    """
    arches = _ARCHES.get(machine or platform.machine())
    if arches is None:
        return None
    # Assembled with labels, then jump offsets resolved (cBPF jumps only forward).
    code: list[tuple[int, int | str, int | str, int]] = [(_LD, 0, 0, _ARCH)]
    for index, (arch, *_) in enumerate(arches):
        code.append((_JEQ, f"arch{index}", 0, arch))
    code.append((_RET, 0, 0, _ALLOW))
    labels: dict[str, int] = {}
    for index, (_, sock, socketcall, keyring, x32) in enumerate(arches):
        labels[f"arch{index}"] = len(code)
        code.append((_LD, 0, 0, _NR))
        if x32:
            code.append((_JSET, "kill", 0, x32))
        for call in (*keyring, *([] if socketcall is None else [socketcall])):
            code.append((_JEQ, "deny", 0, call))
        code.append((_JEQ, 0, "allow", sock))
        code.append((_LD, 0, 0, _ARG0))
        code.append((_JEQ, "deny", "allow", _AF_UNIX))
    for label, action in (("allow", _ALLOW), ("deny", _EPERM), ("kill", _KILL)):
        labels[label] = len(code)
        code.append((_RET, 0, 0, action))

    def offset(at: int, target: int | str) -> int:
        return target if isinstance(target, int) else labels[target] - at - 1

    return b"".join(
        struct.pack("=HBBI", op, offset(at, jt), offset(at, jf), k)
        for at, (op, jt, jf, k) in enumerate(code)
    )


def seccomp_fd() -> int | None:
    """A descriptor holding `seccomp_program`, for bubblewrap's ``--seccomp``.

    The caller closes it once bubblewrap has started. `None`: no filter for this machine.
    """
    program = seccomp_program()
    if program is None:
        return None
    read, write = os.pipe()
    try:
        os.write(write, program)  # a few hundred bytes: far below a pipe's buffer
    finally:
        os.close(write)
    return read


# --- one command's sandbox ------------------------------------------------------------------------


def _under(path: str, base: str) -> bool:
    return path == base or path.startswith(base.rstrip("/") + "/")


def _depth(path: str) -> int:
    return len(Path(path).parts)


def _hidden(entries: Iterable[str], root: Path) -> list[str]:
    """The existing paths `entries` name (``~`` expanded, globs matched).

    The real paths of symlinks among them are added.
    """
    found: list[str] = []
    for entry in entries:
        expanded = os.path.expanduser(entry)
        if not os.path.isabs(expanded):
            expanded = str(root / expanded)
        matches = glob.glob(expanded) if glob.has_magic(expanded) else [expanded]
        for match in matches:
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
        for root in roots:
            mounts.append((_depth(root), 0, [bind, root, root]))
        for path in _runtime_paths(private):
            mounts.append((_depth(path), 0, ["--ro-bind", path, path]))
        if self.network:
            resolv = os.path.realpath("/etc/resolv.conf")
            if any(_under(resolv, p) for p in private) and os.path.exists(resolv):
                mounts.append((_depth(resolv), 0, ["--ro-bind", resolv, resolv]))
        for root in roots:
            for path in _git_paths(root):
                mounts.append((_depth(path), 1, ["--ro-bind", path, path]))
        emptied: list[str] = []
        hidden = _hidden(self.hidden, self.roots[0] if self.roots else cwd)
        for path in hidden:
            if os.path.islink(path) or any(_under(path, p) for p in private):
                continue  # a link is hidden through its target; a private tmpfs is empty
            if os.path.isdir(path):
                mounts.append((_depth(path), 2, ["--tmpfs", path]))
                emptied.append(path)
            else:
                mounts.append((_depth(path), 2, ["--ro-bind", "/dev/null", path]))
        for folder in self.read_only:  # last of its depth: nothing mounted makes it writable
            if any(_under(str(folder), h) for h in hidden):
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


def _git_paths(root: str) -> list[str]:
    """The workspace root's ``.git`` to keep read-only, as real paths too.

    A directory; or a worktree's ``.git`` file and the directory its ``gitdir:`` line names.
    """
    git = os.path.join(root, ".git")
    found = {git, os.path.realpath(git)} if os.path.lexists(git) else set()
    if os.path.isfile(git):
        with contextlib.suppress(OSError, UnicodeDecodeError):
            with open(git, encoding="utf-8") as gitfile:
                first = gitfile.readline().strip()
            if first.startswith("gitdir:"):
                named = os.path.join(root, first[len("gitdir:") :].strip())
                found |= {os.path.abspath(named), os.path.realpath(named)}
    return sorted(p for p in found if os.path.exists(p))


def _runtime_paths(private: Sequence[str]) -> list[str]:
    """The Python that runs the supervisor, when it lives where the sandbox puts a tmpfs."""
    wanted = {
        sys.prefix,
        sys.base_prefix,
        os.path.dirname(os.path.realpath(sys.executable)),
        str(Path(__file__).resolve().parent),
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
