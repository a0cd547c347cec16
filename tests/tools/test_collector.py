"""kode.tools.collector: loading a long history runs no collection of the cyclic collector."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from kode import Agent, AgentTemplate, define_tool
from kode.agent.state import AgentState, ToolCallRecord
from kode.models import ScriptedModel
from kode.models.messages import Message, TextContent, ToolResultContent, ToolUseContent
from kode.sessions import MessageAdded, SQLiteStore
from kode.tools.collector import collector_paused


@contextmanager
def collections() -> Iterator[list[int]]:
    """The generations of the collections that start inside the block."""
    started: list[int] = []

    def note(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            started.append(info["generation"])

    gc.callbacks.append(note)
    try:
        yield started
    finally:
        gc.callbacks.remove(note)


def long_history(turns: int) -> tuple[list[Message], list[ToolCallRecord]]:
    messages = [Message(role="user", content=[TextContent(text="Go.")])]
    calls = []
    for i in range(turns):
        use = ToolUseContent(id=f"toolu_{i}", name="lookup", input={"key": f"k{i}"})
        result = ToolResultContent(tool_use_id=use.id, content=[TextContent(text=f"v{i}")])
        messages += [
            Message(role="assistant", content=[TextContent(text=f"Step {i}."), use]),
            Message(role="user", content=[result]),
        ]
        calls.append(ToolCallRecord(id=use.id, name="lookup", input=use.input, status="done"))
    return messages, calls


@pytest.fixture
def collector_on() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_pauses_nest_and_restore(collector_on: None) -> None:
    with collector_paused():
        assert not gc.isenabled()
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_collector_that_was_off_stays_off() -> None:
    was = gc.isenabled()
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        if was:
            gc.enable()


def test_overlapping_pauses_in_threads(collector_on: None) -> None:
    inside = threading.Event()
    leave = threading.Event()

    def hold() -> None:
        with collector_paused():
            inside.set()
            leave.wait(10)

    thread = threading.Thread(target=hold)
    thread.start()
    inside.wait(10)
    with collector_paused():
        pass
    assert not gc.isenabled()  # the thread's pause still holds
    leave.set()
    thread.join(10)
    assert gc.isenabled()


def test_validating_a_long_state_runs_no_collection(collector_on: None) -> None:
    messages, calls = long_history(2000)
    text = AgentState(
        template_id="t", agent_id="a", session_id="s", messages=messages, tool_calls=calls
    ).model_dump_json()
    with collections() as started:
        state = AgentState.model_validate_json(text)
    assert len(state.messages) == 4001
    assert len(started) <= 1, started  # before the pause: about a hundred
    assert gc.isenabled()


def test_from_state_of_a_long_state_runs_no_collection(
    collector_on: None, isolated_registry: object
) -> None:
    @define_tool(kind="read")
    def lookup(key: str) -> str:
        """Look a key up.

        Args:
            key: The key.
        """
        return key

    messages, calls = long_history(2000)
    state = AgentState(
        template_id="t", agent_id="a", session_id="s", messages=messages, tool_calls=calls
    )
    template = AgentTemplate(id="t", tools=["lookup"])
    with collections() as started:
        agent = Agent.from_state(state, model=ScriptedModel(["x"]), template=template)
    assert len(agent.messages) == 4001
    # Making the agent itself may run one; the history's copy runs none.
    assert len(started) <= 2
    assert gc.isenabled()


@pytest.mark.anyio
async def test_resuming_a_long_stored_session_runs_almost_no_collection(
    collector_on: None, isolated_registry: object, tmp_path: Path
) -> None:
    @define_tool(kind="read")
    def lookup(key: str) -> str:
        """Look a key up.

        Args:
            key: The key.
        """
        return key

    template = AgentTemplate(id="t", tools=["lookup"])
    messages, _ = long_history(2000)
    async with SQLiteStore(tmp_path / "s.sqlite") as store:
        header = await store.create(template=template.id)
        await store.append(header.id, [MessageAdded(message=m) for m in messages])
        with collections() as started:
            agent = await Agent.resume(
                header.id, store=store, model=ScriptedModel(["x"]), template=template
            )
        try:
            assert len(agent.messages) == 4001
            # Before the pause, about a hundred collections ran through the loaded history.
            assert len(started) <= 3, started
        finally:
            await agent.aclose()
    assert gc.isenabled()
