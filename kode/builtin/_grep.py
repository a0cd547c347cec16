"""The search behind `fs_grep`: ripgrep when it is installed, pure Python otherwise.

This module owns both search paths and what they share: one `GrepQuery`, one `_Collector`
that applies the result cap and gathers context lines (so both paths stop at the same place
and say the same), and one formatter. Both search hidden files, skip binary files, files over
`MAX_GREP_FILE_BYTES`, symlinks and the noise directories the caller prunes, read no
``.gitignore``, and list files in path order — so a model sees the same answer whichever ran.
ripgrep is found on ``PATH`` (or at ``$KODE_RG``; ``KODE_RG=off`` disables it). A pattern
ripgrep's regex engine refuses (look-around, back-references) is searched in Python.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import anyio

from kode.builtin._files import BINARY_SNIFF_BYTES, is_binary
from kode.builtin._globs import file_filter, walk

__all__ = [
    "MAX_GREP_FILE_BYTES",
    "GrepOutcome",
    "GrepQuery",
    "find_ripgrep",
    "format_outcome",
    "python_grep",
    "ripgrep",
]

MAX_GREP_FILE_BYTES = 20 * 1024 * 1024
"""Files larger than this are skipped when a directory is searched."""
_MAX_SHOWN_CHARS = 500
_MAX_STDERR = 16 * 1024

GrepMode = Literal["content", "files", "count"]


def find_ripgrep() -> str | None:
    """The ``rg`` executable to use, or `None` to search in Python."""
    configured = os.environ.get("KODE_RG")
    if configured is not None:
        if configured.strip().lower() in ("", "0", "off", "false", "no"):
            return None
        return shutil.which(configured)
    return shutil.which("rg")


@dataclass(kw_only=True, frozen=True, slots=True)
class GrepQuery:
    """One search, as both paths run it."""

    pattern: str
    """The regular expression."""
    ignore_case: bool
    """Match case-insensitively."""
    base: Path
    """The directory the search runs in; reported paths are relative to it."""
    file: str | None
    """The one file to search (a name in `base`), or `None` to search all of `base`."""
    glob: str | None
    """ripgrep-style file filter, for a directory search."""
    prune: frozenset[str]
    """Directory names to skip at any depth."""
    mode: GrepMode
    """``content`` (lines), ``files`` (paths) or ``count`` (matching lines per file)."""
    context: int
    """Lines shown before and after each match (``content`` only)."""
    limit: int
    """Matching lines (``content``) or files (``files``, ``count``) to report at most."""


@dataclass(kw_only=True, slots=True)
class GrepFile:
    """What was found in one file."""

    path: str
    """The path relative to the search's base, ``/``-separated."""
    lines: list[tuple[int, str, bool]] = field(default_factory=list)
    """(line number, text, is a match), in order (``content`` only)."""
    count: int = 0
    """Matching lines reported."""


@dataclass(kw_only=True, slots=True)
class GrepOutcome:
    """The result of a search."""

    files: list[GrepFile]
    """Files with matches, in path order."""
    truncated: bool
    """Whether more matches exist beyond the cap."""
    engine: Literal["ripgrep", "python"]
    """Which search path ran."""


class _Collector:
    """Gathers results in order and decides when the cap is reached."""

    def __init__(self, query: GrepQuery) -> None:
        self.query = query
        self.files: list[GrepFile] = []
        self.truncated = False
        self.done = False
        self._matches = 0
        self._tail_until: int | None = None

    def add(self, path: str, number: int, text: str, is_match: bool) -> None:
        """Take one reported line (a match or a context line)."""
        if self.done:
            return
        current = self.files[-1] if self.files else None
        same = current is not None and current.path == path
        if self._tail_until is not None:
            # The cap is reached: only the last match's trailing context is still wanted; any
            # other line means there is another match (context is reported only near one).
            if not same or is_match or number > self._tail_until:
                self.truncated = True
                self.done = True
                return
            assert current is not None
            current.lines.append((number, text, False))
            return
        if self.query.mode != "content":
            if not is_match:
                return
            if same:
                assert current is not None
                current.count += 1
                return
            if len(self.files) >= self.query.limit:
                self.truncated = True
                self.done = True
                return
            self.files.append(GrepFile(path=path, count=1))
            return
        if not same:
            current = GrepFile(path=path)
            self.files.append(current)
        assert current is not None
        current.lines.append((number, text, is_match))
        if is_match:
            current.count += 1
            self._matches += 1
            if self._matches >= self.query.limit:
                self._tail_until = number + self.query.context

    def outcome(self, engine: Literal["ripgrep", "python"]) -> GrepOutcome:
        return GrepOutcome(files=self.files, truncated=self.truncated, engine=engine)


# --- pure Python ------------------------------------------------------------------------------


def _search_file(
    path: str, fh: Any, regex: re.Pattern[str], query: GrepQuery, out: _Collector
) -> None:
    context = query.context if query.mode == "content" else 0
    before: deque[tuple[int, str]] = deque(maxlen=context or 1)
    after = 0
    for number, raw in enumerate(fh, 1):
        text = raw.removesuffix(b"\n").removesuffix(b"\r").decode("utf-8", errors="replace")
        if regex.search(text):
            if context:
                for n, t in before:
                    out.add(path, n, t, False)
                before.clear()
            out.add(path, number, text, True)
            if query.mode == "files" or out.done:
                return
            after = context
        elif after:
            out.add(path, number, text, False)
            after -= 1
        elif context:
            before.append((number, text))
        if out.done:
            return


