"""What a call may raise: one rule for every shape of turn (docs/agents.md#what-a-call-may-raise).

KeyboardInterrupt and SystemExit end the run and come out of send() (or the stream) as
themselves once every call is answered; any other exception that is not cancellation is the
failure of its call. Each is tried in a turn with one call and with parallel calls, from sync
tools (in a worker thread and inline) and async tools, and from a hook.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from support import assert_history_valid, make_agent

from kode import define_tool
from kode.agent import AgentHooks, AgentState
from kode.models import ScriptedModel, ToolResultContent, tool_use
from kode.models.messages import ToolUseContent
from kode.registries import ToolRegistry
from kode.tools import ToolContext

pytestmark = pytest.mark.anyio


class Custom(BaseException):
    """A BaseException of a tool's own."""


RAISED: dict[str, Callable[[], BaseException]] = {
    "keyboard": KeyboardInterrupt,
    "exit": lambda: SystemExit(3),
    "generator-exit": GeneratorExit,
    "custom": lambda: Custom("gave up"),
    "group-keyboard": lambda: BaseExceptionGroup("inner", [KeyboardInterrupt()]),
    "group-custom": lambda: BaseExceptionGroup("inner", [Custom("gave up")]),
}
FATAL = {"keyboard": KeyboardInterrupt, "exit": SystemExit, "group-keyboard": KeyboardInterrupt}


@pytest.fixture
def tools(reg: ToolRegistry) -> ToolRegistry:
    @define_tool(registry=reg, kind="read")
    def sync_boom(kind: str) -> str:
        """Raise in a worker thread."""
        raise RAISED[kind]()

    @define_tool(registry=reg, kind="read", run_in_thread=False)
    def inline_boom(kind: str) -> str:
        """Raise on the event loop's thread."""
        raise RAISED[kind]()

    @define_tool(registry=reg, kind="read")
    async def async_boom(kind: str) -> str:
        """Raise from a coroutine."""
        await anyio.lowlevel.checkpoint()
        raise RAISED[kind]()

    @define_tool(registry=reg, kind="read")
    async def nap() -> str:
        """Sleep a little."""
        await anyio.sleep(0.05)
        return "rested"

    @define_tool(registry=reg, kind="edit")
    def write(ctx: ToolContext[Any]) -> str:
        """A mutating call: runs after the previous mutating one."""
        return "written"

    return reg


def results_of(agent: Any, index: int) -> dict[str, ToolResultContent]:
    return {
        b.tool_use_id: b for b in agent.messages[index].content if isinstance(b, ToolResultContent)
    }


def saved(agent: Any) -> None:
    assert_history_valid(agent.messages)
    text = agent.state.model_dump_json()
    assert AgentState.model_validate_json(text).model_dump_json() == text


SHAPES = {
    "single": lambda tool, kind: [tool_use(tool, {"kind": kind}, id="b")],
    "parallel": lambda tool, kind: [
        tool_use("nap", {}, id="a"),
        tool_use(tool, {"kind": kind}, id="b"),
        tool_use("nap", {}, id="c"),
    ],
    "mutating": lambda tool, kind: [
        tool_use(tool, {"kind": kind}, id="b"),
        tool_use("write", {}, id="w1"),
        tool_use("write", {}, id="w2"),
    ],
}


@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("tool", ["sync_boom", "inline_boom", "async_boom"])
@pytest.mark.parametrize("kind", list(RAISED))
async def test_one_rule_for_every_turn_shape(
    tools: ToolRegistry, shape: str, tool: str, kind: str
) -> None:
    turn = SHAPES[shape](tool, kind)
    agent, model = make_agent(tools, [turn, "after the failure", "again"])
    if kind in FATAL:
        with pytest.raises(BaseException) as caught:
            await agent.send("go")
        assert type(caught.value) is FATAL[kind]  # itself, never in an exception group
        assert agent.status == "failed"
        assert len(model.requests) == 1  # the model was not asked again
        answered = results_of(agent, -1)
        assert set(answered) == {c.id for c in turn}
        assert "was cancelled" in answered["b"].text and answered["b"].is_error
        saved(agent)
        agent.model = ScriptedModel(["on again"])  # the agent goes on afterwards
        assert (await agent.send("again")).text == "on again"
    else:
        reply = await agent.send("go")
        assert reply.text == "after the failure"
        assert agent.status == "idle"
        answered = results_of(agent, 2)
        assert set(answered) == {c.id for c in turn}
        failed = answered["b"]
        assert failed.is_error
        name = "BaseExceptionGroup" if kind.startswith("group") else RAISED[kind]().__class__
        expected = name if isinstance(name, str) else name.__name__
        assert failed.text.startswith(f"Tool '{tool}' failed: {expected}")
        others = [r for call_id, r in answered.items() if call_id != "b"]
        assert all(not r.is_error for r in others)  # the other calls went on
        record = agent.records.get("b")
        assert record is not None and record.status == "failed"
    saved(agent)


async def drain(stream: Any, structured: bool) -> list[Any]:
    if structured:
        async with stream as events:
            return [event async for event in events]
    return [event async for event in stream]


@pytest.mark.parametrize("structured", [False, True], ids=["async-for", "async-with"])
@pytest.mark.parametrize("kind", ["keyboard", "exit", "custom"])
async def test_the_stream_follows_the_same_rule(
    tools: ToolRegistry, kind: str, structured: bool
) -> None:
    turn = [tool_use("async_boom", {"kind": kind}, id="b"), tool_use("nap", {}, id="n")]
    agent, _ = make_agent(tools, [turn, "done"])
    if kind in FATAL:
        with pytest.raises(BaseException) as caught:
            await drain(agent.stream("go"), structured)
        assert type(caught.value) is FATAL[kind]
        assert agent.status == "failed"
        assert set(results_of(agent, -1)) == {"b", "n"}
    else:
        events = await drain(agent.stream("go"), structured)
        assert events[-1].type == "done"
        assert results_of(agent, 2)["b"].text == "Tool 'async_boom' failed: Custom: gave up"
    saved(agent)


@pytest.mark.parametrize("kind", ["keyboard", "custom"])
async def test_a_hook_raising_follows_the_same_rule(reg: ToolRegistry, kind: str) -> None:
    @define_tool(registry=reg, kind="read")
    def echo(text: str) -> str:
        """Echo."""
        return text

    def hook(call: ToolUseContent, ctx: ToolContext[Any]) -> None:
        raise RAISED[kind]()

    agent, _ = make_agent(
        reg,
        [[tool_use("echo", {"text": "x"}, id="e")], "done"],
        create={"hooks": AgentHooks(pre_tool_use=[hook])},
    )
    if kind == "keyboard":
        with pytest.raises(KeyboardInterrupt):
            await agent.send("go")
    else:
        assert (await agent.send("go")).text == "done"
        assert results_of(agent, 2)["e"].text == "Tool 'echo' failed: Custom: gave up"
    saved(agent)
