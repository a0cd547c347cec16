"""Making a `Tool` of a function: its options and the definition-time checks.

This module owns `Tool.from_function`'s work (`make_tool`, `build_tool`) and what it checks; it
registers nothing. The decorators that register a tool as they make it, `define_tool` and
`tool`, live beside the registry they fill, in `kode.registries.define`; their former path here
still imports (a module `__getattr__` loads them on first use, for code written before they
moved).
"""

from __future__ import annotations

import functools
import inspect
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from pydantic import BaseModel, TypeAdapter
from pydantic.errors import PydanticInvalidForJsonSchema

from kode.tools.core import JsonSchemaGenerator, Tool
from kode.tools.dialects import clean_schema
from kode.tools.errors import ToolDefinitionError
from kode.tools.kinds import Kind
from kode.tools.schema import DocstringStyle, inspect_function
from kode.tools.transient import retrying
from kode.tools.validation import ArgumentValidator

if TYPE_CHECKING:  # the former path of the registering decorators (see __getattr__)
    from kode.registries.define import define_tool as define_tool
    from kode.registries.define import tool as tool

__all__ = ["build_tool", "building_later", "caller_locals", "make_tool"]

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


def caller_locals(fn: Callable[..., Any]) -> Callable[[], dict[str, Any]]:
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


def make_tool(
    fn: Callable[P, R],
    *,
    idempotent: bool = False,
    retries: int = 1,
    transient: Iterable[type[BaseException]] = (),
    transient_retries: int = 2,
    defer_loading: bool = False,
    **options: Any,
) -> Tool[P, R]:
    """`Tool.from_function`: `build_tool`, then what a run does with the tool (retries).

    Raises:
        ToolDefinitionError: every problem of the function, in one message.
    """
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


_MOVED = frozenset({"define_tool", "tool"})


def __getattr__(name: str) -> Any:
    """`define_tool` and `tool`, kept at their former path.

    They live in `kode.registries.define`, beside the registry they fill.
    """
    if name in _MOVED:
        from kode.registries.define import define_tool, tool

        return define_tool if name == "define_tool" else tool
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
