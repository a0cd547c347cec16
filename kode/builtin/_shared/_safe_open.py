"""Opening a checked path so that the path used is the path checked, symlink swaps or not.

`kode.tools.workspace.Workspace.resolve` turns a model's path into an absolute, symlink-free
path and checks that it is inside the workspace. Opening that path by its string afterwards
would resolve it again, and a directory swapped for a symlink in between would lead outside
(check-then-open). This module opens such a path one component at a time from ``/``, each
with ``O_NOFOLLOW`` relative to the directory opened before it (``dir_fd``): since the checked
path has no symlinks, meeting one means the tree changed, and the open fails with ``ELOOP``
instead of following it. It also writes a file atomically relative to its directory's
descriptor, and walks a directory tree by descriptors without ever following a symlink. It
does not know about the workspace, the file pool or messages for the model.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "WalkEntry",
    "is_swapped",
    "open_dir",
    "open_file",
    "open_parent",
    "open_relative",
    "walk_fds",
    "write_at",
]

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
# O_PATH (Linux) opens a directory to walk through without needing read permission on it.
_WALK = getattr(os, "O_PATH", os.O_RDONLY) | _DIRECTORY | _NOFOLLOW | _CLOEXEC
_LIST = os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC
# O_NONBLOCK: opening a FIFO must not hang (the caller refuses anything but a regular file).
_READ = os.O_RDONLY | _NOFOLLOW | _CLOEXEC | getattr(os, "O_NONBLOCK", 0)
_MAX_OPEN_LEVELS = 64
"""Directory descriptors a walk keeps open; deeper levels are reopened from the root."""


def is_swapped(exc: OSError) -> bool:
    """Whether an open failed because a component is a symlink (the tree changed under us)."""
    return exc.errno in (errno.ELOOP, errno.EMLINK)


def _parts(path: Path) -> list[str]:
    if not path.is_absolute():
        raise ValueError(f"{path} is not absolute")
    return [p for p in path.parts[1:] if p]


def open_relative(
    dir_fd: int, parts: list[str], *, flags: int = _WALK, create: bool = False
) -> int:
    """Open the directory `parts` below `dir_fd`, never following a symlink.

    With `create`, missing directories are made (mode ``0o777`` minus the umask). The caller
    closes the descriptor returned; `dir_fd` stays open.

    Raises:
        OSError: a component is missing (``ENOENT``), not a directory, or a symlink
            (``ELOOP``: see `is_swapped`).
    """
    fd = os.dup(dir_fd)
    try:
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            want = flags if last else _WALK
            try:
                nxt = os.open(part, want, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o777, dir_fd=fd)
                nxt = os.open(part, want, dir_fd=fd)
            os.close(fd)
            fd = nxt
        if not parts and flags != _WALK:
            nxt = os.open(".", flags, dir_fd=fd)
            os.close(fd)
            fd = nxt
    except BaseException:
        os.close(fd)
        raise
    return fd


def _root(flags: int = _WALK) -> int:
    return os.open("/", flags & ~_NOFOLLOW)


def open_dir(path: Path, *, listable: bool = True) -> int:
    """A descriptor of the directory at the absolute, symlink-free `path`.

    `listable` opens it for reading (`os.scandir` needs that); otherwise only to open
    files relative to it.
    """
    root = _root()
    try:
        return open_relative(root, _parts(path), flags=_LIST if listable else _WALK)
    finally:
        os.close(root)


def open_parent(path: Path, *, create: bool = False) -> int:
    """A descriptor of the directory holding `path` (absolute, symlink-free).

    With `create`, missing directories on the way are made.
    """
    root = _root()
    try:
        return open_relative(root, _parts(path)[:-1], create=create)
    finally:
        os.close(root)


def open_file(dir_fd: int, name: str) -> tuple[int, os.stat_result]:
    """Open the file `name` in `dir_fd` for reading, without following a symlink.

    Returns the descriptor and its `fstat`; a FIFO or device is opened without blocking, so
    the caller can refuse it by its mode.
    """
    fd = os.open(name, _READ, dir_fd=dir_fd)
    try:
        st = os.fstat(fd)
        if stat.S_ISREG(st.st_mode):
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def aside_name(name: str, suffix: str = ".kode-tmp") -> str:
    """A new hidden name beside `name` (random, ending in `suffix`), for a file made aside.

    The name is shortened in it, which must fit in 255 bytes too.
    """
    stem = name
    while len(stem.encode("utf-8", "surrogateescape")) > 200:
        stem = stem[: len(stem) - 8]
    return f".{stem}.{secrets.token_hex(4)}{suffix}"


def stage_at(
    dir_fd: int, name: str, data: bytes, *, mode: int | None, suffix: str = ".kode-tmp"
) -> str:
    """Write `data` to a new file beside `name` in `dir_fd`, synced; return the new file's name.

    The file is made exclusively (never through a symlink); `mode` is set on it (`None`:
    ``0o666`` minus the umask). Nothing is left behind when the write fails.
    """
    tmp = aside_name(name, suffix)
    # os.open applies the umask to 0o666 itself: no need to read it (which is not thread-safe).
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC
    fd = os.open(tmp, flags, 0o666, dir_fd=dir_fd)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            if mode is not None:
                os.fchmod(fh.fileno(), mode)
            os.fsync(fh.fileno())
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise
    return tmp


def write_at(dir_fd: int, name: str, data: bytes, *, mode: int | None) -> None:
    """Write `data` to `name` in `dir_fd` atomically: a temporary file, then a rename.

    The rename is relative to the same descriptor, so it lands in the directory that was
    opened whatever happens to its path meanwhile; it replaces a symlink at `name` rather
    than following it. `mode` is set on the new file (`None`: ``0o666`` minus the umask).
    """
    tmp = stage_at(dir_fd, name, data, mode=mode)
    try:
        os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise


@dataclass(kw_only=True, frozen=True, slots=True)
class WalkEntry:
    """A non-directory entry met by `walk_fds`."""

    rel: str
    """Its path relative to the walk's root, ``/``-separated."""
    name: str
    """Its name in its directory."""
    dir_fd: int
    """Its directory: valid until the walk moves on to the next entry."""
    is_symlink: bool
    """Whether it is a symlink (the walk never follows one)."""


