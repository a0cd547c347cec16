"""Making an MCP server's input schemas acceptable to every provider kode speaks.

This module owns `clean_remote_schema`: a remote tool's ``inputSchema`` may be any JSON Schema
(draft 7 or 2020-12, from any generator), while providers accept subsets of it. The cleaning
here removes what no provider needs and fixes what some providers refuse; what is left is then
translated per provider by `kode.tools.dialects` exactly as for a decorated function (``$defs``
inlined and type arrays made ``nullable`` for Gemini, strict mode for OpenAI when possible).

The result is a new dict; the input is never changed. Cleaning only ever loosens a schema
(a constraint that cannot be kept is described in words), so arguments valid for the server
stay valid for kode's own check.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

from kode.tools.dialects import strip_titles

__all__ = ["clean_remote_schema"]

JsonSchema = dict[str, Any]

# Keywords that identify or annotate a schema document and mean nothing to a model.
_DOCUMENT_KEYS = ("$schema", "$id", "$anchor", "$dynamicAnchor", "$comment", "$vocabulary")
# Keywords whose value is a map of subschemas, a list of subschemas, or one subschema.
_MAPS = ("properties", "patternProperties", "$defs", "dependentSchemas")
_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_ONE = (
    "items",
    "additionalProperties",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
    "additionalItems",
)
# 2020-12 keywords without a counterpart in any provider's subset: dropped (only loosens).
_DROPPED = ("$dynamicRef", "unevaluatedItems", "unevaluatedProperties", "additionalItems")
# Combinators a provider refuses at the top level of a function's parameters.
_ROOT_COMBINATORS = ("anyOf", "oneOf", "allOf", "not", "if", "then", "else", "enum", "const")


def _note(node: JsonSchema, text: str) -> None:
    desc = node.get("description")
    node["description"] = f"{desc} ({text})" if isinstance(desc, str) and desc else f"({text})"


def _subschema(value: Any) -> Any:
    """A boolean schema as an object schema: ``true`` accepts anything, ``false`` nothing."""
    if value is True:
        return {}
    if value is False:
        return {"not": {}}
    return value


class _Cleaner:
    def __init__(self, root: JsonSchema) -> None:
        self.root = root

    def resolves(self, ref: str) -> bool:
        if not ref.startswith("#/"):
            return ref == "#"
        node: Any = self.root
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            if isinstance(node, Mapping) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                return False
        return isinstance(node, Mapping)

    def node(self, node: Any) -> Any:
        node = _subschema(node)
        if not isinstance(node, dict):
            return node
        for key in _DOCUMENT_KEYS:
            node.pop(key, None)
        for key in _DROPPED:
            node.pop(key, None)
        if "definitions" in node and "$defs" not in node:
            node["$defs"] = node.pop("definitions")
        ref = node.get("$ref")
        if isinstance(ref, str):
            ref = ref.replace("#/definitions/", "#/$defs/")
            if ref == "#":
                # The whole schema again (a recursive root): say so instead.
                node.pop("$ref")
                node.setdefault("type", "object")
                _note(node, "the same structure as the whole arguments object")
            elif self.resolves(ref):
                node["$ref"] = ref
            else:
                node.pop("$ref")
                _note(node, f"described by {ref}, which is not included")
        elif ref is not None:
            node.pop("$ref")
        t = node.get("type")
        if isinstance(t, list):
            kinds = [k for k in t if isinstance(k, str)]
            node["type"] = kinds[0] if len(kinds) == 1 else kinds
            if not kinds:
                node.pop("type")
        elif t is not None and not isinstance(t, str):
            node.pop("type")
        if "dependentRequired" in node:
            deps = node.pop("dependentRequired")
            if isinstance(deps, Mapping):
                words = "; ".join(
                    f"with '{k}', also give {', '.join(repr(x) for x in v)}"
                    for k, v in deps.items()
                    if isinstance(v, list)
                )
                if words:
                    _note(node, words)
        for key in _MAPS:
            value = node.get(key)
            if isinstance(value, Mapping):
                node[key] = {str(k): self.node(v) for k, v in value.items()}
            elif value is not None:
                node.pop(key)
        for key in _LISTS:
            value = node.get(key)
            if isinstance(value, list):
                node[key] = [self.node(v) for v in value]
            elif value is not None:
                node.pop(key)
        for key in _ONE:
            if key not in node:
                continue
            value = node[key]
            if key == "items" and isinstance(value, list):
                # draft 7 tuple form: 2020-12 spells it prefixItems
                node.pop("items")
                node["prefixItems"] = [self.node(v) for v in value]
            elif isinstance(value, bool) and key == "additionalProperties":
                # Every dialect reads a boolean here: `false` is what makes an object closed
                # (OpenAI strict mode, kode's own message for an unknown key), so it stays.
                continue
            elif isinstance(value, dict | bool):
                node[key] = self.node(value)
            else:
                node.pop(key)
        required = node.get("required")
        if required is not None and not (
            isinstance(required, list) and all(isinstance(r, str) for r in required)
        ):
            node.pop("required")
        return node


def clean_remote_schema(schema: Any) -> JsonSchema:
    """A remote tool's input schema, cleaned for every provider (a new dict).

    - document keywords (``$schema``, ``$comment``, ``$anchor``, ...) and titles are removed;
    - draft 7 ``definitions`` become ``$defs`` (and their references follow), the draft 7
      tuple form of ``items`` becomes ``prefixItems``;
    - boolean subschemas become object schemas (``true`` → ``{}``, ``false`` → ``{"not": {}}``),
      except ``additionalProperties``, whose boolean every dialect reads (``false`` keeps an
      object closed, so OpenAI strict mode stays on and an unknown key gets kode's message);
    - a ``$ref`` that does not resolve inside the schema (another document, a typo) becomes
      an unconstrained value with a note; ``$dynamicRef``, ``unevaluated*`` and
      ``additionalItems`` are dropped and ``dependentRequired`` is described in words;
    - malformed keyword values (a ``required`` that is not a list of names, a ``type`` that is
      not a string or a list of strings) are removed;
    - the top level is an object schema with ``properties``: combinators there
      (``anyOf``, ``oneOf``, ``allOf``, ``not``, ``if``/``then``/``else``, ``enum``, ``const``)
      are refused as function parameters by OpenAI, so an ``allOf`` of objects is merged and
      the others are described in the description.

    Example:
        ```python
        from kode.mcp.schemas import clean_remote_schema

        schema = clean_remote_schema({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "properties": {"when": {"$ref": "#/definitions/Date"}, "any": True},
            "definitions": {"Date": {"type": "string", "format": "date"}},
        })
        assert schema["properties"] == {"when": {"$ref": "#/$defs/Date"}, "any": {}}
        assert schema["$defs"] == {"Date": {"type": "string", "format": "date"}}
        ```
    """
    root: JsonSchema = copy.deepcopy(dict(schema)) if isinstance(schema, Mapping) else {}
    root = strip_titles(_Cleaner(root).node(root))
    all_of = root.pop("allOf", None)
    if isinstance(all_of, list):
        merged_props: dict[str, Any] = {}
        merged_required: list[str] = []
        leftover: list[Any] = []
        for part in all_of:
            if isinstance(part, dict) and set(part) <= {
                "type",
                "properties",
                "required",
                "description",
                "additionalProperties",
            }:
                merged_props.update(part.get("properties") or {})
                merged_required.extend(part.get("required") or [])
            else:
                leftover.append(part)
        if merged_props:
            root["properties"] = {**merged_props, **(root.get("properties") or {})}
            root["required"] = list(dict.fromkeys([*merged_required, *root.get("required", [])]))
        if leftover:
            root["allOf"] = leftover
    for key in ("anyOf", "oneOf"):
        branches = root.get(key)
        if not isinstance(branches, list) or not branches:
            continue
        if not all(isinstance(b, dict) and isinstance(b.get("properties"), dict) for b in branches):
            continue
        # Alternative sets of arguments: offer every property, require what all forms require.
        props: dict[str, Any] = {}
        for branch in branches:
            for prop, sub in branch["properties"].items():
                props.setdefault(prop, sub)
        common = set.intersection(*(set(b.get("required") or []) for b in branches))
        root["properties"] = {**props, **(root.get("properties") or {})}
        root["required"] = [
            *[r for r in root.get("required", []) if r in root["properties"]],
            *sorted(r for r in common if r not in root.get("required", [])),
        ]
        forms = " | ".join(
            "{" + ", ".join(b.get("required") or list(b["properties"])) + "}" for b in branches
        )
        root.pop(key)
        _note(root, f"{'one' if key == 'oneOf' else 'at least one'} of these forms: {forms}")
    for key in _ROOT_COMBINATORS:
        if key in root:
            value = root.pop(key)
            _note(root, f"the arguments must also satisfy {key}: {json.dumps(value)[:300]}")
    if root.get("type") != "object":
        root["type"] = "object"
    if not isinstance(root.get("properties"), dict):
        root["properties"] = {}
    return root
