"""Reading the patches `apply_patch` takes, and applying their hunks to text.

Two formats are read. The envelope models are trained to write::

    *** Begin Patch
    *** Update File: src/app.py
    *** Move to: src/main.py
    @@ def greet():
    -    print("Hi")
    +    print("Hello")
    *** Add File: notes.txt
    +first line
    *** Delete File: old.txt
    *** End Patch

and plain unified diffs (``--- a/x`` / ``+++ b/x`` / ``@@ -1,3 +1,3 @@``, as ``git diff`` and
``diff -u`` write them, renames and ``/dev/null`` for added and deleted files included).
Both become a list of `FileOp`. `apply_hunks` finds each hunk's lines in a file's text:
exactly, then ignoring whitespace at line ends, then ignoring whitespace around each line,
and says precisely which hunk did not apply and what the file has nearest to it. This module
touches no file and knows nothing of the workspace.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

__all__ = [
    "MAX_PATCH_CHARS",
    "MAX_PATCH_FILES",
    "Applied",
    "FileOp",
    "Hunk",
    "HunkError",
    "PatchError",
    "apply_hunks",
    "parse_patch",
]

MAX_PATCH_CHARS = 2_000_000
"""The longest patch `apply_patch` takes, in characters."""

MAX_PATCH_FILES = 200
"""The most files one patch may add, update, move or delete."""

_SHOW_LINES = 12
_SHOW_CHARS = 200

Action = Literal["add", "update", "delete"]


class PatchError(ValueError):
    """A patch that cannot be read: the message says what is wrong and what is expected."""


@dataclass(kw_only=True, slots=True)
class Hunk:
    """One change to a file: lines to find (`old`) and what replaces them (`new`)."""

    old: list[str] = field(default_factory=list)
    new: list[str] = field(default_factory=list)
    header: str = ""
    """The envelope's ``@@ text``: a line to find first; the hunk applies after it."""
    end_of_file: bool = False
    """``*** End of File``: the lines are at the end of the file."""
    start: int | None = None
    """A unified diff's old start line (1-based): the match nearest to it wins."""
    no_newline: bool | None = None
    """A unified diff's ``\\ No newline at end of file`` for the new side (`None`: not said)."""
    marks: str = ""
    """Each line's mark in order (``" "``, ``"-"``, ``"+"``): context keeps the file's own."""


@dataclass(kw_only=True, slots=True)
class FileOp:
    """What a patch does to one file."""

    action: Action
    path: str
    move_to: str | None = None
    hunks: list[Hunk] = field(default_factory=list)
    content: str = ""
    """An added file's content."""
    other_path: str | None = None
    """A unified diff's old name when it differs from `path` (its new name) without git's
    ``rename from``/``rename to``: the file updated is whichever of the two exists, as
    ``patch`` does; the diff never moves a file on its own."""


@dataclass(kw_only=True, frozen=True, slots=True)
class Applied:
    """A file's text after its hunks, and how each was found."""

    text: str
    fuzzy: list[str]
    """A note for each hunk found only by ignoring whitespace."""


class HunkError(ValueError):
    """A hunk whose lines are not in the file; the message shows both sides."""

    def __init__(self, message: str, details: dict[str, object]) -> None:
        super().__init__(message)
        self.details = details


# ---------------------------------------------------------------------------------------------
# Reading


def parse_patch(text: str) -> list[FileOp]:
    """The file operations of a patch in either format.

    Raises:
        PatchError: not a patch in either format, or malformed (the message names the line).
    """
    if len(text) > MAX_PATCH_CHARS:
        raise PatchError(
            f"The patch is {len(text):,} characters long; apply_patch takes at most "
            f"{MAX_PATCH_CHARS:,}. Split it into several patches."
        )
    lines = _unwrapped(text.replace("\r\n", "\n").split("\n"))
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is None:
        raise PatchError("The patch is empty. " + _FORMATS)
    if lines[first].strip() == "*** Begin Patch":
        ops = _parse_envelope(lines, first)
    elif any(line.startswith("--- ") for line in lines) or any(
        line.startswith("rename from ") for line in lines
    ):
        ops = _parse_unified(lines)
    else:
        raise PatchError(
            f"The patch does not start with '*** Begin Patch' (it starts with "
            f"{_cut(lines[first])!r}) and is not a unified diff. " + _FORMATS
        )
    if not ops:
        raise PatchError("The patch changes no file. " + _FORMATS)
    if len(ops) > MAX_PATCH_FILES:
        raise PatchError(
            f"The patch touches {len(ops)} files; apply_patch takes at most {MAX_PATCH_FILES} "
            "in one call. Split it."
        )
    return ops


