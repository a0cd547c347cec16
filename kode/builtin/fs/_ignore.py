"""Ignore files (``.gitignore``, ``.ignore``, ``.git/info/exclude``) read as git reads them.

`IgnoreRules` answers whether a path relative to a root is ignored: the rules of each ignore
file apply below its own directory, later rules (and deeper files) win over earlier ones, a
``!`` rule re-includes, a rule ending in ``/`` matches directories only, a rule with a ``/``
before its end is anchored to its file's directory, ``**`` spans directories, and whatever
is inside an ignored directory is ignored (git cannot re-include it either). Files are read
lazily, once each, at most `MAX_IGNORE_FILE_BYTES` of each, never through a symlink. Patterns
compile to regular expressions whose repetitions cannot overlap (no catastrophic
backtracking). It does not walk directories.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

__all__ = ["IGNORE_FILES", "MAX_IGNORE_FILE_BYTES", "IgnoreRules"]

IGNORE_FILES = (".gitignore", ".ignore")
"""The ignore files read in each directory (and ``.git/info/exclude`` at the root)."""

MAX_IGNORE_FILE_BYTES = 256 * 1024
"""Bytes of one ignore file read; rules after them are not used."""

_MAX_PATTERN_CHARS = 1000


@dataclass(frozen=True, slots=True)
class _Rule:
    base: str
    """The directory of its ignore file, relative to the root ("" for the root)."""
    regex: re.Pattern[str]
    negate: bool
    dir_only: bool


def _translate(pattern: str) -> str:
    """A gitignore glob (already stripped of ``!``, leading and trailing ``/``) as a regex."""
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        if pattern.startswith("**/", i) and (i == 0 or pattern[i - 1] == "/"):
            out.append("(?:[^/]*/)*")
            i += 3
            continue
        if pattern.startswith("**", i) and i + 2 == n and (i == 0 or pattern[i - 1] == "/"):
            out.append(".*")
            i += 2
            continue
        ch = pattern[i]
        if ch == "*":
            out.append("[^/]*")
            while i + 1 < n and pattern[i + 1] == "*":
                i += 1
        elif ch == "?":
            out.append("[^/]")
        elif ch == "\\" and i + 1 < n:
            i += 1
            out.append(re.escape(pattern[i]))
        elif ch == "[":
            end = pattern.find("]", i + 2 if pattern[i + 1 : i + 2] in ("!", "^") else i + 1)
            if end < 0:
                out.append(re.escape(ch))
            else:
                body = pattern[i + 1 : end]
                neg = body[:1] in ("!", "^")
                body = body[1:] if neg else body
                body = body.replace("\\", "\\\\").replace("[", "\\[")
                out.append(f"[{'^' if neg else ''}{body}]")
                i = end
        else:
            out.append(re.escape(ch))
        i += 1
    return "".join(out)


def _rules(text: str, base: str) -> list[_Rule]:
    rules: list[_Rule] = []
    for raw in text.splitlines():
        line = raw.rstrip("\r")
        if not line or line.startswith("#") or len(line) > _MAX_PATTERN_CHARS:
            continue
        # Trailing spaces are dropped unless escaped with a backslash.
        stripped = line.rstrip(" ")
        if stripped.endswith("\\") and len(stripped) < len(line):
            stripped += " "
        line = stripped
        negate = line.startswith("!")
        if negate:
            line = line[1:]
        elif line.startswith(("\\!", "\\#")):
            line = line[1:]
        dir_only = line.endswith("/")
        line = line.rstrip("/")
        if not line:
            continue
        anchored = "/" in line
        line = line.lstrip("/")
        body = _translate(line)
        regex = body if anchored else f"(?:[^/]*/)*{body}"
        try:
            compiled = re.compile(regex, re.DOTALL)
        except re.error:
            continue  # a class git would also reject
        rules.append(_Rule(base=base, regex=compiled, negate=negate, dir_only=dir_only))
    return rules


def _read(path: Path) -> str:
    try:
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode):
            return ""
        with open(path, "rb") as fh:
            data = fh.read(MAX_IGNORE_FILE_BYTES)
    except OSError:
        return ""
    return data.decode("utf-8", errors="replace")


class IgnoreRules:
    """The ignore files under a root directory, read as they are needed."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._by_dir: dict[str, list[_Rule]] = {}

    def _dir_rules(self, rel_dir: str) -> list[_Rule]:
        rules = self._by_dir.get(rel_dir)
        if rules is None:
            rules = []
            directory = self.root / rel_dir if rel_dir else self.root
            if not rel_dir:
                rules += _rules(_read(self.root / ".git" / "info" / "exclude"), "")
            for name in IGNORE_FILES:
                rules += _rules(_read(directory / name), rel_dir)
            self._by_dir[rel_dir] = rules
        return rules

    def _matches(self, rel: str, is_dir: bool) -> bool | None:
        """Whether the rules ignore `rel` itself (`None`: no rule says)."""
        parts = rel.split("/")
        verdict: bool | None = None
        for depth in range(len(parts)):
            base = "/".join(parts[:depth])
            below = "/".join(parts[depth:])
            for rule in self._dir_rules(base):
                if rule.dir_only and not is_dir:
                    continue
                if rule.regex.fullmatch(below):
                    verdict = not rule.negate
        return verdict

    def ignored(self, rel: str, *, is_dir: bool = False) -> bool:
        """Whether `rel` (``/``-separated, relative to the root) is ignored.

        It is when a rule ignores it, or any directory it is in.
        """
        parts = [p for p in rel.split("/") if p and p != "."]
        for i in range(1, len(parts) + 1):
            last = i == len(parts)
            if self._matches("/".join(parts[:i]), is_dir=is_dir if last else True):
                return True
        return False
