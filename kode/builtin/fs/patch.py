"""``apply_patch`` (``group:fs``): change several files in one call, all of them or none.

The patch is read by `kode.builtin.fs._patch_parse` (the ``*** Begin Patch`` envelope, or a
unified diff). Every path, a move's destination included, is resolved in the workspace like
the other file tools' paths; every file the patch changes, moves or deletes goes through the
agent's file pool (it must have been read and be unchanged since; a new file needs nothing).
All hunks are applied in memory first: a hunk that does not apply stops the call before any
file is touched. Then the new contents are written to temporary files beside their targets,
the files replaced or deleted are renamed aside, and the temporary files renamed into place;
if any step fails, what was done is undone (the originals renamed back, new files and the
directories made for them removed), so the workspace holds the old files or the new ones,
never a mix. A patch that writes in a git directory, or makes one with all its files
together, asks for approval (`kode.builtin._shared._git_dirs`), as ``fs_write`` does.
"""

from __future__ import annotations

import contextlib
import difflib
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kode.builtin._shared._git_dirs import git_dir_reason
from kode.builtin._shared._safe_open import aside_name, stage_at
from kode.builtin._shared._workspace_files import (
    HUGE_FILE_BYTES,
    EditableText,
    Target,
    existing,
    file_lock,
    not_found,
    parent_dir,
    read_editable,
    target,
    trusted_later,
)
from kode.builtin.fs._approval import current_text, diff_of
from kode.builtin.fs._patch_parse import (
    MAX_PATCH_CHARS,
    MAX_PATCH_FILES,
    FileOp,
    HunkError,
    PatchError,
    apply_hunks,
    parse_patch,
)
from kode.tools.context import ToolContext
from kode.tools.define import define_tool
from kode.tools.errors import ToolError, ToolErrorType
from kode.tools.invocation import CallDetails, Display
from kode.tools.results import ToolResult, text_result

__all__ = ["MAX_PATCH_CHARS", "MAX_PATCH_FILES", "apply_patch"]

_NOTHING_CHANGED = " No file was changed."
_ASIDE = ".kode-patch"  # the ending of the files a patch writes aside, new and old


@dataclass(kw_only=True, slots=True)
class _Change:
    """One file section of a patch, planned: what is read, what is written."""

    op: FileOp
    source: Target | None = None
    """The file updated, moved or deleted."""
    dest: Target | None = None
    """The file written (an added file, an updated one, a move's destination)."""
    before: str | None = None
    after: str | None = None
    data: bytes = b""
    mode: int | None = None
    replaces: bool = False
    """Whether `dest` exists already (an Add over a file, a move onto one)."""
    fuzzy: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        op = self.op
        if op.action == "update" and self.dest is not None and self.dest != self.source:
            return "moved"
        return {"add": "added", "update": "updated", "delete": "deleted"}[op.action]


def _refused(error: ToolError) -> ToolError:
    if error.message.endswith(_NOTHING_CHANGED):
        return error
    return ToolError(f"{error.message}{_NOTHING_CHANGED}", type=error.type, details=error.details)


def _paths(op: FileOp) -> list[str]:
    return [p for p in (op.path, op.move_to, op.other_path) if p is not None]


def _not_dir(where: Target) -> None:
    if where.path.is_dir():
        raise ToolError(
            f"'{where.shown}' is a directory; a patch adds, updates and deletes files.",
            details={"path": str(where.path)},
        )


def _checked_existing(ctx: ToolContext, where: Target) -> os.stat_result | None:
    """The `stat` of the file at `where` if there is one, after the file pool allows it."""
    _not_dir(where)
    try:
        with parent_dir(where) as fd:
            st = existing(where, fd)
    except ToolError as exc:
        if exc.type is ToolErrorType.FILE_NOT_FOUND:
            return None  # its directory is missing: it will be made
        raise
    if st is not None and ctx.files is not None:
        ctx.files.check_writable(where.path, display=where.shown)
    return st


def _plan_update(ctx: ToolContext, change: _Change, source: Target) -> None:
    op = change.op
    with parent_dir(source) as fd:
        current: EditableText = read_editable(source, ctx, fd)
        st = existing(source, fd)
    change.mode = stat.S_IMODE(st.st_mode) if st is not None else None
    try:
        applied = apply_hunks(current.text, op.hunks, source.shown)
    except HunkError as exc:
        raise ToolError(str(exc), details={"reason": "hunk_not_found", **exc.details}) from None
    change.before, change.after, change.fuzzy = current.text, applied.text, applied.fuzzy
    change.data = current.encode(applied.text)
    if len(change.data) > HUGE_FILE_BYTES:
        raise ToolError(
            f"'{source.shown}' would be {len(change.data) / 2**20:.1f} MB after the patch, over "
            f"the {HUGE_FILE_BYTES // 2**20} MB a file tool writes.",
            details={"path": str(source.path)},
        )


