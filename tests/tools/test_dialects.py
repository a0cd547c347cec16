"""Provider dialects: the same inferred schema declared for Anthropic, OpenAI and Gemini."""

from __future__ import annotations

import copy
import dataclasses
import datetime
import pathlib
from typing import Annotated, Any, Literal

import pytest
from dialect_types import Box, Color, Level, Node, Options, Pet, Point, make, schema_nodes
from pydantic import BaseModel, ConfigDict, Field

from kode import ToolContext
from kode.tools.dialects import clean_schema, gemini_schema, openai_strict_schema

# --- OpenAI -----------------------------------------------------------------------------------


def draw(
    at: Point,
    color: Color = Color.RED,
    label: str | None = None,
    size: Annotated[int, Field(ge=1, le=10)] = 3,
    tags: list[str] = Field(default_factory=list),  # noqa: B008
    mode: Literal["fill", "stroke"] = "fill",
) -> Any:
    """Draw a dot.

    Args:
        at: Where.
        color: Which color.
        label: A label.
        size: How big.
        tags: Tags.
        mode: How.
    """
    return [at.model_dump(), color.value, label, size, tags, mode]


DRAW = make(draw)
NULLABLE_INT = {"anyOf": [{"type": "integer"}, {"type": "null"}]}
STRICT_POINT = {
    "properties": {"x": {"type": "integer"}, "y": NULLABLE_INT},
    "required": ["x", "y"],
    "type": "object",
    "additionalProperties": False,
}


def test_openai_strict_declaration() -> None:
    assert DRAW.schema("openai") == {
        "type": "function",
        "function": {
            "name": "draw",
            "description": "Draw a dot.",
            "strict": True,
            "parameters": {
                "$defs": {
                    "Color": {"enum": ["red", "blue"], "type": "string"},
                    "Point": {"description": "A point.", **STRICT_POINT},
                },
                "additionalProperties": False,
                "properties": {
                    # a $ref with a sibling (the description) is unravelled
                    "at": {"description": "Where.", **STRICT_POINT},
                    # optional: nullable, no default
                    "color": {
                        "anyOf": [{"enum": ["red", "blue"], "type": "string"}, {"type": "null"}],
                        "description": "Which color.",
                    },
                    "label": {
                        "anyOf": [{"type": "string"}, {"type": "null"}],
                        "description": "A label.",
                    },
                    "size": {
                        "anyOf": [
                            {"maximum": 10, "minimum": 1, "type": "integer"},
                            {"type": "null"},
                        ],
                        "description": "How big.",
                    },
                    "tags": {
                        "anyOf": [{"items": {"type": "string"}, "type": "array"}, {"type": "null"}],
                        "description": "Tags.",
                    },
                    "mode": {
                        "anyOf": [{"enum": ["fill", "stroke"], "type": "string"}, {"type": "null"}],
                        "description": "How.",
                    },
                },
                "required": ["at", "color", "label", "size", "tags", "mode"],
                "type": "object",
            },
        },
    }


def test_openai_strict_round_trip_null_means_the_default() -> None:
    # What a model following the strict schema sends when it wants the defaults.
    result = DRAW.run_sync(
        {
            "at": {"x": 1, "y": None},
            "color": None,
            "label": None,
            "size": None,
            "tags": None,
            "mode": None,
        }
    )
    assert not result.is_error, result.text
    assert result.details == [{"x": 1, "y": 0}, "red", None, 3, [], "fill"]
    assert not DRAW.run_sync({"at": {"x": 1}}).is_error  # and a lax model may still omit them


def strict_capable(
    point: Point,
    level: Level,
    tree: Node,
    options: Options,
    box: Box,
    pet: Pet,
    when: datetime.datetime | None = None,
    path: pathlib.Path = pathlib.Path("."),
    unique: set[str] = Field(default_factory=set),  # noqa: B008
    word: Annotated[str, Field(min_length=2)] = "ab",
    mixed: Literal[1, "one"] = 1,
    optional_point: Point | None = None,
    title: str = "t",
    default: int = 0,
) -> Any:
    """Strict mode can take all of these."""
    return [
        point.model_dump(),
        level,
        tree.model_dump(),
        options,
        dataclasses.asdict(box),
        pet.model_dump(),
        when,
        str(path),
        sorted(unique),
        word,
        mixed,
        optional_point,
        title,
        default,
    ]


STRICT = make(strict_capable)


