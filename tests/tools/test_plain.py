"""Plain data: what a tool returned is turned into a result in place, or in a worker thread.

Plain data (JSON data, and models, dataclasses, tuples, dates ... of it) becomes a result in
the event loop's own thread, since that is quick; an iterator, an object whose serialisation
runs code of its own, and a huge value are turned in a worker thread. The tests that hold the
default thread limiter see the difference: a conversion that needs a worker thread waits for
it, one in place does not.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import uuid
from collections.abc import AsyncIterator, Iterator
from decimal import Decimal
from typing import Any

import anyio
import anyio.to_thread
import pytest
from pydantic import BaseModel, computed_field, field_serializer

from kode import Tool, define_tool
from kode.tools.plain import MAX_INLINE_VALUES, is_json_data, is_plain_data
from kode.tools.results import inline_result, to_result

pytestmark = pytest.mark.anyio


class Point(BaseModel):
    x: int
    y: int


class Line(BaseModel):
    start: Point
    end: Point
    label: str | None = None
    tags: list[str] = []


class Shouting(BaseModel):
    word: str

    @field_serializer("word")
    def loud(self, word: str) -> str:
        return word.upper()


class Area(BaseModel):
    side: int

    @computed_field  # type: ignore[prop-decorator]
    @property
    def area(self) -> int:
        return self.side**2


class Holder(BaseModel):
    value: Any


@dataclasses.dataclass
class Pair:
    left: int
    right: list[str]


class Colour(enum.Enum):
    RED = "red"


def _count() -> Iterator[int]:
    yield 1


# --- the checks -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        {},
        [],
        {"a": 1, "b": "x", "c": None, "d": True, "e": 1.5},
        [{"id": i, "tags": ["a", "b"], "nested": {"deep": [1, [2, [3]]]}} for i in range(20)],
    ],
)
def test_json_data_is_json_data_and_plain(value: Any) -> None:
    assert is_json_data(value)
    assert is_plain_data(value)


@pytest.mark.parametrize(
    "value",
    [
        {1: "int key"},
        {"t": (1, 2)},
        [datetime.date(2024, 1, 2)],
        {"p": Point(x=1, y=2)},
        [Colour.RED],
    ],
)
def test_plain_values_that_are_not_json_data(value: Any) -> None:
    assert not is_json_data(value)
    assert is_plain_data(value)


@pytest.mark.parametrize(
    "value",
    [
        Line(start=Point(x=0, y=0), end=Point(x=1, y=1), tags=["a"]),
        Pair(left=1, right=["x"]),
        (1, "two", None),
        uuid.UUID(int=7),
        Decimal("1.5"),
        datetime.datetime(2024, 1, 2, 3, 4, 5),
        datetime.timedelta(seconds=3),
        Colour.RED,
        Holder(value={"a": [1, 2]}),
    ],
)
def test_models_dataclasses_and_leaves_of_plain_data_are_plain(value: Any) -> None:
    assert is_plain_data(value)


@pytest.mark.parametrize(
    "value",
    [
        _count(),
        {"numbers": _count()},
        [1, iter([2])],
        Holder(value=_count()),
        Shouting(word="hi"),
        Area(side=2),
        {"shout": Shouting(word="hi")},
        {(1, 2): "tuple key"},
        object(),
        {"set": {1, 2}},
    ],
)
def test_iterators_objects_with_code_and_unknown_types_are_not_plain(value: Any) -> None:
    assert not is_plain_data(value)


def test_a_value_past_the_budget_is_not_plain() -> None:
    small = list(range(MAX_INLINE_VALUES - 1))
    assert is_json_data(small) and is_plain_data(small)
    big = list(range(MAX_INLINE_VALUES + 1))
    assert not is_json_data(big) and not is_plain_data(big)
    nested = {"rows": [{"id": i, "name": "x"} for i in range(MAX_INLINE_VALUES // 4)]}
    assert not is_json_data(nested) and not is_plain_data(nested)


def test_a_value_that_contains_itself_ends_the_check() -> None:
    loop: list[Any] = [1]
    loop.append(loop)
    assert not is_json_data(loop) and not is_plain_data(loop)
    mapping: dict[str, Any] = {}
    mapping["self"] = mapping
    assert not is_json_data(mapping) and not is_plain_data(mapping)


# --- the results ------------------------------------------------------------------------------


def test_json_data_is_its_own_details_and_its_text_is_compact_json() -> None:
    value = {"name": "ada", "tags": ["x", "é"], "n": 2, "ok": True, "none": None}
    result = inline_result(value, tool_name="t")
    assert result is not None and not result.is_error
    assert result.text == '{"name":"ada","tags":["x","é"],"n":2,"ok":true,"none":null}'
    assert result.details is value  # kept as it is: no copy
    assert to_result(value, tool_name="t").details is value


def test_plain_data_that_is_not_json_data_gets_its_json_form_as_details() -> None:
    result = inline_result({"at": datetime.date(2024, 1, 2), "p": (1, 2)}, tool_name="t")
    assert result is not None
    assert result.details == {"at": "2024-01-02", "p": [1, 2]}
    model = inline_result(Line(start=Point(x=0, y=0), end=Point(x=1, y=2)), tool_name="t")
    assert model is not None
    assert model.details == {
        "start": {"x": 0, "y": 0},
        "end": {"x": 1, "y": 2},
        "label": None,
        "tags": [],
    }


def test_what_is_not_plain_is_left_for_a_worker_thread() -> None:
    for value in (_count(), Shouting(word="hi"), {"n": _count()}):
        assert inline_result(value, tool_name="t") is None


def test_a_lone_surrogate_in_json_data_is_an_invalid_result() -> None:
    result = inline_result({"text": "bad \ud800"}, tool_name="t")
    assert result is not None and result.is_error
    assert "returned a dict that cannot be shown to a model" in result.text


# --- where the conversion happens -------------------------------------------------------------


@pytest.fixture
async def no_worker_thread() -> AsyncIterator[None]:
    """The default thread limiter with its only token taken: a worker thread cannot start."""
    limiter = anyio.to_thread.current_default_thread_limiter()
    total = limiter.total_tokens
    limiter.total_tokens = 1
    holder = object()
    limiter.acquire_on_behalf_of_nowait(holder)
    try:
        yield
    finally:
        limiter.release_on_behalf_of(holder)
        limiter.total_tokens = total


def _returning(value: Any, *, is_async: bool) -> Tool[..., Any]:
    if is_async:

        async def give() -> Any:
            """Return the value."""
            return value

        return define_tool(registry=None, timeout=1)(give)

    def give_inline() -> Any:
        """Return the value."""
        return value

    return define_tool(registry=None, run_in_thread=False)(give_inline)


@pytest.mark.usefixtures("no_worker_thread")
@pytest.mark.parametrize("is_async", [True, False], ids=["async", "inline"])
@pytest.mark.parametrize(
    "value",
    [
        {"order": "ord_1", "skus": ["a", "b"], "total": 3.5},
        [{"id": 1}, {"id": 2}],
        Line(start=Point(x=0, y=0), end=Point(x=1, y=1)),
        Pair(left=1, right=["x"]),
    ],
    ids=["dict", "list", "model", "dataclass"],
)
async def test_plain_data_becomes_a_result_without_a_worker_thread(
    value: Any, is_async: bool
) -> None:
    with anyio.fail_after(5):
        result = await _returning(value, is_async=is_async).run({})
    assert not result.is_error, result.text
    assert result.details == to_result(value, tool_name="give").details


@pytest.mark.usefixtures("no_worker_thread")
@pytest.mark.parametrize("is_async", [True, False], ids=["async", "inline"])
async def test_an_iterator_or_code_to_run_waits_for_a_worker_thread(is_async: bool) -> None:
    for value in (_count(), {"n": _count()}, Shouting(word="hi")):
        tool = _returning(value, is_async=is_async)
        with anyio.move_on_after(0.3) as scope:
            await tool.run({})
        assert scope.cancelled_caught, f"{value!r} was converted without a worker thread"


async def test_a_value_turned_in_a_worker_thread_is_the_same_result() -> None:
    @define_tool(registry=None)
    async def shout() -> Shouting:
        """Shout."""
        return Shouting(word="hi")

    result = await shout.run({})
    assert not result.is_error and result.details == {"word": "HI"}