def _plan(ctx: ToolContext, ops: list[FileOp]) -> list[_Change]:
    """Every change of the patch, checked and computed in memory; nothing is written.

    Raises:
        ToolError: a path outside the workspace, a file named twice, a file not read or
            changed since, missing, binary or too large, or a hunk that does not apply.
    """
    seen: dict[Path, str] = {}
    changes: list[_Change] = []
    for op in ops:
        if op.other_path is not None:  # "--- a/old +++ b/new" without a rename: the one there
            new, old = target(ctx, op.path), target(ctx, op.other_path)
            if not new.path.exists() and old.path.exists():
                op.path = op.other_path
            op.other_path = None
        change = _Change(op=op)
        for name in _paths(op):
            where = target(ctx, name)
            if where.path in seen:
                raise ToolError(
                    f"'{where.shown}' appears twice in the patch (as '{seen[where.path]}' and "
                    f"'{name}'); put all changes to one file in one section.",
                    type=ToolErrorType.INVALID_TOOL_PARAMS,
                    details={"path": str(where.path)},
                )
            seen[where.path] = name
        if op.action == "add":
            dest = target(ctx, op.path)
            st = _checked_existing(ctx, dest)
            change.dest, change.replaces = dest, st is not None
            change.mode = stat.S_IMODE(st.st_mode) if st is not None else None
            change.before = current_text(dest.path)[1] if st is not None else None
            change.after, change.data = op.content, op.content.encode("utf-8")
        elif op.action == "delete":
            source = target(ctx, op.path)
            _not_dir(source)
            with parent_dir(source) as fd:
                if existing(source, fd) is None:
                    raise not_found(source)
            if ctx.files is not None:
                ctx.files.check_writable(source.path, display=source.shown)
            change.source = source
            change.before = current_text(source.path)[1]
        else:
            source = target(ctx, op.path)
            change.source = change.dest = source
            if op.hunks:
                _plan_update(ctx, change, source)
            else:  # a pure rename: the bytes move as they are
                with parent_dir(source) as fd:
                    current = read_editable(source, ctx, fd)
                    st = existing(source, fd)
                change.mode = stat.S_IMODE(st.st_mode) if st is not None else None
                change.before = change.after = current.text
                change.data = current.encode(current.text)
            if op.move_to is not None:
                dest = target(ctx, op.move_to)
                st = _checked_existing(ctx, dest)
                change.dest, change.replaces = dest, st is not None
        changes.append(change)
    return changes


@contextlib.contextmanager
def _locked(ctx: ToolContext, ops: list[FileOp]) -> Iterator[None]:
    """Hold every named file's lock (in one order, so two patches cannot deadlock)."""
    paths: set[Path] = set()
    for op in ops:
        for name in _paths(op):
            with contextlib.suppress(ToolError):
                paths.add(target(ctx, name).path)
    with contextlib.ExitStack() as stack:
        for path in sorted(paths):
            stack.enter_context(file_lock(path))
        yield


def _missing_dirs(path: Path) -> list[Path]:
    """The directories above `path` that do not exist yet, deepest first."""
    out: list[Path] = []
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        out.append(parent)
        parent = parent.parent
    return out


