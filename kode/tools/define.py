"""`define_tool`: the decorator that turns a function into a `Tool` and registers it.

This module owns the decorator, its options and the definition-time checks. Registration goes
to the registry given with ``registry=`` or, by default, to the global registry in
`kode.registries`, reached through `default_registry` (imported at first use, so `tools/` keeps
no import-time dependency on the layer above it).
"""

from __future__ import annotations

import functools
import importlib
import inspect
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from enum import Enum
from typing import TYPE_CHECKING, Any, ParamSpec, Protocol, TypeVar, overload

from pydantic import BaseModel, TypeAdapter
from pydantic.errors import PydanticInvalidForJsonSchema

from kode.tools.dialects import clean_schema
from kode.tools.errors import ToolDefinitionError
from kode.tools.kinds import Kind
from kode.tools.schema import DocstringStyle, inspect_function
from kode.tools.tool import JsonSchemaGenerator, Tool
from kode.tools.transient import retrying
from kode.tools.validation import ArgumentValidator

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

NAME_PATTERN = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")

_BUILD_LATER: ContextVar[bool] = ContextVar("kode_build_later", default=False)


@contextmanager
def building_later() -> Iterator[None]:
    """Tools defined inside build their argument model and schema on first use, not now.

    For kode's built-in tools, defined when ``kode.builtin`` is imported: every check of the
    function still runs at definition; only pydantic's model, validator and JSON Schema wait
    for the first call or the first read of `Tool.input_schema`. Tests build each built-in
    tool's model, so none can fail later.
    """
    token = _BUILD_LATER.set(True)
    try:
        yield
    finally:
        _BUILD_LATER.reset(token)


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
    sink: ToolSink = importlib.import_module("kode.registries").registry
    return sink


def _method_problem(fn: Callable[..., Any]) -> str | None:
    if isinstance(fn, classmethod):
        return (
            "a classmethod in a class body cannot be a tool: there is no class to bind to "
            "yet; after the class, call define_tool(MyClass.method) on the bound classmethod"
        )
    if inspect.ismethod(fn):
        return None  # a bound method: 'self' is already bound
    parts = getattr(fn, "__qualname__", "").split(".")
    try:
        first = next(iter(inspect.signature(fn).parameters))
    except (StopIteration, TypeError, ValueError):
        return None
    if len(parts) > 1 and parts[-2] != "<locals>" and first in ("self", "cls"):
        return (
            f"a method in a class body cannot be a tool: there is no instance to bind "
            f"'{first}' to yet; decorate the bound method instead, "
            f"define_tool(instance.{parts[-1]}), or make it a @staticmethod"
        )
    return None


def _caller_locals(fn: Callable[..., Any]) -> Callable[[], dict[str, Any]]:
    """A function returning the locals of the function bodies that define `fn`, innermost first.

    String annotations (``from __future__ import annotations``) may name classes defined in the
    function that defines the tool, which `typing.get_type_hints` cannot see on its own. Only
    frames of `fn`'s own module are read, from the innermost outwards, stopping at module level,
    and only while `define_tool` runs (the defining frames are still on the stack then).
    """
    target = getattr(getattr(fn, "__func__", fn), "__globals__", None)

    def collect() -> dict[str, Any]:
        names: dict[str, Any] = {}
        frame = sys._getframe(1)
        while frame is not None:
            if frame.f_globals is target:
                if frame.f_code.co_name == "<module>":
                    break
                for key, value in frame.f_locals.items():
                    names.setdefault(key, value)
            elif names:
                break  # left the defining module: its callers' names are not in scope
            frame = frame.f_back  # type: ignore[assignment]
        return names

    return collect


def _label(fn: Any) -> str:
    """How an error names `fn`: its ``__qualname__``; a partial or an object by what it is."""
    qualname = getattr(fn, "__qualname__", None)
    if isinstance(qualname, str) and qualname:
        return qualname
    if isinstance(fn, functools.partial):
        return f"partial({_label(fn.func)})"
    return f"{type(fn).__qualname__} object"


