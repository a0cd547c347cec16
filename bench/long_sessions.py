"""What loading a long session costs, against `json.loads` of the same text in the same run.

Run ``python bench/long_sessions.py`` (``--turns 1000,5000,10000`` by default; ``--rounds N``,
3 by default: each figure is the median). A session of N turns is N model turns (a line of
text and one ``tool_use``) each answered by a ``tool_result`` of about 200 characters, with
its N call records: the shape of a long agent run. For each N:

- ``json_loads``: `json.loads` of the `AgentState`'s JSON text with the collector paused, the
  floor (with the collector running, `json.loads` of a long text grows faster than the text);
- ``state_validate``: `AgentState.model_validate_json` of the same text;
- ``from_state``: `Agent.from_state` of the validated state (a deep copy of the history);
- ``resume_sqlite``: `Agent.resume` of the same session kept in a `SQLiteStore` file (the
  store's read and fold, then the agent), and ``resume_postgres`` in a `PostgresStore` (a
  throwaway cluster; skipped without PostgreSQL's binaries).

Each line gives the figure per turn and its ratio to ``json_loads`` at the same N: a load that
grows linearly keeps both flat as N grows. The process's collector is on, as in an
application; ``--collector-off`` turns it off for a comparison.

Then what a run costs per turn once the session is that long (``--next-turns K``, 200 by
default; 0 leaves it out): an agent made by `Agent.from_state` sends a first message (the
scripted model's word count catches up with the history) and then one that runs K tool turns,
timed per turn (CPU time of the event loop's thread; the turns call an async tool) with the
collector on (``turn_on``) and off (``turn_off``, the collector
disabled for the send), and ``turn_gc``, the time the collector's own passes took per turn of
the ``turn_on`` send (its callbacks). The first K turns after a load are the ones that pay for
the collector's first passes over the loaded history.

No network beyond loopback, no pytest: a plain script.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import anyio

from kode import Agent, AgentTemplate, define_tool
from kode.agent.state import AgentState, ToolCallRecord
from kode.models import ScriptedModel
from kode.models.messages import Message, TextContent, ToolResultContent, ToolUseContent
from kode.sessions import MessageAdded, PostgresStore, SQLiteStore, Store
from kode.tools.collector import collector_paused


@define_tool(kind="read")
def lookup(key: str) -> str:
    """Look a key up.

    Args:
        key: The key.
    """
    return key


TEMPLATE = AgentTemplate(id="long", tools=["lookup"])


def history(turns: int) -> tuple[list[Message], list[ToolCallRecord]]:
    messages = [Message(role="user", content=[TextContent(text="Go through every key.")])]
    calls = []
    for i in range(turns):
        use = ToolUseContent(id=f"toolu_{i:06}", name="lookup", input={"key": f"key-{i}"})
        result = ToolResultContent(
            tool_use_id=use.id, content=[TextContent(text=f"value {i} " + "x" * 190)]
        )
        messages.append(Message(role="assistant", content=[TextContent(text=f"Step {i}."), use]))
        messages.append(Message(role="user", content=[result]))
        calls.append(
            ToolCallRecord(id=use.id, name="lookup", input=use.input, status="done", result=result)
        )
    messages.append(Message(role="assistant", content=[TextContent(text="Done.")]))
    return messages, calls


def median_ms(rounds: int, op: Callable[[], object]) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        op()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


async def amedian_ms(rounds: int, op: Callable[[], Any]) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        await op()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


async def stored(store: Store, messages: list[Message]) -> str:
    session = await store.create(template=TEMPLATE.id)
    for start in range(0, len(messages), 500):
        await store.append(
            session.id, [MessageAdded(message=m) for m in messages[start : start + 500]]
        )
    return session.id


@define_tool(kind="read")
async def recall(key: str) -> str:
    """Recall a key.

    Args:
        key: The key.
    """
    return key


# The next turns call an async tool: all their work is in the event loop's thread, timed in
# that thread's CPU time (a shared machine's other processes left out).
NEXT = AgentTemplate(id="long_next", tools=["lookup", "recall"], max_turns=1_000_000)


class GCClock:
    """The time the collector's passes take, from `gc.callbacks`."""

    def __init__(self) -> None:
        self.ns = 0
        self._start = 0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._start = time.thread_time_ns()
        else:
            self.ns += time.thread_time_ns() - self._start


