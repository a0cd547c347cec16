"""Provider dialects: one inferred JSON schema, translated for Anthropic, OpenAI and Gemini.

This module owns the rules that make a schema acceptable to each provider (documented, rule by
rule, in ``docs/schemas.md``). It works on plain JSON-schema dicts and never changes its input;
it does not infer schemas (`kode.tools.schema`).
"""

from __future__ import annotations

import copy
from typing import Any, Literal

__all__ = [
    "Dialect",
    "anthropic_declaration",
    "clean_schema",
    "gemini_declaration",
    "gemini_schema",
    "openai_declaration",
    "openai_strict_schema",
]

Dialect = Literal["anthropic", "openai", "gemini"]
"""A provider whose tool-declaration format kode can produce."""

JsonSchema = dict[str, Any]

_SCHEMA_MAPS = ("properties", "$defs", "definitions", "patternProperties", "dependentSchemas")
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SCHEMA_ONE = ("items", "not", "if", "then", "else", "additionalProperties", "contains")


def _children(node: JsonSchema) -> list[JsonSchema]:
    out: list[JsonSchema] = []
    for key in _SCHEMA_MAPS:
        value = node.get(key)
        if isinstance(value, dict):
            out.extend(v for v in value.values() if isinstance(v, dict))
    for key in _SCHEMA_LISTS:
        value = node.get(key)
        if isinstance(value, list):
            out.extend(v for v in value if isinstance(v, dict))
    for key in _SCHEMA_ONE:
        value = node.get(key)
        if isinstance(value, dict):
            out.append(value)
    return out


def clean_schema(schema: JsonSchema) -> JsonSchema:
    """A copy of a pydantic JSON schema without the ``title`` noise, as an object schema.

    Titles are removed from every schema node (not from properties that happen to be named
    ``title``); the top level always has ``type``, ``properties`` and ``required``.
    """
    out = copy.deepcopy(schema)
    stack = [out]
    while stack:
        node = stack.pop()
        node.pop("title", None)
        stack.extend(_children(node))
    out.setdefault("type", "object")
    out.setdefault("properties", {})
    out.setdefault("required", [])
    return out


def anthropic_declaration(name: str, description: str, schema: JsonSchema) -> JsonSchema:
    """The tool in the Anthropic Messages API format (``input_schema`` is JSON Schema as is)."""
    decl: JsonSchema = {"name": name, "input_schema": copy.deepcopy(schema)}
    if description:
        decl["description"] = description
    return decl


# --- OpenAI -------------------------------------------------------------------------------

# Keywords that OpenAI's strict mode does not accept: their meaning moves into the description
# (kode still enforces them when it validates the arguments).
_STRICT_UNSUPPORTED = (
    "minLength",
    "maxLength",
    "uniqueItems",
    "minProperties",
    "maxProperties",
    "contentEncoding",
    "contentMediaType",
)
_STRICT_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
)
# Structures strict mode cannot express: a schema using them is sent with strict off.
_STRICT_BLOCKERS = ("prefixItems", "patternProperties", "propertyNames", "dependentSchemas")


class _NotStrict(Exception):
    pass


def _note(node: JsonSchema, text: str) -> None:
    desc = node.get("description")
    node["description"] = f"{desc} ({text})" if desc else f"({text})"


def _resolve_ref(root: JsonSchema, ref: str) -> JsonSchema:
    if not ref.startswith("#/"):
        raise _NotStrict(ref)
    node: Any = root
    for part in ref[2:].split("/"):
        node = node[part]
    if not isinstance(node, dict):
        raise _NotStrict(ref)
    return node


def _is_nullable(node: JsonSchema) -> bool:
    t = node.get("type")
    if t == "null" or (isinstance(t, list) and "null" in t):
        return True
    return any(_is_nullable(v) for v in node.get("anyOf", ()) if isinstance(v, dict))


def _nullable(node: JsonSchema) -> JsonSchema:
    if _is_nullable(node):
        return node
    desc = node.pop("description", None)
    wrapped: JsonSchema = {"anyOf": [node, {"type": "null"}]}
    if desc:
        wrapped["description"] = desc
    return wrapped


