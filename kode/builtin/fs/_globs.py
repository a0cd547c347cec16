"""Glob patterns and directory walks, for `fs_glob` and the pure-Python path of `fs_grep`.

This module owns the translation of a glob (``*``, ``?``, ``[...]``, ``**`` across
directories, ``{a,b}`` alternatives) into a regular expression, the two ways a glob is matched
(against the whole relative path, or — ripgrep's ``--glob`` rule — against the file name when
the glob has no ``/``), and a sorted, depth-first walk that does not follow directory symlinks
and skips noise directories. The order of the walk is ripgrep's ``--sort path`` order, so both
search paths list files alike.

A glob is compiled in time linear in its length and expansion, within limits that refuse what
cannot be bounded (`MAX_GLOB_CHARS`, `MAX_BRACE_DEPTH`, `MAX_GLOB_ALTERNATIVES`,
`MAX_GLOB_EXPANSION`), and its regex never retries every split of nested repetition.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

from kode.builtin._shared._safe_open import WalkEntry, open_dir, walk_fds

__all__ = [
    "MAX_BRACE_DEPTH",
    "MAX_GLOB_ALTERNATIVES",
    "MAX_GLOB_CHARS",
    "MAX_GLOB_EXPANSION",
    "GlobError",
    "file_filter",
    "find_files",
    "glob_regex",
    "walk",
]


MAX_GLOB_CHARS = 1000
"""The longest glob accepted, in characters."""
MAX_BRACE_DEPTH = 10
"""How deeply ``{...}`` alternatives may nest."""
MAX_GLOB_ALTERNATIVES = 100
"""How many patterns a glob's ``{...}`` alternatives may expand to."""
MAX_GLOB_EXPANSION = 4000
"""How many characters a glob's ``{...}`` alternatives may expand to, all patterns together."""

_CLASS_SPECIAL = frozenset("\\]^-[&~|")


class GlobError(ValueError):
    """A glob that is too long, too deeply nested or malformed; the message says which."""


# Token kinds of a glob: a literal character, a run of ``*``, ``?``, a character class (its
# regex), the ``/`` separator, and the brace syntax (kept apart so it can be expanded).
_Token = tuple[str, str]
_Seq = list["_Token | _Group"]


class _Group:
    """A matched ``{...}``: its comma-separated alternatives."""

    __slots__ = ("alternatives",)

    def __init__(self) -> None:
        self.alternatives: list[_Seq] = [[]]


def _quoted(pattern: str) -> str:
    return repr(pattern if len(pattern) <= 60 else pattern[:60] + "…")


def _class_char(ch: str) -> str:
    return "\\" + ch if ch in _CLASS_SPECIAL else ch


def _class(pattern: str, i: int, last_close: int) -> tuple[str, int] | None:
    """The regex for the ``[...]`` starting at `i` and the index after it, `None` if unclosed.

    `last_close` is the index of the pattern's last ``]``: a ``[`` after it is known to be
    unclosed without scanning, so a run of unclosed brackets costs linear time in all.
    """
    j = i + 1
    if j < len(pattern) and pattern[j] in "!^":
        j += 1
    if j < len(pattern) and pattern[j] == "]":
        j += 1
    if j > last_close:
        return None  # no closing bracket: a literal '['
    j = pattern.index("]", j)
    body = pattern[i + 1 : j]
    negate = body[:1] in ("!", "^")
    if negate:
        body = body[1:]
    items: list[str] = []
    slash = False
    k = 0
    while k < len(body):
        if k + 2 < len(body) and body[k + 1] == "-":
            low, high = body[k], body[k + 2]
            if low > high:
                raise GlobError(
                    f"Character range '{low}-{high}' in glob {_quoted(pattern)} runs backwards; "
                    f"write '{high}-{low}'."
                )
            slash = slash or low <= "/" <= high
            items.append(f"{_class_char(low)}-{_class_char(high)}")
            k += 3
        else:
            slash = slash or body[k] == "/"
            items.append(_class_char(body[k]))
            k += 1
    inner = "".join(items)
    if negate:
        return f"[^/{inner}]", j + 1
    # A class never matches the separator: '*' and '?' do not either, and matching goes
    # directory by directory.
    return (f"(?!/)[{inner}]" if slash else f"[{inner}]"), j + 1


