"""`define_tool`: the decorator that turns a function into a `Tool` and registers it.

This module owns the registering decorators (`define_tool` and its short name `tool`; tool
factories have `tool_factory`, beside them in `kode.registries.factories`), so registration lives
with the collection it fills. Making the tool is the layer below's: `Tool.from_function` checks
the function and its options and builds the tool; this module adds the registration, into the
registry given with ``registry=`` or, by default, the global `kode.registries.registry`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from enum import Enum
from typing import TYPE_CHECKING, Any, ParamSpec, Protocol, TypeVar, overload

from kode.registries.tool_registry import registry as global_registry
from kode.tools.core import Tool
from kode.tools.kinds import Kind
from kode.tools.schema import DocstringStyle

if TYPE_CHECKING:
    from typing import Literal

__all__ = [
    "DEFAULT_REGISTRY",
    "DefaultRegistry",
    "ToolSink",
    "default_registry",
    "define_tool",
    "tool",
]

P = ParamSpec("P")
R = TypeVar("R")


class ToolSink(Protocol):
    """Where `define_tool` registers a tool: anything with this `register` method."""

    def register(self, tool: Tool[..., Any], /, *, replace: bool = False) -> Tool[..., Any]:
        """Register `tool`; raise `ToolDefinitionError` if its name is taken by another tool."""
        ...


class DefaultRegistry(Enum):
    """The type of `DEFAULT_REGISTRY`, so that ``registry=None`` can mean no registry."""

    TOKEN = "default"


DEFAULT_REGISTRY = DefaultRegistry.TOKEN
"""The default of ``define_tool(registry=...)``: the global registry."""


def default_registry() -> ToolSink:
    """The global registry (`kode.registries.registry`)."""
    return global_registry


@overload
def define_tool(fn: Callable[P, R], /) -> Tool[P, R]: ...


@overload
def define_tool(
    *,
    name: str | None = None,
    description: str | None = None,
    kind: Kind
    | Literal[
        "read", "edit", "delete", "move", "search", "execute", "think", "fetch", "other"
    ] = Kind.OTHER,
    groups: Iterable[str] = (),
    optional: bool = False,
    timeout: float | None = None,
    requires_approval: bool | Callable[..., bool | str | None] | None = None,
    registry: ToolSink | DefaultRegistry | None = DEFAULT_REGISTRY,
    replace: bool = False,
    docstring_style: DocstringStyle = "auto",
    require_descriptions: bool = False,
    run_in_thread: bool = True,
    aliases: Iterable[str] = (),
    param_aliases: Mapping[str, str] | None = None,
    idempotent: bool = False,
    retries: int = 1,
    transient: Iterable[type[BaseException]] = (),
    transient_retries: int = 2,
    defer_loading: bool = False,
) -> Callable[[Callable[P, R]], Tool[P, R]]: ...


def define_tool(
    fn: Callable[P, R] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    kind: Kind | str = Kind.OTHER,
    groups: Iterable[str] = (),
    optional: bool = False,
    timeout: float | None = None,
    requires_approval: bool | Callable[..., bool | str | None] | None = None,
    registry: ToolSink | DefaultRegistry | None = DEFAULT_REGISTRY,
    replace: bool = False,
    docstring_style: DocstringStyle = "auto",
    require_descriptions: bool = False,
    run_in_thread: bool = True,
    aliases: Iterable[str] = (),
    param_aliases: Mapping[str, str] | None = None,
    idempotent: bool = False,
    retries: int = 1,
    transient: Iterable[type[BaseException]] = (),
    transient_retries: int = 2,
    defer_loading: bool = False,
) -> Tool[P, R] | Callable[[Callable[P, R]], Tool[P, R]]:
    """Turn a typed, documented function into a `Tool` and register it.

    Use it bare (``@define_tool``) or with options (``@define_tool(timeout=5)``). The schema is
    inferred from the type hints and the docstring, once; the function stays callable as
    before. Defining registers the tool in the global registry (or ``registry=``), so any
    agent whose template lists its name can use it.

    Works on sync and async functions, static methods and bound methods
    (``define_tool(obj.method)``); a plain method in a class body is refused, since there
    is no instance to bind ``self`` to yet.

    Args:
        fn: The function, when used bare.
        name: The tool's name (default: the function's name); ``^[a-zA-Z0-9_-]{1,64}$``.
        description: Replaces the description taken from the docstring.
        kind: What the tool does (`Kind`); mutating kinds drive approval.
        groups: Groups the tool joins, e.g. ``["group:fs"]``.
        optional: Leave the tool out unless a template or policy names it explicitly.
        timeout: Seconds a call may take; a longer call ends as a ``timeout`` error result.
        requires_approval: Force (`True`) or skip (`False`) approval, or a function of the
            validated input deciding per call (`True` or a reason string: ask; `False`: no
            approval; `None`: no opinion, the agent's mode decides); `None` lets the agent
            decide by kind.
        registry: Where to register: the global registry by default, `None` for nowhere.
        replace: Replace a different tool registered under the same name.
        docstring_style: ``"auto"``, ``"google"``, ``"numpy"``, ``"rest"``/``"sphinx"`` or
            ``"epydoc"``.
        require_descriptions: Refuse a tool or a parameter without a description.
        run_in_thread: Run a sync function in a worker thread (default) or inline in the
            event loop (for fast, non-blocking pure functions).
        aliases: Other names that reach the tool in a registry (``["read", "Read"]``).
        param_aliases: Other names accepted for parameters, ``{"file_path": "path"}``: a
            model used to another system's names still reaches the parameter (the schema
            shows the parameter's own name).
        idempotent: Running a call twice does what running it once does (it sets rather
            than adds, or checks before it acts). A session resumed after a restart runs a
            call that was running again only if its tool is idempotent or only reads (kinds
            read, search, think); any other such call is answered with an error saying it
            may have partly run.
        retries: How many times one run of an agent lets the tool ask for a retry by raising
            `ToolRetry` (1 by default); one more ends the run with an `AgentError`.
        transient: Exceptions that mean "try again later" (``(ConnectionError,
            TimeoutError)``, an HTTP client's transport errors): a call that raises one runs
            again after a wait (0.25 s, doubling, at most 4 s), up to `transient_retries`
            more times. Only for idempotent tools (a failed call may have acted), and a sync
            one must run in a worker thread; the tool's `timeout` covers every attempt.
        transient_retries: How many more times a transiently failing call runs (2).
        defer_loading: Send the definition to the model only once the agent's
            ``tool_search`` has found the tool (for agents with many tools; see the "Many
            tools" page). The tool is allowed all along.

    Raises:
        ToolDefinitionError: every problem of the function, in one message.

    Example:
        ```python
        from kode import define_tool

        @define_tool(registry=None, description="Add two numbers.")
        def add(a: int, b: int = 1) -> int:
            return a + b

        assert add(2, 3) == 5
        assert add.input_schema["required"] == ["a"]
        ```
    """
    options: dict[str, Any] = dict(
        name=name,
        description=description,
        kind=kind,
        groups=groups,
        optional=optional,
        timeout=timeout,
        requires_approval=requires_approval,
        docstring_style=docstring_style,
        require_descriptions=require_descriptions,
        run_in_thread=run_in_thread,
        aliases=aliases,
        param_aliases=param_aliases,
        idempotent=idempotent,
        retries=retries,
        transient=transient,
        transient_retries=transient_retries,
        defer_loading=defer_loading,
    )

    def define(func: Callable[P, R]) -> Tool[P, R]:
        made = Tool.from_function(func, **options)
        sink = default_registry() if registry is DEFAULT_REGISTRY else registry
        if sink is not None:
            sink.register(made, replace=replace)
        return made

    return define(fn) if fn is not None else define


tool = define_tool
"""A short alias of `define_tool`."""
