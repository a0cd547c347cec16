"""Anthropic strict tool use: a tool's schema in the subset Anthropic's ``strict: true`` takes.

This module owns the Anthropic strict dialect (documented in ``docs/schemas.md``): kode's
strict-schema rules (`kode.tools.dialects`) with Anthropic's differences, and the counts its
request-wide limits are about. It does not decide which tools of a request are sent strict
(`kode.models.anthropic` does, within `ANTHROPIC_STRICT_LIMITS`).
"""

from __future__ import annotations

import copy
from typing import Any

from kode.tools.dialects import (
    _STRICT_KEYWORDS,
    StrictRules,
    _NotStrict,
    _strict_node,
    anthropic_declaration,
)

__all__ = [
    "ANTHROPIC_STRICT_LIMITS",
    "anthropic_strict_counts",
    "anthropic_strict_declaration",
    "anthropic_strict_schema",
]

JsonSchema = dict[str, Any]

ANTHROPIC_RULES = StrictRules(
    provider="Anthropic",
    # OpenAI's keywords but the numeric bounds and maxItems (minItems only as 0 or 1), and
    # with ``default``, which Anthropic keeps (every property need not be required).
    keywords=(
        _STRICT_KEYWORDS
        - {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "maxItems"}
    )
    | {"default"},
    formats=frozenset(
        {
            "date-time",
            "time",
            "date",
            "duration",
            "email",
            "hostname",
            "uri",
            "ipv4",
            "ipv6",
            "uuid",
        }
    ),
    all_required=False,
    min_items=frozenset({0, 1}),
    plain_patterns=True,
)

ANTHROPIC_STRICT_LIMITS = {"tools": 20, "optional": 24, "unions": 16}
"""Anthropic's documented limits on the strict tools of one request: at most 20 strict tools,
24 optional parameters and 16 parameters with a union type (``anyOf`` or a list of types)
across all their schemas."""


def _refs(node: Any) -> set[str]:
    """The local ``$ref`` names (``#/$defs/X`` → ``X``) anywhere inside `node`."""
    found: set[str] = set()
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            ref = item.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                found.add(ref[len("#/$defs/") :])
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


def _recursive_definition(root: JsonSchema) -> str | None:
    """The name of a definition that refers back to itself, directly or not (or `None`)."""
    defs = root.get("$defs")
    if not isinstance(defs, dict):
        return None
    graph: dict[str, set[str]] = {str(name): _refs(node) for name, node in defs.items()}
    for start in graph:
        seen: set[str] = set()
        stack: list[str] = list(graph[start])
        while stack:
            name = stack.pop()
            if name == start:
                return start
            if name not in seen and name in graph:
                seen.add(name)
                stack.extend(graph[name])
    return None


def anthropic_strict_counts(schema: JsonSchema) -> tuple[int, int]:
    """How many optional parameters and parameters with a union type a strict schema has.

    Every object the schema reaches counts, nested ones and the ``$defs`` it refers to (each
    definition once, however often it is referred to): a property not in its object's
    ``required`` is optional, and a schema node with an ``anyOf`` or a list of types is a
    union. These are the counts `ANTHROPIC_STRICT_LIMITS` bounds across a request.
    """
    found = schema.get("$defs")
    defs: dict[str, Any] = found if isinstance(found, dict) else {}
    optional = unions = 0
    followed: set[str] = set()
    stack: list[Any] = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
            continue
        if not isinstance(node, dict):
            continue
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/") and ref not in followed:
            followed.add(ref)
            stack.append(defs.get(ref[len("#/$defs/") :]))
        props = node.get("properties")
        if isinstance(props, dict):
            required = set(node.get("required") or ())
            optional += sum(1 for key in props if key not in required)
        if isinstance(node.get("anyOf"), list) or isinstance(node.get("type"), list):
            unions += 1
        for key, value in node.items():
            if key not in ("$defs", "enum", "const", "default", "examples"):
                stack.append(value)
    return optional, unions


def _strict_or_reason(schema: JsonSchema) -> tuple[JsonSchema | None, str]:
    root = copy.deepcopy(schema)
    recursive = _recursive_definition(root)
    if recursive is not None:
        return None, f"a recursive model ({recursive!r} contains itself)"
    try:
        strict = _strict_node(root, root, rules=ANTHROPIC_RULES)
    except _NotStrict as exc:
        return None, str(exc)
    optional, unions = anthropic_strict_counts(strict)
    limits = ANTHROPIC_STRICT_LIMITS
    if optional > limits["optional"]:
        return None, (
            f"{optional} optional parameters, past Anthropic strict mode's limit of "
            f"{limits['optional']} in a request"
        )
    if unions > limits["unions"]:
        return None, (
            f"{unions} parameters with a union type, past Anthropic strict mode's limit of "
            f"{limits['unions']} in a request"
        )
    return strict, ""


def anthropic_strict_schema(schema: JsonSchema) -> JsonSchema | None:
    """The schema rewritten for Anthropic strict tool use, or `None` when it cannot be.

    Every object is closed (``additionalProperties: false``); ``required`` and ``default``
    stay as they are; a ``$ref`` with siblings is unravelled, ``oneOf`` becomes ``anyOf``, and
    keywords Anthropic's strict mode lacks (numeric bounds, string lengths, ``minItems`` other
    than 0 or 1, ``maxItems``, unknown formats, patterns with lookaround or backreferences)
    move into the description. Free-form dicts, tuples, values of any type, recursive models,
    and a schema past `ANTHROPIC_STRICT_LIMITS` on its own make it impossible.
    """
    return _strict_or_reason(schema)[0]


def anthropic_strict_declaration(name: str, description: str, schema: JsonSchema) -> JsonSchema:
    """The tool in the Anthropic format with ``strict: true`` and its schema made strict.

    Raises:
        ValueError: the schema cannot be made strict; the message says why.
    """
    strict, reason = _strict_or_reason(schema)
    if strict is None:
        raise ValueError(f"tool {name!r} cannot use Anthropic strict mode: its schema has {reason}")
    decl = anthropic_declaration(name, description, strict)
    decl["strict"] = True
    return decl
