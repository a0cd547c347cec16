"""An MCP server's tools deferred above the registry's threshold, with the published server.

``server-everything`` (npm, run with node; see ``tests/mcp/npm_servers.py``) registers its
tools through `kode.mcp.connect`; with ``defer_mcp_above`` below its count an agent sends only
``tool_search`` first, finds ``get-sum`` by words, and calls it on the server.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import anyio
import pytest

from kode import Agent, AgentTemplate, ToolRegistry
from kode.models import ScriptedModel, tool_use
from kode.testing.programs import missing_program

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("anyio_backend", ["asyncio"])]

SERVER = Path(__file__).resolve().parents[1] / "mcp/npm/node_modules/.bin/mcp-server-everything"


@pytest.fixture
def everything() -> list[str]:
    if not shutil.which("node"):
        pytest.skip(missing_program("node", package="nodejs", needed_for="mcp-server-everything"))
    if not SERVER.exists():
        why = "mcp-server-everything is not installed (npm ci --prefix tests/mcp/npm)"
        if os.environ.get("CI"):  # .ci/run installs it wherever node is
            pytest.fail(why)
        pytest.skip(why)
    return [str(SERVER), "stdio"]


async def test_a_big_server_is_deferred_and_found_by_words(everything: list[str]) -> None:
    from kode.mcp import connect

    reg = ToolRegistry("mcp-deferred")
    async with connect("ev", command=everything, registry=reg) as server:
        began = time.monotonic()
        count = len(server.tools)
        reg.defer_mcp_above = count - 1
        search = tool_use("tool_search", {"query": "add two numbers"})
        add = tool_use("mcp__ev__get-sum", {"a": 2, "b": 3})
        model = ScriptedModel([[search], [add], "Five."])
        template = AgentTemplate(id="ev", tools=["mcp__ev__*"])
        agent = Agent.create(template, model=model, registry=reg)
        assert len(agent.resolution.deferred) == count
        reply = await agent.send("What is 2 + 3?")
        assert reply.text == "Five."
        sent = [[t.name for t in request.tools] for request in model.requests]
        assert sent[0] == ["tool_search"]
        assert sent[1][:2] == ["tool_search", "mcp__ev__get-sum"]
        result = agent.session.messages[4].content[0]
        assert "5" in result.content[0].text  # type: ignore[union-attr]
        reg.defer_mcp_above = count  # at the threshold: nothing deferred
        agent = Agent.create(template, model=ScriptedModel(["ok"]), registry=reg)
        assert agent.resolution.deferred == frozenset()
        await anyio.sleep(max(0.0, 0.5 - (time.monotonic() - began)))  # see test_mcp_everything
