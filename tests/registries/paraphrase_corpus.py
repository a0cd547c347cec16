"""Paraphrase sets for tool search: a catalogue of 135 tools and two sets of queries.

The tools (``data/paraphrase_tools.json``) are realistic tools of many domains (weather,
calendar, mail, money, travel, shopping, smart home, operations, health, language...), several
close to each other on purpose (the forecast and the current weather, a text message and a
chat post). The queries are written as a user would ask and avoid the words of the tool they
want (``"is it going to pour tomorrow"`` for the weather forecast), so that words alone do not
find them. ``data/paraphrase_tuning.json`` is the set the hybrid ranking was tuned on;
``data/paraphrase_heldout.json`` was written at the same time, before any tuning, and is only
measured: it shows how the search does on queries it was not fitted to.
"""

from __future__ import annotations

import json
from pathlib import Path

from kode import Tool, ToolRegistry

DATA = Path(__file__).resolve().parent / "data"


def _queries(name: str) -> list[tuple[str, list[str]]]:
    rows = json.loads((DATA / name).read_text())
    return [(row["query"], row["tools"]) for row in rows]


TUNING: list[tuple[str, list[str]]] = _queries("paraphrase_tuning.json")
"""(query, the tools that answer it): the set the ranking was tuned on."""
HELD_OUT: list[tuple[str, list[str]]] = _queries("paraphrase_heldout.json")
"""(query, the tools that answer it): kept apart, never tuned on."""


def catalogue(name: str = "paraphrase") -> ToolRegistry:
    """A registry of the catalogue's tools."""
    reg = ToolRegistry(name)
    for spec in json.loads((DATA / "paraphrase_tools.json").read_text()):
        schema = {
            "type": "object",
            "properties": {
                p: {"type": "string", "description": d} for p, d in spec["parameters"].items()
            },
        }
        reg.register(
            Tool.from_schema(spec["name"], description=spec["description"], input_schema=schema)
        )
    return reg
