"""Agent runs with their sessions kept in SQLite: kode against in memory, and against peers.

Run ``python bench/session_runs.py`` (``--quick`` for fewer rounds and a shorter long
conversation, ``--json`` for machine-readable output, ``--check`` to exit 1 when a target is
missed, ``--no-peers`` for kode's rows alone, ``--caches`` for cold and warm round trips).
Every subject does the same canned work in this one process: a tool ``add(a: int, b: int)``
and a model that asks for it ``turns`` times, then answers ``"The sum is 5."`` (the canned
models of ``bench/peers.py``):

- ``round_trip``: one tool round trip (two model turns) per run;
- ``turns_50``: 50 tool round trips per run.

Each run is a new session (a new session id, thread id) in a store opened once; the subjects
take turns, one run each per round, so a change of load reaches them alike. The subjects:
kode with no store; kode with `MemoryStore`; kode with `SQLiteStore` (a file, WAL,
``synchronous`` NORMAL and FULL: FULL syncs each commit to disk); the OpenAI Agents SDK with
its ``SQLiteSession`` (a file); LangGraph's ``create_react_agent`` with ``AsyncSqliteSaver``
(``langgraph-checkpoint-sqlite``, a file). kode commits twice in a turn of one call
(write-ahead: the reply with the call's start, then its end with the results; each further
call of a turn adds its own), once for the prompt (which also creates the session and takes
its lease) and once for the final answer; closing releases the lease. The peers commit once
per item or per step.

The rounds keep one order, so kode's SQLite NORMAL row always runs right after LangGraph and
meets the CPU caches LangGraph left (as each peer meets those of the subject before it); the
other kode rows run after a kode row, with kode's code and data still cached. Compare kode's
rows with each other with ``--no-peers``; ``--caches`` adds ``round_trip_cold`` (each subject
timed right after the other library's subjects ran) and ``round_trip_warm`` (right after a
run of its own), the ratio there being the subject's time over kode's SQLite NORMAL.

Target: kode with SQLite (NORMAL) at least 10x faster per run than the faster of the two peers
with their SQLite persistence. A peer that is not installed (``pip install -e '.[bench]'``)
gets no row and no check.

``depth``: one conversation of 5,000 tool turns (1,000 with ``--quick``) with kode's SQLite
store: the median cost of turns 6-15 against that of the last 10 (target: within 1.3x), so a
turn's cost does not grow with the history.

No network, no pytest: a plain script.
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import json
import os
import platform
import statistics
import sys
import tempfile
import time
import uuid
import warnings
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peers import ANSWER, RESULT, A, B, _call_id, _next_turn, _version, add, openai_agents_output

PEER_TARGET = 10.0
DEPTH_TARGET = 1.3


@dataclass
class Row:
    figure: str
    subject: str
    median_ms: float
    ratio: float | None  # the subject's time over kode's with SQLite NORMAL
    target: str
    passed: bool | None


RunFunc = Callable[[int], Awaitable[None]]


# --- kode --------------------------------------------------------------------------------------


def kode_runner(store: Any) -> RunFunc:
    from kode import Agent, AgentTemplate, define_tool
    from kode.models import ScriptedModel, tool_use
    from kode.models.messages import Message, TextContent
    from kode.registries.tool_registry import ToolRegistry

    registry = ToolRegistry()
    define_tool(registry=registry)(add)
    template = AgentTemplate(id="bench_sessions", tools=["add"], max_turns=10_000)
    scripts: dict[int, list[Message]] = {}

    def script(turns: int) -> list[Message]:
        if turns not in scripts:
            scripts[turns] = [
                Message(
                    role="assistant", content=[tool_use("add", {"a": A, "b": B}, id=_call_id(k))]
                )
                for k in range(turns)
            ] + [Message(role="assistant", content=[TextContent(text=ANSWER)])]
        return scripts[turns]

    async def run(turns: int) -> None:
        agent = Agent.create(
            template,
            model=ScriptedModel(script(turns)),
            registry=registry,
            store=store,
            session_id=f"s_{uuid.uuid4().hex}",
        )
        reply = await agent.send("Go.")
        await agent.session.close()
        assert reply.text == ANSWER and len(agent.messages) == 2 + 2 * turns

    return run


async def kode_depth(store: Any, turns: int) -> tuple[float, float]:
    """Median seconds of turns 6-15 and of the last 10, in one conversation of `turns`."""
    from kode import Agent, AgentTemplate, define_tool
    from kode.agent import TurnEnd
    from kode.models import ScriptedModel, tool_use
    from kode.models.messages import Message, TextContent
    from kode.registries.tool_registry import ToolRegistry

    registry = ToolRegistry()
    define_tool(registry=registry)(add)
    template = AgentTemplate(id="bench_depth", tools=["add"], max_turns=turns + 5)
    script = [
        Message(role="assistant", content=[tool_use("add", {"a": A, "b": B}, id=_call_id(k))])
        for k in range(turns)
    ] + [Message(role="assistant", content=[TextContent(text=ANSWER)])]
    stamps: list[int] = []

    def on_event(event: Any) -> None:
        if isinstance(event, TurnEnd):
            stamps.append(time.perf_counter_ns())

    agent = Agent.create(
        template, model=ScriptedModel(script), registry=registry, store=store, session_id="deep"
    )
    await agent.send("Go.", on_event=on_event)
    await agent.session.close()
    costs = [(b - a) / 1e9 for a, b in itertools.pairwise(stamps)]
    return statistics.median(costs[5:15]), statistics.median(costs[-10:])


# --- peers ---------------------------------------------------------------------------------------


def openai_agents_runner(db: Path) -> RunFunc:
    from agents import Agent, Runner, SQLiteSession, function_tool, set_tracing_disabled
    from agents.items import ModelResponse
    from agents.models.interface import Model
    from agents.usage import Usage

    set_tracing_disabled(True)

    class CannedModel(Model):
        turns = 1

        async def get_response(
            self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any
        ) -> ModelResponse:
            k = 0
            last = input[-1] if isinstance(input, list) else None
            if isinstance(last, dict) and last.get("type") == "function_call_output":
                k = _next_turn(last["call_id"])
            output = openai_agents_output(k, self.turns)
            return ModelResponse(output=output, usage=Usage(), response_id=None)

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError("the bench does not stream")

    model = CannedModel()
    agent = Agent(name="bench", model=model, tools=[function_tool(add)])

    async def run(turns: int) -> None:
        model.turns = turns
        session = SQLiteSession(f"s_{uuid.uuid4().hex}", str(db))
        result = await Runner.run(agent, "Go.", max_turns=turns + 5, session=session)
        assert result.final_output == ANSWER
        session.close()

    return run


async def langgraph_runner(db: Path, stack: Any) -> RunFunc:
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import AIMessage, ToolMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.tools import tool
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
    from langgraph.prebuilt import create_react_agent

    for name in ("LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2", "LANGCHAIN_TRACING"):
        os.environ.pop(name, None)
    state = {"turns": 1}

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
                k = _next_turn(last.tool_call_id)
            if k < state["turns"]:
                call = {"name": "add", "args": {"a": A, "b": B}, "id": _call_id(k)}
                message = AIMessage(content="", tool_calls=[{**call, "type": "tool_call"}])
            else:
                message = AIMessage(content=ANSWER)
            return ChatResult(generations=[ChatGeneration(message=message)])

    saver = await stack.enter_async_context(AsyncSqliteSaver.from_conn_string(str(db)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        graph = create_react_agent(CannedChatModel(), [tool(add)], checkpointer=saver)

    async def run(turns: int) -> None:
        state["turns"] = turns
        config: Any = {
            "recursion_limit": 2 * turns + 10,
            "configurable": {"thread_id": f"t_{uuid.uuid4().hex}"},
        }
        result = await graph.ainvoke({"messages": [("user", "Go.")]}, config)
        assert result["messages"][-1].content == ANSWER
        assert sum(isinstance(m, ToolMessage) for m in result["messages"]) == turns
        assert all(
            m.content == str(RESULT) for m in result["messages"] if isinstance(m, ToolMessage)
        )

    return run


# --- running -------------------------------------------------------------------------------------


async def medians_ms(runs: dict[str, RunFunc], turns: int, rounds: int) -> dict[str, float]:
    """Each subject's median ms per run. The rounds are interleaved (one run of each subject
    per round), so a change of load on a shared machine reaches every subject alike."""
    for run in runs.values():
        for _ in range(2):
            await run(turns)  # warm: connections, caches, first-use imports
    times: dict[str, list[int]] = {label: [] for label in runs}
    for _ in range(rounds):
        for label, run in runs.items():
            start = time.perf_counter_ns()
            await run(turns)
            times[label].append(time.perf_counter_ns() - start)
    return {label: statistics.median(t) / 1e6 for label, t in times.items()}


async def cold_and_warm_ms(
    subjects: list[tuple[str, RunFunc, bool]], turns: int, rounds: int
) -> dict[str, tuple[float, float]]:
    """Each subject's median ms per run right after the other library's subjects ran (cold:
    the CPU caches hold their code and data) and right after itself (warm)."""
    cold: dict[str, list[int]] = {label: [] for label, _, _ in subjects}
    warm: dict[str, list[int]] = {label: [] for label, _, _ in subjects}
    for _ in range(rounds):
        for label, run, peer in subjects:
            for _, other, other_peer in subjects:
                if other_peer != peer:
                    await other(turns)
            for times in (cold, warm):
                start = time.perf_counter_ns()
                await run(turns)
                times[label].append(time.perf_counter_ns() - start)
    return {
        label: (statistics.median(cold[label]) / 1e6, statistics.median(warm[label]) / 1e6)
        for label in cold
    }


def installed(*modules: str) -> bool:
    return all(importlib.util.find_spec(m) is not None for m in modules)


async def run_all(quick: bool, peers: bool, caches: bool) -> tuple[list[Row], list[str]]:
    from contextlib import AsyncExitStack

    from kode.sessions import MemoryStore, SQLiteStore

    rows: list[Row] = []
    notes: list[str] = []
    folder = Path(tempfile.mkdtemp(prefix="kode-bench-sessions-"))
    async with AsyncExitStack() as stack:
        normal = SQLiteStore(folder / "kode-normal.db")
        full = SQLiteStore(folder / "kode-full.db", synchronous="FULL")
        memory = MemoryStore()
        for store in (normal, full, memory):
            stack.push_async_callback(store.aclose)
        subjects: list[tuple[str, RunFunc, bool]] = [
            ("kode, SQLite NORMAL", kode_runner(normal), False),
            ("kode, SQLite FULL", kode_runner(full), False),
            ("kode, MemoryStore", kode_runner(memory), False),
            ("kode, no store", kode_runner(None), False),
        ]
        if peers and installed("agents", "openai"):
            label = f"openai-agents {_version('openai-agents')}, SQLiteSession"
            subjects.append((label, openai_agents_runner(folder / "openai-agents.db"), True))
        elif peers:
            notes.append("openai-agents is not installed: pip install -e '.[bench]'")
        if peers and installed("langgraph", "langgraph.checkpoint.sqlite", "aiosqlite"):
            label = f"langgraph {_version('langgraph')}, AsyncSqliteSaver"
            subjects.append((label, await langgraph_runner(folder / "langgraph.db", stack), True))
        elif peers:
            notes.append(
                "langgraph with langgraph-checkpoint-sqlite is not installed: "
                "pip install -e '.[bench]'"
            )
        for figure, turns, rounds in (
            ("round_trip", 1, 20 if quick else 100),
            ("turns_50", 50, 3 if quick else 15),
        ):
            times = await medians_ms({label: run for label, run, _ in subjects}, turns, rounds)
            base = times["kode, SQLite NORMAL"]
            peer_times = [times[label] for label, _, peer in subjects if peer]
            best = min(peer_times) if peer_times else None
            for label, _, _ in subjects:
                ratio = times[label] / base
                if label == "kode, SQLite NORMAL" and best is not None:
                    speedup = best / base
                    rows.append(
                        Row(
                            figure,
                            label,
                            times[label],
                            speedup,
                            f"faster peer >= {PEER_TARGET:g}x this",
                            speedup >= PEER_TARGET,
                        )
                    )
                else:
                    rows.append(Row(figure, label, times[label], ratio, "", None))
        if caches:  # round_trip again, cold against cold and warm against warm
            both = await cold_and_warm_ms(subjects, 1, 10 if quick else 40)
            for index, figure in enumerate(("round_trip_cold", "round_trip_warm")):
                base = both["kode, SQLite NORMAL"][index]
                for label, _, _ in subjects:
                    ms = both[label][index]
                    rows.append(Row(figure, label, ms, ms / base, "", None))
        turns = 1_000 if quick else 5_000
        early, late = await kode_depth(normal, turns)
        ratio = late / early
        rows.append(
            Row(
                f"depth_{turns}",
                "kode, SQLite NORMAL: last 10 turns vs turns 6-15",
                late * 1e3,
                ratio,
                f"<= {DEPTH_TARGET:g}x",
                ratio <= DEPTH_TARGET,
            )
        )
    return rows, notes


def print_table(rows: list[Row]) -> None:
    print(f"{'figure':<15} {'subject':<52} {'ms/run':>10} {'ratio':>8}  target")
    for r in rows:
        ratio = f"{r.ratio:.2f}x" if r.ratio is not None else ""
        mark = {True: " ok", False: " MISSED", None: ""}[r.passed]
        print(f"{r.figure:<15} {r.subject:<52} {r.median_ms:>10.3f} {ratio:>8}  {r.target}{mark}")
    print(
        "ratio: the subject's time over kode's with SQLite NORMAL; on kode's SQLite NORMAL "
        "row: the faster peer's time over kode's. depth: ms of one late turn; ratio: late/early."
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds (noisier)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument("--no-peers", action="store_true", help="kode's rows alone")
    parser.add_argument(
        "--caches",
        action="store_true",
        help="also round_trip cold (right after the other library's runs) and warm (right "
        "after its own), for every subject",
    )
    args = parser.parse_args()
    rows, notes = anyio.run(run_all, args.quick, not args.no_peers, args.caches)
    if args.json:
        print(
            json.dumps(
                {
                    "python": platform.python_version(),
                    "rows": [asdict(r) for r in rows],
                    "notes": notes,
                },
                indent=2,
            )
        )
    else:
        print_table(rows)
        for note in notes:
            print("note:", note)
    missed = [r for r in rows if r.passed is False]
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
