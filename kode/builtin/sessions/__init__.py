"""Built-in session tools (``group:sessions``): other sessions of the agent's store.

``sessions_list``, ``sessions_history``, ``session_status``, ``sessions_send``,
``sessions_spawn`` and ``agents_list`` reach the sessions of the store the agent keeps its own
session in, through the `SESSIONS` service the agent gives its tools. An agent reaches its own
session and the sessions it spawned, and others only as its template's ``session_access``
(`kode.agent.SessionAccess`) allows: sessions of named templates, with named labels, or all of
them. An agent without a store has no sessions to reach, and the tools say so. Permissions
apply as for any tool (``sessions_send`` and ``sessions_spawn`` run agents: kind ``other``, and
sub-agents may not use them by default). The agent ``sessions_spawn`` starts, and the one
``sessions_send`` runs, has no more rights than the agent that calls them, as for ``task_run``:
its permissions, tools, session access, runtime policy and workspace are within the caller's,
and its approvals go to the caller's approver or event stream (refused at once with neither).
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import Field

from kode.tools.context import ToolContext
from kode.tools.define import define_tool
from kode.tools.errors import ToolError, ToolErrorType
from kode.tools.services import SESSIONS, SessionDirectory

__all__ = [
    "agents_list",
    "session_status",
    "sessions_history",
    "sessions_list",
    "sessions_send",
    "sessions_spawn",
]

SessionId = Annotated[str, Field(min_length=1, max_length=256, description="The session's id.")]
Seconds = Annotated[
    float,
    Field(
        gt=0,
        le=3600,
        description="Seconds to wait for the reply (with wait); then the run is stopped.",
    ),
]


def _directory(ctx: ToolContext[Any], tool: str) -> SessionDirectory:
    try:
        found = SESSIONS.get(ctx.services)
    except TypeError as exc:
        raise ToolError(f"{tool} cannot reach sessions: {exc}.") from None
    if found is None:
        raise ToolError(
            f"{tool} works only inside an agent that keeps its session in a store "
            "(Agent.create(store=...)): there are no sessions to reach here.",
            type=ToolErrorType.EXECUTION_FAILED,
        )
    return found


async def _ask(tool: str, work: Any) -> str:
    try:
        return json.dumps(await work, ensure_ascii=False, indent=1)
    except LookupError as exc:
        raise ToolError(str(exc).strip("'\""), type=ToolErrorType.INVALID_TOOL_PARAMS) from None
    except ValueError as exc:
        raise ToolError(f"{tool}: {exc}", type=ToolErrorType.EXECUTION_FAILED) from None


@define_tool(kind="read", groups=["group:sessions"])
async def sessions_list(
    template: Annotated[str | None, Field(description="Only sessions of this template.")] = None,
    label: Annotated[str | None, Field(description="Only sessions with this label.")] = None,
    status: Annotated[
        Literal["idle", "running", "awaiting_approval", "awaiting_client", "failed"] | None,
        Field(description="Only sessions with this status."),
    ] = None,
    limit: Annotated[int, Field(ge=1, le=100, description="At most this many.")] = 20,
    *,
    ctx: ToolContext,
) -> str:
    """List the sessions this agent may reach (its own, those it spawned, others it is allowed).

    The most recently active first.
    """
    found = _directory(ctx, "sessions_list")
    return await _ask(
        "sessions_list",
        found.list_sessions(template=template, label=label, status=status, limit=limit),
    )


@define_tool(kind="read", groups=["group:sessions"])
async def sessions_history(
    session_id: SessionId,
    limit: Annotated[int, Field(ge=1, le=200, description="The last this many messages.")] = 20,
    *,
    ctx: ToolContext,
) -> str:
    """Read the last messages of a session."""
    found = _directory(ctx, "sessions_history")
    return await _ask("sessions_history", found.history(session_id, limit=limit))


@define_tool(kind="read", groups=["group:sessions"])
async def session_status(session_id: SessionId, *, ctx: ToolContext) -> str:
    """Show a session's status: what it runs, what it waits for, the tokens it used."""
    found = _directory(ctx, "session_status")
    return await _ask("session_status", found.status(session_id))


@define_tool(kind="other", groups=["group:sessions"])
async def sessions_send(
    session_id: SessionId,
    message: Annotated[str, Field(min_length=1, description="The message to send.")],
    wait: Annotated[
        bool, Field(description="Run the session now and return its reply (else: queue it).")
    ] = True,
    seconds: Seconds = 120.0,
    *,
    ctx: ToolContext,
) -> str:
    """Send a message into another session; by default run it and return its reply."""
    found = _directory(ctx, "sessions_send")
    return await _ask("sessions_send", found.send(session_id, message, wait=wait, seconds=seconds))


@define_tool(kind="other", groups=["group:sessions"])
async def sessions_spawn(
    template_id: Annotated[str, Field(min_length=1, description="The sub-agent's template id.")],
    prompt: Annotated[str, Field(min_length=1, description="The task, fully explained.")],
    label: Annotated[str | None, Field(description="A label for the new session.")] = None,
    wait: Annotated[
        bool, Field(description="Run it now and return its reply (else: queue the prompt).")
    ] = True,
    seconds: Seconds = 300.0,
    *,
    ctx: ToolContext,
) -> str:
    """Start a sub-agent in a new session of its own, which later messages can continue.

    The sub-agent sees only the prompt, not this conversation: say everything it needs.
    """
    found = _directory(ctx, "sessions_spawn")
    return await _ask(
        "sessions_spawn",
        found.spawn(template_id, prompt, label=label, wait=wait, seconds=seconds),
    )


@define_tool(kind="read", groups=["group:sessions"])
async def agents_list(*, ctx: ToolContext) -> str:
    """List the agent templates sessions_spawn can start."""
    found = _directory(ctx, "agents_list")
    return json.dumps(found.agents(), ensure_ascii=False, indent=1)
