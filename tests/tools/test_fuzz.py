"""Property: no JSON value fed to `Tool.run` escapes as an exception.

Valid input runs the function; anything else comes back as an error `ToolResult` with a
message. Several tools with different shapes are fuzzed with arbitrary JSON, with JSON text,
and with inputs built near their schemas (right keys, arbitrary values).
"""

from __future__ import annotations

import dataclasses
import json
from datetime import date
from enum import StrEnum
from typing import Annotated, Any, Literal, NotRequired

import anyio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field
from typing_extensions import TypedDict

from kode import Tool, ToolContext, ToolErrorType, define_tool

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)

CALLS: list[tuple[str, dict[str, Any]]] = []


class Color(StrEnum):
    RED = "red"
    BLUE = "blue"


class Node(BaseModel):
    name: str
    children: list[Node] = []


@dataclasses.dataclass
class Window:
    start: date
    days: int = 1


class Options(TypedDict):
    verbose: bool
    depth: NotRequired[int]


def _record(name: str, **kwargs: Any) -> str:
    CALLS.append((name, kwargs))
    return "ok"


@define_tool(registry=None)
def simple(text: str, count: Annotated[int, Field(ge=0, le=10)] = 1) -> str:
    """Simple."""
    assert isinstance(text, str) and 0 <= count <= 10
    return _record("simple", text=text, count=count)


@define_tool(registry=None)
async def nested(
    tree: Node,
    color: Color = Color.RED,
    mode: Literal["fast", "slow"] | None = None,
    *,
    ctx: ToolContext,
) -> str:
    """Nested."""
    assert isinstance(tree, Node) and isinstance(color, Color)
    return _record("nested", tree=tree, color=color, mode=mode)


@define_tool(registry=None, run_in_thread=False)
def shapes(
    window: Window,
    options: Options,
    tags: set[str] = set(),  # noqa: B006 - validated and copied by pydantic
    pair: tuple[int, str] | None = None,
    scores: dict[str, float] | None = None,
) -> dict[str, Any]:
    """Shapes."""
    assert isinstance(window, Window) and isinstance(options, dict)
    _record("shapes", window=window, options=options, tags=tags, pair=pair)
    return {"ok": True}


TOOLS: list[Tool[..., Any]] = [simple, nested, shapes]


def near_schema(tool: Tool[..., Any]) -> st.SearchStrategy[dict[str, Any]]:
    keys = list(tool.input_schema["properties"])
    return st.dictionaries(st.sampled_from(keys), json_values, max_size=len(keys))


def check(tool: Tool[..., Any], raw: Any) -> None:
    before = len(CALLS)
    result = anyio.run(tool.run, raw)
    ran = len(CALLS) > before
    if result.is_error:
        assert not ran, "the function ran but the result is an error"
        assert result.error_type is ToolErrorType.INVALID_TOOL_PARAMS
        assert result.text.startswith(f"Invalid arguments for tool '{tool.name}'"), result.text
    else:
        assert ran, "a successful result without running the function"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tool=st.sampled_from(TOOLS), raw=json_values)
def test_arbitrary_json_values(tool: Tool[..., Any], raw: Any) -> None:
    check(tool, raw)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tool=st.sampled_from(TOOLS), raw=json_values)
def test_arbitrary_json_text(tool: Tool[..., Any], raw: Any) -> None:
    check(tool, json.dumps(raw))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), tool=st.sampled_from(TOOLS))
def test_inputs_near_the_schema(data: st.DataObject, tool: Tool[..., Any]) -> None:
    check(tool, data.draw(near_schema(tool)))


@settings(max_examples=100, deadline=None)
@given(text=st.text(max_size=30))
def test_arbitrary_text_is_never_fatal(text: str) -> None:
    check(simple, text)


def test_valid_inputs_do_run() -> None:
    check(simple, {"text": "hi", "count": "3"})
    check(nested, {"tree": {"name": "root", "children": [{"name": "leaf"}]}, "color": "blue"})
    check(
        shapes,
        {
            "window": {"start": "2026-01-02"},
            "options": '{"verbose": true}',
            "tags": ["a", "a"],
            "pair": [1, "x"],
        },
    )
    assert [name for name, _ in CALLS[-3:]] == ["simple", "nested", "shapes"]
