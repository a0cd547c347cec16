"""`ToolRegistry`: names to tool factories, thread-safe; and the global `registry`.

This module owns registration and lookup by name. A tool defined with `define_tool` is stored
as a factory that returns that tool; `create(name, ctx)` calls the factory, so tools that depend
on their context can be registered the same way. It does not decide which tools an agent gets.
"""

from __future__ import annotations

import difflib
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from kode.tools.errors import ToolDefinitionError, ToolNotFoundError
from kode.tools.tool import Tool

__all__ = ["RegisteredTool", "ToolFactoryFunc", "ToolRegistry", "normalize_name", "registry"]

ToolFactoryFunc = Callable[[Any], "Tool[..., Any]"]
"""A callable that makes a tool for a context."""


def normalize_name(name: str) -> str:
    """The lookup key of a tool name: trimmed and lower-cased."""
    return name.strip().lower()


@dataclass(kw_only=True, frozen=True, slots=True)
class RegisteredTool:
    """One registry entry."""

    name: str
    """The tool's name as defined."""
    factory: ToolFactoryFunc
    """Makes the tool for a context."""
    tool: Tool[..., Any] | None
    """The tool itself, when it does not depend on a context."""
    origin: tuple[str, str]
    """``(module, qualname)`` of the definition, to recognise a re-run of the same code."""


def _origin(fn: Any) -> tuple[str, str]:
    inner = getattr(fn, "__func__", fn)
    return (getattr(inner, "__module__", "") or "", getattr(inner, "__qualname__", "") or "")


class ToolRegistry:
    """A thread-safe map from tool names to tool factories.

    Lookups normalise names (trim, lower-case), so a model that sends ``" Search_Files "``
    reaches ``search_files``. Registering a different tool under a taken name raises
    `ToolDefinitionError` unless ``replace=True``; registering the same definition again (same
    module and qualname, as when a notebook cell is re-run) replaces it quietly.

    Example:
        ```python
        from kode import ToolRegistry, define_tool

        tools = ToolRegistry()

        @define_tool(registry=tools)
        def ping() -> str:
            \"\"\"Answer pong.\"\"\"
            return "pong"

        assert "PING" in tools and tools.names() == ["ping"]
        ```
    """

    def __init__(self, name: str = "default") -> None:
        self.name = name
        """A label for messages and reprs."""
        self._entries: dict[str, RegisteredTool] = {}
        self._lock = threading.RLock()

    def __repr__(self) -> str:
        return f"<ToolRegistry {self.name!r} with {len(self._entries)} tools>"

    def register(self, tool: Tool[..., Any], /, *, replace: bool = False) -> Tool[..., Any]:
        """Register a tool; return it.

        Raises:
            ToolDefinitionError: another tool has this name and `replace` is false.
        """
        origin = _origin(tool.fn)
        self._add(
            RegisteredTool(name=tool.name, factory=lambda _ctx: tool, tool=tool, origin=origin),
            replace=replace,
        )
        return tool

    def register_factory(
        self,
        name: str,
        factory: ToolFactoryFunc,
        *,
        replace: bool = False,
    ) -> None:
        """Register a factory that makes the tool `name` for a context (see `create`).

        Raises:
            ToolDefinitionError: another tool has this name and `replace` is false.
        """
        self._add(
            RegisteredTool(name=name, factory=factory, tool=None, origin=_origin(factory)),
            replace=replace,
        )

    def _add(self, entry: RegisteredTool, *, replace: bool) -> None:
        key = normalize_name(entry.name)
        with self._lock:
            existing = self._entries.get(key)
            if existing is not None and not replace and existing.origin != entry.origin:
                where = ".".join(p for p in existing.origin if p) or "another definition"
                raise ToolDefinitionError(
                    entry.origin[1] or entry.name,
                    [
                        f"the tool name {entry.name!r} is already registered in {self.name!r} "
                        f"by {where}; choose another name=, or pass replace=True to replace it"
                    ],
                )
            self._entries[key] = entry

    def unregister(self, name: str) -> None:
        """Remove a tool.

        Raises:
            ToolNotFoundError: no tool has this name.
        """
        with self._lock:
            if self._entries.pop(normalize_name(name), None) is None:
                raise self._not_found(name)

    def get(self, name: str) -> Tool[..., Any]:
        """The tool registered under `name` (normalised).

        Raises:
            ToolNotFoundError: no tool has this name (with close matches), or the name belongs
                to a factory that needs a context (use `create`).
        """
        entry = self._entries.get(normalize_name(name))
        if entry is None:
            raise self._not_found(name)
        if entry.tool is None:
            return self.create(name, None)
        return entry.tool

    def create(self, name: str, ctx: Any = None) -> Tool[..., Any]:
        """Make the tool `name` for `ctx` by calling its factory.

        Raises:
            ToolNotFoundError: no tool has this name.
            TypeError: the factory returned something other than a `Tool`.
        """
        entry = self._entries.get(normalize_name(name))
        if entry is None:
            raise self._not_found(name)
        made = entry.factory(ctx)
        if not isinstance(made, Tool):
            raise TypeError(
                f"the factory of tool {entry.name!r} returned {type(made).__name__}, not a Tool"
            )
        return made

    def names(self) -> list[str]:
        """Every registered tool name, sorted."""
        with self._lock:
            return sorted(e.name for e in self._entries.values())

    def entries(self) -> list[RegisteredTool]:
        """Every entry, sorted by name."""
        with self._lock:
            return sorted(self._entries.values(), key=lambda e: e.name)

    def _swap_entries(self, entries: dict[str, RegisteredTool]) -> dict[str, RegisteredTool]:
        """Replace every entry at once; return the old ones (for test isolation)."""
        with self._lock:
            old, self._entries = self._entries, dict(entries)
        return old

    def clear(self) -> None:
        """Remove every tool."""
        with self._lock:
            self._entries.clear()

    def suggest(self, name: str, limit: int = 3) -> list[str]:
        """Registered names close to `name`, best first."""
        with self._lock:
            keys = {normalize_name(e.name): e.name for e in self._entries.values()}
        close = difflib.get_close_matches(normalize_name(name), list(keys), n=limit, cutoff=0.6)
        return [keys[k] for k in close]

    def _not_found(self, name: str) -> ToolNotFoundError:
        return ToolNotFoundError(name, self.names(), self.suggest(name))

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and normalize_name(name) in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._entries)


registry = ToolRegistry("global")
"""The global registry: `define_tool` registers here unless given ``registry=``."""
