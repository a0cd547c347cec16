"""Former home of ``fs_glob`` and ``fs_grep``, kept so that existing imports keep working.

The tools now live in `kode.builtin.fs.search` (and are re-exported by `kode.builtin.fs`).
This module re-exports the very same objects: importing it registers nothing a second time.
"""

from __future__ import annotations

from kode.builtin.fs.search import MAX_SCAN_ENTRIES, fs_glob, fs_grep

__all__ = ["MAX_SCAN_ENTRIES", "fs_glob", "fs_grep"]
