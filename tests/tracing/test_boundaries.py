"""One trace across boundaries: sub-agents, bash_run commands, and MCP both ways."""

from __future__ import annotations

import os
import re
import socket
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from opentelemetry.trace import SpanKind, StatusCode
from otel_support import Telemetry
from otlp_receiver import otlp_receiver

from kode import define_tool
from kode.agent import Agent, AgentTemplate, ApprovalDecision, ApprovalRequest, templates
from kode.builtin.runtime import bash_run
from kode.builtin.tasks import task_run
from kode.mcp import connect
from kode.models import ScriptedModel, tool_use
from kode.registries import ToolRegistry

pytestmark = pytest.mark.anyio

HERE = Path(__file__).parent


async def allow(request: ApprovalRequest) -> ApprovalDecision:
    return ApprovalDecision(decision="allow")


async def test_a_sub_agent_runs_inside_the_task_run_call(
    reg: ToolRegistry, telemetry: Telemetry, isolated_templates: object
) -> None:
    @define_tool(registry=reg, kind="read")
    def lookup(key: str) -> str:
        """Look a key up.

        Args:
            key: The key.
        """
        return {"port": "6379"}.get(key, "unknown")

    reg.register(task_run, source="core")
    templates.register(AgentTemplate(id="helper", tools=["lookup"]))
    model = ScriptedModel(
        [
            [tool_use("task_run", {"template_id": "helper", "prompt": "Find the port."})],
            [tool_use("lookup", {"key": "port"})],
            "The port is 6379.",
            "It is 6379.",
        ]
    )
    parent = Agent.create(
        AgentTemplate(id="boss", tools=["task_run"]),
        model=model,
        registry=reg,
        instrument=telemetry.settings(),
    )
    assert (await parent.send("What port?")).text == "It is 6379."
    boss = telemetry.one("invoke_agent boss")
    task = telemetry.one("execute_tool task_run")
    helper = telemetry.one("invoke_agent helper")
    lookup_span = telemetry.one("execute_tool lookup")
    assert task.parent is not None and task.parent.span_id == boss.context.span_id
    assert helper.parent is not None and helper.parent.span_id == task.context.span_id
    assert lookup_span.parent is not None and lookup_span.parent.span_id == helper.context.span_id
    assert helper.attributes["gen_ai.agent.name"] == "helper"  # type: ignore[index]
    assert helper.attributes["gen_ai.conversation.id"] != boss.attributes["gen_ai.conversation.id"]  # type: ignore[index]
    assert len({s.context.trace_id for s in telemetry.spans()}) == 1
    chats = telemetry.named("chat scripted")
    assert {c.parent.span_id for c in chats if c.parent} == {
        boss.context.span_id,
        helper.context.span_id,
    }


async def test_a_bash_run_command_gets_the_trace_in_traceparent(
    reg: ToolRegistry, telemetry: Telemetry, tmp_path: Path
) -> None:
    reg.register(bash_run, source="core")
    model = ScriptedModel(
        [[tool_use("bash_run", {"command": 'printf "%s" "$TRACEPARENT"'})], "done"]
    )
    agent = Agent.create(
        AgentTemplate(id="runner", tools=["bash_run"]),
        model=model,
        registry=reg,
        workspace=tmp_path,
        approver=allow,
        instrument=telemetry.settings(),
    )
    await agent.send("Run it.")
    span = telemetry.one("execute_tool bash_run")
    result = model.requests[1].messages[-1].content[0]
    text = "".join(b.text for b in result.content)  # type: ignore[union-attr]
    expected = f"00-{span.context.trace_id:032x}-{span.context.span_id:016x}-"
    assert expected in text


async def test_a_bash_run_command_of_an_agent_not_traced_gets_no_traceparent(
    reg: ToolRegistry, tmp_path: Path
) -> None:
    reg.register(bash_run, source="core")
    model = ScriptedModel(
        [[tool_use("bash_run", {"command": 'printf "[%s]" "${TRACEPARENT-unset}"'})], "done"]
    )
    agent = Agent.create(
        AgentTemplate(id="runner", tools=["bash_run"]),
        model=model,
        registry=reg,
        workspace=tmp_path,
        approver=allow,
    )
    await agent.send("Run it.")
    result = model.requests[1].messages[-1].content[0]
    assert "[unset]" in "".join(b.text for b in result.content)  # type: ignore[union-attr]


def _serve_env(endpoint: str) -> dict[str, str]:
    keep = ("PYTHONPATH", "VIRTUAL_ENV", "TZ")
    env = {k: os.environ[k] for k in keep if k in os.environ}
    env.update(
        OTEL_EXPORTER_OTLP_ENDPOINT=endpoint,
        OTEL_BSP_SCHEDULE_DELAY="50",
        OTEL_SERVICE_NAME="tools-server",
    )
    return env


