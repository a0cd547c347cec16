"""Text for and from the model: numbered reading, exact-string edits and short diffs.

This module owns how `fs_read` shows a file (``cat -n`` style numbered lines, long-line
truncation, a window given by an offset and a limit, read as a stream so a huge file is never
held in memory), how `fs_edit` and `fs_multi_edit` apply an exact ``old_string`` →
``new_string`` replacement (with errors that tell the model what to fix), and the short
unified diff they return. It does not resolve paths or touch the file pool.
"""

from __future__ import annotations

import difflib
import errno
import io
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import IO, Any

from kode.tools.errors import ToolError, ToolErrorType

__all__ = [
    "DEFAULT_READ_LINES",
    "MAX_LINE_CHARS",
    "MAX_READ_CHARS",
    "MAX_SCAN_BYTES",
    "apply_edit",
    "read_numbered",
    "short_diff",
]

DEFAULT_READ_LINES = 2000
"""Lines `fs_read` shows when no limit is given."""
MAX_LINE_CHARS = 2000
"""Characters of one line `fs_read` shows; the rest is replaced by a marker."""
MAX_READ_CHARS = 100_000
"""Characters one `fs_read` call returns at most (it stops at a line boundary)."""
MAX_SCAN_BYTES = 256 * 1024 * 1024
"""Bytes of a file one `fs_read` call reads at most, to reach its offset and show lines (the
holes of a sparse file are stepped over, not read)."""
_LINE_READ_BYTES = 64 * 1024  # bytes of one line read into memory; the rest is skipped
_BOM = b"\xef\xbb\xbf"
_DIFF_LINES = 80
_DIFF_LINE_CHARS = 300


class _ScanLimit(Exception):
    pass


def _hole(fh: IO[bytes]) -> int:
    """How many bytes of a sparse file's hole start where `fh` is (0 when in data).

    A hole reads as zeros, so it holds no line end: reading on can jump over it. The
    descriptor's own offset is put back, since the buffered file keeps track of it.
    """
    seek_data = getattr(os, "SEEK_DATA", None)  # not on Windows
    if seek_data is None:
        return 0
    try:
        fd = fh.fileno()
        here = fh.tell()
    except (OSError, ValueError, io.UnsupportedOperation):
        return 0
    try:
        raw = os.lseek(fd, 0, os.SEEK_CUR)
    except OSError:
        return 0
    try:
        data = os.lseek(fd, here, seek_data)
    except OSError as exc:
        if exc.errno != errno.ENXIO:
            return 0  # no hole support here: read on
        data = os.fstat(fd).st_size  # no data after `here`: a hole to the end
    finally:
        os.lseek(fd, raw, os.SEEK_SET)
    return max(data - here, 0)


class _Scanner:
    """Reads a file's lines for `fs_read` with a bound on the bytes read and on time."""

    def __init__(self, fh: IO[bytes], cancelled: Callable[[], bool]) -> None:
        self.fh = fh
        self.read = 0
        self.cancelled = cancelled

    def _next(self) -> bytes:
        if self.cancelled():
            raise ToolError("The tool call was cancelled.", type=ToolErrorType.CANCELLED)
        chunk = self.fh.readline(_LINE_READ_BYTES)
        self.read += len(chunk)
        if self.read > MAX_SCAN_BYTES:
            raise _ScanLimit
        return chunk

    def lines(self) -> Iterator[tuple[bytes, int]]:
        """Each line without its end (LF or CRLF), and how many of its bytes were skipped."""
        while True:
            chunk = self._next()
            if not chunk:
                return
            skipped = 0
            if len(chunk) == _LINE_READ_BYTES and not chunk.endswith(b"\n"):
                while True:
                    hole = _hole(self.fh)
                    if hole:
                        skipped += hole
                        self.fh.seek(hole, os.SEEK_CUR)
                    rest = self._next()
                    if not rest:
                        break
                    if rest.endswith(b"\n"):
                        skipped += len(rest) - 1
                        break
                    skipped += len(rest)
            else:
                chunk = chunk.removesuffix(b"\n")
            yield chunk.removesuffix(b"\r"), skipped


