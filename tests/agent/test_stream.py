"""`agent.stream()`: events as they happen, and every way of leaving the iteration early."""

from __future__ import annotations

import gc
from contextlib import aclosing

import anyio
import pytest
from support import assert_history_valid, make_agent

from kode import define_tool
from kode.agent import Agent, AgentError, AgentStream, Done
from kode.models import tool_use
from kode.registries import ToolRegistry

pytestmark = pytest.mark.anyio

CANCELLED = "Tool 'hang' was cancelled: the run was interrupted before it finished."


@pytest.fixture
def reg_hang(reg: ToolRegistry) -> ToolRegistry:
    @define_tool(registry=reg, kind="read")
    async def hang() -> str:
        """Never finishes."""
        await anyio.sleep_forever()
        return "never"

    return reg


def assert_hang_cancelled(agent: Agent) -> None:
    assert agent.status == "idle"
    assert [r.status for r in agent.state.tool_calls] == ["cancelled"]
    last = agent.messages[-1]
    assert last.role == "user"
    assert [(b.text, b.is_error) for b in last.content] == [(CANCELLED, True)]  # type: ignore[union-attr]
    assert_history_valid(agent.messages)


async def test_a_full_iteration_ends_with_done(reg_hang: ToolRegistry) -> None:
    agent, _ = make_agent(reg_hang, ["Hello there."])
    events = agent.stream("hi")
    assert isinstance(events, AgentStream)
    assert "not started" in repr(events)
    seen = [event async for event in events]
    assert [e.type for e in seen] == ["text_delta", "text_delta", "turn_end", "done"]
    assert isinstance(seen[-1], Done) and seen[-1].text == "Hello there."
    assert "ended" in repr(events)


async def test_break_out_of_a_plain_loop_cancels_the_run(reg_hang: ToolRegistry) -> None:
    agent, _ = make_agent(reg_hang, [[tool_use("hang", id="h1")], "next"])
    with anyio.fail_after(5):
        async for event in agent.stream("go"):
            if event.type == "tool_start":
                break
        # The caller's own task is untouched: it can wait, and a new send() waits for the
        # abandoned run to end instead of failing with "already running".
        await anyio.sleep(0.01)
        reply = await agent.send("again")
    assert reply.text == "next"
    assert [m.role for m in agent.messages] == ["user", "assistant", "user", "assistant"]
    assert agent.messages[2].content[0].text == CANCELLED  # type: ignore[union-attr]
    assert agent.state.tool_calls[0].status == "cancelled"
    assert_history_valid(agent.messages)


async def test_a_send_right_after_a_break_waits_for_the_run_to_end(
    reg_hang: ToolRegistry,
) -> None:
    agent, _ = make_agent(reg_hang, [[tool_use("hang", id="h1")], "next"])
    with anyio.fail_after(5):
        async for event in agent.stream("go"):
            if event.type == "tool_start":
                break
        assert (await agent.send("again")).text == "next"  # no checkpoint in between


async def test_leaving_an_async_with_block_ends_the_run_first(reg_hang: ToolRegistry) -> None:
    agent, _ = make_agent(reg_hang, [[tool_use("hang", id="h1")], "next"])
    with anyio.fail_after(5):
        async with agent.stream("go") as events:
            async for event in events:
                if event.type == "tool_start":
                    break
        assert_hang_cancelled(agent)  # already settled when the block is left
        assert (await agent.send("again")).text == "next"


async def test_an_exception_in_the_consumer_ends_the_run(reg_hang: ToolRegistry) -> None:
    agent, _ = make_agent(reg_hang, [[tool_use("hang", id="h1")], "next"])
    with anyio.fail_after(5), pytest.raises(KeyError, match="consumer bug"):
        async with agent.stream("go") as events:
            async for event in events:
                if event.type == "tool_start":
                    raise KeyError("consumer bug")
    assert_hang_cancelled(agent)


async def test_a_cancelled_consumer_cancels_the_run(reg_hang: ToolRegistry) -> None:
    agent, _ = make_agent(reg_hang, [[tool_use("hang", id="h1")], "next"])
    with anyio.fail_after(5):
        with anyio.move_on_after(0.1) as scope:
            async for _ in agent.stream("go"):
                pass
        assert scope.cancelled_caught
        assert (await agent.send("again")).text == "next"
    assert agent.messages[2].content[0].text == CANCELLED  # type: ignore[union-attr]


async def test_aclose_waits_for_the_run_to_end(reg_hang: ToolRegistry) -> None:
    agent, _ = make_agent(reg_hang, [[tool_use("hang", id="h1")], "next"])
    with anyio.fail_after(5):
        async with aclosing(agent.stream("go")) as events:
            async for event in events:
                if event.type == "tool_start":
                    break
        assert_hang_cancelled(agent)


async def test_a_stream_never_iterated_runs_nothing(reg_hang: ToolRegistry) -> None:
    agent, model = make_agent(reg_hang, ["unused"])
    events = agent.stream("go")
    del events
    gc.collect()  # no "unclosed stream" warning either: warnings are errors here
    assert model.requests == [] and agent.messages == [] and agent.status == "idle"


async def test_a_stream_cannot_be_entered_twice(reg_hang: ToolRegistry) -> None:
    agent, _ = make_agent(reg_hang, ["one"])
    events = agent.stream("go")
    async with events:
        with pytest.raises(RuntimeError, match="already started"):
            await events.__aenter__()
        assert [e.type async for e in events][-1] == "done"


async def test_a_second_stream_while_one_runs_is_refused(reg_hang: ToolRegistry) -> None:
    agent, _ = make_agent(reg_hang, [[tool_use("hang", id="h1")], "next"])
    with anyio.fail_after(5):
        async with agent.stream("go") as first:
            async for event in first:
                if event.type == "tool_start":
                    break
            with pytest.raises(AgentError, match="already running"):
                async for _ in agent.stream("second"):
                    pass
    assert_hang_cancelled(agent)
