"""Registry entries, and when two registrations are one definition registered again.

This module owns `RegisteredTool` and `FactoryRecord`, the records a `ToolRegistry` keeps, and
the small decisions about them that conflict handling needs: the origin of a definition
(module and qualname), whether a registration is a re-run of an existing one, and how to name
the holder of a taken name in a message. It holds no registry state.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kode.registries.factories import ToolFactoryFunc
from kode.registries.meta import ToolMeta, ToolSource
from kode.tools.core import Tool

__all__ = [
    "FactoryRecord",
    "RegisteredTool",
    "describe_entry",
    "is_rerun",
    "normalize_name",
    "origin_of",
    "same_factory",
]


def normalize_name(name: str) -> str:
    """The lookup key of a tool name: trimmed and lower-cased."""
    return name.strip().lower()


class RegisteredTool:
    """One registry entry: a tool, or a factory that makes it per context.

    An entry registered by `ToolRegistry.register_lazy` knows its tool's meta (name, kind,
    groups, aliases) before the tool exists: reading `tool` imports the module defining it,
    once. Everything else (`meta`, `origin`, `is_factory`) never imports anything.
    """

    __slots__ = ("_load", "_tool", "factory", "meta", "origin")

    def __init__(
        self,
        *,
        meta: ToolMeta,
        tool: Tool[..., Any] | None,
        factory: ToolFactoryFunc | None,
        origin: tuple[str, str],
        load: Callable[[], Tool[..., Any]] | None = None,
    ) -> None:
        self.meta = meta
        """Where it came from, its groups, kind and aliases."""
        self.factory = factory
        """Makes the tool for a context, when it does."""
        self.origin = origin
        """``(module, qualname)`` of the definition, to recognise a re-run of the same code."""
        self._tool = tool
        self._load = load

    @property
    def tool(self) -> Tool[..., Any] | None:
        """The tool itself, when it does not depend on a context.

        For an entry registered lazily, reading it the first time imports the tool's module.
        """
        tool = self._tool
        if tool is None and self._load is not None:
            tool = self._tool = self._load()
        return tool

    @property
    def is_factory(self) -> bool:
        """Whether a factory makes this tool per context (read without loading anything)."""
        return self.factory is not None

    @property
    def loaded(self) -> bool:
        """Whether the tool exists yet: false only for a lazy entry not read so far."""
        return self._tool is not None or self._load is None

    @property
    def name(self) -> str:
        """The tool's name."""
        return self.meta.name

    def __repr__(self) -> str:
        state = "" if self.loaded else ", not loaded"
        return f"<RegisteredTool {self.meta.name!r} from {'.'.join(self.origin)}{state}>"


@dataclass(kw_only=True, frozen=True, slots=True)
class FactoryRecord:
    """A registered factory: what `ToolRegistry.register_factory` was given."""

    factory: ToolFactoryFunc
    """The factory."""
    names: tuple[str, ...] | None
    """The names it declared (`None`: its tools are known only once it runs)."""
    optional: bool
    """Whether its tools are optional."""
    groups: tuple[str, ...]
    """Groups its tools join, in addition to their own."""
    source: ToolSource
    """Where it came from."""
    plugin_id: str | None
    """The plugin that registered it, if one did."""
    origin: tuple[str, str]
    """``(module, qualname)`` of the factory (see `origin_of`)."""
    removed: frozenset[str] = frozenset()
    """Normalised names unregistered since: the factory's tools of these names are dropped."""


def origin_of(fn: Any) -> tuple[str, str]:
    """``(module, qualname)`` of a function: what a re-run of the same definition shares."""
    inner = getattr(fn, "__func__", fn)
    qualname = getattr(inner, "__qualname__", "") or ""
    code = getattr(inner, "__code__", None)
    if qualname.endswith("<lambda>") and code is not None:
        # every lambda of a scope has the same qualname: its line tells two of them apart
        qualname = f"{qualname}:{code.co_firstlineno}"
    return (getattr(inner, "__module__", "") or "", qualname)


def _owner(meta: ToolMeta) -> tuple[ToolSource, str | None, str | None]:
    return (meta.source, meta.plugin_id, meta.server)


def is_rerun(existing: RegisteredTool, entry: RegisteredTool) -> bool:
    """Whether `entry` is `existing`'s own definition again, so it may replace it quietly.

    The same code (module and qualname) registered by the same owner is a re-run. The same
    code from two owners (application code and a plugin, two plugins registering one shared
    tool, two MCP servers) is a conflict, decided and reported like any other.
    """
    return existing.origin == entry.origin and _owner(existing.meta) == _owner(entry.meta)


def same_factory(old: FactoryRecord, new: FactoryRecord) -> bool:
    """Whether `new` is `old` defined again: same code and owner, and names in common.

    Closures made in a loop share their code but not their names, so they are all kept.
    """
    if old.origin != new.origin or (old.source, old.plugin_id) != (new.source, new.plugin_id):
        return False
    if old.names is None or new.names is None:
        return old.names is None and new.names is None
    return bool({normalize_name(n) for n in old.names} & {normalize_name(n) for n in new.names})


def describe_entry(entry: RegisteredTool) -> str:
    """Who holds a name, for conflict messages: a plugin, a server, a source or the code."""
    meta = entry.meta
    if meta.source is ToolSource.PLUGIN:
        return f"plugin {meta.plugin_id!r}"
    if meta.source is ToolSource.MCP:
        return f"MCP server {meta.server!r}"
    if meta.source is ToolSource.CORE:
        return "a core tool"
    if meta.source is not ToolSource.USER:
        return f"a {meta.source.value} tool"
    where = ".".join(p for p in entry.origin if p)
    return where or "a user tool"
