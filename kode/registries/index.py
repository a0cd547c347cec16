"""Indexes a `ToolRegistry` keeps so that choosing tools costs what it selects, not its size.

This module owns `NameIndex`: tool keys by declared group and by plugin id, every name and
alias in sorted order (a glob such as ``fs_*`` or ``mcp__github__*`` reads only the names
under its literal prefix), and each tool's aliases. The registry updates it on every
registration, alias and removal, under its own lock; this module holds no lock and decides
nothing about conflicts.
"""

from __future__ import annotations

import bisect
import fnmatch
import re
from collections.abc import Iterator
from collections.abc import Set as AbstractSet
from functools import lru_cache

from kode.registries.meta import ToolMeta

__all__ = ["NameIndex", "glob_prefix", "is_glob"]

_SPECIAL = "*?["
_NONE: frozenset[str] = frozenset()


def is_glob(pattern: str) -> bool:
    """Whether a (normalised) pattern is a glob rather than a name."""
    return any(ch in pattern for ch in _SPECIAL)


def glob_prefix(pattern: str) -> str:
    """The literal start of a glob: every name it matches starts with it."""
    cut = min((i for i in (pattern.find(ch) for ch in _SPECIAL) if i >= 0), default=len(pattern))
    return pattern[:cut]


@lru_cache(maxsize=1024)
def compiled_glob(pattern: str) -> re.Pattern[str]:
    """A glob as a compiled regular expression (cached)."""
    return re.compile(fnmatch.translate(pattern))


class NameIndex:
    """Keys (normalised tool names) by group, by plugin id and in sorted order, and aliases."""

    __slots__ = ("_aliases_of", "_by_group", "_by_plugin", "_by_server", "_sorted")

    def __init__(self) -> None:
        self._by_group: dict[str, set[str]] = {}
        self._by_plugin: dict[str, set[str]] = {}
        self._by_server: dict[str, set[str]] = {}
        self._sorted: list[str] = []  # every key and alias, sorted (a name is in once)
        self._aliases_of: dict[str, dict[str, None]] = {}  # in the order they were added

    def add(self, key: str, meta: ToolMeta) -> None:
        """Index a tool registered under `key`."""
        for group in meta.groups:
            self._by_group.setdefault(group, set()).add(key)
        if meta.plugin_id is not None:
            self._by_plugin.setdefault(meta.plugin_id.lower(), set()).add(key)
        if meta.server is not None:
            self._by_server.setdefault(meta.server, set()).add(key)
        self._insert(key)

    def remove(self, key: str, meta: ToolMeta) -> None:
        """Forget a tool (its aliases are removed separately, with `remove_alias`)."""
        for group in meta.groups:
            self._discard(self._by_group, group, key)
        if meta.plugin_id is not None:
            self._discard(self._by_plugin, meta.plugin_id.lower(), key)
        if meta.server is not None:
            self._discard(self._by_server, meta.server, key)
        self._delete(key)

    def add_alias(self, alias: str, key: str) -> None:
        """Index `alias` as another name of `key`."""
        self._aliases_of.setdefault(key, {})[alias] = None
        self._insert(alias)

    def remove_alias(self, alias: str, key: str) -> None:
        """Forget one alias of `key`."""
        aliases = self._aliases_of.get(key)
        if aliases is not None:
            aliases.pop(alias, None)
            if not aliases:
                del self._aliases_of[key]
        self._delete(alias)

    def aliases_of(self, key: str) -> tuple[str, ...]:
        """The aliases reaching `key`, in the order they were added."""
        return tuple(self._aliases_of.get(key, ()))

    def group(self, group: str) -> AbstractSet[str]:
        """Keys of the tools that declared `group` (not custom groups' members); do not change."""
        return self._by_group.get(group, _NONE)

    def plugin(self, plugin_id: str) -> AbstractSet[str]:
        """Keys of the tools a plugin registered; do not change."""
        return self._by_plugin.get(plugin_id, _NONE)

    def server_size(self, server: str) -> int:
        """How many tools an MCP server registered."""
        return len(self._by_server.get(server, ()))

    def declared_groups(self) -> Iterator[str]:
        """Every group some tool declared."""
        return iter(self._by_group)

    def glob(self, pattern: str) -> Iterator[str]:
        """Names and aliases matching a normalised glob, read from under its literal prefix."""
        prefix = glob_prefix(pattern)
        regex = compiled_glob(pattern)
        start = bisect.bisect_left(self._sorted, prefix)
        for name in self._sorted[start:] if not prefix else self._prefixed(start, prefix):
            if regex.fullmatch(name):
                yield name

    def _prefixed(self, start: int, prefix: str) -> Iterator[str]:
        names = self._sorted
        for i in range(start, len(names)):
            if not names[i].startswith(prefix):
                return
            yield names[i]

    def _insert(self, name: str) -> None:
        i = bisect.bisect_left(self._sorted, name)
        if i == len(self._sorted) or self._sorted[i] != name:
            self._sorted.insert(i, name)

    def _delete(self, name: str) -> None:
        i = bisect.bisect_left(self._sorted, name)
        if i < len(self._sorted) and self._sorted[i] == name:
            del self._sorted[i]

    @staticmethod
    def _discard(index: dict[str, set[str]], at: str, key: str) -> None:
        keys = index.get(at)
        if keys is not None:
            keys.discard(key)
            if not keys:
                del index[at]
