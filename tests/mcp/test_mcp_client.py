"""`kode.mcp.connect` against real servers: one built with the official SDK, and kode's own."""

from __future__ import annotations

import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import jsonschema
import pytest
from mcp_peers import HttpServer, free_port, serve_command, subprocess_env, wait_until

from kode import Agent, AgentTemplate, Kind, ToolContext, ToolErrorType, ToolRegistry
from kode.agent import ApprovalDecision, ApprovalRequest
from kode.mcp import MCPConnection, MCPConnectionError, connect
from kode.models import ScriptedModel, tool_use
from kode.registries import ToolSource

pytestmark = pytest.mark.anyio


@pytest.fixture
def reg() -> ToolRegistry:
    return ToolRegistry("mcp-test")


def sdk(script: Path, reg: ToolRegistry, **options: Any) -> MCPConnection:
    return connect(
        "sdk",
        command=[sys.executable, str(script)],
        env=subprocess_env(),
        registry=reg,
        **options,
    )


async def appears(path: Path) -> bool:
    return await anyio.to_thread.run_sync(wait_until, path.exists)


# --- registration ------------------------------------------------------------------------------


async def test_tools_are_registered_with_names_meta_kinds_and_trust(
    sdk_server: Path, reg: ToolRegistry
) -> None:
    async with sdk(sdk_server, reg) as server:
        assert server.alive
        assert reg.names() == [
            "mcp__sdk__count",
            "mcp__sdk__crash",
            "mcp__sdk__echo",
            "mcp__sdk__fail",
            "mcp__sdk__files_read-all_v2",
            "mcp__sdk__linger",
            "mcp__sdk__lookup",
            "mcp__sdk__midpoint",
            "mcp__sdk__pid",
            "mcp__sdk__wipe",
        ]
        meta = reg.meta("mcp__sdk__files_read-all_v2")
        assert meta.source is ToolSource.MCP
        assert meta.server == "sdk"
        assert meta.remote_name == "files.read-all/v2"  # the way back to the server's name
        assert "group:mcp" in meta.groups
        assert server.tools["mcp__sdk__echo"] == "echo"

        # kinds from annotations; approval from the trust rule (untrusted by default)
        echo, lookup, wipe, pid = (
            reg.get(f"mcp__sdk__{n}") for n in ("echo", "lookup", "wipe", "pid")
        )
        assert (echo.kind, echo.requires_approval) == (Kind.READ, None)
        assert (lookup.kind, lookup.requires_approval) == (Kind.FETCH, None)
        assert (wipe.kind, wipe.requires_approval) == (Kind.EDIT, True)
        assert (pid.kind, pid.requires_approval) == (Kind.OTHER, True)
        assert echo.description == "Echo the text back."

        # the schema is cleaned (no titles) and every dialect can be produced
        midpoint = reg.get("mcp__sdk__midpoint")
        assert "title" not in midpoint.input_schema
        assert midpoint.input_schema["required"] == ["a"]
        for dialect in ("anthropic", "openai", "gemini"):
            midpoint.schema(dialect)
        gemini = midpoint.schema("gemini")["parameters"]
        assert "$ref" not in str(gemini) and "$defs" not in gemini
        assert gemini["properties"]["b"]["nullable"] is True
        jsonschema.Draft202012Validator.check_schema(midpoint.input_schema)

    # leaving the block closes the connection and removes the tools
    assert not server.alive
    assert reg.names() == []


async def test_trusted_server_tools_follow_the_agent_mode(
    sdk_server: Path, reg: ToolRegistry
) -> None:
    async with sdk(sdk_server, reg, trust=True, include=["wipe", "e*"], exclude=["echo"]):
        assert reg.names() == ["mcp__sdk__wipe"]
        assert reg.get("mcp__sdk__wipe").requires_approval is None


def test_bad_names_and_arguments_are_refused_at_once() -> None:
    with pytest.raises(ValueError, match="MCP server name 'git__hub' is invalid"):
        connect("git__hub", command="x")
    with pytest.raises(ValueError, match=r"exactly one of command= .* or url="):
        connect("x")
    with pytest.raises(ValueError, match="exactly one of command="):
        connect("x", command="a", url="http://b")
    with pytest.raises(TypeError, match="got the string 'echo'"):
        connect("x", command="a", include="echo")


# --- calls -------------------------------------------------------------------------------------


