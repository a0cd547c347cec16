"""Events: deltas, tool start/progress/custom/end, approvals, turn_end with usage, done, error."""

from __future__ import annotations

import dataclasses
import datetime
import json
import pathlib
import threading
from collections.abc import AsyncIterator
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from pydantic import BaseModel
from support import assert_history_valid, make_agent, of_type, sent_results

from kode import ToolContext, define_tool
from kode.agent import (
    Agent,
    AgentError,
    AgentTemplate,
    ApprovalRequired,
    Done,
    ErrorEvent,
    TextDelta,
    ThinkingDelta,
    ToolCustom,
    ToolEnd,
    ToolProgress,
    ToolStart,
    TurnEnd,
)
from kode.models import (
    Message,
    ModelError,
    ModelEvent,
    ModelRequest,
    ModelResponse,
    TextContent,
    Usage,
    tool_use,
)
from kode.models import TextDelta as ModelTextDelta
from kode.models import ThinkingDelta as ModelThinkingDelta
from kode.registries import ToolRegistry

pytestmark = pytest.mark.anyio


@pytest.fixture
def tools(reg: ToolRegistry) -> ToolRegistry:
    @define_tool(registry=reg, kind="search")
    async def scan(n: int, ctx: ToolContext) -> str:
        """Scan n things, reporting progress (async).

        Args:
            n: How many.
        """
        for i in range(n):
            ctx.progress(f"item {i}", fraction=(i + 1) / n)
            await anyio.lowlevel.checkpoint()
        ctx.emit("found", {"count": n})
        return f"scanned {n}"

    @define_tool(registry=reg, kind="read")
    def crunch(ctx: ToolContext) -> str:
        """Crunch in a worker thread, reporting progress from there."""
        ctx.progress("crunching")
        ctx.emit("thread", threading.current_thread() is not threading.main_thread())
        ctx.progress("almost", 0.9)
        return "crunched"

    @define_tool(registry=reg)
    def fail() -> None:
        """Fails."""
        raise RuntimeError("bad")

    return reg


async def collect(agent: Agent, prompt: str) -> list[Any]:
    with anyio.fail_after(5):
        return [event async for event in agent.stream(prompt)]


async def test_text_deltas_add_up_to_the_reply(tools: ToolRegistry) -> None:
    agent, _ = make_agent(tools, ["Hello there,  world."])
    events = await collect(agent, "hi")
    assert [e.text for e in of_type(events, TextDelta)] == ["Hello ", "there,  ", "world."]
    assert events[-1] == Done(
        text="Hello there,  world.", usage=Usage(input_tokens=1, output_tokens=3), turns=1
    )


async def test_one_tool_round_trip_in_order(tools: ToolRegistry) -> None:
    agent, model = make_agent(
        tools, [["Scanning.", tool_use("scan", {"n": 2}, id="s1")], "Done now."]
    )
    events = await collect(agent, "scan two things")
    assert [e.type for e in events] == [
        "text_delta",
        "turn_end",
        "tool_start",
        "tool_progress",
        "tool_progress",
        "tool_custom",
        "tool_end",
        "text_delta",
        "text_delta",
        "turn_end",
        "done",
    ]
    assert of_type(events, ToolStart) == [ToolStart(call_id="s1", name="scan", input={"n": 2})]
    assert of_type(events, ToolProgress) == [
        ToolProgress(call_id="s1", name="scan", message="item 0", fraction=0.5),
        ToolProgress(call_id="s1", name="scan", message="item 1", fraction=1.0),
    ]
    assert of_type(events, ToolCustom) == [
        ToolCustom(call_id="s1", name="scan", event="found", data={"count": 2})
    ]
    (end,) = of_type(events, ToolEnd)
    assert (end.call_id, end.name, end.is_error, end.status) == ("s1", "scan", False, "done")
    assert end.result == sent_results(model)[0]
    assert isinstance(end.duration, float) and end.duration >= 0
    # usage: ScriptedModel counts the words sent (input) and written (output)
    assert of_type(events, TurnEnd) == [
        TurnEnd(turn=1, stop_reason="tool_use", usage=Usage(input_tokens=3, output_tokens=1)),
        TurnEnd(turn=2, stop_reason="end_turn", usage=Usage(input_tokens=4, output_tokens=2)),
    ]
    assert events[-1] == Done(
        text="Done now.", usage=Usage(input_tokens=7, output_tokens=3), turns=2
    )
    assert agent.usage == Usage(input_tokens=7, output_tokens=3)


