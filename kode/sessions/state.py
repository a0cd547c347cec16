"""What a session's records add up to: `SessionState`, and `fold`, the pure function that makes it.

This module owns the rules a log must follow, so a store can only append and read: a store
never interprets records, and whatever it returns folds here the same way. The rules:

- sequence numbers increase (a log read whole starts at 1 and has no gaps);
- a call opens with any status but ``approved``, and then moves only forward::

      pending ──► awaiting_approval ──► approved ──► running ──► done / failed / cancelled
         │               │                 │            │  ▲
         │               └──► denied, failed, cancelled │  └── running again (a re-run
         └──► running, done, failed, denied, cancelled  │      after a restart)
                                                        └──► pending (a client call)

  a final status (done, failed, denied, cancelled) is never left: what completed stays
  completed;
- an approval request needs its call ``awaiting_approval``; a decision counts only while its
  call waits and no decision came before (decisions may come from other processes, so a late
  one is not an error);
- client calls waiting must be ``pending`` calls;
- a compaction stands for more messages than the one before, ends before a model's turn and
  leaves one message at least after it.

A record that breaks a rule raises `SessionRecordError` naming the record and the rule.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from kode.models.messages import Message, ToolResultContent, Usage
from kode.sessions.errors import SessionRecordError
from kode.sessions.records import (
    TERMINAL_STATUSES,
    ApprovalDecided,
    ApprovalRequested,
    CallStatus,
    CallUpdated,
    ClientCallsWaiting,
    HistoryCompacted,
    MessageAdded,
    MetadataSet,
    SessionEntry,
    SessionStatus,
    StatusChanged,
    TodosReplaced,
    ToolAlwaysAllowed,
    UsageAdded,
)

__all__ = ["CallState", "PendingApproval", "SessionState", "fold"]

# Where each status may go next (a call's first record may have any status but "approved").
_NEXT: dict[str, frozenset[str]] = {
    "pending": frozenset({"awaiting_approval", "running", "done", "failed", "denied", "cancelled"}),
    "awaiting_approval": frozenset({"approved", "denied", "failed", "cancelled"}),
    "approved": frozenset({"running", "done", "failed", "denied", "cancelled"}),
    "running": frozenset({"running", "pending", "done", "failed", "cancelled"}),
}


class CallState(BaseModel):
    """One tool call as its records leave it."""

    model_config = ConfigDict(extra="forbid")
    id: str
    """The ``tool_use`` id."""
    name: str
    """The tool's name, as the latest record gave it."""
    status: CallStatus
    """Where the call is."""
    input: dict[str, Any] | str | None = None
    """The arguments it runs with, if a record gave them."""
    requested_input: dict[str, Any] | str | None = None
    """The arguments its first record gave, when a later one changed them (a person edited
    them at approval); only a call no message holds (a script's call) needs it, since a
    model's call has its ``tool_use`` block."""
    result: ToolResultContent | None = None
    """The ``tool_result`` block, once the call has a final status."""
    error_type: str | None = None
    """The `ToolErrorType` value of an error result."""
    client: bool = False
    """Whether the caller executes it."""
    read_only: bool = False
    """Whether its tool only reads."""
    idempotent: bool = False
    """Whether its tool was declared idempotent."""
    parent_call_id: str | None = None
    """The call that made this one (a ``code_run`` script's call), if a call made it."""
    attempts: int = 0
    """How many times it started running (more than one: re-run after a restart)."""
    opened_at: float = 0.0
    """When its first record was written."""
    started_at: float | None = None
    """When it first started running."""
    ended_at: float | None = None
    """When it reached its final status."""

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> Any:
        # Left out when nobody edited the input: the JSON of such a state stays as it was
        # before the field existed.
        out = handler(self)
        if isinstance(out, dict) and out.get("requested_input", 0) is None:
            del out["requested_input"]
        return out

    @property
    def finished(self) -> bool:
        """Whether the call has its final status (and its result)."""
        return self.status in TERMINAL_STATUSES

    @property
    def safe_to_rerun(self) -> bool:
        """Whether running it again cannot do harm: its tool is read-only or idempotent."""
        return self.read_only or self.idempotent


