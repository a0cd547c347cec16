"""Concurrency: one turn's calls in parallel (bounded), mutating kinds in order, interrupt()."""

from __future__ import annotations

import threading
import time
from collections.abc import AsyncIterator
from typing import Any

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
import pytest
from support import assert_history_valid, make_agent, sent_results, texts

from kode import ToolContext, define_tool
from kode.agent import (
    Agent,
    AgentError,
    AgentTemplate,
    ApprovalRequired,
    Done,
    TextDelta,
    ToolEnd,
)
from kode.agent.run import AgentRun
from kode.models import (
    Message,
    ModelEvent,
    ModelRequest,
    ModelResponse,
    TextContent,
    tool_use,
)
from kode.models import TextDelta as ModelTextDelta
from kode.registries import ToolRegistry

pytestmark = pytest.mark.anyio

CANCELLED = "Tool '{}' was cancelled: the run was interrupted before it finished."


# --- how many at once --------------------------------------------------------------------------


@pytest.mark.parametrize(("limit", "calls", "peak"), [(2, 6, 2), (3, 3, 3), (8, 6, 6), (1, 4, 1)])
async def test_calls_run_concurrently_up_to_max_concurrent_tools(
    reg: ToolRegistry, limit: int, calls: int, peak: int
) -> None:
    active = 0
    seen: list[int] = []

    @define_tool(registry=reg, kind="read")
    async def probe(i: int) -> int:
        """Hold a slot for a few checkpoints.

        Args:
            i: The call's number.
        """
        nonlocal active
        active += 1
        seen.append(active)
        for _ in range(5):
            await anyio.lowlevel.checkpoint()
        active -= 1
        return i

    turn = [tool_use("probe", {"i": i}) for i in range(calls)]
    agent, model = make_agent(reg, [turn, "ok"], max_concurrent_tools=limit)
    await agent.send("go")
    assert max(seen) == peak
    assert texts(sent_results(model)) == [(str(i), False) for i in range(calls)]


async def test_read_only_calls_really_overlap(reg: ToolRegistry) -> None:
    arrived = 0
    everyone = anyio.Event()

    @define_tool(registry=reg, kind="search")
    async def meet(i: int) -> str:
        """Wait until all four calls have started (deadlocks if they run one by one).

        Args:
            i: The call's number.
        """
        nonlocal arrived
        arrived += 1
        if arrived == 4:
            everyone.set()
        await everyone.wait()
        return f"met {i}"

    agent, model = make_agent(reg, [[tool_use("meet", {"i": i}) for i in range(4)], "ok"])
    with anyio.fail_after(5):
        await agent.send("go")
    assert texts(sent_results(model)) == [(f"met {i}", False) for i in range(4)]


async def test_mutating_calls_run_one_at_a_time_in_call_order(reg: ToolRegistry) -> None:
    log: list[str] = []
    read_ran = anyio.Event()

    @define_tool(registry=reg, kind="edit")
    async def edit(i: int) -> str:
        """Edit something.

        Args:
            i: The call's number.
        """
        log.append(f"start {i}")
        if i == 0:
            await read_ran.wait()  # a read call runs while the first edit does
        for _ in range(5):
            await anyio.lowlevel.checkpoint()
        log.append(f"end {i}")
        return f"edited {i}"

    @define_tool(registry=reg, kind="execute")
    async def run(i: int) -> str:
        """Run something (mutating too).

        Args:
            i: The call's number.
        """
        log.append(f"start {i}")
        await anyio.lowlevel.checkpoint()
        log.append(f"end {i}")
        return f"ran {i}"

    @define_tool(registry=reg, kind="read")
    async def look(i: int) -> str:
        """Look at something.

        Args:
            i: The call's number.
        """
        read_ran.set()
        return f"looked {i}"

    turn = [
        tool_use("edit", {"i": 0}),
        tool_use("look", {"i": 9}),
        tool_use("run", {"i": 1}),
        tool_use("edit", {"i": 2}),
        tool_use("look", {"i": 8}),
        tool_use("run", {"i": 3}),
    ]
    agent, model = make_agent(reg, [turn, "ok"])
    with anyio.fail_after(5):
        await agent.send("go")
    assert log == [f"{what} {i}" for i in range(4) for what in ("start", "end")]
    assert [t for t, _ in texts(sent_results(model))] == [
        "edited 0",
        "looked 9",
        "ran 1",
        "edited 2",
        "looked 8",
        "ran 3",
    ]


