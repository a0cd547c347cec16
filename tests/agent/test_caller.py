"""``ctx.elicit`` and ``ctx.sample`` inside an agent: its elicitation function and its model."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from kode import Agent, AgentTemplate, ToolContext, ToolError, ToolRegistry, define_tool
from kode.models import ScriptedModel, tool_use
from kode.models.messages import ToolResultContent
from kode.tools.asking import ElicitationReply, ElicitationRequest

pytestmark = pytest.mark.anyio


@dataclass
class Order:
    dish: str
    count: int


def _tools(reg: ToolRegistry) -> None:
    @define_tool(registry=reg, kind="read")
    async def take_order(ctx: ToolContext) -> str:
        """Ask the user for an order, and a model for a wine to go with it."""
        reply = await ctx.elicit("What would you like?", Order)
        if reply.action != "accept":
            return f"no order ({reply.action})"
        order: Order = reply.value
        wine = await ctx.sample(f"A wine for {order.dish}?", system="Be brief.", max_tokens=20)
        return f"{order.count} x {order.dish}, with {wine}"


def _results(agent: Agent) -> list[ToolResultContent]:
    return [
        b
        for m in agent.messages
        if m.role == "user" and not isinstance(m.content, str)
        for b in m.content
        if isinstance(b, ToolResultContent)
    ]


async def test_a_tool_asks_the_agents_user_and_model() -> None:
    reg = ToolRegistry("asking")
    _tools(reg)
    asked: list[ElicitationRequest] = []

    async def elicitation(request: ElicitationRequest) -> ElicitationReply:
        asked.append(request)
        return ElicitationReply(action="accept", content={"dish": "trout", "count": 2})

    model = ScriptedModel([[tool_use("take_order", {})], "A Riesling.", "Ordered."])
    agent = Agent.create(
        AgentTemplate(id="waiter", tools=["take_order"]),
        model=model,
        registry=reg,
        elicitation=elicitation,
    )
    reply = await agent.send("Order dinner.")
    assert reply.text == "Ordered."
    (result,) = _results(agent)
    assert not result.is_error and result.text == "2 x trout, with A Riesling."
    (question,) = asked
    assert (
        question.tool_name == "take_order" and question.server is None and question.mode == "form"
    )
    assert question.schema is not None and set(question.schema["properties"]) == {"dish", "count"}
    # the agent's own model answered, shown no tools
    sampling = model.requests[1]
    assert sampling.system == "Be brief." and sampling.tools == []
    assert sampling.messages[0].text == "A wine for trout?"
    assert sampling.settings.max_tokens == 20


async def test_without_an_elicitation_function_the_model_is_told() -> None:
    reg = ToolRegistry("asking-none")
    _tools(reg)
    model = ScriptedModel([[tool_use("take_order", {})], "Sorry."])
    agent = Agent.create(AgentTemplate(id="mute", tools=["take_order"]), model=model, registry=reg)
    await agent.send("Order dinner.")
    (result,) = _results(agent)
    assert result.is_error
    assert result.text == (
        "The tool 'take_order' asked the user a question, and agent 'mute' has no way to ask: "
        "give it one with Agent.create(elicitation=...)."
    )


async def test_outside_an_agent_asking_is_a_clear_error() -> None:
    reg = ToolRegistry("asking-alone")
    _tools(reg)
    result = await reg.get("take_order").run({})
    assert result.is_error and "nobody can answer outside an agent or an MCP client" in result.text
    with pytest.raises(ValueError, match="not both"):
        await ToolContext().elicit("?", {"type": "object"}, url="https://example.com")
    with pytest.raises(ValueError, match="role 'user' or 'assistant'"):
        await ToolContext().sample([("system", "hi")])  # type: ignore[list-item]
    with pytest.raises(ToolError, match="asked for a model's answer"):
        await ToolContext(tool_name="t").sample("hi")
