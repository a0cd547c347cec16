"""kill -9 of kode while a code_run script's tool call runs, then a resume from the SQLite store.

A real kode process runs a real agent whose script, in the real sandbox, makes one call that
ends and one that blocks; the test kills the process with SIGKILL once the blocking call has
started, resumes the session in this process, and checks what the records say. The call in
flight is settled by the rule of ordinary calls (one that may have changed something is
answered as interrupted, one that only reads is cancelled: its script is gone, so neither runs
again), the ``code_run`` call is answered as interrupted and says which of its calls ended, and
no tool runs twice.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from code_run_places import new_place, start_kode, stop

from kode import Agent, AgentTemplate, ToolRegistry, define_tool
from kode.builtin.code import code_run
from kode.models import ScriptedModel, ToolResultContent
from kode.sessions import SQLiteStore
from kode.sessions.state import SessionState
from kode.testing.programs import requires_sandbox

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the sandbox is Linux's"),
    requires_sandbox(),
]

KODE = """
import anyio, sys
from pathlib import Path
from kode import Agent, AgentTemplate, ToolRegistry, define_tool
from kode.builtin.code import code_run
from kode.models import ScriptedModel, tool_use
from kode.sessions import SQLiteStore

reg = ToolRegistry("blocked")
flag = Path(sys.argv[2])

@define_tool(registry=reg)
def note(text: str) -> str:
    '''Note a text.

    Args:
        text: The text.
    '''
    return "noted " + text

@define_tool(registry=reg, kind=sys.argv[3])
async def block(what: str) -> str:
    '''Start something that takes long.

    Args:
        what: What to start.
    '''
    flag.write_text("started")
    await anyio.sleep(300)
    return "finished"

reg.register(code_run, source="core")
script = "print(note(text='a'))\\nprint(block(what='b'))\\nprint(note(text='c'))\\n"
model = ScriptedModel([[tool_use("code_run", {"script": script, "timeout": 300})], "done"])
agent = Agent.create(AgentTemplate(id="k", tools=["note", "block", "code_run"]), model=model,
                     registry=reg, workspace=sys.argv[1], session_id="blocked",
                     store=SQLiteStore(sys.argv[4]))
anyio.run(agent.send, "go")
"""


@pytest.fixture
def place() -> Iterator[Path]:
    yield from new_place()


def kill_while_blocked(place: Path, kind: str) -> None:
    """Run the kode program until its script's `block` call has started, then kill -9 it."""
    flag = place / "started"
    args = (str(place / "ws"), str(flag), kind, str(place / "s.db"))
    kode = start_kode(
        place, "kode_program.py", KODE, *args, flag=flag, waiting_for="the script's block() call"
    )
    try:
        # (the call's "running" record was committed before the tool started: write-ahead)
        os.kill(kode.pid, signal.SIGKILL)
        assert kode.wait(10) == -signal.SIGKILL
    finally:
        stop(kode)


async def resume(place: Path) -> tuple[Agent, ScriptedModel, list[str]]:
    """The killed session, resumed and sent on; with the names of the tools that ran."""
    ran: list[str] = []
    reg = ToolRegistry("resumed")

    @define_tool(registry=reg)
    def note(text: str) -> str:
        """Note a text.

        Args:
            text: The text.
        """
        ran.append("note")
        return "noted"

    @define_tool(registry=reg)
    def block(what: str) -> str:
        """Start something.

        Args:
            what: What to start.
        """
        ran.append("block")
        return "finished"

    reg.register(code_run, source="core")
    model = ScriptedModel(["resumed"])
    agent = await Agent.resume(
        "blocked",
        store=SQLiteStore(place / "s.db"),
        model=model,
        registry=reg,
        template=AgentTemplate(id="k", tools=["note", "block", "code_run"]),
        workspace=place / "ws",
    )
    async with agent:
        outer = next(r for r in agent.records if r.name == "code_run")
        inner = agent.records.get(f"{outer.id}.2")
        assert inner is not None and inner.status == "running"  # what the kill left
        assert (await agent.send()).text == "resumed"
    return agent, model, ran


@pytest.mark.parametrize(
    ("kind", "status", "error_type", "words"),
    [
        ("other", "failed", "execution_failed", "may have partly run"),
        ("read", "cancelled", "cancelled", "only reads"),
    ],
)
def test_an_inner_call_in_flight_at_kill_9_is_settled_as_an_ordinary_call(
    place: Path, kind: str, status: str, error_type: str, words: str
) -> None:
    kill_while_blocked(place, kind)
    agent, model, ran = anyio.run(resume, place)
    assert ran == []  # nothing ran again: not the call in flight, not the one that ended
    outer = next(r for r in agent.records if r.name == "code_run")
    first, blocked = agent.records.get(f"{outer.id}.1"), agent.records.get(f"{outer.id}.2")
    assert blocked is not None and (blocked.status, blocked.error_type) == (status, error_type)
    assert first is not None and first.status == "done"
    assert first.parent_call_id == outer.id and first.input == {"text": "a"}
    assert agent.records.get(f"{outer.id}.3") is None  # the script never got there
    assert blocked.parent_call_id == outer.id
    assert blocked.result is not None and words in blocked.result.text
    assert "restart" in blocked.result.text
    # code_run itself is answered as interrupted, saying which of its calls ended
    assert outer.status == "failed" and outer.error_type == "execution_failed"
    sent = [b for b in model.requests[0].messages[-1].content if isinstance(b, ToolResultContent)]
    assert [b.tool_use_id for b in sent] == [outer.id]
    text = sent[0].text
    assert "interrupted by a restart" in text
    assert "note (done)" in text and f"block ({status}" in text
    # the store says the same to the next process that reads it
    state = anyio.run(_folded, place)
    assert state.calls[f"{outer.id}.2"].status == status
    assert state.calls[f"{outer.id}.2"].parent_call_id == outer.id
    assert state.calls[outer.id].status == "failed"
    assert state.open_calls == []


async def _folded(place: Path) -> SessionState:
    log = await SQLiteStore(place / "s.db").load("blocked")
    return log.state()
