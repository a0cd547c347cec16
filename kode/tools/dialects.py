"""Provider dialects: one inferred JSON schema, translated for Anthropic, OpenAI and Gemini.

This module owns the rules that make a schema acceptable to each provider (documented, rule by
rule, in ``docs/schemas.md``). It works on plain JSON-schema dicts and never changes its input;
it does not infer schemas (`kode.tools.schema`).
"""

from __future__ import annotations

import copy
import json
import logging
import re
from collections import deque
from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "Dialect",
    "anthropic_declaration",
    "clean_schema",
    "gemini_declaration",
    "gemini_schema",
    "OPENAI_STRICT_LIMITS",
    "openai_declaration",
    "openai_strict_limit",
    "openai_strict_schema",
    "strip_titles",
]

Dialect = Literal["anthropic", "openai", "gemini"]
"""A provider whose tool-declaration format kode can produce."""

JsonSchema = dict[str, Any]

_logger = logging.getLogger("kode.tools")

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


def strip_titles(schema: JsonSchema) -> JsonSchema:
    """A copy of a JSON schema without ``title`` in any schema node (properties keep names)."""
    out = copy.deepcopy(schema)
    stack = [out]
    while stack:
        node = stack.pop()
        node.pop("title", None)
        stack.extend(_children(node))
    return out


def clean_schema(schema: JsonSchema) -> JsonSchema:
    """A copy of a pydantic JSON schema without the ``title`` noise, as an object schema.

    Titles are removed from every schema node (not from properties that happen to be named
    ``title``); the top level always has ``type``, ``properties`` and ``required``.
    """
    out = strip_titles(schema)
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

# The keywords OpenAI's strict mode accepts (its structured-outputs guide, "Supported
# schemas"): the structure, and the few constraints it enforces. Every other keyword moves into
# the description as a note (kode still enforces it when it validates the arguments), or is
# dropped when it says nothing to a model (`$schema`, `$id`, `$comment`...).
_STRICT_KEYWORDS = frozenset(
    {
        "type", "description", "title", "properties", "required", "additionalProperties",
        "items", "enum", "const", "anyOf", "allOf", "$ref", "$defs", "definitions",
        "pattern", "format",
        "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum",
        "minItems", "maxItems",
    }
)  # fmt: skip
_STRICT_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
)
# Structures strict mode cannot express: a schema using them is sent with strict off.
_STRICT_BLOCKERS = {
    "prefixItems": "a tuple",
    "patternProperties": "pattern properties",
    "propertyNames": "constrained property names",
    "dependentSchemas": "dependent schemas",
    "not": "a 'not' schema",
    "if": "a conditional schema",
}
# A strict-mode schema node must say what it is with one of these.
_STRICT_TYPED = ("type", "anyOf", "$ref")


class _NotStrict(Exception):
    """Why a schema cannot be sent in strict mode (the message is a noun phrase)."""


def _note(node: JsonSchema, text: str) -> None:
    desc = node.get("description")
    node["description"] = f"{desc} ({text})" if desc else f"({text})"


def _resolve_ref(root: JsonSchema, ref: str) -> JsonSchema:
    if not ref.startswith("#/"):
        raise _NotStrict(f"a reference {ref!r} outside the schema")
    node: Any = root
    try:
        for part in ref[2:].split("/"):
            node = node[part]
    except (KeyError, IndexError, TypeError):
        node = None
    if not isinstance(node, dict):
        raise _NotStrict(f"a reference {ref!r} that does not resolve")
    return node


def _json_type(value: Any) -> str | None:
    """The JSON-schema type of an enum value (bool before int: True is an int in Python)."""
    for python_type, name in (
        (bool, "boolean"),
        (int, "integer"),
        (float, "number"),
        (str, "string"),
        (type(None), "null"),
    ):
        if isinstance(value, python_type):
            return name
    return None


def _type_enum(node: JsonSchema) -> JsonSchema:
    """Give an ``enum``/``const`` without ``type`` one; split a mixed enum into typed branches."""
    if "type" in node:
        return node
    if "const" in node:
        values = [node["const"]]
    elif isinstance(node.get("enum"), list):
        values = list(node["enum"])
    else:
        return node
    by_type: dict[str | None, list[Any]] = {}
    for value in values:
        by_type.setdefault(_json_type(value), []).append(value)
    if None in by_type:
        raise _NotStrict("an enum whose values are not all strings, numbers or booleans")
    if len(by_type) == 1:
        node["type"] = next(iter(by_type))
        return node
    node.pop("enum", None)
    node["anyOf"] = [
        {"type": t} if t == "null" else {"type": t, "enum": v} for t, v in by_type.items()
    ]
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


