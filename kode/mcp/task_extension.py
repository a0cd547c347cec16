"""MCP tasks on the 2026-07-28 protocol (the ``io.modelcontextprotocol/tasks`` extension).

On 2026-07-28, tasks are an extension. Its wire form, as FastMCP's ``fastmcp-tasks`` (the
reference implementation kode is tested against) speaks it:

- the server names the extension in ``capabilities.extensions`` (``server/discover``); a
  client opts in per request, in the request's ``_meta``
  (``io.modelcontextprotocol/clientCapabilities`` → ``extensions``);
- a ``tools/call`` the server decides to run as a task answers at once with a flat task,
  ``resultType: "task"`` (``taskId``, ``status``, ``createdAt``, ``lastUpdatedAt``,
  ``ttlMs``, ``pollIntervalMs``, ``statusMessage``);
- ``tasks/get`` answers the task as it is now, with its outcome inlined: the tool's
  ``result`` once ``completed``, an ``error`` once ``failed``, the ``inputRequests`` (keyed
  ``elicitation/create``, ``sampling/createMessage`` or ``roots/list`` requests) while
  ``input_required``; ``tasks/update`` brings the ``inputResponses``; ``tasks/cancel`` ends
  it. There is no ``tasks/result``, no ``tasks/list`` and no status notification: progress
  is the ``statusMessage`` a poll reads.

This module holds that wire form and kode's client half (`drive`, called by
`kode.mcp.modern.call_answering`); the server half is `kode.mcp.served_task_extension`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Literal

import anyio
import mcp_types as types
from mcp.client.extension import ClaimContext, ResultClaim
from mcp.client.session import ClientSession
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import Field, TypeAdapter, ValidationError

__all__ = [
    "TASKS_EXTENSION",
    "CancelTaskRequest",
    "CreatedTask",
    "GetTaskRequest",
    "TaskAck",
    "TaskParams",
    "TaskState",
    "UpdateParams",
    "UpdateTaskRequest",
    "drive",
    "opted_in",
    "task_claim",
]

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
"""The extension's identifier, in capabilities and in each request's ``_meta``."""

TaskStatus = Literal["working", "input_required", "completed", "failed", "cancelled"]
_TERMINAL = frozenset({"completed", "failed", "cancelled"})
_POLL_FIRST, _POLL_MAX = 0.02, 5.0  # seconds: a quick task is seen done at once, a long one
_CANCEL_WAIT = 5.0  # seconds kode waits for tasks/cancel when its own call is cancelled
MAX_INPUT_ROUNDS = 64
"""The most times kode answers a task's questions before it cancels the task."""

Answer = Callable[[types.InputRequest], Awaitable[types.InputResponse | types.ErrorData]]
Status = Callable[[str], None]

_INPUT_REQUEST: TypeAdapter[types.InputRequest] = TypeAdapter(types.InputRequest)


class _TaskFields(types.Result):
    task_id: str = Field(alias="taskId")
    status: TaskStatus
    created_at: str = Field(alias="createdAt")
    last_updated_at: str = Field(alias="lastUpdatedAt")
    ttl_ms: int | None = Field(default=None, alias="ttlMs")
    status_message: str | None = Field(default=None, alias="statusMessage")
    poll_interval_ms: int | None = Field(default=None, alias="pollIntervalMs")


class CreatedTask(_TaskFields):
    """What a ``tools/call`` the server runs as a task answers (``resultType: "task"``)."""

    result_type: Literal["task"] = Field(alias="resultType")


class TaskState(_TaskFields):
    """What ``tasks/get`` answers: the task now, with its result, error or questions."""

    result_type: Literal["complete"] = Field(default="complete", alias="resultType")
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    input_requests: dict[str, Any] | None = Field(default=None, alias="inputRequests")


class TaskParams(types.RequestParams):
    """The params of ``tasks/get`` and ``tasks/cancel``: the task's id."""

    task_id: str


class UpdateParams(TaskParams):
    """The params of ``tasks/update``: the task's id and the answers to its questions."""

    input_responses: dict[str, Any]


class GetTaskRequest(types.Request[TaskParams, Literal["tasks/get"]]):
    """``tasks/get``: the task as it is now."""

    method: Literal["tasks/get"] = "tasks/get"
    name_param = "taskId"  # mirrored in the Mcp-Name header, as the extension asks


class UpdateTaskRequest(types.Request[UpdateParams, Literal["tasks/update"]]):
    """``tasks/update``: answers to the task's questions."""

    method: Literal["tasks/update"] = "tasks/update"
    name_param = "taskId"


class CancelTaskRequest(types.Request[TaskParams, Literal["tasks/cancel"]]):
    """``tasks/cancel``: end the task."""

    method: Literal["tasks/cancel"] = "tasks/cancel"
    name_param = "taskId"


class TaskAck(types.Result):
    """The empty answer of ``tasks/update`` and ``tasks/cancel``."""


