"""The records of a session: what outlives a run, written once and never changed.

This module owns the record types and their JSON wire form. A session is a header (see
`kode.sessions.store.SessionHeader`) and an append-only log of records, each stored as a
`SessionEntry`: a sequence number the store gives it, the time it was written, and the record.
A record says what changed, never the whole history again:

| record | ``type`` | what changed |
|---|---|---|
| `MessageAdded` | ``message`` | a message joined the conversation (or blocks joined the last one) |
| `CallUpdated` | ``call`` | a tool call moved to a new status (with its result once it has one) |
| `ClientCallsWaiting` | ``client_wait`` | a run ended with client calls waiting for their results |
| `ApprovalRequested` | ``approval_request`` | a call waits for someone to approve it |
| `ApprovalDecided` | ``approval_decision`` | someone (in any process) decided it |
| `UsageAdded` | ``usage`` | tokens were used |
| `TodosReplaced` | ``todos`` | the todo list is now this one |
| `ToolAlwaysAllowed` | ``always_allowed`` | a tool was allowed for the rest of the session |
| `StatusChanged` | ``status`` | the session's status |
| `MetadataSet` | ``metadata`` | a value the application keeps with the session |
| `HistoryCompacted` | ``compaction`` | requests now send a summary in place of the older messages |

It does not decide what the records add up to: `kode.sessions.state` folds them into a
`SessionState`. Nor does it store them: a `Store` does.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    TypeAdapter,
    field_validator,
    model_serializer,
)

from kode.models.messages import Message, ToolResultContent

__all__ = [
    "TERMINAL_STATUSES",
    "ApprovalDecided",
    "ApprovalRequested",
    "CallStatus",
    "CallUpdated",
    "ClientCallsWaiting",
    "HistoryCompacted",
    "MessageAdded",
    "MetadataSet",
    "SessionEntry",
    "SessionRecord",
    "SessionStatus",
    "StatusChanged",
    "TodosReplaced",
    "ToolAlwaysAllowed",
    "UsageAdded",
    "record_adapter",
]

SessionStatus = Literal["idle", "running", "awaiting_approval", "awaiting_client", "failed"]
"""What a session's agent is doing (the same values as an agent's status)."""

CallStatus = Literal[
    "pending",
    "awaiting_approval",
    "approved",
    "running",
    "done",
    "failed",
    "denied",
    "cancelled",
]
"""Where a tool call is. ``pending`` also covers a client call waiting for its result."""

TERMINAL_STATUSES: frozenset[str] = frozenset({"done", "failed", "denied", "cancelled"})
"""The statuses a call never leaves: it has its ``tool_result``."""

_RECORD = ConfigDict(extra="forbid", frozen=True)


class MessageAdded(BaseModel):
    """A message joined the conversation.

    With `merge`, its blocks join the last message instead (which must have the same role):
    a run that ended on a user message (interrupted, a failed model) is continued by adding
    to that message, so roles keep alternating as providers require.
    """

    model_config = _RECORD
    type: Literal["message"] = "message"
    message: Message
    """The message: its role and content blocks."""
    merge: bool = False
    """Add the blocks to the last message rather than start a new one."""


class CallUpdated(BaseModel):
    """A tool call moved to a new status.

    The first record of a call id opens it (any status but ``approved``); each later one must
    be a move the call can make (see `kode.sessions.state`). Flags given as `None` keep
    what an earlier record of the call said.
    """

    model_config = _RECORD
    type: Literal["call"] = "call"
    call_id: str
    """The ``tool_use`` id."""
    name: str
    """The tool's name (as the model wrote it, or the tool's own once looked up)."""
    status: CallStatus
    """The call's new status."""
    input: dict[str, Any] | str | None = None
    """The arguments the call runs with, when they differ from the ``tool_use`` block's (a
    pre-hook rewrote them) or when the record is read without the messages."""
    result: ToolResultContent | None = None
    """The ``tool_result`` block; given with a final status (done, failed, denied,
    cancelled)."""
    error_type: str | None = None
    """The `ToolErrorType` value of an error result."""
    client: bool | None = None
    """Whether the caller executes the call (a client tool)."""
    read_only: bool | None = None
    """Whether the tool only reads (so running it again after a restart is harmless)."""
    idempotent: bool | None = None
    """Whether the tool was declared idempotent (running it twice does what once does)."""
    parent_call_id: str | None = None
    """The call that made this one (a ``code_run`` script's call: its ``input`` is then
    given too, since no message holds it); `None` for a call of the model."""


class ClientCallsWaiting(BaseModel):
    """A run ended with client calls waiting for their results (``submit_tool_result``)."""

    model_config = _RECORD
    type: Literal["client_wait"] = "client_wait"
    call_ids: list[str]
    """The calls that wait, in call order; each must be a ``pending`` call."""


class ApprovalRequested(BaseModel):
    """A call waits for approval; the call itself must be ``awaiting_approval``."""

    model_config = _RECORD
    type: Literal["approval_request"] = "approval_request"
    call_id: str
    """The ``tool_use`` id."""
    tool_name: str
    """The tool's name."""
    input: dict[str, Any] = Field(default_factory=dict)
    """The validated arguments, as the approver is shown them."""
    reason: str = ""
    """Why approval is needed."""
    kind: str = "other"
    """The tool's `Kind` value."""
    description: str = ""
    """What the call will do, in one line (its tool's describe function; else empty)."""
    locations: list[str] = Field(default_factory=list)
    """The paths it reads or changes."""
    diff: str = ""
    """A unified diff of the change it would make."""
    pattern: str | None = None
    """What an "always for calls starting with ..." answer matches (a ``bash_run`` command)."""
    server: str | None = None
    """The tool's MCP server, for an "always for this server" answer."""
    rule: str = ""
    """What asked for approval (``rule 'x' (project)``, ``mode approval``, ...)."""