def test_openai_strict_holds_at_every_level() -> None:
    decl = STRICT.schema("openai")["function"]
    assert decl["strict"] is True
    params = decl["parameters"]
    assert set(params["$defs"]) == {"Box", "Cat", "Dog", "Level", "Node", "Options", "Point"}
    objects = 0
    for path, node in schema_nodes(params):
        assert "default" not in node, path
        assert "oneOf" not in node and "discriminator" not in node, path
        assert "type" in node or "anyOf" in node or "$ref" in node, path
        if "$ref" in node:
            assert set(node) == {"$ref"}, path
        if node.get("type") == "object" or "properties" in node:
            objects += 1
            assert node["additionalProperties"] is False, path
            assert node["required"] == list(node["properties"]), path
        for key in ("minLength", "maxLength", "uniqueItems"):
            assert key not in node, path
        assert node.get("format") in (None, "date-time", "date", "uuid"), path
    assert objects == 7  # the arguments and six models
    props = params["properties"]
    assert props["pet"] == {"anyOf": [{"$ref": "#/$defs/Cat"}, {"$ref": "#/$defs/Dog"}]}
    assert props["mixed"] == {
        "anyOf": [
            {"anyOf": [{"type": "integer", "enum": [1]}, {"type": "string", "enum": ["one"]}]},
            {"type": "null"},
        ]
    }
    assert props["word"] == {
        "anyOf": [{"type": "string"}, {"type": "null"}],
        "description": "(minLength: 2)",
    }
    assert props["path"] == {
        "anyOf": [{"type": "string"}, {"type": "null"}],
        "description": "(format: path)",
    }
    assert props["unique"]["description"] == "(uniqueItems: true)"
    assert params["$defs"]["Options"]["properties"]["label"] == {
        "anyOf": [{"type": "string"}, {"type": "null"}]
    }
    assert params["$defs"]["Node"]["properties"]["children"] == {
        "anyOf": [{"items": {"$ref": "#/$defs/Node"}, "type": "array"}, {"type": "null"}]
    }


def test_openai_strict_round_trip_for_nested_and_typed_dict_values() -> None:
    result = STRICT.run_sync(
        {
            "point": {"x": 1, "y": None},
            "level": 2,
            "tree": {"value": 1, "children": [{"value": 2, "children": None, "parent": None}]},
            "options": {"depth": 3, "label": None},
            "box": {"width": 2, "height": None},
            "pet": {"kind": "dog", "good": True},
            "when": None,
            "path": None,
            "unique": None,
            "word": None,
            "mixed": None,
            "optional_point": None,
            "title": None,
            "default": None,
        }
    )
    assert not result.is_error, result.text
    assert result.details == [
        {"x": 1, "y": 0},
        2,
        {
            "value": 1,
            "children": [{"value": 2, "children": [], "parent": None}],
            "parent": None,
        },
        {"depth": 3},
        {"width": 2.0, "height": 1.0},
        {"kind": "dog", "good": True},
        None,
        ".",
        [],
        "ab",
        1,
        None,
        "t",
        0,
    ]


def test_openai_strict_round_trip_inside_a_discriminated_union() -> None:
    result = STRICT.run_sync(
        {
            "point": {"x": 1, "y": None},
            "level": 1,
            "tree": {"value": 1, "children": None, "parent": None},
            "options": {"depth": 3, "label": None},
            "box": {"width": 2, "height": None},
            "pet": {"kind": "dog", "good": None},
        }
    )
    assert not result.is_error, result.text
    assert result.details[5] == {"kind": "dog", "good": True}


def _dict(x: dict[str, int]) -> None: ...
def _tuple(x: tuple[int, str]) -> None: ...
def _any(x: Any) -> None: ...
def _any_items(x: list[Any]) -> None: ...


class Loose(BaseModel):
    model_config = ConfigDict(extra="allow")
    a: int


def _loose(x: Loose) -> None: ...


@pytest.mark.parametrize(
    ("fn", "reason"),
    [
        (_dict, "a free-form object (a dict, or a model allowing extra keys) at 'x'"),
        (_tuple, "a tuple at 'x'"),
        (_any, "a value of any type (Any) at 'x'"),
        (_any_items, "a value of any type (Any) at 'x[]'"),
        (_loose, "a free-form object (a dict, or a model allowing extra keys) at '$defs.Loose'"),
    ],
)
def test_openai_strict_off_when_impossible(fn: Any, reason: str) -> None:
    fn.__doc__ = "F."
    tool = make(fn, name="f")
    assert openai_strict_schema(tool.input_schema) is None
    decl = tool.schema("openai")["function"]
    assert decl["strict"] is False
    assert decl["parameters"] == tool.input_schema
    assert tool.schema("openai", strict=False) == tool.schema("openai")
    with pytest.raises(ValueError) as info:
        tool.schema("openai", strict=True)
    assert str(info.value) == f"tool 'f' cannot use OpenAI strict mode: its schema has {reason}"


def test_openai_strict_can_be_required_or_turned_off() -> None:
    assert DRAW.schema("openai", strict=True) == DRAW.schema("openai")
    off = DRAW.schema("openai", strict=False)["function"]
    assert off["strict"] is False
    assert off["parameters"] == DRAW.input_schema


def test_openai_strict_with_a_self_reference_that_has_a_description() -> None:
    class Chain(BaseModel):
        value: int = 0
        next: Chain = Field(default_factory=lambda: Chain(), description="The next link.")

    def walk(chain: Chain = Field(default_factory=Chain, description="The first.")) -> None:  # noqa: B008
        """Walk."""

    params = make(walk).schema("openai")["function"]["parameters"]
    link = params["$defs"]["Chain"]["properties"]["next"]
    assert link["description"] == "The next link."
    assert link["anyOf"][0]["properties"]["next"] == {
        "anyOf": [{"$ref": "#/$defs/Chain"}, {"type": "null"}]
    }
    assert params["properties"]["chain"]["description"] == "The first."


