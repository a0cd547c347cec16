"""Tools `kode mcp serve` serves in the tracing tests."""

from __future__ import annotations

from kode import ToolError, define_tool


@define_tool(kind="read")
def shout(text: str) -> str:
    """Say it louder.

    Args:
        text: What to say.
    """
    return text.upper()


@define_tool(kind="read")
def refuse() -> str:
    """Always refuse."""
    raise ToolError("Not today.")
