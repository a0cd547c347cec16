"""JSON booleans are refused for int and float parameters; lax mode's other conversions stay."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, Field, StrictInt
from pydantic.dataclasses import dataclass as pydantic_dataclass
from typing_extensions import TypedDict

from kode import Tool, ToolError, define_tool


def make(fn: Any) -> Tool[..., Any]:
    return define_tool(registry=None)(fn)


@dataclasses.dataclass
class Window:
    start: int
    scale: float = 1.0


class Span(TypedDict):
    width: float


class Inner(BaseModel):
    count: int


@pydantic_dataclass
class Exact:
    count: int


def counts(
    n: int,
    ratio: float,
    bounded: Annotated[int, Field(ge=0, le=10)] = 1,
    items: list[int] | None = None,
    by_name: dict[str, float] | None = None,
    pair: tuple[int, float] | None = None,
    window: Window | None = None,
    span: Span | None = None,
    either: int | bool = 0,
) -> str:
    """Count.

    Args:
        n: A count.
        ratio: A ratio.
        bounded: A bounded count.
        items: Counts.
        by_name: Ratios by name.
        pair: A count and a ratio.
        window: A window.
        span: A span.
        either: A count or a flag.
    """
    return "ok"


@pytest.mark.parametrize(
    ("arguments", "where", "expected"),
    [
        ({"n": True, "ratio": 1}, "'n'", "should be a valid integer, got true"),
        ({"n": 1, "ratio": False}, "'ratio'", "should be a valid number, got false"),
        ({"n": 1, "ratio": 1, "bounded": True}, "'bounded'", "should be a valid integer"),
        ({"n": 1, "ratio": 1, "items": [1, True]}, "'items[1]'", "should be a valid integer"),
        ({"n": 1, "ratio": 1, "by_name": {"a": True}}, "'by_name.a'", "should be a valid number"),
        ({"n": 1, "ratio": 1, "pair": [1, True]}, "'pair[1]'", "should be a valid number"),
        ({"n": 1, "ratio": 1, "window": {"start": True}}, "'window.start'", "valid integer"),
        ({"n": 1, "ratio": 1, "span": {"width": False}}, "'span.width'", "valid number"),
    ],
)
def test_booleans_are_refused_for_numbers(
    arguments: dict[str, Any], where: str, expected: str
) -> None:
    tool = make(counts)
    with pytest.raises(ToolError) as caught:
        tool.validate(arguments)
    assert where in str(caught.value)
    assert expected in str(caught.value)


def test_booleans_are_refused_in_json_text_too() -> None:
    tool = make(counts)
    with pytest.raises(ToolError, match="'n' should be a valid integer, got true"):
        tool.validate('{"n": true, "ratio": 0.5}')


def test_lax_conversions_models_need_are_kept() -> None:
    tool = make(counts)
    arguments = tool.validate(
        {
            "n": "20",
            "ratio": "0.5",
            "bounded": 3.0,
            "items": ["1", 2.0],
            "pair": ["4", 5],
            "window": {"start": "7"},
            "either": True,
        }
    )
    assert arguments["n"] == 20
    assert arguments["ratio"] == 0.5
    assert arguments["bounded"] == 3
    assert arguments["items"] == [1, 2]
    assert arguments["pair"] == (4, 5.0)
    assert arguments["window"] == Window(start=7)
    assert arguments["either"] is True  # the union names bool: a boolean is its member


def test_constraint_and_parse_errors_read_as_before() -> None:
    tool = make(counts)
    with pytest.raises(ToolError) as caught:
        tool.validate({"n": 2.5, "ratio": "x", "bounded": 11})
    message = str(caught.value)
    assert "'n' should be a valid integer, got a number with a fractional part (2.5)" in message
    assert "'ratio' should be a valid number, unable to parse string as a number" in message
    assert "'bounded' should be less than or equal to 10, got 11" in message


def test_the_published_schema_is_unchanged() -> None:
    props = make(counts).input_schema["properties"]
    assert props["n"] == {"description": "A count.", "type": "integer"}
    assert props["ratio"] == {"description": "A ratio.", "type": "number"}
    assert props["bounded"]["type"] == "integer"
    assert props["bounded"]["minimum"] == 0
    assert props["items"]["anyOf"][0] == {"items": {"type": "integer"}, "type": "array"}


def test_a_pydantic_model_or_dataclass_keeps_its_own_rules() -> None:
    # pydantic validates them with their own validators: their fields follow their own rules
    # (StrictInt there is the user's choice). A plain dataclass and a TypedDict are gated.
    def take(inner: Inner, made: Exact, exact: StrictInt = 1) -> str:
        """Take.

        Args:
            inner: A model.
            made: A pydantic dataclass.
            exact: An exact count.
        """
        return "ok"

    tool = make(take)
    taken = tool.validate({"inner": {"count": True}, "made": {"count": True}})
    assert taken["inner"] == Inner(count=1)
    assert taken["made"] == Exact(count=1)
    with pytest.raises(ToolError, match="'exact' should be a valid integer"):
        tool.validate({"inner": {"count": 1}, "made": {"count": 1}, "exact": "1"})


def test_a_plain_dataclass_outside_a_tool_keeps_lax_mode() -> None:
    from pydantic import TypeAdapter

    make(counts)  # gating its definition for the tool changes nothing elsewhere
    assert TypeAdapter(Window).validate_python({"start": True}) == Window(start=1)


def test_validation_stays_pure() -> None:
    assert make(counts).pure_validation is True


@dataclasses.dataclass
class Node:
    value: int
    children: list[Node] = dataclasses.field(default_factory=list)


def test_a_recursive_dataclass_is_gated_at_every_level() -> None:
    def walk(root: Node) -> str:
        """Walk a tree.

        Args:
            root: The root.
        """
        return "ok"

    tool = make(walk)
    tree = tool.validate({"root": {"value": 1, "children": [{"value": "2"}]}})["root"]
    assert tree == Node(value=1, children=[Node(value=2)])
    with pytest.raises(ToolError, match=r"'root.children\[0\].value' should be a valid integer"):
        tool.validate({"root": {"value": 1, "children": [{"value": True}]}})
