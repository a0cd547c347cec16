"""MCP Tasks (protocol 2025-11-25) on kode's client side, both ways.

The official SDK parses the task types but does not speak the protocol, so this module does,
on the SDK's own JSON-RPC dispatcher (`TaskDispatcher`, a `JSONRPCDispatcher` that kode builds
and hands to the ``ClientSession``):

- **kode calls a server's tool as a task** (`call_as_task`): ``tools/call`` with a ``task``
  field answers at once with a task id; kode then waits on ``tasks/result`` (during which the
  server may send requests of its own, such as an elicitation), polls ``tasks/get`` at the
  server's ``pollInterval`` and reads ``notifications/tasks/status`` for progress, and
  cancels with ``tasks/cancel`` when the kode call is cancelled. Tools that say
  ``execution.taskSupport: "required"`` are always called so.
- **a server asks kode for a task** (`PeerTasks`): a ``sampling/createMessage`` or
  ``elicitation/create`` with a ``task`` field is answered at once with a task, the answer is
  worked out in the background by the same callbacks as a plain request, and the server's
  ``tasks/get``, ``tasks/result``, ``tasks/cancel`` and ``tasks/list`` are answered here.

The capability is added to the ``initialize`` request, which the SDK does not know how to say.
"""

from __future__ import annotations

import datetime
import itertools
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.abc
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.shared.dispatcher import (
    CallOptions,
    DispatchContext,
    OnNotify,
    OnNotifyIntercept,
    OnRequest,
)
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher
from mcp.shared.transport_context import TransportContext

__all__ = ["PeerTasks", "TaskDispatcher", "call_as_task", "tasks_capability"]

RELATED_TASK = "io.modelcontextprotocol/related-task"
"""The ``_meta`` key that ties a message to a task."""
_TASK_METHODS = frozenset({"tasks/get", "tasks/result", "tasks/cancel", "tasks/list"})
_TERMINAL = frozenset({"completed", "failed", "cancelled"})
DEFAULT_TTL_MS = 3_600_000
"""How long kode asks a server to keep a task it created (one hour)."""
_POLL_MIN, _POLL_MAX = 0.2, 5.0  # seconds between tasks/get, whatever the server suggests

ProgressFunc = Callable[[str, float | None], None]
"""Reports a task's progress: a message and, when known, the fraction done."""


def tasks_capability(*, sampling: bool, elicitation: bool) -> dict[str, Any]:
    """The client's ``tasks`` capability: which server requests kode runs as tasks."""
    requests: dict[str, Any] = {}
    if sampling:
        requests["sampling"] = {"createMessage": {}}
    if elicitation:
        requests["elicitation"] = {"create": {}}
    return {"list": {}, "cancel": {}, "requests": requests}


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat().replace("+00:00", "Z")


@dataclass(kw_only=True, slots=True)
class _ClientTask:
    task_id: str
    ttl: int | None
    created_at: str = field(default_factory=_now)
    updated_at: str = field(default_factory=_now)
    status: str = "working"
    status_message: str | None = None
    result: dict[str, Any] | None = None
    error: MCPError | None = None
    done: anyio.Event = field(default_factory=anyio.Event)
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)

    def wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "taskId": self.task_id,
            "status": self.status,
            "createdAt": self.created_at,
            "lastUpdatedAt": self.updated_at,
            "ttl": self.ttl,
            "pollInterval": 250,
        }
        if self.status_message:
            out["statusMessage"] = self.status_message
        return out

    def finish(self, status: str, message: str | None = None) -> None:
        self.status = status
        self.status_message = message
        self.updated_at = _now()
        self.done.set()


