"""kode's agent loop side by side with peer agent frameworks, on the same canned work.

Run ``python bench/peers.py`` (``--quick`` for fewer rounds, ``--json`` for machine-readable
output, ``--check`` to exit 1 when a target is missed, ``--no-peers`` for kode's rows alone).
Every framework runs the same work in the same process: a tool ``add(a: int, b: int)`` whose
arguments are validated, a model that asks for it and then answers ``"The sum is 5."``. The
model is canned in each framework's own way (kode's `ScriptedModel`, pydantic-ai's
`FunctionModel`, a `Model` subclass for the OpenAI Agents SDK, a `BaseChatModel` that binds
tools for LangGraph), so there is no network and no provider: what is measured is each loop.

A peer whose package is missing gets "not installed" rows and is skipped; kode's rows always
run. Install the peers with the ``bench`` extra (see ``bench/README.md``, section "Peers").

No network, no pytest: a plain script.
"""

from __future__ import annotations

import argparse
import gc
import importlib.metadata
import importlib.util
import json
import os
import platform
import statistics
import sys
import time
import warnings
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import anyio
import pydantic

PROMPT = "Go."
A, B = 2, 3
RESULT = A + B
ANSWER = f"The sum is {RESULT}."
TURNS = 50
PARALLEL = 100
NAP_MS = 10
WARMUP = 2
BATCH_NS = 25_000_000
"""Each subject's batch runs as many runs as fit in about this long (at least one), so that a
fast subject's batch is not many times shorter, and so less often disturbed, than a slow one's."""

RunFunc = Callable[[], Awaitable[Any]]
CheckFunc = Callable[[Any], None]
BatchFunc = Callable[[int], Awaitable[tuple[int, int]]]
"""Runs `n` operations; returns (process CPU ns, wall ns) for the whole batch."""


class _Calls:
    """How many times `add` ran, in every framework: the bench checks it after each batch."""

    count = 0


