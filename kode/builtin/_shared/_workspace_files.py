"""Shared plumbing of the file tools: paths in the workspace, the file pool, atomic writes.

This module owns what every tool of `kode.builtin.fs` does around its own job: resolving a
model's path in the workspace (the current directory when the context has none), the errors
for missing files and directories, binary sniffing, reading a file as UTF-8 text for an edit,
and writing a file atomically (a temporary file in the same directory, then a rename) while
keeping its mode. Files are opened and written relative to a descriptor of their directory,
opened without following symlinks (`kode.builtin._shared._safe_open`), so the path used is the
path the workspace checked; files with more than one hard link are refused. It does not format
anything for the model.
"""

from __future__ import annotations

import contextlib
import difflib
import os
import stat
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from kode.builtin._shared._git_dirs import GIT_DIR_REASON, GIT_WRITE_REASON, git_dir_reason
from kode.builtin._shared._safe_open import is_swapped, open_dir, open_file, open_parent, write_at
from kode.builtin._shared._skill_dirs import in_skill_dir
from kode.tools.context import ToolContext
from kode.tools.errors import ToolError, ToolErrorType
from kode.tools.workspace import Workspace
from kode.trust.protected import protected_reason

__all__ = [
    "BINARY_SNIFF_BYTES",
    "HUGE_FILE_BYTES",
    "NAME_MAX_BYTES",
    "PATH_MAX_BYTES",
    "PRUNED_DIRS",
    "GIT_DIR_REASON",
    "GIT_WRITE_REASON",
    "EditableText",
    "Target",
    "check_regular",
    "existing",
    "file_lock",
    "grep_single",
    "hard_links",
    "image_type",
    "in_git_dir",
    "trusted_later",
    "is_binary",
    "not_found",
    "open_directory",
    "open_in",
    "open_target",
    "parent_dir",
    "read_editable",
    "swapped",
    "target",
    "workspace_of",
    "write_file",
]

BINARY_SNIFF_BYTES = 8192
"""How much of a file's start is checked for NUL bytes (what git and grep do)."""

HUGE_FILE_BYTES = 10 * 1024 * 1024
"""Files larger than this are not read whole: `fs_read` needs an offset or a limit, and the
edit tools refuse them."""

PRUNED_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".jj",
        "node_modules",
        "__pycache__",
        ".venv",
        "venv",
        ".tox",
        ".nox",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
    }
)
"""Directories that searches skip unless the pattern or path names them: version control,
dependencies, virtual environments and caches, which drown a model's results."""


_locks: dict[Path, threading.Lock] = {}
_locks_guard = threading.Lock()


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """Hold the lock of one file while it is checked, read and written.

    An agent runs parallel tool calls at once: without it, two edits of one file would both
    read the old content and the second write would undo the first.
    """
    with _locks_guard:
        lock = _locks.setdefault(path, threading.Lock())
    with lock:
        yield


def workspace_of(ctx: ToolContext[Any]) -> Workspace:
    """The context's workspace, or the current directory when it has none."""
    return ctx.workspace if ctx.workspace is not None else Workspace(root=Path.cwd())


@dataclass(kw_only=True, frozen=True, slots=True)
class Target:
    """A path a model named, resolved in the workspace."""

    path: Path
    """The absolute, symlink-free path."""
    shown: str
    """How to name it to the model: relative to the workspace root when inside it."""
    workspace: Workspace
    """The workspace it was resolved in."""


NAME_MAX_BYTES = 255
"""The longest file or directory name, in bytes of UTF-8 (Linux, macOS and Windows agree)."""

PATH_MAX_BYTES = 4096
"""The longest absolute path, in bytes of UTF-8 (Linux's ``PATH_MAX``)."""