def test_openai_no_parameters() -> None:
    def ping(ctx: ToolContext) -> str:
        """Ping."""
        return "pong"

    assert make(ping).schema("openai") == {
        "type": "function",
        "function": {
            "name": "ping",
            "description": "Ping.",
            "parameters": {
                "additionalProperties": False,
                "properties": {},
                "required": [],
                "type": "object",
            },
            "strict": True,
        },
    }


def test_openai_strict_gives_every_enum_a_type() -> None:
    def f(
        letter: Literal["a", None],
        mixed: Literal[1, "one", True],
        yes: Literal[True],
        step: Annotated[float, Field(gt=0, multiple_of=0.5)],
    ) -> None:
        """F."""

    decl = make(f).schema("openai")["function"]
    assert decl["strict"] is True
    assert decl["parameters"]["properties"] == {
        "letter": {"anyOf": [{"type": "string", "enum": ["a"]}, {"type": "null"}]},
        "mixed": {
            "anyOf": [
                {"type": "integer", "enum": [1]},
                {"type": "string", "enum": ["one"]},
                {"type": "boolean", "enum": [True]},
            ]
        },
        "yes": {"const": True, "type": "boolean"},
        "step": {"exclusiveMinimum": 0, "multipleOf": 0.5, "type": "number"},
    }
    result = make(f).run_sync({"letter": None, "mixed": True, "yes": True, "step": 1})
    assert not result.is_error, result.text


# --- Anthropic --------------------------------------------------------------------------------


def test_anthropic_declaration_is_the_schema_as_is() -> None:
    def add(a: int, b: int = 1) -> int:
        """Add two numbers.

        Args:
            a: The first.
            b: The second.
        """
        return a + b

    assert make(add).schema("anthropic") == {
        "name": "add",
        "description": "Add two numbers.",
        "input_schema": {
            "additionalProperties": False,
            "properties": {
                "a": {"description": "The first.", "type": "integer"},
                "b": {"default": 1, "description": "The second.", "type": "integer"},
            },
            "required": ["a"],
            "type": "object",
        },
    }
    assert make(add).schema() == make(add).schema("anthropic")


def test_anthropic_without_description_or_parameters() -> None:
    def ping() -> str:
        return "pong"

    assert make(ping).schema("anthropic") == {
        "name": "ping",
        "input_schema": {
            "additionalProperties": False,
            "properties": {},
            "required": [],
            "type": "object",
        },
    }


def test_no_titles_anywhere_but_property_names_survive() -> None:
    assert "title" in STRICT.input_schema["properties"]
    for path, node in schema_nodes(STRICT.input_schema):
        assert "title" not in node, path
    raw = {"properties": {"title": {"title": "Title", "type": "string"}}, "title": "M"}
    assert clean_schema(raw) == {
        "properties": {"title": {"type": "string"}},
        "required": [],
        "type": "object",
    }
    assert raw["title"] == "M"  # the input is not changed


def test_unknown_dialect() -> None:
    with pytest.raises(ValueError, match="unknown dialect 'claude'"):
        DRAW.schema("claude")  # type: ignore[arg-type]


def test_declarations_never_change_the_input_schema() -> None:
    before = copy.deepcopy(STRICT.input_schema)
    tool = make(strict_capable)
    for dialect in ("anthropic", "openai", "gemini"):
        tool.schema(dialect)
    assert tool.input_schema == before
    assert gemini_schema(before) == gemini_schema(copy.deepcopy(before))


def test_openai_strict_keeps_only_the_keywords_strict_mode_accepts() -> None:
    class Order(BaseModel):
        model_config = ConfigDict(json_schema_extra={"example": {"sku": "A-1"}})

        sku: Annotated[str, Field(pattern="^[A-Z]-[0-9]+$", examples=["B-2"], deprecated=True)]
        quantity: Annotated[int, Field(ge=1, multiple_of=2)]

    def place(
        order: Order, note: Annotated[str, Field(json_schema_extra={"x-internal": 1})]
    ) -> str:
        """Place an order."""
        return "ok"

    schema = make(place).input_schema
    strict = openai_strict_schema(schema)
    assert strict is not None
    order = strict["$defs"]["Order"]
    assert order["description"] == '(example: {"sku": "A-1"})'
    sku = order["properties"]["sku"]
    assert sku == {
        "pattern": "^[A-Z]-[0-9]+$",
        "type": "string",
        "description": '(deprecated: true) (examples: ["B-2"])',
    }
    assert order["properties"]["quantity"] == {"minimum": 1, "multipleOf": 2, "type": "integer"}
    assert strict["properties"]["note"] == {"type": "string", "description": "(x-internal: 1)"}
    supported = {
        "type", "description", "title", "properties", "required", "additionalProperties",
        "items", "enum", "const", "anyOf", "$ref", "$defs", "pattern", "format",
        "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum",
        "minItems", "maxItems",
    }  # fmt: skip
    for path, node in schema_nodes(strict):
        assert set(node) <= supported, (path, set(node) - supported)
