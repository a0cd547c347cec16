"""Tools `kode mcp serve` serves in the tracing tests."""

from __future__ import annotations

from kode import define_tool


@define_tool(kind="read")
def shout(text: str) -> str:
    """Say it louder.

    Args:
        text: What to say.
    """
    return text.upper()
