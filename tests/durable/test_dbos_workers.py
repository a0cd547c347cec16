"""Two workers on one DBOS queue, on a SQLite and on a PostgreSQL system database: one is
killed with SIGKILL while its runs are in a model turn, a read-only tool, a mutating tool and
an approval; the live worker recovers them (never while their worker lives), or a worker
restarted with the dead one's executor id does."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("dbos")

from kode.agent import AgentError
from kode.durable import INTERRUPTED_TEXT, approval_topic
from kode.durable.workers import WorkerLease

WORKER = Path(__file__).with_name("pool_worker.py")
LEDGER = "kode.agent.pool-ledger"
FINAL = "final: the note says 3 | added 3"


@pytest.fixture(params=["sqlite", "postgres"])
def system_db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'dbos.sqlite'}"
    url: str = request.getfixturevalue("postgres_url")
    return url


class Pool:
    """The worker processes of one test, their log files and a DBOSClient."""

    def __init__(self, url: str, folder: Path) -> None:
        from dbos import DBOSClient

        self.url = url
        self.folder = folder
        self.processes: list[subprocess.Popen[str]] = []
        self.client = DBOSClient(system_database_url=url)

    def start(self, executor: str, role: str, *extra: str) -> subprocess.Popen[str]:
        # The workers name the executors they may recover by prefix on SQLite, by id on Postgres.
        recover = "ids" if self.url.startswith("postgresql") else "prefix"
        process = subprocess.Popen(
            [sys.executable, str(WORKER), self.url, str(self.folder), executor, role, *extra],
            env={**os.environ, "POOL_RECOVER": recover},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.processes.append(process)
        return process

    def lines(self, name: str) -> list[tuple[str, str]]:
        path = self.folder / name
        if not path.exists():
            return []
        return [(w, e) for w, e in (line.split() for line in path.read_text().splitlines())]

    def wait(self, what: Callable[[], bool], message: str) -> None:
        deadline = time.monotonic() + 60
        while not what():
            for process in self.processes:
                if process.poll() not in (None, -signal.SIGKILL):
                    pytest.fail(f"a worker ended: {process.communicate()[1][-3000:]}")
            assert time.monotonic() < deadline, message
            time.sleep(0.05)

    def ready(self, executor: str, count: int = 1) -> None:
        self.wait(
            lambda: self.lines("ready.log").count(("ready", executor)) >= count,
            f"{executor} never launched",
        )

    def enqueue(self, workflow: str, tag: str) -> Any:
        return self.client.enqueue(
            {"queue_name": "kode-pool", "workflow_name": workflow, "workflow_id": tag}, tag
        )

    def kill(self, process: subprocess.Popen[str]) -> None:
        os.kill(process.pid, signal.SIGKILL)
        process.communicate(timeout=30)
        assert process.returncode == -signal.SIGKILL

    def close(self) -> None:
        (self.folder / "stop").touch()
        for process in self.processes:
            if process.poll() is None:
                _, err = process.communicate(timeout=60)
                assert process.returncode == 0, err[-3000:]
        self.client.destroy()

    def runs(self, tag: str, name: str) -> list[tuple[str, str]]:
        """The (what, executor) lines of run `tag` in log `name`."""
        return [
            (what.split(":", 1)[1], executor)
            for what, executor in self.lines(name)
            if what.split(":", 1)[0] == tag
        ]


def sessions(url: str, folder: Path, ids: list[str]) -> dict[str, tuple[list[str], str]]:
    """The roles of each session's messages and its last message's text."""
    import anyio

    from kode.sessions import fold, store_from

    store_url = url if url.startswith("postgresql") else f"sqlite:///{folder / 'sessions.db'}"

    async def read() -> dict[str, tuple[list[str], str]]:
        store = store_from(store_url)
        try:
            found = {}
            for session_id in ids:
                state = fold((await store.load(session_id)).entries)
                roles = [message.role for message in state.messages]
                text = "".join(getattr(b, "text", "") for b in state.messages[-1].content)
                found[session_id] = (roles, text)
            return found
        finally:
            await store.aclose()

    return anyio.run(read)


def test_a_killed_workers_runs_finish_on_the_live_worker(system_db: str, tmp_path: Path) -> None:
    pool = Pool(system_db, tmp_path)
    try:
        victim = pool.start("pool-a", "victim-direct")
        pool.ready("pool-a")
        # Each run waits in the victim where its tag says: a model turn, a read-only tool, a
        # mutating tool; the fourth waits for an approval.
        handles = {tag: pool.enqueue(LEDGER, tag) for tag in ("turn2", "note_read", "ledger_add")}
        vault = pool.enqueue("kode.agent.pool-vault", "vault")
        held = [
            ("turn2:turn2", "model.log"),
            ("note_read:note_read", "tools.log"),
            ("ledger_add:ledger_add", "tools.log"),
            ("vault:turn1", "model.log"),
            ("direct-note_read:note_read", "tools.log"),  # started without a queue
        ]
        pool.wait(
            lambda: all((what, "pool-a") in pool.lines(log) for what, log in held),
            "the victim never took its five runs",
        )

        pool.start("pool-b", "rescuer")
        pool.ready("pool-b")
        time.sleep(1.0)  # five rounds of pool-b's recovery while pool-a lives
        assert pool.lines("recovered.log") == []
        assert all(
            executor == "pool-a"
            for name in ("model.log", "tools.log")
            for _, executor in pool.lines(name)
        )

        pool.kill(victim)
        # The decision comes from this process, which runs no worker.
        pool.client.send("vault", {"decision": "allow"}, topic=approval_topic("v1"))
        handles["direct"] = pool.client.retrieve_workflow("direct")
        answers = {tag: handle.get_result() for tag, handle in handles.items()}
        assert vault.get_result() == "final: vault opened"
    finally:
        pool.close()

    assert sorted(pool.lines("recovered.log")) == [
        (f"{tag}<-pool-a", "pool-b")
        for tag in ("direct", "ledger_add", "note_read", "turn2", "vault")
    ]
    interrupted = INTERRUPTED_TEXT.format(name="ledger_add")
    assert answers == {
        "turn2": FINAL,
        "note_read": FINAL,
        "ledger_add": f"final: the note says 3 | {interrupted}",
        "direct": FINAL,  # recovered onto DBOS's internal queue, which every worker takes from
    }
    for tag in [*answers, "vault"]:
        assert pool.client.retrieve_workflow(tag).get_status().executor_id == "pool-b"
    # Model step in flight: only that turn is asked again; no tool repeats.
    assert pool.runs("turn2", "model.log") == [
        ("turn1", "pool-a"),
        ("turn2", "pool-a"),
        ("turn2", "pool-b"),
        ("turn3", "pool-b"),
    ]
    assert pool.runs("turn2", "tools.log") == [("note_read", "pool-a"), ("ledger_add", "pool-b")]
    # Read-only tool in flight: it runs again; turn 1 is not asked again.
    assert pool.runs("note_read", "model.log") == [
        ("turn1", "pool-a"),
        ("turn2", "pool-b"),
        ("turn3", "pool-b"),
    ]
    assert pool.runs("note_read", "tools.log") == [
        ("note_read", "pool-a"),
        ("note_read", "pool-b"),
        ("ledger_add", "pool-b"),
    ]
    # Mutating tool in flight: never run again, answered as interrupted.
    assert pool.runs("ledger_add", "tools.log") == [
        ("note_read", "pool-a"),
        ("ledger_add", "pool-a"),
    ]
    assert pool.runs("ledger_add", "model.log") == [
        ("turn1", "pool-a"),
        ("turn2", "pool-a"),
        ("turn3", "pool-b"),
    ]
    assert pool.runs("direct-note_read", "tools.log") == [
        ("note_read", "pool-a"),
        ("note_read", "pool-b"),
        ("ledger_add", "pool-b"),
    ]
    assert sorted(tag for tag, _ in pool.lines("ledger.log")) == [
        "direct-note_read:+3",
        "note_read:+3",
        "turn2:+3",
    ]
    # Each finished ledger run is also a session in the store, written once by pool-b.
    assert sessions(system_db, tmp_path, list(answers)) == {
        tag: (["user", "assistant", "user", "assistant", "user", "assistant"], answer)
        for tag, answer in answers.items()
    }
    # The approval: the turn that asked is not asked again; the tool runs once, on pool-b.
    assert pool.runs("vault", "model.log") == [("turn1", "pool-a"), ("turn2", "pool-b")]
    assert pool.runs("vault", "tools.log") == [("vault_open", "pool-b")]


def test_a_restarted_worker_recovers_its_own_runs_and_ids_are_not_shared(
    system_db: str, tmp_path: Path
) -> None:
    pool = Pool(system_db, tmp_path)
    try:
        victim = pool.start("pool-a", "victim")
        pool.ready("pool-a")
        handle = pool.enqueue(LEDGER, "ledger_add")
        pool.wait(
            lambda: ("ledger_add:ledger_add", "pool-a") in pool.lines("tools.log"),
            "the victim never started ledger_add",
        )
        twin = pool.start("pool-a", "rescuer", "0.5")  # the same executor id, while it lives
        _, err = twin.communicate(timeout=60)
        pool.processes.remove(twin)
        assert twin.returncode == 3
        assert "executor id 'pool-a' is held by a live worker" in err

        pool.kill(victim)
        pool.start("pool-a", "rescuer")  # restarted with its executor id: DBOS's own recovery
        answer = handle.get_result()
    finally:
        pool.close()

    assert answer == f"final: the note says 3 | {INTERRUPTED_TEXT.format(name='ledger_add')}"
    assert pool.runs("ledger_add", "tools.log") == [
        ("note_read", "pool-a"),
        ("ledger_add", "pool-a"),
    ]
    assert [turn for turn, _ in pool.runs("ledger_add", "model.log")] == [
        "turn1",
        "turn2",
        "turn3",
    ]
    assert pool.lines("ledger.log") == []
    assert pool.lines("recovered.log") == []  # no other worker: DBOS's launch recovered it


def test_a_lease_is_held_once_and_released(system_db: str) -> None:
    first = WorkerLease.try_acquire(system_db, "solo")
    assert first is not None and first.held()
    assert WorkerLease.try_acquire(system_db, "solo") is None
    with pytest.raises(AgentError, match="'solo' is held by a live worker"):
        WorkerLease.acquire(system_db, "solo", timeout=0.2)
    other = WorkerLease.try_acquire(system_db, "other")
    assert other is not None
    first.release()
    assert not first.held()
    with WorkerLease.acquire(system_db, "solo", timeout=1) as again:
        assert again.held()
    other.release()


def test_recovery_names_the_workers_it_may_recover(tmp_path: Path) -> None:
    import anyio

    lease = WorkerLease.try_acquire(f"sqlite:///{tmp_path / 'db.sqlite'}", "w")
    assert lease is not None
    with lease, pytest.raises(ValueError, match="give prefix= or executor_ids="):
        anyio.run(lease.recover_dead_workers)
    with pytest.raises(AgentError, match="in a file"):
        WorkerLease.try_acquire("sqlite:///:memory:", "w")
    with pytest.raises(AgentError, match="SQLite or PostgreSQL"):
        WorkerLease.try_acquire("mysql://localhost/db", "w")


def test_a_worker_whose_lease_connection_ends_must_stop(postgres_url: str) -> None:
    import anyio
    import psycopg

    lease = WorkerLease.try_acquire(postgres_url, "cut")
    assert lease is not None and lease.held()
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        (ended,) = admin.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_locks "
            "WHERE locktype = 'advisory' AND pid <> pg_backend_pid()"
        ).fetchone() or (0,)
    assert ended == 1
    deadline = time.monotonic() + 10
    while lease.held():  # the server ends the session, and with it the lock
        assert time.monotonic() < deadline
        time.sleep(0.05)
    with pytest.raises(AgentError, match="'cut' lost its lease"):
        anyio.run(lambda: lease.watch(prefix="pool-"))
    taken = WorkerLease.try_acquire(postgres_url, "cut")  # another worker may take it now
    assert taken is not None
    taken.release()
    lease.release()