async def test_a_failed_mutating_call_does_not_block_the_next(reg: ToolRegistry) -> None:
    @define_tool(registry=reg, kind="delete")
    def remove(path: str) -> str:
        """Remove a file.

        Args:
            path: The file.
        """
        if path == "bad":
            raise OSError("busy")
        return f"removed {path}"

    turn = [
        tool_use("remove", {"path": "bad"}),
        tool_use("remove", {"nope": 1}),
        tool_use("remove", {"path": "ok"}),
    ]
    agent, model = make_agent(reg, [turn, "ok"])
    with anyio.fail_after(5):
        await agent.send("go")
    assert [e for _, e in texts(sent_results(model))] == [True, True, False]


# --- interrupt ---------------------------------------------------------------------------------


async def test_interrupt_cancels_running_tools_and_answers_every_call(reg: ToolRegistry) -> None:
    async_started = anyio.Event()
    thread_started = anyio.Event()
    fast_done = anyio.Event()
    thread_finished = threading.Event()
    flags: dict[str, bool] = {}

    @define_tool(registry=reg, kind="read")
    async def fast() -> str:
        """Finishes at once."""
        return "fast"

    @define_tool(registry=reg, kind="read")
    async def hang() -> str:
        """Never finishes."""
        async_started.set()
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            flags["hang cancelled"] = True
            raise
        return "never"

    @define_tool(registry=reg, kind="read")
    def spin(ctx: ToolContext) -> str:
        """Loops in a worker thread until cancelled."""
        anyio.from_thread.run_sync(thread_started.set)
        while not ctx.cancelled:
            time.sleep(0.002)
        flags["spin saw ctx.cancelled"] = True
        thread_finished.set()
        return "stopped"

    @define_tool(registry=reg, kind="edit")
    async def later() -> str:
        """A mutating call queued behind another."""
        return "later"

    @define_tool(registry=reg, kind="edit")
    async def first_edit() -> str:
        """A mutating call that waits forever."""
        await anyio.sleep_forever()
        return "never"

    turn = [
        tool_use("fast", id="c1"),
        tool_use("hang", id="c2"),
        tool_use("spin", id="c3"),
        tool_use("first_edit", id="c4"),
        tool_use("later", id="c5"),
    ]
    agent, model = make_agent(reg, [turn, "after"])
    box: list[Any] = []

    def on_event(event: Any) -> None:
        if isinstance(event, ToolEnd) and event.call_id == "c1":
            fast_done.set()

    async def run() -> None:
        box.append(await agent.send("go", on_event=on_event))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            await async_started.wait()
            await thread_started.wait()
            await fast_done.wait()
            agent.interrupt()
        await anyio.to_thread.run_sync(thread_finished.wait)

    (reply,) = box
    assert reply.interrupted
    assert flags == {"hang cancelled": True, "spin saw ctx.cancelled": True}
    results = agent.messages[-1].content
    assert texts(results) == [  # type: ignore[arg-type]
        ("fast", False),
        (CANCELLED.format("hang"), True),
        (CANCELLED.format("spin"), True),
        (CANCELLED.format("first_edit"), True),
        (CANCELLED.format("later"), True),
    ]
    statuses = [(r.id, r.status, r.error_type) for r in agent.state.tool_calls]
    assert statuses == [
        ("c1", "done", None),
        ("c2", "cancelled", "cancelled"),
        ("c3", "cancelled", "cancelled"),
        ("c4", "cancelled", "cancelled"),
        ("c5", "cancelled", "cancelled"),
    ]
    assert agent.status == "idle"
    assert_history_valid(agent.messages)

    # the next send works, and the prompt joins the results (roles keep alternating)
    with anyio.fail_after(5):
        again = await agent.send("carry on")
    assert again.text == "after"
    last = model.requests[-1].messages[-1]
    assert last.content == [*results, TextContent(text="carry on")]
    assert_history_valid(agent.messages)


