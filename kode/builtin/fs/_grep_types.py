"""What a search of `fs_grep` is and what it found: `GrepQuery`, `GrepFile`, `GrepOutcome`.

Both search paths (`kode.builtin.fs._grep`) and the check of their answers against the files
(`kode.builtin.fs._grep_files`) use these; they import nothing of either.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

__all__ = [
    "MAX_CHECKED_LINES",
    "MAX_GREP_FILE_BYTES",
    "WORKER_HEADER",
    "GrepFile",
    "GrepMode",
    "GrepOutcome",
    "GrepQuery",
]

MAX_GREP_FILE_BYTES = 20 * 1024 * 1024
"""Files larger than this are skipped when a directory is searched."""
MAX_CHECKED_LINES = 10_000
"""Matching lines per file whose text is kept to check ripgrep's answer (``count`` mode)."""

WORKER_HEADER = struct.Struct(">Q")
"""The length of the pickled query `python_search` sends its worker process, before the query
(`kode.builtin.fs._grep_worker`)."""

GrepMode = Literal["content", "files", "count"]


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
    checks: list[tuple[int, bytes]] = field(default_factory=list)
    """(line number, `line_digest` of its text) of the first `MAX_CHECKED_LINES` matching
    lines (``files`` and ``count`` only), to check ripgrep's answer against the file."""


@dataclass(kw_only=True, slots=True)
class GrepOutcome:
    """The result of a search."""

    files: list[GrepFile]
    """Files with matches, in path order."""
    truncated: bool
    """Whether more matches exist beyond the cap."""
    engine: Literal["ripgrep", "python"]
    """Which search path ran."""
    linked: int = 0
    """Files skipped because they have more than one hard link."""