def _unwrapped(lines: list[str]) -> list[str]:
    """The patch without a Markdown fence or a shell here-document around it.

    Models sometimes send ```` ```diff ```` … ```` ``` ```` or ``apply_patch <<'EOF'`` …
    ``EOF`` (the command line they saw in training); the lines inside are the patch.
    """
    body = list(lines)
    while body and not body[0].strip():
        body.pop(0)
    while body and not body[-1].strip():
        body.pop()
    if len(body) >= 2 and body[0].startswith("```") and body[-1].strip() == "```":
        return body[1:-1]
    if len(body) >= 2 and body[0].startswith("apply_patch") and "<<" in body[0]:
        marker = body[0].split("<<", 1)[1].strip().strip("'\"-")
        if marker and body[-1].strip() == marker:
            return body[1:-1]
    return lines


_FORMATS = (
    "Write either '*** Begin Patch', then '*** Add File: path' (its lines each starting with "
    "'+'), '*** Update File: path' (optionally '*** Move to: new path', then hunks: '@@', "
    "lines starting with ' ', '-' or '+') or '*** Delete File: path', and '*** End Patch'; "
    "or a unified diff ('--- a/path', '+++ b/path', '@@ -1,3 +1,4 @@', hunk lines)."
)


def _cut(line: str) -> str:
    return line if len(line) <= 80 else line[:80] + "…"


_HEADERS = ("*** Add File: ", "*** Update File: ", "*** Delete File: ")


def _header_path(line: str, prefix: str, number: int) -> str:
    path = line[len(prefix) :].strip()
    if not path:
        raise PatchError(f"Line {number}: {prefix.strip()} names no path.")
    return path


def _parse_envelope(lines: list[str], first: int) -> list[FileOp]:
    ops: list[FileOp] = []
    i = first + 1
    ended = False
    while i < len(lines):
        line = lines[i]
        number = i + 1
        if line.strip() == "*** End Patch":
            ended = True
            break
        if not line.strip():
            i += 1
            continue
        if line.startswith("*** Add File: "):
            op = FileOp(action="add", path=_header_path(line, "*** Add File: ", number))
            i += 1
            content: list[str] = []
            while i < len(lines) and lines[i].startswith("+"):
                content.append(lines[i][1:])
                i += 1
            op.content = "".join(f"{c}\n" for c in content)
            ops.append(op)
        elif line.startswith("*** Delete File: "):
            ops.append(
                FileOp(action="delete", path=_header_path(line, "*** Delete File: ", number))
            )
            i += 1
        elif line.startswith("*** Update File: "):
            op = FileOp(action="update", path=_header_path(line, "*** Update File: ", number))
            i += 1
            if i < len(lines) and lines[i].startswith("*** Move to: "):
                op.move_to = _header_path(lines[i], "*** Move to: ", i + 1)
                i += 1
            i = _envelope_hunks(lines, i, op)
            if not op.hunks and op.move_to is None:
                raise PatchError(
                    f"Line {number}: '*** Update File: {op.path}' has no hunks. Follow it "
                    "with '@@' and lines starting with ' ' (context), '-' (remove) or '+' "
                    "(add)."
                )
            ops.append(op)
        else:
            raise PatchError(
                f"Line {number}: {_cut(line)!r} is not a file header. Each file section starts "
                "with '*** Add File: ', '*** Update File: ' or '*** Delete File: '; the patch "
                "ends with '*** End Patch'."
            )
    if not ended:
        raise PatchError("The patch has no '*** End Patch' line; end it with one.")
    return ops


def _envelope_hunks(lines: list[str], i: int, op: FileOp) -> int:
    hunk: Hunk | None = None
    while i < len(lines):
        line = lines[i]
        if line.strip() == "*** End Patch" or line.startswith(_HEADERS):
            break
        if line.startswith("@@"):
            header = line[2:].strip()
            if hunk is not None and not hunk.old and not hunk.new:
                # "@@ class A" then "@@ def f": nested headers; the last one is kept.
                hunk.header = header
            else:
                hunk = Hunk(header=header)
                op.hunks.append(hunk)
        elif line.strip() == "*** End of File":
            if hunk is not None:
                hunk.end_of_file = True
        elif line[:1] in (" ", "-", "+") or line == "":
            if hunk is None:  # the first hunk may leave out its '@@'
                hunk = Hunk()
                op.hunks.append(hunk)
            _add_line(hunk, line)
        else:
            raise PatchError(
                f"Line {i + 1} (in the section of '{op.path}'): {_cut(line)!r} does not start "
                "with ' ' (context), '-' (remove), '+' (add) or '@@' (a new hunk). Start every "
                "line of a hunk with one of them, context lines with a space."
            )
        i += 1
    for h in op.hunks:
        _trim(h)
    op.hunks = [h for h in op.hunks if h.old or h.new]
    return i