class PendingApproval(BaseModel):
    """A call waiting for approval, and the decision once someone made it."""

    model_config = ConfigDict(extra="forbid")
    request: ApprovalRequested
    """What was asked."""
    decision: ApprovalDecided | None = None
    """The first decision, until the call's own record moves it on."""


class SessionState(BaseModel):
    """Everything a session's records add up to; `apply` is the only thing that changes it.

    It round-trips through JSON (``SessionState.model_validate_json(s.model_dump_json())``).
    """

    model_config = ConfigDict(extra="forbid")
    last_seq: int = 0
    """The sequence number of the last record applied."""
    messages: list[Message] = Field(default_factory=list)
    """The conversation."""
    calls: dict[str, CallState] = Field(default_factory=dict)
    """Every tool call by id, in the order they were first recorded."""
    approvals: dict[str, PendingApproval] = Field(default_factory=dict)
    """The calls waiting for approval, by id, with any decision made meanwhile."""
    client_waiting: list[str] = Field(default_factory=list)
    """Client calls still waiting for their results, in call order."""
    usage: Usage = Field(default_factory=Usage)
    """Tokens used so far."""
    todos: list[dict[str, Any]] = Field(default_factory=list)
    """The todo list."""
    always_allowed: list[str] = Field(default_factory=list)
    """Tools allowed for the rest of the session, lower-case, in the order they were."""
    status: SessionStatus = "idle"
    """What the session's agent was doing."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Values the application keeps with the session (`MetadataSet`)."""
    compaction: HistoryCompacted | None = None
    """The latest compaction: the summary requests send in place of the older messages."""

    @property
    def open_calls(self) -> list[CallState]:
        """The calls without a final status, in order: what a resumed run must settle."""
        return [c for c in self.calls.values() if not c.finished]

    def apply(self, entry: SessionEntry) -> None:
        """Apply one entry: the next record of the log.

        Raises:
            SessionRecordError: the entry does not follow the last one, or its record
                breaks a rule of this module (the message names the rule).
        """
        if entry.seq <= self.last_seq:
            raise SessionRecordError(
                f"record {entry.seq} cannot follow record {self.last_seq}: sequence numbers "
                "must increase"
            )
        record = entry.record
        if isinstance(record, MessageAdded):
            self._add_message(entry.seq, record)
        elif isinstance(record, CallUpdated):
            self._update_call(entry, record)
        elif isinstance(record, UsageAdded):
            self.usage = self.usage + Usage(
                input_tokens=record.input_tokens,
                output_tokens=record.output_tokens,
                cache_read_input_tokens=record.cache_read_input_tokens,
                cache_creation_input_tokens=record.cache_creation_input_tokens,
            )
        elif isinstance(record, StatusChanged):
            self.status = record.status
        elif isinstance(record, ApprovalRequested):
            self._request_approval(entry.seq, record)
        elif isinstance(record, ApprovalDecided):
            waiting = self.approvals.get(record.call_id)
            if waiting is not None and waiting.decision is None:
                waiting.decision = record
        elif isinstance(record, ClientCallsWaiting):
            self._wait_for_client(entry.seq, record)
        elif isinstance(record, TodosReplaced):
            self.todos = [dict(t) for t in record.todos]
        elif isinstance(record, ToolAlwaysAllowed):
            if record.key not in self.always_allowed:
                self.always_allowed.append(record.key)
        elif isinstance(record, MetadataSet):
            if record.value is None:
                self.metadata.pop(record.key, None)
            else:
                self.metadata[record.key] = record.value
        elif isinstance(record, HistoryCompacted):
            self._compact(entry.seq, record)
        else:  # pragma: no cover - the union is closed; a new record type needs a branch
            raise SessionRecordError(f"record {entry.seq}: unknown record {record!r}")
        self.last_seq = entry.seq

    def _compact(self, seq: int, record: HistoryCompacted) -> None:
        before = self.compaction.messages if self.compaction is not None else 0
        if not before < record.messages < len(self.messages):
            raise SessionRecordError(
                f"record {seq}: a compaction of the first {record.messages} messages needs "
                f"more than the {before} compacted before and fewer than the "
                f"{len(self.messages)} of the history (the recent part keeps one at least)"
            )
        if self.messages[record.messages].role != "assistant":
            raise SessionRecordError(
                f"record {seq}: a compaction must end before a model's turn, and message "
                f"{record.messages} is the user's (a call would be apart from its result)"
            )
        self.compaction = record

    def _add_message(self, seq: int, record: MessageAdded) -> None:
        message = record.message
        if not record.merge:
            self.messages.append(message)
            return
        last = self.messages[-1] if self.messages else None
        if last is None or last.role != message.role:
            found = f"it has role {last.role!r}" if last else "there is none yet"
            raise SessionRecordError(
                f"record {seq}: merging blocks of role {message.role!r} needs a last message "
                f"of that role, and {found}"
            )
        self.messages[-1] = Message(role=last.role, content=[*last.content, *message.content])

    def _update_call(self, entry: SessionEntry, record: CallUpdated) -> None:
        call = self.calls.get(record.call_id)
        status = record.status
        if call is None:
            if status == "approved":
                raise SessionRecordError(
                    f"record {entry.seq}: call {record.call_id!r} cannot open as approved: "
                    "it must have waited for approval first"
                )
            call = CallState(id=record.call_id, name=record.name, status=status, opened_at=entry.at)
            self.calls[record.call_id] = call
        else:
            allowed = _NEXT.get(call.status, frozenset())
            if status not in allowed or (
                status == "pending" and call.status == "running" and not record.client
            ):
                if call.status in TERMINAL_STATUSES:
                    why = f"it is {call.status} already, and a finished call never changes"
                elif status == "pending":
                    why = "only a client call (client=True) goes back to pending"
                else:
                    why = f"from {call.status} it can go to {', '.join(sorted(allowed))}"
                raise SessionRecordError(
                    f"record {entry.seq}: call {record.call_id!r} ({call.name}) cannot go "
                    f"from {call.status} to {status}: {why}"
                )
            call.status = status
            call.name = record.name
        if record.input is not None:
            if (
                call.input is not None
                and call.requested_input is None
                and record.input != call.input
            ):
                call.requested_input = call.input
            call.input = record.input
        if record.client is not None:
            call.client = record.client
        if record.read_only is not None:
            call.read_only = record.read_only
        if record.idempotent is not None:
            call.idempotent = record.idempotent
        if record.parent_call_id is not None:
            call.parent_call_id = record.parent_call_id
        if status == "running":
            call.attempts += 1
            if call.started_at is None:
                call.started_at = entry.at
        if status in TERMINAL_STATUSES:
            call.result = record.result
            call.error_type = record.error_type
            call.ended_at = entry.at
        if status != "awaiting_approval":
            self.approvals.pop(record.call_id, None)
        if status != "pending" and record.call_id in self.client_waiting:
            self.client_waiting.remove(record.call_id)

    def _request_approval(self, seq: int, record: ApprovalRequested) -> None:
        call = self.calls.get(record.call_id)
        if call is None or call.status != "awaiting_approval":
            where = "has no record" if call is None else f"is {call.status}"
            raise SessionRecordError(
                f"record {seq}: approval requested for call {record.call_id!r}, which {where}; "
                "record the call as awaiting_approval first"
            )
        self.approvals[record.call_id] = PendingApproval(request=record)

    def _wait_for_client(self, seq: int, record: ClientCallsWaiting) -> None:
        for call_id in record.call_ids:
            call = self.calls.get(call_id)
            if call is None or call.status != "pending":
                where = "has no record" if call is None else f"is {call.status}"
                raise SessionRecordError(
                    f"record {seq}: client call {call_id!r} cannot wait for a result: it "
                    f"{where}; only pending calls wait"
                )
        self.client_waiting = list(record.call_ids)


def fold(entries: Iterable[SessionEntry], state: SessionState | None = None) -> SessionState:
    """The state `entries` lead to, from `state` (a copy of it) or from an empty session.

    Pure: neither `entries` nor `state` is changed. To keep a state current as records are
    written, call `SessionState.apply` on it instead (no copy).

    Raises:
        SessionRecordError: an entry breaks a rule of this module.
    """
    folded = state.model_copy(deep=True) if state is not None else SessionState()
    for entry in entries:
        folded.apply(entry)
    return folded
