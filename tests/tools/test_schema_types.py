"""Schema inference for every type a user would write, and validation of each against input."""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import inspect
import pathlib
import uuid
from typing import Annotated, Any, Literal, NotRequired, Optional

import pytest
from pydantic import BaseModel, Field
from typing_extensions import TypedDict

from kode import Tool, define_tool


def make(fn: Any, **options: Any) -> Tool[..., Any]:
    return define_tool(registry=None, **options)(fn)


# --- every type ---------------------------------------------------------------------------------


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Point(BaseModel):
    """A point on the plane."""

    x: int
    y: int = 0


@dataclasses.dataclass
class Box:
    width: float
    height: float = 1.0


class Options(TypedDict):
    depth: int
    label: NotRequired[str]


class Node(BaseModel):
    value: int
    children: list[Node] = []


POINT_DEF = {
    "description": "A point on the plane.",
    "properties": {"x": {"type": "integer"}, "y": {"default": 0, "type": "integer"}},
    "required": ["x"],
    "type": "object",
}
NODE_DEF = {
    "properties": {
        "value": {"type": "integer"},
        "children": {"default": [], "items": {"$ref": "#/$defs/Node"}, "type": "array"},
    },
    "required": ["value"],
    "type": "object",
}
NO_DEFAULT = inspect.Parameter.empty


def tool_for(annotation: Any, default: Any = NO_DEFAULT, seen: list[Any] | None = None) -> Tool:
    """A tool with one parameter `x` of this type, recording what the function receives."""

    def f(x: Any) -> str:
        if seen is not None:
            seen.append(x)
        return "ok"

    f.__annotations__ = {"x": annotation, "return": str}
    f.__doc__ = "Take x."
    if default is not NO_DEFAULT:
        f.__defaults__ = (default,)
    return make(f)


TYPES: list[tuple[str, Any, Any, dict[str, Any], dict[str, Any]]] = [
    # id, annotation, default, property schema, $defs
    ("str", str, NO_DEFAULT, {"type": "string"}, {}),
    ("int", int, NO_DEFAULT, {"type": "integer"}, {}),
    ("float", float, NO_DEFAULT, {"type": "number"}, {}),
    ("bool", bool, NO_DEFAULT, {"type": "boolean"}, {}),
    ("None", None, NO_DEFAULT, {"type": "null"}, {}),
    ("Optional", Optional[int], NO_DEFAULT, {"anyOf": [{"type": "integer"}, {"type": "null"}]}, {}),  # noqa: UP045
    (
        "X | None = None",
        int | None,
        None,
        {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None},
        {},
    ),
    ("union", int | str, NO_DEFAULT, {"anyOf": [{"type": "integer"}, {"type": "string"}]}, {}),
    ("Literal", Literal["a", "b"], NO_DEFAULT, {"enum": ["a", "b"], "type": "string"}, {}),
    ("Literal one", Literal["only"], NO_DEFAULT, {"const": "only", "type": "string"}, {}),
    (
        "Enum",
        Color,
        Color.RED,
        {"$ref": "#/$defs/Color", "default": "red"},
        {"Color": {"enum": ["red", "blue"], "type": "string"}},
    ),
    (
        "IntEnum",
        Level,
        NO_DEFAULT,
        {"$ref": "#/$defs/Level"},
        {"Level": {"enum": [1, 2], "type": "integer"}},
    ),
    ("list", list[int], NO_DEFAULT, {"items": {"type": "integer"}, "type": "array"}, {}),
    (
        "tuple",
        tuple[int, str],
        NO_DEFAULT,
        {
            "maxItems": 2,
            "minItems": 2,
            "prefixItems": [{"type": "integer"}, {"type": "string"}],
            "type": "array",
        },
        {},
    ),
    ("tuple ...", tuple[int, ...], NO_DEFAULT, {"items": {"type": "integer"}, "type": "array"}, {}),
    (
        "set",
        set[str],
        NO_DEFAULT,
        {"items": {"type": "string"}, "type": "array", "uniqueItems": True},
        {},
    ),
    (
        "dict",
        dict[str, int],
        NO_DEFAULT,
        {"additionalProperties": {"type": "integer"}, "type": "object"},
        {},
    ),
    ("model", Point, NO_DEFAULT, {"$ref": "#/$defs/Point"}, {"Point": POINT_DEF}),
    (
        "dataclass",
        Box,
        NO_DEFAULT,
        {"$ref": "#/$defs/Box"},
        {
            "Box": {
                "additionalProperties": False,
                "properties": {
                    "width": {"type": "number"},
                    "height": {"default": 1.0, "type": "number"},
                },
                "required": ["width"],
                "type": "object",
            }
        },
    ),
    (
        "TypedDict",
        Options,
        NO_DEFAULT,
        {"$ref": "#/$defs/Options"},
        {
            "Options": {
                "additionalProperties": False,
                "properties": {"depth": {"type": "integer"}, "label": {"type": "string"}},
                "required": ["depth"],
                "type": "object",
            }
        },
    ),
    ("datetime", datetime.datetime, NO_DEFAULT, {"format": "date-time", "type": "string"}, {}),
    ("date", datetime.date, NO_DEFAULT, {"format": "date", "type": "string"}, {}),
    ("UUID", uuid.UUID, NO_DEFAULT, {"format": "uuid", "type": "string"}, {}),
    ("Path", pathlib.Path, NO_DEFAULT, {"format": "path", "type": "string"}, {}),
    (
        "Decimal",
        decimal.Decimal,
        NO_DEFAULT,
        {"anyOf": [{"type": "number"}, {"type": "string"}]},
        {},
    ),
    (
        "ge/le",
        Annotated[int, Field(ge=1, le=500)],
        50,
        {"default": 50, "maximum": 500, "minimum": 1, "type": "integer"},
        {},
    ),
    (
        "min_length/pattern",
        Annotated[str, Field(min_length=2, max_length=8, pattern="^[a-z]+$")],
        NO_DEFAULT,
        {"maxLength": 8, "minLength": 2, "pattern": "^[a-z]+$", "type": "string"},
        {},
    ),
    (
        "default_factory",
        list[str],
        Field(default_factory=list),
        {"items": {"type": "string"}, "type": "array"},
        {},
    ),
    ("recursive", Node, NO_DEFAULT, {"$ref": "#/$defs/Node"}, {"Node": NODE_DEF}),
]


