"""An approval of a real MCP server's tool names the server, and "always for this server"
covers its other tools: the official SDK's server over stdio, a kode agent as its client."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from mcp_peers import subprocess_env

from kode import Agent, AgentTemplate, ToolRegistry
from kode.agent import ApprovalDecision, ApprovalRequest, load_rules
from kode.mcp import connect
from kode.models import ScriptedModel, tool_use

pytestmark = pytest.mark.anyio


async def test_always_for_the_server_covers_its_other_untrusted_tools(sdk_server: Path) -> None:
    reg = ToolRegistry("mcp-approval")
    server = await connect(
        "sdk", command=[sys.executable, str(sdk_server)], env=subprocess_env(), registry=reg
    )
    asked: list[ApprovalRequest] = []

    async def approver(request: ApprovalRequest) -> ApprovalDecision:
        asked.append(request)
        return ApprovalDecision(decision="allow_always", scope="server")

    model = ScriptedModel(
        [
            [tool_use("mcp__sdk__wipe", {"target": "db"})],
            [tool_use("mcp__sdk__wipe", {"target": "cache"}), tool_use("mcp__sdk__pid", {})],
            "Done.",
        ]
    )
    agent = Agent.create(
        AgentTemplate(id="mcp", tools=["mcp__sdk__*"]), model=model, registry=reg, approver=approver
    )
    try:
        await agent.send("Go.")
    finally:
        await agent.aclose()
        server.unregister()
        await server.aclose()  # the server's process ends with the test
    assert [(r.tool_name, r.server, r.description) for r in asked] == [
        ("mcp__sdk__wipe", "sdk", "Call mcp__sdk__wipe on MCP server 'sdk'")
    ]
    assert "server:sdk" in agent.always_allowed
    results = [b for b in agent.messages[-2].content if b.type == "tool_result"]
    assert [r.is_error for r in results] == [False, False]
    assert results[0].text == "wiped cache"


async def test_a_rule_on_the_server_decides_its_tools(sdk_server: Path) -> None:
    reg = ToolRegistry("mcp-rules")
    server = await connect(
        "sdk", command=[sys.executable, str(sdk_server)], env=subprocess_env(), registry=reg
    )
    rules = load_rules(
        admin=[{"name": "no-sdk-writes", "source": "mcp", "server": "sdk", "tool": "*wipe",
                "decision": "deny"}]
    )  # fmt: skip
    model = ScriptedModel([[tool_use("mcp__sdk__wipe", {"target": "db"})], "Done."])
    agent = Agent.create(
        AgentTemplate(id="mcp", tools=["mcp__sdk__*"], permission={"rules": rules}),
        model=model,
        registry=reg,
    )
    try:
        await agent.send("Go.")
    finally:
        await agent.aclose()
        server.unregister()
        await server.aclose()  # the server's process ends with the test
    (result,) = [b for b in agent.messages[2].content if b.type == "tool_result"]
    assert result.is_error
    assert result.text == (
        "Tool 'mcp__sdk__wipe' was not run: deny by rule 'no-sdk-writes' (admin)."
    )