async def test_calls_results_errors_and_progress(sdk_server: Path, reg: ToolRegistry) -> None:
    async with sdk(sdk_server, reg):
        echoed = await reg.get("mcp__sdk__echo").run({"text": "hi"})
        assert (echoed.text, echoed.is_error, echoed.details) == ("hi", False, {"result": "hi"})

        point = await reg.get("mcp__sdk__midpoint").run({"a": {"x": 2, "y": 4}})
        assert point.details == {"x": 1.0, "y": 2.0}

        odd = await reg.get("mcp__sdk__files_read-all_v2").run({"path": "/tmp"})
        assert odd.text == "read /tmp"

        # kode checks the arguments against the cleaned schema before calling the server
        invalid = await reg.get("mcp__sdk__echo").run({"txt": "hi"})
        assert invalid.is_error and invalid.error_type is ToolErrorType.INVALID_TOOL_PARAMS
        assert "'text' is required but missing" in invalid.text

        # a remote isError result stays an error result, with the server's text
        failed = await reg.get("mcp__sdk__fail").run({"reason": "the disk is full"})
        assert failed.is_error and failed.error_type is ToolErrorType.EXECUTION_FAILED
        assert "failed because the disk is full" in failed.text

        ctx: ToolContext[Any] = ToolContext(tool_name="mcp__sdk__count")
        counted = await reg.get("mcp__sdk__count").run({"n": 3}, ctx)
        assert counted.text == "counted to 3"
        assert [e.data for e in ctx.events if e.event == "progress"] == [
            {"message": "counted 1", "fraction": 1 / 3},
            {"message": "counted 2", "fraction": 2 / 3},
            {"message": "counted 3", "fraction": 1.0},
        ]


async def test_timeout_is_an_error_result_and_cancels_the_remote_call(
    sdk_server: Path, reg: ToolRegistry, marks: Path
) -> None:
    async with sdk(sdk_server, reg, timeout=0.5):
        result = await reg.get("mcp__sdk__linger").run({"seconds": 30})
        assert result.is_error and result.error_type is ToolErrorType.TIMEOUT
        assert result.text == "Tool 'mcp__sdk__linger' timed out after 0.5 s."
        assert await appears(marks / "linger.started")
        assert await appears(marks / "linger.cancelled"), "the server never heard of the cancel"
        again = await reg.get("mcp__sdk__echo").run({"text": "still here"})
        assert again.text == "still here"


async def test_a_server_that_dies_is_an_error_then_restarted(
    sdk_server: Path, reg: ToolRegistry
) -> None:
    async with sdk(sdk_server, reg) as server:
        first = (await reg.get("mcp__sdk__pid").run({})).details["result"]

        died = await reg.get("mcp__sdk__crash").run({})
        assert died.is_error and died.error_type is ToolErrorType.EXECUTION_FAILED
        assert died.text.startswith(
            f"Tool 'mcp__sdk__crash' failed: MCP server 'sdk' ({sys.executable} "
        )
        assert "closed the connection during the call" in died.text
        assert "the server is going down" in died.text  # its last words on stderr
        assert died.text.endswith("It will be started again on the next call.")
        assert not server.alive

        second = (await reg.get("mcp__sdk__pid").run({})).details["result"]
        assert second != first and server.alive

        # killed while idle: the next call starts it again and succeeds
        os.kill(second, signal.SIGKILL)
        assert await anyio.to_thread.run_sync(wait_until, lambda: not server.alive)
        third = (await reg.get("mcp__sdk__pid").run({})).details["result"]
        assert third not in (first, second)


async def test_a_server_that_cannot_start_says_why(sdk_server: Path, reg: ToolRegistry) -> None:
    failing = connect(
        "broken",
        command=[sys.executable, str(sdk_server), "--fail-at-start"],
        env=subprocess_env(),
        registry=reg,
    )
    with pytest.raises(MCPConnectionError) as caught:
        await failing
    message = str(caught.value)
    command = f"{sys.executable} {sdk_server} --fail-at-start"
    assert message.startswith(f"MCP server 'broken' ({command})")
    assert "missing configuration: set SDK_TEST_TOKEN" in message
    with pytest.raises(MCPConnectionError, match="could not be started"):
        await connect("nothing", command=["/no/such/program"], registry=reg)
    silent = connect(
        "silent",
        command=[sys.executable, "-c", "import time; time.sleep(30)"],
        connect_timeout=0.5,
        registry=reg,
    )
    with pytest.raises(MCPConnectionError, match=r"'silent' .* did not answer within 0.5 s"):
        await silent
    assert reg.names() == []


async def test_closed_connection_reopens_on_the_next_call(
    sdk_server: Path, reg: ToolRegistry
) -> None:
    server = await sdk(sdk_server, reg)
    try:
        await server.aclose()
        assert not server.alive and "mcp__sdk__echo" in reg  # the tools stay registered
        assert (await reg.get("mcp__sdk__echo").run({"text": "back"})).text == "back"
        assert server.alive
    finally:
        await server.aclose()
        server.unregister()
    assert reg.names() == []


def test_sync_use_in_a_script(sdk_server: Path, reg: ToolRegistry) -> None:
    with sdk(sdk_server, reg, include=["echo"]) as server:
        assert reg.get("mcp__sdk__echo").run_sync({"text": "sync"}).text == "sync"
        assert server.alive
    assert not server.alive and reg.names() == []