def _decode(raw: bytes, cut: bool) -> tuple[str, bool]:
    """`raw` as text, and whether bytes that are not UTF-8 were replaced.

    A line `cut` at a byte limit may end inside a character: that is not the file's fault.
    """
    try:
        return raw.decode("utf-8"), False
    except UnicodeDecodeError as exc:
        if cut and exc.start >= len(raw) - 3:
            text, lossy = _decode(raw[: exc.start], False)
            return text, lossy
        return raw.decode("utf-8", errors="replace"), True


@dataclass(kw_only=True, slots=True)
class _Window:
    shown: list[str]
    first: int
    last: int
    seen: int
    more: bool
    lossy: bool
    capped: bool
    stopped: bool


def _window(scan: _Scanner, start: int, count: int, shown: str) -> _Window:
    out: list[str] = []
    chars = 0
    n = 0
    lossy = capped = more = stopped = False
    lines = scan.lines()
    while True:
        try:
            raw, skipped = next(lines)
        except StopIteration:
            break
        except _ScanLimit:
            if not out:
                raise _scan_limit(shown, start, n) from None
            stopped = more = True
            break
        n += 1
        if n == 1:
            raw = raw.removeprefix(_BOM)
        if n < start:
            continue
        if n >= start + count:
            more = True
            break
        text, bad = _decode(raw, skipped > 0)
        lossy = lossy or bad
        if len(text) > MAX_LINE_CHARS or skipped:
            hidden = len(text) - MAX_LINE_CHARS + skipped
            text = f"{text[:MAX_LINE_CHARS]} … [line truncated: {hidden} more characters]"
        line = f"{n:>6}\t{text}"
        if out and chars + len(line) + 1 > MAX_READ_CHARS:
            capped = more = True
            break
        out.append(line)
        chars += len(line) + 1
    last = start + len(out) - 1
    return _Window(
        shown=out,
        first=start,
        last=last,
        seen=n,
        more=more,
        lossy=lossy,
        capped=capped,
        stopped=stopped,
    )


def _scan_size() -> str:
    size = MAX_SCAN_BYTES
    return f"{size // 2**20} MB" if size % 2**20 == 0 else f"{size:,} bytes"


def _scan_limit(shown: str, start: int, seen: int) -> ToolError:
    return ToolError(
        f"fs_read read {_scan_size()} of '{shown}' (its first {seen:,} lines) "
        f"without reaching line {start:,}, and reads no more in one call. Search the file "
        "with fs_grep, or show the lines with a command (e.g. sed -n or tail).",
        details={"path": shown, "reason": "scan_limit", "lines_seen": seen},
    )


def read_numbered(
    fh: IO[bytes],
    shown: str,
    *,
    offset: int | None,
    limit: int | None,
    count_lines: bool,
    cancelled: Callable[[], bool] = lambda: False,
) -> tuple[str, dict[str, Any]]:
    """The numbered lines of a text file, with notes for the model, and details for programs.

    `fh` is the file, open for reading at its start; it is read in bounded pieces, so a
    huge line is cut without being held, and the holes of a sparse file are stepped over
    without reading them. At most `MAX_SCAN_BYTES` are read, and `cancelled` is asked
    before each piece. With `count_lines` the rest of the file is scanned to say how many
    lines it has (skip that for a huge file).

    Raises:
        ToolError: `offset` is past the end of the file, or more than `MAX_SCAN_BYTES` lie
            before it; ``cancelled`` when `cancelled` says so.
    """
    start = offset or 1
    count = limit or DEFAULT_READ_LINES
    scan = _Scanner(fh, cancelled)
    win = _window(scan, start, count, shown)
    total: int | None = None
    if count_lines and not win.stopped:
        try:
            total = win.seen + sum(1 for _ in scan.lines())
        except _ScanLimit:
            total = None
    elif not win.more:
        total = win.seen
    if not win.shown:
        lines = f"{total} lines" if total is not None else "fewer lines"
        raise ToolError(
            f"File '{shown}' has {lines}; offset {start} is past its end. Use a smaller offset.",
            details={"path": shown, "total_lines": total},
        )
    notes: list[str] = []
    if win.lossy:
        notes.append(
            f"(File '{shown}' is not valid UTF-8; invalid bytes are shown as U+FFFD '\ufffd'. "
            "fs_edit refuses to edit it.)"
        )
    body = "\n".join(win.shown)
    if win.stopped:
        notes_end = (
            f"(Showing lines {win.first}-{win.last}. fs_read stopped there, after reading "
            f"{_scan_size()} of the file, the most it reads in one call: show "
            "later lines with a command (e.g. sed -n or tail), or search with fs_grep.)"
        )
        body = f"{body}\n{notes_end}"
    elif win.more:
        why = f" (output is capped at {MAX_READ_CHARS:,} characters)" if win.capped else ""
        of = f" of {total}" if total is not None else ""
        notes_end = (
            f"(Showing lines {win.first}-{win.last}{of}{why}. To read on, call again with "
            f"offset={win.last + 1}.)"
        )
        body = f"{body}\n{notes_end}"
    text = "\n".join([*notes, body])
    details = {
        "path": shown,
        "first_line": win.first,
        "last_line": win.last,
        "total_lines": total,
        "truncated": win.more,
        "lossy": win.lossy,
    }
    return text, details


