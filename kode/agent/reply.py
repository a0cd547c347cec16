"""What a run gives back: `AgentReply`, and the handle tools use to reach their agent.

This module owns the reply `Agent.send` returns and `AgentHandle`, the `SUBAGENTS` and `AGENT`
service an agent gives its tools: it runs sub-agents, and offers the agent's model and its
approvals, without handing the whole agent to a tool.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kode.agent.approvals import call_details, remember_always
from kode.agent.events import AgentEvent, Done
from kode.agent.permissions import ApprovalRequest, check_permission, pattern_allowed
from kode.agent.ports import EventCallbackFunc
from kode.models.base import Model
from kode.models.messages import Usage
from kode.tools.context import ToolContext
from kode.tools.core import Tool

if TYPE_CHECKING:
    from kode.agent.ports import AgentLike

__all__ = ["AgentHandle", "AgentReply"]


class AgentHandle:
    """What tools get under `SUBAGENTS` and `AGENT`: sub-agents, the model, approvals."""

    __slots__ = ("_agent",)

    def __init__(self, agent: AgentLike) -> None:
        self._agent = agent

    async def run_subagent(
        self,
        template_id: str,
        prompt: str,
        *,
        on_event: EventCallbackFunc | None = None,
    ) -> str:
        """Run a sub-agent from a registered template on `prompt`; return its final text."""
        reply = await self._agent.run_subagent(template_id, prompt, on_event=on_event)
        return reply.text

    @property
    def agent_id(self) -> str:
        """The id of the agent that starts the sub-agents."""
        return self._agent.agent_id

    @property
    def model(self) -> Model:
        """The agent's model."""
        return self._agent.model

    async def approve(
        self,
        tool: Tool[..., Any],
        arguments: dict[str, Any],
        ctx: ToolContext[Any],
        *,
        call_id: str,
    ) -> str | None:
        """Decide an action described as a call of `tool` (not registered) like a tool call.

        The agent's permission settings apply to `tool`'s name and kind; when they ask, the
        approver (or ``decide``) answers, and ``allow_always`` allows the name for the session.
        Returns `None` when it may go ahead, else why not.
        """
        agent = self._agent
        verdict = check_permission(
            tool,
            arguments,
            agent.template.permission,
            always_allowed=agent.always_allowed,
            ctx=ctx,
        )
        if verdict.action == "deny":
            return verdict.reason
        if verdict.action == "allow":
            return None
        details = call_details(tool, arguments, ctx, server=None)
        if pattern_allowed(tool.name, details.pattern, agent.always_allowed) is not None:
            return None
        request = ApprovalRequest(
            call_id=call_id,
            tool_name=tool.name,
            input=arguments,
            reason=verdict.reason,
            kind=tool.kind,
            description=details.description,
            locations=details.locations,
            diff=details.diff,
            pattern=details.pattern,
            rule=verdict.rule,
        )
        decision = await agent.ask_approval(request)
        if decision is None:
            return (
                f"it needs approval ({verdict.reason}) and nobody can give it here "
                "(no approver, and no one listening for ApprovalRequired events)"
            )
        if decision.decision == "deny":
            return "the user denied it" + (f": {decision.note}" if decision.note else "")
        if decision.decision == "allow_always":
            remember_always(agent.session, request, decision)
        return None


class AgentReply:
    """What `Agent.send` returns: the final text, and the run's details."""

    __slots__ = ("events", "interrupted", "pending_calls", "text", "turns", "usage")

    def __init__(
        self,
        *,
        text: str,
        usage: Usage,
        turns: int,
        events: list[AgentEvent],
        pending_calls: tuple[str, ...] = (),
        interrupted: bool = False,
    ) -> None:
        self.text = text
        """The final assistant text."""
        self.usage = usage
        """Tokens used by the run."""
        self.turns = turns
        """How many model responses the run took."""
        self.events = events
        """Every event of the run, in order."""
        self.pending_calls = pending_calls
        """Client tool calls waiting for `Agent.submit_tool_result`."""
        self.interrupted = interrupted
        """Whether `Agent.interrupt` ended the run."""

    @property
    def output(self) -> Any:
        """The validated final output, when the template sets ``output_type`` (else `None`).

        Its type is the template's ``output_type``: a model or dataclass instance, a dict for a
        TypedDict, or the value itself (an ``int``, a ``list``...).
        """
        for event in reversed(self.events):
            if isinstance(event, Done):
                return event.output
        return None

    def __repr__(self) -> str:
        return f"AgentReply(text={self.text!r}, turns={self.turns}, usage={self.usage!r})"

    def __str__(self) -> str:
        return self.text