async def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first number.
        b: The second number.
    """
    _Calls.count += 1
    return a + b


def _call_id(k: int) -> str:
    return f"call_{k}"


def _next_turn(call_id: str) -> int:
    """The turn after the one whose tool call had `call_id`.

    Every canned peer model is stateless: it reads the number of the turn from the id of the
    last tool result, so one model object serves any number of runs, at O(1) per turn.
    """
    return int(call_id.rsplit("_", 1)[1]) + 1


def openai_agents_output(k: int, turns: int) -> list[Any]:
    """The OpenAI Agents SDK's canned model output for turn `k` of a run of `turns` tool calls.

    A call of ``add`` while ``k < turns``, then the final answer.
    """
    from openai.types.responses import (
        ResponseFunctionToolCall,
        ResponseOutputMessage,
        ResponseOutputText,
    )

    if k < turns:
        call = ResponseFunctionToolCall(
            type="function_call",
            id=f"fc_{k}",
            call_id=_call_id(k),
            name="add",
            arguments=json.dumps({"a": A, "b": B}),
            status="completed",
        )
        return [call]
    text = ResponseOutputText(type="output_text", text=ANSWER, annotations=[])
    message = ResponseOutputMessage(
        type="message", id="msg_final", role="assistant", status="completed", content=[text]
    )
    return [message]


@dataclass(kw_only=True, frozen=True, slots=True)
class Subject:
    """One framework set up for one figure: `run` does a whole run, `check` verifies it."""

    name: str
    label: str
    run: RunFunc
    check: CheckFunc


# --- the frameworks ------------------------------------------------------------------------


def kode_subject(turns: int) -> Subject:
    """kode: a fresh `Agent` with a `ScriptedModel` per run (both made inside the run)."""
    from kode import Agent, AgentTemplate, define_tool
    from kode.models import ScriptedModel, tool_use
    from kode.models.messages import Message, TextContent, ToolResultContent
    from kode.registries.tool_registry import ToolRegistry

    registry = ToolRegistry()
    define_tool(registry=registry)(add)
    template = AgentTemplate(id="bench_peers", tools=["add"], max_turns=turns + 5)
    script = [
        Message(role="assistant", content=[tool_use("add", {"a": A, "b": B}, id=_call_id(k))])
        for k in range(turns)
    ]
    script.append(Message(role="assistant", content=[TextContent(text=ANSWER)]))

    async def run() -> Any:
        agent = Agent.create(template, model=ScriptedModel(script), registry=registry)
        reply = await agent.send(PROMPT)
        return agent, reply

    def check(outcome: Any) -> None:
        agent, reply = outcome
        assert reply.text == ANSWER, reply.text
        roles = [m.role for m in agent.messages]
        assert roles == ["user", *["assistant", "user"] * turns, "assistant"], roles
        for k in range(turns):
            (block,) = agent.messages[2 + 2 * k].content
            assert isinstance(block, ToolResultContent), block
            assert block.tool_use_id == _call_id(k) and not block.is_error, block
            assert block.text == str(RESULT), block

    return Subject(name="kode", label="kode, ScriptedModel", run=run, check=check)


def pydantic_ai_subject(turns: int) -> Subject:
    """pydantic-ai: one `Agent` with a `FunctionModel`; a run is `agent.run`."""
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.usage import UsageLimits

    # An async function: a plain one would be run in a worker thread for every request.
    async def model(messages: list[Any], info: AgentInfo) -> ModelResponse:
        k = 0
        part = messages[-1].parts[-1]
        if isinstance(part, ToolReturnPart):
            assert part.content == RESULT, part
            k = _next_turn(part.tool_call_id)
        if k < turns:
            return ModelResponse(
                parts=[ToolCallPart("add", {"a": A, "b": B}, tool_call_id=_call_id(k))]
            )
        return ModelResponse(parts=[TextPart(ANSWER)])

    agent = Agent(FunctionModel(model), tools=[add])
    # The default request limit (50) would stop the 50-turn run one request short.
    limits = UsageLimits(request_limit=turns + 5)

    async def run() -> Any:
        return await agent.run(PROMPT, usage_limits=limits)

    def check(result: Any) -> None:
        assert result.output == ANSWER, result.output
        messages = result.all_messages()
        assert len(messages) == 2 + 2 * turns, messages
        returns = [p for m in messages for p in m.parts if isinstance(p, ToolReturnPart)]
        assert [p.content for p in returns] == [RESULT] * turns, returns

    version = _version("pydantic-ai-slim", "pydantic-ai")
    return Subject(
        name="pydantic-ai", label=f"pydantic-ai {version}, FunctionModel", run=run, check=check
    )


def openai_agents_subject(turns: int) -> Subject:
    """The OpenAI Agents SDK: one `Agent` with a canned `Model`; a run is `Runner.run`."""
    from agents import Agent, Runner, function_tool, set_tracing_disabled
    from agents.items import ModelResponse, ToolCallOutputItem
    from agents.models.interface import Model
    from agents.usage import Usage

    set_tracing_disabled(True)

    class CannedModel(Model):
        async def get_response(
            self,
            system_instructions: Any,
            input: Any,
            model_settings: Any,
            tools: Any,
            output_schema: Any,
            handoffs: Any,
            tracing: Any,
            *,
            previous_response_id: Any,
            conversation_id: Any,
            prompt: Any,
        ) -> ModelResponse:
            k = 0
            last = input[-1] if isinstance(input, list) else None
            if isinstance(last, dict) and last.get("type") == "function_call_output":
                assert last["output"] == str(RESULT), last
                k = _next_turn(last["call_id"])
            return ModelResponse(
                output=openai_agents_output(k, turns), usage=Usage(), response_id=None
            )

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError("the bench does not stream")

    agent = Agent(name="bench", model=CannedModel(), tools=[function_tool(add)])

    async def run() -> Any:
        return await Runner.run(agent, PROMPT, max_turns=turns + 5)

    def check(result: Any) -> None:
        assert result.final_output == ANSWER, result.final_output
        outputs = [i.output for i in result.new_items if isinstance(i, ToolCallOutputItem)]
        assert outputs == [RESULT] * turns, outputs

    version = _version("openai-agents")
    return Subject(
        name="openai-agents",
        label=f"openai-agents {version}, Model subclass",
        run=run,
        check=check,
    )


def langgraph_subject(turns: int) -> Subject:
    """LangGraph: one `create_react_agent` graph with a canned chat model; a run is `ainvoke`."""
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import AIMessage, ToolMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.tools import tool
    from langgraph.prebuilt import create_react_agent

    # No tracing: it would send runs over the network.
    for name in ("LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2", "LANGCHAIN_TRACING"):
        os.environ.pop(name, None)

    class CannedChatModel(BaseChatModel):
        @property
        def _llm_type(self) -> str:
            return "bench-canned"

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

        def _generate(self, *args: Any, **kwargs: Any) -> ChatResult:
            raise NotImplementedError("the bench runs the graph asynchronously")

        async def _agenerate(self, messages: list[Any], *args: Any, **kw: Any) -> ChatResult:
            k = 0
            last = messages[-1]
            if isinstance(last, ToolMessage):
                assert last.content == str(RESULT), last
                k = _next_turn(last.tool_call_id)
            if k < turns:
                call = {"name": "add", "args": {"a": A, "b": B}, "id": _call_id(k)}
                message = AIMessage(content="", tool_calls=[{**call, "type": "tool_call"}])
            else:
                message = AIMessage(content=ANSWER)
            return ChatResult(generations=[ChatGeneration(message=message)])

    with warnings.catch_warnings():
        # Deprecated in LangGraph 1.0 in favour of `langchain.agents.create_agent`; still the
        # prebuilt agent of langgraph itself.
        warnings.simplefilter("ignore")
        graph = create_react_agent(CannedChatModel(), [tool(add)])
    config: Any = {"recursion_limit": 2 * turns + 10}

    async def run() -> Any:
        return await graph.ainvoke({"messages": [("user", PROMPT)]}, config)

    def check(result: Any) -> None:
        messages = result["messages"]
        assert messages[-1].content == ANSWER, messages[-1]
        assert len(messages) == 2 + 2 * turns, messages
        tools = [m for m in messages if isinstance(m, ToolMessage)]
        assert [(m.content, m.status) for m in tools] == [(str(RESULT), "success")] * turns

    version = _version("langgraph")
    return Subject(
        name="langgraph",
        label=f"langgraph {version}, create_react_agent",
        run=run,
        check=check,
    )


@dataclass(kw_only=True, frozen=True, slots=True)
class Peer:
    name: str
    modules: tuple[str, ...]
    """Top-level modules that must all be importable."""
    setup: Callable[[int], Subject]


PEERS = (
    Peer(name="pydantic-ai", modules=("pydantic_ai",), setup=pydantic_ai_subject),
    Peer(name="openai-agents", modules=("agents", "openai"), setup=openai_agents_subject),
    Peer(name="langgraph", modules=("langgraph", "langchain_core"), setup=langgraph_subject),
)


def installed(peer: Peer) -> bool:
    """Whether the peer's packages can be imported (found, without importing them)."""
    return all(importlib.util.find_spec(module) is not None for module in peer.modules)


