"""The Gemini dialect: its OpenAPI subset, checked node by node on a schema using every type."""

from __future__ import annotations

import copy
import datetime
import decimal
import pathlib
import uuid
from typing import Annotated, Any, Literal

from dialect_types import Box, Color, Level, Node, Options, Pet, Point, make, schema_nodes
from pydantic import Field
from typing_extensions import Doc

from kode import ToolContext
from kode.tools.dialects import gemini_schema


def everything(
    text: str,
    count: int,
    ratio: float,
    flag: bool,
    nothing: None,
    maybe: int | None,
    either: int | str,
    choice: Literal["a", "b"],
    mixed: Literal[1, "one", True],
    color: Color,
    level: Level,
    numbers: list[int],
    pair: tuple[int, str],
    unique: set[str],
    mapping: dict[str, int],
    point: Point,
    box: Box,
    options: Options,
    when: datetime.datetime,
    day: datetime.date,
    ident: uuid.UUID,
    path: pathlib.Path,
    amount: decimal.Decimal,
    tree: Node,
    pet: Pet,
    anything: Any,
    title: Annotated[str, Doc("A property named like a keyword.")],
    bounded: Annotated[int, Field(ge=1, le=10)] = 5,
    word: Annotated[str, Field(min_length=2, pattern="^[a-z]+$")] = "ab",
    optional_point: Point | None = None,
    optional_level: Annotated[Level | None, "Loudness."] = None,
    default: int = 0,
    listed: list[str] = Field(default_factory=list),  # noqa: B008
    *,
    ctx: ToolContext,
) -> str:
    """Take one of everything.

    Args:
        text: Some text.
        point: Where.
        color: Which color.
    """
    return "ok"


EVERYTHING = make(everything)


def test_gemini_does_not_change_the_input_schema() -> None:
    before = copy.deepcopy(EVERYTHING.input_schema)
    make(everything).schema("gemini")
    assert gemini_schema(before) == EVERYTHING.schema("gemini")["parameters"]
    assert before == EVERYTHING.input_schema


# --- Gemini -----------------------------------------------------------------------------------

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
}
GEMINI_TYPES = {"string", "integer", "number", "boolean", "array", "object"}


def test_gemini_uses_only_its_subset_everywhere() -> None:
    decl = EVERYTHING.schema("gemini")
    assert set(decl) == {"name", "description", "parameters"}
    params = decl["parameters"]
    nodes = list(schema_nodes(params))
    assert len(nodes) > 60
    for path, node in nodes:
        assert set(node) <= GEMINI_KEYS, (path, set(node) - GEMINI_KEYS)
        for forbidden in ("$ref", "$defs", "additionalProperties", "default", "title", "const"):
            assert forbidden not in node, path
        if "type" in node:
            assert node["type"] in GEMINI_TYPES, path
        if "enum" in node:
            assert node["type"] == "string", path
            assert all(isinstance(v, str) for v in node["enum"]), path
        if "nullable" in node:
            assert node["nullable"] is True, path
        if "properties" in node:
            assert node["properties"], path
            assert node["type"] == "object", path
        if "required" in node:
            assert node["required"], path
            assert set(node["required"]) <= set(node["properties"]), path
        if "anyOf" in node:
            assert all(option.get("type") != "null" for option in node["anyOf"]), path
        if "format" in node:
            assert (node["type"], node["format"]) == ("string", "date-time"), path
    assert "ctx" not in params["properties"]
    assert "title" in params["properties"] and "default" in params["properties"]


