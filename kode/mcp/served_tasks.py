"""Serving tools as MCP tasks (protocol 2025-11-25): ``tools/call`` with a ``task`` field.

(On 2026-07-28 tasks are an extension: `kode.mcp.served_task_extension`; the ``tasks/*``
handlers registered here answer for both.)

This module owns the server side of MCP Tasks for `kode.mcp.server.ToolServer`: the
capability (``tasks.requests.tools.call``, ``tasks.list``, ``tasks.cancel``), the
``execution.taskSupport: "optional"`` every served tool declares, and the ``tasks/get``,
``tasks/result``, ``tasks/cancel`` and ``tasks/list`` handlers. A client that asks for a task
gets its id at once; the call runs in the server's task group (so it outlives the request),
its ``ctx.progress`` messages become the task's ``statusMessage``, and the result waits for
``tasks/result``. The bookkeeping (ids, TTLs, cancellation) is `kode.mcp.tasks.PeerTasks`,
the same that runs a server's task requests on kode's client side.

The SDK's server only lets a ``tools/call`` handler answer with a ``CallToolResult``, so the
handler returns one marked with the task in its ``_meta``, and `TaskReplies`, wrapped around
the connection's write stream, sends ``{"task": ...}`` in its place. That needs the
connection's streams: 2025-11-25 tasks are offered by `ToolServer.run` (stdio, and any stream
pair), not by the streamable HTTP app, whose streams the SDK keeps to itself.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from kode.mcp.caller import CURRENT_TASK
from kode.mcp.served_task_extension import ServedTaskExtension
from kode.mcp.task_extension import TaskParams, UpdateParams
from kode.mcp.tasks import PeerTasks

__all__ = ["TASK_EXECUTION", "ServedTasks", "TaskReplies", "tasks_capability"]

_CREATED = "kode/created-task"  # the _meta key of the marked result TaskReplies rewrites

TASK_EXECUTION = types.ToolExecution(task_support="optional")
"""What every served tool declares when the server runs tasks."""


def tasks_capability() -> types.ServerTasksCapability:
    """The server's ``tasks`` capability: tool calls as tasks, listed and cancellable."""
    return types.ServerTasksCapability(
        list=types.TasksListCapability(),
        cancel=types.TasksCancelCapability(),
        requests=types.ServerTasksRequestsCapability(
            tools=types.TasksToolsCapability(call=types.TasksCallCapability())
        ),
    )


class ServedTasks:
    """The tool calls a server runs as tasks, and the handlers that answer about them."""

    def __init__(self) -> None:
        self.tasks = PeerTasks()
        """The tasks, by id (their task group is set while the server runs)."""

    @property
    def running(self) -> bool:
        """Whether tasks can be started now (the server is running with a task group)."""
        return self.tasks.task_group is not None

    def start(
        self,
        call: Callable[[Callable[[str], None]], Awaitable[types.CallToolResult]],
        metadata: types.TaskMetadata,
    ) -> types.CallToolResult:
        """Start `call` as a task; it is given a function that sets the task's status message.

        Returns the result that `TaskReplies` sends as the ``CreateTaskResult``.
        """
        task_id: list[str] = []

        def status(message: str) -> None:
            if task_id:
                self.tasks.update(task_id[0], message)

        async def job() -> dict[str, Any]:
            CURRENT_TASK.set(task_id[0])  # this job's own context: ctx.elicit ties to the task
            result = await call(status)
            return result.model_dump(by_alias=True, mode="json", exclude_none=True)

        created = self.tasks.start(job, metadata.ttl)
        task_id.append(created["task"]["taskId"])
        return types.CallToolResult.model_validate(
            {"content": [], "_meta": {_CREATED: created["task"]}}, by_name=False
        )

    def install(self, server: Server[Any], modern: ServedTaskExtension | None = None) -> None:
        """Register the ``tasks/*`` handlers on the SDK's low-level server.

        The methods ``tasks/get`` and ``tasks/cancel`` exist in both revisions: on
        2026-07-28 they are `modern`'s (the tasks extension), with ``tasks/update``.
        """

        def legacy(method: str) -> MCPError:
            return MCPError(
                code=types.METHOD_NOT_FOUND,
                message=f"{method} is not a method of the 2026-07-28 protocol's tasks; "
                "follow a task with tasks/get",
            )

        async def get(ctx: ServerRequestContext[Any, Any], params: TaskParams) -> Any:
            if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
                if modern is None:
                    raise legacy("tasks/get")
                return await modern.get(ctx, params)
            found = await self.tasks.answer("tasks/get", {"taskId": params.task_id})
            return types.GetTaskResult.model_validate(found, by_name=False)

        async def result(
            ctx: ServerRequestContext[Any, Any], params: types.GetTaskPayloadRequestParams
        ) -> types.CallToolResult:
            if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
                raise legacy("tasks/result")
            found = await self.tasks.answer("tasks/result", {"taskId": params.task_id})
            return types.CallToolResult.model_validate(found, by_name=False)

        async def cancel(ctx: ServerRequestContext[Any, Any], params: TaskParams) -> Any:
            if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
                if modern is None:
                    raise legacy("tasks/cancel")
                return await modern.cancel(ctx, params)
            found = await self.tasks.answer("tasks/cancel", {"taskId": params.task_id})
            return types.CancelTaskResult.model_validate(found, by_name=False)

        async def listed(
            ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams
        ) -> types.ListTasksResult:
            if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
                raise legacy("tasks/list")
            found = await self.tasks.answer("tasks/list", None)
            return types.ListTasksResult.model_validate(found, by_name=False)

        async def update(ctx: ServerRequestContext[Any, Any], params: UpdateParams) -> Any:
            if modern is None or ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
                raise MCPError(
                    code=types.METHOD_NOT_FOUND,
                    message="tasks/update is a method of the 2026-07-28 protocol's tasks only",
                )
            return await modern.update(ctx, params)

        server.add_request_handler("tasks/get", TaskParams, get)
        server.add_request_handler("tasks/result", types.GetTaskPayloadRequestParams, result)
        server.add_request_handler("tasks/cancel", TaskParams, cancel)
        server.add_request_handler("tasks/list", types.PaginatedRequestParams, listed)
        server.add_request_handler("tasks/update", UpdateParams, update)


class TaskReplies:
    """A connection's write stream that sends a marked ``tools/call`` result as a task."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    async def send(self, item: SessionMessage) -> None:
        """Send `item`; a marked result becomes ``{"task": ...}``."""
        message = item.message
        if isinstance(message, types.JSONRPCResponse) and isinstance(message.result, dict):
            meta = message.result.get("_meta")
            if isinstance(meta, dict) and _CREATED in meta:
                reply = types.JSONRPCResponse(
                    jsonrpc="2.0", id=message.id, result={"task": meta[_CREATED]}
                )
                item = SessionMessage(message=reply, metadata=item.metadata)
        await self._inner.send(item)

    async def aclose(self) -> None:
        """Close the stream."""
        await self._inner.aclose()

    async def __aenter__(self) -> TaskReplies:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._inner.__aexit__(*exc)