def next_turns_us(state: AgentState, k: int, rounds: int) -> dict[str, float]:
    """Per turn: K tool turns sent right after `Agent.from_state`, collector on and off."""
    state = state.model_copy(update={"template_id": NEXT.id})
    clock = GCClock()
    gc.callbacks.append(clock)
    found: dict[str, list[float]] = {"turn_on": [], "turn_off": [], "turn_gc": []}
    try:
        for r in range(rounds):
            for off in (False, True):
                uses = [
                    Message(
                        role="assistant",
                        content=[
                            TextContent(text=f"Next {i}."),
                            ToolUseContent(
                                id=f"toolu_r{r}{int(off)}_{i:06}",
                                name="recall",
                                input={"key": f"next-{i}"},
                            ),
                        ],
                    )
                    for i in range(k)
                ]
                script = ScriptedModel(["Ready.", *uses, "Done."])
                agent = Agent.from_state(state, model=script)

                async def run(agent: Agent = agent, off: bool = off) -> tuple[int, int]:
                    await agent.send("Ready?")
                    if off:
                        gc.disable()
                    clock.ns = 0
                    start = time.thread_time_ns()
                    try:
                        await agent.send("Go on.")
                    finally:
                        took = time.thread_time_ns() - start
                        gc.enable()
                    await agent.aclose()
                    return took, clock.ns

                took, collector = anyio.run(run)
                found["turn_off" if off else "turn_on"].append(took / k / 1000)
                if not off:
                    found["turn_gc"].append(collector / k / 1000)
                del agent
    finally:
        gc.callbacks.remove(clock)
    return {name: statistics.median(values) for name, values in found.items()}


async def resume_ms(store: Store, session_id: str, rounds: int) -> float:
    async def once() -> None:
        agent = await Agent.resume(session_id, store=store, model=ScriptedModel(["x"]))
        assert len(agent.messages) > 1
        await agent.aclose()

    await once()  # warm: the connection, the statements
    return await amedian_ms(rounds, once)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", default="1000,5000,10000")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--collector-off", action="store_true")
    parser.add_argument("--next-turns", type=int, default=200)
    args = parser.parse_args()
    if args.collector_off:
        gc.disable()
    from kode.agent.template import templates  # the registered template resume looks up

    templates.register(TEMPLATE, replace=True)
    templates.register(NEXT, replace=True)
    rows: list[tuple[int, str, float]] = []
    next_rows: list[tuple[int, dict[str, float]]] = []
    with ExitStack() as stack:
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        postgres_url = None
        try:
            from kode.testing.postgres import PostgresServer

            server = stack.enter_context(PostgresServer())
            postgres_url = server.url
        except Exception as exc:
            print(f"(PostgreSQL skipped: {exc})", file=sys.stderr)
        for turns in (int(t) for t in args.turns.split(",")):
            messages, calls = history(turns)
            state = AgentState(
                template_id=TEMPLATE.id,
                agent_id="a",
                session_id="s",
                messages=messages,
                tool_calls=calls,
            )
            text = state.model_dump_json()

            def loads(text: str = text) -> object:
                with collector_paused():
                    return json.loads(text)

            def validate(text: str = text) -> object:
                return AgentState.model_validate_json(text)

            def rebuild(state: AgentState = state) -> object:
                return Agent.from_state(state, model=ScriptedModel(["x"]))

            rows.append((turns, "json_loads", median_ms(args.rounds, loads)))
            rows.append((turns, "state_validate", median_ms(args.rounds, validate)))
            rows.append((turns, "from_state", median_ms(args.rounds, rebuild)))

            async def stores(turns: int = turns, messages: list[Message] = messages) -> None:
                sqlite = SQLiteStore(folder / f"s{turns}.sqlite")
                async with sqlite:
                    sid = await stored(sqlite, messages)
                    rows.append((turns, "resume_sqlite", await resume_ms(sqlite, sid, args.rounds)))
                if postgres_url is not None:
                    pg = PostgresStore(postgres_url)
                    async with pg:
                        sid = await stored(pg, messages)
                        rows.append(
                            (turns, "resume_postgres", await resume_ms(pg, sid, args.rounds))
                        )

            anyio.run(stores)
            if args.next_turns > 0 and not args.collector_off:
                next_rows.append((turns, next_turns_us(state, args.next_turns, args.rounds)))
    floor = {n: ms for n, figure, ms in rows if figure == "json_loads"}
    print(f"collector {'off' if args.collector_off else 'on'}; medians of {args.rounds}")
    print(f"{'turns':>6}  {'figure':<16}{'ms':>10}{'us/turn':>10}{'x json_loads':>14}")
    for turns, figure, ms in rows:
        per_turn = ms * 1000 / turns
        print(f"{turns:>6}  {figure:<16}{ms:>10.1f}{per_turn:>10.1f}{ms / floor[turns]:>14.2f}")
    if next_rows:
        print(f"the next {args.next_turns} tool turns, per turn (us)")
        print(f"{'turns':>6}  {'turn_on':>10}{'turn_off':>10}{'on/off':>8}{'turn_gc':>10}")
        for turns, figures in next_rows:
            on, off, collector = figures["turn_on"], figures["turn_off"], figures["turn_gc"]
            print(f"{turns:>6}  {on:>10.1f}{off:>10.1f}{on / off:>8.2f}{collector:>10.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