def _byte_length(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def _abridged(text: str, keep: int = 40) -> str:
    return text if len(text) <= 2 * keep else f"{text[:keep]}…{text[-keep // 2 :]}"


def _check_lengths(path: str, resolved: Path | None = None) -> None:
    for part in Path(path).parts:
        size = _byte_length(part)
        if size > NAME_MAX_BYTES:
            where = "" if part == path else f" in path '{_abridged(path)}'"
            raise ToolError(
                f"The name '{_abridged(part)}'{where} is {size} bytes long; a file or "
                f"directory name may be at most {NAME_MAX_BYTES} bytes. Use a shorter name.",
                type=ToolErrorType.INVALID_TOOL_PARAMS,
                details={"path": path, "reason": "name_too_long", "bytes": size},
            )
    size = _byte_length(str(resolved) if resolved is not None else path)
    if size > PATH_MAX_BYTES:
        how = " as an absolute path" if resolved is not None else ""
        raise ToolError(
            f"Path '{_abridged(path)}' is {size} bytes long{how}; a path may be at most "
            f"{PATH_MAX_BYTES} bytes. Use a shorter path.",
            type=ToolErrorType.INVALID_TOOL_PARAMS,
            details={"path": path, "reason": "path_too_long", "bytes": size},
        )


def target(ctx: ToolContext[Any], path: str) -> Target:
    """Resolve `path` in the context's workspace.

    Raises:
        ToolError: ``path_not_in_workspace`` when it escapes, or ``invalid_tool_params`` for
            an empty path, a name over `NAME_MAX_BYTES` or a path over `PATH_MAX_BYTES`.
    """
    if not path.strip():
        raise ToolError(
            "The path is empty; pass a file path relative to the workspace root.",
            type=ToolErrorType.INVALID_TOOL_PARAMS,
        )
    _check_lengths(path)  # before resolving: the system would only say "File name too long"
    space = workspace_of(ctx)
    resolved = space.resolve(path)
    _check_lengths(path, resolved)
    return Target(path=resolved, shown=space.display(resolved) or ".", workspace=space)


def not_found(where: Target, *, what: str = "File") -> ToolError:
    """The error for a missing file, naming close names in its directory when there are any."""
    parent = where.path.parent
    hint = ""
    names: list[str] = []
    missing = False
    try:
        # Listed through a descriptor opened without following symlinks, like the file itself.
        fd = open_dir(parent)
    except FileNotFoundError:
        missing = True
    except OSError:
        pass
    else:
        try:
            with os.scandir(fd) as it:
                names = [entry.name for entry in it]
        except OSError:
            names = []
        finally:
            os.close(fd)
    close = difflib.get_close_matches(where.path.name, names, n=3, cutoff=0.6)
    if close:
        shown = [where.workspace.display(parent / n) for n in close]
        hint = f" Did you mean {', '.join(repr(s) for s in shown)}?"
    elif missing:
        hint = f" Its directory '{where.workspace.display(parent)}' does not exist either."
    return ToolError(
        f"{what} '{where.shown}' does not exist.{hint}",
        type=ToolErrorType.FILE_NOT_FOUND,
        details={"path": str(where.path)},
    )


def swapped(where: Target) -> ToolError:
    """The error for a path whose directories changed between its check and its use."""
    return ToolError(
        f"Path '{where.shown}' changed while it was being opened (a directory or file on the "
        "way was replaced by a symlink), so it was not used: nothing was read or written. "
        "Check the path and try again.",
        details={"path": str(where.path), "reason": "swapped"},
    )


def _os_error(where: Target, exc: OSError, *, what: str = "File") -> ToolError:
    if isinstance(exc, FileNotFoundError):
        return not_found(where, what=what)
    if is_swapped(exc):
        return swapped(where)
    return ToolError(
        f"{what} '{where.shown}' cannot be opened: {exc.strerror or exc}.",
        details={"path": str(where.path)},
    )


def hard_links(where: Target, links: int) -> ToolError:
    """The error for a file with more than one hard link."""
    return ToolError(
        f"File '{where.shown}' has {links} hard links; kode does not read or write files with "
        "more than one link because one may lie outside the workspace, where its content "
        "belongs to someone else. Copy the file (cp) and use the copy instead.",
        type=ToolErrorType.PERMISSION_DENIED,
        details={"path": str(where.path), "reason": "hard_links", "links": links},
    )


def check_regular(where: Target, st: os.stat_result) -> None:
    """Refuse anything but a regular file with a single link.

    Raises:
        ToolError: a directory, a device, socket or pipe, or a file with several hard links.
    """
    if stat.S_ISDIR(st.st_mode):
        raise ToolError(
            f"'{where.shown}' is a directory, not a file; use fs_ls to list it.",
            details={"path": str(where.path)},
        )
    if not stat.S_ISREG(st.st_mode):
        raise ToolError(
            f"'{where.shown}' is not a regular file (a device, socket or pipe); it cannot be read.",
            details={"path": str(where.path)},
        )
    if st.st_nlink > 1:
        raise hard_links(where, st.st_nlink)


@contextlib.contextmanager
def parent_dir(where: Target, *, create: bool = False) -> Iterator[int]:
    """A descriptor of the directory holding `where`, opened without following symlinks.

    Everything done to the file afterwards is relative to it, so the directory used is the
    directory that was checked. With `create`, missing directories are made.

    Raises:
        ToolError: a directory on the way is missing (``file_not_found``), was swapped for a
            symlink, or cannot be opened.
    """
    try:
        fd = open_parent(where.path, create=create)
    except OSError as exc:
        if create and not is_swapped(exc):
            raise ToolError(
                f"Could not write '{where.shown}': {exc.strerror or exc}.",
                details={"path": str(where.path)},
            ) from None
        raise _os_error(where, exc) from None
    try:
        yield fd
    finally:
        os.close(fd)


def open_in(where: Target, dir_fd: int) -> tuple[BinaryIO, os.stat_result]:
    """Open the existing regular file `where` in its directory `dir_fd`, for reading.

    Raises:
        ToolError: missing, swapped for a symlink, not a regular file, or hard-linked.
    """
    try:
        fd, st = open_file(dir_fd, where.path.name)
    except OSError as exc:
        raise _os_error(where, exc) from None
    try:
        check_regular(where, st)
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb"), st


@contextlib.contextmanager
def open_target(where: Target) -> Iterator[tuple[BinaryIO, os.stat_result]]:
    """The existing regular file `where`, open for reading, and its `stat` (taken on open).

    Raises:
        ToolError: see `open_in` and `parent_dir`.
    """
    with parent_dir(where) as dir_fd:
        fh, st = open_in(where, dir_fd)
    with fh:
        yield fh, st


def existing(where: Target, dir_fd: int) -> os.stat_result | None:
    """The `stat` of the file a write would replace, or `None` when there is none.

    Raises:
        ToolError: it is a directory, a symlink (the path changed since it was checked), not
            a regular file, or hard-linked.
    """
    try:
        st = os.stat(where.path.name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise _os_error(where, exc) from None
    if stat.S_ISLNK(st.st_mode):
        raise swapped(where)
    if stat.S_ISDIR(st.st_mode):
        raise ToolError(
            f"'{where.shown}' is a directory; give the path of a file inside it.",
            details={"path": str(where.path)},
        )
    check_regular(where, st)
    return st


_IMAGE_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


def image_type(head: bytes) -> str | None:
    """The media type of an image a model can be shown (PNG, JPEG, GIF, WebP), by its start."""
    for magic, media_type in _IMAGE_MAGIC:
        if head.startswith(magic):
            return media_type
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def is_binary(head: bytes) -> bool:
    """Whether the start of a file looks binary (it has a NUL byte)."""
    return b"\x00" in head


@dataclass(kw_only=True, frozen=True, slots=True)
class EditableText:
    """A file's text, as an edit sees it."""

    text: str
    """The content, with CRLF line ends turned into LF when the file uses CRLF throughout."""
    crlf: bool
    """Whether the file uses CRLF line ends throughout (they are put back on write)."""

    def encode(self, text: str) -> bytes:
        """`text` (with LF line ends) as the bytes to write, in the file's line-end style."""
        return (text.replace("\n", "\r\n") if self.crlf else text).encode("utf-8")


def read_editable(where: Target, ctx: ToolContext[Any], dir_fd: int) -> EditableText:
    """Read an existing UTF-8 text file for an edit, after the file pool allows writing it.

    `dir_fd` is its directory (`parent_dir`), which the write that follows uses too.

    Raises:
        ToolError: missing, a directory, binary, not UTF-8, hard-linked, or not writable per
            the file pool.
    """
    fh, st = open_in(where, dir_fd)
    with fh:
        if st.st_size > HUGE_FILE_BYTES:
            raise ToolError(
                f"File '{where.shown}' is {st.st_size / 2**20:.1f} MB, too large to edit (the "
                f"limit is {HUGE_FILE_BYTES // 2**20} MB).",
                details={"path": str(where.path)},
            )
        if ctx.files is not None:
            ctx.files.check_writable(where.path, display=where.shown)
        try:
            data = fh.read(HUGE_FILE_BYTES + 1)
        except OSError as exc:
            raise ToolError(
                f"File '{where.shown}' cannot be read: {exc.strerror or exc}.",
                details={"path": str(where.path)},
            ) from None
    if len(data) > HUGE_FILE_BYTES:
        raise ToolError(
            f"File '{where.shown}' grew over {HUGE_FILE_BYTES // 2**20} MB while it was read; "
            "it is too large to edit.",
            details={"path": str(where.path)},
        )
    if is_binary(data[:BINARY_SNIFF_BYTES]):
        raise ToolError(
            f"File '{where.shown}' is binary; it cannot be edited as text.",
            details={"path": str(where.path)},
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ToolError(
            f"File '{where.shown}' is not valid UTF-8 (byte {exc.start}); editing it as text "
            "would corrupt it. Leave it, or rewrite it whole with fs_write.",
            details={"path": str(where.path)},
        ) from None
    crlf = "\r\n" in text and text.count("\r\n") == text.count("\n")
    return EditableText(text=text.replace("\r\n", "\n") if crlf else text, crlf=crlf)


def write_file(where: Target, dir_fd: int, data: bytes) -> bool:
    """Write `data` to `where` in its directory `dir_fd` atomically; return whether it existed.

    The bytes go to a temporary file in the same directory, are flushed to disk, and the
    temporary file is renamed over the name, both relative to `dir_fd`, so a reader sees the
    old content or the new, never half of it, and the file lands in the directory that was
    checked. An existing file keeps its permission bits; a new one gets the usual ``0o666``
    minus the umask.

    Raises:
        ToolError: the name is a directory, a symlink, or a hard-linked file.
        OSError: the write itself failed.
    """
    old = existing(where, dir_fd)
    write_at(dir_fd, where.path.name, data, mode=stat.S_IMODE(old.st_mode) if old else None)
    return old is not None


def in_git_dir(arguments: dict[str, Any], ctx: ToolContext[Any] | None = None) -> str | None:
    """``requires_approval`` of the writing tools: ask before a write kode or a person trusts.

    `git_dir_reason` of the path: a ``.git`` component (as given, or as it resolves), or a
    directory on the way that is, or becomes with this write, a git directory
    (`kode.builtin._shared._git_dirs`). A path inside a skill's folder asks too
    (`in_skill_dir`), and so does one the sandbox never lets a command write either
    (`kode.trust.protected.protected_reason`: ``.kode/``, a virtual environment at the root,
    kode's databases). Any other path: `None`, no opinion (the agent's permission mode decides,
    as for a write tool without this function).
    """
    path = arguments.get("path")
    if not isinstance(path, str):
        return None
    return git_dir_reason([path], ctx) or trusted_later(path, ctx)


def trusted_later(path: str, ctx: ToolContext[Any] | None = None) -> str | None:
    """Why writing `path` asks, for what kode later trusts besides git: skills, protected paths."""
    space = workspace_of(ctx) if ctx is not None else None
    if space is None:
        return None
    skill = in_skill_dir(path, space, ctx)
    if skill is not None:
        return skill  # a skill's folder, the workspace's in .kode/skills too: said as such
    with contextlib.suppress(ToolError, ValueError):
        resolved = space.resolve(path)
        bases = (space.root, *space.extra_paths)
        base = next((b for b in bases if b == resolved or b in resolved.parents), None)
        if base is not None:
            return protected_reason(resolved, base)
    return None


def open_directory(ctx: ToolContext[Any], path: str) -> tuple[Target, int]:
    """The directory `path` and a descriptor of it, opened without following symlinks."""
    where = target(ctx, path)
    try:
        return where, open_dir(where.path)
    except FileNotFoundError:
        raise not_found(where, what="Directory") from None
    except NotADirectoryError:
        raise ToolError(
            f"'{where.shown}' is a file, not a directory; use fs_read to read it.",
            details={"path": str(where.path)},
        ) from None
    except OSError as exc:
        if is_swapped(exc):
            raise swapped(where) from None
        raise ToolError(
            f"Directory '{where.shown}' cannot be opened: {exc.strerror or exc}.",
            details={"path": str(where.path)},
        ) from None


def grep_single(where: Target, *, max_bytes: int) -> bool:
    """Whether `where` is one file to search (else a directory); refuse what cannot be.

    Raises:
        ToolError: missing, swapped, not a regular file, hard-linked, binary, or a file over
            `max_bytes` (which a search of its directory would skip).
    """
    with parent_dir(where) as dir_fd:
        try:
            st = os.stat(where.path.name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            raise not_found(where, what="Path") from None
        except OSError as exc:
            raise ToolError(
                f"Path '{where.shown}' cannot be searched: {exc.strerror or exc}.",
                details={"path": str(where.path)},
            ) from None
        if stat.S_ISDIR(st.st_mode):
            return False
        if stat.S_ISLNK(st.st_mode):
            raise swapped(where)
        fh, st = open_in(where, dir_fd)
    with fh:
        if st.st_size > max_bytes:
            raise ToolError(
                f"File '{where.shown}' is {st.st_size / 2**20:.1f} MB; fs_grep searches files "
                f"up to {max_bytes // 2**20} MB. Read it in parts with fs_read (offset and "
                "limit), or search it with a command.",
                details={"path": str(where.path), "reason": "too_large", "bytes": st.st_size},
            )
        if is_binary(fh.read(BINARY_SNIFF_BYTES)):
            raise ToolError(
                f"File '{where.shown}' is binary; fs_grep searches text files.",
                details={"path": str(where.path)},
            )
    return True