def _add_line(hunk: Hunk, line: str) -> None:
    mark, rest = line[:1], line[1:]
    hunk.marks += mark if mark in "-+" else " "
    if mark == "-":
        hunk.old.append(rest)
    elif mark == "+":
        hunk.new.append(rest)
    else:  # " " or an empty line (an editor stripped the space): context
        hunk.old.append(rest)
        hunk.new.append(rest)


def _trim(hunk: Hunk) -> None:
    """Drop blank context lines a hunk ends with: they are often a separator, not content."""
    while hunk.old and hunk.new and hunk.old[-1] == "" and hunk.new[-1] == "":
        if len(hunk.old) == 1 and len(hunk.new) == 1:
            break
        hunk.old.pop()
        hunk.new.pop()
        hunk.marks = hunk.marks[:-1]


_RANGE = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def _diff_path(raw: str) -> str | None:
    path = raw.split("\t", 1)[0].strip()
    if path.startswith('"') and path.endswith('"') and len(path) > 1:
        path = path[1:-1]
    return None if path == "/dev/null" else path


def _strip_prefixes(old: str | None, new: str | None) -> tuple[str | None, str | None]:
    """Drop git's ``a/`` and ``b/`` prefixes (when each side that is there has its own)."""
    sides = [p for p in (old, new) if p is not None]
    if (old is None or old.startswith("a/")) and (new is None or new.startswith("b/")) and sides:
        return (old[2:] if old else None), (new[2:] if new else None)
    return old, new


def _parse_unified(lines: list[str]) -> list[FileOp]:
    ops: list[FileOp] = []
    rename: dict[str, str] = {}
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("diff --git "):
            if "from" in rename and "to" in rename:
                ops.append(FileOp(action="update", path=rename["from"], move_to=rename["to"]))
            rename = {}
        elif line.startswith("rename from "):
            rename["from"] = line[len("rename from ") :].strip()
        elif line.startswith("rename to "):
            rename["to"] = line[len("rename to ") :].strip()
        elif line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            renamed = "from" in rename and "to" in rename
            rename = {}
            old, new = _strip_prefixes(_diff_path(line[4:]), _diff_path(lines[i + 1][4:]))
            i = _unified_file(lines, i + 2, old, new, ops)
            op = ops[-1]
            if op.move_to is not None and not renamed:
                op.path, op.other_path, op.move_to = op.move_to, op.path, None
            continue
        i += 1
    if "from" in rename and "to" in rename:
        ops.append(FileOp(action="update", path=rename["from"], move_to=rename["to"]))
    if not ops:
        raise PatchError(
            "The unified diff has no file header: each file starts with '--- a/path' and, on "
            "the next line, '+++ b/path'. " + _FORMATS
        )
    return ops


def _unified_file(
    lines: list[str], i: int, old: str | None, new: str | None, ops: list[FileOp]
) -> int:
    if old is None and new is None:
        raise PatchError(f"Line {i - 1}: both sides of the diff are /dev/null.")
    hunks: list[Hunk] = []
    while i < len(lines):
        line = lines[i]
        if line.startswith("@@"):
            match = _RANGE.match(line)
            if match is None:
                raise PatchError(
                    f"Line {i + 1}: {_cut(line)!r} is not a hunk header of a unified diff; "
                    "write it as '@@ -12,4 +12,5 @@' (old start and count, new start and count)."
                )
            hunk = Hunk(start=int(match.group(1)))
            hunks.append(hunk)
            i += 1
            while i < len(lines):
                body = lines[i]
                if (
                    body.startswith("--- ")
                    and i + 1 < len(lines)
                    and lines[i + 1].startswith("+++ ")
                ):
                    break
                if body.startswith("\\"):  # "\ No newline at end of file"
                    prev = lines[i - 1][:1] if i > 0 else ""
                    hunk.no_newline = False if prev == "-" else True
                elif body[:1] in (" ", "-", "+") or body == "":
                    _add_line(hunk, body)
                else:
                    break
                i += 1
            _trim(hunk)
            continue
        if line.startswith(("--- ", "diff ")) or not line.strip():
            break
        i += 1
    if old is None:
        assert new is not None
        text_lines = [ln for h in hunks for ln in h.new]
        content = "".join(f"{ln}\n" for ln in text_lines)
        if hunks and hunks[-1].no_newline and content:
            content = content[:-1]
        ops.append(FileOp(action="add", path=new, content=content))
    elif new is None:
        ops.append(FileOp(action="delete", path=old))
    else:
        hunks = [h for h in hunks if h.old or h.new]
        if not hunks and old == new:
            raise PatchError(f"The diff of '{old}' has no hunks ('@@ -1,3 +1,4 @@' and lines).")
        ops.append(
            FileOp(action="update", path=old, move_to=new if new != old else None, hunks=hunks)
        )
    return i


