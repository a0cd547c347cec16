"""A process frozen (SIGSTOP) inside a write, past its lease: another process takes the session
over, and the frozen one, continued, writes nothing more.

PostgreSQL ends the frozen transaction after the store's ``lock_timeout`` (the server's
``idle_in_transaction_session_timeout``), so a takeover waits that long at most; SQLite has no
server to end it: the frozen process keeps the file's write lock, other writers get a
`StoreError` after ``busy_timeout``, and its write lands when it continues, before anyone could
take over (docs/limits.md).
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import anyio

from kode.sessions import (
    MetadataSet,
    PostgresStore,
    SQLiteStore,
    StatusChanged,
    StoreError,
    store_from,
)

SCRIPT = Path(__file__).with_name("frozen_writer.py")


def stopped(pid: int) -> bool:
    fields = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[-1].split()
    return fields[0] == b"T"


def start_frozen(url: str) -> subprocess.Popen[str]:
    async def made() -> None:
        store = store_from(url)
        await store.create(template="t", session_id="s")
        await store.append("s", [StatusChanged(status="running")])
        await store.aclose()

    anyio.run(made)
    writer = subprocess.Popen(
        [sys.executable, str(SCRIPT), url, "s"], stdout=subprocess.PIPE, text=True
    )
    assert writer.stdout is not None
    assert writer.stdout.readline().strip() == "in transaction"
    deadline = time.monotonic() + 10
    while not stopped(writer.pid):
        assert time.monotonic() < deadline, "the writer did not stop"
        time.sleep(0.01)
    time.sleep(0.6)  # past its lease (ttl 0.5 s)
    return writer


def finish(writer: subprocess.Popen[str]) -> list[str]:
    writer.send_signal(signal.SIGCONT)
    out, _ = writer.communicate(timeout=60)
    assert writer.returncode == 0
    return out.strip().splitlines()


def test_postgres_ends_a_frozen_writers_transaction_and_fences_it(postgres_url: str) -> None:
    writer = start_frozen(postgres_url)
    try:

        async def take_over() -> tuple[float, list[str]]:
            store = PostgresStore(postgres_url, lock_timeout=1.0)
            started = time.monotonic()
            waited: list[str] = []
            while True:  # the frozen transaction holds the row until the server ends it
                try:
                    lease = await store.acquire("s", owner="new-holder", ttl=30)
                    break
                except StoreError as exc:
                    waited.append(str(exc))
                    assert time.monotonic() - started < 15, waited
            took = time.monotonic() - started
            await store.append("s", [MetadataSet(key="holder", value="new")], lease=lease)
            await store.aclose()
            return took, waited

        took, waited = anyio.run(take_over)
        assert took < 10
        for message in waited:
            assert "stayed locked by another transaction for more than 1 s" in message
    finally:
        lines = finish(writer)
    assert lines[0].startswith("first refused StoreError"), lines
    assert lines[1].startswith("second refused SessionLeaseError"), lines
    assert "now held by 'new-holder'" in lines[1]

    async def kept() -> list[tuple[int, str]]:
        store = store_from(postgres_url)
        log = await store.load("s")
        await store.aclose()
        return [(e.seq, e.record.type) for e in log.entries]

    # The frozen writer's records are nowhere: the new holder's follow the first record.
    assert anyio.run(kept) == [(1, "status"), (2, "metadata")]


def test_sqlite_keeps_a_frozen_writers_lock_and_its_write_lands_first(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'sessions.db'}"
    writer = start_frozen(url)
    try:

        async def try_over() -> str:
            store = SQLiteStore(tmp_path / "sessions.db", busy_timeout=0.5)
            try:
                await store.acquire("s", owner="new-holder", ttl=30)
            except StoreError as exc:
                return str(exc)
            finally:
                await store.aclose()
            return "taken"

        refused = anyio.run(try_over)
        assert "stayed locked by another writer for more than 0.5 s" in refused
        assert "a process stopped inside a write transaction" in refused
    finally:
        lines = finish(writer)
    # It held the write lock throughout, so nobody took over: its write is consistent.
    assert lines[0] == "first ok 2", lines
    assert lines[1] == "second ok 3", lines  # its lease ran out, but nobody took it


def test_a_run_stopped_in_a_tool_past_its_lease_writes_nothing_after_a_takeover(
    tmp_path: Path,
) -> None:
    from kode import define_tool
    from kode.agent import Agent, AgentTemplate
    from kode.models import FunctionModel
    from kode.registries import ToolRegistry

    url = f"sqlite:///{tmp_path / 'sessions.db'}"
    stale = subprocess.Popen(
        [sys.executable, str(SCRIPT.with_name("stalled_agent.py")), url],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert stale.stdout is not None
        assert stale.stdout.readline().strip() == "started"
        stale.send_signal(signal.SIGSTOP)  # inside its tool, before the result is written
        time.sleep(0.8)  # past its lease (ttl 0.5 s)
        reg = ToolRegistry(name="resumer")

        @define_tool(registry=reg, kind="execute", requires_approval=False)
        def transfer(amount: int) -> str:
            """Move money."""
            raise AssertionError("a call that may have partly run is never run again")

        async def take_over() -> str:
            agent = await Agent.resume(
                "s",
                store=url,
                model=FunctionModel(lambda r: "Checked."),
                template=AgentTemplate(id="payer", tools=["transfer"]),
                registry=reg,
            )
            reply = await agent.send()
            answer = agent.messages[2].content[0]
            await agent.aclose()
            return f"{reply.text} {answer.text}"  # type: ignore[union-attr]

        resumed = anyio.run(take_over)
        assert resumed.startswith("Checked. ") and "may have partly run" in resumed
    finally:
        stale.send_signal(signal.SIGCONT)
        out, _ = stale.communicate(timeout=60)
    # Continued, its tool returned, and its run stopped at its next write: the lease was lost.
    assert out.strip().splitlines()[-1].startswith("error SessionLeaseError: the lease of"), out

    async def results() -> list[str]:
        store = store_from(url)
        log = await store.load("s")
        await store.aclose()
        state = log.state()  # still a valid history
        return [c.result.text for c in state.calls.values() if c.result is not None]

    texts = anyio.run(results)
    assert len(texts) == 1 and "may have partly run" in texts[0]  # no "transferred"
