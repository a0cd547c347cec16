"""What the file tools show a person: descriptions and diffs, before and after a call.

Before: the `CallDetails` of a call waiting for approval. After: the diff of the change, as
the result's `Display` (never sent to the model).
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

from kode.builtin._shared._workspace_files import Target, target
from kode.builtin.fs._text_edits import apply_edit
from kode.tools.errors import ToolError
from kode.tools.invocation import CallDetails, Display

__all__ = [
    "DIFF_READ_LIMIT",
    "current_text",
    "describe_edit",
    "describe_multi_edit",
    "describe_write",
    "diff_display",
    "diff_of",
]

DIFF_READ_LIMIT = 2 * 2**20
"""Files larger than this (2 MB) get no diff: the description says so instead."""

_DIFF_LINES = 2000
"""The most lines a person's diff keeps (more are counted, not shown)."""


def diff_of(before: str | None, after: str, shown: str) -> str:
    """A unified diff (three lines of context) from `before` (`None`: no file) to `after`."""
    lines = list(
        difflib.unified_diff(
            (before or "").splitlines(),
            after.splitlines(),
            fromfile="/dev/null" if before is None else f"a/{shown}",
            tofile=f"b/{shown}",
            lineterm="",
        )
    )
    if len(lines) > _DIFF_LINES:
        lines = [*lines[:_DIFF_LINES], f"… ({len(lines) - _DIFF_LINES} more diff lines)"]
    return "\n".join(lines)


def diff_display(before: str | None, after: str, shown: str) -> Display:
    """The `Display` of a change to one file: its diff."""
    return Display(kind="diff", text=diff_of(before, after, shown))


def _where(ctx: Any, path: str) -> Target | None:
    if ctx is None:
        return None
    try:
        return target(ctx, path)
    except ToolError:
        return None


def current_text(path: Path) -> tuple[bool, str | None]:
    """Whether `path` is a file, and its text (`None`: missing, too big or not UTF-8)."""
    try:
        if not path.is_file():
            return False, None
        if path.stat().st_size > DIFF_READ_LIMIT:
            return True, None
        return True, path.read_bytes().decode("utf-8").replace("\r\n", "\n")
    except (OSError, UnicodeDecodeError):
        return True, None


def _lines(text: str) -> int:
    return text.count("\n") + (0 if text.endswith("\n") or not text else 1)


def describe_write(arguments: dict[str, Any], ctx: Any) -> CallDetails:
    """``fs_write``: "Write 120 lines to src/app.py" and the diff against the current file."""
    path, content = str(arguments.get("path", "")), str(arguments.get("content", ""))
    where = _where(ctx, path)
    shown = where.shown if where is not None else path
    count = _lines(content)
    what = f"Write {count} line{'' if count == 1 else 's'} to {shown}"
    if where is None:
        return CallDetails(description=what, locations=(shown,))
    exists, before = current_text(where.path)
    if not exists:
        return CallDetails(
            description=f"{what} (a new file)",
            locations=(shown,),
            diff=diff_of(None, content, shown),
        )
    if before is None:
        return CallDetails(
            description=f"{what} (replacing a file too large or not text to diff)",
            locations=(shown,),
        )
    return CallDetails(description=what, locations=(shown,), diff=diff_of(before, content, shown))


def _describe_edits(path: str, edits: list[tuple[str, str, bool]], ctx: Any) -> CallDetails:
    where = _where(ctx, path)
    shown = where.shown if where is not None else path
    count = f"{len(edits)} edit{'' if len(edits) == 1 else 's'}"
    if where is None:
        return CallDetails(description=f"Edit {shown} ({count})", locations=(shown,))
    _, before = current_text(where.path)
    if before is None:
        return CallDetails(
            description=f"Edit {shown} ({count}; the file is missing, too large or not text)",
            locations=(shown,),
        )
    text, replaced = before, 0
    try:
        for old, new, replace_all in edits:
            text, found = apply_edit(
                text,
                old.replace("\r\n", "\n"),
                new.replace("\r\n", "\n"),
                replace_all=replace_all,
                where=f"'{shown}'",
            )
            replaced += found
    except ToolError as exc:
        first = exc.message.splitlines()[0] if exc.message else "the edit does not apply"
        return CallDetails(
            description=f"Edit {shown} ({count}; it will fail: {first})", locations=(shown,)
        )
    what = f"{replaced} replacement{'' if replaced == 1 else 's'}"
    return CallDetails(
        description=f"Edit {shown} ({what})", locations=(shown,), diff=diff_of(before, text, shown)
    )


def describe_edit(arguments: dict[str, Any], ctx: Any) -> CallDetails:
    """``fs_edit``: the diff the replacement would make."""
    edit = (
        str(arguments.get("old_string", "")),
        str(arguments.get("new_string", "")),
        bool(arguments.get("replace_all", False)),
    )
    return _describe_edits(str(arguments.get("path", "")), [edit], ctx)


def describe_multi_edit(arguments: dict[str, Any], ctx: Any) -> CallDetails:
    """``fs_multi_edit``: the diff all the replacements would make."""
    edits = [
        (e.old_string, e.new_string, e.replace_all)
        if hasattr(e, "old_string")
        else (str(e["old_string"]), str(e["new_string"]), bool(e.get("replace_all", False)))
        for e in arguments.get("edits", [])
    ]
    return _describe_edits(str(arguments.get("path", "")), edits, ctx)