def _commit(changes: list[_Change]) -> None:
    """Write every change, or put everything back as it was and raise.

    Raises:
        ToolError: a write, rename or directory could not be made; the workspace is as before.
    """
    made_dirs: list[Path] = []
    staged: list[tuple[int, str, str]] = []  # (dir fd, name, temporary name)
    aside: list[tuple[int, str, str]] = []  # (dir fd, name, name it was renamed to)
    placed: list[tuple[int, str]] = []
    current = ""
    with contextlib.ExitStack() as fds:
        try:
            for change in changes:
                if change.dest is None:
                    continue
                current = change.dest.shown
                made_dirs += [d for d in _missing_dirs(change.dest.path) if d not in made_dirs]
                fd = fds.enter_context(parent_dir(change.dest, create=True))
                name = change.dest.path.name
                staged.append(
                    (fd, name, stage_at(fd, name, change.data, mode=change.mode, suffix=_ASIDE))
                )
            for change in changes:
                gone = []
                if change.source is not None and (
                    change.dest is None or change.dest.path != change.source.path
                ):
                    gone.append(change.source)  # deleted, or moved away
                if change.dest is not None and (change.replaces or change.dest == change.source):
                    gone.append(change.dest)  # replaced by its new content
                for where in gone:
                    current = where.shown
                    fd = fds.enter_context(parent_dir(where))
                    name = where.path.name
                    backup = aside_name(name, _ASIDE)
                    os.rename(name, backup, src_dir_fd=fd, dst_dir_fd=fd)
                    aside.append((fd, name, backup))
            for fd, name, tmp in staged:
                current = name
                os.rename(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
                placed.append((fd, name))
        except (OSError, ToolError) as exc:
            _undo(staged, aside, placed, made_dirs)
            why = exc.message if isinstance(exc, ToolError) else (exc.strerror or str(exc))
            raise ToolError(
                f"The patch could not be written ('{current}': {why}); every file was put "
                f"back as it was.{_NOTHING_CHANGED}",
                details={"path": current, "reason": "write_failed"},
            ) from None
        for fd, _, backup in aside:
            with contextlib.suppress(OSError):
                os.unlink(backup, dir_fd=fd)


def _undo(
    staged: list[tuple[int, str, str]],
    aside: list[tuple[int, str, str]],
    placed: list[tuple[int, str]],
    made_dirs: list[Path],
) -> None:
    done = set(placed)
    for fd, name, tmp in staged:
        with contextlib.suppress(OSError):
            os.unlink(name if (fd, name) in done else tmp, dir_fd=fd)
    for fd, name, backup in reversed(aside):
        with contextlib.suppress(OSError):
            os.rename(backup, name, src_dir_fd=fd, dst_dir_fd=fd)
    for directory in sorted(made_dirs, key=lambda d: len(d.parts), reverse=True):
        with contextlib.suppress(OSError):
            os.rmdir(directory)


def _counts(before: str | None, after: str | None) -> tuple[int, int]:
    added = removed = 0
    for line in difflib.unified_diff(
        (before or "").splitlines(), (after or "").splitlines(), n=0, lineterm=""
    ):
        if line.startswith("+") and not line.startswith("+++"):
            added += 1
        elif line.startswith("-") and not line.startswith("---"):
            removed += 1
    return added, removed


def _parsed(patch: str) -> list[FileOp]:
    try:
        return parse_patch(patch)
    except PatchError as exc:
        raise ToolError(
            f"{exc}{_NOTHING_CHANGED}", type=ToolErrorType.INVALID_TOOL_PARAMS
        ) from None


def _needs_approval(arguments: dict[str, Any], ctx: ToolContext | None = None) -> str | None:
    """``requires_approval``: ask when the patch writes in a git directory or makes one.

    The tree judged is the one the patch would leave: every path of the patch together with
    what is on disk, so one patch adding ``sub/HEAD``, ``sub/objects/..`` and ``sub/refs/..``
    asks, though no one of them is in a git directory on disk.
    """
    patch = arguments.get("patch")
    if not isinstance(patch, str):
        return None
    try:
        ops = parse_patch(patch)
    except PatchError:
        return None  # the call fails on its own
    names = [name for op in ops for name in _paths(op)]
    git = git_dir_reason(names, ctx)
    if git is not None:
        return git
    for name in names:  # skills' folders, .kode/, a root virtual environment, kode's databases
        reason = trusted_later(name, ctx)
        if reason is not None:
            return reason
    return None


def _summary(change: _Change) -> tuple[str, dict[str, Any]]:
    op = change.op
    source = change.source.shown if change.source is not None else None
    dest = change.dest.shown if change.dest is not None else None
    added, removed = _counts(change.before, change.after)
    info: dict[str, Any] = {"action": change.label, "path": source or dest}
    if change.label == "added":
        lines = op.content.count("\n") + (0 if op.content.endswith("\n") or not op.content else 1)
        return f"A {dest} ({lines} line{'' if lines == 1 else 's'})", {**info, "lines": lines}
    if change.label == "deleted":
        return f"D {source}", info
    counted = f"+{added} -{removed}"
    if change.label == "moved":
        return f"R {source} -> {dest} ({counted})", {
            **info,
            "to": dest,
            "added": added,
            "removed": removed,
        }
    return f"M {source} ({counted})", {**info, "added": added, "removed": removed}


def _diffs(changes: list[_Change]) -> str:
    parts: list[str] = []
    for change in changes:
        if change.label == "deleted":
            shown = change.source.shown if change.source is not None else change.op.path
            parts.append(f"--- a/{shown}\n+++ /dev/null")
            continue
        dest = change.dest.shown if change.dest is not None else change.op.path
        before = None if change.label == "added" and not change.replaces else change.before
        text = diff_of(before, change.after or "", dest)
        if change.label == "moved" and change.source is not None:
            text = text.replace(f"--- a/{dest}", f"--- a/{change.source.shown}", 1)
            text = f"rename {change.source.shown} -> {dest}\n{text}".rstrip("\n")
        if text:
            parts.append(text)
    return "\n".join(parts)


@define_tool(
    kind="edit",
    groups=["group:fs"],
    aliases=["patch"],
    param_aliases={"input": "patch"},
    requires_approval=_needs_approval,
)
def apply_patch(patch: str, *, ctx: ToolContext) -> ToolResult:
    """Apply a patch that adds, updates, moves and deletes files: all of them, or none.

    Format (preferred):
    *** Begin Patch
    *** Update File: src/app.py
    @@ def greet():
    -    print("Hi")
    +    print("Hello")
    *** Add File: notes/todo.txt
    +first line
    *** Delete File: old.txt
    *** End Patch
    Hunk lines start with ' ' (context: about 3 lines around each change), '-' (remove) or
    '+' (add). '@@ text' finds that line first, the hunk applies after it;
    '*** Move to: new/path' right after '*** Update File:' renames the file; '*** End of
    File' after a hunk anchors it to the file's end. A unified diff ('--- a/x', '+++ b/x',
    '@@ -1,3 +1,4 @@', as git diff writes it) works too. Context is matched exactly, then
    ignoring whitespace at line ends, then around lines; the result says when it was.

    Limits and errors: every file updated, moved, deleted or overwritten must have been read
    (fs_read) in this session and not changed on disk since. If a hunk does not apply, the
    error names the file and hunk, shows the lines looked for and the nearest lines in the
    file, and nothing is written. At most 2,000,000 characters and 200 files per patch;
    binary, non-UTF-8, over-10 MB and hard-linked files, directories and paths outside the
    workspace are refused; a patch writing inside .git or any git directory, or making one
    (HEAD beside objects or refs), needs the user's approval.

    Args:
        patch: The patch text, from '*** Begin Patch' to '*** End Patch' (or a unified
            diff).
        ctx: Injected by kode (not shown to the model).
    """
    ops = _parsed(patch)
    with _locked(ctx, ops):
        try:
            changes = _plan(ctx, ops)
            _commit(changes)
        except ToolError as exc:
            raise _refused(exc) from None
    if ctx.files is not None:
        for change in changes:
            if change.source is not None and change.source != change.dest:
                ctx.files.record_read(change.source.path)  # gone: nothing left to protect
            if change.dest is not None:
                ctx.files.record_write(change.dest.path)
    lines: list[str] = []
    files: list[dict[str, Any]] = []
    fuzzy: list[str] = []
    for change in changes:
        line, info = _summary(change)
        lines.append(line)
        files.append(info)
        fuzzy += change.fuzzy
    count = f"{len(changes)} file{'' if len(changes) == 1 else 's'}"
    text = "\n".join([f"Applied the patch ({count}):", *lines])
    if fuzzy:
        text += "\n" + "\n".join(f"(Note: {note}.)" for note in fuzzy)
    return text_result(
        text,
        details={"files": files, "fuzzy": fuzzy},
        display=Display(kind="diff", text=_diffs(changes)),
    )


@apply_patch.describe
def _describe(arguments: dict[str, Any], ctx: Any) -> CallDetails:
    """What the patch will do, and its diff (computed without writing anything)."""
    try:
        ops = parse_patch(str(arguments.get("patch", "")))
    except PatchError as exc:
        return CallDetails(description=f"Apply a patch (it will fail: {str(exc).splitlines()[0]})")
    names = [name for op in ops for name in _paths(op)]
    verbs = {"add": "add", "update": "update", "delete": "delete"}
    what = ", ".join(
        f"{verbs[op.action]} {op.path}" + (f" -> {op.move_to}" if op.move_to else "")
        for op in ops[:8]
    )
    if len(ops) > 8:
        what += f" and {len(ops) - 8} more"
    if ctx is None:
        return CallDetails(description=f"Apply a patch: {what}", locations=tuple(names))
    try:
        changes = _plan(ctx, ops)
    except ToolError as exc:
        first = exc.message.splitlines()[0] if exc.message else "the patch does not apply"
        return CallDetails(
            description=f"Apply a patch: {what} (it will fail: {first})", locations=tuple(names)
        )
    shown = tuple(w.shown for c in changes for w in (c.source, c.dest) if w is not None)
    return CallDetails(
        description=f"Apply a patch: {what}",
        locations=tuple(dict.fromkeys(shown)),
        diff=_diffs(changes),
    )