def _version(*dists: str) -> str:
    for dist in dists:
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return "?"


# --- measuring -----------------------------------------------------------------------------


def _subject_batch(subject: Subject, turns: int) -> BatchFunc:
    async def batch(n: int) -> tuple[int, int]:
        run = subject.run
        calls = _Calls.count
        outcomes = []
        c0, w0 = time.process_time_ns(), time.perf_counter_ns()
        for _ in range(n):
            outcomes.append(await run())
        wall, cpu = time.perf_counter_ns() - w0, time.process_time_ns() - c0
        assert _Calls.count - calls == n * turns, (subject.name, _Calls.count - calls)
        for outcome in outcomes:
            subject.check(outcome)
        return cpu, wall

    return batch


async def _calibrate(batch: BatchFunc, clock: int) -> int:
    """How many operations fill a batch of about `BATCH_NS` (after one warm-up call)."""
    await batch(1)
    one = min([(await batch(1))[clock] for _ in range(3)])
    return max(1, min(500, round(BATCH_NS / max(one, 1))))


async def interleave(
    batches: dict[str, BatchFunc], *, rounds: int, clock: int
) -> dict[str, dict[str, float]]:
    """Run every subject's batches in turn, round by round; median ns per operation.

    The starting subject moves on by one each round, so no subject is always first. The
    garbage collector is paused inside a batch and run between batches. `clock` picks what `n`
    is calibrated on: 0 CPU time, 1 wall time.
    """
    sizes = {name: await _calibrate(batch, clock) for name, batch in batches.items()}
    names = list(batches)
    for _ in range(WARMUP):
        for name in names:
            await batches[name](sizes[name])
    cpu: dict[str, list[float]] = {name: [] for name in names}
    wall: dict[str, list[float]] = {name: [] for name in names}
    # With the peers' modules loaded a full collection takes 0.1-0.2 s; frozen, what was
    # there before the rounds is no longer scanned, and a collection between batches only
    # sees what the previous batch left.
    gc.collect()
    gc.freeze()
    try:
        for i in range(rounds):
            start = i % len(names)
            for name in names[start:] + names[:start]:
                n = sizes[name]
                gc.collect()
                gc.disable()
                try:
                    c, w = await batches[name](n)
                finally:
                    gc.enable()
                cpu[name].append(c / n)
                wall[name].append(w / n)
    finally:
        gc.unfreeze()
    return {
        name: {
            "cpu_ns": statistics.median(cpu[name]),
            "wall_ns": statistics.median(wall[name]),
            "per_batch": sizes[name],
        }
        for name in names
    }