class PeerTasks:
    """Tasks kode runs for its peer: a server's requests, or a client's tool calls.

    On the client side, a server's sampling and elicitation requests sent as tasks; when
    serving, a client's tool calls sent as tasks (`kode.mcp.served_tasks`).
    """

    def __init__(self) -> None:
        self.tasks: dict[str, _ClientTask] = {}
        """Every task still kept, by id."""
        self.task_group: anyio.abc.TaskGroup | None = None
        """Where tasks run (the session's task group, set once the session is up)."""

    def start(
        self, job: Callable[[], Awaitable[dict[str, Any]]], ttl: int | None
    ) -> dict[str, Any]:
        """Run `job` as a new task; return the ``CreateTaskResult`` to send at once."""
        if self.task_group is None:
            raise MCPError(types.INTERNAL_ERROR, "the client is not ready to run tasks yet")
        self._forget_expired()
        task = _ClientTask(task_id=uuid.uuid4().hex, ttl=ttl)
        self.tasks[task.task_id] = task

        async def run() -> None:
            with task.scope:
                try:
                    task.result = await job()
                except MCPError as exc:
                    task.error = exc
                    task.finish("failed", exc.message)
                    return
                except Exception as exc:
                    task.error = MCPError(types.INTERNAL_ERROR, f"{type(exc).__name__}: {exc}")
                    task.finish("failed", str(exc))
                    return
                task.finish("completed")
            if not task.done.is_set():  # cancelled by tasks/cancel
                task.finish("cancelled", "cancelled by the server")

        self.task_group.start_soon(run)
        return {"task": task.wire()}

    def update(self, task_id: str, message: str) -> None:
        """Set a running task's status message (what ``tasks/get`` says it is doing)."""
        task = self.tasks.get(task_id)
        if task is not None and not task.done.is_set():
            task.status_message = message
            task.updated_at = _now()

    def _forget_expired(self) -> None:
        now = datetime.datetime.now(datetime.UTC)
        for task_id, task in list(self.tasks.items()):
            if task.ttl is None or not task.done.is_set():
                continue
            made = datetime.datetime.fromisoformat(task.created_at.replace("Z", "+00:00"))
            if (now - made).total_seconds() * 1000 > task.ttl:
                del self.tasks[task_id]

    def _task(self, params: Mapping[str, Any] | None) -> _ClientTask:
        task_id = (params or {}).get("taskId")
        task = self.tasks.get(task_id) if isinstance(task_id, str) else None
        if task is None:
            raise MCPError(types.INVALID_PARAMS, f"no task {task_id!r}")
        return task

    async def answer(self, method: str, params: Mapping[str, Any] | None) -> dict[str, Any]:
        """Answer ``tasks/get``, ``tasks/result``, ``tasks/cancel`` or ``tasks/list``."""
        if method == "tasks/list":
            return {"tasks": [t.wire() for t in self.tasks.values()]}
        task = self._task(params)
        if method == "tasks/get":
            return task.wire()
        if method == "tasks/cancel":
            if task.status in _TERMINAL:
                raise MCPError(
                    types.INVALID_PARAMS, f"task {task.task_id} is already {task.status}"
                )
            task.scope.cancel()
            task.finish("cancelled", "cancelled by the server")
            return task.wire()
        await task.done.wait()  # tasks/result blocks until the task ends
        if task.error is not None:
            raise task.error
        if task.result is None:
            raise MCPError(types.INVALID_PARAMS, f"task {task.task_id} was {task.status}")
        meta = {**(task.result.get("_meta") or {}), RELATED_TASK: {"taskId": task.task_id}}
        return {**task.result, "_meta": meta}


