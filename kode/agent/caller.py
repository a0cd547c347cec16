"""What an agent answers when one of its calls asks (`ctx.elicit`, `ctx.sample`, MCP servers).

This module owns `AgentCaller`, the `CALLER` service an agent gives its tools: a question for
the user goes to the agent's elicitation function (``Agent.create(elicitation=...)``), and a
conversation to answer goes to the agent's own model, without tools. MCP servers' questions
reach it through `kode.mcp` the same way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kode.models.base import ModelRequest, ModelResponse, ModelSettings
from kode.models.messages import Message, TextContent
from kode.tools.asking import ElicitationReply, ElicitationRequest, SampleRequest
from kode.tools.errors import ToolError, ToolErrorType

if TYPE_CHECKING:
    from kode.agent.ports import AgentLike

__all__ = ["AgentCaller"]


class AgentCaller:
    """What tools get under `CALLER` inside an agent: its user's answers and its model's."""

    __slots__ = ("_agent",)

    def __init__(self, agent: AgentLike) -> None:
        self._agent = agent

    async def elicit(self, request: ElicitationRequest) -> ElicitationReply:
        """Ask the agent's elicitation function.

        Raises:
            ToolError: the agent has none, or it returned something else than a reply.
        """
        answer = self._agent.elicitation
        who = f"MCP server '{request.server}'" if request.server else f"tool '{request.tool_name}'"
        if answer is None:
            raise ToolError(
                f"The {who} asked the user a question, and agent '{self._agent.template.id}' has "
                "no way to ask: give it one with Agent.create(elicitation=...).",
                type=ToolErrorType.EXECUTION_FAILED,
            )
        reply = await answer(request)
        if not isinstance(reply, ElicitationReply):
            raise ToolError(
                "The agent's elicitation function must return an ElicitationReply, got "
                f"{type(reply).__name__}.",
                type=ToolErrorType.EXECUTION_FAILED,
            )
        return reply

    async def sample(self, request: SampleRequest) -> str:
        """Ask the agent's model (shown no tools) to answer the conversation.

        Raises:
            ToolError: the model failed or ended without an answer.
        """
        model = self._agent.model
        messages = [
            Message(role=role, content=[TextContent(text=text)]) for role, text in request.messages
        ]
        asked = ModelRequest(
            system=request.system,
            messages=messages,
            tools=[],
            settings=ModelSettings(max_tokens=request.max_tokens, temperature=request.temperature),
        )
        response: ModelResponse | None = None
        try:
            async for event in model.stream(asked):
                if isinstance(event, ModelResponse):
                    response = event
        except Exception as exc:
            raise ToolError(
                f"Tool '{request.tool_name}' asked model '{model.name}' for an answer, and it "
                f"failed: {type(exc).__name__}: {exc}",
                type=ToolErrorType.EXECUTION_FAILED,
            ) from exc
        if response is None:
            raise ToolError(
                f"Model '{model.name}' ended without an answer for tool '{request.tool_name}'.",
                type=ToolErrorType.EXECUTION_FAILED,
            )
        return response.message.text
