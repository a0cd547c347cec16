"""The same arguments as JSON text or as a dict: the same call, the same result, the same error.

A provider sends a tool call's arguments as JSON text, an SDK may hand them over as a dict:
validation reads text by its own path (pydantic's parser, no limit count for short text, the
glance at small input), and none of that may change what a call means or what a model is told.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field

from kode import Tool, ToolResult, define_tool
from kode.tools import PreparedCall
from kode.tools.validation import MAX_INPUT_DEPTH, MAX_INPUT_VALUES

pytestmark = pytest.mark.anyio


class LineItem(BaseModel):
    """One line of an order."""

    sku: str
    quantity: Annotated[int, Field(ge=1, le=99)] = 1


@define_tool(registry=None)
async def place_order(
    customer: str,
    items: list[LineItem],
    express: bool = False,
    note: str | None = None,
    tags: dict[str, int] | None = None,
    mode: Literal["normal", "gift"] = "normal",
) -> dict[str, Any]:
    """Place an order for a customer.

    Args:
        customer: The customer's id.
        items: What to order.
        express: Ship by express.
        note: A note for the warehouse.
        tags: Counters to attach.
        mode: How to pack it.
    """
    return {
        "customer": customer,
        "skus": [item.sku for item in items],
        "quantity": sum(item.quantity for item in items),
        "express": express,
        "note": note,
        "tags": tags,
        "mode": mode,
    }


@define_tool(registry=None)
def anything(data: Any = None, items: list[Any] | None = None) -> str:
    """Take any JSON.

    Args:
        data: Any value.
        items: Any list.
    """
    return "ok"


def _deep(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


ORDER_INPUTS: list[Any] = [
    {"customer": "ada", "items": [{"sku": "book-1", "quantity": 2}, {"sku": "pen-7"}]},
    {"customer": "ada", "items": [{"sku": "b", "quantity": "3"}], "express": "true"},
    {"customer": "ada", "items": [{"sku": "b", "quantity": 0}]},  # below the bound
    {"customer": "ada", "items": [{"quantity": 2}]},  # a missing field inside a model
    {"customer": "ada", "items": "not a list"},
    {"customer": "ada", "items": '[{"sku": "b"}]'},  # JSON-encoded list: repaired
    {"customer": "ada", "items": [], "note": None},  # null for an optional: repaired
    {"customer": "ada", "items": [], "express": None},
    {"customer": "ada", "items": [], "colour": "red"},  # not a parameter
    {"customer": "ada", "items": [], "mode": "fragile"},
    {"customer": "ada", "items": [], "tags": {"a": "x", "b": 2}},
    {"items": [{"sku": 5}]},
    {},
    {"customer": "ada", "items": [{"sku": "b", "quantity": q} for q in range(120)]},
    {"customer": "x" * 300, "items": []},  # long text: counted, not glanced at
]

ANYTHING_INPUTS: list[Any] = [
    {"data": _deep(MAX_INPUT_DEPTH - 1)},
    {"data": _deep(MAX_INPUT_DEPTH)},  # too deep
    {"data": {"a": [{"b": [1, 2]}]}},  # three levels and more
    {"items": [1] * (MAX_INPUT_VALUES - 10)},
    {"items": [1] * MAX_INPUT_VALUES},  # too many values
    {"items": [[1, 2]] * 5000},  # past the glance's budget, within the limits
    {"items": [{"k": i} for i in range(64)], "data": {"x": [None, True, 1.5, "s"]}},
    {"data": "\ud800 lone"},
    [1, 2],  # not an object
    3,
    True,
]


def _outcome(prepared: PreparedCall | ToolResult) -> tuple[Any, ...]:
    if isinstance(prepared, PreparedCall):
        return ("call", repr(prepared.arguments))
    return ("refused", prepared.text, prepared.error_type)


def _same_prepare(tool: Tool[..., Any], value: Any) -> None:
    text = json.dumps(value)
    assert _outcome(tool.prepare(text)) == _outcome(tool.prepare(value)), value


@pytest.mark.parametrize("value", ORDER_INPUTS)
def test_model_arguments_mean_the_same_as_text_and_as_a_dict(value: Any) -> None:
    _same_prepare(place_order, value)


@pytest.mark.parametrize("value", ANYTHING_INPUTS, ids=range(len(ANYTHING_INPUTS)))
def test_limits_and_shapes_mean_the_same_as_text_and_as_a_dict(value: Any) -> None:
    _same_prepare(anything, value)


@pytest.mark.parametrize("value", ORDER_INPUTS)
async def test_a_run_gives_the_same_result_for_text_and_for_a_dict(value: Any) -> None:
    from_text = await place_order.run(json.dumps(value))
    from_dict = await place_order.run(value)
    assert (from_text.text, from_text.details, from_text.is_error, from_text.error_type) == (
        from_dict.text,
        from_dict.details,
        from_dict.is_error,
        from_dict.error_type,
    )


def test_the_cases_cover_both_outcomes() -> None:
    kinds = {_outcome(place_order.prepare(v))[0] for v in ORDER_INPUTS}
    kinds |= {_outcome(anything.prepare(v))[0] for v in ANYTHING_INPUTS}
    assert kinds == {"call", "refused"}
    refused = anything.prepare({"data": _deep(MAX_INPUT_DEPTH)})
    assert isinstance(refused, ToolResult) and "levels deep" in refused.text
    refused = anything.prepare(json.dumps({"items": [1] * MAX_INPUT_VALUES}))
    assert isinstance(refused, ToolResult) and "values" in refused.text


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=12) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=80,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_JSON, st.sampled_from(["customer", "items", "note", "tags", "data", "express"]))
def test_any_json_means_the_same_as_text_and_as_a_dict(value: Any, key: str) -> None:
    for raw in ({key: value}, {"customer": "ada", "items": [{"sku": "b"}], key: value}):
        _same_prepare(place_order, raw)
        _same_prepare(anything, raw)
