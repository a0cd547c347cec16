"""Calls of an agent's tools made by one of its calls (``code_run``'s script), not by its model.

This module owns `InnerCalls`, the `INNER_CALLS` service an agent gives its tools. A call made
through it is a call of the agent in every respect but one: it goes through the same pipeline
as a model's ``tool_use`` (`kode.agent.pipeline`: lookup, validation, permission and approval,
hooks, execution, the session's records and store, a tracing span, inside the span of the call
that made it), in the run going on, and its `ToolStart`, `ToolEnd` and its approval's events
carry the id of the call that made it (``parent_call_id``). The one difference: its result goes
back to the caller, never into the conversation, so the model does not see it again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from kode.agent.blocks import result_block
from kode.agent.events import AgentEvent, ToolEnd, ToolStart
from kode.agent.permissions import can_only_allow, denied_by_name
from kode.agent.pipeline import _plain_call, _plain_calls, _run_into
from kode.agent.state import CallOutcome
from kode.models.messages import ToolUseContent
from kode.tools.errors import ToolError, ToolErrorType
from kode.tools.results import error_result
from kode.tools.services import InnerAnswer

if TYPE_CHECKING:
    from kode.agent.permissions import ApprovalDecision, ApprovalRequest
    from kode.agent.ports import AgentLike, CallEnvironment, EventCallbackFunc
    from kode.tools.core import Tool
    from kode.tracing.spans import Tracing

__all__ = ["InnerCalls"]


class _InnerRun:
    """The run a call's inner calls go through: the agent's run, their events marked.

    Every step (approval, commit, abort) is the run's own; only the events of the inner calls
    get the id of the call that made them.
    """

    __slots__ = ("_parent", "_run", "agent", "emit", "interactive", "poll_interval", "tracing")

    def __init__(self, run: CallEnvironment, parent_call_id: str) -> None:
        self._run = run
        self._parent = parent_call_id
        self.agent: AgentLike = run.agent
        self.interactive: bool = run.interactive
        self.tracing: Tracing | None = run.tracing
        self.poll_interval: float = run.poll_interval
        self.emit: EventCallbackFunc = self._emit

    def _emit(self, event: AgentEvent) -> None:
        if isinstance(event, ToolStart | ToolEnd):
            event.parent_call_id = self._parent
        self._run.emit(event)

    def on_loop(self) -> bool:
        return self._run.on_loop()

    async def ask(self, request: ApprovalRequest) -> ApprovalDecision:
        return await self._run.ask(request)

    async def commit(self) -> None:
        await self._run.commit()

    def abort(self, exc: BaseException) -> None:
        self._run.abort(exc)


class InnerCalls:
    """What tools get under `INNER_CALLS`: the agent's pipeline for calls a call makes."""

    __slots__ = ("_agent", "_current")

    def __init__(self, agent: AgentLike, current: Callable[[], CallEnvironment | None]) -> None:
        self._agent = agent
        self._current = current

    def tools(self) -> Sequence[Tool[..., Any]]:
        """The agent's tools, but those its permission settings deny by name."""
        permission = self._agent.template.permission
        return [t for t in self._agent.tools if not denied_by_name(permission, t)]

    async def call(
        self, name: str, arguments: dict[str, Any], *, call_id: str, parent_call_id: str
    ) -> InnerAnswer:
        """Run a call of `name` through the agent's pipeline, in its run going on.

        Raises:
            ToolError: no run of the agent is going on (a tool called outside one), or the id
                is taken.
        """
        run = self._current()
        if run is None:
            raise ToolError(
                "Tools can be called from a script only while the agent runs (agent.send or "
                "agent.stream); nothing was run.",
                type=ToolErrorType.EXECUTION_FAILED,
            )
        agent = self._agent
        if agent.session.records.get(call_id) is not None:
            raise ToolError(
                f"The call id {call_id!r} is taken already; nothing was run.",
                type=ToolErrorType.EXECUTION_FAILED,
            )
        call = ToolUseContent(id=call_id, name=name, input=arguments)
        # (the records say who made it: a resume settles it with the call that made it)
        agent.session.records.for_call(call).parent_call_id = parent_call_id
        results: list[CallOutcome | None] = [None]
        inner = _InnerRun(run, parent_call_id)
        tool = agent.lookup(name)
        if (
            tool is not None
            and _plain_calls(inner)
            and can_only_allow(agent.template.permission, tool)
        ):  # as a turn's call would: without the steps it does not need
            await _plain_call(inner, call, tool, results, 0)
        else:
            await _run_into(results, 0, inner, call, tool)
        outcome = results[0]
        if outcome is None:  # the run was aborted meanwhile (KeyboardInterrupt in a tool)
            return InnerAnswer(
                text=f"Tool '{name}' was not run: the agent's run was stopped.",
                is_error=True,
                status="cancelled",
                error_type=ToolErrorType.CANCELLED.value,
            )
        record = agent.session.records.get(call_id)
        if outcome.pending and record is not None:  # no client will answer it: it fails here
            text = (
                f"Tool '{name}' is run by the client, which a script cannot wait for; "
                "call it directly instead."
            )
            error = ToolErrorType.EXECUTION_FAILED.value
            agent.session.update_call(
                call,
                "failed",
                result=result_block(call_id, error_result(text, type=error)),
                error_type=error,
                record=record,
            )
            return InnerAnswer(text=text, is_error=True, status="failed", error_type=error)
        return InnerAnswer(
            text=outcome.block.text,
            is_error=outcome.block.is_error,
            status=outcome.status,
            error_type=record.error_type if record is not None else None,
        )