async def test_interrupt_while_waiting_for_approval(reg: ToolRegistry) -> None:
    @define_tool(registry=reg, kind="execute")
    def shell(command: str) -> str:
        """Run a command.

        Args:
            command: The command.
        """
        return "ran"

    agent, _ = make_agent(
        reg, [[tool_use("shell", {"command": "ls"}, id="s1")]], permission={"mode": "approval"}
    )
    events: list[Any] = []
    with anyio.fail_after(5):
        async for event in agent.stream("go"):
            events.append(event)
            if isinstance(event, ApprovalRequired):
                agent.interrupt()
    assert events[-1] == Done(text="", usage=events[-1].usage, turns=1, interrupted=True)
    assert texts(agent.messages[-1].content) == [(CANCELLED.format("shell"), True)]  # type: ignore[arg-type]
    assert agent.state.tool_calls[0].status == "cancelled"
    assert_history_valid(agent.messages)


class HangingModel:
    """Streams a little text, then hangs on its first request; answers later ones."""

    name = "hanging"

    def __init__(self, *, hang_after_response: bool = False) -> None:
        self.requests: list[ModelRequest] = []
        self.hang_after_response = hang_after_response
        self.agent: Agent | None = None

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        self.requests.append(request)
        if len(self.requests) == 1:
            yield ModelTextDelta(text="partial ")
            if self.hang_after_response:
                # the response arrived, then the interrupt lands while the stream closes
                yield ModelResponse(
                    message=Message(role="assistant", content=[tool_use("x", id="lost")]),
                    stop_reason="tool_use",
                )
                assert self.agent is not None
                self.agent.interrupt()
            await anyio.sleep_forever()
        yield ModelResponse(
            message=Message(role="assistant", content=[TextContent(text="fine")]),
            stop_reason="end_turn",
        )


@pytest.mark.parametrize("hang_after_response", [False, True])
async def test_interrupt_while_the_model_streams(
    reg: ToolRegistry, hang_after_response: bool
) -> None:
    model = HangingModel(hang_after_response=hang_after_response)
    agent = Agent.create(AgentTemplate(id="t"), model=model, registry=reg)
    model.agent = agent
    events: list[Any] = []
    with anyio.fail_after(5):
        async for event in agent.stream("first"):
            events.append(event)
            if isinstance(event, TextDelta):
                agent.interrupt()
    assert [e.type for e in events] == ["text_delta", "done"]
    assert events[-1].interrupted and events[-1].text == ""
    assert agent.messages == [Message.user("first")]
    assert agent.state.tool_calls == []

    reply = await agent.send("second")
    assert reply.text == "fine"
    assert model.requests[-1].messages == [
        Message(role="user", content=[TextContent(text="first"), TextContent(text="second")])
    ]
    assert_history_valid(agent.messages)


async def test_interrupt_from_another_thread(reg: ToolRegistry) -> None:
    started = threading.Event()

    @define_tool(registry=reg, kind="read")
    async def hang() -> str:
        """Never finishes."""
        started.set()
        await anyio.sleep_forever()
        return "never"

    agent, _ = make_agent(reg, [[tool_use("hang", id="h1")], "next"])

    def interrupter() -> None:
        assert started.wait(5)
        agent.interrupt()  # a UI thread, say: handed to the agent's event loop

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(anyio.to_thread.run_sync, interrupter)
            reply = await agent.send("go")
    assert reply.interrupted
    assert agent.state.tool_calls[0].status == "cancelled"
    assert_history_valid(agent.messages)


async def test_decide_from_another_thread(reg: ToolRegistry) -> None:
    @define_tool(registry=reg, kind="edit")
    async def write(text: str) -> str:
        """Write.

        Args:
            text: What to write.
        """
        return f"wrote {text}"

    agent, model = make_agent(
        reg, [[tool_use("write", {"text": "x"})], "ok"], permission={"mode": "approval"}
    )
    asked = threading.Event()
    call_ids: list[str] = []

    def on_event(event: Any) -> None:
        if isinstance(event, ApprovalRequired):
            call_ids.append(event.call_id)
            asked.set()

    def approver_thread() -> None:
        assert asked.wait(5)
        agent.decide(call_ids[0], "allow")

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(anyio.to_thread.run_sync, approver_thread)
            reply = await agent.send("go", on_event=on_event)
    assert reply.text == "ok"
    assert texts(sent_results(model)) == [("wrote x", False)]