@pytest.mark.parametrize(
    ("annotation", "default", "prop", "defs"),
    [pytest.param(*case[1:], id=case[0]) for case in TYPES],
)
def test_every_type_has_an_exact_schema(
    annotation: Any, default: Any, prop: dict[str, Any], defs: dict[str, Any]
) -> None:
    schema = tool_for(annotation, default).input_schema
    expected: dict[str, Any] = {
        "additionalProperties": False,
        "properties": {"x": prop},
        "required": [] if default is not NO_DEFAULT else ["x"],
        "type": "object",
    }
    if defs:
        expected["$defs"] = defs
    assert schema == expected


NODE = Node(value=1, children=[Node(value=2)])
VALID: list[tuple[str, Any, Any, Any]] = [
    # id, annotation, input (lax where a model would be lax), what the function receives
    ("str", str, "hi", "hi"),
    ("int from str", int, "20", 20),
    ("float from int", float, 2, 2.0),
    ("bool from str", bool, "true", True),
    ("None", None, None, None),
    ("Optional null", Optional[int], None, None),  # noqa: UP045
    ("union int", int | str, 3, 3),
    ("union str", int | str, "x", "x"),
    ("Literal", Literal["a", "b"], "b", "b"),
    ("Enum", Color, "blue", Color.BLUE),
    ("IntEnum from str", Level, "2", Level.HIGH),
    ("list", list[int], ["1", 2], [1, 2]),
    ("list as JSON text", list[int], "[1, 2]", [1, 2]),
    ("tuple", tuple[int, str], [1, "a"], (1, "a")),
    ("set", set[str], ["a", "a", "b"], {"a", "b"}),
    ("dict", dict[str, int], {"k": "1"}, {"k": 1}),
    ("model", Point, {"x": "1"}, Point(x=1, y=0)),
    ("model as JSON text", Point, '{"x": 1, "y": 2}', Point(x=1, y=2)),
    ("dataclass", Box, {"width": 2}, Box(width=2.0, height=1.0)),
    ("TypedDict", Options, {"depth": "3"}, {"depth": 3}),
    ("TypedDict full", Options, {"depth": 3, "label": "l"}, {"depth": 3, "label": "l"}),
    (
        "datetime",
        datetime.datetime,
        "2024-05-06T07:08:09Z",
        datetime.datetime(2024, 5, 6, 7, 8, 9, tzinfo=datetime.UTC),
    ),
    ("date", datetime.date, "2024-05-06", datetime.date(2024, 5, 6)),
    (
        "UUID",
        uuid.UUID,
        "12345678-1234-5678-1234-567812345678",
        uuid.UUID("12345678-1234-5678-1234-567812345678"),
    ),
    ("Path", pathlib.Path, "/tmp/x", pathlib.Path("/tmp/x")),
    ("Decimal from str", decimal.Decimal, "1.50", decimal.Decimal("1.50")),
    ("Decimal from number", decimal.Decimal, 2, decimal.Decimal(2)),
    ("ge/le", Annotated[int, Field(ge=1, le=500)], "500", 500),
    ("pattern", Annotated[str, Field(min_length=2, pattern="^[a-z]+$")], "ab", "ab"),
    ("recursive", Node, {"value": 1, "children": [{"value": "2"}]}, NODE),
]


