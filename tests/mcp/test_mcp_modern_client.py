"""`kode.mcp.connect` on the 2026-07-28 protocol and on 2025-11-25, against real HTTP servers.

The servers are subprocesses: a FastMCP 4 server (its tool asks with ``input_required``
results on 2026-07-28 and with requests to the client on 2025-11-25) and ``kode mcp serve``.
kode negotiates the newest revision with ``server/discover``; ``protocol="handshake"`` keeps
it to the ``initialize`` handshake.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
from mcp_peers import (
    ASKING_TOOLS,
    FASTMCP_SERVER,
    KODE_TOOLS,
    HttpServer,
    free_port,
    wait_until,
    write,
)

from kode import Agent, AgentTemplate, ToolContext, ToolRegistry
from kode.agent import ApprovalDecision, ApprovalRequest
from kode.mcp import connect
from kode.mcp.elicitation import ElicitationReply, ElicitationRequest
from kode.mcp.sampling import SamplingRequest
from kode.models import ScriptedModel, tool_use

pytest.importorskip("fastmcp", reason="the FastMCP peer tests need fastmcp (test extra)")

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("anyio_backend", ["asyncio"])]

TRIP = {"city": "Bergen", "nights": 3}
DONE = "3 nights in Bergen. Tip: Walk the harbour at dawn."
VERSIONS = [("newest", "2026-07-28"), ("handshake", "2025-11-25")]


@pytest.fixture(scope="module")
def peers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A FastMCP 4 server and `kode mcp serve`, both over HTTP; their URLs and marks folder."""
    folder = tmp_path_factory.mktemp("modern")
    marks = folder / "marks"
    marks.mkdir()
    before = os.environ.get("KODE_TEST_MARKS")
    os.environ["KODE_TEST_MARKS"] = str(marks)
    script = write(folder / "fastmcp_server.py", FASTMCP_SERVER)
    port = free_port()
    fast = HttpServer(script, port, command=[sys.executable, str(script), str(port)])
    asking = write(folder / "asking_tools.py", KODE_TOOLS + ASKING_TOOLS)
    kode_server = HttpServer(asking, free_port())
    try:
        yield {"fastmcp": fast.start(), "kode": kode_server.start(), "marks": marks}
    finally:
        fast.stop()
        kode_server.stop()
        if before is None:
            del os.environ["KODE_TEST_MARKS"]
        else:
            os.environ["KODE_TEST_MARKS"] = before


class User:
    """Answers the servers' questions and sampling requests; records them."""

    def __init__(self) -> None:
        self.asked: list[ElicitationRequest] = []
        self.sampled: list[SamplingRequest] = []

    async def elicit(self, request: ElicitationRequest) -> ElicitationReply:
        self.asked.append(request)
        return ElicitationReply(action="accept", content=dict(TRIP))

    async def sample(self, request: SamplingRequest) -> str:
        self.sampled.append(request)
        return "Walk the harbour at dawn."


