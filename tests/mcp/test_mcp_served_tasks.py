"""A served kode tool run as an MCP task: ``tools/call`` with ``task``, then ``tasks/*``.

`kode mcp serve` runs as a subprocess; the official SDK's ``ClientSession`` over stdio sends
the task requests of protocol 2025-11-25 (the SDK has their types, not a helper, and its
``send_request`` insists that ``tools/call`` answers with a ``CallToolResult``, so the call
that creates a task goes through the SDK's JSON-RPC dispatcher beneath the session).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.session import ClientRequestContext
from mcp.shared.exceptions import MCPError
from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher
from mcp_peers import serve_command, subprocess_env, write

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("anyio_backend", ["asyncio"])]

SLOW_TOOLS = '''
"""Long-running tools."""
import anyio

from kode import ToolContext, define_tool


@define_tool(kind="read")
async def survey(area: str, ctx: ToolContext) -> str:
    """Survey an area, step by step, asking the user which part matters most."""
    reply = await ctx.elicit(f"Which part of {area}?", {
        "type": "object", "properties": {"part": {"type": "string"}}, "required": ["part"],
    })
    part = (reply.content or {}).get("part", "all")
    for step in range(1, 4):
        ctx.progress(f"surveying {part}: step {step} of 3", fraction=step / 3)
        await anyio.sleep(0.2)
    return f"{area} ({part}) surveyed"


@define_tool(kind="read")
async def forever() -> str:
    """Never finish."""
    await anyio.sleep(3600)
    return "never"
'''


async def elicit(
    context: ClientRequestContext, params: types.ElicitRequestParams
) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"part": "north"})


async def get(session: ClientSession, task_id: str) -> types.GetTaskResult:
    request = types.GetTaskRequest(params=types.GetTaskRequestParams(task_id=task_id))
    return await session.send_request(request, types.GetTaskResult)


async def start(
    dispatcher: JSONRPCDispatcher[Any], name: str, arguments: dict[str, str]
) -> types.Task:
    params = {"name": name, "arguments": arguments, "task": {"ttl": 60_000}}
    raw = await dispatcher.send_raw_request("tools/call", params)
    return types.CreateTaskResult.model_validate(raw, by_name=False).task


async def test_a_served_tool_runs_as_a_task(tmp_path: Path) -> None:
    module = write(tmp_path / "slow_tools.py", SLOW_TOOLS)
    command = serve_command(module)
    params = StdioServerParameters(
        command=command[0], args=command[1:], cwd=str(tmp_path), env=subprocess_env()
    )
    async with stdio_client(params) as (read, write_stream):
        dispatcher: JSONRPCDispatcher[Any] = JSONRPCDispatcher(read, write_stream)
        async with ClientSession(dispatcher=dispatcher, elicitation_callback=elicit) as session:
            await check_tasks(session, dispatcher)


async def check_tasks(session: ClientSession, dispatcher: JSONRPCDispatcher[Any]) -> None:
    init = await session.initialize()
    assert init.capabilities.tasks is not None
    assert init.capabilities.tasks.requests is not None
    assert init.capabilities.tasks.requests.tools is not None
    listed = {t.name: t for t in (await session.list_tools()).tools}
    assert listed["survey"].execution == types.ToolExecution(task_support="optional")

    task = await start(dispatcher, "survey", {"area": "the bay"})
    assert task.status == "working" and task.ttl == 60_000
    seen: set[str] = set()
    with anyio.fail_after(20):
        while (now := await get(session, task.task_id)).status == "working":
            if now.status_message:
                seen.add(now.status_message)
            await anyio.sleep(0.05)
    assert now.status == "completed"
    assert seen & {f"surveying north: step {n} of 3" for n in (1, 2, 3)}  # progress

    payload = types.GetTaskPayloadRequest(
        params=types.GetTaskPayloadRequestParams(task_id=task.task_id)
    )
    result = await session.send_request(payload, types.CallToolResult)
    assert not result.is_error
    assert result.content == [types.TextContent(text="the bay (north) surveyed")]

    # a task that does not end is cancelled; its result is then an error
    endless = await start(dispatcher, "forever", {})
    cancel = types.CancelTaskRequest(params=types.CancelTaskRequestParams(task_id=endless.task_id))
    cancelled = await session.send_request(cancel, types.CancelTaskResult)
    assert cancelled.status == "cancelled"
    tasks = await session.send_request(types.ListTasksRequest(), types.ListTasksResult)
    assert {t.task_id: t.status for t in tasks.tasks} == {
        task.task_id: "completed",
        endless.task_id: "cancelled",
    }
    with pytest.raises(MCPError, match="cancelled"):
        await session.send_request(
            types.GetTaskPayloadRequest(
                params=types.GetTaskPayloadRequestParams(task_id=endless.task_id)
            ),
            types.CallToolResult,
        )

    # without task, the same tool is an ordinary call
    plain = await session.call_tool("survey", {"area": "the dunes"})
    assert plain.content == [types.TextContent(text="the dunes (north) surveyed")]
