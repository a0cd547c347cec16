"""kode in one screen: define two tools, show their schemas, run them as a model would.

Run it with:  python examples/quickstart.py
"""

from __future__ import annotations

import json
from typing import Annotated, Literal

from pydantic import Field

from kode import ToolContext, define_tool, registry


@define_tool(kind="search")
def search_notes(
    query: str,
    limit: Annotated[int, Field(ge=1, le=20)] = 5,
    tags: list[Literal["work", "home", "ideas"]] | None = None,
) -> list[dict[str, str]]:
    """Search the notebook for notes that mention a word.

    Args:
        query: A word to look for, case-insensitive.
        limit: At most this many notes come back.
        tags: Only notes with one of these tags.
    """
    notes = [
        {"title": "Groceries", "tag": "home", "text": "eggs, coffee, bread"},
        {"title": "Roadmap", "tag": "work", "text": "ship schemas, then coffee"},
        {"title": "Garden", "tag": "ideas", "text": "tomatoes along the fence"},
    ]
    hits = [
        n
        for n in notes
        if query.lower() in n["text"].lower() and (tags is None or n["tag"] in tags)
    ]
    return hits[:limit]


@define_tool
async def convert_temperature(value: float, unit: Literal["C", "F"], ctx: ToolContext) -> str:
    """Convert a temperature between Celsius and Fahrenheit.

    Args:
        value: The temperature to convert.
        unit: The unit `value` is in.
    """
    ctx.progress("converting", fraction=0.5)
    if unit == "C":
        return f"{value:g} °C is {value * 9 / 5 + 32:g} °F"
    return f"{value:g} °F is {(value - 32) * 5 / 9:g} °C"


def show(title: str, value: object) -> None:
    print(f"\n=== {title}")
    print(json.dumps(value, indent=2, ensure_ascii=False))


def main() -> None:
    print("Registered tools:", registry.names())
    print("Still a function:", search_notes("coffee", limit=1))

    for dialect in ("anthropic", "openai", "gemini"):
        show(f"search_notes as {dialect} sees it", search_notes.schema(dialect))
    show("convert_temperature as gemini sees it", convert_temperature.schema("gemini"))

    calls = [
        (search_notes, "toolu_01", {"query": "coffee", "limit": "2"}),
        (search_notes, "toolu_02", {"query": "coffee", "limit": 99, "tag": "work"}),
        (search_notes, "toolu_03", '{"query": "tomatoes", "tags": "[\\"ideas\\"]"}'),
        (convert_temperature, "toolu_04", {"value": 21.5, "unit": "C"}),
        (convert_temperature, "toolu_05", {"value": "warm", "unit": "K"}),
    ]
    for tool, call_id, args in calls:
        result = tool.run_sync(args)
        show(f"{tool.name}({args}) -> tool_result", result.to_block(call_id))


if __name__ == "__main__":
    main()