def _where(path: str) -> str:
    return f" at '{path}'" if path else ""


@dataclass(kw_only=True, frozen=True, slots=True)
class StrictRules:
    """What one provider's strict mode takes (the rules `_strict_node` applies)."""

    provider: str
    """Named in the reasons a schema cannot be strict."""
    keywords: frozenset[str]
    """The keywords strict mode takes; any other moves into the description (or is dropped,
    for ``$``-keywords)."""
    formats: frozenset[str]
    """String formats kept; any other moves into the description."""
    all_required: bool
    """Every property is required, and an optional one becomes nullable (OpenAI); else
    ``required`` and ``default`` stay as they are (Anthropic)."""
    min_items: frozenset[int] | None = None
    """``minItems`` values kept as they are (Anthropic: 0 and 1); any other moves into the
    description. `None`: any value (OpenAI)."""
    plain_patterns: bool = False
    """A ``pattern`` using backreferences, lookaround or word boundaries moves into the
    description (Anthropic's regular expressions have none of them)."""


OPENAI_RULES = StrictRules(
    provider="OpenAI",
    keywords=_STRICT_KEYWORDS,
    formats=_STRICT_FORMATS,
    all_required=True,
)

# Regular-expression features Anthropic's strict mode lacks: \1 (and \k<name>) references,
# lookahead and lookbehind, word boundaries.
_REGEX_UNSUPPORTED = re.compile(r"\\[1-9]|\\k<|\(\?<?[=!]|\\[bB]")


# Notes about bounds read lower first; any other keyword keeps the schema's order.
_NOTE_ORDER = {"minimum": 0, "exclusiveMinimum": 1, "maximum": 2, "exclusiveMaximum": 3}


def _moved(key: str, value: object, rules: StrictRules) -> bool:
    """Whether a keyword leaves a strict schema node (into the description, or dropped)."""
    if key not in rules.keywords:
        return True
    return key == "minItems" and rules.min_items is not None and value not in rules.min_items


def _strict_node(
    node: JsonSchema,
    root: JsonSchema,
    path: str = "",
    unravelling: tuple[str, ...] = (),
    rules: StrictRules = OPENAI_RULES,
) -> JsonSchema:
    for key, what in _STRICT_BLOCKERS.items():
        if key in node:
            raise _NotStrict(what + _where(path))
    ref = node.get("$ref")
    if isinstance(ref, str) and len(node) > 1:
        if ref in unravelling:
            # A recursive model refers to itself with a description: unravelling it again
            # would never end, so this inner reference goes bare.
            node = {"$ref": ref}
        else:
            # Strict mode takes a $ref only on its own: unravel it one level.
            target = copy.deepcopy(_resolve_ref(root, ref))
            rest = {k: v for k, v in node.items() if k != "$ref"}
            node = {**target, **rest}
            unravelling = (*unravelling, ref)
    if isinstance(node.get("allOf"), list) and len(node["allOf"]) == 1:
        only = node.pop("allOf")[0]
        node = {**only, **node}
    if "oneOf" in node:
        # Strict mode refuses oneOf; pydantic writes it for discriminated unions, whose
        # branches exclude each other anyway, so anyOf says the same.
        if "anyOf" in node:
            raise _NotStrict("both anyOf and oneOf" + _where(path))
        node["anyOf"] = node.pop("oneOf")
    node.pop("discriminator", None)
    if rules.all_required:
        node.pop("default", None)
    node = _type_enum(node)
    if not any(key in node for key in _STRICT_TYPED):
        raise _NotStrict("a value of any type (Any)" + _where(path))
    moved = [k for k in node if _moved(k, node[k], rules)]
    for key in sorted(moved, key=lambda k: _NOTE_ORDER.get(k, 9)):
        value = node.pop(key)
        if not key.startswith("$"):  # ($schema, $id, $comment... say nothing to a model)
            _note(node, f"{key}: {json.dumps(value, default=str)}")
    fmt = node.get("format")
    if fmt is not None and fmt not in rules.formats:
        _note(node, f"format: {node.pop('format')}")
    pattern = node.get("pattern")
    if rules.plain_patterns and isinstance(pattern, str) and _REGEX_UNSUPPORTED.search(pattern):
        _note(node, f"pattern: {json.dumps(node.pop('pattern'))}")
    is_object = node.get("type") == "object" or "properties" in node
    if is_object:
        extra = node.get("additionalProperties", False)
        if extra is not False or "properties" not in node:
            raise _NotStrict(
                "a free-form object (a dict, or a model allowing extra keys)" + _where(path)
            )
        required = set(node.get("required", ()))
        props = node["properties"]
        for key, sub in list(props.items()):
            sub = _strict_node(sub, root, f"{path}.{key}" if path else key, unravelling, rules)
            props[key] = sub if key in required or not rules.all_required else _nullable(sub)
        if rules.all_required:
            node["required"] = list(props)
        node["additionalProperties"] = False
    for key in ("anyOf", "allOf"):
        if isinstance(node.get(key), list):
            node[key] = [_strict_node(v, root, path, unravelling, rules) for v in node[key]]
    if isinstance(node.get("items"), dict):
        node["items"] = _strict_node(node["items"], root, f"{path}[]", unravelling, rules)
    if isinstance(node.get("$defs"), dict):
        node["$defs"] = {
            k: _strict_node(v, root, f"$defs.{k}", (), rules) for k, v in node["$defs"].items()
        }
    return node