def opted_in(meta: types.RequestParamsMeta | dict[str, Any] | None) -> bool:
    """Whether a request's ``_meta`` opts in to the tasks extension."""
    declared = (meta or {}).get(types.CLIENT_CAPABILITIES_META_KEY)
    extensions = declared.get("extensions") if isinstance(declared, dict) else None
    return isinstance(extensions, dict) and TASKS_EXTENSION in extensions


async def _refuse(request: types.InputRequest) -> types.ErrorData:
    return types.ErrorData(
        code=types.INVALID_REQUEST, message="this client cannot answer a task's questions"
    )


async def _resolve(created: CreatedTask, ctx: ClaimContext) -> types.CallToolResult:
    return await drive(ctx.session, created, name=ctx.tool_name, answer=_refuse)


def task_claim() -> ResultClaim[CreatedTask]:
    """The SDK's claim for ``resultType: "task"`` (a `ClientSession` built with it opts in)."""
    return ResultClaim(
        result_type="task",
        model=CreatedTask,
        resolve=_resolve,
        protocol_versions=frozenset(MODERN_PROTOCOL_VERSIONS),
    )


def _failed(name: str, text: str) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(text=f"Tool '{name}' {text}")], is_error=True
    )


async def _answer_all(session: ClientSession, task: TaskState, name: str, answer: Answer) -> None:
    responses: dict[str, Any] = {}
    for key, raw in (task.input_requests or {}).items():
        try:
            request = _INPUT_REQUEST.validate_python(raw, by_name=False)
        except ValidationError:
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"the server's task for '{name}' asked a question kode cannot read "
                f"(inputRequests[{key!r}])",
            ) from None
        got = await answer(request)  # one at a time: each may ask the user
        if isinstance(got, types.ErrorData):
            raise MCPError.from_error_data(got)
        responses[key] = got.model_dump(by_alias=True, mode="json", exclude_none=True)
    await session.send_request(
        UpdateTaskRequest(params=UpdateParams(task_id=task.task_id, input_responses=responses)),
        TaskAck,
    )


async def _cancel(session: ClientSession, task_id: str) -> None:
    with anyio.CancelScope(shield=True), anyio.move_on_after(_CANCEL_WAIT):
        try:
            await session.send_request(
                CancelTaskRequest(params=TaskParams(task_id=task_id)), TaskAck
            )
        except MCPError:
            pass  # it ended meanwhile, or the server forgot it: nothing left to cancel


async def drive(
    session: ClientSession,
    created: CreatedTask,
    *,
    name: str,
    answer: Answer,
    status: Status | None = None,
) -> types.CallToolResult:
    """Follow a task the server made of a call of `name` until its result.

    ``tasks/get`` is polled, from a fiftieth of a second doubling up to the server's
    ``pollIntervalMs`` (at most 5 s); each new ``statusMessage`` is given to `status`; the
    questions of an ``input_required`` task are answered with `answer` and sent with
    ``tasks/update``. When the awaiting task is cancelled, kode sends ``tasks/cancel``.

    Returns:
        The tool's result; a failed or cancelled task is an ``isError`` result saying so.

    Raises:
        MCPError: the server refused a request (an unknown task, say), `answer` refused a
            question, or the task asked more than `MAX_INPUT_ROUNDS` times.
    """
    said: str | None = None
    ceiling = _POLL_MAX
    if created.poll_interval_ms is not None and created.poll_interval_ms > 0:
        ceiling = min(_POLL_MAX, max(_POLL_FIRST, created.poll_interval_ms / 1000))
    wait, rounds = _POLL_FIRST, 0
    try:
        while True:
            task = await session.send_request(
                GetTaskRequest(params=TaskParams(task_id=created.task_id)), TaskState
            )
            if task.status_message and task.status_message != said and status is not None:
                said = task.status_message
                status(said)
            if task.status == "completed":
                result = types.CallToolResult.model_validate(task.result or {}, by_name=False)
                if not result.is_error:
                    await session.validate_tool_result(name, result)
                return result
            if task.status == "failed":
                error = task.error or {}
                message = error.get("message") or task.status_message or "no reason given"
                return _failed(name, f"failed on the server: {message}")
            if task.status == "cancelled":
                return _failed(name, "was cancelled on the server before it finished.")
            if task.status == "input_required" and task.input_requests:
                rounds += 1
                if rounds > MAX_INPUT_ROUNDS:
                    raise MCPError(
                        code=types.INTERNAL_ERROR,
                        message=f"the server's task for '{name}' asked for input more than "
                        f"{MAX_INPUT_ROUNDS} times, so kode stopped answering",
                    )
                await _answer_all(session, task, name, answer)
                wait = _POLL_FIRST
                continue
            await anyio.sleep(wait)
            wait = min(wait * 2, ceiling)
    except BaseException:
        await _cancel(session, created.task_id)
        raise
