"""`Tool`: a function with a name, a schema and a validator, callable exactly like the function.

This module owns the `Tool` object and the execution of one call: validate, inject the context,
run (inline, in a worker thread, or awaited; with a timeout), and turn the outcome into a
`ToolResult`. It does not register tools (`kode.tools.define`) or decide permissions (agents).
"""

from __future__ import annotations

import copy
import functools
import inspect
import logging
import math
import threading
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from time import perf_counter
from typing import Any, Generic, Literal, ParamSpec, TypeVar, cast

import anyio
import anyio.to_thread
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import core_schema

from kode.tools.blocking import (
    BLOCKED_LOOP_SECONDS,
    StepTimer,
    drive,
    report_blocked,
    stopped_since,
)
from kode.tools.context import ToolContext
from kode.tools.dialects import (
    Dialect,
    anthropic_declaration,
    clean_schema,
    gemini_declaration,
    openai_declaration,
    strip_titles,
)
from kode.tools.display import format_signature, tool_markdown
from kode.tools.errors import ToolError, ToolErrorType
from kode.tools.invocation import DescribeFunc
from kode.tools.kinds import Kind
from kode.tools.numbers import is_gate
from kode.tools.results import (
    Image,
    ToolResult,
    error_result,
    inline_result,
)
from kode.tools.schema import DocstringStyle, FunctionSpec
from kode.tools.sync import run_sync
from kode.tools.threads import RaisedInThread, call_and_convert, convert_in_thread
from kode.tools.validation import InvalidArguments, ValidatorFunc

__all__ = ["PreparedCall", "Tool"]

P = ParamSpec("P")
R = TypeVar("R")

_logger = logging.getLogger("kode.tools")
_SCHEMA_LOCK = threading.Lock()
_NO_OUTPUT_SCHEMA = frozenset({str, type(None), inspect.Signature.empty, bytes, Any, object})


class JsonSchemaGenerator(GenerateJsonSchema):
    """pydantic's generator, with plain JSON defaults written as they are.

    pydantic builds a `TypeAdapter` to encode every default, which is a fifth of the time it
    takes to define a tool; a str, int, bool, None or finite float is its own JSON form.
    """

    def encode_default(self, dft: Any) -> Any:
        kind = type(dft)
        if kind in _PLAIN_DEFAULTS and (kind is not float or math.isfinite(dft)):
            return dft
        return super().encode_default(dft)

    def chain_schema(self, schema: core_schema.ChainSchema) -> JsonSchemaValue:
        """A number behind kode's boolean gate is shown as the number it is."""
        if is_gate(schema):
            return self.generate_inner(schema["steps"][-1])
        return super().chain_schema(schema)


_PLAIN_DEFAULTS = frozenset({str, int, float, bool, type(None)})


