"""Built-in ``task_run``: delegate a task to a sub-agent made from a template.

The sub-agent is created from a registered template id, inherits the parent's model, deps,
registry and workspace, runs the prompt to its final answer, and is closed. It never has more
rights than its parent (`kode.agent.subagents`): its calls are decided by its template's
permission settings and by the parent's (the strictest answer wins), its tools are among the
parent's tools and pass the parent's policy layers plus the sub-agent layer (by default it
cannot start sub-agents of its own), and it runs shell commands under the parent's runtime
policy. A call it must ask about goes to the parent's approver, or to the parent's event stream
(``decide`` answers it); when the parent has neither, the call is refused at once. Its events
reach the parent as ``subagent`` events (tool calls and progress), so the parent's stream shows
what it is doing. Outside an agent there is nothing to delegate to, and the tool says so.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from kode.tools.context import ToolContext
from kode.tools.define import define_tool
from kode.tools.errors import ToolError, ToolErrorType
from kode.tools.services import SUBAGENTS

__all__ = ["task_run"]


@define_tool(kind="other", groups=["group:sessions"], aliases=["Task"])
async def task_run(
    template_id: Annotated[str, Field(min_length=1, description="The sub-agent's template id.")],
    prompt: Annotated[str, Field(min_length=1, description="The task, fully explained.")],
    *,
    ctx: ToolContext,
) -> str:
    """Delegate a self-contained task to a sub-agent and return its final answer.

    The sub-agent sees only the prompt, not this conversation: say everything it needs.
    """
    try:
        handle = SUBAGENTS.get(ctx.services)
    except TypeError as exc:
        raise ToolError(f"task_run cannot start a sub-agent: {exc}.") from None
    if handle is None:
        raise ToolError(
            "task_run works only inside an agent (there is no agent to start a sub-agent from).",
            type=ToolErrorType.EXECUTION_FAILED,
        )

    def forward(event: Any) -> None:
        kind = getattr(event, "type", "")
        if kind in ("tool_start", "tool_end", "tool_progress", "turn_end", "error"):
            data = {"template_id": template_id, "event": kind}
            for field in ("name", "message", "fraction", "is_error", "turn"):
                if hasattr(event, field):
                    data[field] = getattr(event, field)
            ctx.emit("subagent", data)
            if kind == "tool_start":
                ctx.progress(f"sub-agent {template_id}: running {event.name}")

    try:
        answer: str = await handle.run_subagent(template_id, prompt, on_event=forward)
    except LookupError as exc:
        raise ToolError(str(exc), type=ToolErrorType.INVALID_TOOL_PARAMS) from None
    except ValueError as exc:  # an unknown template id (TemplateError) or a bad template
        raise ToolError(
            f"Sub-agent {template_id!r} could not run: {exc}", type=ToolErrorType.EXECUTION_FAILED
        ) from None
    return answer or "(the sub-agent gave no answer)"