class ApprovalDecided(BaseModel):
    """Someone decided a call waiting for approval.

    Any process may append one, without the session's lease. A decision for a call that is
    no longer waiting (it was cancelled meanwhile, or another decision came first) changes
    nothing: the first decision wins.
    """

    model_config = _RECORD
    type: Literal["approval_decision"] = "approval_decision"
    call_id: str
    """The ``tool_use`` id."""
    decision: Literal["allow", "deny", "allow_always"]
    """Run it, refuse it, or run it and every later call of this tool in the session."""
    note: str = ""
    """Shown to the model with a denial."""
    scope: Literal["tool", "server", "pattern"] = "tool"
    """What ``allow_always`` covers: the tool, its MCP server, or calls matching ``pattern``."""
    pattern: str = ""
    """For scope ``pattern``: the prefix the calls' pattern starts with."""
    input: dict[str, Any] | None = None
    """The arguments the call runs with instead of the model's, when the decider changed them."""
    trace: dict[str, str] | None = None
    """The decider's trace context (``traceparent``, ``tracestate``) when it was traced: the
    call's ``execute_tool`` span links to it."""


class UsageAdded(BaseModel):
    """Tokens used by one model response (added to the session's total)."""

    model_config = _RECORD
    type: Literal["usage"] = "usage"
    input_tokens: Annotated[int, Field(ge=0)] = 0
    """Tokens read."""
    output_tokens: Annotated[int, Field(ge=0)] = 0
    """Tokens written."""
    cache_read_input_tokens: Annotated[int, Field(ge=0)] = 0
    """Of `input_tokens`, those read from the provider's prompt cache."""
    cache_creation_input_tokens: Annotated[int, Field(ge=0)] = 0
    """Of `input_tokens`, those written to the provider's prompt cache."""

    @model_serializer(mode="wrap")
    def _without_empty_cache_counts(self, handler: SerializerFunctionWrapHandler) -> Any:
        # Stored without the cache counts when there are none: a record is written as it was
        # before they were kept (most providers report none), and older kode reads it.
        out = handler(self)
        if isinstance(out, dict):
            for name in ("cache_read_input_tokens", "cache_creation_input_tokens"):
                if not out.get(name, 1):
                    del out[name]
        return out


class TodosReplaced(BaseModel):
    """The todo list is now this one (the whole list: todo tools replace it whole)."""

    model_config = _RECORD
    type: Literal["todos"] = "todos"
    todos: list[dict[str, Any]]
    """The items, in order."""


class ToolAlwaysAllowed(BaseModel):
    """A tool runs without asking for the rest of the session ("allow always").

    Or every tool of an MCP server (``server``), or the tool's calls whose pattern starts
    with ``pattern``.
    """

    model_config = _RECORD
    type: Literal["always_allowed"] = "always_allowed"
    tool: Annotated[str, Field(min_length=1)]
    """The tool's name (kept lower-case)."""
    server: str = ""
    """Every tool of this MCP server is allowed (empty: not a server answer)."""
    pattern: str | None = None
    """Only the tool's calls whose pattern starts with this (`None`: all its calls)."""

    @property
    def key(self) -> str:
        """How a session's ``always_allowed`` set keeps it.

        ``fs_write``, ``server:github``, ``bash_run:git status`` (as
        `kode.agent.permissions.always_key` makes them).
        """
        if self.server:
            return f"server:{self.server.lower()}"
        if self.pattern is not None:
            return f"{self.tool}:{self.pattern}"
        return self.tool

    @field_validator("tool")
    @classmethod
    def _lower(cls, value: str) -> str:
        return value.lower()


class StatusChanged(BaseModel):
    """The session's status; the store also keeps the latest in the header, for listing."""

    model_config = _RECORD
    type: Literal["status"] = "status"
    status: SessionStatus
    """The new status."""


class MetadataSet(BaseModel):
    """A value the application keeps with the session, under a key (`None` removes it)."""

    model_config = _RECORD
    type: Literal["metadata"] = "metadata"
    key: Annotated[str, Field(min_length=1)]
    """The key."""
    value: Any = None
    """Any JSON value; `None` removes the key."""


class HistoryCompacted(BaseModel):
    """Requests now send `summary` in place of the history's first `messages` messages.

    The messages themselves stay in the log: a compaction changes what a context policy
    sends (`kode.agent.context`), never the history. A later compaction stands for more
    messages than the one before (its summary was written from that one's).
    """

    model_config = _RECORD
    type: Literal["compaction"] = "compaction"
    summary: Annotated[str, Field(min_length=1)]
    """What the model wrote about the older messages."""
    messages: Annotated[int, Field(ge=1)]
    """How many messages, from the first, the summary stands for; the next one is a model's
    turn (a call and its result are never apart)."""


SessionRecord = Annotated[
    MessageAdded
    | CallUpdated
    | ClientCallsWaiting
    | ApprovalRequested
    | ApprovalDecided
    | UsageAdded
    | TodosReplaced
    | ToolAlwaysAllowed
    | StatusChanged
    | MetadataSet
    | HistoryCompacted,
    Field(discriminator="type"),
]
"""Any record, told apart by its ``type``."""

record_adapter: TypeAdapter[SessionRecord] = TypeAdapter(SessionRecord)
"""Reads a record from its JSON wire form: ``record_adapter.validate_json(data)``."""


class SessionEntry(BaseModel):
    """A record as a store keeps it: where it stands in the log, and when it was written."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    seq: int
    """Its place in the session's log: 1, 2, 3, ... with no gaps."""
    at: float
    """When the store wrote it (``time.time()`` of the writing process)."""
    record: SessionRecord
    """The record."""
