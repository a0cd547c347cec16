"""How an Agent shows itself: a one-line repr, and a summary in a notebook."""

from __future__ import annotations

import pytest
from support import make_agent

from kode import define_tool
from kode.models import tool_use
from kode.registries import ToolRegistry
from kode.tools.declared import declare_tool

pytestmark = pytest.mark.anyio


@pytest.fixture
def tools(reg: ToolRegistry) -> ToolRegistry:
    @define_tool(registry=reg, kind="read")
    def count(text: str) -> int:
        """Count words."""
        return len(text.split())

    reg.register(declare_tool("pick", input_schema={"type": "object"}), source="client")
    return reg


async def test_repr_and_markdown_follow_the_conversation(tools: ToolRegistry) -> None:
    agent, _ = make_agent(
        tools,
        [[tool_use("count", {"text": "a b | c"})], "Three | words.", [tool_use("pick", id="p")]],
    )
    assert (
        repr(agent)
        == f"<Agent {agent.agent_id} 't' ScriptedModel('scripted') idle: 2 tools, 0 messages>"
    )
    assert "| messages | 0 |" in agent._repr_markdown_()
    await agent.send("count them")
    assert repr(agent).endswith("idle: 2 tools, 4 messages>")
    shown = agent._repr_markdown_()
    assert shown.startswith(f"**Agent** `{agent.agent_id}` · template `t` · **idle**")
    assert "| model | `ScriptedModel('scripted')` |" in shown
    assert "| tools | `count`, `pick` |" in shown
    assert "| last reply | Three \\| words. |" in shown  # a | in text does not break the table
    await agent.send("pick one")
    assert "awaiting_client" in repr(agent)
    assert "| waiting for | client results for p |" in agent._repr_markdown_()
