"""What the agent loop costs on top of running the tools it calls.

Run ``python bench/agent_loop.py`` (``--quick`` for fewer rounds, ``--json`` for
machine-readable output, ``--check`` to exit 1 when a target is missed). The model is a
`ScriptedModel`, so there is no network and no provider: what is measured is the loop itself
(request, model events, pipeline, events, records, history).

A tool turn is measured as a difference inside each round: ``agent.send`` for the script
[tool_use turn, final text] minus ``agent.send`` for the script [final text] alone, each on
fresh agents. What remains is exactly one model turn with its tool calls, through to the
``tool_result`` message in the history. Its baseline is the same tool run without an agent, in
the same process, alternating round by round as in ``bench/overhead.py`` (whose measuring
helpers and tool this script reuses). See ``bench/README.md`` for what each row measures.

No network, no pytest: a plain script.
"""

from __future__ import annotations

import argparse
import functools
import json
import platform
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import pydantic

sys.path.insert(0, str(Path(__file__).resolve().parent))

from overhead import (  # the sibling script, found through the path set above
    ARGS,
    EXPECTED,
    ORDER_EXPECTED,
    ORDER_INPUT,
    ORDER_ITEMS,
    Row,
    pair_async,
    place_order,
    place_order_slow,
    print_table,
    ratio_row,
    search_files_async,
    search_files_slow,
)

from kode import Agent, AgentTemplate, define_tool
from kode.models import ScriptedModel, tool_use
from kode.models.messages import Message, TextContent, ToolResultContent, ToolUseContent
from kode.registries.tool_registry import ToolRegistry
from kode.tools.core import Tool

PARALLEL = 100
PARALLEL_LARGE = 1000
TURNS = 50
HISTORY_TURNS = 50
BASE_REPEAT = 20
FINAL = Message(role="assistant", content=[TextContent(text="Done.")])

ClockFunc = Callable[[], int]
# The round trip is pure CPU work in the event loop's thread (an async tool, a scripted
# model): its CPU time is its wall time on an idle machine, and on a shared one it leaves out
# the time slices other processes take. The parallel figure is about waiting, so wall time.
CPU_CLOCK: ClockFunc = time.thread_time_ns
WALL_CLOCK: ClockFunc = time.perf_counter_ns


def _tool_turn(name: str, count: int, args: dict[str, Any] = ARGS) -> Message:
    """The assistant message asking for `count` calls of `name` with `args`."""
    return Message(
        role="assistant",
        content=[tool_use(name, dict(args), id=f"toolu_{i:03d}") for i in range(count)],
    )


def _history(turns: int) -> list[Message]:
    """A conversation of `turns` earlier tool turns (prompt, call, result, answer each)."""
    messages: list[Message] = []
    for k in range(turns):
        call = tool_use("search_files_async", dict(ARGS), id=f"old_{k:03d}")
        messages += [
            Message(role="user", content=[TextContent(text=f"Question {k}: where are the files?")]),
            Message(role="assistant", content=[call]),
            Message(
                role="user",
                content=[
                    ToolResultContent(tool_use_id=call.id, content=[TextContent(text=EXPECTED)])
                ],
            ),
            Message(role="assistant", content=[TextContent(text=f"Answer {k}: in src.")]),
        ]
    return messages