OPENAI_STRICT_LIMITS = {
    "nesting": 10,
    "properties": 5_000,
    "enum_values": 1_000,
    "names_length": 120_000,
    "large_enum_values": 250,
    "large_enum_length": 15_000,
}
"""OpenAI's documented limits on a strict-mode schema: at most 10 levels of nested objects, 5,000
object properties in all, 1,000 enum values in all, 120,000 characters of property names,
definition names, enum values and const values together, and 15,000 characters of values in
one string enum of more than 250 values."""


def _ref_target(root: JsonSchema, node: JsonSchema) -> tuple[str, JsonSchema] | None:
    ref = node.get("$ref")
    if not isinstance(ref, str):
        return None
    try:
        return ref, _resolve_ref(root, ref)
    except _NotStrict:
        return None


def _nesting_problem(root: JsonSchema) -> str | None:
    """Where objects nest deeper than strict mode allows (the root object is level 1)."""
    limit = OPENAI_STRICT_LIMITS["nesting"]
    # (node, object level of its parent, path, references being followed)
    stack: list[tuple[JsonSchema, int, str, tuple[str, ...]]] = [(root, 0, "", ())]
    while stack:
        node, level, path, following = stack.pop()
        target = _ref_target(root, node)
        if target is not None:
            ref, node = target
            if ref in following:  # a recursive model: strict mode allows it
                continue
            following = (*following, ref)
        if node.get("type") == "object" or "properties" in node:
            level += 1
            if level > limit:
                return (
                    f"objects nested {level} levels deep{_where(path)}, past OpenAI strict "
                    f"mode's limit of {limit} levels"
                )
        props = node.get("properties")
        if isinstance(props, dict):
            for key, sub in props.items():
                if isinstance(sub, dict):
                    stack.append((sub, level, f"{path}.{key}" if path else key, following))
        for key in ("anyOf", "oneOf", "allOf"):
            for sub in node.get(key) or ():
                if isinstance(sub, dict):
                    stack.append((sub, level, path, following))
        for key in ("items", "additionalProperties"):
            sub = node.get(key)
            if isinstance(sub, dict):
                stack.append((sub, level, f"{path}[]", following))
    return None


