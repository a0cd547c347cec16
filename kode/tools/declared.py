"""Declared tools: a tool made from a name, a description and a JSON schema, not a function.

This module owns `declare_tool` and the validation of arguments against a plain JSON schema.
Tools whose code lives elsewhere are declared: a discovery command's tools, an MCP server's
tools, and client tools that the caller executes (no handler: running one yields a *pending*
result). Validation covers what models get wrong in practice — not an object, missing required
keys, unknown keys, wrong JSON types, values outside an ``enum`` — and, when the optional
``jsonschema`` package is installed, the whole schema.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

from kode.tools.context import ToolContext
from kode.tools.core import Tool
from kode.tools.errors import ToolDefinitionError
from kode.tools.kinds import Kind
from kode.tools.results import TextBlock, ToolResult
from kode.tools.validation import (
    InvalidArguments,
    input_too_large,
    short_value,
    too_deep_message,
)

__all__ = ["DeclaredHandlerFunc", "DeclaredTool", "declare_tool"]

DeclaredHandlerFunc = Callable[[dict[str, Any], ToolContext[Any]], Awaitable[Any]]
"""Runs a declared tool: ``await handler(arguments, ctx)``; returns anything a tool may return."""

_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
    "null": (type(None),),
}


def _type_ok(value: Any, expected: Any) -> bool:
    kinds = expected if isinstance(expected, list) else [expected]
    for kind in kinds:
        types = _JSON_TYPES.get(kind)
        if types is None:
            return True  # a type this checker does not know: let the tool decide
        if isinstance(value, bool) and kind in ("integer", "number"):
            continue
        if kind == "integer" and isinstance(value, float) and value.is_integer():
            return True
        if isinstance(value, types):
            return True
    return False


class _SchemaValidator:
    """Checks arguments against a JSON schema; returns the arguments or a message."""

    def __init__(
        self,
        schema: Mapping[str, Any],
        tool_name: str,
        param_aliases: Mapping[str, str] | None = None,
    ) -> None:
        self.schema = schema
        self.tool_name = tool_name
        self.param_aliases = dict(param_aliases or {})
        self.properties: Mapping[str, Any] = schema.get("properties") or {}
        self.required = [r for r in schema.get("required", ()) if isinstance(r, str)]
        self.closed = schema.get("additionalProperties") is False
        self.full: Any = None
        try:
            import jsonschema  # type: ignore[import-untyped]

            cls = jsonschema.validators.validator_for(schema)
            cls.check_schema(schema)
            self.full = cls(schema)
        except ImportError:
            pass
        except Exception as exc:  # jsonschema.SchemaError: say so at declaration time
            raise ToolDefinitionError(tool_name, [f"its input schema is invalid: {exc}"]) from exc

    def _message(self, problems: list[str]) -> InvalidArguments:
        shown = problems[:8]
        if len(problems) > 8:
            shown.append(f"and {len(problems) - 8} more")
        return InvalidArguments(
            f"Invalid arguments for tool '{self.tool_name}': {'; '.join(shown)}. "
            "Fix the arguments and call the tool again."
        )

    def __call__(self, raw: Any) -> dict[str, Any] | InvalidArguments:
        if raw is None or (isinstance(raw, str | bytes) and not raw.strip()):
            raw = {}
        elif isinstance(raw, str | bytes | bytearray):
            try:
                raw = json.loads(raw)
            except ValueError as exc:
                return InvalidArguments(
                    f"Invalid arguments for tool '{self.tool_name}': the arguments are not valid "
                    f"JSON ({exc}). Send a JSON object."
                )
            except RecursionError:
                return InvalidArguments(too_deep_message(self.tool_name))
        if isinstance(raw, Mapping) and not isinstance(raw, dict):
            raw = dict(raw)
        if not isinstance(raw, dict):
            return InvalidArguments(
                f"Invalid arguments for tool '{self.tool_name}': expected a JSON object with the "
                f"parameters by name, got {type(raw).__name__} {short_value(raw)}."
            )
        refusal = input_too_large(raw, self.tool_name)
        if refusal is not None:
            return InvalidArguments(refusal)
        args = dict(raw)
        problems: list[str] = []
        for alias, target in self.param_aliases.items():
            if alias in args:
                value = args.pop(alias)
                if target in args:
                    problems.append(f"'{alias}' and '{target}' are the same parameter; send one")
                else:
                    args[target] = value
        for key, value in list(args.items()):
            prop = self.properties.get(key)
            if isinstance(prop, bool):
                prop = {}  # a boolean schema: `true` accepts anything, `false` is jsonschema's
            if prop is None:
                if self.closed:
                    names = ", ".join(self.properties) or "none"
                    problems.append(
                        f"'{key}' is not a parameter of this tool (parameters: {names})"
                    )
                continue
            if value is None and key not in self.required and not _type_ok(None, prop.get("type")):
                del args[key]  # null for an optional parameter means "leave it out"
                continue
            expected = prop.get("type")
            if (
                isinstance(value, str)
                and expected in ("object", "array")
                and value.strip()[:1] in ("{", "[")
            ):
                try:
                    args[key] = value = json.loads(value)
                except ValueError:
                    pass
            if expected is not None and not _type_ok(value, expected):
                want = " or ".join(expected) if isinstance(expected, list) else expected
                problems.append(f"'{key}' should be of type {want}, got {short_value(value)}")
            elif "enum" in prop and value not in prop["enum"]:
                allowed = ", ".join(short_value(v) for v in prop["enum"])
                problems.append(f"'{key}' should be one of {allowed}, got {short_value(value)}")
        for key in self.required:
            if key not in args:
                problems.append(f"'{key}' is required but missing")
        if not problems and self.full is not None:
            for error in sorted(self.full.iter_errors(args), key=lambda e: list(e.path)):
                where = ".".join(str(p) for p in error.path) or "(arguments)"
                problems.append(f"'{where}' {error.message}")
        if problems:
            return self._message(problems)
        return args


class DeclaredTool(Tool[..., Any]):
    """A tool declared by schema; see `declare_tool`."""

    def __init__(
        self,
        *,
        name: str,
        description: str,
        input_schema: Mapping[str, Any],
        handler: DeclaredHandlerFunc | None,
        kind: Kind,
        groups: tuple[str, ...],
        optional: bool,
        timeout: float | None,
        requires_approval: bool | Callable[..., bool | str | None] | None,
        output_schema: Mapping[str, Any] | None,
        param_aliases: Mapping[str, str] | None = None,
    ) -> None:
        self.handler = handler
        """Runs the tool; `None` for a client tool, which the caller executes."""

        async def call(ctx: ToolContext[Any], /, **arguments: Any) -> Any:
            if handler is None:
                return ToolResult(
                    content=(
                        TextBlock(text=f"Tool '{name}' is executed by the client; waiting for it."),
                    ),
                    details={"tool": name, "input": arguments},
                    pending=True,
                )
            return await handler(arguments, ctx)

        # The registry recognises a re-run of the same declaration by module and qualname:
        # name the handler in them, so two handlers declaring one name are two definitions.
        call.__name__ = name
        call.__qualname__ = (
            f"{getattr(handler, '__qualname__', type(handler).__name__)}:{name}"
            if handler is not None
            else name
        )
        call.__module__ = getattr(handler, "__module__", None) or __name__
        call.__doc__ = description
        schema = copy.deepcopy(dict(input_schema))
        schema.setdefault("type", "object")
        schema.setdefault("properties", {})
        super().__init__(
            call,
            name=name,
            description=description,
            input_schema=schema,
            validator=_SchemaValidator(schema, name, param_aliases),
            kind=kind,
            groups=groups,
            optional=optional,
            timeout=timeout,
            requires_approval=requires_approval,
            run_in_thread=False,
            context_param="ctx",
            context_positional=True,
            output_schema=copy.deepcopy(dict(output_schema)) if output_schema else None,
        )
        self.__name__ = self.__qualname__ = name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Run the handler with these arguments and a standalone context (a coroutine)."""
        if args:
            raise TypeError(f"tool {self.name!r} takes its arguments by keyword only")
        return self.fn(ToolContext(tool_name=self.name), **kwargs)


