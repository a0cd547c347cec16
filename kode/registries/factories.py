"""Tool factories: tools that exist only in some contexts.

This module owns `ToolFactoryContext`, the facts a factory decides by, and the `tool_factory`
decorator that registers one. A factory returns a `Tool`, a list of tools, or `None`; what it
returns is checked when an agent's tools are resolved (`kode.registries.resolve`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias, overload

from kode.tools.core import Tool

if TYPE_CHECKING:
    from kode.registries.tool_registry import ToolRegistry

__all__ = ["FactoryOutput", "ToolFactoryContext", "ToolFactoryFunc", "tool_factory"]


@dataclass(kw_only=True, frozen=True, slots=True)
class ToolFactoryContext:
    """What a tool factory knows about the agent it makes tools for."""

    config: Mapping[str, Any] = field(default_factory=dict)
    """Free-form configuration (from the template or the application)."""
    workspace_dir: Path | None = None
    """The directory the agent works in, if any."""
    agent_id: str | None = None
    """The agent's id."""
    session_id: str | None = None
    """The agent's session id."""
    channel: str | None = None
    """Where the agent talks (``"cli"``, ``"slack"``, ...), if the application says."""
    sandboxed: bool = False
    """Whether the agent runs sandboxed."""
    deps: Any = None
    """The application's dependencies."""


FactoryOutput: TypeAlias = "Tool[..., Any] | Iterable[Tool[..., Any]] | None"
"""What a factory may return: one tool, several, or none for this context."""

ToolFactoryFunc: TypeAlias = Callable[[ToolFactoryContext], Any]
"""A callable that makes tools for a `ToolFactoryContext` (returns a `FactoryOutput`)."""


@overload
def tool_factory(func: ToolFactoryFunc, /) -> ToolFactoryFunc: ...


@overload
def tool_factory(
    *,
    names: Iterable[str] | None = None,
    optional: bool = False,
    groups: Iterable[str] = (),
    registry: ToolRegistry | None = None,
) -> Callable[[ToolFactoryFunc], ToolFactoryFunc]: ...


def tool_factory(
    func: ToolFactoryFunc | None = None,
    /,
    *,
    names: Iterable[str] | None = None,
    optional: bool = False,
    groups: Iterable[str] = (),
    registry: ToolRegistry | None = None,
) -> ToolFactoryFunc | Callable[[ToolFactoryFunc], ToolFactoryFunc]:
    """Register a function that makes tools for a context; return the function unchanged.

    Args:
        func: The factory, when used bare.
        names: The names of the tools it can make, so they can be looked up and matched by
            policy before any context exists (optional: without them the tools appear only when
            an agent's tools are resolved).
        optional: Leave its tools out unless a template or policy names them explicitly.
        groups: Groups its tools join, in addition to their own.
        registry: Where to register (default: the global registry).

    Example:
        ```python
        from kode import define_tool
        from kode.registries import ToolFactoryContext, ToolRegistry, tool_factory

        tools = ToolRegistry()

        @tool_factory(registry=tools, names=["shell"])
        def shell_when_trusted(ctx: ToolFactoryContext):
            if ctx.sandboxed:
                return None

            @define_tool(registry=None)
            def shell(command: str) -> str:
                \"\"\"Run a command.\"\"\"
                return command

            return shell
        ```
    """

    def register(f: ToolFactoryFunc) -> ToolFactoryFunc:
        from kode.registries.tool_registry import registry as global_registry

        target = registry if registry is not None else global_registry
        target.register_factory(f, names=names, optional=optional, groups=groups)
        return f

    if func is not None:
        return register(func)
    return register
