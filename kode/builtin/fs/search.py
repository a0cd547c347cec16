"""Built-in search tools of ``group:fs``: ``fs_glob`` finds files by name, ``fs_grep`` by content.

Both walk the workspace by directory descriptor without following symlinks and skip files with
more than one hard link, like the other file tools (see `kode.builtin.fs`, which re-exports
them). Patterns are bounded before any work is done: globs compile in linear time
(`kode.builtin.fs._globs`), and a regular expression runs in ripgrep when it is installed and
accepts it, else in a worker process a deadline can kill (`kode.builtin.fs._grep`).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Annotated, Literal

import anyio
from pydantic import Field

from kode.builtin._shared._workspace_files import (
    PRUNED_DIRS,
    Target,
    grep_single,
    open_directory,
    target,
)
from kode.builtin.fs._globs import GlobError, file_filter, find_files, glob_regex
from kode.builtin.fs._grep import (
    MAX_GREP_FILE_BYTES,
    MAX_REGEX_CHARS,
    GrepQuery,
    confinement,
    find_ripgrep,
    format_outcome,
    python_search,
    ripgrep,
)
from kode.builtin.fs._grep_files import confirm
from kode.tools.context import ToolContext
from kode.tools.define import define_tool
from kode.tools.errors import ToolError, ToolErrorType
from kode.tools.results import ToolResult, text_result

__all__ = ["MAX_SCAN_ENTRIES", "fs_glob", "fs_grep"]

MAX_SCAN_ENTRIES = 200_000
"""Directory entries `fs_glob` looks at before it stops and says so."""


def _prune(*texts: str) -> frozenset[str]:
    """The noise directories to skip: all but those the model named."""
    return frozenset(d for d in PRUNED_DIRS if not any(d in t for t in texts))


def _directory(ctx: ToolContext, path: str) -> Target:
    where, fd = open_directory(ctx, path)
    os.close(fd)
    return where


@define_tool(kind="search", groups=["group:fs"], aliases=["glob"], timeout=60)
def fs_glob(
    pattern: str,
    path: str = ".",
    sort: Literal["mtime", "name"] = "mtime",
    limit: Annotated[int, Field(ge=1, le=1000)] = 100,
    *,
    ctx: ToolContext,
) -> ToolResult:
    """Find files by name pattern, e.g. "**/*.py" or "src/**/*.{ts,tsx}".

    `*` and `?` stay within one directory, `**` spans any number of directories, `{a,b}` is
    either. The pattern matches paths relative to `path`, so "*.py" finds only files directly
    in it. Results are files (not directories), shown relative to the workspace root, newest
    first (sort="mtime") or by name.

    Limits and errors: at most `limit` files (default 100; the output says when there are
    more). Skips .git, node_modules, virtualenvs (.venv, venv) and cache directories unless
    the pattern or path names them, does not follow directory symlinks, and leaves out files
    with more than one hard link. Stops after 200,000 directory entries. Paths outside the
    workspace are refused. Patterns over 1,000 characters, with `{...}` nested over 10 deep
    or expanding to over 100 patterns (4,000 characters in all), or with a backwards range
    such as [z-a] are refused with the reason.

    Args:
        pattern: The glob, relative to `path`.
        path: The directory to search (default: the workspace root).
        sort: "mtime" (most recently modified first) or "name".
        limit: How many files to list at most.
        ctx: Injected by kode (not shown to the model).
    """
    try:
        regex = glob_regex(pattern.removeprefix("./"))
    except GlobError as exc:
        raise ToolError(str(exc), type=ToolErrorType.INVALID_TOOL_PARAMS) from None
    if pattern.startswith("/") or ".." in pattern.split("/"):
        raise ToolError(
            f"Pattern {pattern!r} must be relative and stay below `path`; pass the directory "
            "to search as `path` instead.",
            type=ToolErrorType.INVALID_TOOL_PARAMS,
        )
    where = _directory(ctx, path)
    found, stopped = find_files(
        where.path,
        regex,
        prune=_prune(pattern, path),
        allowed=lambda p: where.workspace.allowed(Path(p)),
        cancelled=lambda: ctx.cancelled,
        max_entries=MAX_SCAN_ENTRIES,
    )
    found = [(mtime, where.workspace.display(where.path / rel)) for mtime, rel in found]
    if sort == "mtime":
        found.sort(key=lambda item: (-item[0], item[1]))
    else:
        found.sort(key=lambda item: item[1])
    paths = [p for _, p in found[:limit]]
    lines = list(paths)
    if not paths:
        hint = ""
        if "/" not in pattern and "**" not in pattern:
            hint = (
                f" A pattern without '/' matches only files directly in '{where.shown}'; use "
                f"'**/{pattern}' to search subdirectories too."
            )
        lines.append(f"No files match {pattern!r} in '{where.shown}'.{hint}")
    elif len(found) > limit:
        order = "newest first" if sort == "mtime" else "by name"
        lines.append(
            f"(Showing {limit} of {len(found)} files, {order}; narrow the pattern or path, or "
            "raise limit.)"
        )
    if stopped:
        lines.append(
            f"(Stopped after looking at {MAX_SCAN_ENTRIES:,} entries; results may be "
            "incomplete: search a narrower path.)"
        )
    return text_result(
        "\n".join(lines),
        details={"paths": paths, "total": len(found), "complete": not stopped},
    )


@define_tool(kind="search", groups=["group:fs"], aliases=["grep"], timeout=60)
async def fs_grep(
    pattern: str,
    path: str = ".",
    glob: str = "",
    ignore_case: bool = False,
    context: Annotated[int, Field(ge=0, le=20)] = 0,
    output_mode: Literal["content", "files", "count"] = "content",
    limit: Annotated[int, Field(ge=1, le=1000)] = 100,
    *,
    ctx: ToolContext,
) -> ToolResult:
    r"""Search file contents with a regular expression; list matching lines, files or counts.

    Output: "content" gives `file:line:text` for matches and `file-line-text` for context
    lines ("--" between separate groups); "files" gives the paths of matching files; "count"
    gives `file:count`. Files come in path order, paths relative to the workspace root.

    Limits and errors: stops after `limit` matching lines ("content") or files (default 100)
    and says so; lines over 500 characters are cut. Searches hidden files but skips binary
    files, files over 20 MB, symlinks, files with more than one hard link (the output says how
    many), .git, node_modules, virtualenvs and cache directories (unless the path or glob
    names them); .gitignore is not read. A `path` naming a file over 20 MB is refused. An
    invalid regex, or one over 2,000 characters, is refused with the reason; the glob has
    fs_glob's limits. Paths outside the workspace are refused. Without ripgrep (or for
    look-around and back-references, which ripgrep's linear-time engine lacks) Python
    searches, in a worker process stopped after 30 s.

    Args:
        pattern: A regular expression (Python/ripgrep syntax), e.g. "def \w+\(" or "TODO".
        path: A directory to search recursively, or one file (default: the workspace root).
        glob: Only search files matching this glob, e.g. "*.py" (file name at any depth),
            "src/**/*.ts" (path below `path`) or "!*.min.js" (exclude).
        ignore_case: Match letters case-insensitively.
        context: Lines to show before and after each match ("content" only).
        output_mode: "content", "files" or "count".
        limit: How many matching lines ("content") or files to report at most.
        ctx: Injected by kode (not shown to the model).
    """
    if len(pattern) > MAX_REGEX_CHARS:
        raise ToolError(
            f"Regular expression of {len(pattern):,} characters is too long: at most "
            f"{MAX_REGEX_CHARS:,} are accepted. Search for a shorter, distinctive part.",
            type=ToolErrorType.INVALID_TOOL_PARAMS,
        )
    try:
        re.compile(pattern)
    except re.error as exc:
        raise ToolError(
            f"Invalid regular expression {pattern!r}: {exc}. Escape characters meant "
            "literally, such as '(' '[' '.' or '*', with a backslash.",
            type=ToolErrorType.INVALID_TOOL_PARAMS,
        ) from None
    if glob:
        try:
            file_filter(glob)
        except GlobError as exc:
            raise ToolError(str(exc), type=ToolErrorType.INVALID_TOOL_PARAMS) from None
    where = target(ctx, path)
    single = grep_single(where, max_bytes=MAX_GREP_FILE_BYTES)
    base = where.path.parent if single else where.path
    query = GrepQuery(
        pattern=pattern,
        ignore_case=ignore_case,
        base=base,
        file=where.path.name if single else None,
        glob=glob or None,
        prune=_prune(glob, path),
        mode=output_mode,
        context=context,
        limit=limit,
    )
    # kode's helpers: found outside the workspace, run in the read-only sandbox where there is
    # one (its probe runs once per process, in a worker thread).
    roots = (where.workspace.root, *where.workspace.extra_paths)
    rg, confine = await anyio.to_thread.run_sync(lambda: (find_ripgrep(roots), confinement(roots)))
    found = await ripgrep(rg, query, confine=confine) if rg is not None else None
    changed = 0
    if found is not None:
        # ripgrep opens files by path: keep only what the workspace's own files say.
        outcome, changed = await anyio.to_thread.run_sync(confirm, found, base)
    else:
        outcome = await python_search(query, roots=roots, confine=confine)
    text = format_outcome(
        outcome, query, lambda rel: where.workspace.display(base / rel), where.shown
    )
    if outcome.linked:
        text += (
            f"\n({outcome.linked} file{'s' if outcome.linked != 1 else ''} with more than one "
            "hard link skipped: one link may lie outside the workspace.)"
        )
    if changed:
        text += (
            f"\n({changed} file{'s' if changed != 1 else ''} changed while being searched and "
            "left out; search again to include them.)"
        )
    return text_result(
        text,
        details={
            "engine": outcome.engine,
            "truncated": outcome.truncated,
            "files": [where.workspace.display(base / f.path) for f in outcome.files],
            "matches": sum(f.count for f in outcome.files),
            "skipped_linked": outcome.linked,
            "skipped_changed": changed,
        },
    )
