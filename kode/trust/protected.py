"""The paths of a workspace that sandboxed commands never write; where kode keeps its state.

kode later trusts some files a command in the workspace could otherwise change: git runs what
``.git`` holds (hooks, config), the memory tool puts ``.kode/memory.md`` into the next system
prompt (and ``.kode/`` holds other settings), kode runs from a workspace's virtual environment,
and its session stores and DBOS database hold what a worker resumes or schedules. This module
says which those paths are (`protected_paths`, for the sandbox; `protected_reason`, for the
file tools, which ask a person before writing there) and where kode keeps its own state by
default (`kode_home`, outside any workspace). It does not mount anything
(`kode.trust.sandbox` does) and does not decide about approval (the tools do).
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

__all__ = [
    "PROTECTED_NAMES",
    "SQLITE_COMPANIONS",
    "ProtectedPath",
    "kode_home",
    "protect_database",
    "protected_databases",
    "protected_paths",
    "protected_reason",
]

PROTECTED_NAMES: tuple[str, ...] = (".git", ".kode", ".venv", "venv", ".direnv")
"""Names at a workspace root that commands never write: git's directory (or a worktree's
``.git`` file and the directory it names), kode's own directory, and the usual places of a
project's virtual environment (``.direnv`` holds direnv's). ``.kode`` is kept from being made
too, where it does not exist yet; the others are protected when they exist."""

SQLITE_COMPANIONS: tuple[str, ...] = ("-wal", "-shm", "-journal")
"""The files SQLite keeps beside a database: a journal or write-ahead log written beside it is
replayed into the database when it is next opened, so they are protected with it, and kept
from being made."""

LEGACY_DATABASES: tuple[str, ...] = ("kode-dbos.sqlite",)
"""Databases kode used to make in the current directory: protected where they still are."""

_databases: set[str] = set()
_lock = threading.Lock()


def kode_home() -> Path:
    """Where kode keeps its own state: ``$KODE_HOME``, else ``~/.kode`` (absolute, not made)."""
    home = os.environ.get("KODE_HOME")
    return Path(os.path.abspath(os.path.expanduser(home) if home else Path.home() / ".kode"))


def protect_database(path: str | os.PathLike[str]) -> None:
    """Record that kode uses the SQLite database `path` in this process.

    A session store or a DBOS system database calls it when opened: a sandboxed command of
    this process may then not write it, nor the companions SQLite would replay into it, if
    it lies in the workspace.
    """
    absolute = os.path.abspath(os.fspath(path))
    with _lock:  # both spellings: the workspace may be named through a link, or not
        _databases.update({absolute, os.path.realpath(absolute)})


def protected_databases() -> tuple[str, ...]:
    """The databases `protect_database` recorded, in the order of their paths."""
    with _lock:
        return tuple(sorted(_databases))


@dataclass(kw_only=True, frozen=True, slots=True)
class ProtectedPath:
    """One path commands may not write."""

    path: str
    """An absolute path, inside the workspace root it was found for."""
    missing: Literal["dir", "file"] | None = None
    """When it does not exist: what to put there so that nothing can be made there (an empty
    read-only directory, or an empty file no write reaches); `None` when it exists."""


def _under(path: str, base: str) -> bool:
    return path == base or path.startswith(base.rstrip("/") + "/")


def _git_dir(path: str) -> bool:
    """Whether `path` looks like a git directory (what a ``gitdir:`` line may name)."""
    return os.path.isdir(path) and (
        os.path.isfile(os.path.join(path, "HEAD")) or os.path.isdir(os.path.join(path, "objects"))
    )


def _git_paths(root: str) -> tuple[list[str], list[str]]:
    """``.git`` at `root`, and the git directories a worktree's ``.git`` file leads to.

    The first list is under `root`; the second holds the directory a worktree's ``gitdir:``
    line names and its ``commondir`` (the main repository's), wherever they are, when they
    are git directories (git needs both to work in the worktree).
    """
    git = os.path.join(root, ".git")
    here: set[str] = set()
    there: set[str] = set()
    if os.path.lexists(git):
        here |= {git} if not os.path.islink(git) else set()
        there.add(os.path.realpath(git))
    if os.path.isfile(git):
        with contextlib.suppress(OSError, UnicodeDecodeError):
            with open(git, encoding="utf-8") as gitfile:
                first = gitfile.readline().strip()
            if first.startswith("gitdir:"):
                named = os.path.join(root, first[len("gitdir:") :].strip())
                there |= {os.path.abspath(named), os.path.realpath(named)}
                common = os.path.join(named, "commondir")
                if os.path.isfile(common):
                    with open(common, encoding="utf-8") as commondir:
                        main = os.path.join(named, commondir.readline().strip())
                    there |= {os.path.abspath(main), os.path.realpath(main)}
    return (
        sorted(p for p in here if os.path.exists(p)),
        sorted(p for p in there - here if _under(p, root) or _git_dir(p)),
    )


def protected_paths(
    root: str | os.PathLike[str],
    *,
    databases: Iterable[str] | None = None,
    reserve_kode: bool = True,
) -> list[ProtectedPath]:
    """What commands may not write under the workspace root `root`.

    The `PROTECTED_NAMES` that exist, ``.kode`` also when it does not (``missing="dir"``,
    unless `reserve_kode` is false: an extra path of a workspace, where kode reads nothing);
    `kode_home` and the Python environment kode runs from, when they are under `root`; and
    every database of `databases` (default: `protected_databases` and the
    `LEGACY_DATABASES` at `root`) under `root`, with its `SQLITE_COMPANIONS`, each made an
    empty file no write reaches when missing. A symbolic link among them stands for its
    target, kept when it is under `root`. A worktree's ``.git`` file also brings the git
    directories it leads to, wherever they are (git directories only).
    """
    base = os.path.abspath(os.fspath(root))
    real_base = os.path.realpath(base)
    found: dict[str, ProtectedPath] = {}

    def inside(path: str) -> bool:
        return _under(path, base) or _under(path, real_base)

    def add(path: str, missing: Literal["dir", "file"] | None = None) -> None:
        if path not in found:
            found[path] = ProtectedPath(path=path, missing=missing)

    def add_existing(path: str) -> bool:
        """Add `path` (a link by its target, under `root` only); whether it exists."""
        if not os.path.lexists(path):
            return False
        real = os.path.realpath(path)
        for one in {real} if os.path.islink(path) else {path, real}:
            if inside(one) and os.path.exists(one):
                add(one)
        return True

    here, there = _git_paths(base)
    for path in [*here, *there]:
        add(path)
    for name in PROTECTED_NAMES[1:]:
        path = os.path.join(base, name)
        if not add_existing(path) and name == ".kode" and reserve_kode:
            add(path, "dir")
    add_existing(str(kode_home()))
    for prefix in (sys.prefix, os.path.dirname(sys.executable)):
        if inside(prefix) and prefix not in (base, real_base):
            add_existing(prefix)
    if databases is None:
        legacy = [os.path.join(base, name) for name in LEGACY_DATABASES]
        databases = [*protected_databases(), *(p for p in legacy if os.path.isfile(p))]
    for database in databases:
        if not inside(database):
            continue  # a string test first: a process may have opened many
        for path in (database, *(database + end for end in SQLITE_COMPANIONS)):
            if add_existing(path) or not inside(path):
                continue
            if os.path.isdir(os.path.dirname(path)):
                add(path, "file")
    return sorted(found.values(), key=lambda p: p.path)


PROTECTED_REASON = (
    "writes where kode later trusts what it finds ({what}): a command or a tool call could "
    "otherwise change kode's memory and settings, the environment it runs from, or its "
    "databases"
)
"""Why the writing tools ask for approval for a path `protected_reason` names."""


def protected_reason(path: Path, root: Path) -> str | None:
    """Why a write of `path` (resolved, under the workspace root `root`) needs approval, or `None`.

    Paths under ``.kode``, a virtual environment of `PROTECTED_NAMES`, `kode_home`, the
    Python environment kode runs from, and kode's databases (`protect_database`) with their
    companions. ``.git`` is left to the file tools' own, finer rule. Names are compared
    without case, for case-insensitive file systems.
    """
    try:
        parts = path.relative_to(root).parts
    except ValueError:
        parts = ()
    if parts and parts[0].lower() in {n.lower() for n in PROTECTED_NAMES[1:]}:
        return PROTECTED_REASON.format(what=f"{parts[0]}/")
    text = str(path)
    home = str(kode_home())
    if _under(text, home) or _under(text, os.path.realpath(home)):
        return PROTECTED_REASON.format(what="kode's home")
    for place in protected_paths(root):
        if _under(text, place.path) and os.path.basename(place.path) != ".git":
            return PROTECTED_REASON.format(what=os.path.relpath(place.path, root))
    return None