def _unshowable(
    model: type[BaseModel], field_to_param: Mapping[str, str], exc: Exception
) -> list[str]:
    """Which parameters have a type with no JSON schema (a `Callable`, say), each one named.

    Only on the failure path: each parameter's type is tried on its own.
    """
    problems = []
    for fname, info in model.model_fields.items():
        try:
            TypeAdapter(info.annotation or Any).json_schema(schema_generator=JsonSchemaGenerator)
        except PydanticInvalidForJsonSchema:
            shown = inspect.formatannotation(info.annotation)
            problems.append(
                f"parameter '{field_to_param.get(fname, fname)}' cannot be shown to a model: its "
                f"type `{shown}` has no JSON schema (a model sends JSON, not a function or an "
                "object); take a value the function can act on, such as a name to look up"
            )
        except Exception:  # another kind of problem, of another parameter: look on
            continue
    first_line = str(exc).strip().split("\n", 1)[0]
    return problems or [f"its parameters have no JSON schema ({first_line})"]


def build_tool(
    fn: Callable[P, R],
    *,
    name: str | None,
    description: str | None,
    kind: Kind | str,
    groups: Iterable[str],
    optional: bool,
    timeout: float | None,
    requires_approval: bool | Callable[..., bool | str | None] | None,
    docstring_style: DocstringStyle,
    require_descriptions: bool,
    run_in_thread: bool,
    aliases: Iterable[str],
    param_aliases: Mapping[str, str] | None,
    localns: Callable[[], dict[str, Any]] | None = None,
) -> Tool[P, R]:
    """`Tool.from_function`: check the options, infer the schema, build the tool.

    Raises:
        ToolDefinitionError: every problem of the function, in one message.
    """
    qualname = _label(fn)
    if inspect.isclass(fn):
        # Calling a class makes an instance of it: a tool made of one would hand the model its
        # own arguments back. Its fields are parameters of a function that acts on them.
        raise ToolDefinitionError(
            qualname,
            [
                f"define_tool takes a function; got the class {fn.__name__}. To take its "
                f"fields as arguments, define a function with a parameter of type "
                f"{fn.__name__} and make that the tool"
            ],
        )
    method_problem = _method_problem(fn)
    if method_problem:
        raise ToolDefinitionError(qualname, [method_problem])
    if not callable(fn):
        raise ToolDefinitionError(
            qualname, [f"define_tool needs a function, got {type(fn).__name__}"]
        )
    problems: list[str] = []
    tool_name = name if name is not None else getattr(fn, "__name__", "")
    if name is None and not tool_name:
        problems.append("it has no __name__ to name the tool after: pass name=")
    elif not isinstance(tool_name, str) or not NAME_PATTERN.match(tool_name):
        problems.append(
            f"tool name {tool_name!r} is invalid: use 1-64 letters, digits, '_' or '-'"
            + ("" if name is not None else "; pass name=")
        )
    try:
        tool_kind = Kind(kind)
    except ValueError:
        problems.append(f"kind {kind!r} is not one of {', '.join(k.value for k in Kind)}")
        tool_kind = Kind.OTHER
    if isinstance(groups, str):
        problems.append(f"groups must be a list of names, got the string {groups!r}")
        group_names: tuple[str, ...] = ()
    else:
        group_names = tuple(dict.fromkeys(str(g).strip().lower() for g in groups))
        if any(not g for g in group_names):
            problems.append("groups contains an empty name")
    if isinstance(aliases, str):
        problems.append(f"aliases must be a list of names, got the string {aliases!r}")
        alias_names: tuple[str, ...] = ()
    else:
        alias_names = tuple(dict.fromkeys(str(a).strip().lower() for a in aliases))
        bad = [a for a in alias_names if not NAME_PATTERN.match(a)]
        if bad:
            problems.append(
                f"aliases {', '.join(map(repr, bad))} are invalid: use 1-64 letters, digits, "
                "'_' or '-'"
            )
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0
    ):
        problems.append(f"timeout must be a positive number of seconds or None, got {timeout!r}")
    if description is not None and not isinstance(description, str):
        problems.append(f"description must be a string, got {type(description).__name__}")
    try:
        spec = inspect_function(
            fn,
            name=tool_name if isinstance(tool_name, str) else "tool",
            description=description,
            docstring_style=docstring_style,
            require_descriptions=require_descriptions,
            localns=localns,
            param_aliases=param_aliases,
            build_later=_BUILD_LATER.get(),
        )
    except ToolDefinitionError as exc:
        raise ToolDefinitionError(qualname, problems + exc.problems) from None
    if problems:
        raise ToolDefinitionError(qualname, problems)
    if timeout is not None and not run_in_thread and not inspect.iscoroutinefunction(fn):
        raise ToolDefinitionError(
            qualname,
            [
                "a sync tool with run_in_thread=False runs inline in the event loop, where a "
                "timeout cannot stop it; drop run_in_thread=False or drop timeout"
            ],
        )
    later = _BUILD_LATER.get()

    def input_schema() -> dict[str, Any]:
        model = spec.args_model
        try:
            return clean_schema(model.model_json_schema(schema_generator=JsonSchemaGenerator))
        except PydanticInvalidForJsonSchema as exc:
            raise ToolDefinitionError(
                qualname, _unshowable(model, spec.field_to_param or {}, exc)
            ) from exc

    return Tool(
        fn,
        name=tool_name,
        description=spec.description,
        input_schema=input_schema if later else input_schema(),
        validator=ArgumentValidator(
            spec.model_builder.get if later else spec.args_model,
            tool_name=tool_name,
            params=spec.param_names,
            field_to_param=spec.field_to_param,
        ),
        kind=tool_kind,
        groups=group_names,
        optional=optional,
        timeout=float(timeout) if timeout is not None else None,
        requires_approval=requires_approval,
        run_in_thread=run_in_thread,
        context_param=spec.context_param,
        context_positional=spec.context_positional,
        spec=spec,
        aliases=alias_names,
    )