@pytest.mark.parametrize(
    ("annotation", "value", "received"), [pytest.param(*c[1:], id=c[0]) for c in VALID]
)
def test_valid_and_lax_input_reaches_the_function(
    annotation: Any, value: Any, received: Any
) -> None:
    seen: list[Any] = []
    result = tool_for(annotation, seen=seen).run_sync({"x": value})
    assert not result.is_error, result.text
    assert seen == [received]
    assert type(seen[0]) is type(received)


INVALID: list[tuple[str, Any, Any, str]] = [
    ("str", str, 3, "'x' should be a valid string, got 3"),
    ("int", int, "twenty", "'x' should be a valid integer"),
    ("int from float", int, 1.5, "'x' should be a valid integer"),
    ("bool", bool, "maybe", "'x' should be a valid boolean"),
    ("None", None, 0, "'x' should be None"),
    ("Literal", Literal["a", "b"], "c", "'x' should be 'a' or 'b', got \"c\""),
    ("Enum", Color, "green", "'x' should be 'red' or 'blue', got \"green\""),
    ("list", list[int], ["a"], "'x[0]' should be a valid integer"),
    ("tuple short", tuple[int, str], [1], "'x[1]' is required but missing"),
    ("dict", dict[str, int], {"k": "v"}, "'x.k' should be a valid integer"),
    ("model missing", Point, {"y": 1}, "'x.x' is required but missing"),
    ("dataclass extra", Box, {"width": 1, "depth": 2}, "'x.depth'"),
    ("TypedDict missing", Options, {"label": "l"}, "'x.depth' is required but missing"),
    ("datetime", datetime.datetime, "yesterday", "'x' should be a valid datetime"),
    ("UUID", uuid.UUID, "nope", "'x' should be a valid UUID"),
    ("Decimal", decimal.Decimal, "abc", "'x' should be a valid decimal"),
    ("ge", Annotated[int, Field(ge=1, le=500)], 0, "'x' should be greater than or equal to 1"),
    ("le", Annotated[int, Field(ge=1, le=500)], 501, "'x' should be less than or equal to 500"),
    ("min_length", Annotated[str, Field(min_length=2)], "a", "at least 2 characters"),
    ("pattern", Annotated[str, Field(pattern="^[a-z]+$")], "A1", "should match pattern"),
    ("recursive", Node, {"value": 1, "children": [{}]}, "'x.children[0].value' is required"),
]


@pytest.mark.parametrize(
    ("annotation", "value", "fragment"), [pytest.param(*c[1:], id=c[0]) for c in INVALID]
)
def test_invalid_input_is_an_error_result(annotation: Any, value: Any, fragment: str) -> None:
    seen: list[Any] = []
    result = tool_for(annotation, seen=seen).run_sync({"x": value})
    assert result.is_error
    assert result.error_type == "invalid_tool_params"
    assert fragment in result.text
    assert seen == []


def test_defaults_and_default_factories_apply() -> None:
    received: list[Any] = []

    def f(
        a: int = 3,
        b: list[str] = Field(default_factory=lambda: ["fresh"]),  # noqa: B008
        c: Annotated[str, Field(description="C.")] = "c",
        d: Color = Color.RED,
    ) -> str:
        """F."""
        received.append((a, b, c, d))
        return "ok"

    tool = make(f)
    assert tool.input_schema["required"] == []
    assert tool.run_sync({}).text == "ok"
    assert tool.run_sync(None).text == "ok"
    assert received == [(3, ["fresh"], "c", Color.RED)] * 2
    assert received[0][1] is not received[1][1]


def test_unknown_keys_are_rejected() -> None:
    result = tool_for(int).run_sync({"x": 1, "y": 2})
    assert result.is_error
    assert "'y' is not a parameter of this tool (parameters: x)" in result.text