@pytest.mark.parametrize(("protocol", "version"), VERSIONS)
async def test_a_fastmcp_server_on_both_revisions(
    peers: dict[str, Any], protocol: str, version: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="kode.mcp")
    reg = ToolRegistry("modern-fastmcp")
    user = User()
    marks: Path = peers["marks"]
    async with connect(
        "fm",
        url=peers["fastmcp"],
        protocol=protocol,  # type: ignore[arg-type]
        registry=reg,
        elicitation=user.elicit,
        sampling=user.sample,
        roots=[marks],
    ) as server:
        assert server.remote.protocol_version == version
        # what server/discover (or initialize) said of the server
        assert server.remote.server_info is not None
        assert server.remote.server_info.name == "fastmcp-peer"
        echoed = await reg.get("mcp__fm__echo").run({"text": "hi"})
        assert echoed.text == "hi" and not echoed.is_error

        ctx: ToolContext[Any] = ToolContext(tool_name="mcp__fm__count")
        counted = await reg.get("mcp__fm__count").run({"n": 3}, ctx)
        assert counted.text == "counted to 3"
        assert [e.data["message"] for e in ctx.events if e.event == "progress"] == [
            "at 1",
            "at 2",
            "at 3",
        ]
        # the server's log messages reach kode's logger on both revisions
        assert "counting to 3" in caplog.text

        planned = await reg.get("mcp__fm__plan_trip").run({})
        assert not planned.is_error, planned.text
        assert planned.text == DONE
        [asked] = user.asked
        assert asked.message == "Where are you going, and for how long?"
        assert asked.schema is not None and asked.schema["required"] == ["city", "nights"]
        [sampled] = user.sampled
        assert sampled.messages[-1].text == "One tip for 3 nights in Bergen?"

        patient = await reg.get("mcp__fm__patient").run({})
        assert patient.text == ("waited once" if version == "2026-07-28" else "no wait")

        rooted = await reg.get("mcp__fm__roots").run({})
        assert rooted.text == marks.as_uri(), rooted.text

        # a call that times out is cancelled on the server
        for name in ("linger.started", "linger.ended"):
            (marks / name).unlink(missing_ok=True)
        with anyio.move_on_after(1.0):
            await reg.get("mcp__fm__linger").run({"seconds": 30})
        assert await anyio.to_thread.run_sync(wait_until, (marks / "linger.ended").exists)
        assert (marks / "linger.started").exists()
        assert (await reg.get("mcp__fm__echo").run({"text": "still here"})).text == "still here"


@pytest.mark.parametrize(("protocol", "version"), VERSIONS)
async def test_kode_to_kode_a_served_tool_that_asks(
    peers: dict[str, Any], protocol: str, version: str
) -> None:
    reg = ToolRegistry("modern-kode")
    user = User()
    async with connect(
        "k",
        url=peers["kode"],
        protocol=protocol,  # type: ignore[arg-type]
        registry=reg,
        elicitation=user.elicit,
        sampling=user.sample,
    ) as server:
        assert server.remote.protocol_version == version
        planned = await reg.get("mcp__k__plan_trip").run({})
        assert planned.text == DONE, planned.text
        assert len(user.asked) == 1 and len(user.sampled) == 1
        signed = await reg.get("mcp__k__sign_in").run({})
        assert signed.text == "sign-in: accept"
        assert user.asked[-1].mode == "url" and user.asked[-1].url == "https://example.com/login"


async def test_on_2026_an_agent_answers_with_its_model_under_its_approvals(
    peers: dict[str, Any],
) -> None:
    # sampling and elicitation left to the calling agent (connect's defaults): its model
    # answers the input_required sampling request once the approver allowed it, as on 2025.
    reg = ToolRegistry("modern-agent")
    user = User()
    asked: list[ApprovalRequest] = []

    async def approver(request: ApprovalRequest) -> ApprovalDecision:
        asked.append(request)
        return ApprovalDecision(decision="allow")

    model = ScriptedModel(
        [
            [tool_use("mcp__fm__plan_trip", {})],
            "Walk the harbour at dawn.",  # the server's sampling request
            "Booked.",
        ]
    )
    async with connect("fm", url=peers["fastmcp"], registry=reg) as server:
        assert server.remote.protocol_version == "2026-07-28"
        agent = Agent.create(
            AgentTemplate(id="trips", tools=["mcp__fm__*"], permission={"mode": "approval"}),
            model=model,
            registry=reg,
            approver=approver,
            elicitation=user.elicit,
        )
        async with agent:
            reply = await agent.send("Plan my trip.")
        assert reply.text == "Booked."
        assert [m.text for m in model.requests[1].messages] == ["One tip for 3 nights in Bergen?"]
        names = [r.tool_name for r in asked]
        assert names == ["mcp__fm__plan_trip", "mcp__fm__sampling"]
        results = [
            b.text
            for m in agent.messages
            if m.role == "user" and not isinstance(m.content, str)
            for b in m.content
            if b.type == "tool_result"
        ]
        assert results == [DONE]
