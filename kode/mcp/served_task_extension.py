"""Serving tool calls as tasks on the 2026-07-28 protocol (the tasks extension).

`kode.mcp.server.ToolServer` names ``io.modelcontextprotocol/tasks`` in its capabilities on
2026-07-28 (over streamable HTTP and stdio alike). A ``tools/call`` whose ``_meta`` opts in
to the extension runs in the server's task group; if it has not ended within
`INLINE_WITHIN` seconds (nor asked a question), the client gets the task (``resultType:
"task"``) and follows it with ``tasks/get``, ``tasks/update`` and ``tasks/cancel``
(`kode.mcp.task_extension` has the wire form). Inside the task:

- ``ctx.progress`` messages become the task's ``statusMessage``;
- ``ctx.elicit`` and ``ctx.sample`` make the task ``input_required`` with the question in
  ``inputRequests``; the tool waits (it is not run again) until ``tasks/update`` brings the
  answer.

What a task id gives (the id is 256 random bits, ``secrets.token_urlsafe(32)``): a task is
bound to the authenticated principal that created it (client, issuer and subject of its
token; none on an unauthenticated server), and a request for an id that does not exist,
has expired or belongs to another principal gets the same ``-32602`` error. What a task
costs is bounded: at most `MAX_TASKS` are kept, at most `MAX_TASKS_PER_CLIENT` of them one
authenticated principal's; a running task that nobody asked about
(``tasks/get`` or ``tasks/update``) for `idle_timeout` seconds is cancelled, so a client
that disconnects leaves nothing running for longer than that; a finished task is kept
`keep_for` seconds for its result, then forgotten.
"""

from __future__ import annotations

import contextlib
import datetime
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

import anyio
import anyio.abc
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.request_state import authenticated_principal
from mcp.server.runner import modern_error_data
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from kode.mcp.task_extension import TaskParams, UpdateParams
from kode.tools.errors import ToolError, ToolErrorType

__all__ = [
    "INLINE_WITHIN",
    "MAX_QUESTIONS",
    "MAX_TASKS",
    "MAX_TASKS_PER_CLIENT",
    "ServedTaskExtension",
]

ResultT = TypeVar("ResultT", bound=types.Result)

INLINE_WITHIN = 0.05
"""Seconds a call opted in to tasks may take and still be answered as a plain result."""
MAX_TASKS = 256
"""The most tasks one server keeps (running, waiting for input, or finished and kept)."""
MAX_TASKS_PER_CLIENT = 64
"""The most tasks one authenticated principal keeps: one client cannot take every slot."""
MAX_QUESTIONS = 32
"""The most questions (``ctx.elicit``, ``ctx.sample``) one task may ask."""
POLL_INTERVAL_MS = 1000
"""The ``pollIntervalMs`` kode's tasks suggest."""

Run = Callable[
    [Callable[[str], None], "Questions", Callable[[], bool]], Awaitable[types.CallToolResult]
]
"""A call run as a task: given the status setter, the questions, and whether its request is
still unanswered (notifications can go with it until then)."""


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat()


def _not_found(task_id: object) -> MCPError:
    # One sentence for an unknown, expired or someone else's task: nothing to tell them apart.
    return MCPError(
        code=types.INVALID_PARAMS,
        message=f"There is no task {task_id!r} for this client: it never existed, it expired, "
        "or another client made it. Call the tool again to start a new task.",
    )


@dataclass(kw_only=True, slots=True)
class _Question:
    request: dict[str, Any]
    answered: anyio.Event = field(default_factory=anyio.Event)
    answer: dict[str, Any] | None = None