class TaskDispatcher(JSONRPCDispatcher[TransportContext]):
    """The SDK's JSON-RPC dispatcher, speaking MCP Tasks besides (see the module docstring)."""

    def __init__(
        self,
        read_stream: Any,
        write_stream: Any,
        *,
        capabilities: Mapping[str, Any],
        tasks: PeerTasks | None,
    ) -> None:
        super().__init__(read_stream, write_stream)
        self.extra_capabilities = dict(capabilities)
        """Client capabilities added to ``initialize`` (those the SDK cannot declare)."""
        self.client_tasks = tasks
        """The tasks servers asked for, or `None` when kode does not run them."""
        self.watchers: dict[str, ProgressFunc] = {}
        """Progress callbacks by progress token or task id (kode's tasks on the server)."""
        self._tokens = itertools.count(1)

    def new_token(self) -> str:
        """A progress token no SDK request uses (a string that is not a number)."""
        return f"kode-task-{next(self._tokens)}"

    async def send_raw_request(
        self,
        method: str,
        params: Mapping[str, Any] | None,
        opts: CallOptions | None = None,
        *,
        _related_request_id: types.RequestId | None = None,
    ) -> dict[str, Any]:
        """Send a request (``initialize`` with kode's extra capabilities)."""
        if method == "initialize" and params is not None and self.extra_capabilities:
            capabilities = {**(params.get("capabilities") or {}), **self.extra_capabilities}
            params = {**params, "capabilities": capabilities}
        return await super().send_raw_request(
            method, params, opts, _related_request_id=_related_request_id
        )

    async def run(
        self,
        on_request: OnRequest,
        on_notify: OnNotify,
        on_notify_intercept: OnNotifyIntercept | None = None,
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """Drive the receive loop; task requests and task notifications are handled here."""
        client_tasks = self.client_tasks

        async def request(
            dctx: DispatchContext[TransportContext], method: str, params: Mapping[str, Any] | None
        ) -> dict[str, Any]:
            if client_tasks is not None:
                if method in _TASK_METHODS:
                    return await client_tasks.answer(method, params)
                task = (params or {}).get("task")
                if method in ("sampling/createMessage", "elicitation/create") and isinstance(
                    task, dict
                ):
                    plain = {k: v for k, v in (params or {}).items() if k != "task"}
                    ttl = task.get("ttl")

                    async def job() -> dict[str, Any]:
                        return await on_request(dctx, method, plain)

                    return client_tasks.start(job, ttl if isinstance(ttl, int) else None)
            return await on_request(dctx, method, params)

        def intercept(method: str, params: Mapping[str, Any] | None) -> bool:
            if params is not None and self.watchers:
                key = None
                if method == "notifications/progress":
                    key = params.get("progressToken")
                elif method == "notifications/tasks/status":
                    key = params.get("taskId")
                watcher = self.watchers.get(key) if isinstance(key, str) else None
                if watcher is not None:
                    _report(watcher, method, params)
                    return True
            return on_notify_intercept(method, params) if on_notify_intercept else False

        await super().run(request, on_notify, intercept, task_status=task_status)


def _report(watcher: ProgressFunc, method: str, params: Mapping[str, Any]) -> None:
    if method == "notifications/progress":
        progress, total = params.get("progress"), params.get("total")
        message = params.get("message")
        fraction = None
        if isinstance(progress, int | float) and isinstance(total, int | float) and total > 0:
            fraction = min(1.0, max(0.0, progress / total))
        watcher(message if isinstance(message, str) else f"{progress}", fraction)
    else:
        message = params.get("statusMessage")
        watcher(message if isinstance(message, str) else str(params.get("status")), None)


async def call_as_task(
    session: ClientSession,
    dispatcher: TaskDispatcher,
    name: str,
    arguments: dict[str, Any],
    *,
    progress: ProgressFunc,
    ttl_ms: int = DEFAULT_TTL_MS,
) -> types.CallToolResult:
    """Call a server's tool as a task and wait for its result (see the module docstring).

    Raises:
        MCPError: the server refused the call or one of the task requests, or the task failed.
    """
    token = dispatcher.new_token()
    opts: CallOptions = {}
    if session.protocol_version:
        opts["headers"] = {MCP_PROTOCOL_VERSION_HEADER: session.protocol_version}
    last: list[str] = []

    def report(message: str, fraction: float | None) -> None:
        if last and last[-1] == message and fraction is None:
            return  # a poll and a status notification saying the same
        last[:] = [message]
        progress(message, fraction)

    dispatcher.watchers[token] = report
    task_id: str | None = None
    try:
        raw = await dispatcher.send_raw_request(
            "tools/call",
            {
                "name": name,
                "arguments": arguments,
                "task": {"ttl": ttl_ms},
                "_meta": {"progressToken": token},
            },
            opts,
        )
        if not isinstance(raw.get("task"), dict):  # the server ran it at once after all
            return types.CallToolResult.model_validate(raw, by_name=False)
        task = types.Task.model_validate(raw["task"], by_name=False)
        task_id = task.task_id
        dispatcher.watchers[task_id] = report
        if task.status_message:
            report(task.status_message, None)
        interval = min(_POLL_MAX, max(_POLL_MIN, (task.poll_interval or 1000) / 1000))

        async def poll() -> None:
            while True:
                await anyio.sleep(interval)
                now = await session.send_request(
                    types.GetTaskRequest(params=types.GetTaskRequestParams(task_id=task.task_id)),
                    types.GetTaskResult,
                )
                report(now.status_message or now.status, None)
                if now.status in _TERMINAL:
                    return

        result: types.CallToolResult | None = None
        async with anyio.create_task_group() as group:
            group.start_soon(poll)
            result = await session.send_request(
                types.GetTaskPayloadRequest(
                    params=types.GetTaskPayloadRequestParams(task_id=task.task_id)
                ),
                types.CallToolResult,
            )
            group.cancel_scope.cancel()
        assert result is not None
        return result
    except anyio.get_cancelled_exc_class():
        if task_id is not None:
            with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                try:
                    await session.send_request(
                        types.CancelTaskRequest(
                            params=types.CancelTaskRequestParams(task_id=task_id)
                        ),
                        types.CancelTaskResult,
                    )
                except MCPError:
                    pass  # it ended meanwhile; nothing left to cancel
        raise
    finally:
        dispatcher.watchers.pop(token, None)
        if task_id is not None:
            dispatcher.watchers.pop(task_id, None)
