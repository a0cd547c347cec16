"""Where a command's words lead on disk: symlinks out of the workspace, and what globs match.

This module owns `Place`: the directory a command runs in and the workspace around it, and two
questions the runtime policy asks about a shell word there: does it, taken as a path, lead out of
the workspace through a symlink (``rootlink/etc/passwd`` with ``rootlink -> /``), and which names
does a glob match. The policy reads the words (`kode.builtin._shared._shell_parse`) and decides
(`kode.builtin._shared._policy`); this module only looks at the file system, and never follows a
word that the text alone already shows to leave (absolute, ``~``, ``..``).

The answers hold when they are given: a symlink made afterwards by another process is not seen
(commands that make symlinks need approval, or run in the sandbox).
"""

from __future__ import annotations

import glob
import itertools
import os
from collections.abc import Sequence
from dataclasses import dataclass

from kode.builtin._shared._shell_parse import Word

__all__ = ["MAX_GLOB_MATCHES", "Place"]

MAX_GLOB_MATCHES = 10_000
"""A glob matching more names than this is not expanded: the policy takes it as a miss."""


_UNLIKE_BASH = ("[^", "[:", "[=", "[.")


def _inside(path: str, roots: tuple[str, ...]) -> bool:
    return any(path == root or path.startswith(root.rstrip("/") + "/") for root in roots)


@dataclass(kw_only=True, frozen=True, slots=True)
class Place:
    """The directory a command runs in, and the workspace's roots (all absolute)."""

    cwd: str
    """Where relative paths start."""
    roots: tuple[str, ...]
    """The workspace root and its extra paths, without symlinks."""

    @classmethod
    def of(cls, cwd: str | os.PathLike[str], roots: Sequence[str | os.PathLike[str]] = ()) -> Place:
        """A place from a directory and roots (the directory itself when none are given)."""
        real = tuple(os.path.realpath(r) for r in roots) or (os.path.realpath(cwd),)
        return cls(cwd=os.path.realpath(cwd), roots=real)

    def expand(self, word: Word) -> list[str] | None:
        """The names a word stands for: a glob's matches, else the word itself.

        A glob that matches nothing stands for its own text, as in bash. `None`: a glob with a
        bracket expression Python reads differently from bash (``[^...]``, ``[[:alpha:]]``),
        or with more than `MAX_GLOB_MATCHES` matches.
        """
        if not word.glob:
            return [word.text]
        if any(mark in word.text for mark in _UNLIKE_BASH):
            return None
        found = list(
            itertools.islice(
                glob.iglob(word.text, root_dir=self.cwd, include_hidden=False),
                MAX_GLOB_MATCHES + 1,
            )
        )
        if len(found) > MAX_GLOB_MATCHES:
            return None
        return found or [word.text]

    def leads_out(self, word: Word) -> bool:
        """Whether `word`, as a path from `cwd`, resolves outside the roots through a symlink.

        The value after the word's first ``=`` counts too (``--file=link/x``), and each of a
        glob's matches; a glob that cannot be expanded counts as leading out.
        """
        names = self.expand(word)
        if names is None:
            return True
        for name in names:
            candidates = [name]
            if "=" in name:
                candidates.append(name.split("=", 1)[1])
            for candidate in candidates:
                if not candidate:
                    continue
                real = os.path.realpath(os.path.join(self.cwd, candidate))
                if not _inside(real, self.roots):
                    return True
        return False
