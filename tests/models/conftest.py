from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest

from kode.models import Model, ModelEvent, ModelRequest, ModelResponse, TextDelta, ThinkingDelta
from kode.testing.providers import FakeProviderServer
from kode.tools import define_tool


@define_tool(registry=None)
def get_weather(city: str, unit: str = "c") -> str:
    """Get the current weather in a city.

    Args:
        city: The city, e.g. "Paris".
        unit: "c" or "f".
    """
    return f"sunny in {city}"


@define_tool(registry=None)
def get_time(zone: str) -> str:
    """Get the time in a time zone.

    Args:
        zone: An IANA zone name.
    """
    return "12:00"


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as fake:
        yield fake


@pytest.fixture
def tools() -> list[Any]:
    return [get_weather, get_time]


Collected = tuple[list[TextDelta | ThinkingDelta], ModelResponse]
CollectFunc = Callable[[Model, ModelRequest], Awaitable[Collected]]


async def _collect(model: Model, request: ModelRequest) -> Collected:
    events: list[ModelEvent] = [event async for event in model.stream(request)]
    *deltas, last = events
    assert isinstance(last, ModelResponse), events
    assert all(isinstance(d, TextDelta | ThinkingDelta) for d in deltas), events
    return deltas, last  # type: ignore[return-value]


@pytest.fixture
def collect() -> CollectFunc:
    """Stream a request to the end: the deltas, and the one final ModelResponse."""
    return _collect