class _Subject:
    """Fresh agents for one tool turn: `send` with and without the tool turn in the script."""

    def __init__(
        self,
        tool: Tool[..., Any],
        registry: ToolRegistry,
        count: int,
        clock: ClockFunc,
        *,
        args: dict[str, Any] = ARGS,
        expected: str = EXPECTED,
        history: list[Message] | None = None,
    ) -> None:
        self.template = AgentTemplate(
            id=f"bench_{tool.name}",
            tools=[tool.name],
            # The default (8) queues the calls behind one another: a limit, not overhead.
            max_concurrent_tools=max(count, 1),
        )
        self.registry = registry
        self.turn = _tool_turn(tool.name, count, args)
        self.count = count
        self.clock = clock
        self.expected = expected
        self.history = history or []
        self.sends: list[float] = []
        """Per round: one whole `send` with the tool turn (for the information row)."""

    def agents(self, n: int, *, with_tool_turn: bool) -> list[Agent]:
        script = [self.turn, FINAL] if with_tool_turn else [FINAL]
        agents = [
            Agent.create(self.template, model=ScriptedModel(script), registry=self.registry)
            for _ in range(n)
        ]
        for agent in agents:
            for message in self.history:
                agent.session.add_message(message)
        return agents

    def check(self, agent: Agent) -> None:
        """The history is [prompt, tool_use turn, its tool_result message, final text]."""
        messages = agent.messages[len(self.history) :]
        assert [m.role for m in messages] == ["user", "assistant", "user", "assistant"]
        results = messages[2].content
        assert len(results) == self.count, results
        for block, call in zip(results, self.turn.tool_uses, strict=True):
            assert isinstance(block, ToolResultContent), block
            assert block.tool_use_id == call.id and not block.is_error, block
            assert block.text == self.expected, block

    async def send_all(self, agents: list[Agent]) -> int:
        clock = self.clock
        t0 = clock()
        for agent in agents:
            await agent.send("Go.")
        return clock() - t0

    def tool_turn_batch(self) -> Callable[[int], Awaitable[int]]:
        """A batch timing `n` tool turns: `n` sends with it minus `n` sends without it."""
        flip = [False]

        async def batch(n: int) -> int:
            with_tool = self.agents(n, with_tool_turn=True)
            without = self.agents(n, with_tool_turn=False)
            flip[0] = not flip[0]
            if flip[0]:
                full = await self.send_all(with_tool)
                bare = await self.send_all(without)
            else:
                bare = await self.send_all(without)
                full = await self.send_all(with_tool)
            for agent in with_tool:
                self.check(agent)
            self.sends.append(full / n)
            return full - bare

        return batch


async def _bare_loop_send(tool: Tool[..., Any], script: list[Message]) -> list[Message]:
    """The least a loop can do for the same history, written by hand for the `floor` row.

    The same pydantic messages as an agent's history (the prompt, the model's turns, the
    ``tool_result`` message), validation and the call; no model stream, events, records,
    permissions, hooks or cancel scope.
    """
    messages = [Message(role="user", content=[TextContent(text="Go.")])]
    for reply in script:
        messages.append(reply)
        calls = [b for b in reply.content if isinstance(b, ToolUseContent)]
        if not calls:
            break
        blocks: list[Any] = []
        for call in calls:
            arguments = tool.validate(call.input)
            result = await tool.execute(arguments)
            blocks.append(
                ToolResultContent(
                    tool_use_id=call.id,
                    content=[TextContent(text=result.text)],
                    is_error=result.is_error,
                )
            )
        messages.append(Message(role="user", content=blocks))
    return messages


# --- the figures ---------------------------------------------------------------------------


async def bench_round_trip(rounds: int) -> list[Row]:
    registry = ToolRegistry()
    tool = define_tool(registry=registry)(search_files_async)
    subject = _Subject(tool, registry, 1, CPU_CLOCK)
    result = await tool.run(ARGS)
    assert not result.is_error and result.text == EXPECTED, result

    async def base(n: int) -> int:
        # Repeated so that both batches last about as long: a batch many times shorter than
        # the other is less often disturbed by the rest of the machine.
        run = tool.run
        t0 = CPU_CLOCK()
        for _ in range(n * BASE_REPEAT):
            await run(ARGS)
        return (CPU_CLOCK() - t0) // BASE_REPEAT

    async def floor(n: int) -> int:
        # The same difference as round_trip's, for the hand-written loop.
        with_tool, without = [subject.turn, FINAL], [FINAL]
        t0 = CPU_CLOCK()
        for _ in range(n):
            await _bare_loop_send(tool, with_tool)
        t1 = CPU_CLOCK()
        for _ in range(n):
            await _bare_loop_send(tool, without)
        return (t1 - t0) - (CPU_CLOCK() - t1)

    history = await _bare_loop_send(tool, [subject.turn, FINAL])
    assert [m.role for m in history] == ["user", "assistant", "user", "assistant"], history
    assert history[2].content[0].text == EXPECTED, history  # type: ignore[union-attr]

    n = 100
    k, b = await pair_async(subject.tool_turn_batch(), base, rounds=rounds, n=n)
    whole = statistics.median(subject.sends[2:])  # after pair_async's two warm-up rounds
    f, fb = await pair_async(floor, base, rounds=rounds, n=n)
    return [
        Row("round_trip", "await tool.run(args)", k, b, k / b, "(info)", None, rounds, n),
        Row("send_1_tool", "await tool.run(args)", whole, b, whole / b, "(info)", None, rounds, n),
        Row("floor", "await tool.run(args)", f, fb, f / fb, "(info)", None, rounds, n),
    ]