class Tool(Generic[P, R]):
    """A tool: the decorated function plus everything a model needs to call it.

    Calling a `Tool` calls the original function unchanged, so a decorated function stays a
    function (in a notebook, in unit tests). `run` is how a model calls it: validated input in,
    `ToolResult` out, never an exception (cancellation apart).

    Build one with `define_tool`; the constructor is not public API.
    """

    # A Tool carries the wrapped function's __name__, __doc__, __wrapped__, ... in __dict__.
    name: str
    """The name the model calls the tool by (``^[a-zA-Z0-9_-]{1,64}$``)."""
    description: str
    """What the tool does, for the model: the docstring without its parameter sections."""
    kind: Kind
    """What the tool does to the world; mutating kinds drive approval."""
    groups: tuple[str, ...]
    """The groups the tool belongs to, e.g. ``("group:fs",)``."""
    optional: bool
    """Whether the tool is left out unless a template or policy names it explicitly."""
    timeout: float | None
    """Seconds a call may take before it ends with a ``timeout`` error (`None`: no limit)."""
    requires_approval: bool | Callable[..., bool | str | None] | None
    """Whether a call needs approval: `None` lets the agent's permission mode decide by kind."""
    run_in_thread: bool
    """Whether a sync function runs in a worker thread (the default) or inline in the loop."""
    aliases: tuple[str, ...] = ()
    """Other names that reach the tool in a registry (e.g. ``("read",)`` for ``fs_read``)."""
    idempotent: bool = False
    """Whether running a call twice does what running it once does (``define_tool(idempotent=
    True)``): a session resumed after a restart may run such a call again. Set it on the tool
    after definition for tools made otherwise."""
    retries: int = 1
    """How many times one run of an agent lets the tool ask for a retry (`ToolRetry`) before
    the run ends (``define_tool(retries=...)``). Set it on the tool after definition for tools
    made otherwise."""
    defer_loading: bool = False
    """Whether an agent sends the definition only once ``tool_search`` has found the tool
    (``define_tool(defer_loading=True)``); the tool is allowed all along. Set it on the tool
    after definition for tools made otherwise."""
    describer: DescribeFunc | None = None
    """Describes a call for its approval (`CallDetails`: what it does, the paths it touches, a
    diff, the text "always" patterns match); set with ``@my_tool.describe``. Run only when a
    call needs approval."""
    on_agent_create: Callable[[ToolContext[Any]], None] | None = None
    """Called once for each agent made with this tool (`Agent.create`), with a context holding
    the agent's ids, deps, workspace, file pool and services (no call id): for a tool to
    prepare what its calls share, or to say once that something it needs is missing. What it
    raises stops the agent's creation. Set it on the tool after definition."""
    agent_instructions: Callable[[Sequence[Tool[..., Any]], ToolContext[Any]], str] | None = None
    """Called once for each agent made with this tool (`Agent.create`, after
    `on_agent_create`), with the agent's tools and the same context: what it returns (if not
    empty) is added to the agent's system prompt (``code_run`` lists the tools a script may
    call as Python functions). Set it on the tool after definition."""

    def __init__(
        self,
        fn: Callable[P, R],
        *,
        name: str,
        description: str,
        input_schema: dict[str, Any] | Callable[[], dict[str, Any]],
        validator: ValidatorFunc,
        kind: Kind,
        groups: tuple[str, ...],
        optional: bool,
        timeout: float | None,
        requires_approval: bool | Callable[..., bool | str | None] | None,
        run_in_thread: bool,
        context_param: str | None = None,
        context_positional: bool = False,
        spec: FunctionSpec | None = None,
        output_schema: dict[str, Any] | Literal[False] | None = False,
        aliases: tuple[str, ...] = (),
    ) -> None:
        """Assemble a tool from its parts; use `from_function` or `from_schema` instead.

        Args:
            fn: What runs: called with the validated arguments as keywords (and the context).
            name: The tool's name.
            description: What it does, for the model.
            input_schema: The JSON Schema of the arguments, or a function that makes it when
                `input_schema` is first read.
            validator: Turns raw input into keyword arguments or an `InvalidArguments`.
            kind: What it does to the world.
            groups: Groups it joins.
            optional: Left out unless named explicitly.
            timeout: Seconds a call may take.
            requires_approval: Force or skip approval, or decide per call.
            run_in_thread: Run a sync `fn` in a worker thread.
            context_param: The parameter that receives the `ToolContext`, if any.
            context_positional: Pass the context as the first positional argument.
            spec: What schema inference learned about a function (`None` for a schema tool).
            output_schema: The JSON Schema of the result; `False` works it out from `spec`.
            aliases: Other names that reach the tool in a registry.
        """
        functools.update_wrapper(self, fn)
        self.fn = fn
        """The original function (or bound method)."""
        self.runs: Callable[..., Any] = fn
        """What a call runs: `fn`, or `fn` with retries of transient failures
        (``define_tool(transient=...)``)."""
        self.name = name
        self.description = description
        self.kind = kind
        self.groups = groups
        self.optional = optional
        self.timeout = timeout
        self.requires_approval = requires_approval
        self.run_in_thread = run_in_thread
        self.spec = spec
        """What schema inference learned about the function (`None` for a schema tool)."""
        self._input_schema: dict[str, Any] | None = None
        self._make_input_schema: Callable[[], dict[str, Any]] | None = None
        if callable(input_schema):
            self._make_input_schema = input_schema  # made on first read
        else:
            self._input_schema = input_schema
        self.aliases = aliases
        self.is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
            getattr(fn, "__call__", None)  # noqa: B004 - an object with an async __call__
        )
        """Whether the function is a coroutine function."""
        self.context_param = context_param
        """The parameter that receives the `ToolContext` (`None`: the tool takes none)."""
        self._declarations: dict[tuple[str, bool | None], dict[str, Any] | str] = {}
        self._output_schema: dict[str, Any] | bool | None = output_schema
        self._ctx_positional = context_positional
        self._validator = validator
        self._pure: bool | None = None  # (see pure_validation)
        self._watch_next = True  # time the steps of the next call (kode.tools.blocking)

    @property
    def pure_validation(self) -> bool:
        """Whether validating the same input again gives equal arguments, and does nothing else.

        True for a function tool whose parameters are data types (str, numbers, lists, dicts,
        dates, enums, pydantic models and dataclasses of those...) with no validator
        functions, default factories, model ``__init__``/``model_post_init`` or enum
        ``_missing_`` of anyone's: then an agent need not keep a call's validated arguments
        alive for its `ToolStart` event, which makes them again from the model's input when
        read. False when in doubt (schema tools, custom types).
        """
        pure = self._pure
        if pure is None:
            pure = self._pure = getattr(self._validator, "pure", False) is True
        return pure

    def describe(self, fn: DescribeFunc) -> DescribeFunc:
        """Use `fn` to describe this tool's calls to whoever approves them (a decorator).

        `fn` gets the validated arguments and the call's `ToolContext` (`None` outside a
        call) and returns a `CallDetails`. It runs only when a call needs approval; what it
        raises is logged and the request goes out without details.

        Example:
            ```python
            from kode import define_tool
            from kode.tools.invocation import CallDetails

            @define_tool(kind="execute", registry=None)
            def deploy(target: str) -> str:
                return f"deployed to {target}"

            @deploy.describe
            def _(args, ctx):
                return CallDetails(description=f"Deploy to {args['target']}")
            ```
        """
        if not callable(fn):
            raise TypeError(f"describe takes a function of (arguments, ctx), not {fn!r}")
        self.describer = fn
        return fn

    @property
    def input_schema(self) -> dict[str, Any]:
        """The JSON Schema of the arguments.

        Computed once: at definition, or for kode's built-in tools when first read.
        """
        schema = self._input_schema
        if schema is None:
            make = self._make_input_schema
            assert make is not None
            schema = make()
            with _SCHEMA_LOCK:  # threads racing here all keep the first schema made
                if self._input_schema is None:
                    self._input_schema = schema
                schema = self._input_schema
        return schema

    @property
    def schema_made(self) -> bool:
        """Whether `input_schema` has been computed.

        Always true but for kode's built-in tools, which make it when it is first read.
        """
        return self._input_schema is not None

    @classmethod
    def from_function(
        cls,
        fn: Callable[P, R],
        /,
        *,
        name: str | None = None,
        description: str | None = None,
        kind: Kind | str = Kind.OTHER,
        groups: Iterable[str] = (),
        optional: bool = False,
        timeout: float | None = None,
        requires_approval: bool | Callable[..., bool | str | None] | None = None,
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
    ) -> Tool[P, R]:
        """A tool from a typed, documented function, without registering it anywhere.

        This is the one way a function becomes a tool: `define_tool` is this plus
        registration, and takes the same options with the same meaning (see it for each).

        Raises:
            ToolDefinitionError: every problem of the function, in one message.
        """
        from kode.tools.define import caller_locals, make_tool

        return make_tool(
            fn,
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
            localns=caller_locals(fn),
        )

    @staticmethod
    def from_schema(
        name: str,
        *,
        description: str = "",
        input_schema: Mapping[str, Any] | None = None,
        handler: Callable[[dict[str, Any], ToolContext[Any]], Awaitable[Any]] | None = None,
        kind: Kind | str = Kind.OTHER,
        groups: Iterable[str] = (),
        optional: bool = False,
        timeout: float | None = None,
        requires_approval: bool | Callable[..., bool | str | None] | None = None,
        output_schema: Mapping[str, Any] | None = None,
        param_aliases: Mapping[str, str] | None = None,
        idempotent: bool = False,
        defer_loading: bool = False,
    ) -> Tool[..., Any]:
        """A tool from a name, a description and a JSON schema: `declare_tool`, the one way.

        Raises:
            ToolDefinitionError: every problem with the declaration, in one message.
        """
        from kode.tools.declared import declare_tool

        return declare_tool(
            name,
            description=description,
            input_schema=input_schema,
            handler=handler,
            kind=kind,
            groups=groups,
            optional=optional,
            timeout=timeout,
            requires_approval=requires_approval,
            output_schema=output_schema,
            param_aliases=param_aliases,
            idempotent=idempotent,
            defer_loading=defer_loading,
        )

    # --- being a function ------------------------------------------------------------------

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        """Call the original function with exactly these arguments."""
        return self.fn(*args, **kwargs)

    @property
    def __signature__(self) -> inspect.Signature:
        """The original function's signature, for `inspect.signature`."""
        return inspect.signature(self.fn)

    def __repr__(self) -> str:
        return f"<Tool {self.name}{format_signature(self.__signature__)}>"

    # --- schemas ---------------------------------------------------------------------------

    def schema(
        self, dialect: Dialect = "anthropic", *, strict: bool | None = None
    ) -> dict[str, Any]:
        """The tool declaration in a provider's format.

        Args:
            dialect: ``"anthropic"`` (``name``, ``description``, ``input_schema``), ``"openai"``
                (Chat Completions ``{"type": "function", "function": {...}}``, strict mode when
                the schema allows it) or ``"gemini"`` (a ``FunctionDeclaration`` in Gemini's
                OpenAPI subset).
            strict: OpenAI: `None` chooses, `True` requires strict mode, `False` disables it.
                Anthropic, whose strict tool use is opt-in: `True` requires it (``strict:
                true`` and the schema rewritten for it), `None` and `False` send the schema
                as it is. Gemini: ignored.

        Raises:
            ValueError: an unknown dialect, or `strict=True` for a schema strict mode cannot take.
        """
        key = (dialect, strict)
        cached = self._declarations.get(key)
        if cached is None:
            try:
                cached = self._declaration(dialect, strict)
            except ValueError as exc:
                if dialect not in ("anthropic", "openai", "gemini"):
                    raise
                cached = str(exc)  # asked again, it is refused again without the work
            self._declarations[key] = cached
        if isinstance(cached, str):
            raise ValueError(cached)
        return copy.deepcopy(cached)  # the caller may add to it (cache_control, ...)

    def _declaration(self, dialect: str, strict: bool | None) -> dict[str, Any]:
        if dialect == "anthropic" and strict:
            from kode.tools.anthropic_strict import anthropic_strict_declaration

            return anthropic_strict_declaration(self.name, self.description, self.input_schema)
        if dialect == "anthropic":
            return anthropic_declaration(self.name, self.description, self.input_schema)
        if dialect == "openai":
            return openai_declaration(self.name, self.description, self.input_schema, strict=strict)
        if dialect == "gemini":
            return gemini_declaration(self.name, self.description, self.input_schema)
        raise ValueError(f"unknown dialect {dialect!r}: use 'anthropic', 'openai' or 'gemini'")

    @property
    def output_schema(self) -> dict[str, Any] | None:
        """The JSON Schema of the return value, when the return annotation gives a structured one.

        `None` for tools returning text, nothing, bytes or images, and for unannotated returns.
        """
        if self._output_schema is False:
            self._output_schema = self._compute_output_schema() if self.spec is not None else None
        return cast("dict[str, Any] | None", self._output_schema)

    def _compute_output_schema(self) -> dict[str, Any] | None:
        from pydantic import TypeAdapter

        assert self.spec is not None
        ann = self.spec.return_annotation
        if self.is_async and getattr(ann, "__origin__", None) is Awaitable:
            ann = ann.__args__[0]
        if ann in _NO_OUTPUT_SCHEMA or ann in (ToolResult, Image):
            return None
        try:
            schema = TypeAdapter(ann).json_schema(mode="serialization")
        except Exception:  # a return type pydantic cannot describe: no output schema
            return None
        return clean_schema(schema) if "properties" in schema else strip_titles(schema)

    # --- running ---------------------------------------------------------------------------

    def prepare(self, input: Mapping[str, Any] | str | None = None) -> PreparedCall | ToolResult:
        """Validate a model's arguments: a `PreparedCall` to run, or the error result to send.

        This is the one way input is checked, whoever runs the tool (`run`, an agent's
        pipeline, the MCP server). It never raises for bad input: the refusal is a
        `ToolResult` of type ``invalid_tool_params`` whose text names each bad field.

        Args:
            input: The model's arguments, as a dict or a JSON string (`None`: no arguments).

        Example:
            ```python
            from kode import define_tool
            from kode.tools import PreparedCall

            @define_tool(registry=None)
            def add(a: int, b: int = 1) -> int:
                \"\"\"Add two numbers.\"\"\"
                return a + b

            call = add.prepare({"a": "2"})
            assert isinstance(call, PreparedCall) and call.arguments == {"a": 2, "b": 1}
            refused = add.prepare({"a": "two"})
            assert refused.is_error  # a ToolResult: 'a' should be a valid integer ...
            ```
        """
        outcome = self._arguments_for(input)
        return outcome if isinstance(outcome, ToolResult) else PreparedCall(self, outcome)

    def _arguments_for(self, input: Mapping[str, Any] | str | None) -> dict[str, Any] | ToolResult:
        """`prepare` without the `PreparedCall`: the keyword arguments, or the error result."""
        try:
            outcome = self._validator(input)
        except (ValueError, RecursionError) as exc:  # input a check could not read
            return error_result(
                f"Invalid arguments for tool '{self.name}': {type(exc).__name__}: {exc}",
                type=ToolErrorType.INVALID_TOOL_PARAMS,
            )
        except Exception as exc:  # a user validator that raised something odd
            return self._failure(exc)
        if type(outcome) is dict:
            return outcome
        assert isinstance(outcome, InvalidArguments)
        return error_result(outcome.message, type=ToolErrorType.INVALID_TOOL_PARAMS)

    def validate(self, input: Mapping[str, Any] | str | None) -> dict[str, Any]:
        """Validate a model's arguments; return the keyword arguments the function will get.

        Raises:
            ToolError: of type ``invalid_tool_params``, with the message the model would see.
        """
        prepared = self.prepare(input)
        if isinstance(prepared, ToolResult):
            raise ToolError(
                prepared.text, type=prepared.error_type or ToolErrorType.INVALID_TOOL_PARAMS
            )
        return prepared.arguments

    async def run(
        self,
        input: Mapping[str, Any] | str | None = None,
        ctx: ToolContext[Any] | None = None,
        *,
        default_timeout: float | None = None,
    ) -> ToolResult:
        """Validate `input`, run the function and return its outcome as a `ToolResult`.

        Never raises for anything the tool or the input did: invalid input, a `ToolError`, any
        other exception and a timeout all become error results. Cancellation of the caller
        propagates (after marking `ctx` cancelled).

        Args:
            input: The model's arguments, as a dict or a JSON string.
            ctx: The context to inject; a standalone one is made when the function asks for
                one and none is given.
            default_timeout: The limit for this call when the tool has no `timeout` of its
                own (a server or an agent's default).
        """
        arguments = self._arguments_for(input)
        if isinstance(arguments, ToolResult):
            return arguments
        return await self.execute(arguments, ctx, default_timeout=default_timeout)

    async def execute(
        self,
        arguments: dict[str, Any],
        ctx: ToolContext[Any] | None = None,
        *,
        default_timeout: float | None = None,
    ) -> ToolResult:
        """Run the function with arguments `validate` returned; return its `ToolResult`.

        This is `run` without the validation, for pipelines that validate first (an agent
        checks permissions and runs hooks in between). Passing unvalidated arguments skips
        every guarantee of the schema.

        Args:
            arguments: The keyword arguments, as `validate` returned them (this dict is used
                for the call and may be changed by it).
            ctx: The context to inject (a standalone one is made when needed).
            default_timeout: The limit for this call when the tool has no `timeout` of its own.
        """
        kwargs = arguments
        limit = self.timeout if self.timeout is not None else default_timeout
        args: tuple[Any, ...] = ()
        if self.context_param is not None:
            if ctx is None:
                ctx = ToolContext(tool_name=self.name)
            if ctx.deps is None and self.spec is not None and self.spec.deps_type is not None:
                return self._missing_deps()
            if self._ctx_positional:
                args = (ctx,)
            else:
                kwargs[self.context_param] = ctx
        fn: Callable[..., Any] = self.runs
        # What the function returned becomes a result inside the time limit; plain data (a
        # dict of strings and numbers, ...) in place, anything else (an iterator, which may
        # never end, an object whose serialisation runs code, a huge value) in a worker
        # thread, so that it cannot hold the event loop.
        timer: StepTimer | None = None
        started = 0.0
        try:
            if self.is_async:
                coro = fn(*args, **kwargs)
                if self._watch_next:  # time this call's steps (see kode.tools.blocking)
                    self._watch_next = False
                    timer = StepTimer()
                    coro = drive(coro, timer)
                started = perf_counter()
                if limit is None:
                    out = await coro
                    now = inline_result(out, tool_name=self.name)
                    result = now or await self._convert_in_thread(out, None, ctx)
                else:
                    in_time: ToolResult | None = None
                    with anyio.move_on_after(limit):
                        out = await coro
                        now = inline_result(out, tool_name=self.name)
                        in_time = now or await self._convert_in_thread(out, None, ctx)
                    result = self._timed_out(ctx, limit) if in_time is None else in_time
            elif not self.run_in_thread:
                started = perf_counter()
                try:
                    out = fn(*args, **kwargs)
                except GeneratorExit as exc:  # raised by the function itself: a failure
                    return self._failure(exc, ctx)
                now = inline_result(out, tool_name=self.name)
                result = now or await self._convert_in_thread(out, limit, ctx)
            else:
                call = functools.partial(call_and_convert, fn, args, kwargs, self.name)
                if limit is None:
                    return await anyio.to_thread.run_sync(call, abandon_on_cancel=True)
                with anyio.move_on_after(limit):
                    return await anyio.to_thread.run_sync(call, abandon_on_cancel=True)
                return self._timed_out(ctx, limit)
        except ToolError as exc:
            result = error_result(exc.message, type=exc.type, details=exc.details)
        except RaisedInThread as exc:
            result = self._failure(exc.raised, ctx)
        except Exception as exc:
            result = self._failure(exc, ctx)
        except BaseException:
            if ctx is not None:
                ctx.cancel()  # a worker thread may still be running: let it see it
            if timer is not None and timer.longest >= BLOCKED_LOOP_SECONDS:
                report_blocked(None, self.name, timer.longest, limit, ctx=ctx)
            raise
        if self.is_async or not self.run_in_thread:  # it ran in the event loop's thread
            held = perf_counter() - started  # an inline sync call is one step
            if held >= BLOCKED_LOOP_SECONDS:
                if self.is_async:  # a slow call: time the next one's steps too
                    self._watch_next = True
                    held = 0.0 if timer is None else timer.longest
                elif stopped_since(started):  # the whole process was stopped, not the tool
                    held = 0.0
                if held >= BLOCKED_LOOP_SECONDS:
                    return report_blocked(
                        result, self.name, held, limit, inline=not self.is_async, ctx=ctx
                    )
        return result

    async def _convert_in_thread(
        self, out: Any, limit: float | None, ctx: ToolContext[Any] | None
    ) -> ToolResult:
        """What the function returned, as a `ToolResult` made in a worker thread, in time."""
        result = await convert_in_thread(out, self.name, limit)
        if result is None:  # past the limit
            assert limit is not None
            return self._timed_out(ctx, limit)
        return result

    def run_sync(
        self,
        input: Mapping[str, Any] | str | None = None,
        ctx: ToolContext[Any] | None = None,
    ) -> ToolResult:
        """`run` from sync code: in a script, and inside a running event loop (Jupyter)."""
        return run_sync(self.run, input, ctx)

    def _missing_deps(self) -> ToolResult:
        assert self.spec is not None
        wanted = getattr(self.spec.deps_type, "__name__", None) or repr(self.spec.deps_type)
        return error_result(
            f"Tool '{self.name}' was not run: it needs deps of type {wanted} (its context is "
            f"ToolContext[{wanted}]) and none were given. Pass deps= to Agent.create, Tool.run "
            "or ToolServer, or --deps module:factory on the command line.",
            type=ToolErrorType.EXECUTION_FAILED,
            details={"missing": "deps", "deps_type": wanted},
        )

    def _timed_out(self, ctx: ToolContext[Any] | None, limit: float) -> ToolResult:
        if ctx is not None:
            ctx.cancel()
        extra = (
            " It was still running in a worker thread; its result will be discarded."
            if not self.is_async and self.run_in_thread
            else ""
        )
        return error_result(
            f"Tool '{self.name}' timed out after {limit:g} s.{extra}",
            type=ToolErrorType.TIMEOUT,
        )

    def _failure(self, exc: BaseException, ctx: ToolContext[Any] | None = None) -> ToolResult:
        logger = ctx.logger if ctx is not None else _logger
        text = str(exc)
        # Handled: the model is told. One line says so (Python's last-resort handler prints
        # warnings to stderr when nothing is configured); the traceback is for those who ask,
        # at DEBUG. The exception rides along for handlers that say where it was raised.
        logger.warning(
            "Tool %r raised %s%s",
            self.name,
            type(exc).__name__,
            f": {text.strip().splitlines()[0][:200]}" if text.strip() else "",
            extra={"kode_exception": exc},
        )
        logger.debug("Tool %r raised %s", self.name, type(exc).__name__, exc_info=exc)
        return error_result(
            f"Tool '{self.name}' failed: {type(exc).__name__}: {text}"
            if text
            else f"Tool '{self.name}' failed: {type(exc).__name__}",
            type=ToolErrorType.EXECUTION_FAILED,
            details={"exception": type(exc).__name__},
        )

    # --- notebooks ---------------------------------------------------------------------------

    def _repr_markdown_(self) -> str:
        return tool_markdown(self.name, self.description, self.__signature__, self.input_schema)


class PreparedCall:
    """A call whose arguments passed validation: what `Tool.prepare` returns for good input."""

    __slots__ = ("arguments", "tool")

    def __init__(self, tool: Tool[..., Any], arguments: dict[str, Any]) -> None:
        self.tool = tool
        """The tool to run."""
        self.arguments = arguments
        """The keyword arguments the function gets (defaults filled in, types coerced)."""

    @property
    def takes_context(self) -> bool:
        """Whether the tool's function receives a `ToolContext`."""
        return self.tool.context_param is not None

    async def execute(
        self, ctx: ToolContext[Any] | None = None, *, default_timeout: float | None = None
    ) -> ToolResult:
        """Run the tool with these arguments (see `Tool.execute`); never raises for the tool."""
        return await self.tool.execute(self.arguments, ctx, default_timeout=default_timeout)

    def __repr__(self) -> str:
        return f"PreparedCall({self.tool.name!r}, {self.arguments!r})"