def test_gemini_rules_one_by_one() -> None:
    props = EVERYTHING.schema("gemini")["parameters"]["properties"]
    assert props["text"] == {"type": "string", "description": "Some text."}
    assert props["nothing"] == {"nullable": True}
    assert props["maybe"] == {"type": "integer", "nullable": True}
    assert props["either"] == {"anyOf": [{"type": "integer"}, {"type": "string"}]}
    assert props["choice"] == {"enum": ["a", "b"], "type": "string"}
    assert props["mixed"] == {"description": '(one of: 1, "one", true)'}
    assert props["color"] == {
        "enum": ["red", "blue"],
        "type": "string",
        "description": "Which color.",
    }
    assert props["level"] == {"type": "integer", "description": "How loud. (one of: 1, 2)"}
    assert props["optional_level"] == {
        "type": "integer",
        "description": "Loudness. (one of: 1, 2)",
        "nullable": True,
    }
    assert props["pair"] == {
        "maxItems": 2,
        "minItems": 2,
        "type": "array",
        "items": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
    }
    assert props["unique"] == {
        "items": {"type": "string"},
        "type": "array",
        "description": "(items must be unique)",
    }
    assert props["mapping"] == {
        "type": "object",
        "description": "(an object with any keys; each value: integer)",
    }
    assert props["point"] == {
        "description": "Where.",
        "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
        "required": ["x"],
        "type": "object",
    }
    assert props["optional_point"] == {
        "description": "A point.",
        "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
        "required": ["x"],
        "type": "object",
        "nullable": True,
    }
    assert props["when"] == {"format": "date-time", "type": "string"}
    assert props["day"] == {"type": "string", "description": "(format: date)"}
    assert props["ident"] == {"type": "string", "description": "(format: uuid)"}
    assert props["bounded"] == {"maximum": 10, "minimum": 1, "type": "integer"}
    assert props["word"] == {"minLength": 2, "pattern": "^[a-z]+$", "type": "string"}
    assert props["anything"] == {}
    assert props["listed"] == {"items": {"type": "string"}, "type": "array"}


def test_gemini_inlines_definitions_and_cuts_recursion() -> None:
    props = EVERYTHING.schema("gemini")["parameters"]["properties"]
    stub = "(a nested Node; deeper nesting is not described)"
    assert props["tree"] == {
        "description": "A tree node.",
        "properties": {
            "value": {"type": "integer"},
            "children": {"items": {"type": "object", "description": stub}, "type": "array"},
            "parent": {"type": "object", "description": stub, "nullable": True},
        },
        "required": ["value"],
        "type": "object",
    }
    assert props["pet"] == {
        "anyOf": [
            {
                "properties": {
                    "kind": {"type": "string", "enum": ["cat"]},
                    "lives": {"type": "integer"},
                },
                "required": ["kind"],
                "type": "object",
            },
            {
                "properties": {
                    "kind": {"type": "string", "enum": ["dog"]},
                    "good": {"type": "boolean"},
                },
                "required": ["kind"],
                "type": "object",
            },
        ]
    }


def test_gemini_mutual_recursion_is_cut_too() -> None:
    schema = {
        "$defs": {
            "A": {"properties": {"b": {"$ref": "#/$defs/B"}}, "type": "object"},
            "B": {"properties": {"a": {"$ref": "#/$defs/A", "description": "Back."}}},
        },
        "properties": {"a": {"$ref": "#/$defs/A"}},
        "type": "object",
    }
    assert gemini_schema(schema) == {
        "properties": {
            "a": {
                "properties": {
                    "b": {
                        "properties": {
                            "a": {
                                "type": "object",
                                "description": "Back. (a nested A; deeper nesting is not "
                                "described)",
                            }
                        }
                    }
                },
                "type": "object",
            }
        },
        "type": "object",
    }


def test_gemini_without_parameters() -> None:
    def ping() -> str:
        """Ping."""
        return "pong"

    def with_context(ctx: ToolContext) -> str:
        """Ping."""
        return "pong"

    assert make(ping).schema("gemini") == {"name": "ping", "description": "Ping."}
    assert make(with_context).schema("gemini") == {"name": "with_context", "description": "Ping."}


def test_gemini_all_optional_has_no_required_list() -> None:
    def f(a: int = 1, b: str | None = None) -> None:
        """F."""

    assert make(f).schema("gemini")["parameters"] == {
        "properties": {"a": {"type": "integer"}, "b": {"type": "string", "nullable": True}},
        "type": "object",
    }


def test_gemini_says_in_words_what_it_cannot_express() -> None:
    def f(
        letter: Literal["a", None],
        number: Literal[1, 2] | None,
        step: Annotated[float, Field(gt=0, multiple_of=0.5)],
        anything: dict[str, Any],
        points: dict[str, Point],
        blob: bytes,
        yes: Literal[True] = True,
    ) -> None:
        """F."""

    props = make(f).schema("gemini")["parameters"]["properties"]
    assert props == {
        "letter": {"enum": ["a"], "type": "string", "nullable": True},
        "number": {"type": "integer", "description": "(one of: 1, 2)", "nullable": True},
        "step": {"type": "number", "description": "(> 0) (a multiple of 0.5)"},
        "anything": {"type": "object", "description": "(any keys)"},
        "points": {
            "type": "object",
            "description": "(an object with any keys; each value: object)",
        },
        "blob": {"type": "string", "description": "(format: binary)"},
        "yes": {"type": "boolean", "description": "(one of: true)"},
    }
