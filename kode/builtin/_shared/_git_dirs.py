"""The git-directory rule of the writing tools: ask before a call writes or makes a repository.

git runs commands a repository names (``core.fsmonitor``, ``core.pager``, ``core.sshCommand``,
hooks, diff drivers), so a model that can write a repository that a person's next ``git`` call
finds runs a command outside every sandbox. git finds a repository in the working directory or
a directory above it, as its ``.git`` (a directory, or a file ``gitdir: path``) or as the
directory itself (a bare repository), and takes a directory for one (``is_git_directory`` in
git's ``setup.c``) when it holds a valid ``HEAD`` and an ``objects`` and a ``refs`` directory,
the last two looked up in the directory ``commondir`` names when there is that file.

The rule here is wider than git's test, so that no order of writes slips past it: a path
with a ``.git`` component asks (``GIT_WRITE_REASON``), and so does a path under a directory
that has, once the call is done, a ``HEAD`` beside any one of ``objects``, ``refs``,
``commondir`` or ``gitdir`` (``GIT_DIR_REASON``), whatever the directory's name and whatever
``HEAD`` holds. "Once the call is done" counts what is on disk and every file the call writes
with the directories it makes: one ``apply_patch`` writing ``sub/HEAD``, ``sub/objects/..``
and ``sub/refs/..`` asks as much as the last of three ``fs_write`` calls does. This module
only judges paths; it writes nothing.
"""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from kode.tools.context import ToolContext
from kode.tools.errors import ToolError
from kode.tools.workspace import Workspace

__all__ = ["GIT_DIR_REASON", "GIT_WRITE_REASON", "git_dir_reason", "in_git_dir"]

GIT_WRITE_REASON = "writes inside .git/ (git config and hooks can run commands)"
"""Why the writing tools ask for approval for a path inside ``.git``."""

GIT_DIR_REASON = (
    "writes into a git directory, or makes one (HEAD with objects, refs or commondir beside "
    "it): git uses any such directory as a repository, and its config and hooks can run "
    "commands"
)
"""Why the writing tools ask for approval for a path in a directory that looks like a git
directory (a bare repository, a worktree's git directory) without being named ``.git``."""

_MARKERS = ("objects", "refs", "commondir", "gitdir")

# Code points HFS+ ignores in names (git's is_hfs_dotgit): ".g\u200cit" is ".git" there.
_HFS_IGNORED = dict.fromkeys(
    [*range(0x200C, 0x2010), *range(0x202A, 0x202F), *range(0x206A, 0x2070), 0xFEFF]
)


def _is_dot_git(name: str) -> bool:
    """Whether a file system could take `name` for ``.git``.

    Without case (macOS, Windows), without the code points HFS+ ignores, without trailing
    dots and spaces (Windows drops them), and the short name ``git~1`` (git's own checks:
    ``is_hfs_dotgit``, ``is_ntfs_dotgit``).
    """
    folded = unicodedata.normalize("NFC", name.translate(_HFS_IGNORED)).lower().rstrip(". ")
    return folded in (".git", "git~1")


def _planned(written: Iterable[Path]) -> dict[Path, set[str]]:
    """Every directory's entries the writes make: the files and the directories above them."""
    children: dict[Path, set[str]] = {}
    for path in written:
        for parent, child in zip(path.parents, (path, *path.parents), strict=False):
            children.setdefault(parent, set()).add(child.name.lower())
    return children


def _looks_like_git_dir(directory: Path, planned: dict[Path, set[str]]) -> bool:
    made = planned.get(directory, set())

    def has(name: str) -> bool:
        return name.lower() in made or os.path.lexists(directory / name)

    return has("HEAD") and any(has(marker) for marker in _MARKERS)


def _resolved(ctx: ToolContext[Any], path: str) -> tuple[Path, Path | None] | None:
    """`path` resolved in the context's workspace and the root it is under, or `None`."""
    space = ctx.workspace if ctx.workspace is not None else Workspace(root=Path.cwd())
    try:
        resolved = space.resolve(path)
    except (ToolError, ValueError):
        return None  # the call fails on its own
    bases = (space.root, *space.extra_paths)
    return resolved, next((b for b in bases if b == resolved or b in resolved.parents), None)


def git_dir_reason(paths: Iterable[str], ctx: ToolContext[Any] | None = None) -> str | None:
    """Why writing all of `paths` in one call needs approval, or `None` (no opinion).

    `GIT_WRITE_REASON` for a ``.git`` component in a path as given or as it resolves (a
    symlink may lead there); `GIT_DIR_REASON` for a path under a directory of the workspace
    that looks like a git directory once every one of `paths` is written (see the module's
    docstring). Without a `ctx` only the names are judged. `None` leaves the decision to the
    agent's permission mode, as for a write tool without this function.
    """
    given = list(paths)
    found: list[tuple[Path, Path]] = []
    names: list[Path] = [Path(p) for p in given]
    for path in given:
        where = _resolved(ctx, path) if ctx is not None else None
        if where is None:
            continue
        resolved, base = where
        names.append(resolved if base is None else resolved.relative_to(base))
        if base is not None:
            found.append((resolved, base))
    if any(_is_dot_git(part) for name in names for part in name.parts):
        return GIT_WRITE_REASON
    planned = _planned(resolved for resolved, _ in found)
    for resolved, base in found:
        directory = base
        for part in resolved.relative_to(base).parts:
            if _looks_like_git_dir(directory, planned):
                return GIT_DIR_REASON
            directory = directory / part
    return None


def in_git_dir(arguments: dict[str, Any], ctx: ToolContext[Any] | None = None) -> str | None:
    """``requires_approval`` of ``fs_write``, ``fs_edit`` and ``fs_multi_edit``.

    `git_dir_reason` of the one ``path`` argument: a ``.git`` component, or a directory on
    the way that is, or becomes with this write, a git directory. Names are compared without
    case, for case-insensitive file systems.
    """
    path = arguments.get("path")
    if not isinstance(path, str):
        return None
    return git_dir_reason([path], ctx)
