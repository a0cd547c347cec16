"""A published MCP server nobody here wrote: the reference time server, ``mcp-server-time``.

It is installed from PyPI with the test extra and runs offline. A kode agent (scripted model)
imports its tools with `kode.mcp.connect` and calls them like any other tool.
"""

from __future__ import annotations

import json
import sys

import pytest
from mcp_peers import subprocess_env

from kode import Agent, AgentTemplate, Kind, ToolRegistry
from kode.mcp import connect
from kode.models import ScriptedModel, tool_use
from kode.models.messages import ToolResultContent

pytest.importorskip("mcp_server_time", reason="the test extra installs mcp-server-time")

pytestmark = pytest.mark.anyio

TOKYO = "Asia/Tokyo"
TIME_SERVER = [sys.executable, "-m", "mcp_server_time", "--local-timezone", "Europe/Oslo"]


async def test_agent_calls_the_reference_time_server() -> None:
    reg = ToolRegistry("published")
    async with connect("time", command=TIME_SERVER, env=subprocess_env(), registry=reg) as server:
        assert sorted(server.tools.values()) == ["convert_time", "get_current_time"]
        convert = reg.get("mcp__time__convert_time")
        # read-only by its annotations: no approval needed although the server is untrusted
        assert convert.kind is Kind.READ and convert.requires_approval is None
        assert convert.input_schema["required"] == ["source_timezone", "time", "target_timezone"]
        for dialect in ("anthropic", "openai", "gemini"):
            assert convert.schema(dialect)  # every provider's declaration can be made

        model = ScriptedModel(
            [
                [
                    tool_use(
                        "mcp__time__convert_time",
                        {"source_timezone": "UTC", "time": "12:00", "target_timezone": TOKYO},
                    ),
                    tool_use("mcp__time__get_current_time", {"timezone": "Mars/Olympus_Mons"}),
                ],
                "Noon in UTC is 21:00 in Tokyo.",
            ]
        )
        agent = Agent.create(
            AgentTemplate(id="clock", tools=["mcp__time__*"], permission={"mode": "approval"}),
            model=model,
            registry=reg,
        )
        async with agent:
            reply = await agent.send("When is noon UTC in Tokyo?")
            assert reply.text == "Noon in UTC is 21:00 in Tokyo."
            # the model was shown both tools of the server
            assert {t.name for t in model.requests[0].tools} == set(server.tools)
            results = [b for b in agent.messages[2].content if isinstance(b, ToolResultContent)]
            converted, failed = results
            assert not converted.is_error
            payload = json.loads(converted.text)
            assert payload["time_difference"] == "+9.0h"
            assert payload["target"]["datetime"].endswith("T21:00:00+09:00")
            assert failed.is_error and "Invalid timezone" in failed.text
        assert not server.alive  # the agent closed the connection it used
