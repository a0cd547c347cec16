"""The kill -9 suite: an agent killed with SIGKILL at random points, resumed in a new process.

`kill9_agent.py` runs an agent whose tools append lines to a file; this suite kills it at
points a seeded RNG picks (while the model streams, between calls, inside a read-only, an
idempotent or a mutating tool, while a call waits for approval, just after a start), resumes
the session in a new process, maybe kills that one too, and so on until a process reaches the
final answer. Then, every time: each ``tool_use`` is answered exactly once, no call ran after
its result was written, no non-idempotent call ran twice, the final answer was reached, and
the state is valid JSON, in the agent and in the store. On SQLite and on PostgreSQL.
"""

from __future__ import annotations

import os
import random
import signal
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.abc import Process
from anyio.streams.text import TextReceiveStream

from kode.agent import Agent, AgentState
from kode.models import ToolResultContent
from kode.sessions import SessionState, Store, store_from

pytestmark = pytest.mark.anyio

PROGRAM = Path(__file__).with_name("kill9_agent.py")
KILLS = 50  # per store: 100+ kills over both stores
AT_ONCE = 4
POINTS = {  # where to kill, and up to which occurrence of it in one process
    "model": 12,  # while the model streams (a marker per word)
    "between": 4,  # a call just ended, the next step not begun
    "tool look": 2,  # inside a read-only tool
    "tool write": 2,  # inside a mutating tool
    "tool setv": 1,  # inside an idempotent tool
    "tool guarded": 1,  # inside a mutating tool that was approved
    "approval": 1,  # while a call waits for approval
    "ready": 1,  # just after the session was opened or resumed
}
MUTATING = {"write", "guarded"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@dataclass
class Scenario:
    number: int
    folder: Path
    url: str
    kills: list[tuple[str, int, float]]  # (marker, which occurrence, delay after it)
    killed_at: list[str] = field(default_factory=list)
    processes: int = 0


def plan(rng: random.Random) -> list[tuple[str, int, float]]:
    kills = []
    for _ in range(rng.randint(3, 5)):
        point = rng.choice(list(POINTS))
        delay = rng.choice([0.0, 0.0, rng.uniform(0, 0.02)])
        kills.append((point, rng.randint(1, POINTS[point]), delay))
    return kills


async def run_process(scenario: Scenario, mode: str, kill: tuple[str, int, float] | None) -> str:
    """Run the agent once; SIGKILL it at `kill`. Its last marker line, or ``killed``."""
    folder = scenario.folder
    args = [str(PROGRAM), scenario.url, "s", str(folder / "work.txt"), str(folder / "state.json")]
    scenario.processes += 1
    errors = folder / f"stderr-{scenario.processes}.txt"
    with errors.open("wb") as sink:
        process: Process = await anyio.open_process(
            [sys.executable, *args, mode], stderr=sink, env={**os.environ, "PYTHONUNBUFFERED": "1"}
        )
    seen: Counter[str] = Counter()
    last = ""
    killed = False
    try:
        assert process.stdout is not None
        buffer = ""
        with anyio.fail_after(60):
            async for chunk in TextReceiveStream(process.stdout):
                buffer += chunk
                *lines, buffer = buffer.split("\n")
                for text in lines:
                    last = text
                    marker = text.split(" ")[0] if text.startswith("approval") else text
                    seen[marker] += 1
                    if kill is not None and not killed and marker == kill[0]:
                        if seen[marker] == kill[1]:
                            if kill[2]:
                                await anyio.sleep(kill[2])
                            process.send_signal(signal.SIGKILL)
                            killed = True
                            scenario.killed_at.append(kill[0])
                    if text.startswith("approval ") and not killed:
                        # Decided from this process, which does not run the session.
                        await Agent.decide_in_store(scenario.url, "s", text.split()[1], "allow")
            await process.wait()
    finally:
        if process.returncode is None:
            process.kill()
        await process.aclose()
    if killed:
        return "killed"
    assert process.returncode == 0, (
        f"the agent exited with {process.returncode}: {last}\n{errors.read_text()}"
    )
    return last


def check(scenario: Scenario, state: SessionState) -> None:
    """The promises of a resumed session, checked on what the processes did and left."""
    where = f"scenario {scenario.number} (killed at {scenario.killed_at})"
    saved = AgentState.model_validate_json((scenario.folder / "state.json").read_text())
    assert saved.messages == state.messages, where
    SessionState.model_validate_json(state.model_dump_json())
    messages = state.messages
    assert messages[-1].role == "assistant" and messages[-1].text == "Final answer.", where
    answered: Counter[str] = Counter()
    for index, message in enumerate(messages):
        results = [b.tool_use_id for b in message.content if isinstance(b, ToolResultContent)]
        answered.update(results)
        if message.role == "assistant" and message.tool_uses:
            following = messages[index + 1]
            ids = [b.tool_use_id for b in following.content if isinstance(b, ToolResultContent)]
            assert ids == [c.id for c in message.tool_uses], where
    uses = [c.id for m in messages for c in m.tool_uses]
    assert len(uses) == 9 and answered == Counter(uses), where  # each answered exactly once
    starts: Counter[str] = Counter()
    for text in (scenario.folder / "work.txt").read_text().splitlines():
        what, _, call_id, at = text.split()
        call = state.calls[call_id]
        if what == "start":
            starts[call_id] += 1
            # Never run once its result was written (a completed call never runs again).
            assert call.ended_at is not None and float(at) < call.ended_at, (where, text)
    for call_id, count in starts.items():
        call = state.calls[call_id]
        assert count <= call.attempts, (where, call_id)
        if call.name in MUTATING:
            assert count == 1, (where, call_id, "a non-idempotent call ran twice")
    for call in state.calls.values():
        assert call.finished, (where, call.id)
        if call.status == "done":
            assert call.result is not None and call.result.text == f"ran {call.id}", where


async def run_scenario(scenario: Scenario) -> None:
    mode = "start"
    for kill in scenario.kills:
        last = await run_process(scenario, mode, kill)
        mode = "resume"
        if last.startswith("FINAL"):
            break
    else:
        last = await run_process(scenario, mode, None)
    assert last == "FINAL Final answer.", f"scenario {scenario.number}: {last}"
    store: Store = store_from(scenario.url)
    try:
        state = (await store.load("s")).state()
    finally:
        await store.aclose()
    check(scenario, state)


async def suite(make_url: Any, tmp_path: Path, seed: int) -> list[Scenario]:
    """Run scenarios, AT_ONCE at a time, until KILLS processes were killed."""
    rng = random.Random(seed)
    scenarios: list[Scenario] = []

    def killed() -> int:
        return sum(len(s.killed_at) for s in scenarios)

    async def worker() -> None:
        while killed() < KILLS:
            number = len(scenarios)
            folder = tmp_path / f"s{number}"
            folder.mkdir()
            scenario = Scenario(number, folder, make_url(number, folder), plan(rng))
            scenarios.append(scenario)
            await run_scenario(scenario)

    async with anyio.create_task_group() as tg:
        for _ in range(AT_ONCE):
            tg.start_soon(worker)
    kills = [k for s in scenarios for k in s.killed_at]
    print(f"{len(kills)} kills in {sum(s.processes for s in scenarios)} processes")
    named = {"model", "between", "tool look", "tool write", "tool guarded", "approval"}
    assert set(kills) >= named, Counter(kills)  # each kind of point the promise names
    return scenarios


async def test_kill9_on_sqlite(tmp_path: Path) -> None:
    await suite(lambda number, folder: f"sqlite:///{folder / 'sessions.db'}", tmp_path, 19)


async def test_kill9_on_postgres(tmp_path: Path, postgres_server: Any) -> None:
    await suite(lambda number, folder: postgres_server.create_database(), tmp_path, 23)