def _tokens(pattern: str) -> list[_Token]:
    """The pattern as tokens, in one pass; braces are matched later."""
    tokens: list[_Token] = []
    last_close = pattern.rfind("]")
    n = len(pattern)
    i = 0
    while i < n:
        ch = pattern[i]
        if ch == "*":
            j = i
            while j < n and pattern[j] == "*":
                j += 1
            tokens.append(("star", pattern[i:j]))
            i = j
            continue
        if ch == "[":
            made = _class(pattern, i, last_close)
            if made is not None:
                tokens.append(("class", made[0]))
                i = made[1]
                continue
            tokens.append(("char", "["))
        elif ch == "\\" and i + 1 < n:
            i += 1
            tokens.append(("sep", "/") if pattern[i] == "/" else ("char", pattern[i]))
        elif ch == "?":
            tokens.append(("any", "?"))
        elif ch == "/":
            tokens.append(("sep", "/"))
        elif ch in "{,}":
            tokens.append(("brace", ch))
        else:
            tokens.append(("char", ch))
        i += 1
    return tokens


def _parse(pattern: str) -> _Seq:
    """The tokens with matched braces as groups; unmatched braces and stray commas are literal."""
    tokens = _tokens(pattern)
    closes: dict[int, int] = {}
    opened: list[int] = []
    for index, (kind, text) in enumerate(tokens):
        if kind == "brace" and text == "{":
            opened.append(index)
        elif kind == "brace" and text == "}" and opened:
            closes[opened.pop()] = index
    top: _Seq = []
    stack: list[tuple[_Group, int]] = []  # the open groups and where each closes
    for index, token in enumerate(tokens):
        kind, text = token
        current = stack[-1][0].alternatives[-1] if stack else top
        if kind != "brace":
            current.append(token)
        elif text == "{" and index in closes:
            if len(stack) >= MAX_BRACE_DEPTH:
                raise GlobError(
                    f"Glob {_quoted(pattern)} nests '{{...}}' more than {MAX_BRACE_DEPTH} deep; "
                    "flatten the alternatives."
                )
            group = _Group()
            current.append(group)
            stack.append((group, closes[index]))
        elif text == "}" and stack and stack[-1][1] == index:
            stack.pop()
        elif text == "," and stack:
            stack[-1][0].alternatives.append([])
        else:
            current.append(("char", text))
    return top


def _count(seq: _Seq) -> int:
    """How many brace-free patterns `seq` expands to, saturating just above the limit."""
    total = 1
    for item in seq:
        if isinstance(item, _Group):
            total *= min(sum(_count(alt) for alt in item.alternatives), MAX_GLOB_ALTERNATIVES + 1)
            total = min(total, MAX_GLOB_ALTERNATIVES + 1)
    return total


def _expand(seq: _Seq) -> list[list[_Token]]:
    done: list[list[_Token]] = [[]]
    for item in seq:
        if isinstance(item, _Group):
            options = [flat for alt in item.alternatives for flat in _expand(alt)]
            done = [head + tail for head in done for tail in options]
        else:
            for head in done:
                head.append(item)
    return done


def _piece(tokens: list[_Token]) -> str:
    return "".join(
        re.escape(text) if kind == "char" else "[^/]" if kind == "any" else text
        for kind, text in tokens
    )


def _segment(tokens: list[_Token]) -> str:
    """The regex for one path segment; a ``*`` never crosses ``/``.

    The pieces between stars match a fixed number of characters, so the leftmost place of
    each middle piece is as good as any later one: committing to it (an atomic group) keeps
    a failed match from retrying every split, which takes exponential time with many stars.
    """
    pieces: list[list[_Token]] = [[]]
    for token in tokens:
        if token[0] == "star":
            if pieces[-1] or len(pieces) == 1:
                pieces.append([])
        else:
            pieces[-1].append(token)
    if len(pieces) == 1:
        return _piece(pieces[0])
    middle = "".join(f"(?>[^/]*?{_piece(p)})" for p in pieces[1:-1])
    return f"{_piece(pieces[0])}{middle}[^/]*{_piece(pieces[-1])}"


def _alternative(tokens: list[_Token]) -> str:
    """The regex for a brace-free glob, anchored at both ends."""
    segments: list[list[_Token] | None] = []  # None: a "**" segment
    current: list[_Token] = []
    for token in [*tokens, ("sep", "/")]:
        if token[0] != "sep":
            current.append(token)
            continue
        globstar = len(current) == 1 and current[0][0] == "star" and len(current[0][1]) >= 2
        if not globstar:
            segments.append(current)
        elif not segments or segments[-1] is not None:
            segments.append(None)  # "**/**" is "**"
        current = []
    blocks: list[list[list[_Token]]] = [[]]  # the segments between "**"s
    for segment in segments:
        if segment is None:
            blocks.append([])
        else:
            blocks[-1].append(segment)
    source = "/".join(_segment(s) for s in blocks[0])
    if len(blocks) == 1:
        return source + r"\Z"
    if blocks[0]:
        source += "/"
    # "**/" is any number of directories, even none. A block between two "**" spans a fixed
    # number of directories, so (as with pieces between stars) its leftmost place is taken.
    for block in blocks[1:-1]:
        inner = "/".join(_segment(s) for s in block)
        source += f"(?>(?:[^/]*/)*?{inner}/)"
    if not blocks[-1]:
        return source + r".*\Z"  # a trailing "**": everything below
    return source + "(?:[^/]*/)*" + "/".join(_segment(s) for s in blocks[-1]) + r"\Z"