def _strict_node(node: JsonSchema, root: JsonSchema) -> JsonSchema:
    for key in _STRICT_BLOCKERS:
        if key in node:
            raise _NotStrict(key)
    if "$ref" in node and len(node) > 1:
        # Strict mode takes a $ref only on its own: unravel it one level.
        target = copy.deepcopy(_resolve_ref(root, node["$ref"]))
        rest = {k: v for k, v in node.items() if k != "$ref"}
        node = {**target, **rest}
    if isinstance(node.get("allOf"), list) and len(node["allOf"]) == 1:
        only = node.pop("allOf")[0]
        node = {**only, **node}
    node.pop("default", None)
    for key in _STRICT_UNSUPPORTED:
        if key in node:
            _note(node, f"{key}: {node.pop(key)}")
    fmt = node.get("format")
    if fmt is not None and fmt not in _STRICT_FORMATS:
        _note(node, f"format: {node.pop('format')}")
    is_object = node.get("type") == "object" or "properties" in node
    if is_object:
        extra = node.get("additionalProperties", False)
        if extra is not False or "properties" not in node:
            raise _NotStrict("open object")
        required = set(node.get("required", ()))
        props = node["properties"]
        for key, sub in list(props.items()):
            sub = _strict_node(sub, root)
            props[key] = sub if key in required else _nullable(sub)
        node["required"] = list(props)
        node["additionalProperties"] = False
    for key in ("anyOf", "oneOf", "allOf"):
        if isinstance(node.get(key), list):
            node[key] = [_strict_node(v, root) for v in node[key]]
    if isinstance(node.get("items"), dict):
        node["items"] = _strict_node(node["items"], root)
    if isinstance(node.get("$defs"), dict):
        node["$defs"] = {k: _strict_node(v, root) for k, v in node["$defs"].items()}
    return node


def openai_strict_schema(schema: JsonSchema) -> JsonSchema | None:
    """The schema rewritten for OpenAI strict mode, or `None` when strict mode cannot express it.

    Every object gets ``additionalProperties: false`` and lists all its properties as required;
    a property that was optional becomes nullable (kode treats a ``null`` it receives for such a
    property as "use the default"). Free-form dicts, tuples and pattern properties make strict
    mode impossible.
    """
    root = copy.deepcopy(schema)
    try:
        return _strict_node(root, root)
    except (_NotStrict, KeyError):
        return None


def openai_declaration(
    name: str, description: str, schema: JsonSchema, *, strict: bool | None = None
) -> JsonSchema:
    """The tool in the OpenAI Chat Completions format.

    Args:
        name: The tool's name.
        description: The tool's description.
        schema: The tool's cleaned input schema.
        strict: `None` uses strict mode when the schema allows it; `True` requires it (a
            `ValueError` says why it is impossible); `False` turns it off.
    """
    parameters: JsonSchema | None = None
    if strict is not False:
        parameters = openai_strict_schema(schema)
        if parameters is None and strict:
            raise ValueError(
                f"tool {name!r} cannot use OpenAI strict mode: its schema has a free-form "
                "object (dict), a tuple or pattern properties"
            )
    use_strict = parameters is not None
    function: JsonSchema = {
        "name": name,
        "description": description,
        "parameters": parameters if parameters is not None else copy.deepcopy(schema),
        "strict": use_strict,
    }
    return {"type": "function", "function": function}


# --- Gemini -------------------------------------------------------------------------------

_GEMINI_KEYS = frozenset(
    {
        "type",
        "format",
        "description",
        "nullable",
        "enum",
        "items",
        "properties",
        "required",
        "minItems",
        "maxItems",
        "minLength",
        "maxLength",
        "pattern",
        "minimum",
        "maximum",
        "anyOf",
        "minProperties",
        "maxProperties",
        "propertyOrdering",
    }
)
_GEMINI_FORMATS = {
    "string": {"date-time", "enum"},
    "number": {"float", "double"},
    "integer": {"int32", "int64"},
}


