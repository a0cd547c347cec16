"""Glob patterns and directory walks, for `fs_glob` and the pure-Python path of `fs_grep`.

This module owns the translation of a glob (``*``, ``?``, ``[...]``, ``**`` across
directories, ``{a,b}`` alternatives) into a regular expression, the two ways a glob is matched
(against the whole relative path, or — ripgrep's ``--glob`` rule — against the file name when
the glob has no ``/``), and a sorted, depth-first walk that does not follow directory symlinks
and skips noise directories. The order of the walk is ripgrep's ``--sort path`` order, so both
search paths list files alike.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path

__all__ = ["file_filter", "find_files", "glob_regex", "walk"]


def _class(pattern: str, i: int) -> tuple[str, int] | None:
    """The regex class for the ``[...]`` starting at `i`, and the index after it."""
    j = i + 1
    if j < len(pattern) and pattern[j] in "!^":
        j += 1
    if j < len(pattern) and pattern[j] == "]":
        j += 1
    while j < len(pattern) and pattern[j] != "]":
        j += 1
    if j >= len(pattern):
        return None  # no closing bracket: a literal '['
    body = pattern[i + 1 : j]
    negate = body[:1] in ("!", "^")
    if negate:
        body = body[1:]
    escaped = "".join("\\" + ch if ch in "\\^[]" else ch for ch in body)
    return (f"[^/{escaped}]" if negate else f"[{escaped}]"), j + 1


def _translate(pattern: str, i: int, in_braces: bool) -> tuple[str, int, bool]:
    """Translate from `i` up to the end (or the closing brace); return regex, index, closed."""
    parts: list[str] = []
    choices: list[str] = []
    n = len(pattern)
    while i < n:
        ch = pattern[i]
        if ch == "*":
            j = i
            while j < n and pattern[j] == "*":
                j += 1
            at_start = i == 0 or pattern[i - 1] in "/{,"
            ends = j == n or pattern[j] == "/" or (in_braces and pattern[j] in ",}")
            if j - i >= 2 and at_start and j < n and pattern[j] == "/":
                parts.append("(?:[^/]*/)*")  # "**/": any number of directories, even none
                i = j + 1
            elif j - i >= 2 and at_start and ends:
                parts.append(".*")  # a trailing "**": everything below
                i = j
            else:
                parts.append("[^/]*")
                i = j
        elif ch == "?":
            parts.append("[^/]")
            i += 1
        elif ch == "[":
            made = _class(pattern, i)
            if made is None:
                parts.append(re.escape(ch))
                i += 1
            else:
                parts.append(made[0])
                i = made[1]
        elif ch == "{":
            inner, after, closed = _translate(pattern, i + 1, True)
            if closed:
                parts.append(inner)
                i = after
            else:
                parts.append(re.escape(ch))
                i += 1
        elif in_braces and ch == ",":
            choices.append("".join(parts))
            parts = []
            i += 1
        elif in_braces and ch == "}":
            choices.append("".join(parts))
            return "(?:" + "|".join(choices) + ")", i + 1, True
        elif ch == "\\" and i + 1 < n:
            parts.append(re.escape(pattern[i + 1]))
            i += 2
        else:
            parts.append(re.escape(ch))
            i += 1
    return "".join(parts), i, not in_braces


def glob_regex(pattern: str) -> re.Pattern[str]:
    """A regex matching the whole of a ``/``-separated path when `pattern` does.

    Example:
        ```python
        from kode.builtin._globs import glob_regex

        assert glob_regex("src/**/*.{py,pyi}").match("src/a/b/c.pyi")
        assert not glob_regex("*.py").match("src/c.py")
        ```
    """
    source, _, _ = _translate(pattern, 0, False)
    return re.compile(f"(?s:{source})\\Z")


def file_filter(glob: str) -> Callable[[str], bool]:
    """A test of ``/``-separated relative file paths, with ripgrep's ``--glob`` rules.

    A glob without ``/`` matches the file name at any depth; one with ``/`` matches the path
    relative to the searched directory (a leading ``/`` is allowed). A leading ``!`` excludes
    what matches, and excluding a directory excludes everything in it.
    """
    exclude = glob.startswith("!")
    body = glob.removeprefix("!").rstrip("/")
    name_only = "/" not in body
    regex = glob_regex(body if name_only else body.lstrip("/"))

    def matches(rel: str) -> bool:
        return bool(regex.match(rel.rsplit("/", 1)[-1] if name_only else rel))

    if not exclude:
        return matches

    def accept(rel: str) -> bool:
        parts = rel.split("/")
        return not any(matches("/".join(parts[: i + 1])) for i in range(len(parts)))

    return accept


def walk(root: str, prune: frozenset[str]) -> Iterator[tuple[str, os.DirEntry[str]]]:
    """Every non-directory entry below `root`, as (path relative to `root`, entry).

    Entries of a directory come sorted by name, each directory's content right where its name
    sorts (ripgrep's ``--sort path`` order). Directory symlinks are yielded as entries, not
    followed; directories named in `prune` are skipped; unreadable directories are skipped.
    Iterative, so no depth of nesting exhausts the stack.
    """
    stack: list[tuple[str, Iterator[os.DirEntry[str]]]] = [("", _sorted_entries(root))]
    while stack:
        prefix, entries = stack[-1]
        entry = next(entries, None)
        if entry is None:
            stack.pop()
            continue
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
        except OSError:
            continue
        rel = prefix + entry.name
        if not is_dir:
            yield rel, entry
        elif entry.name not in prune:
            stack.append((rel + "/", _sorted_entries(entry.path)))


def _sorted_entries(directory: str) -> Iterator[os.DirEntry[str]]:
    try:
        with os.scandir(directory) as it:
            return iter(sorted(it, key=lambda e: e.name))
    except OSError:
        return iter(())


def find_files(
    root: Path,
    regex: re.Pattern[str],
    *,
    prune: frozenset[str],
    allowed: Callable[[str], bool],
    cancelled: Callable[[], bool],
    max_entries: int,
) -> tuple[list[tuple[float, str]], bool]:
    """Files below `root` whose relative path `regex` matches, as (mtime, relative path).

    Symlinks count when they point to a file that `allowed` accepts (its real path). Returns
    the matches, and whether the walk stopped early (`max_entries` looked at, or cancelled).
    """
    found: list[tuple[float, str]] = []
    for scanned, (rel, entry) in enumerate(walk(str(root), prune), 1):
        if scanned > max_entries or cancelled():
            return found, True
        if not regex.match(rel):
            continue
        try:
            if entry.is_symlink():
                real = os.path.realpath(entry.path)
                if not allowed(real) or not os.path.isfile(real):
                    continue
            elif not entry.is_file(follow_symlinks=False):
                continue
            found.append((entry.stat().st_mtime, rel))
        except OSError:
            continue
    return found, False
