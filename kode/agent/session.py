"""`Session`: an agent's history as one object, with the only methods that change it.

This module owns what outlives a run: the messages, every tool call and its status, the client
calls waiting for results, the calls waiting for approval, the tokens used, the todo list, the
tools allowed for the session and the status. `AgentRun` and the pipeline change it only
through its methods; each change also becomes a record of `kode.sessions` (a small one: what
changed, never the whole history), and with a store, `commit` writes the records made since
the last commit in one transaction. A run commits before each step that follows a change
(before the model is asked, before a tool starts, after a call ends), so what a process did is
in the store before it does the next thing: write-ahead, append only.

`load` rebuilds a session from its store's records (`Agent.resume`); `settle_for_resume`
applies the resume rules to the calls a stopped process left open.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, overload

import anyio

from kode.agent.blocks import interrupted_result
from kode.agent.client_calls import ClientCalls
from kode.agent.inner_resume import cancel_made_calls, settle_made_calls
from kode.agent.leases import drop as drop_lease
from kode.agent.leases import hold as hold_lease
from kode.agent.state import AgentState, AgentStatus, CallRecords, ToolCallRecord, ToolCallStatus
from kode.models.messages import ContentBlock, Message, ToolResultContent, ToolUseContent, Usage
from kode.sessions.errors import SessionConflictError, SessionExistsError, SessionLeaseError
from kode.sessions.records import (
    TERMINAL_STATUSES,
    ApprovalDecided,
    ApprovalRequested,
    CallUpdated,
    ClientCallsWaiting,
    HistoryCompacted,
    MessageAdded,
    MetadataSet,
    SessionRecord,
    StatusChanged,
    TodosReplaced,
    ToolAlwaysAllowed,
    UsageAdded,
)
from kode.sessions.starting import check_startable, start_session
from kode.sessions.state import SessionState
from kode.sessions.store import DEFAULT_LEASE_TTL, Lease, Store
from kode.tools.collector import collector_paused
from kode.tools.core import Tool
from kode.tools.errors import ToolErrorType
from kode.tools.kinds import Kind

__all__ = ["CHILDREN_KEY", "TRACE_KEY", "HistoryView", "Session", "rerun_safe"]

CHILDREN_KEY = "kode.children"
"""The metadata key under which a session keeps the ids of the sessions it spawned."""

TRACE_KEY = "kode.trace"
"""The metadata key under which a traced run keeps its trace context (``traceparent``,
``tracestate`` of its ``invoke_agent`` span), so a run resumed in another process continues
the same trace."""

_READ_ONLY = frozenset({Kind.READ, Kind.SEARCH, Kind.THINK})
_RESUME_IT = (
    "continue it with await Agent.resume(session_id, store=..., model=...), or give a new "
    "session_id"
)


def rerun_safe(tool: Tool[..., Any]) -> tuple[bool, bool]:
    """Whether `tool` only reads (kinds read, search, think) and whether it is idempotent."""
    return tool.kind in _READ_ONLY, bool(getattr(tool, "idempotent", False))


class HistoryView(Sequence[Message]):
    """The first `length` messages of a session, without copying them (a model request's view).

    A session only appends messages (a run that continues an interrupted one adds blocks to
    its last user message, which replaces that message), so the view keeps showing what the
    history was when it was made. Making one costs the same at turn 5,000 as at turn 10.
    """

    __slots__ = ("_items", "_length")

    def __init__(self, items: list[Message], length: int | None = None) -> None:
        self._items = items
        self._length = len(items) if length is None else length

    def __len__(self) -> int:
        return self._length

    @overload
    def __getitem__(self, index: int) -> Message: ...
    @overload
    def __getitem__(self, index: slice) -> list[Message]: ...
    def __getitem__(self, index: int | slice) -> Message | list[Message]:
        if isinstance(index, slice):
            return self._items[: self._length][index]
        if index < 0:
            index += self._length
        if not 0 <= index < self._length:
            raise IndexError("history index out of range")
        return self._items[index]

    def __iter__(self) -> Iterator[Message]:
        items = self._items
        for index in range(self._length):
            yield items[index]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, str | bytes):
            return len(other) == self._length and all(
                a == b for a, b in zip(self, other, strict=True)
            )
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"HistoryView({list(self)!r})"


class Session:
    """An agent's history and the only methods that change it (see the module docstring).

    Args:
        session_id: The session's id.
        template_id: The template the agent runs (kept in the store's header).
        store: Where its records go; `None` keeps it in memory only (no records are made).
        lease_ttl: Seconds the lease on the session lasts between renewals.
        owns_store: Close the store with the session (it was made from a URL for it).
        parent_id: The session that started this one (a spawned sub-agent's parent).
    """

    def __init__(
        self,
        session_id: str,
        *,
        template_id: str,
        store: Store | None = None,
        lease_ttl: float = DEFAULT_LEASE_TTL,
        owns_store: bool = False,
        parent_id: str | None = None,
    ) -> None:
        self.id = session_id
        """The session's id."""
        self.template_id = template_id
        """The template its agent runs."""
        self.store = store
        """Where its records are written, if anywhere."""
        self.lease_ttl = lease_ttl
        """Seconds its lease lasts between renewals."""
        self.lease: Lease | None = None
        """The lease this process holds on the session (taken by `open`)."""
        self.messages: list[Message] = []
        """The conversation."""
        self.records = CallRecords()
        """Every tool call and what became of it, by id."""
        self.client_calls = ClientCalls()
        """The client tool calls waiting for `Agent.submit_tool_result`."""
        self.always_allowed: set[str] = set()
        """Tools allowed for the session (``allow_always``), lower-case."""
        self.usage = Usage()
        """Tokens used so far."""
        self.status: AgentStatus = "idle"
        """What the agent is doing."""
        self.todos: list[dict[str, Any]] = []
        """The todo list (the very list todo tools change, through the ``todos`` service)."""
        self.decisions: dict[str, ApprovalDecided] = {}
        """Decisions read from the store for calls that wait (made by any process)."""
        self.resumed = False
        """Whether the session was loaded with a run that had not ended (`Agent.resume`), or
        with a message queued for it (``sessions_send(wait=False)``)."""
        self.parent_id = parent_id
        """The session that started this one, if any."""
        self.children: list[str] = []
        """The sessions this one spawned (``sessions_spawn``), in order."""
        self.trace_context: dict[str, str] | None = None
        """The trace context (``traceparent``, ``tracestate``) of the run its process left
        unfinished (read by `load`; `None` when that run was not traced, or had ended)."""
        self.trace_kept = False
        """Whether the store holds a run's trace context (metadata ``kode.trace``)."""
        self.last_seq = 0
        """The sequence number of the last record written or read."""
        self.compaction: HistoryCompacted | None = None
        """The latest compaction of the history (a context policy's summary of the older
        messages), if any: the messages stay, requests send the summary in their place."""
        self._journal: list[SessionRecord] | None = [] if store is not None else None
        self._todos_written: list[dict[str, Any]] = []
        self._lock = anyio.Lock() if store is not None else None
        self._opened = False
        self._broken: BaseException | None = None
        self.owns_store = owns_store
        """Whether `close` closes the store too (it was made from a URL for this session)."""
        self._safe: dict[str, bool] = {}  # loaded calls: whether their tool may run again

    # --- changes (each also makes a record when there is a store) ------------------------------

    def _write(self, record: SessionRecord) -> None:
        journal = self._journal
        if journal is not None:
            journal.append(record)

    def set_status(self, status: AgentStatus) -> None:
        """The agent's status is now `status`."""
        if status != self.status:
            self.status = status
            self._write(StatusChanged(status=status))

    def add_user_blocks(self, blocks: list[ContentBlock]) -> None:
        """A run opens with these blocks.

        They join a last user message (left by an interrupted run) or start one, so roles
        keep alternating as providers require.
        """
        messages = self.messages
        last = messages[-1] if messages else None
        if last is not None and last.role == "user":
            messages[-1] = Message(role="user", content=[*last.content, *blocks])
            self._write(MessageAdded(message=Message(role="user", content=blocks), merge=True))
        else:
            self.add_message(Message(role="user", content=blocks))

    def add_message(self, message: Message) -> None:
        """A message joins the conversation."""
        self.messages.append(message)
        self._write(MessageAdded(message=message))

    def add_reply(
        self, message: Message, usage: Usage
    ) -> tuple[list[ToolUseContent], dict[int, str]]:
        """A model's reply joins the conversation; return its calls and duplicated ids.

        See `CallRecords.add_turn` for the duplicates (they get fresh ids in the message).
        """
        calls, duplicates = self.records.add_turn(message)
        self.add_message(message)
        self.add_usage(usage)
        return calls, duplicates

    def add_usage(self, usage: Usage) -> None:
        """Tokens used by a request whose response is not a message (a compaction's)."""
        self.usage += usage
        if self._journal is not None and (usage.input_tokens or usage.output_tokens):
            self._journal.append(
                UsageAdded(
                    input_tokens=usage.input_tokens,
                    output_tokens=usage.output_tokens,
                    cache_read_input_tokens=usage.cache_read_input_tokens,
                    cache_creation_input_tokens=usage.cache_creation_input_tokens,
                )
            )

    def compact(self, summary: str, messages: int) -> None:
        """Requests now send `summary` in place of the first `messages` messages.

        The messages stay (the history and the store only grow); see `HistoryCompacted`.
        """
        record = HistoryCompacted(summary=summary, messages=messages)
        self.compaction = record
        self._write(record)

    def update_call(
        self,
        call: ToolUseContent,
        status: ToolCallStatus,
        *,
        result: ToolResultContent | None = None,
        error_type: str | None = None,
        tool: Tool[..., Any] | None = None,
        client: bool | None = None,
        record: ToolCallRecord | None = None,
    ) -> ToolCallRecord:
        """A call moves to `status` (with its `result` once final); return its record.

        `tool`, given when the call starts running, records whether it only reads and
        whether it is idempotent (what a resumed session needs to decide on a re-run).
        `record` is the call's record, when the caller holds it already.
        """
        if record is None:
            record = self.records.for_call(call)
        record.status = status
        if status == "running":
            if record.started_at is None:
                record.started_at = time.time()
        elif status in TERMINAL_STATUSES or status == "pending":
            record.result = result
            record.error_type = error_type
            record.ended_at = time.time()
        if client:
            record.client = True
        if self._journal is not None:
            read_only = idempotent = None
            if tool is not None:
                read_only, idempotent = rerun_safe(tool)
            parent = record.parent_call_id
            self._journal.append(
                CallUpdated(
                    call_id=call.id,
                    name=record.name,
                    status=status,
                    # what runs, when a person changed the model's input at approval, or
                    # when no message holds it (a call a call made)
                    input=record.input
                    if record.requested_input is not None or parent is not None
                    else None,
                    result=result if status in TERMINAL_STATUSES else None,
                    error_type=error_type,
                    client=client,
                    read_only=read_only,
                    idempotent=idempotent,
                    parent_call_id=parent,
                )
            )
        return record

    def request_approval(
        self,
        call: ToolUseContent,
        *,
        tool_name: str,
        input: dict[str, Any],
        reason: str,
        kind: str,
        details: dict[str, Any] | None = None,
    ) -> ApprovalDecided | None:
        """A call waits for approval; return a decision made already (read from the store).

        `details` are the request's description, locations, diff, pattern, server and rule
        (kept in the record, for a decider in another process). A call that was waiting when
        its process stopped waits again without a new record.
        """
        record = self.records.for_call(call)
        if record.status != "awaiting_approval":
            self.update_call(call, "awaiting_approval")
            self._write(
                ApprovalRequested(
                    call_id=call.id,
                    tool_name=tool_name,
                    input=input,
                    reason=reason,
                    kind=kind,
                    **(details or {}),
                )
            )
        return self.decisions.get(call.id)

    def decide(
        self,
        call: ToolUseContent,
        decision: str,
        note: str = "",
        *,
        recorded: bool = False,
        scope: str = "tool",
        pattern: str = "",
        input: dict[str, Any] | None = None,
        runs_with: dict[str, Any] | None = None,
    ) -> None:
        """Someone decided a call waiting for approval (`recorded`: the store has it already).

        `input` is the decision's input, as the decider gave it; `runs_with` the same once
        validated: the call's record then keeps it as what runs, and the model's own input as
        `ToolCallRecord.requested_input`.
        """
        self.decisions.pop(call.id, None)
        if not recorded and decision in ("allow", "deny", "allow_always"):
            self._write(
                ApprovalDecided(
                    call_id=call.id,
                    decision=decision,  # type: ignore[arg-type]
                    note=note,
                    scope=scope,  # type: ignore[arg-type]
                    pattern=pattern,
                    input=input,
                )
            )
        if decision != "deny":
            if runs_with is not None:
                record = self.records.for_call(call)
                if record.requested_input is None:
                    record.requested_input = record.input
                record.input = runs_with
            self.update_call(call, "approved")

    def allow_always(
        self, tool_name: str, *, server: str | None = None, pattern: str | None = None
    ) -> None:
        """A tool runs without asking for the rest of the session.

        Or, with `server`, every tool of that MCP server; with `pattern`, the tool's calls
        whose pattern starts with it.
        """
        record = ToolAlwaysAllowed(tool=tool_name, server=server or "", pattern=pattern)
        if record.key not in self.always_allowed:
            self.always_allowed.add(record.key)
            self._write(record)

    def add_child(self, session_id: str) -> None:
        """This session spawned `session_id` (kept in its metadata, ``kode.children``)."""
        self.children.append(session_id)
        self._write(MetadataSet(key=CHILDREN_KEY, value=list(self.children)))

    def keep_trace(self, carrier: dict[str, str]) -> None:
        """Keep a traced run's trace context in the store (metadata ``kode.trace``).

        Written with the run's first records (no transaction of its own); a run resumed in
        another process continues that trace (see `trace_context`). An empty `carrier` (a
        run that is not traced) removes a context kept by an earlier run.
        """
        if self._journal is not None and (carrier or self.trace_kept):
            self._write(MetadataSet(key=TRACE_KEY, value=carrier or None))
            self.trace_kept = bool(carrier)

    def wait_for_client(self, calls: Sequence[ToolUseContent], outcomes: Sequence[Any]) -> None:
        """A run ends with client calls waiting for their results."""
        self.client_calls.wait_for(calls, outcomes)
        self._write(ClientCallsWaiting(call_ids=self.client_calls.waiting))

    def submit_client_result(self, call_id: str, block: ToolResultContent) -> bool:
        """A client's result for a waiting call; whether one was waiting."""
        if not self.client_calls.submit(call_id, block):
            return False
        record = self.records.get(call_id)
        if record is not None:
            status: ToolCallStatus = "failed" if block.is_error else "done"
            self.update_call(
                ToolUseContent(id=call_id, name=record.name, input=record.input),
                status,
                result=block,
            )
        return True

    def sync_todos(self) -> None:
        """Record the todo list if a tool changed it since it was last recorded."""
        if self._journal is not None and self.todos != self._todos_written:
            self._todos_written = [dict(t) for t in self.todos]
            self._journal.append(TodosReplaced(todos=self._todos_written))

    # --- the store -------------------------------------------------------------------------------

    @property
    def uncommitted(self) -> int:
        """How many records wait for `commit`."""
        return len(self._journal) if self._journal is not None else 0

    async def open(self, *, resume: bool) -> None:
        """Take the session's lease (creating the session in the store on first use).

        With `resume`, also read its records (see `load`). Without, the session must be new
        or have no records yet.

        Raises:
            SessionLeaseError: another process holds the session's lease.
            SessionNotFoundError: `resume` and the store has no such session.
            ValueError: not `resume`, and the store has a session with records under this
                id (resume it instead).
        """
        store = self.store
        if store is None or self._opened:
            return
        if resume:
            self.lease = await store.acquire(self.id, ttl=self.lease_ttl)
            hold_lease(self)
            self._opened = True
        else:  # created (or taken up while empty) with its lease: one transaction
            await self._start(store, [])
        if resume:
            try:
                await self.load()
            except BaseException:
                await self.close()
                raise

    async def prepare(self) -> None:
        """Check, writing nothing, that a run may start the session (as `open` would).

        A run calls it instead of `open`: its first `commit` then creates the session in the
        store, takes its lease and writes its first records in one transaction.

        Raises:
            SessionLeaseError: another process holds the session's lease.
            ValueError: the store has a session with records under this id.
        """
        store = self.store
        if store is None:
            return
        if self._opened:
            if self.lease is None:  # given up when the last run ended (`release_lease`)
                await self._retake(store)
            return
        try:
            await check_startable(store, self.id)
        except SessionExistsError as exc:
            raise ValueError(f"{exc}; {_RESUME_IT}") from None

    async def _start(self, store: Store, records: list[SessionRecord]) -> None:
        try:
            self.lease, self.last_seq = await start_session(
                store,
                self.id,
                template=self.template_id,
                parent_id=self.parent_id,
                ttl=self.lease_ttl,
                records=records,
            )
        except SessionExistsError as exc:
            raise ValueError(f"{exc}; {_RESUME_IT}") from None
        hold_lease(self)
        self._opened = True

    async def _retake(self, store: Store) -> None:
        """Take the lease again for a session this agent ran before it gave the lease up.

        A session another process wrote to meanwhile is read again (it resumed the session
        and ran it), unless records made here wait to be written: those could not follow.

        Raises:
            SessionLeaseError: another process holds the session's lease.
            SessionConflictError: another process wrote to the session, and records made
                here since are not written yet.
        """
        lease = await store.acquire(self.id, ttl=self.lease_ttl)
        try:
            header = await store.get(self.id)
            if header.last_seq != self.last_seq:
                if self.uncommitted:
                    raise SessionConflictError(
                        f"session {self.id!r} has {header.last_seq} records, not "
                        f"{self.last_seq}: another process wrote to it while this agent held "
                        f"no lease, and {self.uncommitted} records made here since cannot "
                        "follow them; resume the session again (Agent.resume)"
                    )
                await self.load()
        except BaseException:
            with anyio.CancelScope(shield=True):
                await store.release(lease)
            raise
        self.lease = lease
        hold_lease(self)

    async def release_lease(self) -> None:
        """Write what is left and give up the lease; the next run takes it again.

        What a run in sync code does when it ends (`Agent.send_sync`): another process can
        then resume the session at once. Nothing happens without a store or a lease.
        """
        store, lease = self.store, self.lease
        if store is None or lease is None:
            return
        try:
            if self.uncommitted and self._broken is None:
                await self.commit()
        finally:
            self.lease = None
            drop_lease(self)
            try:
                await store.release(lease)
            except SessionLeaseError:  # taken over meanwhile: nothing to give up
                pass

    async def load(self) -> None:
        """Rebuild the session from its store's records."""
        assert self.store is not None
        # A long session is many objects that all stay alive: the collector's passes through
        # them made loading superlinear (kode.tools.collector).
        with collector_paused():
            log = await self.store.load(self.id)
            self.restore(log.state())

    def restore(self, state: SessionState) -> None:
        """Take the history from a folded `SessionState` (no records are made).

        The history goes in by `_take_history`, as a saved `AgentState`'s does; what only a
        store's log knows follows: the status and the resume rules' inputs (whether each open
        call may run again, decisions made meanwhile, the client calls waiting), the sequence
        number, the children and the trace.
        """
        uses = {
            block.id: block
            for message in state.messages
            if message.role == "assistant"
            for block in message.tool_uses
        }
        records = []
        for call in state.calls.values():
            use = uses.get(call.id)
            status: ToolCallStatus = call.status
            asked = use.input if use is not None else call.requested_input
            edited = call.input is not None and asked is not None and call.input != asked
            records.append(
                ToolCallRecord(
                    id=call.id,
                    name=use.name if use is not None else call.name,
                    input=call.input if call.input is not None else (asked or {}),
                    requested_input=asked if edited else None,
                    status=status,
                    result=call.result,
                    error_type=call.error_type,
                    started_at=call.started_at,
                    ended_at=call.ended_at,
                    client=call.client,
                    parent_call_id=call.parent_call_id,
                )
            )
        self._take_history(
            messages=state.messages,  # (the fold's own: nobody else holds them)
            records=CallRecords(records),
            usage=state.usage.model_copy(),
            todos=[dict(t) for t in state.todos],
            always_allowed=state.always_allowed,
            compaction=state.compaction,
        )
        self._safe = {c.id: c.safe_to_rerun for c in state.calls.values()}
        self._todos_written = [dict(t) for t in state.todos]  # they are in the store already
        self.status = state.status
        self.last_seq = state.last_seq
        self.decisions = {
            call_id: waiting.decision
            for call_id, waiting in state.approvals.items()
            if waiting.decision is not None
        }
        if state.status == "awaiting_client" and state.client_waiting:
            self._hold_client_turn(state.client_waiting)
        self.children = list(state.metadata.get(CHILDREN_KEY) or [])
        trace = state.metadata.get(TRACE_KEY)
        self.trace_kept = trace is not None
        self.trace_context = (
            {str(k): str(v) for k, v in trace.items()}
            if isinstance(trace, dict) and state.status in ("running", "awaiting_approval")
            else None
        )
        last = self.messages[-1] if self.messages else None
        self.resumed = (
            state.status in ("running", "awaiting_approval")
            or (state.status == "failed" and bool(self.open_turn()))
            or (state.status != "awaiting_client" and last is not None and last.role == "user")
        )

    def restore_agent_state(self, state: AgentState) -> None:
        """Take the history from a saved `AgentState` (`Agent.from_state`).

        Calls that were running or waiting for approval cannot resume from a state: they are
        answered with cancelled results, so the history is valid. Client calls that were
        waiting still wait. Records are made for what changes (none for what is restored).

        The history goes in by `_take_history`, as a store's `SessionState` does (the state is
        the caller's, so it is copied); what follows is a snapshot's own rule for the turn it
        left open, since without a log nothing can resume a call.
        """
        self._take_history(
            messages=[m.model_copy(deep=True) for m in state.messages],
            records=CallRecords(r.copy() for r in state.tool_calls),
            usage=state.usage.model_copy(),
            todos=[dict(t) for t in state.todos],
            always_allowed=state.always_allowed,
            compaction=state.compaction,
        )
        calls = self.open_turn()
        if not calls:
            return
        records = self.records
        waiting = [
            c.id
            for c in calls
            if (r := records.get(c.id)) is not None and r.client and r.status == "pending"
        ]
        if waiting and state.status == "awaiting_client":
            self._hold_client_turn(waiting)
            self.set_status("awaiting_client")
            return
        done = self._results_of(calls)
        for call in calls:
            if call.id not in done:
                records.for_call(call).status = "cancelled"
        cancel_made_calls(records)  # (a code_run script's calls: the script cannot resume)
        self.client_calls.restore(calls, done, [])
        blocks = self.client_calls.take(None)
        assert not isinstance(blocks, str)
        self.add_message(Message(role="user", content=blocks))

    def _take_history(
        self,
        *,
        messages: list[Message],
        records: CallRecords,
        usage: Usage,
        todos: list[dict[str, Any]],
        always_allowed: Iterable[str],
        compaction: HistoryCompacted | None,
    ) -> None:
        """Put a restored history in place.

        The one way both restores (`restore` of a store's `SessionState`, `restore_agent_state`
        of a saved `AgentState`) take what the two states share. The values are the session's
        from now on: the caller copies what it does not own.
        """
        self.messages[:] = messages
        self.compaction = compaction
        self.records = records
        # One tool_result block for the record and the message, as in a live run (a second
        # copy of every result would be more the collector walks, for nothing).
        self.records.share_results(self.messages)
        self.todos[:] = todos  # the same list tools see
        self.usage = usage
        self.always_allowed = set(always_allowed)

    def _results_of(self, calls: Sequence[ToolUseContent]) -> dict[str, ToolResultContent]:
        """The results the records hold for `calls`, by id."""
        records = self.records
        return {
            c.id: r.result
            for c in calls
            if (r := records.get(c.id)) is not None and r.result is not None
        }

    def _hold_client_turn(self, waiting: Sequence[str]) -> None:
        """The open turn waits again for the client calls `waiting` (both restores)."""
        calls = self.open_turn()
        self.client_calls.restore(calls, self._results_of(calls), waiting)

    def open_turn(self) -> list[ToolUseContent]:
        """The calls of the last message, when it is a model's turn not yet answered."""
        last = self.messages[-1] if self.messages else None
        if last is None or last.role != "assistant":
            return []
        return list(last.tool_uses)

    def settle_for_resume(self, call: ToolUseContent) -> ToolResultContent | None:
        """Apply the resume rules to one call of the turn a stopped process left open.

        A call with a final status keeps its result (returned: it is never run again). A call
        that was running is run again only if its tool only reads or is idempotent; otherwise
        it is answered (returned) with an error saying a restart interrupted it and it may
        have partly run (and what became of the calls it made). Any other call (not started,
        waiting for approval, approved) returns `None`: it goes through the pipeline, which
        asks for approval again unless it has its decision. The calls it made (a
        ``code_run`` script's) are settled first and never run again (`kode.agent.inner_resume`).
        """
        record = self.records.get(call.id)
        if record is None:
            return None
        # The calls it made (a code_run script's) never run again: their script is gone.
        made = settle_made_calls(self, call.id, self._safe)
        if record.status in TERMINAL_STATUSES:
            return record.result or interrupted_result(call)
        if record.status == "running" and not self._safe.get(call.id, False):
            block = interrupted_result(call, made)
            self.update_call(
                call, "failed", result=block, error_type=ToolErrorType.EXECUTION_FAILED.value
            )
            return block
        return None

    async def commit(self) -> None:
        """Write the records made since the last commit, in one transaction.

        Raises:
            SessionLeaseError: another process took the session's lease.
            StoreError: the database failed.
        """
        if self._journal is None or self._lock is None:
            return
        if self._broken is not None:
            raise self._broken
        lock = self._lock
        if not self._journal and not lock.locked():
            return  # nothing to write, and no commit under way that the caller must wait for
        try:
            lock.acquire_nowait()  # no pass through the event loop when the lock is free
        except anyio.WouldBlock:
            await lock.acquire()
        try:
            batch = self._journal
            if not batch:
                return
            self._journal = []
            store = self.store
            assert store is not None
            try:
                if not self._opened:  # the session is made, leased and written at once
                    await self._start(store, batch)
                    return
                lease = self.lease
                if lease is not None and lease.expires_at - time.time() < self.lease_ttl / 2:
                    self.lease = lease = await store.renew(lease, ttl=self.lease_ttl)
                self.last_seq = await store.append(self.id, batch, lease=lease)
            except BaseException as exc:
                if not isinstance(exc, anyio.get_cancelled_exc_class()):
                    self._broken = exc
                else:  # cancelled before the append began: write the batch next time
                    self._journal[:0] = batch
                raise
        finally:
            lock.release()

    def lease_timer(self) -> LeaseTimer | None:
        """A started `LeaseTimer` on asyncio, which renews the lease as `keep_lease` does.

        `None` without a store or on another event loop (run `keep_lease` in a task there).
        """
        if self.store is None:
            return None
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # not asyncio (trio)
            return None
        return LeaseTimer(self, loop)

    async def keep_lease(self) -> None:
        """Renew the lease every third of its ``ttl`` until cancelled (while a run goes).

        A lease not taken yet (or given up) is skipped. Stops when the lease is lost or the
        store fails: the next commit says so.
        """
        store = self.store
        while store is not None:
            await anyio.sleep(self.lease_ttl / 3)
            lease = self.lease
            if lease is None:
                continue
            try:
                renewed = await store.renew(lease, ttl=self.lease_ttl)
            except Exception:
                return
            if self.lease is lease:  # not given up or replaced meanwhile
                self.lease = renewed

    async def poll_decisions(self, after: int) -> None:
        """Read decisions other processes appended after record `after` for calls that wait."""
        if self.store is None:
            return
        lease = self.lease
        if lease is not None and lease.expires_at - time.time() < self.lease_ttl / 2:
            self.lease = await self.store.renew(lease, ttl=self.lease_ttl)  # a long wait
        log = await self.store.load(self.id, after=after, types={"approval_decision"})
        for entry in log.entries:
            record = entry.record
            if isinstance(record, ApprovalDecided) and record.call_id not in self.decisions:
                self.decisions[record.call_id] = record

    async def close(self) -> None:
        """Give up the lease, and close the store if the session made it.

        Records not committed yet are written first, if the store allows.
        """
        store = self.store
        if store is None:
            return
        try:
            if self.uncommitted and self._broken is None and self._opened:
                if self.lease is None:  # given up after a run in sync code: take it again
                    await self._retake(store)
                await self.commit()
        finally:
            lease, self.lease = self.lease, None
            drop_lease(self)
            self._opened = False
            try:
                if lease is not None:
                    await store.release(lease)
            except SessionLeaseError:
                pass
            finally:
                if self.owns_store:
                    self.owns_store = False
                    await store.aclose()


class LeaseTimer:
    """Renews a session's lease every third of its ``ttl`` from the asyncio loop's timer.

    What `Session.keep_lease` does in a task, without the task: a run on asyncio starts one
    (`Session.lease_timer`) and stops it when it ends. Starting and cancelling a task group
    with a sleeping keeper costs a run about 80 µs; a timer costs nothing until it fires, and
    a renewal then runs in a task of its own. Stops renewing when the lease is lost or the
    store fails (the next commit says so).
    """

    __slots__ = ("_handle", "_loop", "_session", "_stopped", "_task")

    def __init__(self, session: Session, loop: asyncio.AbstractEventLoop) -> None:
        self._session = session
        self._loop = loop
        self._stopped = False
        self._task: asyncio.Task[None] | None = None
        self._handle: asyncio.TimerHandle | None = loop.call_later(
            session.lease_ttl / 3, self._fire
        )

    def _fire(self) -> None:
        self._handle = None
        if not self._stopped:
            self._task = self._loop.create_task(self._renew())

    async def _renew(self) -> None:
        session = self._session
        lease, store = session.lease, session.store
        if lease is not None and store is not None:
            try:
                renewed = await store.renew(lease, ttl=session.lease_ttl)
            except Exception:
                return
            if session.lease is lease:  # not given up or replaced meanwhile
                session.lease = renewed
        if not self._stopped:
            self._handle = self._loop.call_later(session.lease_ttl / 3, self._fire)

    def stop(self) -> None:
        """Renew no more (a renewal under way is cancelled)."""
        self._stopped = True
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        if self._task is not None and not self._task.done():
            self._task.cancel()
