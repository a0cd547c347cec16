"""Asking the user and a model from inside a call: what `ctx.elicit` and `ctx.sample` send.

This module owns the requests and replies a running call exchanges with whoever runs it —
an agent (its elicitation function and its model), or an MCP client when the tool is served by
``kode mcp serve`` — and `ToolCaller`, what such a runner offers under the `CALLER` service
key (`kode.tools.services`). The same `ElicitationRequest` and `ElicitationReply` carry an MCP
server's questions to kode's user (`kode.mcp`), so one `ElicitationFunc` answers both. It
imports nothing of the layers above: the agent and the MCP server each provide a `ToolCaller`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

if TYPE_CHECKING:
    from kode.tools.context import ToolContext

__all__ = [
    "ElicitationFunc",
    "ElicitationReply",
    "ElicitationRequest",
    "SampleRequest",
    "ToolCaller",
]


@dataclass(kw_only=True, frozen=True, slots=True)
class ElicitationRequest:
    """A question for the user: a form to fill in, or a page to open (MCP elicitation)."""

    message: str
    """What the user is told."""
    mode: Literal["form", "url"] = "form"
    """``form``: fill in `schema`; ``url``: open `url` (and come back)."""
    schema: dict[str, Any] | None = None
    """Form mode: the JSON schema of the answer (an object of plain fields)."""
    url: str | None = None
    """URL mode: the page the user should open."""
    elicitation_id: str | None = None
    """URL mode: the id of this elicitation."""
    server: str | None = None
    """The MCP server asking, by its name in kode; `None` when a kode tool asks (`ctx.elicit`)."""
    tool_name: str = ""
    """The tool whose call asks (for a server's question, the kode tool being called)."""
    ctx: ToolContext[Any] | None = field(default=None, compare=False)
    """The context of the call during which the question is asked (`None`: outside a call)."""


@dataclass(kw_only=True, frozen=True, slots=True)
class ElicitationReply:
    """The user's answer to an `ElicitationRequest`."""

    action: Literal["accept", "decline", "cancel"]
    """``accept`` (form sent, or URL opened), ``decline`` (refused) or ``cancel`` (dismissed)."""
    content: dict[str, Any] | None = None
    """Form mode, with ``accept``: the answer, fitting the request's schema."""
    value: Any = None
    """With ``accept``, when `ctx.elicit` was given a type: the content validated into it."""


ElicitationFunc = Callable[[ElicitationRequest], Awaitable[ElicitationReply]]
"""Answers a question for the user (a UI, a prompt): `ctx.elicit`'s and MCP servers'."""


@dataclass(kw_only=True, frozen=True, slots=True)
class SampleRequest:
    """A conversation a running call wants a model to answer (`ctx.sample`)."""

    messages: tuple[tuple[Literal["user", "assistant"], str], ...]
    """The conversation, as ``(role, text)`` pairs, ending with the user's turn."""
    system: str = ""
    """The system prompt."""
    max_tokens: int = 1024
    """The most tokens the answer may have."""
    temperature: float | None = None
    """The sampling temperature, if the call wants one."""
    tool_name: str = ""
    """The tool whose call asks."""
    ctx: ToolContext[Any] | None = field(default=None, compare=False)
    """The context of the call that asks."""


@runtime_checkable
class ToolCaller(Protocol):
    """What the `CALLER` service offers a running call: its user's answers and a model's.

    An agent provides one (its elicitation function, its model); so does ``kode mcp serve``
    (the MCP client's elicitation and sampling). `ToolContext.elicit` and `ToolContext.sample`
    go through it.
    """

    async def elicit(self, request: ElicitationRequest) -> ElicitationReply:
        """Ask the user; return the answer.

        Raises:
            ToolError: nobody can answer here (the message says what would make it possible).
        """
        ...

    async def sample(self, request: SampleRequest) -> str:
        """Ask a model to answer the conversation; return its text.

        Raises:
            ToolError: no model can answer here, or the request was refused.
        """
        ...