def _define(
    fn: Callable[P, R],
    *,
    registry: ToolSink | DefaultRegistry | None,
    replace: bool,
    idempotent: bool = False,
    retries: int = 1,
    transient: Iterable[type[BaseException]] = (),
    transient_retries: int = 2,
    defer_loading: bool = False,
    **options: Any,
) -> Tool[P, R]:
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise ToolDefinitionError(
            getattr(fn, "__qualname__", repr(fn)),
            [
                f"retries={retries!r} is not a count: give how many times one run may retry "
                "the tool (an int from 0; 1 by default)"
            ],
        )
    errors = _transient_errors(fn, transient, transient_retries, idempotent, options)
    made = build_tool(fn, **options)
    made.idempotent = idempotent
    made.retries = retries
    if errors:
        made.runs = retrying(
            made.fn,
            name=made.name,
            is_async=made.is_async,
            errors=errors,
            retries=transient_retries,
        )
    made.defer_loading = defer_loading
    if registry is DEFAULT_REGISTRY:
        registry = default_registry()
    if registry is not None:
        registry.register(made, replace=replace)
    return made


def _transient_errors(
    fn: Callable[..., Any],
    transient: Iterable[type[BaseException]],
    retries: int,
    idempotent: bool,
    options: dict[str, Any],
) -> tuple[type[BaseException], ...]:
    """The exceptions `transient` names, checked; the problems are a `ToolDefinitionError`."""
    errors = tuple(transient)
    if not errors:
        return ()
    problems = []
    bad = [e for e in errors if not (isinstance(e, type) and issubclass(e, Exception))]
    if bad:
        problems.append(f"transient={bad!r} are not exception classes")
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 1:
        problems.append(f"transient_retries={retries!r} is not a count from 1")
    if not idempotent:
        problems.append(
            "transient= retries a call that failed, which may have acted: only an idempotent "
            "tool may have it (set idempotent=True if running a call twice does what running "
            "it once does)"
        )
    if not options.get("run_in_thread", True) and not inspect.iscoroutinefunction(fn):
        problems.append(
            "transient= waits between attempts: a sync tool with it must run in a worker "
            "thread (run_in_thread=True)"
        )
    if problems:
        raise ToolDefinitionError(getattr(fn, "__qualname__", repr(fn)), problems)
    return errors


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
        registry=registry,
        replace=replace,
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
    if fn is not None:
        return _define(fn, localns=_caller_locals(fn), **options)

    def decorator(func: Callable[P, R]) -> Tool[P, R]:
        return _define(func, localns=_caller_locals(func), **options)

    return decorator


tool = define_tool
"""A short alias of `define_tool`."""
