"""The pytest plugin: fixtures that keep tests from leaking tool registrations.

`isolated_registry` empties the global registry for one test and puts back exactly what was
there afterwards, so ``@define_tool`` inside a test never leaks into another.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from kode.registries import ToolRegistry, registry
from kode.tools.context import ToolContext
from kode.tools.results import ToolResult

__all__ = ["call_tool", "isolated_registry"]


@pytest.fixture
def isolated_registry() -> Iterator[ToolRegistry]:
    """The global registry, emptied for this test and restored after it."""
    saved = registry._swap_state()
    try:
        yield registry
    finally:
        registry._swap_state(saved)


async def call_tool(
    name: str,
    input: Mapping[str, Any] | str | None = None,
    *,
    ctx: ToolContext[Any] | None = None,
    tools: ToolRegistry | None = None,
) -> ToolResult:
    """Call the registered tool `name` with `input`, as a model's ``tool_use`` would."""
    source = tools if tools is not None else registry
    return await source.get(name).run(input, ctx)