@dataclass
class Row:
    figure: str
    other: str
    """What kode is compared with: a peer and its version, or the baseline."""
    kode_ns: float
    other_ns: float | None
    """None when the peer is not installed."""
    ratio: float | None
    """kode's time over the other's: below 1 when kode is faster."""
    target: str
    passed: bool | None
    kode_wall_ns: float
    other_wall_ns: float | None
    rounds: int


async def bench_runs(figure: str, turns: int, rounds: int, peers: Sequence[Peer]) -> list[Row]:
    """One whole run with `turns` tool round trips, in kode and in each installed peer."""
    subjects = [kode_subject(turns)]
    missing: list[str] = []
    for peer in peers:
        if installed(peer):
            subjects.append(peer.setup(turns))
        else:
            missing.append(peer.name)
    batches = {s.name: _subject_batch(s, turns) for s in subjects}
    medians = await interleave(batches, rounds=rounds, clock=0)
    kode = medians["kode"]
    k, kw = kode["cpu_ns"], kode["wall_ns"]
    rows = [Row(figure, subjects[0].label, k, None, None, "(info)", None, kw, None, rounds)]
    timed = [s for s in subjects if s.name != "kode"]
    fastest = min(timed, key=lambda s: medians[s.name]["cpu_ns"], default=None)
    for s in timed:
        p = medians[s.name]
        ratio = k / p["cpu_ns"]
        is_target = s is fastest
        target = "<= 0.1x (fastest)" if is_target else "(info)"
        passed = ratio <= 0.1 if is_target else None
        rows.append(
            Row(figure, s.label, k, p["cpu_ns"], ratio, target, passed, kw, p["wall_ns"], rounds)
        )
    for name in missing:
        rows.append(
            Row(figure, f"{name}: not installed", k, None, None, "-", None, kw, None, rounds)
        )
    return rows


async def bench_parallel(rounds: int) -> Row:
    """kode: one turn of 100 calls of a tool sleeping 10 ms vs 100 bare sleeps in a task group.

    The turn is measured as in ``agent_loop.py``: a `send` whose script is [the turn with 100
    ``tool_use``, the answer] minus a `send` whose script is [the answer] alone, on fresh
    agents, in wall time (the figure is about waiting).
    """
    from kode import Agent, AgentTemplate, define_tool
    from kode.models import ScriptedModel, tool_use
    from kode.models.messages import Message, TextContent, ToolResultContent
    from kode.registries.tool_registry import ToolRegistry

    async def nap(ms: int) -> int:
        """Sleep, then return how long.

        Args:
            ms: How long to sleep, in milliseconds.
        """
        await anyio.sleep(ms / 1000)
        return ms

    registry = ToolRegistry()
    define_tool(registry=registry)(nap)
    # The default limit (8) would queue the calls behind one another: a limit, not overhead.
    template = AgentTemplate(id="bench_parallel", tools=["nap"], max_concurrent_tools=PARALLEL)
    calls: list[Any] = [tool_use("nap", {"ms": NAP_MS}, id=_call_id(i)) for i in range(PARALLEL)]
    turn = Message(role="assistant", content=calls)
    final = Message(role="assistant", content=[TextContent(text=ANSWER)])

    def agents(n: int, script: list[Message]) -> list[Any]:
        return [
            Agent.create(template, model=ScriptedModel(script), registry=registry) for _ in range(n)
        ]

    async def send_all(batch: list[Any]) -> int:
        t0 = time.perf_counter_ns()
        for agent in batch:
            await agent.send(PROMPT)
        return time.perf_counter_ns() - t0

    flip = [False]

    async def kode(n: int) -> tuple[int, int]:
        full_agents, bare_agents = agents(n, [turn, final]), agents(n, [final])
        flip[0] = not flip[0]
        if flip[0]:
            full = await send_all(full_agents)
            bare = await send_all(bare_agents)
        else:
            bare = await send_all(bare_agents)
            full = await send_all(full_agents)
        for agent in full_agents:
            results = agent.messages[2].content
            assert len(results) == PARALLEL, results
            for block in results:
                assert isinstance(block, ToolResultContent) and not block.is_error, block
                assert block.text == str(NAP_MS), block
        return 0, full - bare

    async def base(n: int) -> tuple[int, int]:
        t0 = time.perf_counter_ns()
        for _ in range(n):
            async with anyio.create_task_group() as tg:
                for _ in range(PARALLEL):
                    tg.start_soon(anyio.sleep, NAP_MS / 1000)
        return 0, time.perf_counter_ns() - t0

    medians = await interleave({"kode": kode, "base": base}, rounds=rounds, clock=1)
    k, b = medians["kode"]["wall_ns"], medians["base"]["wall_ns"]
    return Row(
        f"parallel_{PARALLEL}",
        f"{PARALLEL} anyio.sleep({NAP_MS / 1000:g}) in a task group",
        k,
        b,
        k / b,
        "<= 1.3x",
        k / b <= 1.3,
        k,
        b,
        rounds,
    )


