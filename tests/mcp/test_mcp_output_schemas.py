"""Output schemas over MCP: ``kode mcp serve`` over stdio, driven by the official client.

A served tool with a structured return type advertises it as ``outputSchema`` (wrapped as
``{"result": ...}`` when it is not an object) and sends ``structuredContent`` only after checking
it against that schema: a result that breaks it is an ``isError`` result saying how.
"""

from __future__ import annotations

from pathlib import Path

import mcp.types as types
import pytest
from mcp_peers import served_over_stdio, write

pytestmark = pytest.mark.anyio

TOOLS = '''
    from typing import Any

    from pydantic import BaseModel

    from kode import define_tool
    from kode.tools.results import text_result


    class Weather(BaseModel):
        city: str
        celsius: float


    @define_tool(kind="read")
    def weather(city: str) -> Weather:
        """Get the weather in a city.

        Args:
            city: The city's name.
        """
        return Weather(city=city, celsius=21.5)


    @define_tool(kind="read")
    def fibs(n: int) -> list[int]:
        """The first Fibonacci numbers.

        Args:
            n: How many.
        """
        out = [1, 1]
        while len(out) < n:
            out.append(out[-1] + out[-2])
        return out[:n]


    @define_tool(kind="read")
    def liar(city: str) -> Weather:
        """Get the weather, wrongly typed.

        Args:
            city: The city's name.
        """
        bad: Any = {"city": city, "celsius": "warm", "wind": 3}
        return bad


    @define_tool(kind="read")
    def mute(city: str) -> Weather:
        """Get the weather, as words only.

        Args:
            city: The city's name.
        """
        said: Any = text_result(f"warm in {city}")
        return said
'''


def text(result: types.CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))


async def test_output_schemas_and_checked_structured_content(tmp_path: Path) -> None:
    module = write(tmp_path / "typed_tools.py", TOOLS)
    async with served_over_stdio(module) as session:
        listed = {t.name: t for t in (await session.list_tools()).tools}
        assert listed["weather"].output_schema == {
            "type": "object",
            "properties": {"city": {"type": "string"}, "celsius": {"type": "number"}},
            "required": ["city", "celsius"],
        }
        assert listed["fibs"].output_schema == {
            "type": "object",
            "properties": {"result": {"type": "array", "items": {"type": "integer"}}},
            "required": ["result"],
        }

        ok = await session.call_tool("weather", {"city": "Oslo"})
        assert not ok.is_error
        assert ok.structured_content == {"city": "Oslo", "celsius": 21.5}
        wrapped = await session.call_tool("fibs", {"n": 5})
        assert wrapped.structured_content == {"result": [1, 1, 2, 3, 5]}

        # a result that breaks the schema is never sent as if it matched
        broken = await session.call_tool("liar", {"city": "Oslo"})
        assert broken.is_error and broken.structured_content is None
        assert text(broken) == (
            "Tool 'liar' returned a result that does not match its output schema (celsius: "
            "'warm' is not of type 'number'): the result was not sent."
        )
        missing = await session.call_tool("mute", {"city": "Oslo"})
        assert missing.is_error and missing.structured_content is None
        assert text(missing) == (
            "Tool 'mute' returned no structured result (a JSON object), though its output "
            "schema promises one: the result was not sent."
        )