async def test_an_interrupt_before_the_run_opens_its_scope_is_kept(reg: ToolRegistry) -> None:
    agent, model = make_agent(reg, ["never sent"])
    events: list[Any] = []
    run = AgentRun(agent, events.append, interactive=True)

    # The moment between "the run has started" and "its cancel scope is open" is reached
    # here by calling interrupt() at the start of the loop itself.
    original = run._loop

    async def loop_after_interrupt(prompt: Any) -> Any:
        agent.interrupt()  # the run is the agent's current one; its scope is not open yet
        return await original(prompt)

    run._loop = loop_after_interrupt  # type: ignore[method-assign]
    with anyio.fail_after(5):
        await agent.execute(run, "go")
    assert isinstance(events[-1], Done) and events[-1].interrupted
    assert model.requests == []  # the model was never asked


async def test_interrupt_when_idle_does_nothing(reg: ToolRegistry) -> None:
    agent, _ = make_agent(reg, ["hello"])
    agent.interrupt()
    assert (await agent.send("hi")).text == "hello"


# --- cancelled from outside ----------------------------------------------------------------------


@pytest.fixture
def hanging(reg: ToolRegistry) -> tuple[ToolRegistry, anyio.Event]:
    started = anyio.Event()

    @define_tool(registry=reg, kind="read")
    async def hang() -> str:
        """Never finishes."""
        started.set()
        await anyio.sleep_forever()
        return "never"

    @define_tool(registry=reg, kind="read")
    async def quick() -> str:
        """Finishes at once."""
        return "quick"

    return reg, started


TWO = [tool_use("quick", id="q1"), tool_use("hang", id="h1")]


async def test_a_cancelled_send_leaves_a_valid_history(
    hanging: tuple[ToolRegistry, anyio.Event],
) -> None:
    reg, started = hanging
    agent, _ = make_agent(reg, [TWO, "next"])
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:  # e.g. a timeout around send()
            tg.start_soon(agent.send, "go")
            await started.wait()
            tg.cancel_scope.cancel()
    assert agent.status == "idle"
    assert texts(agent.messages[-1].content) == [  # type: ignore[arg-type]
        ("quick", False),
        (CANCELLED.format("hang"), True),
    ]
    assert_history_valid(agent.messages)
    assert (await agent.send("again")).text == "next"
    assert_history_valid(agent.messages)


async def test_a_stream_closed_early_leaves_a_valid_history(
    hanging: tuple[ToolRegistry, anyio.Event],
) -> None:
    from contextlib import aclosing

    reg, _ = hanging
    agent, _ = make_agent(reg, [TWO, "next"])
    with anyio.fail_after(5):
        async with aclosing(agent.stream("go")) as events:
            async for event in events:
                if event.type == "tool_start" and event.name == "hang":
                    break
    assert agent.status == "idle"
    assert [r.status for r in agent.state.tool_calls] == ["done", "cancelled"]
    assert_history_valid(agent.messages)
    assert (await agent.send("again")).text == "next"


async def test_an_on_event_callback_that_raises(
    hanging: tuple[ToolRegistry, anyio.Event],
) -> None:
    reg, _ = hanging
    agent, _ = make_agent(reg, [[tool_use("quick", id="q1")], "next"])

    def on_event(event: Any) -> None:
        if event.type == "turn_end":
            raise KeyError("listener bug")

    with pytest.raises(KeyError, match="listener bug"):
        await agent.send("go", on_event=on_event)
    assert agent.status == "failed"
    assert texts(agent.messages[-1].content) == [(CANCELLED.format("quick"), True)]  # type: ignore[arg-type]
    assert_history_valid(agent.messages)
    assert (await agent.send("again")).text == "next"


async def test_a_run_is_carried_out_once_and_by_its_own_agent(reg: ToolRegistry) -> None:
    agent, _ = make_agent(reg, ["one", "two"])
    other, _ = make_agent(reg, ["x"])
    events: list[Any] = []
    run = AgentRun(agent, events.append, interactive=False)
    with pytest.raises(AgentError, match="it was made for another agent"):
        await other.execute(run, "go")
    done = await agent.execute(run, "go")
    assert isinstance(done, Done) and done.text == "one"
    with pytest.raises(AgentError, match="it has run"):
        await agent.execute(run, "again")
    assert (await agent.send("again")).text == "two"