# ---------------------------------------------------------------------------------------------
# Applying


_PASSES: tuple[tuple[str, Callable[[str], str]], ...] = (
    ("exactly", lambda s: s),
    ("ignoring whitespace at line ends", str.rstrip),
    ("ignoring whitespace around lines", str.strip),
)


def _seek(
    lines: list[str], pattern: list[str], start: int, *, end: bool, near: int | None
) -> tuple[int, int] | None:
    """(index, pass) of `pattern` in `lines` at or after `start`, trying each pass in turn.

    `end`: only at the very end. `near`: of several matches, the one closest to this index.
    """
    size = len(pattern)
    if size > len(lines):
        return None
    for number, (_, norm) in enumerate(_PASSES):
        want = [norm(p) for p in pattern]
        if end:
            at = len(lines) - size
            if at >= start and [norm(x) for x in lines[at:]] == want:
                return at, number
            continue
        first = want[0]
        hits = [
            i
            for i in range(start, len(lines) - size + 1)
            if norm(lines[i]) == first and [norm(x) for x in lines[i : i + size]] == want
        ]
        if hits:
            if near is None:
                return hits[0], number
            return min(hits, key=lambda i: (abs(i - near), i)), number
    return None


def _shown(lines: list[str], first_number: int | None = None) -> str:
    out: list[str] = []
    for k, line in enumerate(lines[:_SHOW_LINES]):
        text = line if len(line) <= _SHOW_CHARS else line[:_SHOW_CHARS] + "…"
        prefix = f"{first_number + k:>6}| " if first_number is not None else "      | "
        out.append(prefix + text)
    if len(lines) > _SHOW_LINES:
        out.append(f"      … ({len(lines) - _SHOW_LINES} more lines)")
    return "\n".join(out)


def _nearest(lines: list[str], pattern: list[str]) -> tuple[int, int] | None:
    """(index, lines alike) of the window of `lines` most like `pattern` (whitespace aside)."""
    where: dict[str, list[int]] = {}
    for i, line in enumerate(lines):
        key = line.strip()
        if key:
            where.setdefault(key, []).append(i)
    votes: Counter[int] = Counter()
    for k, line in enumerate(pattern):
        key = line.strip()
        if not key:
            continue
        spots = where.get(key, [])
        if len(spots) > 1000:  # a line such as "}" says little about where
            continue
        for i in spots:
            votes[i - k] += 1
    if not votes:
        return None
    best, count = max(votes.items(), key=lambda kv: (kv[1], -kv[0]))
    return max(best, 0), count


_SIMILAR_LINES = 20_000
"""Files longer than this are not searched for lines merely similar to a hunk's."""


def _similar(lines: list[str], pattern: list[str]) -> int | None:
    """The index of the window whose lines are most similar to `pattern`'s (by difflib)."""
    if len(lines) > _SIMILAR_LINES:
        return None
    keyed = [line.strip() for line in lines]
    best: tuple[float, int] | None = None
    for k, line in enumerate(pattern[:20]):
        key = line.strip()
        if len(key) < 3:
            continue
        matcher = difflib.SequenceMatcher(b=key, autojunk=False)
        for i, other in enumerate(keyed):
            if not other:
                continue
            matcher.set_seq1(other)
            if matcher.real_quick_ratio() < 0.6 or matcher.quick_ratio() < 0.6:
                continue
            ratio = matcher.ratio()
            if ratio >= 0.6 and (best is None or ratio > best[0]):
                best = (ratio, max(i - k, 0))
    return best[1] if best is not None else None