def _gemini_node(node: JsonSchema, root: JsonSchema, seen: tuple[str, ...]) -> JsonSchema:
    node = dict(node)
    ref = node.pop("$ref", None)
    if isinstance(ref, str):
        if ref in seen:
            name = ref.rsplit("/", 1)[-1]
            stub: JsonSchema = {"type": "object"}
            _note(stub, f"a nested {name}; deeper nesting is not described")
            if "description" in node:
                stub["description"] = f"{node['description']} {stub['description']}"
            return stub
        target = _resolve_ref(root, ref)
        node = {**target, **node}
        seen = (*seen, ref)
    if isinstance(node.get("allOf"), list) and len(node["allOf"]) == 1:
        node = {**node.pop("allOf")[0], **node}
        return _gemini_node(node, root, seen)
    if "const" in node:
        node["enum"] = [node.pop("const")]
    if "oneOf" in node:
        node["anyOf"] = node.pop("oneOf")
    nullable = False
    t = node.get("type")
    if isinstance(t, list):
        nullable = "null" in t
        kinds = [x for x in t if x != "null"]
        node["type"] = kinds[0] if len(kinds) == 1 else None
        if node["type"] is None:
            del node["type"]
            node["anyOf"] = [{"type": k} for k in kinds]
    elif t == "null":
        node.pop("type")
        nullable = True
    if isinstance(node.get("anyOf"), list):
        options = [
            o for o in node["anyOf"] if not (isinstance(o, dict) and o.get("type") == "null")
        ]
        if len(options) < len(node["anyOf"]):
            nullable = True
        if len(options) == 1:
            del node["anyOf"]
            merged = _gemini_node(options[0], root, seen)
            desc = node.get("description") or merged.get("description")
            node = {**merged, **{k: v for k, v in node.items() if k != "description"}}
            if desc:
                node["description"] = desc
        else:
            node["anyOf"] = [_gemini_node(o, root, seen) for o in options]
    if "prefixItems" in node:
        items = [_gemini_node(o, root, seen) for o in node.pop("prefixItems")]
        node["items"] = items[0] if all(i == items[0] for i in items) else {"anyOf": items}
    elif isinstance(node.get("items"), dict):
        node["items"] = _gemini_node(node["items"], root, seen)
    if isinstance(node.get("properties"), dict):
        node["properties"] = {k: _gemini_node(v, root, seen) for k, v in node["properties"].items()}
        if not node["properties"]:
            del node["properties"]
    enum = node.get("enum")
    if isinstance(enum, list) and any(not isinstance(v, str) for v in enum):
        # Gemini's enum holds strings only: say the allowed values in words instead.
        del node["enum"]
        if all(isinstance(v, bool) for v in enum):
            node.setdefault("type", "boolean")
        _note(node, "one of: " + ", ".join(repr(v) for v in enum))
    elif isinstance(enum, list):
        node.setdefault("type", "string")
    for key, words in (("exclusiveMinimum", ">"), ("exclusiveMaximum", "<")):
        if key in node:
            _note(node, f"{words} {node.pop(key)}")
    if "multipleOf" in node:
        _note(node, f"a multiple of {node.pop('multipleOf')}")
    if node.get("uniqueItems"):
        _note(node, "items must be unique")
    fmt = node.get("format")
    if fmt is not None and fmt not in _GEMINI_FORMATS.get(str(node.get("type")), ()):
        _note(node, f"format: {node.pop('format')}")
    if nullable:
        node["nullable"] = True
    return {k: v for k, v in node.items() if k in _GEMINI_KEYS}


def gemini_schema(schema: JsonSchema) -> JsonSchema:
    """The schema rewritten in Gemini's OpenAPI subset.

    ``$ref``/``$defs`` are inlined (a recursive reference is cut at its second visit and
    described in words), ``null`` unions become ``nullable``, ``const`` becomes ``enum``,
    non-string enums and unsupported keywords move into the description, and
    ``additionalProperties``, ``default`` and ``title`` are dropped.
    """
    return _gemini_node(schema, schema, ())


def gemini_declaration(name: str, description: str, schema: JsonSchema) -> JsonSchema:
    """The tool as a Gemini ``FunctionDeclaration`` (no ``parameters`` when it takes none)."""
    decl: JsonSchema = {"name": name, "description": description}
    if schema.get("properties"):
        decl["parameters"] = gemini_schema(schema)
    return decl