async def test_progress_from_a_sync_tool_in_a_worker_thread(tools: ToolRegistry) -> None:
    agent, _ = make_agent(tools, [[tool_use("crunch", id="c1")], "ok"])
    events = await collect(agent, "go")
    tool_events = [e for e in events if e.type.startswith("tool_")]
    assert tool_events[:4] == [
        ToolStart(call_id="c1", name="crunch", input={}),
        ToolProgress(call_id="c1", name="crunch", message="crunching", fraction=None),
        ToolCustom(call_id="c1", name="crunch", event="thread", data=True),
        ToolProgress(call_id="c1", name="crunch", message="almost", fraction=0.9),
    ]
    assert tool_events[4].type == "tool_end"


async def test_progress_from_a_sync_tool_under_send_sync(tools: ToolRegistry) -> None:
    agent, _ = make_agent(tools, [[tool_use("crunch", id="c1")], "ok"])
    reply = await anyio.to_thread.run_sync(agent.send_sync, "go")
    assert [e.message for e in of_type(reply.events, ToolProgress)] == ["crunching", "almost"]


async def test_tool_end_for_failures(tools: ToolRegistry) -> None:
    agent, _ = make_agent(
        tools,
        [
            [tool_use("fail", id="f1"), tool_use("nope", id="n1"), tool_use("scan", {}, id="v1")],
            "ok",
        ],
    )
    events = await collect(agent, "go")
    ends = {e.call_id: (e.name, e.is_error, e.status) for e in of_type(events, ToolEnd)}
    assert ends == {
        "f1": ("fail", True, "failed"),
        "n1": ("nope", True, "failed"),
        "v1": ("scan", True, "failed"),
    }
    # only the call that passed its checks started
    assert [e.call_id for e in of_type(events, ToolStart)] == ["f1"]


async def test_on_event_sees_what_the_reply_keeps(tools: ToolRegistry) -> None:
    agent, _ = make_agent(tools, [[tool_use("scan", {"n": 1})], "ok"])
    seen: list[Any] = []
    reply = await agent.send("go", on_event=seen.append)
    assert seen == reply.events
    assert isinstance(seen[-1], Done)


class ThinkingModel:
    name = "thinking"

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        yield ModelThinkingDelta(thinking="hmm")
        yield ModelTextDelta(text="ok")
        yield ModelResponse(
            message=Message(role="assistant", content=[TextContent(text="ok")]),
            stop_reason="end_turn",
            usage=Usage(input_tokens=10, output_tokens=1),
        )


async def test_thinking_deltas(reg: ToolRegistry) -> None:
    agent = Agent.create(AgentTemplate(id="t"), model=ThinkingModel(), registry=reg)
    events = await collect(agent, "go")
    assert events[:2] == [ThinkingDelta(thinking="hmm"), TextDelta(text="ok")]
    assert events[-1].usage == Usage(input_tokens=10, output_tokens=1)


# --- errors ------------------------------------------------------------------------------------


class FailingModel:
    name = "failing"

    def __init__(self, error: Exception | None) -> None:
        self.error = error

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        yield ModelTextDelta(text="part")
        if self.error is not None:
            raise self.error