_NUMBER_PREFIX = re.compile(r"^\s*\d+\t")


def _line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def _near_match(text: str, old: str) -> int | None:
    """The line where `old` occurs when whitespace at line ends and starts is ignored."""
    wanted = [line.strip() for line in old.strip("\n").split("\n")]
    if not any(wanted):
        return None
    lines = [line.strip() for line in text.split("\n")]
    size = len(wanted)
    for i in range(len(lines) - size + 1):
        if lines[i : i + size] == wanted:
            return i + 1
    return None


def _not_found(text: str, old: str, where: str) -> str:
    content_lines = [line for line in old.split("\n") if line.strip()]
    if content_lines and all(_NUMBER_PREFIX.match(line) for line in content_lines):
        return (
            f"{where}: old_string was not found. It seems to include the line-number prefixes "
            "fs_read shows ('    12<tab>'); those are not part of the file: leave them out."
        )
    near = _near_match(text, old)
    if near is not None:
        return (
            f"{where}: old_string was not found exactly, but the same lines with different "
            f"indentation or spacing are at line {near}. Copy them exactly (whitespace "
            "included) from fs_read's output."
        )
    return (
        f"{where}: old_string was not found. It must match the file exactly, whitespace and "
        "indentation included; read the file again (fs_read) to see its current content."
    )


def apply_edit(text: str, old: str, new: str, *, replace_all: bool, where: str) -> tuple[str, int]:
    """`text` with `old` replaced by `new`, and how many times it was replaced.

    Raises:
        ToolError: `old` is empty, equal to `new`, not found, or found more than once without
            `replace_all`. `where` starts the message (the file, or which edit of several).
    """
    if not old:
        raise ToolError(
            f"{where}: old_string is empty. Give the exact text to replace (use fs_write to "
            "write a whole file).",
            type=ToolErrorType.INVALID_TOOL_PARAMS,
        )
    if old == new:
        raise ToolError(
            f"{where}: old_string and new_string are the same; there is nothing to change.",
            type=ToolErrorType.INVALID_TOOL_PARAMS,
        )
    found = text.count(old)
    if found == 0:
        raise ToolError(_not_found(text, old, where))
    if found > 1 and not replace_all:
        lines: list[int] = []
        at = text.find(old)
        while at >= 0 and len(lines) < 10:
            lines.append(_line_of(text, at))
            at = text.find(old, at + len(old))
        listed = ", ".join(map(str, lines)) + (", ..." if found > len(lines) else "")
        raise ToolError(
            f"{where}: old_string occurs {found} times (at lines {listed}). Include more of the "
            "surrounding lines to make it unique, or set replace_all to replace every one."
        )
    if replace_all:
        return text.replace(old, new), found
    return text.replace(old, new, 1), 1


def short_diff(before: str, after: str, shown: str) -> str:
    """A unified diff of the change, with two lines of context, capped for a model to read."""
    lines = list(
        difflib.unified_diff(
            before.splitlines(),
            after.splitlines(),
            fromfile=f"a/{shown}",
            tofile=f"b/{shown}",
            n=2,
            lineterm="",
        )
    )
    out = [
        line if len(line) <= _DIFF_LINE_CHARS else f"{line[:_DIFF_LINE_CHARS]} … [cut]"
        for line in lines[:_DIFF_LINES]
    ]
    if len(lines) > _DIFF_LINES:
        out.append(f"… ({len(lines) - _DIFF_LINES} more diff lines not shown)")
    return "\n".join(out)
