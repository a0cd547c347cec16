"""The agent's history as one `Session`: every change is a record, written before the next step."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import anyio
import pytest
from support import assert_history_valid, make_agent

from kode import define_tool
from kode.agent import Agent, AgentState, AgentTemplate
from kode.agent.session import HistoryView
from kode.models import ScriptedModel, tool_use
from kode.registries import ToolRegistry
from kode.sessions import SessionLeaseError, SQLiteStore, Store

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_each_step_is_in_the_store_before_the_next_begins(
    reg: ToolRegistry, tmp_path: Path
) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    seen: list[tuple[str, str]] = []
    holder: list[Agent] = []

    @define_tool(kind="edit", requires_approval=False, registry=reg)
    async def write_note(text: str) -> str:
        """Write a note."""
        # Another reader of the store sees the call running before its effect happens.
        other = SQLiteStore(tmp_path / "s.db")
        state = (await other.load(holder[0].session_id)).state()
        await other.aclose()
        call = next(iter(state.calls.values()))
        seen.append((call.status, state.messages[-1].role))
        return "noted"

    agent, _ = make_agent(
        reg,
        [[tool_use("write_note", {"text": "x"})], "Done."],
        create={"store": store},
    )
    holder.append(agent)
    reply = await agent.send("note it")
    assert reply.text == "Done."
    assert seen == [("running", "assistant")]
    log = await store.load(agent.session_id)
    state = log.state()
    assert state.messages == agent.messages and state.status == "idle"
    assert state.usage == agent.usage
    call = next(iter(state.calls.values()))
    assert (call.status, call.read_only, call.idempotent, call.attempts) == (
        "done",
        False,
        False,
        1,
    )
    types = [e.record.type for e in log.entries]
    assert types.index("call") > types.index("usage")  # the reply, then the call
    assert_history_valid(agent.messages)
    await store.aclose()


async def test_an_agent_without_a_store_makes_no_records(reg: ToolRegistry) -> None:
    agent, _ = make_agent(reg, ["Hi."])
    await agent.send("hello")
    assert agent.session.store is None and agent.session.uncommitted == 0


async def test_a_model_request_is_a_view_of_the_history_not_a_copy(reg: ToolRegistry) -> None:
    agent, model = make_agent(reg, ["one", "two"])
    await agent.send("a")
    await agent.send("b")
    first, second = (r.messages for r in model.requests)
    assert isinstance(first, HistoryView) and isinstance(second, HistoryView)
    assert len(first) == 1 and len(second) == 3  # each shows the history as it was sent
    assert second[0] is agent.messages[0]  # the same objects: nothing was copied
    assert list(first) == [agent.messages[0]]


async def test_the_state_round_trips_with_a_store(reg: ToolRegistry, tmp_path: Path) -> None:
    store: Store = SQLiteStore(tmp_path / "s.db")
    agent, _ = make_agent(reg, ["Hi."], create={"store": f"sqlite:///{tmp_path / 's.db'}"})
    await agent.send("hello")
    state = AgentState.model_validate_json(agent.state.model_dump_json())
    assert state.messages == agent.messages
    header = await store.get(agent.session_id)
    assert (header.template, header.status, header.last_seq) == ("t", "idle", 5)
    await store.aclose()
    await agent.session.close()


async def test_a_session_with_records_is_not_started_again_by_create(
    reg: ToolRegistry, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 's.db'}"
    agent, _ = make_agent(reg, ["Hi."], create={"store": url, "session_id": "s1"})
    await agent.send("hello")
    await agent.session.close()
    again, _ = make_agent(reg, ["Hi."], create={"store": url, "session_id": "s1"})
    with pytest.raises(ValueError, match=r"already has 5 records.*Agent\.resume"):
        await again.send("hello")


def test_scripted_model_counts_only_new_messages() -> None:
    model = ScriptedModel(["a b", "c"])
    agent = Agent.create(AgentTemplate(id="w", tools=[]), model=model)
    agent.send_sync("one two three")
    agent.send_sync("four")
    assert model.requests[1].messages[0] is agent.messages[0]
    assert agent.usage.input_tokens == 3 + (3 + 2 + 1)


async def test_one_keeper_keeps_the_lease_for_a_whole_run_of_many_turns(
    reg: ToolRegistry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, anyio_backend_name: str
) -> None:
    """The lease keeper is started once per run, not once per turn (a task per turn cost a
    third of a 50-turn run with SQLite), and keeps renewing across the turns. On asyncio it
    is a timer of the event loop (starting and cancelling a task group cost a run about
    80 µs), on trio one task."""
    from kode.agent.session import LeaseTimer, Session

    started: list[tuple[str, str]] = []
    keep = Session.keep_lease
    start_timer = LeaseTimer.__init__

    async def counted(self: Session) -> None:
        started.append(("task", self.id))
        await keep(self)

    def timer(self: LeaseTimer, session: Session, loop: Any) -> None:
        started.append(("timer", session.id))
        start_timer(self, session, loop)

    monkeypatch.setattr(Session, "keep_lease", counted)
    monkeypatch.setattr(LeaseTimer, "__init__", timer)

    @define_tool(kind="read", registry=reg)
    def nap(seconds: float) -> str:
        """Sleep a little."""
        import time

        time.sleep(seconds)
        return "rested"

    turns = [[tool_use("nap", {"seconds": 0.05}, id=f"c{k}")] for k in range(8)]
    store = SQLiteStore(tmp_path / "s.db")
    agent, _ = make_agent(reg, [*turns, "Done."], create={"store": store, "lease_ttl": 0.3})
    reply = await agent.send("rest")
    assert reply.text == "Done."
    kind = "timer" if anyio_backend_name == "asyncio" else "task"
    assert started == [(kind, agent.session_id)]  # one keeper for the eight turns
    header = await store.get(agent.session_id)
    assert header.lease_owner is not None  # still held (renewed) until the agent closes
    await agent.aclose()
    assert (await store.get(agent.session_id)).lease_owner is None
    await store.aclose()


async def test_a_round_trip_commits_four_transactions_and_the_release(
    reg: ToolRegistry, tmp_path: Path
) -> None:
    """Write-ahead with as few commits as it needs: the new session is created, leased and
    given the prompt in one transaction; then the reply with the call's start, the call's end
    with its results, the final reply; closing releases the lease."""

    @define_tool(kind="read", registry=reg)
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    store = SQLiteStore(tmp_path / "s.db")
    await store.create(template="warm-up")  # the connection is open
    assert store._conn is not None
    statements: list[str] = []
    store._conn.set_trace_callback(statements.append)
    agent, _ = make_agent(reg, [[tool_use("add", {"a": 2, "b": 3})], "5."], create={"store": store})
    assert (await agent.send("Add 2 and 3.")).text == "5."
    await agent.aclose()
    writes = [s.split()[0] for s in statements if not s.startswith("SELECT")]
    transactions = [w for w in writes if w in ("BEGIN", "UPDATE") or w == "COMMIT"]
    assert transactions.count("BEGIN") == 4 and transactions.count("COMMIT") == 4
    first = statements[statements.index("BEGIN IMMEDIATE") :]
    first = first[: first.index("COMMIT")]
    assert [s.split()[2] for s in first[1:]] == ["kode_sessions"] + ["kode_records"] * 2
    assert "lease_owner" in first[1]  # created with its lease
    assert statements[-1].startswith("UPDATE kode_sessions SET lease_owner = NULL")  # released
    header = await store.get(agent.session_id)
    assert (header.last_seq, header.status, header.lease_owner) == (10, "idle", None)
    await store.aclose()


async def test_a_session_someone_holds_is_refused_before_the_run_changes_anything(
    reg: ToolRegistry, tmp_path: Path
) -> None:
    """The check before a first run writes nothing and changes nothing: after the refusal
    the agent's history is untouched, and once the holder lets go, the same agent runs."""
    store = SQLiteStore(tmp_path / "s.db")
    await store.create(template="t", session_id="s1")
    held = await store.acquire("s1", owner="another process", ttl=60)
    agent, _ = make_agent(reg, ["Hi."], create={"store": store, "session_id": "s1"})
    with pytest.raises(SessionLeaseError, match="session 's1' is leased by 'another process'"):
        await agent.send("hello")
    assert agent.messages == [] and agent.status == "idle"
    assert (await store.get("s1")).last_seq == 0
    await store.release(held)
    assert (await agent.send("hello")).text == "Hi."
    assert (await store.get("s1")).last_seq == 5
    await agent.aclose()
    await store.aclose()


