"""Python stubs of an agent's tools, made from their JSON Schemas, for ``code_run``'s prompt.

This module owns `function_name` (a tool's name as a Python function: characters a name cannot
hold become ``_``, a keyword gets a trailing ``_``), `stub` (one tool as a ``def`` with
keyword-only parameters, their types, defaults and descriptions, and the tool's description as
its docstring) and `stubs` (the tools a script may call, sorted by name, each once). The same
schema always gives the same text. A script calls the functions; the harness
(`kode.builtin.code._harness`) sends each call to kode.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Iterable
from typing import Any

__all__ = ["function_name", "python_type", "stub", "stubs"]

_NOT_NAME = re.compile(r"\W")
_SIMPLE = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}


def function_name(tool_name: str) -> str:
    """The Python name of a tool's function (``my-tool`` → ``my_tool``, ``class`` → ``class_``)."""
    name = _NOT_NAME.sub("_", tool_name)
    if not name or name[0].isdigit():
        name = f"_{name}"
    return f"{name}_" if keyword.iskeyword(name) else name


def python_type(schema: Any, defs: dict[str, Any] | None = None, depth: int = 0) -> str:
    """The Python annotation (text) of a JSON Schema: ``str``, ``list[int]``, ``Literal[...]``."""
    if not isinstance(schema, dict) or depth > 6:
        return "Any"
    defs = defs or {}
    if "$ref" in schema and isinstance(schema["$ref"], str):
        target = defs.get(schema["$ref"].rsplit("/", 1)[-1])
        return python_type(target, defs, depth + 1) if target is not None else "dict[str, Any]"
    if "enum" in schema and isinstance(schema["enum"], list):
        return f"Literal[{', '.join(repr(v) for v in schema['enum'])}]"
    if "const" in schema:
        return f"Literal[{schema['const']!r}]"
    for union in ("anyOf", "oneOf"):
        options = schema.get(union)
        if isinstance(options, list) and options:
            parts: list[str] = []
            for option in options:
                text = python_type(option, defs, depth + 1)
                if text not in parts:
                    parts.append(text)
            return " | ".join(parts)
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(python_type({**schema, "type": k}, defs, depth + 1) for k in kind)
    if kind in _SIMPLE:
        return _SIMPLE[kind]
    if kind == "array":
        return f"list[{python_type(schema.get('items'), defs, depth + 1)}]"
    if kind == "object":
        extra = schema.get("additionalProperties")
        value = python_type(extra, defs, depth + 1) if isinstance(extra, dict) else "Any"
        return f"dict[str, {value}]"
    return "Any"


def _safe(text: str) -> str:
    """`text` fit for a docstring: no backslash escapes, no closing quotes."""
    return text.replace("\\", "\\\\").replace('"""', "'''")


def _one_line(text: Any) -> str:
    return " ".join(str(text).split())


def stub(name: str, description: str, schema: dict[str, Any]) -> str:
    """The ``def`` of one tool: keyword-only parameters, its description as the docstring.

    A parameter whose name Python cannot take makes the signature ``**arguments: Any``.
    """
    properties: dict[str, Any] = schema.get("properties") or {}
    required = set(schema.get("required") or ())
    defs = {**schema.get("$defs", {}), **schema.get("definitions", {})}
    params: list[str] = []
    documented: list[str] = []
    plain = all(p.isidentifier() and not keyword.iskeyword(p) for p in properties)
    for param, spec in properties.items():
        annotation = python_type(spec, defs)
        if param in required:
            params.append(f"{param}: {annotation}")
        else:
            default = spec.get("default") if isinstance(spec, dict) else None
            params.append(f"{param}: {annotation} = {default!r}")
        if isinstance(spec, dict) and spec.get("description"):
            documented.append(f"        {param}: {_safe(_one_line(spec['description']))}")
    if not plain:
        params = ["**arguments: Any"]
    signature = f"*, {', '.join(params)}" if params and plain else ", ".join(params)
    lines = [f"def {function_name(name)}({signature}) -> str:"]
    doc = [line.rstrip() for line in _safe(description).strip().splitlines()] or [name]
    lines.append(f'    """{doc[0]}')
    lines += [f"    {line}" if line else "" for line in doc[1:]]
    if documented:
        lines += ["", "    Args:", *documented]
    lines.append('    """')
    return "\n".join(lines)


def stubs(tools: Iterable[tuple[str, str, dict[str, Any]]]) -> str:
    """The stubs of `tools` (name, description, input schema), by name, each name once."""
    seen: dict[str, tuple[str, str, dict[str, Any]]] = {}
    for name, description, schema in tools:
        seen.setdefault(name, (name, description, schema))
    return "\n\n".join(stub(*seen[name]) for name in sorted(seen))