def _size_problem(root: JsonSchema) -> str | None:
    """Which of strict mode's size limits the schema passes, and where."""
    limits = OPENAI_STRICT_LIMITS
    properties = enum_values = names_length = 0
    first_property = first_enum = ""
    stack: deque[tuple[JsonSchema, str]] = deque([(root, "")])  # in order, to name the first
    while stack:
        node, path = stack.popleft()
        props = node.get("properties")
        if isinstance(props, dict):
            properties += len(props)
            names_length += sum(len(k) for k in props)
            if properties > limits["properties"] and not first_property:
                first_property = path or "the top level"
            for key, sub in props.items():
                if isinstance(sub, dict):
                    stack.append((sub, f"{path}.{key}" if path else key))
        for defs in ("$defs", "definitions"):
            if isinstance(node.get(defs), dict):
                names_length += sum(len(k) for k in node[defs])
                for key, sub in node[defs].items():
                    if isinstance(sub, dict):
                        stack.append((sub, f"{defs}.{key}"))
        values = node.get("enum")
        if isinstance(values, list):
            enum_values += len(values)
            if enum_values > limits["enum_values"] and not first_enum:
                first_enum = path or "the top level"
            texts = [v for v in values if isinstance(v, str)]
            length = sum(len(v) for v in texts)
            names_length += length
            if len(texts) > limits["large_enum_values"] and length > limits["large_enum_length"]:
                return (
                    f"an enum of {len(texts)} strings with {length:,} characters in all"
                    f"{_where(path)}, past OpenAI strict mode's limit of "
                    f"{limits['large_enum_length']:,} characters for an enum of more than "
                    f"{limits['large_enum_values']} values"
                )
        if isinstance(node.get("const"), str):
            names_length += len(node["const"])
        for key in ("anyOf", "oneOf", "allOf"):
            for sub in node.get(key) or ():
                if isinstance(sub, dict):
                    stack.append((sub, path))
        for key in ("items", "additionalProperties"):
            sub = node.get(key)
            if isinstance(sub, dict):
                stack.append((sub, f"{path}[]"))
    if properties > limits["properties"]:
        return (
            f"{properties:,} object properties in all (the limit is passed at "
            f"'{first_property}'), past OpenAI strict mode's limit of {limits['properties']:,}"
        )
    if enum_values > limits["enum_values"]:
        return (
            f"{enum_values:,} enum values in all (the limit is passed at '{first_enum}'), past "
            f"OpenAI strict mode's limit of {limits['enum_values']:,}"
        )
    if names_length > limits["names_length"]:
        return (
            f"{names_length:,} characters of property names, definition names, enum and const "
            f"values, past OpenAI strict mode's limit of {limits['names_length']:,}"
        )
    return None


def openai_strict_limit(schema: JsonSchema) -> str | None:
    """Which of OpenAI's documented strict-mode limits the schema passes, and where, or `None`.

    The limits are `OPENAI_STRICT_LIMITS`. The answer is a noun phrase naming the limit and the
    place, e.g. ``"objects nested 11 levels deep at 'a.b.c.d.e.f.g.h.i.j', past OpenAI strict
    mode's limit of 10 levels"``. Such a schema is sent with strict mode off.
    """
    return _nesting_problem(schema) or _size_problem(schema)


def _strict_or_reason(schema: JsonSchema) -> tuple[JsonSchema | None, str]:
    root = copy.deepcopy(schema)
    try:
        strict = _strict_node(root, root)
    except _NotStrict as exc:
        return None, str(exc)
    limit = openai_strict_limit(strict)
    if limit is not None:
        return None, limit
    return strict, ""


def openai_strict_schema(schema: JsonSchema) -> JsonSchema | None:
    """The schema rewritten for OpenAI strict mode, or `None` when strict mode cannot express it.

    Every object gets ``additionalProperties: false`` and lists all its properties as required;
    a property that was optional becomes nullable (kode treats a ``null`` it receives for such a
    property as "use the default"); ``default`` is removed, a ``$ref`` with siblings is
    unravelled, ``oneOf`` becomes ``anyOf`` and keywords strict mode lacks move into the
    description. Free-form dicts, tuples, pattern properties and values of any type make strict
    mode impossible, and so does a schema past OpenAI's documented limits
    (`openai_strict_limit`).
    """
    return _strict_or_reason(schema)[0]


_SAID: set[str] = set()


def strict_limit_message(name: str, reason: str) -> str:
    """The warning for a tool sent without strict mode because of one of OpenAI's limits."""
    return f"tool {name!r} is sent to OpenAI without strict mode: its schema has {reason}"


