"""Using a server on the 2026-07-28 protocol: negotiation, answered input, list changes.

This module owns what kode's client does differently on the 2026-07-28 protocol
(`kode.mcp.session.RemoteServer` calls it):

- `negotiate`: the SDK's own connect policy (``server/discover`` at the newest revision,
  the ``initialize`` handshake for a server that does not answer it), so kode speaks the
  newest revision a server offers;
- `call_answering`: a ``tools/call`` whose ``input_required`` results (a question for the
  user, a model's answer, the roots) are answered, and the call made again with the answers
  and the server's ``requestState``, passed back as it came, until the tool's result; a call
  the server runs as a task (the tasks extension) is followed to its result
  (`kode.mcp.task_extension.drive`);
- `watch_lists`: the ``subscriptions/listen`` stream that brings the news a handshake-era
  server sends on its connection (tool, resource and prompt lists that changed, resources
  updated).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Literal

import anyio
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import (
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated,
    ToolsListChanged,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from kode.mcp.task_extension import CreatedTask, drive

__all__ = ["MAX_ROUNDS", "Protocol", "call_answering", "is_modern", "negotiate", "watch_lists"]

MAX_ROUNDS = 64
"""The most ``input_required`` rounds kode answers for one call before it gives up."""

_STATE_ONLY_WAIT = 0.25  # seconds before retrying a round that asked for nothing

Protocol = Literal["newest", "handshake"]
"""Which revision kode's client speaks: the newest both sides do, or the handshake ones."""

Answer = Callable[[types.InputRequest], Awaitable[types.InputResponse | types.ErrorData]]


def is_modern(session: ClientSession) -> bool:
    """Whether the session speaks a sessionless revision (2026-07-28 or later)."""
    return session.protocol_version in MODERN_PROTOCOL_VERSIONS


async def negotiate(session: ClientSession) -> None:
    """Agree on the newest revision both sides speak (``server/discover``, else ``initialize``).

    Raises:
        MCPError: the server speaks only revisions kode does not, or refused the handshake.
    """
    # The SDK's Client runs this same policy; ClientSession leaves it to its owner.
    from mcp.client._probe import negotiate_auto

    await negotiate_auto(session)


async def call_answering(
    session: ClientSession,
    name: str,
    arguments: dict[str, Any],
    *,
    answer: Answer,
    progress: ProgressFnT | None = None,
    meta: types.RequestParamsMeta | None = None,
    status: Callable[[str], None] | None = None,
) -> types.CallToolResult:
    """Call `name`, answering each ``input_required`` result with `answer`, until its result.

    A session built with the tasks claim (`kode.mcp.task_extension.task_claim`) opts in to
    tasks: a call the server runs as one is followed to its end, its status messages given
    to `status`, and cancelled on the server when this call is.

    Raises:
        MCPError: the server refused a round, `answer` refused a request (its error), or the
            server asked for more than `MAX_ROUNDS` rounds.
    """
    responses: types.InputResponses | None = None
    state: str | None = None
    for _ in range(MAX_ROUNDS + 1):
        result = await session.call_tool(
            name,
            arguments,
            progress_callback=progress,
            meta=meta,
            input_responses=responses,
            request_state=state,
            allow_input_required=True,
            allow_claimed=True,
        )
        if isinstance(result, types.CallToolResult):
            return result
        if isinstance(result, CreatedTask):
            return await drive(session, result, name=name, answer=answer, status=status)
        if not isinstance(result, types.InputRequiredResult):
            raise MCPError(
                code=types.INTERNAL_ERROR,
                message=f"the server answered a call of '{name}' with neither a tool's result "
                "nor a request for input",
            )
        if not result.input_requests:  # the server wants time, not answers: wait a little
            await anyio.sleep(_STATE_ONLY_WAIT)
        responses = {}
        for key, request in (result.input_requests or {}).items():
            # one at a time: each may ask the user, and one question at a time is kinder
            got = await answer(request)
            if isinstance(got, types.ErrorData):
                raise MCPError.from_error_data(got)
            responses[key] = got
        state = result.request_state
    raise MCPError(
        code=types.INTERNAL_ERROR,
        message=f"the server asked for input more than {MAX_ROUNDS} times in one call of "
        f"'{name}', so kode stopped answering",
    )


def _kind(event: object) -> tuple[str, str | None] | None:
    if isinstance(event, ToolsListChanged):
        return "tools_changed", None
    if isinstance(event, ResourcesListChanged):
        return "resources_changed", None
    if isinstance(event, PromptsListChanged):
        return "prompts_changed", None
    if isinstance(event, ResourceUpdated):
        return "resource_updated", event.uri
    return None


async def watch_lists(
    session: ClientSession, on_change: Callable[[str, str | None], Awaitable[None]]
) -> None:
    """Listen for the server's list changes until cancelled; each is given to `on_change`.

    A server without ``listChanged`` for any list is not asked; a lost stream is not
    reopened (the tools kode registered stay as they were).
    """
    from mcp.client.subscriptions import listen

    capabilities = session.server_capabilities
    if capabilities is None:
        return
    tools = bool(capabilities.tools and capabilities.tools.list_changed)
    resources = bool(capabilities.resources and capabilities.resources.list_changed)
    prompts = bool(capabilities.prompts and capabilities.prompts.list_changed)
    if not (tools or resources or prompts):
        return
    try:
        async with listen(
            session,
            tools_list_changed=tools,
            resources_list_changed=resources,
            prompts_list_changed=prompts,
        ) as subscription:
            async for event in subscription:
                found = _kind(event)
                if found is not None:
                    await on_change(*found)
    except (MCPError, RuntimeError):
        return  # the server refused or dropped the stream: its news are lost, not the calls
