"""Built-in todo tools: the agent's task list, kept in its state and shown as events.

``todo_write`` replaces the whole list (the model sends it back with changes), ``todo_read``
returns it. Each item has an id, a title, a status (``pending``, ``in_progress``,
``completed``) and notes; at most one item is in progress at a time. The list is the
`TODOS` service (``ctx.services["todos"]``) — an agent puts its own `Agent.todos` there, so
it is saved with the agent's state — and every change is emitted as a ``todos`` event.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from kode.tools.context import ToolContext
from kode.tools.define import define_tool
from kode.tools.errors import ToolError, ToolErrorType
from kode.tools.invocation import Display
from kode.tools.results import ToolResult, text_result
from kode.tools.services import TODOS

__all__ = ["TodoItem", "todo_read", "todo_write"]


class TodoItem(BaseModel):
    """One task of the agent's list."""

    model_config = ConfigDict(extra="forbid", defer_build=True)  # built with todo_write's model
    id: Annotated[str, Field(min_length=1, max_length=64, description="A short stable id.")]
    title: Annotated[str, Field(min_length=1, max_length=300, description="What to do.")]
    status: Literal["pending", "in_progress", "completed"] = "pending"
    notes: Annotated[str, Field(max_length=2000, description="Anything worth keeping.")] = ""


def _list(ctx: ToolContext[Any]) -> list[dict[str, Any]]:
    try:
        return TODOS.get_or_set(ctx.services, list)
    except TypeError as exc:
        raise ToolError(
            f"The agent's todo list is not available: {exc}.", type=ToolErrorType.EXECUTION_FAILED
        ) from None


def _summary(todos: list[dict[str, Any]]) -> str:
    if not todos:
        return "The todo list is empty."
    marks = {"pending": "[ ]", "in_progress": "[>]", "completed": "[x]"}
    lines = [f"{marks[t['status']]} {t['id']}: {t['title']}" for t in todos]
    done = sum(t["status"] == "completed" for t in todos)
    return "\n".join([*lines, f"({done} of {len(todos)} completed)"])


@define_tool(kind="think", groups=["group:think"], aliases=["TodoWrite"])
def todo_write(
    todos: Annotated[list[TodoItem], Field(max_length=100)], *, ctx: ToolContext
) -> ToolResult:
    """Replace the task list with this one (send every item, changed or not).

    Use it to plan multi-step work and to mark progress: at most one item may be
    "in_progress"; mark items "completed" as soon as they are done. Ids must be unique.

    Args:
        todos: The whole list, in order.
        ctx: Injected by kode (not shown to the model).
    """
    ids = [t.id for t in todos]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise ToolError(
            f"Todo ids must be unique; repeated: {', '.join(duplicates)}.",
            type=ToolErrorType.INVALID_TOOL_PARAMS,
        )
    active = [t.id for t in todos if t.status == "in_progress"]
    if len(active) > 1:
        raise ToolError(
            f"Only one todo may be in progress at a time; {', '.join(active)} are. Mark the "
            "others pending or completed.",
            type=ToolErrorType.INVALID_TOOL_PARAMS,
        )
    current = _list(ctx)
    current[:] = [t.model_dump() for t in todos]
    items = [dict(t) for t in current]
    ctx.emit("todos", items)
    summary = _summary(current)
    return text_result(summary, display=Display(kind="todos", text=summary, data=items))


@define_tool(kind="think", groups=["group:think"], aliases=["TodoRead"])
def todo_read(*, ctx: ToolContext) -> str:
    """Show the task list with each item's status."""
    return _summary(_list(ctx))
