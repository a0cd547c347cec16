"""An agent reports a call that held the event loop: a `ToolBlockedLoop` event and a warning.

A new user's async tool that calls ``time.sleep`` holds every other call of the turn, and its
timeout cannot fire; the loop cannot stop it, but the agent says which tool it was and how long.
"""

from __future__ import annotations

import logging
import time

import anyio
import pytest
from support import make_agent, of_type

from kode import define_tool
from kode.agent import ToolBlockedLoop, ToolEnd
from kode.models import tool_use
from kode.registries import ToolRegistry

pytestmark = pytest.mark.anyio

NAP = 0.2


async def test_a_blocking_async_tool_gets_an_event_and_a_warning(
    reg: ToolRegistry, caplog: pytest.LogCaptureFixture
) -> None:
    @define_tool(registry=reg, kind="read", timeout=0.05)
    async def nap_badly() -> str:
        """Rest, the wrong way."""
        time.sleep(NAP)  # noqa: ASYNC251 - the blocking call under test
        return "rested"

    @define_tool(registry=reg, kind="read")
    async def nap_well() -> str:
        """Rest, the right way."""
        await anyio.sleep(0.01)
        return "rested well"

    turn = [tool_use("nap_badly", {}, id="bad"), tool_use("nap_well", {}, id="good")]
    agent, _ = make_agent(reg, [turn, "Rested."])
    with caplog.at_level(logging.WARNING):
        reply = await agent.send("Rest.")
    (blocked,) = of_type(reply.events, ToolBlockedLoop)
    assert blocked.call_id == "bad" and blocked.name == "nap_badly"
    assert blocked.seconds >= NAP and blocked.timeout == 0.05
    # the event comes before the call's end, and the result is the tool's own
    ends = {e.call_id: e for e in of_type(reply.events, ToolEnd)}
    assert reply.events.index(blocked) < reply.events.index(ends["bad"])
    assert not ends["bad"].is_error and ends["bad"].result.text == "rested"
    assert not ends["good"].is_error
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any(w.startswith("Tool 'nap_badly' held the event loop for 0.") for w in warnings)


async def test_the_agent_timeout_is_the_one_named(reg: ToolRegistry) -> None:
    @define_tool(registry=reg, kind="read")
    async def nap_badly() -> str:
        """Rest, the wrong way."""
        time.sleep(NAP)  # noqa: ASYNC251 - the blocking call under test
        return "rested"

    agent, _ = make_agent(reg, [[tool_use("nap_badly", {}, id="b")], "Rested."], tool_timeout=0.1)
    reply = await agent.send("Rest.")
    (blocked,) = of_type(reply.events, ToolBlockedLoop)
    assert blocked.timeout == 0.1 and blocked.seconds >= NAP


async def test_a_quick_tool_gets_no_event(reg: ToolRegistry) -> None:
    @define_tool(registry=reg, kind="read")
    async def quick() -> dict[str, int]:
        """Answer at once."""
        return {"answer": 42}

    agent, _ = make_agent(reg, [[tool_use("quick", {}, id="q")], "Done."])
    reply = await agent.send("Go.")
    assert not of_type(reply.events, ToolBlockedLoop)
    assert agent.messages[2].content[0].text == '{"answer":42}'  # type: ignore[union-attr]