# --- agents ------------------------------------------------------------------------------------


async def test_an_agent_uses_a_whole_server_and_closes_it(
    sdk_server: Path, reg: ToolRegistry
) -> None:
    server = await sdk(sdk_server, reg)
    asked: list[str] = []

    async def approver(request: ApprovalRequest) -> ApprovalDecision:
        asked.append(request.tool_name)
        return ApprovalDecision(decision="deny", note="not today")

    model = ScriptedModel(
        [
            [
                tool_use("mcp__sdk__echo", {"text": "read-only: no approval"}),
                tool_use("mcp__sdk__wipe", {"target": "db"}),
            ],
            "Done.",
        ]
    )
    agent = Agent.create(
        AgentTemplate(id="mcp", tools=["mcp__sdk__*"]),
        model=model,
        registry=reg,
        approver=approver,
    )
    assert "mcp__sdk__pid" in [t.name for t in agent.tools]
    reply = await agent.send("Go.")
    assert reply.text == "Done."
    results = [b for b in agent.messages[2].content if b.type == "tool_result"]
    assert [(r.text, r.is_error) for r in results] == [
        ("read-only: no approval", False),
        ("Tool 'mcp__sdk__wipe' was denied by the user. Note from the user: not today", True),
    ]
    assert asked == ["mcp__sdk__wipe"]  # untrusted and not read-only: approval
    assert agent.services["mcp:sdk"] is server
    await agent.aclose()
    assert not server.alive  # closed with the agent
    server.unregister()


# --- kode to kode ------------------------------------------------------------------------------


async def test_kode_tools_round_trip_over_stdio(kode_tools: Path, reg: ToolRegistry) -> None:
    async with connect(
        "kode",
        command=serve_command(kode_tools),
        env=subprocess_env(),
        cwd=str(kode_tools.parent),
        registry=reg,
    ) as server:
        weather = reg.get("mcp__kode__weather")
        assert weather.kind is Kind.READ and weather.requires_approval is None
        assert reg.get("mcp__kode__remove").kind is Kind.EDIT
        result = await weather.run({"city": "Lima"})
        assert result.details == {"city": "Lima", "celsius": 21.5}
        refused = await reg.get("mcp__kode__remove").run({"path": "/"})
        assert refused.is_error and refused.text == "/ is protected; remove something else."

        # a tool the server defines later is registered here too (tools/list_changed)
        assert "mcp__kode__later" not in reg
        await reg.get("mcp__kode__define_more").run({})
        assert await anyio.to_thread.run_sync(wait_until, lambda: "mcp__kode__later" in reg)
        assert (await reg.get("mcp__kode__later").run({"word": "up"})).text == "UP"
        assert server.tools["mcp__kode__later"] == "later"


async def test_http_server_that_restarts_or_goes_away(kode_tools: Path, reg: ToolRegistry) -> None:
    http = HttpServer(kode_tools, free_port())
    url = http.start()
    try:
        async with connect("web", url=url, registry=reg) as server:
            add = reg.get("mcp__web__add")
            assert (await add.run({"a": 1, "b": 2})).text == "3"
            # restarted between two calls: it forgot the session; a new one is made
            http.stop()
            http.start()
            assert (await add.run({"a": 2, "b": 2})).text == "4"
            # gone: an error result; back: the next call connects again
            http.stop()
            down = await add.run({"a": 1, "b": 1})
            assert down.is_error and down.text == (
                f"Tool 'mcp__web__add' failed: MCP server 'web' ({url}) could not be reached, "
                "or dropped the call. kode will connect again on the next call."
            )
            assert not server.alive
            http.start()
            assert (await add.run({"a": 3, "b": 3})).text == "6"
    finally:
        http.stop()


async def test_kode_tools_round_trip_over_http(http_server: str, reg: ToolRegistry) -> None:
    async with connect("web", url=http_server, registry=reg, trust=True) as server:
        assert server.alive and "mcp__web__count" in reg
        ctx: ToolContext[Any] = ToolContext(tool_name="mcp__web__count")
        result = await reg.get("mcp__web__count").run({"n": 2}, ctx)
        assert result.text == "counted to 2"
        assert [e.data["message"] for e in ctx.events] == ["at 0", "at 1"]
        added = await reg.get("mcp__web__add").run({"a": 20, "b": 22})
        assert (added.text, added.details) == ("42", {"result": 42})


def test_no_thread_is_left_behind(sdk_server: Path, reg: ToolRegistry) -> None:
    before = {t.name for t in threading.enumerate()}
    with sdk(sdk_server, reg, include=["echo"]):
        assert any(t.name == "kode-mcp-sdk" for t in threading.enumerate())
    with pytest.raises(MCPConnectionError):
        connect("nothing", command=["/no/such/program"], registry=reg).open_sync()
    assert wait_until(lambda: {t.name for t in threading.enumerate()} <= before)
