"""``fs_read_many`` (``group:fs``): several files, named or found by globs, read in one call.

Paths and globs are resolved in the workspace like every file tool's; globs are matched by
`kode.builtin.fs._globs` (the walk of ``fs_glob``: no directory symlinks followed, noise
directories skipped, files with several hard links left out), then filtered by the ignore
files (`kode.builtin.fs._ignore`). Each file is opened the way ``fs_read`` opens it and
recorded in the agent's file pool, so it may be edited afterwards.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field

from kode.builtin._shared._workspace_files import (
    BINARY_SNIFF_BYTES,
    HUGE_FILE_BYTES,
    PRUNED_DIRS,
    Target,
    image_type,
    is_binary,
    open_target,
    target,
)
from kode.builtin.fs._globs import GlobError, find_files, glob_regex
from kode.builtin.fs._ignore import IgnoreRules
from kode.tools.context import ToolContext
from kode.tools.define import define_tool
from kode.tools.errors import ToolError, ToolErrorType
from kode.tools.results import ToolResult, text_result

__all__ = ["MAX_MANY_FILES", "MAX_MANY_FILE_CHARS", "MAX_MANY_TOTAL_CHARS", "fs_read_many"]

MAX_MANY_FILE_CHARS = 50_000
"""Characters of one file `fs_read_many` shows; the rest is for ``fs_read`` with an offset."""

MAX_MANY_TOTAL_CHARS = 250_000
"""Characters `fs_read_many` returns in all; files past it are named, not read."""

MAX_MANY_FILES = 200
"""Files one `fs_read_many` call reads at most (more matches are named as left out)."""

_SCAN_ENTRIES = 200_000
_GLOB_CHARS = re.compile(r"[*?\[{]")


def _is_glob(path: str) -> bool:
    return bool(_GLOB_CHARS.search(path))


def _split_glob(pattern: str) -> tuple[str, str]:
    """(the directory before the first glob segment, the rest of the pattern)."""
    parts = pattern.removeprefix("./").split("/")
    for i, part in enumerate(parts):
        if _is_glob(part):
            return "/".join(parts[:i]) or ".", "/".join(parts[i:])
    return "/".join(parts[:-1]) or ".", parts[-1]


def _prune(*texts: str) -> frozenset[str]:
    return frozenset(d for d in PRUNED_DIRS if not any(d in t for t in texts))


def _matches(ctx: ToolContext, pattern: str) -> tuple[list[Path], bool]:
    """The files a glob matches, in path order, and whether the walk stopped early."""
    if pattern.startswith("/") or ".." in pattern.split("/"):
        raise ToolError(
            f"Glob {pattern!r} must be relative to the workspace root and stay inside it "
            "(no leading '/' and no '..').",
            type=ToolErrorType.INVALID_TOOL_PARAMS,
        )
    base, rest = _split_glob(pattern)
    try:
        regex = glob_regex(rest)
    except GlobError as exc:
        raise ToolError(str(exc), type=ToolErrorType.INVALID_TOOL_PARAMS) from None
    where = target(ctx, base)
    if not where.path.is_dir():
        return [], False
    found, stopped = find_files(
        where.path,
        regex,
        prune=_prune(pattern),
        allowed=lambda p: where.workspace.allowed(Path(p)),
        cancelled=lambda: ctx.cancelled,
        max_entries=_SCAN_ENTRIES,
    )
    return sorted(where.path / rel for _, rel in found), stopped


def _numbered(count: int, word: str) -> str:
    return f"{count:,} {word}{'' if count == 1 else 's'}"


def _read_one(ctx: ToolContext, where: Target, budget: int) -> tuple[str, str, dict[str, Any]]:
    """("read" or why it was skipped, the text shown, details) of one file."""
    with open_target(where) as (fh, info):
        head = fh.read(BINARY_SNIFF_BYTES)
        if image_type(head) is not None:
            return "image (read it with fs_read)", "", {}
        if is_binary(head):
            return "binary", "", {}
        if info.st_size > HUGE_FILE_BYTES:
            return f"over {HUGE_FILE_BYTES // 2**20} MB (read it in parts with fs_read)", "", {}
        data = head + fh.read(max(budget * 4 - len(head), 0) + 4)
        whole = len(data) >= info.st_size and not fh.read(1)
    if ctx.files is not None:
        ctx.files.record_read(where.path, stat_result=info)
    text = data.decode("utf-8", errors="replace")
    lossy = "\ufffd" in text and "\ufffd".encode() not in data
    cut = not whole or len(text) > budget
    if cut:
        text = text[:budget]
        if "\n" in text:
            text = text[: text.rindex("\n") + 1]
    lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
    details: dict[str, Any] = {"path": where.shown, "lines": lines, "truncated": cut}
    if lossy:
        details["lossy"] = True
    return "read", text, details


@define_tool(kind="read", groups=["group:fs"], aliases=["read_many_files"], timeout=60)
def fs_read_many(
    paths: Annotated[list[str], Field(min_length=1, max_length=100)],
    exclude: Annotated[list[str], Field(max_length=100)] | None = None,
    respect_ignore: bool = True,
    *,
    ctx: ToolContext,
) -> ToolResult:
    """Read several text files in one call: paths and globs such as "src/**/*.py".

    Each file comes as a "--- path ---" header line followed by its content as it is (no
    line numbers), in the order given (a glob's files in path order). Use fs_read for one
    file, for line numbers, or to read on where a file was cut. Globs match paths from the
    workspace root with fs_glob's syntax; files left out by .gitignore, .ignore or
    .git/info/exclude are skipped unless respect_ignore is false (files named without a
    glob are always read). The files read may then be edited (fs_edit).

    Limits and errors: each file shows at most 50,000 characters (cut at a line end; the
    header says where to go on with fs_read) and the call at most 250,000 in all: files past
    that are named, not read. At most 200 files per call (more matches are counted). Binary
    files, images, files over 10 MB and files with more than one hard link are skipped and
    named. Globs skip .git, node_modules, virtualenvs and cache directories unless they name
    them. A path outside the workspace, a missing file named without a glob, or a glob that
    matches nothing at all is reported in the output; the call fails only if nothing was read.

    Args:
        paths: Files and globs, relative to the workspace root (e.g. "README.md",
            "src/**/*.py", "docs/*.md").
        exclude: Globs of files to leave out (e.g. "**/test_*.py").
        respect_ignore: Skip files that .gitignore, .ignore or .git/info/exclude ignore.
        ctx: Injected by kode (not shown to the model).
    """
    space_root = target(ctx, ".").path
    ignore = IgnoreRules(space_root) if respect_ignore else None
    excluded: list[re.Pattern[str]] = []
    for pattern in exclude or []:
        try:
            excluded.append(glob_regex(pattern.removeprefix("./")))
        except GlobError as exc:
            raise ToolError(str(exc), type=ToolErrorType.INVALID_TOOL_PARAMS) from None
    chosen: list[Target] = []
    notes: list[str] = []
    ignored = left_out = 0
    stopped = False
    seen: set[Path] = set()
    for given in paths:
        pattern = given
        if not _is_glob(given):
            try:
                where = target(ctx, given)
            except ToolError as exc:
                notes.append(f"{given}: {exc.message}")
                continue
            if where.path.is_dir():  # a directory: the files below it
                pattern = "**" if where.shown == "." else f"{where.shown}/**"
        if _is_glob(pattern):
            files, more = _matches(ctx, pattern)
            stopped = stopped or more
            if not files:
                notes.append(f"No files match {given!r}.")
                continue
            for path in files:
                if path in seen:
                    continue
                seen.add(path)
                rel = path.relative_to(space_root).as_posix()
                if any(rx.match(rel) for rx in excluded):
                    left_out += 1
                    continue
                if ignore is not None and ignore.ignored(rel):
                    ignored += 1
                    continue
                chosen.append(target(ctx, str(path)))
        else:
            if where.path not in seen:
                seen.add(where.path)
                chosen.append(where)
    parts: list[str] = []
    read: list[dict[str, Any]] = []
    skipped: list[dict[str, str]] = []
    not_read: list[str] = []
    total = 0
    for where in chosen:
        if len(read) >= MAX_MANY_FILES or total >= MAX_MANY_TOTAL_CHARS:
            not_read.append(where.shown)
            continue
        budget = min(MAX_MANY_FILE_CHARS, MAX_MANY_TOTAL_CHARS - total)
        try:
            how, text, info = _read_one(ctx, where, budget)
        except ToolError as exc:
            skipped.append({"path": where.shown, "reason": exc.message.split(". ")[0]})
            continue
        except OSError as exc:
            skipped.append({"path": where.shown, "reason": exc.strerror or str(exc)})
            continue
        if how != "read":
            skipped.append({"path": where.shown, "reason": how})
            continue
        header = f"--- {where.shown} ---"
        if info["truncated"]:
            header = (
                f"--- {where.shown} (first {_numbered(info['lines'], 'line')} shown; read on "
                f"with fs_read offset={info['lines'] + 1}) ---"
            )
        parts.append(header)
        parts.append(text.rstrip("\n") if text else "(empty file)")
        total += len(text)
        read.append(info)
    if not read:
        why = [*notes, *(f"{s['path']}: {s['reason']}" for s in skipped)]
        raise ToolError(
            "No file was read. " + (" ".join(why) if why else "Name files or globs to read."),
            type=ToolErrorType.FILE_NOT_FOUND
            if all("does not exist" in s["reason"] for s in skipped)
            and all(n.startswith("No files") for n in notes)
            else ToolErrorType.TOOL_ERROR,
            details={"skipped": skipped, "notes": notes},
        )
    tail: list[str] = []
    if skipped:
        tail.append(
            "(Skipped: " + "; ".join(f"{s['path']} ({s['reason']})" for s in skipped) + ".)"
        )
    if not_read:
        what = (
            f"the {MAX_MANY_TOTAL_CHARS:,}-character total"
            if total >= MAX_MANY_TOTAL_CHARS
            else f"the {MAX_MANY_FILES}-file limit"
        )
        shown = ", ".join(not_read[:20]) + (
            f" and {len(not_read) - 20} more" if len(not_read) > 20 else ""
        )
        tail.append(f"(Not read, {what} was reached: {shown}. Read them in another call.)")
    if ignored:
        tail.append(
            f"({_numbered(ignored, 'file')} left out by ignore files; set respect_ignore to "
            "false to read them.)"
        )
    if left_out:
        tail.append(f"({_numbered(left_out, 'file')} left out by exclude.)")
    if stopped:
        tail.append(
            f"(A glob stopped after {_SCAN_ENTRIES:,} directory entries; use a narrower one.)"
        )
    tail += [f"({note})" for note in notes]
    text = "\n".join(parts + tail)
    return text_result(
        text,
        details={
            "files": read,
            "skipped": skipped,
            "not_read": not_read,
            "ignored": ignored,
            "excluded": left_out,
            "characters": total,
        },
    )
