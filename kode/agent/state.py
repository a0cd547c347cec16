"""An agent's whole state as one pydantic model, so it can be saved and an agent rebuilt.

This module owns `AgentState` and `ToolCallRecord`. The state holds the template id, the
messages, every tool call with its status, the todo list, usage and the run status; it
round-trips through JSON (`AgentState.model_validate_json(state.model_dump_json())`), and
`Agent.from_state` rebuilds an agent from it, re-resolving the tools by name.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from copy import deepcopy
from dataclasses import dataclass
from typing import Any, Literal, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_serializer,
    model_serializer,
)

from kode.agent.template import AgentTemplate
from kode.models.messages import Message, ToolResultContent, ToolUseContent, Usage
from kode.sessions.records import HistoryCompacted
from kode.tools.collector import collector_paused

__all__ = [
    "AgentState",
    "AgentStatus",
    "CallOutcome",
    "CallRecords",
    "ToolCallRecord",
    "ToolCallStatus",
]

ToolCallStatus = Literal[
    "pending", "awaiting_approval", "approved", "running", "done", "failed", "denied", "cancelled"
]
"""Where a tool call is: ``pending`` also covers a client tool waiting for its result;
``approved``: someone allowed it and it has not started yet."""

AgentStatus = Literal["idle", "running", "awaiting_approval", "awaiting_client", "failed"]
"""What the agent is doing."""


@dataclass(kw_only=True, slots=True)
class CallOutcome:
    """What one call ended as (the pipeline's answer to one ``tool_use``)."""

    block: ToolResultContent
    """The ``tool_result`` block."""
    status: ToolCallStatus
    """The call's final status."""
    pending: bool = False
    """Whether a client must supply the real result."""


@dataclass(kw_only=True, slots=True)
class ToolCallRecord:
    """One tool call and what became of it.

    A plain class with slots, not a pydantic model: an agent keeps one per call, and a turn
    of many calls makes and updates them on its hot path. `AgentState` validates and
    serialises them as it would a model with these fields (unknown keys are refused).
    """

    __pydantic_config__ = ConfigDict(extra="forbid")
    id: str
    """The ``tool_use`` id."""
    name: str
    """The tool's name as the model wrote it."""
    input: dict[str, Any] | str
    """The arguments the call runs (or ran) with: the model's, unless a person changed them
    when approving it (then `requested_input` holds the model's)."""
    status: ToolCallStatus = "pending"
    """Where the call is."""
    result: ToolResultContent | None = None
    """The ``tool_result`` block, once there is one."""
    error_type: str | None = None
    """The `ToolErrorType` value of an error result."""
    started_at: float | None = None
    """When the call's pipeline started (``time.time()``)."""
    ended_at: float | None = None
    """When its result was ready."""
    client: bool = False
    """Whether the caller executes it (a client tool)."""
    requested_input: dict[str, Any] | str | None = None
    """The arguments the model asked for, when a person changed them at approval
    (``ApprovalDecision(input=...)``); `None` when the call runs with the model's own."""
    parent_call_id: str | None = None
    """The call that made this one (a ``code_run`` script's call, `kode.agent.inner_calls`);
    `None` for a call of the model."""

    def copy(self) -> ToolCallRecord:
        """A deep copy: its input and result are copied too."""
        result = self.result
        return ToolCallRecord(
            id=self.id,
            name=self.name,
            input=deepcopy(self.input),
            status=self.status,
            result=None if result is None else result.model_copy(deep=True),
            error_type=self.error_type,
            started_at=self.started_at,
            ended_at=self.ended_at,
            client=self.client,
            requested_input=deepcopy(self.requested_input),
            parent_call_id=self.parent_call_id,
        )


class CallRecords:
    """Every tool call of an agent by id, in the order the model made them."""

    __slots__ = ("_by_id", "_serial")

    def __init__(self, records: Iterable[ToolCallRecord] = ()) -> None:
        self._by_id: dict[str, ToolCallRecord] = {r.id: r for r in records}
        self._serial = 0

    def for_call(self, call: ToolUseContent) -> ToolCallRecord:
        """The record of `call`, made (``pending``) on first use."""
        record = self._by_id.get(call.id)
        if record is None:
            record = ToolCallRecord(id=call.id, name=call.name, input=call.input)
            self._by_id[call.id] = record
        return record

    def get(self, call_id: str) -> ToolCallRecord | None:
        """The record of a call id, if there is one."""
        return self._by_id.get(call_id)

    def add_turn(self, message: Message) -> tuple[list[ToolUseContent], dict[int, str]]:
        """Record a model turn's calls; return them, and the duplicated ids by position.

        A model can repeat a ``tool_use`` id (within a turn, or one of an earlier turn), or
        send an empty one; no provider accepts the history that follows. Such a call gets a
        new, unique id in the message itself (``<id>_dup1`` ...), so its result can answer it,
        and its position and first id are returned so that it is answered without being run.
        """
        calls = message.tool_uses
        duplicates: dict[int, str] = {}
        by_id = self._by_id  # (with this turn's calls as they are recorded)
        for index, call in enumerate(calls):
            call_id = call.id
            if not call_id or call_id in by_id:
                duplicates[index] = call_id
                base = call_id or "call"
                while True:
                    self._serial += 1
                    call_id = f"{base}_dup{self._serial}"  # [A-Za-z0-9_-]: what providers accept
                    if call_id not in by_id:
                        break
                call.id = call_id
            record = _new(ToolCallRecord)  # (as `pipeline` makes a call's events: half the time)
            _init_record(record, id=call_id, name=call.name, input=call.input)
            by_id[call_id] = record
        return calls, duplicates

    def share_results(self, messages: Iterable[Message]) -> None:
        """Make each record's result the history's own ``tool_result`` block, where equal.

        A live run keeps one block for both; a history read back (an `AgentState`, a store's
        records) has two equal copies of every result, and a long session kept both: a
        quarter of the objects the collector tracks for each settled turn.
        """
        by_id = self._by_id
        for message in messages:
            if message.role != "user":
                continue
            for block in message.content:
                if type(block) is not ToolResultContent:
                    continue
                record = by_id.get(block.tool_use_id)
                if record is None or record.result is None or record.result is block:
                    continue
                if record.result == block:
                    record.result = block

    def __iter__(self) -> Iterator[ToolCallRecord]:
        return iter(self._by_id.values())

    def __len__(self) -> int:
        return len(self._by_id)

    def snapshot(self) -> list[ToolCallRecord]:
        """Deep copies of every record, in order (for `AgentState`)."""
        return [r.copy() for r in self._by_id.values()]


_new = object.__new__
_init_record = ToolCallRecord.__init__


class AgentState(BaseModel):
    """Everything needed to rebuild an agent, as one snapshot (`Agent.state`, `Agent.from_state`).

    Not a store's view of a session: that is `kode.sessions.SessionState`, the fold of the
    session's records, from which `Agent.resume` rebuilds an agent. The two share the
    conversation, usage, todos, allowed tools and status; this one adds what a snapshot without
    a store needs (the template, the ids) and keeps calls as a list of `ToolCallRecord`, that one
    keeps calls by id with the approvals and client calls still waiting. A session takes what
    they share the same way from either (`kode.agent.session.Session`); a snapshot's open turn
    cannot resume, so its open calls are answered as cancelled and only client calls wait.
    """

    model_config = ConfigDict(extra="forbid")
    version: Literal[1] = 1
    """The format's version."""
    template_id: str
    """The template the agent was made from."""
    agent_id: str
    """The agent's id."""
    session_id: str
    """The session's id."""
    messages: list[Message] = Field(default_factory=list)
    """The conversation."""
    tool_calls: list[ToolCallRecord] = Field(default_factory=list)
    """Every tool call, in the order the model made them."""
    todos: list[dict[str, Any]] = Field(default_factory=list)
    """The agent's todo list (filled by todo tools)."""
    usage: Usage = Field(default_factory=Usage)
    """Tokens used so far."""
    status: AgentStatus = "idle"
    """What the agent was doing."""
    always_allowed: list[str] = Field(default_factory=list)
    """Tools the user allowed for the whole session ("allow always")."""
    template: AgentTemplate | None = None
    """The template itself (its hooks, which are code, are not saved), so that an agent made
    from a template that is not registered can be rebuilt; `None` in states saved before."""
    compaction: HistoryCompacted | None = None
    """The latest compaction of the history (a context policy's summary), so the rebuilt
    agent sends what this one did; not saved when there is none."""

    @classmethod
    def model_validate(cls, *args: Any, **kwargs: Any) -> Self:
        """Validate a state from Python data (see `BaseModel.model_validate`).

        The cyclic garbage collector is paused meanwhile: a long history is millions of
        objects that all stay alive, and collections run through the allocation made the load
        grow faster than the history.
        """
        with collector_paused():
            return super().model_validate(*args, **kwargs)

    @classmethod
    def model_validate_json(cls, *args: Any, **kwargs: Any) -> Self:
        """Validate a state from its JSON text (see `BaseModel.model_validate_json`).

        The cyclic garbage collector is paused meanwhile, as for `model_validate`.
        """
        with collector_paused():
            return super().model_validate_json(*args, **kwargs)

    @model_serializer(mode="wrap")
    def _without_no_compaction(self, handler: SerializerFunctionWrapHandler) -> Any:
        # Saved without the key when the history was never compacted, so such a state's JSON
        # is what it was before the field existed (pydantic 2.7 has no exclude_if).
        out = handler(self)
        if isinstance(out, dict) and out.get("compaction", 0) is None:
            del out["compaction"]
        return out

    @field_serializer("tool_calls", mode="wrap")
    def _calls(self, calls: list[ToolCallRecord], handler: SerializerFunctionWrapHandler) -> Any:
        # A call that ran with the model's own input has no requested_input, a model's call
        # no parent_call_id: leaving the keys out keeps the JSON of such a state as it was
        # before the fields existed.
        out = handler(calls)
        for call in out:
            if isinstance(call, dict):
                if call.get("requested_input", 0) is None:
                    del call["requested_input"]
                if call.get("parent_call_id", 0) is None:
                    del call["parent_call_id"]
        return out