def strict_limit_said(message: str) -> bool:
    """Whether this process logged `message` already; from now on, it has."""
    if message in _SAID:
        return True
    _SAID.add(message)
    return False


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
        parameters, reason = _strict_or_reason(schema)
        if parameters is None and strict:
            raise ValueError(
                f"tool {name!r} cannot use OpenAI strict mode: its schema has {reason}"
            )
        if parameters is None and "OpenAI strict mode's limit" in reason:
            # Unlike a dict or a tuple, which strict mode can never take, a limit is passed
            # by a schema that looks strict-ready: say why it is not (once: a declaration is
            # made for every request, and a registry may have said it already).
            message = strict_limit_message(name, reason)
            if not strict_limit_said(message):
                _logger.warning("%s", message)
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
        try:
            target = _resolve_ref(root, ref)
        except _NotStrict:
            target = {}  # pydantic writes no such reference; describe it as "anything"
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
        if len(options) == 1 and isinstance(options[0], dict):
            # `X | None`: describe X itself, with this node's description and default on top
            # of X's own, before any rule runs, so notes the rules add about X are kept.
            rest = {k: v for k, v in node.items() if k != "anyOf"}
            merged = _gemini_node({**options[0], **rest}, root, seen)
            if nullable:
                merged["nullable"] = True
            return merged
        if options:
            node["anyOf"] = [_gemini_node(o, root, seen) for o in options]
        else:
            del node["anyOf"]
    if "prefixItems" in node:
        items = [_gemini_node(o, root, seen) for o in node.pop("prefixItems")]
        node["items"] = items[0] if all(i == items[0] for i in items) else {"anyOf": items}
    elif isinstance(node.get("items"), dict):
        node["items"] = _gemini_node(node["items"], root, seen)
    if isinstance(node.get("properties"), dict):
        node["properties"] = {k: _gemini_node(v, root, seen) for k, v in node["properties"].items()}
        if not node["properties"]:
            del node["properties"]  # Gemini refuses an empty `properties`
    extra = node.get("additionalProperties")
    if "properties" not in node and (extra is True or (isinstance(extra, dict) and extra)):
        # A dict: Gemini cannot describe its values, so say what they are in words.
        value = _gemini_node(extra, root, seen) if isinstance(extra, dict) else {}
        kind = value.get("type") or ("one of several types" if "anyOf" in value else None)
        _note(node, f"an object with any keys; each value: {kind}" if kind else "any keys")
    required = node.get("required")
    if isinstance(required, list):
        # Gemini refuses a required name that is not among the properties (and an empty list
        # says nothing).
        props = node.get("properties", {})
        kept = [r for r in required if r in props]
        if kept:
            node["required"] = kept
        else:
            del node["required"]
    enum = node.get("enum")
    if isinstance(enum, list) and None in enum:
        # Literal["a", None]: Gemini says "or null" with `nullable`, not inside the enum.
        nullable = True
        enum = [v for v in enum if v is not None]
        node["enum"] = enum
        if not enum:
            del node["enum"]
    if isinstance(enum, list) and enum and any(not isinstance(v, str) for v in enum):
        # Gemini's enum holds strings only: say the allowed values in words instead.
        del node["enum"]
        if all(isinstance(v, bool) for v in enum):
            node.setdefault("type", "boolean")
        _note(node, "one of: " + ", ".join(json.dumps(v) for v in enum))
    elif isinstance(enum, list) and enum:
        node.setdefault("type", "string")
    for key, words in (("exclusiveMinimum", ">"), ("exclusiveMaximum", "<")):
        if key in node:
            _note(node, f"{words} {json.dumps(node.pop(key))}")
    if "multipleOf" in node:
        _note(node, f"a multiple of {json.dumps(node.pop('multipleOf'))}")
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
    described in words), ``null`` unions and ``None`` in an enum become ``nullable``,
    ``const`` becomes ``enum``, non-string enums, unsupported keywords and a dict's value type
    move into the description, ``additionalProperties``, ``default`` and ``title`` are
    dropped, and an empty ``properties`` or ``required`` is left out (Gemini refuses them).
    """
    return _gemini_node(schema, schema, ())


def gemini_declaration(name: str, description: str, schema: JsonSchema) -> JsonSchema:
    """The tool as a Gemini ``FunctionDeclaration`` (no ``parameters`` when it takes none)."""
    decl: JsonSchema = {"name": name, "description": description}
    if schema.get("properties"):
        decl["parameters"] = gemini_schema(schema)
    return decl