def declare_tool(
    name: str,
    *,
    description: str = "",
    input_schema: Mapping[str, Any] | None = None,
    handler: DeclaredHandlerFunc | None = None,
    kind: Kind | str = Kind.OTHER,
    groups: Iterable[str] = (),
    optional: bool = False,
    timeout: float | None = None,
    requires_approval: bool | Callable[..., bool | str | None] | None = None,
    output_schema: Mapping[str, Any] | None = None,
    param_aliases: Mapping[str, str] | None = None,
    idempotent: bool = False,
    defer_loading: bool = False,
) -> DeclaredTool:
    """A tool from a schema: its code is a `handler`, another program, or the client.

    Args:
        name: The tool's name (``^[a-zA-Z0-9_-]{1,64}$``).
        description: What it does, for the model.
        input_schema: The JSON schema of its arguments (an object schema).
        handler: ``async (arguments, ctx) -> value``; `None` declares a client tool, whose
            call yields a result with ``pending=True`` for the caller to fulfil.
        kind: What it does (`Kind`).
        groups: Groups it joins.
        optional: Leave it out unless named explicitly.
        timeout: Seconds a call may take.
        requires_approval: Force or skip approval; `None` decides by kind.
        output_schema: The JSON schema of its result, if known.
        param_aliases: Other names accepted for parameters, ``{"file_path": "path"}`` (as in
            `define_tool`): the schema shows the parameter's own name.
        idempotent: Running a call twice does what running it once does (as in `define_tool`):
            a resumed session may run such a call that was running again.
        defer_loading: Send the definition to the model only once ``tool_search`` has found
            it (as in `define_tool`).

    Raises:
        ToolDefinitionError: every problem with the declaration, in one message.
    """
    from kode.tools.define import NAME_PATTERN

    problems: list[str] = []
    if not isinstance(name, str) or not NAME_PATTERN.match(name):
        problems.append(f"tool name {name!r} is invalid: use 1-64 letters, digits, '_' or '-'")
    if not isinstance(description, str):
        problems.append(f"description must be a string, got {type(description).__name__}")
    if input_schema is None:
        schema: dict[str, Any] = {"type": "object"}
    elif isinstance(input_schema, Mapping):
        schema = dict(input_schema)
    else:
        problems.append(
            f"input_schema must be a JSON schema object (a dict), got {type(input_schema).__name__}"
        )
        schema = {"type": "object"}
    if schema.get("type", "object") != "object":
        problems.append(f"input_schema must describe an object, got type {schema.get('type')!r}")
    properties = schema.get("properties", {})
    if not isinstance(properties, Mapping):
        problems.append("input_schema.properties must be an object")
    else:
        bad_props = [k for k, v in properties.items() if not isinstance(v, Mapping | bool)]
        if bad_props:
            problems.append(
                f"input_schema.properties {', '.join(map(repr, bad_props))} must be schema objects"
            )
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        problems.append(f"input_schema.required must be a list of property names, got {required!r}")
    if isinstance(groups, str):
        problems.append(f"groups must be a list of names, got the string {groups!r}")
        groups = ()
    if param_aliases is not None:
        shown = properties if isinstance(properties, Mapping) else {}
        if not isinstance(param_aliases, Mapping):
            problems.append(
                f"param_aliases must map other names to parameters, got "
                f"{type(param_aliases).__name__}"
            )
        else:
            for alias, target in param_aliases.items():
                if not isinstance(alias, str) or not isinstance(target, str):
                    problems.append(f"param_aliases maps {alias!r} to {target!r}: use strings")
                elif target not in shown:
                    problems.append(
                        f"param_aliases maps {alias!r} to {target!r}, which is not a parameter"
                    )
                elif alias in shown:
                    problems.append(f"param_aliases maps {alias!r}, which is itself a parameter")
    try:
        tool_kind = Kind(kind)
    except ValueError:
        problems.append(f"kind {kind!r} is not one of {', '.join(k.value for k in Kind)}")
        tool_kind = Kind.OTHER
    if handler is not None and not callable(handler):
        problems.append(f"handler must be an async function, got {type(handler).__name__}")
    if timeout is not None and (isinstance(timeout, bool) or not timeout > 0):
        problems.append(f"timeout must be a positive number of seconds or None, got {timeout!r}")
    if problems:
        raise ToolDefinitionError(str(name), problems)
    made = DeclaredTool(
        name=name,
        description=description,
        input_schema=schema,
        handler=handler,
        kind=tool_kind,
        groups=tuple(str(g).strip().lower() for g in groups),
        optional=optional,
        timeout=float(timeout) if timeout is not None else None,
        requires_approval=requires_approval,
        output_schema=output_schema,
        param_aliases=param_aliases,
    )
    made.idempotent = idempotent
    made.defer_loading = defer_loading
    return made
