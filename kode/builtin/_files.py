"""Shared plumbing of the file tools: paths in the workspace, the file pool, atomic writes.

This module owns what every tool of `kode.builtin.fs` does around its own job: resolving a
model's path in the workspace (the current directory when the context has none), the errors
for missing files and directories, binary sniffing, reading a file as UTF-8 text for an edit,
and writing a file atomically (a temporary file in the same directory, then ``os.replace``)
while keeping its mode. It does not format anything for the model.
"""

from __future__ import annotations

import contextlib
import difflib
import os
import secrets
import stat
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kode.tools.context import ToolContext
from kode.tools.errors import ToolError, ToolErrorType
from kode.tools.workspace import Workspace

__all__ = [
    "BINARY_SNIFF_BYTES",
    "HUGE_FILE_BYTES",
    "PRUNED_DIRS",
    "EditableText",
    "Target",
    "atomic_write",
    "file_lock",
    "image_type",
    "is_binary",
    "not_found",
    "read_editable",
    "require_file",
    "target",
    "workspace_of",
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


def target(ctx: ToolContext[Any], path: str) -> Target:
    """Resolve `path` in the context's workspace.

    Raises:
        ToolError: ``path_not_in_workspace`` when it escapes, or ``invalid_tool_params`` for
            an empty path.
    """
    if not path.strip():
        raise ToolError(
            "The path is empty; pass a file path relative to the workspace root.",
            type=ToolErrorType.INVALID_TOOL_PARAMS,
        )
    space = workspace_of(ctx)
    resolved = space.resolve(path)
    return Target(path=resolved, shown=space.display(resolved) or ".", workspace=space)


def not_found(where: Target, *, what: str = "File") -> ToolError:
    """The error for a missing file, naming close names in its directory when there are any."""
    parent = where.path.parent
    hint = ""
    try:
        names = [p.name for p in parent.iterdir()] if parent.is_dir() else []
    except OSError:
        names = []
    close = difflib.get_close_matches(where.path.name, names, n=3, cutoff=0.6)
    if close:
        shown = [where.workspace.display(parent / n) for n in close]
        hint = f" Did you mean {', '.join(repr(s) for s in shown)}?"
    elif not parent.exists():
        hint = f" Its directory '{where.workspace.display(parent)}' does not exist either."
    return ToolError(
        f"{what} '{where.shown}' does not exist.{hint}",
        type=ToolErrorType.FILE_NOT_FOUND,
        details={"path": str(where.path)},
    )


def require_file(where: Target) -> os.stat_result:
    """The `stat` of an existing regular file.

    Raises:
        ToolError: it does not exist (``file_not_found``) or is not a regular file.
    """
    try:
        st = where.path.stat()
    except FileNotFoundError:
        raise not_found(where) from None
    except OSError as exc:
        raise ToolError(
            f"File '{where.shown}' cannot be read: {exc.strerror or exc}.",
            details={"path": str(where.path)},
        ) from None
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


def read_editable(where: Target, ctx: ToolContext[Any]) -> EditableText:
    """Read an existing UTF-8 text file for an edit, after the file pool allows writing it.

    Raises:
        ToolError: missing, a directory, binary, not UTF-8, or not writable per the file pool.
    """
    size = require_file(where).st_size
    if size > HUGE_FILE_BYTES:
        raise ToolError(
            f"File '{where.shown}' is {size / 2**20:.1f} MB, too large to edit (the limit is "
            f"{HUGE_FILE_BYTES // 2**20} MB).",
            details={"path": str(where.path)},
        )
    if ctx.files is not None:
        ctx.files.check_writable(where.path, display=where.shown)
    try:
        data = where.path.read_bytes()
    except OSError as exc:
        raise ToolError(
            f"File '{where.shown}' cannot be read: {exc.strerror or exc}.",
            details={"path": str(where.path)},
        ) from None
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


def atomic_write(path: Path, data: bytes) -> bool:
    """Write `data` to `path` atomically; return whether the file already existed.

    The bytes go to a temporary file in the same directory, are flushed to disk, and the
    temporary file is renamed over `path` (``os.replace``), so a reader sees the old content
    or the new, never half of it. Missing parent directories are created. An existing file
    keeps its permission bits; a new one gets the usual ``0o666`` minus the umask.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        old_mode: int | None = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        old_mode = None
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.kode-tmp")
    # os.open applies the umask to 0o666 itself: no need to read it (which is not thread-safe).
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if old_mode is not None:
            os.chmod(tmp, old_mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    return old_mode is not None