async def bench_common(rounds: int) -> list[Row]:
    """The common case in a tool turn (a model argument, a dict result) and a long history."""
    registry = ToolRegistry()
    order = define_tool(registry=registry)(place_order)
    search = define_tool(registry=registry)(search_files_async)
    expected = json.dumps(ORDER_EXPECTED, separators=(",", ":"))
    subject = _Subject(order, registry, 1, CPU_CLOCK, args=ORDER_INPUT, expected=expected)
    result = await order.run(ORDER_INPUT)
    assert not result.is_error and result.text == expected, result

    async def base(n: int) -> int:
        run = order.run
        t0 = CPU_CLOCK()
        for _ in range(n * BASE_REPEAT):
            await run(ORDER_INPUT)
        return (CPU_CLOCK() - t0) // BASE_REPEAT

    n = 100
    k, b = await pair_async(subject.tool_turn_batch(), base, rounds=rounds, n=n)
    rows = [Row("round_trip_dict", "await tool.run(args)", k, b, k / b, "(info)", None, rounds, n)]

    # The same tool turn at the end of a conversation of HISTORY_TURNS earlier tool turns,
    # next to the same turn in a fresh conversation: what a long history adds to a turn.
    fresh = _Subject(search, registry, 1, CPU_CLOCK)
    long = _Subject(search, registry, 1, CPU_CLOCK, history=_history(HISTORY_TURNS))
    k, b = await pair_async(long.tool_turn_batch(), fresh.tool_turn_batch(), rounds=rounds, n=n)
    rows.append(
        Row(
            f"history_{4 * HISTORY_TURNS}",
            "the same tool turn in a new conversation",
            k,
            b,
            k / b,
            "(info)",
            None,
            rounds,
            n,
        )
    )
    return rows


async def bench_turns(rounds: int) -> Row:
    """A whole run of TURNS sequential tool turns, per turn, next to the bare calls."""
    registry = ToolRegistry()
    tool = define_tool(registry=registry)(search_files_async)
    template = AgentTemplate(id="bench_turns", tools=[tool.name], max_turns=TURNS + 5)
    script = [_tool_turn(tool.name, 1) for _ in range(TURNS)]
    for k, turn in enumerate(script):
        turn.content[0].id = f"toolu_t{k:03d}"  # type: ignore[union-attr]
    script.append(FINAL)

    async def kode(n: int) -> int:
        agents = [
            Agent.create(template, model=ScriptedModel(script), registry=registry) for _ in range(n)
        ]
        t0 = CPU_CLOCK()
        for agent in agents:
            await agent.send("Go.")
        took = CPU_CLOCK() - t0
        for agent in agents:
            assert len(agent.messages) == 2 * TURNS + 2, agent.messages
            assert agent.messages[-2].content[0].text == EXPECTED  # type: ignore[union-attr]
        return took // TURNS

    async def base(n: int) -> int:
        run = tool.run
        t0 = CPU_CLOCK()
        for _ in range(n * TURNS):
            await run(ARGS)
        return (CPU_CLOCK() - t0) // TURNS

    k, b = await pair_async(kode, base, rounds=rounds, n=4)
    return Row(
        f"turns_{TURNS}",
        f"{TURNS} x await tool.run(args)",
        k,
        b,
        k / b,
        "(info)",
        None,
        rounds,
        4,
    )


