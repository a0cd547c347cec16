"""Helpers for testing tools and agents: call a tool as a model would, check results.

These are plain functions, usable with or without pytest.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kode.registries import ToolRegistry, registry
from kode.tools.context import ToolContext
from kode.tools.errors import ToolErrorType
from kode.tools.results import ToolResult

__all__ = ["assert_error", "assert_ok", "call_tool", "call_tool_sync"]


async def call_tool(
    name: str,
    input: Mapping[str, Any] | str | None = None,
    *,
    ctx: ToolContext[Any] | None = None,
    tools: ToolRegistry | None = None,
) -> ToolResult:
    """Call the registered tool `name` with `input`, as a model's ``tool_use`` would.

    The name is looked up like a model's (trimmed, any case, aliases); `input` may be a dict
    or a JSON string. The result is what the model would see.
    """
    source = tools if tools is not None else registry
    return await source.get(name).run(input, ctx)


def call_tool_sync(
    name: str,
    input: Mapping[str, Any] | str | None = None,
    *,
    ctx: ToolContext[Any] | None = None,
    tools: ToolRegistry | None = None,
) -> ToolResult:
    """`call_tool` from sync code (works inside a running event loop too)."""
    from kode.tools.sync import run_sync

    return run_sync(_call, name, input, ctx, tools)


async def _call(
    name: str,
    input: Mapping[str, Any] | str | None,
    ctx: ToolContext[Any] | None,
    tools: ToolRegistry | None,
) -> ToolResult:
    return await call_tool(name, input, ctx=ctx, tools=tools)


def assert_ok(
    result: ToolResult, text: str | None = None, *, contains: str | None = None
) -> ToolResult:
    """Assert that `result` is not an error (and has this text, or contains this); return it.

    The failure message shows the result's text, so a failing test says what the tool said.
    """
    if result.is_error:
        raise AssertionError(f"expected a successful result, got an error: {result.text!r}")
    if text is not None and result.text != text:
        raise AssertionError(f"expected text {text!r}, got {result.text!r}")
    if contains is not None and contains not in result.text:
        raise AssertionError(f"expected {contains!r} in {result.text!r}")
    return result


def assert_error(
    result: ToolResult,
    error_type: ToolErrorType | str | None = None,
    *,
    contains: str | None = None,
) -> ToolResult:
    """Assert that `result` is an error (of this type, containing this text); return it."""
    if not result.is_error:
        raise AssertionError(f"expected an error result, got success: {result.text!r}")
    if error_type is not None:
        wanted = ToolErrorType(error_type)
        if result.error_type is not wanted:
            got = result.error_type.value if result.error_type else None
            raise AssertionError(f"expected error type {wanted.value}, got {got}: {result.text!r}")
    if contains is not None and contains not in result.text:
        raise AssertionError(f"expected {contains!r} in {result.text!r}")
    return result
