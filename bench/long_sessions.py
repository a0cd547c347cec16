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
    args = parser.parse_args()
    if args.collector_off:
        gc.disable()
    from kode.agent.template import templates  # the registered template resume looks up

    templates.register(TEMPLATE, replace=True)
    rows: list[tuple[int, str, float]] = []
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
    floor = {n: ms for n, figure, ms in rows if figure == "json_loads"}
    print(f"collector {'off' if args.collector_off else 'on'}; medians of {args.rounds}")
    print(f"{'turns':>6}  {'figure':<16}{'ms':>10}{'us/turn':>10}{'x json_loads':>14}")
    for turns, figure, ms in rows:
        per_turn = ms * 1000 / turns
        print(f"{turns:>6}  {figure:<16}{ms:>10.1f}{per_turn:>10.1f}{ms / floor[turns]:>14.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
