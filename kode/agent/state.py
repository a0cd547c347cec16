"""An agent's whole state as one pydantic model, so it can be saved and an agent rebuilt.

This module owns `AgentState` and `ToolCallRecord`. The state holds the template id, the
messages, every tool call with its status, the todo list, usage and the run status; it
round-trips through JSON (`AgentState.model_validate_json(state.model_dump_json())`), and
`Agent.from_state` rebuilds an agent from it, re-resolving the tools by name.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from kode.models.messages import Message, ToolResultContent, Usage

__all__ = ["AgentState", "AgentStatus", "ToolCallRecord", "ToolCallStatus"]

ToolCallStatus = Literal[
    "pending", "awaiting_approval", "running", "done", "failed", "denied", "cancelled"
]
"""Where a tool call is: ``pending`` also covers a client tool waiting for its result."""

AgentStatus = Literal["idle", "running", "awaiting_approval", "awaiting_client", "failed"]
"""What the agent is doing."""


class ToolCallRecord(BaseModel):
    """One tool call and what became of it."""

    model_config = ConfigDict(extra="forbid")
    id: str
    """The ``tool_use`` id."""
    name: str
    """The tool's name as the model wrote it."""
    input: dict[str, Any] | str
    """The arguments as the model sent them."""
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


class _Record:
    """A `ToolCallRecord` while the agent works on it: a plain object, cheap to update.

    The loop sets a call's status several times; on a pydantic model each of those sets is
    validated. The agent keeps these and makes `ToolCallRecord`s only for `Agent.state`.
    Its attributes are `ToolCallRecord`'s fields.
    """

    __slots__ = tuple(ToolCallRecord.model_fields)

    def __init__(self, id: str, name: str, input: dict[str, Any] | str) -> None:
        self.id = id
        self.name = name
        self.input = input
        self.status: ToolCallStatus = "pending"
        self.result: ToolResultContent | None = None
        self.error_type: str | None = None
        self.started_at: float | None = None
        self.ended_at: float | None = None
        self.client = False

    def to_model(self) -> ToolCallRecord:
        """A copy as a `ToolCallRecord`, sharing nothing with this record."""
        fields = {name: getattr(self, name) for name in self.__slots__}
        return ToolCallRecord.model_validate(fields).model_copy(deep=True)

    @classmethod
    def from_model(cls, model: ToolCallRecord) -> _Record:
        """A record from a saved `ToolCallRecord`, sharing nothing with it."""
        copy = model.model_copy(deep=True)
        made = cls(copy.id, copy.name, copy.input)
        for name in cls.__slots__:
            setattr(made, name, getattr(copy, name))
        return made


class AgentState(BaseModel):
    """Everything needed to rebuild an agent."""

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