async def test_a_model_error_is_an_error_event_and_send_raises(reg: ToolRegistry) -> None:
    error = ModelError("429 rate limited", provider="x", status_code=429)
    agent = Agent.create(AgentTemplate(id="t"), model=FailingModel(error), registry=reg)
    events = await collect(agent, "go")
    assert [e.type for e in events] == ["text_delta", "error"]
    assert events[-1] == ErrorEvent(message="the model failed: 429 rate limited")
    assert events[-1].error is error
    assert agent.status == "failed"
    with pytest.raises(AgentError, match="the model failed: 429 rate limited") as info:
        await agent.send("again")
    assert info.value.__cause__ is error
    # the failed prompts are kept in one user message; nothing else was added
    assert agent.messages == [
        Message(role="user", content=[TextContent(text="go"), TextContent(text="again")])
    ]


async def test_a_stream_without_a_response_is_an_error(reg: ToolRegistry) -> None:
    agent = Agent.create(AgentTemplate(id="t"), model=FailingModel(None), registry=reg)
    with pytest.raises(AgentError, match="the model ended its stream without a response"):
        await agent.send("go")


async def test_scripted_model_out_of_turns(tools: ToolRegistry) -> None:
    agent, _ = make_agent(tools, [[tool_use("scan", {"n": 1})]])
    events = await collect(agent, "go")
    assert events[-1].type == "error"
    assert events[-1].message == (
        "the model failed: ScriptedModel 'scripted' has no turns left (request 2); add a turn "
        "for every model reply the test expects"
    )
    assert_history_valid(agent.messages)


async def test_max_turns_reached(tools: ToolRegistry) -> None:
    turns = [[tool_use("scan", {"n": 1})] for _ in range(3)]
    agent, model = make_agent(tools, [*turns, "finally"], max_turns=3)
    with pytest.raises(AgentError) as info:
        await agent.send("go")
    assert str(info.value) == (
        "the agent reached its limit of 3 turns without a final answer; raise max_turns in the "
        "template if the task needs more"
    )
    assert len(model.requests) == 3
    assert agent.status == "failed"
    assert_history_valid(agent.messages)
    # the history is valid: the next send continues from the last results
    assert (await agent.send("go on")).text == "finally"
    assert_history_valid(agent.messages)


class Order(BaseModel):
    title: str
    quantity: int = 1


@dataclasses.dataclass
class Shipping:
    to: pathlib.PurePosixPath
    by: datetime.date


async def test_tool_start_and_approval_carry_the_arguments_as_json_data(
    reg: ToolRegistry,
) -> None:
    @define_tool(registry=reg, kind="edit", requires_approval=True)
    def place(order: Order, shipping: Shipping, note: str = "none") -> str:
        """Place an order."""
        return f"{order.quantity} x {order.title} to {shipping.to}"

    raw = {
        "order": {"title": "dune", "quantity": "2"},
        "shipping": {"to": "/home/ada", "by": "2030-01-02"},
    }
    expected = {
        "order": {"title": "dune", "quantity": 2},
        "shipping": {"to": "/home/ada", "by": "2030-01-02"},
        "note": "none",
    }
    agent, model = make_agent(reg, [[tool_use("place", raw, id="p")], "ok"])
    approvals: list[ApprovalRequired] = []

    def answer(event: Any) -> None:
        if isinstance(event, ApprovalRequired):
            approvals.append(event)
            agent.decide(event.call_id, "allow")

    reply = await agent.send("order it", on_event=answer)
    (start,) = of_type(reply.events, ToolStart)
    assert start.input == expected
    assert json.loads(json.dumps(start.input)) == expected  # plain JSON data, as kode run shows
    assert start == ToolStart(call_id="p", name="place", input=expected)
    assert "quantity': 2" in repr(start)
    assert approvals[0].input == expected
    assert sent_results(model)[0].text == "2 x dune to /home/ada"


def test_tool_start_input_never_raises() -> None:
    class Odd:
        def __str__(self) -> str:
            return "odd"

    start = ToolStart(call_id="c", name="t", input={"odd": Odd(), "n": 1})
    assert start.input == {"odd": "odd", "n": 1}
