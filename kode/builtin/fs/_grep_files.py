"""The files `fs_grep` reads: opened inside the workspace only, in bounded pieces.

This module owns how a search opens a file (by descriptor, without following a symlink,
refusing anything but a regular file with one link), how it reads lines (a line longer than
`LINE_WINDOW_BYTES` is searched window by window, never held whole), and the check of
ripgrep's answer: ripgrep opens files by their paths, so a directory swapped for a symlink
while it runs could lead it outside the workspace. Every file it reports is opened again
here, the safe way, and kept only if the lines reported are the lines that file has. It does
not run searches or format results.
"""

from __future__ import annotations

import codecs
import hashlib
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from kode.builtin._shared._safe_open import open_dir, open_file, open_relative
from kode.builtin.fs._grep_types import MAX_GREP_FILE_BYTES, GrepFile, GrepOutcome

__all__ = [
    "LINE_WINDOW_BYTES",
    "confirm",
    "line_digest",
    "open_searchable",
    "scan_lines",
]

LINE_WINDOW_BYTES = 256 * 1024
"""Bytes of one line searched at a time; a longer line is searched in overlapping windows."""
_OVERLAP_BYTES = 4096
"""How far windows of a long line overlap: a match longer than this across two may be missed."""


def line_digest(text: str) -> bytes:
    """A digest of one line's text, to compare lines without keeping them."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def open_searchable(dir_fd: int, name: str, *, limit_size: bool) -> tuple[BinaryIO | None, bool]:
    """Open `name` in `dir_fd` to search it: (the file or `None` to skip it, hard-linked).

    Skipped: a symlink, anything but a regular file, a file with more than one hard link
    (the second value says so), and with `limit_size` one over 20 MB.
    """
    try:
        fd, st = open_file(dir_fd, name)
    except OSError:
        return None, False
    linked = stat.S_ISREG(st.st_mode) and st.st_nlink > 1
    if not stat.S_ISREG(st.st_mode) or linked or (limit_size and st.st_size > MAX_GREP_FILE_BYTES):
        os.close(fd)
        return None, linked
    return os.fdopen(fd, "rb"), False


def scan_lines(fh: BinaryIO, search: Callable[[str], Any]) -> Iterator[tuple[str, bool]]:
    """Each line of `fh` (without its end) and whether `search` finds something in it.

    A line longer than `LINE_WINDOW_BYTES` comes back as its first window, and is searched
    in windows that overlap by 4 KB, so memory stays bounded whatever the line's length.
    """
    while True:
        chunk = fh.readline(LINE_WINDOW_BYTES)
        if not chunk:
            return
        if chunk.endswith(b"\n") or len(chunk) < LINE_WINDOW_BYTES:
            text = chunk.removesuffix(b"\n").removesuffix(b"\r").decode("utf-8", "replace")
            yield text, search(text) is not None
            continue
        head = chunk.decode("utf-8", "replace")
        hit = search(head) is not None
        tail = chunk[-_OVERLAP_BYTES:]
        while more := fh.readline(LINE_WINDOW_BYTES):
            end = more.endswith(b"\n")
            piece = more.removesuffix(b"\n").removesuffix(b"\r") if end else more
            window = tail + piece
            if not hit:
                hit = search(window.decode("utf-8", "replace")) is not None
            tail = window[-_OVERLAP_BYTES:]
            if end:
                break
        yield head.removesuffix("\r"), hit


def _digests(fh: BinaryIO, upto: int) -> Iterator[tuple[int, bytes]]:
    """(number, `line_digest`) of the first `upto` lines, read in bounded pieces."""
    number = 0
    while number < upto:
        chunk = fh.readline(LINE_WINDOW_BYTES)
        if not chunk:
            return
        number += 1
        digest = hashlib.blake2b(digest_size=16)
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        pending = b""
        while True:
            end = chunk.endswith(b"\n")
            data = pending + (chunk[:-1] if end else chunk)
            # A CR is the line's end only when the LF follows it: hold it back until then.
            pending = b"\r" if data.endswith(b"\r") and not end else b""
            if pending:
                data = data[:-1]
            elif end:
                data = data.removesuffix(b"\r")
            digest.update(decoder.decode(data).encode("utf-8", "surrogatepass"))
            if end:
                break
            chunk = fh.readline(LINE_WINDOW_BYTES)
            if not chunk:
                break
        # A CR held back at the end of the file ends the line too (as both searches see it).
        digest.update(decoder.decode(b"", True).encode("utf-8", "surrogatepass"))
        yield number, digest.digest()


def _matches_file(fh: BinaryIO, wanted: dict[int, bytes]) -> bool:
    found = 0
    for number, digest in _digests(fh, max(wanted)):
        if number in wanted:
            if wanted[number] != digest:
                return False
            found += 1
    return found == len(wanted)


def confirm(outcome: GrepOutcome, base: Path) -> tuple[GrepOutcome, int]:
    """`outcome` with only the files whose reported lines are in the workspace's files.

    Each file is opened below `base` by descriptor, without following symlinks; a file that
    cannot be opened so, is not a regular file, or whose lines differ from those reported is
    left out (it changed during the search, or the search was led outside the workspace); a
    hard-linked file is left out and counted in ``linked``. Returns the outcome and how many
    files were left out for changing.
    """
    try:
        base_fd = open_dir(base, listable=False)
    except OSError:
        files = len(outcome.files)
        return GrepOutcome(files=[], truncated=False, engine=outcome.engine), files
    kept: list[GrepFile] = []
    linked = outcome.linked
    changed = 0
    try:
        for found in outcome.files:
            wanted = dict(found.checks)
            if found.lines:
                wanted = {n: line_digest(t) for n, t, _ in found.lines}
            *dirs, name = found.path.split("/")
            try:
                dir_fd = open_relative(base_fd, dirs)
            except OSError:
                changed += 1
                continue
            try:
                fh, is_linked = open_searchable(dir_fd, name, limit_size=False)
            finally:
                os.close(dir_fd)
            if fh is None:
                linked += is_linked
                changed += not is_linked
                continue
            with fh:
                try:
                    ok = bool(wanted) and _matches_file(fh, wanted)
                except OSError:
                    ok = False
            if ok:
                kept.append(found)
            else:
                changed += 1
    finally:
        os.close(base_fd)
    return (
        GrepOutcome(files=kept, truncated=outcome.truncated, engine=outcome.engine, linked=linked),
        changed,
    )