async def test_one_trace_through_kode_mcp_serve_exported_over_otlp(
    reg: ToolRegistry, telemetry: Telemetry
) -> None:
    with otlp_receiver() as receiver:
        command = [sys.executable, "-m", "kode", "mcp", "serve", str(HERE / "traced_tools.py")]
        async with connect(
            "srv", command=[*command, "--otel"], env=_serve_env(receiver.url), registry=reg
        ):
            model = ScriptedModel(
                [
                    [
                        tool_use("mcp__srv__shout", {"text": "hi"}, id="c_mcp"),
                        tool_use("mcp__srv__refuse", {}, id="c_refuse"),
                    ],
                    "HI it is.",
                ]
            )
            agent = Agent.create(
                AgentTemplate(id="caller", tools=["mcp__srv__*"]),
                model=model,
                registry=reg,
                instrument=telemetry.settings(),
            )
            reply = await agent.send("Shout hi.")
            assert reply.text == "HI it is."
        # The server flushes its spans as it stops (and its batch every 50 ms).
        remote = receiver.wait_for(
            "tools/call shout", "execute_tool shout", "tools/call refuse", "execute_tool refuse"
        )
    run = telemetry.one("invoke_agent caller")
    call = telemetry.one("execute_tool mcp__srv__shout")
    client = telemetry.one("tools/call shout")
    assert dict(call.attributes or {})["gen_ai.tool.type"] == "extension"
    assert client.kind is SpanKind.CLIENT
    assert client.parent is not None and client.parent.span_id == call.context.span_id
    client_attributes = dict(client.attributes or {})
    # the version the SDK agreed with the server, e.g. 2025-11-25
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", str(client_attributes.pop("mcp.protocol.version")))
    assert client_attributes == {
        "mcp.method.name": "tools/call",
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "shout",
        "network.transport": "pipe",
    }
    trace_id = f"{run.context.trace_id:032x}"
    by_name = {s.name: s for s in remote}
    assert {"tools/call shout", "execute_tool shout"} <= set(by_name), [s.name for s in remote]
    server = by_name["tools/call shout"]
    served = by_name["execute_tool shout"]
    # The server's spans continue the client's trace: one trace id end to end.
    assert server.trace_id == trace_id and served.trace_id == trace_id
    assert server.kind == 2  # SPAN_KIND_SERVER
    assert server.parent_span_id == f"{client.context.span_id:016x}"
    assert server.attributes["mcp.method.name"] == "tools/call"
    assert served.parent_span_id == server.span_id
    assert served.attributes["gen_ai.tool.name"] == "shout"
    assert served.attributes["gen_ai.operation.name"] == "execute_tool"
    assert served.attributes["kode.tool.outcome"] == "done"
    assert "gen_ai.tool.call.arguments" not in served.attributes
    assert served.service == "tools-server"
    assert "/v1/traces" in receiver.paths
    # A tool's error result: the client's span, the server's and the served call say so.
    refused = telemetry.one("tools/call refuse")
    assert dict(refused.attributes or {})["error.type"] == "tool_error"
    assert refused.status.status_code is StatusCode.ERROR
    assert by_name["tools/call refuse"].attributes["error.type"] == "tool_error"
    assert by_name["execute_tool refuse"].attributes["error.type"] == "tool_error"
    assert by_name["execute_tool refuse"].attributes["kode.tool.outcome"] == "failed"
    assert by_name["tools/call refuse"].trace_id == trace_id


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.mark.parametrize(
    ("protocol", "version"), [("handshake", "2025-11-25"), ("newest", "2026-07-28")]
)
async def test_the_mcp_client_span_names_the_session_and_protocol_version(
    reg: ToolRegistry, telemetry: Telemetry, protocol: Any, version: str
) -> None:
    port = _free_port()
    command = [sys.executable, "-m", "kode", "mcp", "serve", str(HERE / "traced_tools.py")]
    server = await anyio.open_process([*command, "--http", str(port)])
    try:
        with anyio.fail_after(30):
            while True:
                try:
                    await (await anyio.connect_tcp("127.0.0.1", port)).aclose()
                    break
                except OSError:
                    await anyio.sleep(0.05)
        url = f"http://127.0.0.1:{port}/mcp"
        async with connect("srv", url=url, registry=reg, protocol=protocol) as connection:
            model = ScriptedModel([[tool_use("mcp__srv__shout", {"text": "hi"})], "HI."])
            agent = Agent.create(
                AgentTemplate(id="caller", tools=["mcp__srv__*"]),
                model=model,
                registry=reg,
                instrument=telemetry.settings(),
            )
            assert (await agent.send("Shout hi.")).text == "HI."
            session = connection.remote
    finally:
        server.terminate()
        await server.wait()
        await server.aclose()
    attrs = dict(telemetry.one("tools/call shout").attributes or {})
    assert session.protocol_version == version
    assert attrs["mcp.protocol.version"] == version
    if version == "2025-11-25":
        assert session.session_id
        assert attrs["mcp.session.id"] == session.session_id
    else:  # 2026-07-28 is sessionless: there is no session to name
        assert session.session_id is None and "mcp.session.id" not in attrs
    assert (attrs["server.address"], attrs["server.port"]) == ("127.0.0.1", port)
    assert attrs["network.transport"] == "tcp"
