"""What a run gives back: `AgentReply`, and the handle tools use to start sub-agents.

This module owns the reply `Agent.send` returns and `AgentHandle`, the `SUBAGENTS` service an
agent gives its tools: it runs sub-agents without handing the whole agent to a tool.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kode.agent.events import AgentEvent
from kode.agent.run import EventCallbackFunc
from kode.models.messages import Usage

if TYPE_CHECKING:
    from kode.agent.agent import Agent

__all__ = ["AgentHandle", "AgentReply"]


class AgentHandle:
    """What tools get under `SUBAGENTS`: sub-agents, without the whole agent."""

    __slots__ = ("_agent",)

    def __init__(self, agent: Agent) -> None:
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

    def __repr__(self) -> str:
        return f"AgentReply(text={self.text!r}, turns={self.turns}, usage={self.usage!r})"

    def __str__(self) -> str:
        return self.text