async def test_the_lease_is_not_renewed_once_the_run_ended(
    reg: ToolRegistry, tmp_path: Path
) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    agent, _ = make_agent(reg, ["Hi."], create={"store": store, "lease_ttl": 0.15})
    await agent.send("hello")
    expires = (await store.get(agent.session_id)).lease_expires
    await anyio.sleep(0.3)  # six renewal periods
    assert (await store.get(agent.session_id)).lease_expires == expires
    await agent.aclose()
    await store.aclose()


async def test_a_tool_turn_is_two_commits_of_one_append_each(
    reg: ToolRegistry, tmp_path: Path
) -> None:
    """What a turn writes to SQLite: its reply with the call's start, then the call's end,
    each one transaction of the header's update and the records' INSERT."""

    @define_tool(kind="read", registry=reg)
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    store = SQLiteStore(tmp_path / "s.db")
    turns: list[Any] = [[tool_use("add", {"a": 1, "b": i})] for i in range(3)]
    agent, _ = make_agent(reg, ["Hi.", *turns, "Done."], create={"store": store})
    await agent.send("open the session")
    conn = store._conn
    assert conn is not None
    seen: list[str] = []
    conn.set_trace_callback(seen.append)
    try:
        assert (await agent.send("add three times")).text == "Done."
    finally:
        conn.set_trace_callback(None)
    words = [s.split(None, 1)[0] for s in seen]
    commits = words.count("COMMIT")
    # the prompt, two a tool turn, the answer (which also sets the status)
    assert commits == 1 + 2 * 3 + 1, words
    # each commit: BEGIN, the header's update, the records' INSERT (stepped per record), COMMIT
    groups = [word for word, _ in itertools.groupby(words)]
    assert groups == ["BEGIN", "UPDATE", "INSERT", "COMMIT"] * commits, words
    await store.aclose()
