"""The tools `examples/mcp_serve.py` serves: a tiny notes store, defined with `@define_tool`.

Serve them to any MCP client with:  kode mcp serve examples/mcp_tools.py
"""

from __future__ import annotations

from typing import Annotated

import anyio
from pydantic import BaseModel, Field

from kode import ToolContext, ToolError, ToolErrorType, define_tool


class Note(BaseModel):
    """One note."""

    id: int
    title: str
    text: str


NOTES = {
    1: Note(id=1, title="MCP", text="The Model Context Protocol carries tools between programs."),
    2: Note(id=2, title="Groceries", text="Oat milk, coffee, bread."),
    3: Note(id=3, title="kode", text="Defining a tool is registering it; MCP works both ways."),
}


@define_tool(kind="search")
async def search_notes(
    query: str, limit: Annotated[int, Field(ge=1, le=10)] = 5, *, ctx: ToolContext
) -> list[Note]:
    """Find notes whose title or text mention a word.

    Args:
        query: The word to look for, case-insensitive.
        limit: At most this many notes.
    """
    found = []
    for index, note in enumerate(NOTES.values(), start=1):
        ctx.progress(f"read note {note.id}", fraction=index / len(NOTES))
        await anyio.sleep(0.01)
        if query.lower() in f"{note.title} {note.text}".lower():
            found.append(note)
    ctx.logger.info("%d of %d notes match %r", len(found), len(NOTES), query)
    return found[:limit]


@define_tool(kind="delete")
def delete_note(note_id: int) -> str:
    """Delete a note for good.

    Args:
        note_id: The note's id, as search_notes returns it.
    """
    if note_id not in NOTES:
        raise ToolError(
            f"Note {note_id} does not exist; use search_notes to find ids.",
            type=ToolErrorType.FILE_NOT_FOUND,
        )
    del NOTES[note_id]
    return f"Deleted note {note_id}."