# --- output --------------------------------------------------------------------------------


def _fmt_ns(ns: float | None) -> str:
    if ns is None:
        return "-"
    if ns >= 1e6:
        return f"{ns / 1e6:.2f} ms"
    return f"{ns / 1e3:.1f} us"


def _fmt_ratio(row: Row) -> str:
    if row.ratio is None:
        return "-"
    if row.figure.startswith("parallel"):
        return f"{row.ratio:.2f}x"
    return f"{row.ratio:.3f}x ({1 / row.ratio:.1f}x faster)"


def print_table(rows: list[Row]) -> None:
    header = ("figure", "kode", "other", "ratio", "target", "result", "other is")
    lines = [
        (
            r.figure,
            _fmt_ns(r.kode_ns),
            _fmt_ns(r.other_ns),
            _fmt_ratio(r),
            r.target,
            "-" if r.passed is None else ("pass" if r.passed else "FAIL"),
            r.other,
        )
        for r in rows
    ]
    widths = [max(len(str(x)) for x in col) for col in zip(header, *lines, strict=True)]
    for line in (header, tuple("-" * w for w in widths), *lines):
        print("  ".join(str(x).ljust(w) for x, w in zip(line, widths, strict=True)).rstrip())


FIGURES = ("run_1_tool", f"turns_{TURNS}", "parallel")


def measure(
    *, only: Sequence[str] = FIGURES, peers: Sequence[Peer] = PEERS, scale: float = 1.0
) -> list[Row]:
    """Every figure in `only`, comparing kode with `peers` (the installed ones are timed)."""

    def rounds(full: int) -> int:
        return max(5, int(full * scale))

    rows: list[Row] = []
    if "run_1_tool" in only:
        rows += anyio.run(bench_runs, "run_1_tool", 1, rounds(40), peers, backend="asyncio")
    if f"turns_{TURNS}" in only:
        rows += anyio.run(bench_runs, f"turns_{TURNS}", TURNS, rounds(20), peers, backend="asyncio")
    if "parallel" in only:
        rows.append(anyio.run(bench_parallel, rounds(40), backend="asyncio"))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds (noisier)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--check", action="store_true", help="exit 1 if a target is missed")
    parser.add_argument("--no-peers", action="store_true", help="kode's rows only")
    parser.add_argument("--only", action="append", choices=FIGURES, help="run only these figures")
    opts = parser.parse_args(argv)
    peers = () if opts.no_peers else PEERS
    rows = measure(only=opts.only or FIGURES, peers=peers, scale=0.25 if opts.quick else 1.0)

    if opts.json:
        env = {
            "python": platform.python_version(),
            "pydantic": pydantic.VERSION,
            "anyio_backend": "asyncio",
            "quick": opts.quick,
            "clocks": {"runs": "process CPU time", f"parallel_{PARALLEL}": "wall time"},
            "peers": {p.name: installed(p) for p in peers},
        }
        print(json.dumps({"environment": env, "rows": [asdict(r) for r in rows]}, indent=2))
    else:
        print(
            f"kode vs peer agent frameworks (Python {platform.python_version()}, "
            f"pydantic {pydantic.VERSION}, anyio/asyncio; medians per run, lower is better; "
            "runs in process CPU time; ratio = kode / other)"
        )
        print_table(rows)
    failed = [r.figure for r in rows if r.passed is False]
    return 1 if opts.check and failed else 0


if __name__ == "__main__":
    sys.exit(main())
