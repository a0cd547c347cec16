"""Remote input schemas, cleaned so that every provider dialect accepts them."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from kode.mcp.schemas import clean_remote_schema
from kode.tools.declared import declare_tool

# What Gemini's OpenAPI subset allows in a schema node.
GEMINI_KEYS = {
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
ROOT_COMBINATORS = {"anyOf", "oneOf", "allOf", "not", "enum", "const", "if", "then", "else"}

SCHEMAS: dict[str, Any] = {
    "draft 7 with definitions and tuple items": {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {
            "tags": {"type": "array", "items": [{"type": "string"}, {"type": "integer"}]},
            "node": {"$ref": "#/definitions/Node"},
        },
        "definitions": {
            "Node": {
                "type": "object",
                "title": "Node",
                "properties": {
                    "child": {"$ref": "#/definitions/Node"},
                    "name": {"type": ["string", "null"]},
                },
            }
        },
    },
    "2020-12 keywords": {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "urn:example:args",
        "$comment": "generated",
        "type": "object",
        "properties": {
            "pair": {
                "type": "array",
                "prefixItems": [{"type": "number"}, {"type": "number"}],
                "unevaluatedItems": False,
            },
            "mode": {"const": "fast"},
            "anything": True,
            "nothing": False,
            "elsewhere": {"$ref": "https://example.com/schemas/other.json"},
            "dynamic": {"$dynamicRef": "#meta"},
            "size": {"type": "integer", "exclusiveMinimum": 0, "multipleOf": 2},
        },
        "dependentRequired": {"a": ["b"]},
        "unevaluatedProperties": False,
    },
    "alternative argument sets": {
        "oneOf": [
            {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]},
            {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
        ]
    },
    "allOf of objects": {
        "allOf": [
            {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
            {"properties": {"b": {"type": "integer"}}},
        ]
    },
    "no schema at all": {},
    "malformed keywords": {
        "type": "object",
        "properties": {"x": {"type": 5}, "y": {"type": ["string", 7]}},
        "required": "x",
    },
    "a property called title": {
        "type": "object",
        "title": "Args",
        "properties": {"title": {"type": "string", "title": "Title"}},
        "required": ["title"],
    },
}


def gemini_nodes(node: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if isinstance(node, dict):
        out.append(node)
        for key, value in node.items():
            if key == "properties":
                for sub in value.values():
                    out.extend(gemini_nodes(sub))
            elif key == "items":
                out.extend(gemini_nodes(value))
            elif key == "anyOf":
                for sub in value:
                    out.extend(gemini_nodes(sub))
    return out


@pytest.mark.parametrize("name", list(SCHEMAS))
def test_every_dialect_accepts_a_cleaned_schema(name: str) -> None:
    original = SCHEMAS[name]
    cleaned = clean_remote_schema(original)
    assert cleaned is not original
    jsonschema.Draft202012Validator.check_schema(cleaned)
    assert cleaned["type"] == "object" and isinstance(cleaned["properties"], dict)
    assert not ROOT_COMBINATORS & set(cleaned)
    assert "$schema" not in cleaned and "$id" not in cleaned and "title" not in cleaned
    tool = declare_tool("t", description="A tool.", input_schema=cleaned)

    anthropic = tool.schema("anthropic")["input_schema"]
    assert anthropic["type"] == "object"

    openai = tool.schema("openai")["function"]["parameters"]
    assert openai["type"] == "object" and not ROOT_COMBINATORS & set(openai)

    gemini = tool.schema("gemini").get("parameters", {"type": "object"})
    assert "$ref" not in str(gemini) and "$defs" not in gemini
    for node in gemini_nodes(gemini):
        assert set(node) <= GEMINI_KEYS, f"{set(node) - GEMINI_KEYS} in {node}"
        assert not isinstance(node.get("type"), list)


def test_cleaning_only_loosens() -> None:
    # what the server accepts, kode's own check of the cleaned schema accepts too
    for name, args in [
        ("draft 7 with definitions and tuple items", {"tags": ["a", 1], "node": {"name": None}}),
        ("2020-12 keywords", {"pair": [1, 2], "mode": "fast", "anything": [1], "size": 4}),
        ("alternative argument sets", {"id": 7}),
        ("alternative argument sets", {"name": "x"}),
        ("allOf of objects", {"a": "x", "b": 2}),
    ]:
        original = SCHEMAS[name]
        jsonschema.validate(args, original)
        jsonschema.validate(args, clean_remote_schema(original))


def test_what_is_renamed_and_described() -> None:
    draft7 = clean_remote_schema(SCHEMAS["draft 7 with definitions and tuple items"])
    assert draft7["properties"]["node"] == {"$ref": "#/$defs/Node"}
    assert draft7["properties"]["tags"]["prefixItems"] == [{"type": "string"}, {"type": "integer"}]
    assert "title" not in draft7["$defs"]["Node"]

    modern = clean_remote_schema(SCHEMAS["2020-12 keywords"])
    props = modern["properties"]
    assert props["anything"] == {} and props["nothing"] == {"not": {}}
    assert props["elsewhere"] == {
        "description": "(described by https://example.com/schemas/other.json, which is not "
        "included)"
    }
    assert props["dynamic"] == {}
    assert "unevaluatedItems" not in props["pair"] and "unevaluatedProperties" not in modern
    assert modern["description"] == "(with 'a', also give 'b')"

    forms = clean_remote_schema(SCHEMAS["alternative argument sets"])
    assert forms["properties"] == {"id": {"type": "integer"}, "name": {"type": "string"}}
    assert forms["required"] == []
    assert forms["description"] == "(one of these forms: {id} | {name})"

    merged = clean_remote_schema(SCHEMAS["allOf of objects"])
    assert merged["properties"] == {"a": {"type": "string"}, "b": {"type": "integer"}}
    assert merged["required"] == ["a"]

    titled = clean_remote_schema(SCHEMAS["a property called title"])
    assert titled["properties"] == {"title": {"type": "string"}}
    assert titled["required"] == ["title"]

    assert clean_remote_schema(None) == {"type": "object", "properties": {}}
