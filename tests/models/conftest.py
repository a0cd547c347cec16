from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

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
    """A fake provider server on 127.0.0.1, closed after the test."""
    with FakeProviderServer() as fake:
        yield fake


@pytest.fixture
def tools() -> tuple[Any, Any]:
    """Two tools: ``get_weather(city, unit="c")`` and ``get_time(zone)``."""
    return get_weather, get_time