def glob_regex(pattern: str) -> re.Pattern[str]:
    """A regex matching the whole of a ``/``-separated path when `pattern` does.

    Compiling takes time linear in the pattern and its expansion, and matching a path takes
    polynomial time whatever the pattern (no nested backtracking).

    Raises:
        GlobError: the pattern is longer than `MAX_GLOB_CHARS`, nests braces deeper than
            `MAX_BRACE_DEPTH`, expands to more than `MAX_GLOB_ALTERNATIVES` patterns or
            `MAX_GLOB_EXPANSION` characters, or has a backwards character range.

    Example:
        ```python
        from kode.builtin.fs._globs import glob_regex

        assert glob_regex("src/**/*.{py,pyi}").match("src/a/b/c.pyi")
        assert not glob_regex("*.py").match("src/c.py")
        ```
    """
    if len(pattern) > MAX_GLOB_CHARS:
        raise GlobError(
            f"Glob of {len(pattern):,} characters is too long: at most {MAX_GLOB_CHARS:,} "
            "are accepted. Use a shorter pattern, or a narrower path."
        )
    seq = _parse(pattern)
    if _count(seq) > MAX_GLOB_ALTERNATIVES:
        raise GlobError(
            f"Glob {_quoted(pattern)} expands to more than {MAX_GLOB_ALTERNATIVES} patterns "
            "through its '{...}' alternatives; use fewer alternatives, or several searches."
        )
    expanded = _expand(seq)
    if sum(map(len, expanded)) > MAX_GLOB_EXPANSION:
        raise GlobError(
            f"Glob {_quoted(pattern)} expands to more than {MAX_GLOB_EXPANSION:,} characters "
            "through its '{...}' alternatives; use fewer or shorter alternatives, or several "
            "searches."
        )
    sources = dict.fromkeys(_alternative(flat) for flat in expanded)
    return re.compile("(?s:" + "|".join(sources) + ")")


def file_filter(glob: str) -> Callable[[str], bool]:
    """A test of ``/``-separated relative file paths, with ripgrep's ``--glob`` rules.

    A glob without ``/`` matches the file name at any depth; one with ``/`` matches the path
    relative to the searched directory (a leading ``/`` is allowed). A leading ``!`` excludes
    what matches, and excluding a directory excludes everything in it.

    Raises:
        GlobError: the glob is refused (see `glob_regex`).
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


def walk(root: int, prune: frozenset[str]) -> Iterator[WalkEntry]:
    """Every non-directory entry below the directory open as `root`, in sorted path order.

    Entries of a directory come sorted by name, each directory's content right where its name
    sorts (ripgrep's ``--sort path`` order). Directories are opened by descriptor without
    following symlinks: directory symlinks are yielded as entries, never followed, even when
    one is swapped in mid-walk; directories named in `prune` and unreadable ones are skipped.
    Iterative, so no depth of nesting exhausts the stack.
    """
    return walk_fds(root, prune)


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

    Symlinks count when they point to a file that `allowed` accepts (its real path). Regular
    files with more than one hard link are left out (one may lie outside the workspace).
    Returns the matches, and whether the walk stopped early (`max_entries` looked at, or
    cancelled).
    """
    found: list[tuple[float, str]] = []
    try:
        root_fd = open_dir(root)
    except OSError:
        return found, False
    try:
        for scanned, entry in enumerate(walk(root_fd, prune), 1):
            if scanned > max_entries or cancelled():
                return found, True
            if not regex.match(entry.rel):
                continue
            try:
                if entry.is_symlink:
                    real = os.path.realpath(root / entry.rel)
                    if not allowed(real) or not os.path.isfile(real):
                        continue
                    st = os.stat(real)
                else:
                    st = os.stat(entry.name, dir_fd=entry.dir_fd, follow_symlinks=False)
                if not stat.S_ISREG(st.st_mode) or st.st_nlink > 1:
                    continue
                found.append((st.st_mtime, entry.rel))
            except OSError:
                continue
    finally:
        os.close(root_fd)
    return found, False