async def bench_parallel_1000(rounds: int) -> list[Row]:
    """One turn of 1000 calls of a common-case tool that sleeps 10 ms, next to bare fan-outs.

    The target row's baseline is the same 1000 ``tool.run`` in one task group (as
    ``parallel_100``'s): what the agent adds to the calls. The information row's is the bare
    function (arguments made beforehand, no validation, no result) in one task group.
    """
    registry = ToolRegistry()
    tool = define_tool(registry=registry)(place_order_slow)
    expected = json.dumps(ORDER_EXPECTED, separators=(",", ":"))
    subject = _Subject(
        tool, registry, PARALLEL_LARGE, WALL_CLOCK, args=ORDER_INPUT, expected=expected
    )
    bare = functools.partial(place_order_slow, "ada", ORDER_ITEMS, True)
    run = tool.run

    def fan_out(start: Callable[[anyio.abc.TaskGroup], None]) -> Callable[[int], Awaitable[int]]:
        async def batch(n: int) -> int:
            t0 = WALL_CLOCK()
            for _ in range(n):
                async with anyio.create_task_group() as tg:
                    start(tg)
            return WALL_CLOCK() - t0

        return batch

    def runs(tg: anyio.abc.TaskGroup) -> None:
        for _ in range(PARALLEL_LARGE):
            tg.start_soon(run, ORDER_INPUT)

    def bares(tg: anyio.abc.TaskGroup) -> None:
        for _ in range(PARALLEL_LARGE):
            tg.start_soon(bare)

    turn = subject.tool_turn_batch()
    k, b = await pair_async(turn, fan_out(runs), rounds=rounds, n=1)
    rows = [
        ratio_row(
            f"parallel_{PARALLEL_LARGE}",
            f"{PARALLEL_LARGE} tool.run in a task group",
            k,
            b,
            1.2,
            rounds,
            1,
        )
    ]
    k, b = await pair_async(turn, fan_out(bares), rounds=rounds, n=1)
    rows.append(
        Row(
            f"parallel_{PARALLEL_LARGE}_bare",
            f"{PARALLEL_LARGE} bare calls in a task group",
            k,
            b,
            k / b,
            "(info)",
            None,
            rounds,
            1,
        )
    )
    return rows


async def bench_parallel(rounds: int) -> Row:
    registry = ToolRegistry()
    tool = define_tool(registry=registry)(search_files_slow)
    subject = _Subject(tool, registry, PARALLEL, WALL_CLOCK)

    async def base(n: int) -> int:
        t0 = WALL_CLOCK()
        for _ in range(n):
            async with anyio.create_task_group() as tg:
                for _ in range(PARALLEL):
                    tg.start_soon(tool.run, ARGS)
        return WALL_CLOCK() - t0

    k, b = await pair_async(subject.tool_turn_batch(), base, rounds=rounds, n=1)
    return ratio_row(
        f"parallel_{PARALLEL}", f"{PARALLEL} tool.run in a task group", k, b, 1.3, rounds, 1
    )


# --- output --------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds (noisier)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--check", action="store_true", help="exit 1 if a target is missed")
    parser.add_argument(
        "--only",
        action="append",
        help="run only these figures (round_trip, common, turns, parallel)",
    )
    opts = parser.parse_args(argv)
    scale = 0.25 if opts.quick else 1.0
    only = set(opts.only or ("round_trip", "common", "turns", "parallel"))

    def rounds(full: int) -> int:
        return max(5, int(full * scale))

    rows: list[Row] = []
    if "round_trip" in only:
        rows += anyio.run(bench_round_trip, rounds(60), backend="asyncio")
    if "common" in only:
        rows += anyio.run(bench_common, rounds(40), backend="asyncio")
    if "turns" in only:
        rows.append(anyio.run(bench_turns, rounds(40), backend="asyncio"))
    if "parallel" in only:
        rows.append(anyio.run(bench_parallel, rounds(60), backend="asyncio"))
        rows += anyio.run(bench_parallel_1000, rounds(20), backend="asyncio")

    if opts.json:
        env = {
            "python": platform.python_version(),
            "pydantic": pydantic.VERSION,
            "anyio_backend": "asyncio",
            "quick": opts.quick,
            "clocks": {
                "round_trip, round_trip_dict, history, turns": "thread CPU time",
                "parallel": "wall time",
            },
        }
        print(json.dumps({"environment": env, "rows": [asdict(r) for r in rows]}, indent=2))
    else:
        print(
            f"kode agent loop vs the bare tool calls (Python {platform.python_version()}, "
            "anyio/asyncio, ScriptedModel; medians, lower is better; round_trip in CPU time)"
        )
        print_table(rows)
    failed = [r.name for r in rows if r.passed is False]
    return 1 if opts.check and failed else 0


if __name__ == "__main__":
    sys.exit(main())
