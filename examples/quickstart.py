"""kode in one screen: define two tools, show their schemas, run them as a model would, then
keep an agent's session in SQLite and continue it in a second process.

Run it with:  python examples/quickstart.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Annotated, Literal

import anyio
from pydantic import Field

from kode import Agent, AgentTemplate, ToolContext, define_tool, registry
from kode.models import ScriptedModel, tool_use


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


NOTES = AgentTemplate(id="notes", tools=["search_notes"])


async def save_session() -> tuple[str, str]:
    """An agent whose session is kept in SQLite (a second process continues it)."""
    url = f"sqlite:///{Path(tempfile.mkdtemp()) / 'sessions.db'}"
    model = ScriptedModel(
        [[tool_use("search_notes", {"query": "coffee"})], "You wrote about coffee twice."]
    )
    async with Agent.create(NOTES, model=model, store=url) as agent:
        reply = await agent.send("What did I write about coffee?")
    print(f"\n=== process {os.getpid()} saved session {agent.session_id}: {reply.text}")
    return url, agent.session_id


async def resume_session(url: str, session_id: str) -> None:
    model = ScriptedModel(["Yes: one note about tomatoes."])
    async with await Agent.resume(session_id, store=url, model=model, template=NOTES) as agent:
        kept = len(agent.messages)
        reply = await agent.send("Anything else?")
    print(f"=== process {os.getpid()} resumed it with {kept} messages: {reply.text}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["resume"]:
        anyio.run(resume_session, sys.argv[2], sys.argv[3])
    else:
        main()
        url, session_id = anyio.run(save_session)
        subprocess.run([sys.executable, __file__, "resume", url, session_id], check=True)
