"""Built-in file tools (``group:fs``): read, write, edit, patch, glob, grep and list files.

Every path is resolved in ``ctx.workspace`` (the current directory when there is none) and
refused with ``path_not_in_workspace`` when it escapes by ``..``, an absolute path or a
symlink. The path checked is the path used: files and directories are then opened one
directory at a time, by descriptor and without following symlinks, so a directory swapped for
a symlink between the check and the use is refused ("changed while it was being opened"), and
searches never walk into one. Files with more than one hard link are neither read nor written
(another link may lie outside the workspace); searches skip them and say how many. ripgrep
opens files by path, so each file it reports is opened again that way and kept only if the
lines it reported are there. Writes and edits go through ``ctx.files``, the agent's file pool:
a file that exists must have been read first and must not have changed on disk since, so an
agent never overwrites edits it has not seen. Writes are atomic (a temporary file renamed in
the same directory descriptor) and keep the file's mode; a write inside ``.git``, or into
any directory that is or would become a git directory (``HEAD`` beside ``objects``, ``refs``
or ``commondir``, counting every file the call writes), asks for approval, since git config
and hooks can run commands (`kode.builtin._shared._git_dirs`); so does a write into a skill's folder
or into what the sandbox never lets a command write either (``.kode/``, a virtual environment
at the workspace root, kode's databases: `kode.trust.protected`). Each tool is an
ordinary ``@define_tool`` function. ``apply_patch`` changes several files in one call, all or
none (see `kode.builtin.fs.patch`). The plumbing lives in `kode.builtin._shared._workspace_files`,
`kode.builtin._shared._safe_open`, `kode.builtin.fs._text_edits`, `kode.builtin.fs._globs`,
`kode.builtin.fs._grep` and `kode.builtin.fs._grep_files`.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from typing import Annotated, BinaryIO

from pydantic import BaseModel, ConfigDict, Field

from kode.builtin._shared._workspace_files import (
    BINARY_SNIFF_BYTES,
    HUGE_FILE_BYTES,
    Target,
    file_lock,
    image_type,
    in_git_dir,
    is_binary,
    open_directory,
    open_target,
    parent_dir,
    read_editable,
    target,
    write_file,
)
from kode.builtin.fs._approval import (
    current_text,
    describe_edit,
    describe_multi_edit,
    describe_write,
    diff_display,
)
from kode.builtin.fs._text_edits import apply_edit, read_numbered, short_diff
from kode.tools.context import ToolContext
from kode.tools.define import define_tool
from kode.tools.errors import ToolError
from kode.tools.results import Image, ToolResult, image_result, text_result

__all__ = [
    "FileEdit",
    "apply_patch",
    "fs_edit",
    "fs_glob",
    "fs_grep",
    "fs_ls",
    "fs_multi_edit",
    "fs_read",
    "fs_read_many",
    "fs_write",
]

MAX_IMAGE_BYTES = 5 * 1024 * 1024
"""Images larger than this are not returned (providers refuse them)."""

_FILE_PATH = {"file_path": "path"}


def _mb(size: int) -> str:
    return f"{size / 2**20:.1f} MB"


def _human(size: int) -> str:
    if size < 1024:
        return f"{size} byte{'' if size == 1 else 's'}"
    value = size / 1024
    for unit in ("KB", "MB"):
        if value < 1024:
            return f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GB"


def _unchanged(error: ToolError) -> ToolError:
    """`error` with a note that the file was left as it was."""
    if error.message.endswith(_NOT_CHANGED):
        return error
    return ToolError(f"{error.message}{_NOT_CHANGED}", type=error.type, details=error.details)


_NOT_CHANGED = " The file was not changed."


@contextlib.contextmanager
def _unchanged_on_error() -> Iterator[None]:
    try:
        yield
    except ToolError as exc:
        raise _unchanged(exc) from None


@define_tool(
    kind="read",
    groups=["group:fs"],
    aliases=["read", "read_file"],
    param_aliases=_FILE_PATH,
    timeout=60,
)
def fs_read(
    path: str,
    offset: Annotated[int, Field(ge=1)] | None = None,
    limit: Annotated[int, Field(ge=1, le=10_000)] | None = None,
    *,
    ctx: ToolContext,
) -> ToolResult:
    """Read a file: text as numbered lines (like `cat -n`), or an image.

    Read long files in parts with `offset` and `limit`. The number and tab before each line
    are not part of the file: leave them out of fs_edit's old_string. Reading a file is what
    lets fs_write and fs_edit change it afterwards.

    Limits and errors: at most 2000 lines per call (output capped at 100,000 characters; the
    output says which offset continues); lines over 2000 characters are cut with a marker.
    PNG, JPEG, GIF and WebP files come back as images (up to 5 MB). Binary files are refused.
    Files over 10 MB must be read in parts with offset/limit; one call reads at most 256 MB
    of a file to reach its offset, and stops after 60 s. Bytes that are not UTF-8 are
    shown as U+FFFD, and the output says so. Paths outside the workspace, names over 255
    bytes and files with more than one hard link are refused.

    Args:
        path: The file, relative to the workspace root (or absolute, inside it).
        offset: The first line to show, counting from 1 (default: the first line).
        limit: How many lines to show (default: 2000).
        ctx: Injected by kode (not shown to the model).
    """
    where = target(ctx, path)
    # Stamped on opening, before reading: a change while reading is not "seen".
    with open_target(where) as (fh, info):
        try:
            return _read(ctx, where, fh, info, offset, limit)
        except OSError as exc:
            raise ToolError(
                f"File '{where.shown}' cannot be read: {exc.strerror or exc}.",
                details={"path": str(where.path)},
            ) from None


def _read(
    ctx: ToolContext,
    where: Target,
    fh: BinaryIO,
    info: os.stat_result,
    offset: int | None,
    limit: int | None,
) -> ToolResult:
    size = info.st_size
    if size == 0:
        _record_read(ctx, where, info)
        return text_result(
            f"File '{where.shown}' is empty (0 bytes).", details={"path": where.shown}
        )
    head = fh.read(BINARY_SNIFF_BYTES)
    media_type = image_type(head)
    if media_type is not None:
        if size > MAX_IMAGE_BYTES:
            raise ToolError(
                f"Image '{where.shown}' is {_mb(size)}, larger than the {_mb(MAX_IMAGE_BYTES)} "
                "an image result may be.",
                details={"path": str(where.path), "bytes": size},
            )
        data = head + fh.read(MAX_IMAGE_BYTES + 1 - len(head))
        if len(data) > MAX_IMAGE_BYTES:
            raise ToolError(
                f"Image '{where.shown}' grew over {_mb(MAX_IMAGE_BYTES)} while it was read.",
                details={"path": str(where.path)},
            )
        _record_read(ctx, where, info)
        return image_result(
            Image(data=data, media_type=media_type),
            caption=f"Image '{where.shown}' ({media_type}, {_human(len(data))}).",
        )
    if is_binary(head):
        raise ToolError(
            f"File '{where.shown}' is binary ({_human(size)}); fs_read shows text files and "
            "PNG, JPEG, GIF or WebP images only.",
            details={"path": str(where.path), "bytes": size},
        )
    huge = size > HUGE_FILE_BYTES
    if huge and offset is None and limit is None:
        raise ToolError(
            f"File '{where.shown}' is {_mb(size)}, too large to read whole (the limit is "
            f"{_mb(HUGE_FILE_BYTES)}). Read a part with offset and limit (e.g. offset=1, "
            "limit=500), or search it with fs_grep.",
            details={"path": str(where.path), "bytes": size},
        )
    fh.seek(0)
    text, details = read_numbered(
        fh,
        where.shown,
        offset=offset,
        limit=limit,
        count_lines=not huge,
        cancelled=lambda: ctx.cancelled,
    )
    _record_read(ctx, where, info)
    return text_result(text, details=details)


def _record_read(ctx: ToolContext, where: Target, info: os.stat_result) -> None:
    if ctx.files is not None:
        ctx.files.record_read(where.path, stat_result=info)


def _write(ctx: ToolContext, where: Target, dir_fd: int, data: bytes) -> bool:
    """Write atomically and record it; return whether the file existed. Caller holds the lock."""
    try:
        existed = write_file(where, dir_fd, data)
    except ToolError as exc:
        raise _unchanged(exc) from None
    except OSError as exc:
        raise ToolError(
            f"Could not write '{where.shown}': {exc.strerror or exc}. The file was not changed.",
            details={"path": str(where.path)},
        ) from None
    if ctx.files is not None:
        ctx.files.record_write(where.path)
    return existed


@define_tool(
    kind="edit",
    groups=["group:fs"],
    aliases=["write", "write_file"],
    param_aliases=_FILE_PATH,
    requires_approval=in_git_dir,
)
def fs_write(path: str, content: str, *, ctx: ToolContext) -> ToolResult:
    """Write a whole file: create it, or replace all of its content.

    Prefer fs_edit to change part of an existing file. Missing parent directories are created.
    The write is atomic (readers never see half a file) and keeps the file's permissions.

    Limits and errors: an existing file must have been read (fs_read) in this session and not
    changed on disk since; otherwise the write is refused and nothing changes: read it again,
    then write. Paths outside the workspace, directories and files with more than one hard
    link are refused; a path inside .git (or any git directory) needs the user's approval.
    Content is written as UTF-8, exactly as given.

    Args:
        path: The file, relative to the workspace root (or absolute, inside it).
        content: The complete new content of the file.
        ctx: Injected by kode (not shown to the model).
    """
    where = target(ctx, path)
    if where.path.is_dir():
        raise ToolError(
            f"'{where.shown}' is a directory; give the path of a file inside it.",
            details={"path": str(where.path)},
        )
    data = content.encode("utf-8")
    with file_lock(where.path):
        if ctx.files is not None:
            try:
                ctx.files.check_writable(where.path, display=where.shown)
            except ToolError as exc:
                raise _unchanged(exc) from None
        _, before = current_text(where.path)  # for the person's diff (Display)
        with _unchanged_on_error(), parent_dir(where, create=True) as dir_fd:
            existed = _write(ctx, where, dir_fd, data)
    lines = content.count("\n") + (0 if content.endswith("\n") or not content else 1)
    how = "replaced its previous content" if existed else "new file"
    counted = f"{lines} line{'' if lines == 1 else 's'}"
    return text_result(
        f"Wrote {counted} ({_human(len(data))}) to '{where.shown}' ({how}).",
        details={"path": where.shown, "bytes": len(data), "lines": lines, "created": not existed},
        display=diff_display(before if existed else None, content, where.shown),
    )


class FileEdit(BaseModel):
    """One exact-string replacement of `fs_multi_edit`."""

    model_config = ConfigDict(extra="forbid", defer_build=True)  # built with its tools' models
    old_string: Annotated[str, Field(description="The exact text to replace.")]
    new_string: Annotated[str, Field(description="The text to put in its place.")]
    replace_all: Annotated[
        bool, Field(description="Replace every occurrence, not just a unique one.")
    ] = False


def _edit(ctx: ToolContext, where: Target, edits: list[FileEdit]) -> ToolResult:
    with file_lock(where.path), _unchanged_on_error(), parent_dir(where) as dir_fd:
        current = read_editable(where, ctx, dir_fd)
        text = current.text
        replaced = 0
        for i, edit in enumerate(edits, 1):
            label = f"'{where.shown}'" if len(edits) == 1 else f"Edit {i} of {len(edits)}"
            old, new = edit.old_string, edit.new_string
            if current.crlf:
                old, new = old.replace("\r\n", "\n"), new.replace("\r\n", "\n")
            text, count = apply_edit(text, old, new, replace_all=edit.replace_all, where=label)
            replaced += count
        _write(ctx, where, dir_fd, current.encode(text))
    diff = short_diff(current.text, text, where.shown)
    what = f"{replaced} replacement{'s' if replaced != 1 else ''}"
    if len(edits) > 1:
        what = f"{len(edits)} edits, {what}"
    return text_result(
        f"Edited '{where.shown}' ({what}).\n{diff}",
        details={"path": where.shown, "replacements": replaced, "edits": len(edits)},
        display=diff_display(current.text, text, where.shown),
    )


@define_tool(
    kind="edit",
    groups=["group:fs"],
    aliases=["edit", "edit_file"],
    param_aliases=_FILE_PATH,
    requires_approval=in_git_dir,
)
def fs_edit(
    path: str, old_string: str, new_string: str, replace_all: bool = False, *, ctx: ToolContext
) -> ToolResult:
    """Replace an exact piece of text in a file; returns a short diff of the change.

    Copy old_string exactly from fs_read's output (whitespace and indentation included,
    without the line-number prefix), with enough surrounding lines to be unique. For several
    changes to one file, use fs_multi_edit.

    Limits and errors: the file must have been read (fs_read) in this session and not
    changed on disk since. Refused, with the file left unchanged, when old_string is not found,
    occurs more than once without replace_all, equals new_string, or is empty; and for binary,
    non-UTF-8, over-10 MB or hard-linked files and paths outside the workspace. A path inside
    .git (or any git directory) needs the user's approval.

    Args:
        path: The file, relative to the workspace root (or absolute, inside it).
        old_string: The exact text to replace.
        new_string: The text to put in its place.
        replace_all: Replace every occurrence instead of requiring exactly one.
        ctx: Injected by kode (not shown to the model).
    """
    edit = FileEdit(old_string=old_string, new_string=new_string, replace_all=replace_all)
    return _edit(ctx, target(ctx, path), [edit])


@define_tool(
    kind="edit",
    groups=["group:fs"],
    aliases=["multi_edit", "multiedit"],
    param_aliases=_FILE_PATH,
    requires_approval=in_git_dir,
)
def fs_multi_edit(
    path: str,
    edits: Annotated[list[FileEdit], Field(min_length=1, max_length=100)],
    *,
    ctx: ToolContext,
) -> ToolResult:
    """Apply several exact-string replacements to one file, in order, all or none.

    Each edit works like fs_edit on the result of the edits before it. Returns a short diff.

    Limits and errors: if any edit fails (old_string not found, not unique without
    replace_all, empty, or equal to new_string) nothing is written and the error names the
    edit. The file must have been read (fs_read) in this session and not changed on disk
    since; binary, non-UTF-8, over-10 MB and hard-linked files and paths outside the workspace
    are refused; a path inside .git (or any git directory) needs the user's approval. At
    most 100 edits per call.

    Args:
        path: The file, relative to the workspace root (or absolute, inside it).
        edits: The replacements, applied in this order.
        ctx: Injected by kode (not shown to the model).
    """
    return _edit(ctx, target(ctx, path), list(edits))


fs_write.describe(describe_write)
fs_edit.describe(describe_edit)
fs_multi_edit.describe(describe_multi_edit)

# fs_glob and fs_grep live in kode.builtin.fs.search; imported here so that they register
# between fs_multi_edit and fs_ls, as they always have, and stay importable from this module.
from kode.builtin.fs.search import fs_glob, fs_grep  # noqa: E402


@define_tool(kind="read", groups=["group:fs"], aliases=["ls", "list_directory"])
def fs_ls(
    path: str = ".",
    include_hidden: bool = False,
    limit: Annotated[int, Field(ge=1, le=1000)] = 200,
    *,
    ctx: ToolContext,
) -> ToolResult:
    """List a directory: each entry's type (dir, file, link), name and size.

    Directories come first, then the rest, each sorted by name; directory names end in "/",
    symlinks show their target. Not recursive: use fs_glob to find files deeper down.

    Limits and errors: at most `limit` entries (default 200; the output says how many more).
    Names starting with "." are left out unless include_hidden is true (the output says how
    many). A missing directory, a file, or a path outside the workspace is refused.

    Args:
        path: The directory, relative to the workspace root (default: the root itself).
        include_hidden: Also list names starting with ".".
        limit: How many entries to list at most.
        ctx: Injected by kode (not shown to the model).
    """
    where, fd = open_directory(ctx, path)
    rows: list[tuple[int, str, str, dict[str, object]]] = []
    hidden = 0
    try:
        with os.scandir(fd) as it:
            for entry in it:
                if entry.name.startswith(".") and not include_hidden:
                    hidden += 1
                    continue
                rows.append(_ls_row(entry, fd))
    except OSError as exc:
        raise ToolError(
            f"Directory '{where.shown}' cannot be listed: {exc.strerror or exc}.",
            details={"path": str(where.path)},
        ) from None
    finally:
        os.close(fd)
    rows.sort(key=lambda row: (row[0], row[1]))
    total = len(rows)
    lines = [f"Directory '{where.shown}' ({total} entr{'y' if total == 1 else 'ies'}):"]
    if not rows:
        lines = [f"Directory '{where.shown}' is empty."]
    lines += [line for _, _, line, _ in rows[:limit]]
    if total > limit:
        lines.append(f"({total - limit} more entries not shown; raise limit to see them.)")
    if hidden:
        lines.append(
            f"({hidden} hidden entr{'y' if hidden == 1 else 'ies'} not shown; set "
            "include_hidden to list them.)"
        )
    return text_result(
        "\n".join(lines),
        details={"path": where.shown, "entries": [info for *_, info in rows[:limit]]},
    )


def _ls_row(entry: os.DirEntry[str], dir_fd: int) -> tuple[int, str, str, dict[str, object]]:
    """(sort group, name, line, details) of one directory entry of the directory `dir_fd`."""
    name = entry.name
    try:
        if entry.is_symlink():
            link = os.readlink(name, dir_fd=dir_fd)
            return (
                1,
                name,
                f"link  {name} -> {link}",
                {"name": name, "type": "link", "target": link},
            )
        st = entry.stat(follow_symlinks=False)
    except OSError:
        return 1, name, f"?     {name}", {"name": name, "type": "unknown"}
    if stat.S_ISDIR(st.st_mode):
        return 0, name, f"dir   {name}/", {"name": name, "type": "dir"}
    if stat.S_ISREG(st.st_mode):
        size = st.st_size
        line = f"file  {name}  ({_human(size)})"
        return 1, name, line, {"name": name, "type": "file", "size": size}
    return 1, name, f"other {name}", {"name": name, "type": "other"}


# apply_patch and fs_read_many live in their own modules; registered after fs_ls.
from kode.builtin.fs.patch import apply_patch  # noqa: E402
from kode.builtin.fs.read_many import fs_read_many  # noqa: E402