@dataclass(kw_only=True, slots=True)
class _Level:
    prefix: str
    parts: list[str]
    fd: int | None
    entries: Iterator[tuple[str, bool, bool]]


def _listing(fd: int) -> Iterator[tuple[str, bool, bool]]:
    """(name, is a real directory, is a symlink) of each entry, sorted by name."""
    rows: list[tuple[str, bool, bool]] = []
    try:
        with os.scandir(fd) as it:
            for entry in it:
                try:
                    rows.append(
                        (entry.name, entry.is_dir(follow_symlinks=False), entry.is_symlink())
                    )
                except OSError:
                    continue
    except OSError:
        return iter(())
    rows.sort()
    return iter(rows)


def walk_fds(root_fd: int, prune: frozenset[str]) -> Iterator[WalkEntry]:
    """Every non-directory entry below the directory `root_fd`, in sorted path order.

    Entries of a directory come sorted by name, each directory's content right where its
    name sorts (ripgrep's ``--sort path`` order). Subdirectories are opened by descriptor with
    ``O_NOFOLLOW``: a directory swapped for a symlink mid-walk is skipped, never followed.
    Directories named in `prune` and unreadable ones are skipped. Iterative, and it keeps at
    most a fixed number of descriptors open (deeper ones are reopened from the root the same
    way), so no depth of nesting exhausts the stack or the descriptor table.
    """
    stack = [_Level(prefix="", parts=[], fd=None, entries=_listing(root_fd))]
    open_levels: list[_Level] = []

    def fd_of(level: _Level) -> int | None:
        if not level.parts:
            return root_fd
        if level.fd is None:
            try:
                level.fd = open_relative(root_fd, level.parts)
            except OSError:
                return None
            open_levels.append(level)
            if len(open_levels) > _MAX_OPEN_LEVELS:
                oldest = open_levels.pop(0)
                if oldest.fd is not None:
                    os.close(oldest.fd)
                    oldest.fd = None
        return level.fd

    def close(level: _Level) -> None:
        if level.fd is not None:
            os.close(level.fd)
            level.fd = None
            open_levels.remove(level)

    try:
        while stack:
            level = stack[-1]
            item = next(level.entries, None)
            if item is None:
                close(stack.pop())
                continue
            name, is_dir, is_link = item
            if not is_dir:
                fd = fd_of(level)
                if fd is None:  # the directory went away or was swapped: skip the rest of it
                    level.entries = iter(())
                    continue
                yield WalkEntry(rel=level.prefix + name, name=name, dir_fd=fd, is_symlink=is_link)
            elif name not in prune:
                fd = fd_of(level)
                if fd is None:
                    level.entries = iter(())
                    continue
                try:
                    child = os.open(name, _LIST, dir_fd=fd)
                except OSError:
                    continue  # swapped for a symlink, gone, or unreadable: not followed
                sub = _Level(
                    prefix=f"{level.prefix}{name}/",
                    parts=[*level.parts, name],
                    fd=child,
                    entries=iter(()),
                )
                open_levels.append(sub)
                sub.entries = _listing(child)
                stack.append(sub)
                if len(open_levels) > _MAX_OPEN_LEVELS:
                    oldest = open_levels.pop(0)
                    if oldest.fd is not None:
                        os.close(oldest.fd)
                        oldest.fd = None
    finally:
        for level in open_levels:
            if level.fd is not None:
                os.close(level.fd)
                level.fd = None