def python_grep(query: GrepQuery, cancelled: Callable[[], bool]) -> GrepOutcome:
    """Search with Python's `re`, line by line, in path order.

    Raises:
        re.error: the pattern is not a valid Python regular expression.
    """
    regex = re.compile(query.pattern, re.IGNORECASE if query.ignore_case else 0)
    out = _Collector(query)
    if query.file is not None:
        with (query.base / query.file).open("rb") as fh:
            _search_file(query.file, fh, regex, query, out)
        return out.outcome("python")
    accept = file_filter(query.glob) if query.glob else None
    for rel, entry in walk(str(query.base), query.prune):
        if out.done or cancelled():
            break
        if entry.is_symlink() or (accept is not None and not accept(rel)):
            continue
        try:
            if not entry.is_file() or entry.stat().st_size > MAX_GREP_FILE_BYTES:
                continue
            with open(entry.path, "rb") as fh:
                if is_binary(fh.read(BINARY_SNIFF_BYTES)):
                    continue
                fh.seek(0)
                _search_file(rel, fh, regex, query, out)
        except OSError:
            continue  # unreadable: ripgrep skips it too
    return out.outcome("python")


# --- ripgrep ----------------------------------------------------------------------------------


def _text(data: dict[str, Any]) -> str:
    if "text" in data:
        return str(data["text"])
    return base64.b64decode(data.get("bytes", "")).decode("utf-8", errors="replace")


def _command(rg: str, query: GrepQuery) -> list[str]:
    cmd = [rg, "--json", "--no-config", "--hidden", "--no-ignore", "--sort", "path"]
    cmd += ["--max-filesize", str(MAX_GREP_FILE_BYTES), "--no-messages"]
    if query.ignore_case:
        cmd.append("--ignore-case")
    if query.mode == "content" and query.context:
        cmd += ["--context", str(query.context)]
    if query.mode == "files":
        cmd += ["--max-count", "1"]
    if query.glob and query.file is None:
        cmd += ["--glob", query.glob]
    for name in sorted(query.prune):
        cmd += ["--glob", f"!{name}/"]
    cmd += ["--regexp", query.pattern]
    if query.file is not None:
        cmd += ["--", query.file]
    return cmd


async def ripgrep(rg: str, query: GrepQuery) -> GrepOutcome | None:
    """Search with ripgrep; `None` when ripgrep refuses the pattern (search in Python then)."""
    out = _Collector(query)
    errors = bytearray()
    process = await anyio.open_process(
        _command(rg, query), cwd=query.base, stdin=subprocess.DEVNULL
    )
    try:
        assert process.stdout is not None and process.stderr is not None
        stderr = process.stderr

        async def drain() -> None:
            async for chunk in stderr:
                if len(errors) < _MAX_STDERR:
                    errors.extend(chunk)

        async with anyio.create_task_group() as tg:
            tg.start_soon(drain)
            pending = b""
            async for chunk in process.stdout:
                *lines, pending = (pending + chunk).split(b"\n")
                for line in lines:
                    _take(line, out)
                if out.done:
                    process.kill()
                    break
            else:
                if pending.strip():
                    _take(pending, out)
        code = await process.wait()
    finally:
        if process.returncode is None:
            process.kill()
        with anyio.CancelScope(shield=True):
            await process.aclose()
    if code == 2 and not out.files and b"regex" in bytes(errors).lower():
        return None
    return out.outcome("ripgrep")


def _take(line: bytes, out: _Collector) -> None:
    if not line.strip() or out.done:
        return
    message = json.loads(line)
    kind = message.get("type")
    if kind not in ("match", "context"):
        return
    data = message["data"]
    text = _text(data["lines"]).removesuffix("\n").removesuffix("\r")
    path = _text(data["path"]).removeprefix("./")
    out.add(path, int(data["line_number"]), text, kind == "match")


# --- formatting -------------------------------------------------------------------------------


def _shown(text: str) -> str:
    if len(text) <= _MAX_SHOWN_CHARS:
        return text
    hidden = len(text) - _MAX_SHOWN_CHARS
    return f"{text[:_MAX_SHOWN_CHARS]} … [line truncated: {hidden} more characters]"


def format_outcome(
    outcome: GrepOutcome, query: GrepQuery, display: Callable[[str], str], where: str
) -> str:
    """The text shown to the model; `display` turns a base-relative path into a shown one."""
    if not outcome.files:
        within = f" (files matching {query.glob!r})" if query.glob and query.file is None else ""
        return f"No matches for /{query.pattern}/ in '{where}'{within}."
    lines: list[str] = []
    if query.mode == "files":
        lines = [display(f.path) for f in outcome.files]
    elif query.mode == "count":
        lines = [f"{display(f.path)}:{f.count}" for f in outcome.files]
        if not outcome.truncated:
            total = sum(f.count for f in outcome.files)
            lines.append(f"({total} matching lines in {len(outcome.files)} files)")
    else:
        for file in outcome.files:
            shown = display(file.path)
            previous: int | None = None
            for number, text, is_match in file.lines:
                if query.context and lines and (previous is None or number != previous + 1):
                    lines.append("--")
                mark = ":" if is_match else "-"
                lines.append(f"{shown}{mark}{number}{mark}{_shown(text)}")
                previous = number
    if outcome.truncated:
        what = "matching lines" if query.mode == "content" else "files"
        lines.append(
            f"(Stopped after {query.limit} {what}; there are more. Narrow the pattern, path or "
            "glob, or raise limit.)"
        )
    return "\n".join(lines)