@dataclass(kw_only=True, slots=True)
class _Task:
    task_id: str
    owner: str | None
    created_at: str = field(default_factory=_now)
    updated_at: str = field(default_factory=_now)
    status: Literal["working", "input_required", "completed", "failed", "cancelled"] = "working"
    status_message: str | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    questions: dict[str, _Question] = field(default_factory=dict)
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    done: anyio.Event = field(default_factory=anyio.Event)
    asked: anyio.Event = field(default_factory=anyio.Event)
    seen: float = field(default_factory=anyio.current_time)
    ended: float | None = None
    handed: bool = False  # the client got the task: its request was answered

    def touch(self) -> None:
        self.updated_at = _now()

    def finish(self, status: Literal["completed", "failed", "cancelled"]) -> None:
        if self.done.is_set():
            return
        self.status = status
        self.questions.clear()
        self.ended = anyio.current_time()
        self.touch()
        self.done.set()

    def wire(self, ttl_ms: int, *, created: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {
            "taskId": self.task_id,
            "status": self.status,
            "createdAt": self.created_at,
            "lastUpdatedAt": self.updated_at,
            "ttlMs": ttl_ms,
            "pollIntervalMs": POLL_INTERVAL_MS,
        }
        if self.status_message:
            out["statusMessage"] = self.status_message
        if created:
            out["resultType"] = "task"
            return out
        if self.status == "completed":
            out["result"] = self.result
        elif self.status == "failed":
            out["error"] = self.error
        elif self.status == "input_required":
            out["inputRequests"] = {
                k: q.request for k, q in self.questions.items() if q.answer is None
            }
        return out


class Questions:
    """A task's questions: ``ctx.elicit`` and ``ctx.sample`` wait here for ``tasks/update``."""

    def __init__(self, task: _Task, tool_name: str) -> None:
        self._task = task
        self._tool_name = tool_name
        self._count = 0

    async def ask(
        self,
        request: types.ElicitRequest | types.CreateMessageRequest,
        result_type: type[ResultT],
    ) -> ResultT:
        """Make the task ``input_required`` with `request`, and return the client's answer.

        Raises:
            ToolError: more than `MAX_QUESTIONS` questions, or a malformed answer.
        """
        if self._count >= MAX_QUESTIONS:
            raise ToolError(
                f"Tool '{self._tool_name}' asked more than {MAX_QUESTIONS} questions in one "
                "task; a task may ask at most that many.",
                type=ToolErrorType.EXECUTION_FAILED,
            )
        key = f"q{self._count}"
        self._count += 1
        task = self._task
        question = _Question(
            request=request.model_dump(by_alias=True, mode="json", exclude_none=True)
        )
        task.questions[key] = question
        task.status = "input_required"
        task.touch()
        task.asked.set()
        await question.answered.wait()
        answer = question.answer or {}
        del task.questions[key]
        if not task.questions:
            task.status = "working"
            task.touch()
        try:
            return result_type.model_validate(answer, by_name=False)
        except ValidationError as exc:
            raise ToolError(
                f"The MCP client's answer is not a valid {result_type.__name__}: {exc}",
                type=ToolErrorType.EXECUTION_FAILED,
            ) from None


class ServedTaskExtension:
    """The tool calls a server runs as 2026-07-28 tasks, and the ``tasks/*`` answers.

    Args:
        idle_timeout: Seconds a running task may go without a ``tasks/get`` or
            ``tasks/update`` before it is cancelled.
        keep_for: Seconds a finished task's result is kept (its ``ttlMs``).
    """

    def __init__(self, *, idle_timeout: float = 300.0, keep_for: float = 3600.0) -> None:
        if not idle_timeout > 0 or not keep_for > 0:
            raise ValueError(
                "a task's idle timeout and the time its result is kept must be more than 0 "
                f"seconds, not {idle_timeout!r} and {keep_for!r}"
            )
        self.idle_timeout = idle_timeout
        """Seconds a running task may go unasked before it is cancelled."""
        self.keep_for = keep_for
        """Seconds a finished task is kept."""
        self.tasks: dict[str, _Task] = {}
        """The tasks kept, by id."""
        self.task_group: anyio.abc.TaskGroup | None = None
        """Where the tasks run, while the server runs (`None`: tasks are not offered)."""

    @property
    def running(self) -> bool:
        """Whether tasks can be started now."""
        return self.task_group is not None

    @contextlib.contextmanager
    def serving(self, tg: anyio.abc.TaskGroup, server: Any) -> Iterator[None]:
        """Run tasks in `tg`, and have `server` (a kode low-level server) announce them."""
        self.task_group = tg
        server.serves_task_extension = True
        try:
            yield
        finally:
            self.task_group = None
            server.serves_task_extension = False

    @staticmethod
    def run_in_lifespan(
        app: Any, serving: Callable[[anyio.abc.TaskGroup], contextlib.AbstractContextManager[None]]
    ) -> None:
        """Serve tasks in a task group of `app`'s (Starlette) lifespan, set up by `serving`.

        The SDK's session manager needs that lifespan run anyway.
        """
        inner = app.router.lifespan_context

        @contextlib.asynccontextmanager
        async def lifespan(app_: Any) -> AsyncIterator[Any]:
            async with inner(app_) as state, anyio.create_task_group() as tg:
                with serving(tg):
                    yield state
                tg.cancel_scope.cancel()

        app.router.lifespan_context = lifespan

    def _forget(self) -> None:
        now = anyio.current_time()
        for task_id, task in list(self.tasks.items()):
            if task.ended is not None and now - task.ended > self.keep_for:
                del self.tasks[task_id]

    def _room(self, owner: str | None) -> None:
        self._forget()
        if owner is not None:  # without authentication, every client is the same one
            mine = [t for t in self.tasks.values() if t.owner == owner]
            if len(mine) >= MAX_TASKS_PER_CLIENT:
                # its own oldest finished task makes room, never another client's
                done = sorted((t for t in mine if t.ended is not None), key=lambda t: t.ended or 0)
                if not done:
                    raise MCPError(
                        code=types.INTERNAL_ERROR,
                        message=f"This client already runs {MAX_TASKS_PER_CLIENT} tasks on this "
                        "server; cancel one or wait for one to end, then call the tool again.",
                    )
                del self.tasks[done[0].task_id]
        if len(self.tasks) < MAX_TASKS:
            return
        finished = sorted(
            (t for t in self.tasks.values() if t.ended is not None), key=lambda t: t.ended or 0
        )
        if not finished:
            raise MCPError(
                code=types.INTERNAL_ERROR,
                message=f"This server already runs {MAX_TASKS} tasks; cancel one or wait for "
                "one to end, then call the tool again.",
            )
        del self.tasks[finished[0].task_id]

    async def start(self, ctx: ServerRequestContext[Any, Any], run: Run) -> dict[str, Any]:
        """Run `run` as a task: its result if it ends (without asking) at once, else the task."""
        group = self.task_group
        if group is None:
            raise MCPError(code=types.INTERNAL_ERROR, message="the server is not running tasks")
        owner = authenticated_principal(ctx)
        self._room(owner)
        task = _Task(task_id=secrets.token_urlsafe(32), owner=owner)
        self.tasks[task.task_id] = task

        def status(message: str) -> None:
            if not task.done.is_set():
                task.status_message = message
                task.touch()

        async def job() -> None:
            with task.scope:
                try:
                    questions = Questions(task, str((ctx.params or {}).get("name")))
                    result = await run(status, questions, lambda: not task.handed)
                except Exception as exc:  # the call's own errors are results: this is a bug
                    # As a request whose handler raised: logged here, and only "Internal server
                    # error" for the client (an exception's text can hold paths and secrets).
                    error = modern_error_data(exc)
                    task.error = error.model_dump(by_alias=True, mode="json", exclude_none=True)
                    task.finish("failed")
                    return
                task.result = result.model_dump(by_alias=True, mode="json", exclude_none=True)
                task.finish("completed")
            task.finish("cancelled")  # the scope was cancelled: tasks/cancel, or left idle

        async def watch_idle() -> None:
            # A client that left (or never polls) does not keep its task running for ever.
            while not task.done.is_set():
                left = task.seen + self.idle_timeout - anyio.current_time()
                if left <= 0:
                    task.status_message = (
                        f"cancelled: no client asked about it for {self.idle_timeout:g} seconds"
                    )
                    task.scope.cancel()
                    return
                with anyio.move_on_after(left):
                    await task.done.wait()

        group.start_soon(job)
        group.start_soon(watch_idle)
        try:
            with anyio.move_on_after(INLINE_WITHIN):
                async with anyio.create_task_group() as first:

                    async def either(event: anyio.Event) -> None:
                        await event.wait()
                        first.cancel_scope.cancel()

                    first.start_soon(either, task.done)
                    first.start_soon(either, task.asked)
        except anyio.get_cancelled_exc_class():
            task.scope.cancel()  # the request was cancelled before the client got the task
            raise
        if task.status == "completed" and task.result is not None:
            del self.tasks[task.task_id]  # answered at once: no task to follow
            return task.result
        task.handed = True
        return task.wire(self._ttl_ms(), created=True)

    def _ttl_ms(self) -> int:
        return int(self.keep_for * 1000)

    def _task(self, ctx: ServerRequestContext[Any, Any], task_id: str) -> _Task:
        self._forget()
        task = self.tasks.get(task_id)
        if task is None or task.owner != authenticated_principal(ctx):
            raise _not_found(task_id)
        task.seen = anyio.current_time()
        return task

    async def get(self, ctx: ServerRequestContext[Any, Any], params: TaskParams) -> dict[str, Any]:
        """Answer ``tasks/get``."""
        return self._task(ctx, params.task_id).wire(self._ttl_ms())

    async def update(
        self, ctx: ServerRequestContext[Any, Any], params: UpdateParams
    ) -> dict[str, Any]:
        """Answer ``tasks/update``: the answers to questions the task asked (others ignored)."""
        task = self._task(ctx, params.task_id)
        for key, answer in params.input_responses.items():
            question = task.questions.get(key)
            if question is None or question.answer is not None or not isinstance(answer, dict):
                continue  # already answered, or never asked: nothing to do
            question.answer = answer
            question.answered.set()
        return {}

    async def cancel(
        self, ctx: ServerRequestContext[Any, Any], params: TaskParams
    ) -> dict[str, Any]:
        """Answer ``tasks/cancel``: a task still running is cancelled; an ended one stays."""
        task = self._task(ctx, params.task_id)
        if not task.done.is_set():
            task.status_message = "cancelled by the client"
            task.scope.cancel()
            task.finish("cancelled")
        return {}
