"""Registry entries, and when two registrations are one definition registered again.

This module owns `RegisteredTool` and `FactoryRecord`, the records a `ToolRegistry` keeps, and
the small decisions about them that conflict handling needs: the origin of a definition
(module and qualname), whether a registration is a re-run of an existing one, and how to name
the holder of a taken name in a message. It holds no registry state.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kode.registries.factories import ToolFactoryFunc
from kode.registries.meta import ToolMeta, ToolSource
from kode.tools.tool import Tool

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


@dataclass(kw_only=True, frozen=True, slots=True)
class RegisteredTool:
    """One registry entry: a tool, or a factory that makes it per context."""

    meta: ToolMeta
    """Where it came from, its groups, kind and aliases."""
    tool: Tool[..., Any] | None
    """The tool itself, when it does not depend on a context."""
    factory: ToolFactoryFunc | None
    """Makes the tool for a context, when it does."""
    origin: tuple[str, str]
    """``(module, qualname)`` of the definition, to recognise a re-run of the same code."""

    @property
    def name(self) -> str:
        """The tool's name."""
        return self.meta.name


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