def _failure(
    shown: str, number: int, total: int, hunk: Hunk, lines: list[str], start: int, what: str
) -> HunkError:
    pattern = [hunk.header] if what == "header" else hunk.old
    label = f"'{shown}', hunk {number} of {total}"
    if what == "header":
        looked = f"the line '@@ {_cut(hunk.header)}' names"
    else:
        looked = "these lines (the hunk's context and '-' lines)"
    after = f" after line {start}" if start else ""
    if hunk.end_of_file:
        after += " at the end of the file"
    parts = [f"{label} does not apply: {looked} are not in the file{after}:", _shown(pattern)]
    near = _nearest(lines, pattern)
    details: dict[str, object] = {
        "path": shown,
        "hunk": number,
        "hunks": total,
        "expected": pattern[:_SHOW_LINES],
    }
    if near is not None:
        at, alike = near
        window = lines[at : at + max(len(pattern), 1)]
        parts.append(
            f"The nearest lines in the file (from line {at + 1}, {alike} of {len(pattern)} "
            "alike, whitespace aside):"
        )
        parts.append(_shown(window, at + 1))
        details["nearest_line"] = at + 1
    elif (like := _similar(lines, pattern)) is not None:
        window = lines[like : like + max(len(pattern), 1)]
        parts.append(
            f"No line of it is in the file; the most similar lines (from line {like + 1}):"
        )
        parts.append(_shown(window, like + 1))
        details["nearest_line"] = like + 1
    else:
        parts.append("No line of it is in the file, even ignoring whitespace.")
    parts.append(
        "Read the file again (fs_read) and copy the context and '-' lines exactly as they are now."
    )
    return HunkError("\n".join(parts), details)


def _keep_context(hunk: Hunk, found: list[str]) -> list[str]:
    """The hunk's new lines, with its context lines as the file has them (`found`)."""
    out: list[str] = []
    old_at = new_at = 0
    for mark in hunk.marks:
        if mark == " ":
            out.append(found[old_at])
            old_at += 1
            new_at += 1
        elif mark == "-":
            old_at += 1
        else:
            out.append(hunk.new[new_at])
            new_at += 1
    return out


def apply_hunks(text: str, hunks: list[Hunk], shown: str) -> Applied:
    """`text` with `hunks` applied in order, each found after the one before.

    Raises:
        HunkError: a hunk (or its ``@@`` line) is not in the text, by any pass.
    """
    lines = text.split("\n")
    ends_newline = text.endswith("\n") or not text
    if text.endswith("\n") or not text:
        lines.pop()
    edits: list[tuple[int, int, list[str]]] = []
    fuzzy: list[str] = []
    pos = 0
    total = len(hunks)
    for number, hunk in enumerate(hunks, 1):
        if hunk.header:
            found = _seek(lines, [hunk.header], pos, end=False, near=None)
            if found is None:
                raise _failure(shown, number, total, hunk, lines, pos, "header")
            pos = found[0] + 1
        if not hunk.old:
            at = pos if hunk.header or hunk.start is not None else len(lines)
            if hunk.start is not None and not hunk.header:
                at = min(max(hunk.start, pos), len(lines))
            edits.append((at, 0, hunk.new))
            pos = at
            continue
        near = hunk.start - 1 if hunk.start is not None else None
        old, new = hunk.old, hunk.new
        found = _seek(lines, old, pos, end=hunk.end_of_file, near=near)
        if found is None and old[-1] == "":
            old = old[:-1]
            new = new[:-1] if new and new[-1] == "" else new
            found = _seek(lines, old, pos, end=hunk.end_of_file, near=near) if old else None
        if found is None:
            raise _failure(shown, number, total, hunk, lines, pos, "lines")
        at, how = found
        if how and old is hunk.old:
            new = _keep_context(hunk, lines[at : at + len(old)])
        if how:
            fuzzy.append(f"hunk {number} of '{shown}' matched {_PASSES[how][0]} at line {at + 1}")
        edits.append((at, len(old), new))
        pos = at + len(old)
        if hunk.no_newline is not None and at + len(old) == len(lines):
            ends_newline = not hunk.no_newline
    for at, size, new in reversed(edits):  # indices never decrease: last first
        lines[at : at + size] = new
    if not lines:
        return Applied(text="", fuzzy=fuzzy)
    return Applied(text="\n".join(lines) + ("\n" if ends_newline else ""), fuzzy=fuzzy)
