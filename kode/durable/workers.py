"""`WorkerLease`: a worker's hold on its DBOS executor id, and recovery of dead workers' runs.

DBOS recovers a worker's pending runs when a process launches with that worker's
``executor_id``; without DBOS Conductor nothing notices that a worker died and hands its runs
to another. Recovering the runs of a worker that is still alive would run them twice at once,
so this module owns the one fact recovery needs: *is that executor alive?* A worker holds a
lease on its executor id for as long as its process lives, a lock the operating system or the
database server drops when the process dies (kill -9 included):

- SQLite system database (one machine): an exclusive ``flock`` on a file beside the database;
- PostgreSQL: a session-level advisory lock held by one connection of the worker, which the
  server drops when the connection ends.

A live worker finds the executors that have pending runs, takes the lease of each one it can
(the dead ones), hands their runs back to their queues with DBOS's recovery (for the live
workers to take) and lets the lease go. It does not own DBOS's configuration or launch.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import time
from collections.abc import Collection
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol

import anyio
import anyio.to_thread
import sqlalchemy as sa
from dbos import DBOS

from kode.agent.agent import AgentError

__all__ = ["WorkerLease"]

_log = logging.getLogger("kode.durable")

_KEEPALIVE = "-c tcp_keepalives_idle=10 -c tcp_keepalives_interval=5 -c tcp_keepalives_count=3"
"""Server-side TCP keepalives of the lease's connection: a dead machine's lease ends in ~25 s."""


class _Lock(Protocol):
    def try_lock(self) -> bool: ...

    def held(self) -> bool: ...

    def unlock(self) -> None: ...


class _FileLock:
    """An exclusive ``flock`` on a file: dropped by the kernel when the process ends."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._fd: int | None = None

    def try_lock(self) -> bool:
        import fcntl

        self._path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self._path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        self._fd = fd
        return True

    def held(self) -> bool:
        return self._fd is not None

    def unlock(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor drops its flock
            self._fd = None


class _AdvisoryLock:
    """A PostgreSQL session advisory lock on one connection: dropped when the session ends."""

    def __init__(self, url: sa.URL, key: int) -> None:
        self._engine = sa.create_engine(
            url,
            poolclass=sa.pool.NullPool,
            isolation_level="AUTOCOMMIT",
            connect_args={"options": _KEEPALIVE, "connect_timeout": 10},
        )
        self._key = key
        self._connection: sa.Connection | None = None

    def try_lock(self) -> bool:
        connection = self._engine.connect()
        try:
            got = connection.execute(
                sa.text("SELECT pg_try_advisory_lock(:key)"), {"key": self._key}
            ).scalar()
        except BaseException:
            connection.close()
            raise
        if not got:
            connection.close()
            return False
        self._connection = connection
        return True

    def held(self) -> bool:
        if self._connection is None:
            return False
        try:
            # The session holds the lock until it ends: a live session is a held lease.
            self._connection.execute(sa.text("SELECT 1"))
            return True
        except sa.exc.SQLAlchemyError:
            # Never use the connection again: reconnecting would open a session without the lock.
            self.unlock()
            return False

    def unlock(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            with contextlib.suppress(sa.exc.SQLAlchemyError):
                connection.close()  # ending the session drops its advisory locks
        self._engine.dispose()


def _lock_for(system_database_url: str, executor_id: str) -> _Lock:
    url = sa.make_url(system_database_url)
    backend = url.get_backend_name()
    if backend == "sqlite":
        database = url.database
        if not database or database == ":memory:":
            raise AgentError(
                f"a worker lease needs a SQLite system database in a file, not {url!s}: an "
                "in-memory database is one process, which needs no lease"
            )
        readable = re.sub(r"[^A-Za-z0-9_.-]", "_", executor_id)[:40]
        digest = hashlib.sha256(executor_id.encode()).hexdigest()[:12]
        path = Path(database)
        return _FileLock(path.with_name(f"{path.name}.kode-workers") / f"{readable}-{digest}.lock")
    if backend == "postgresql":
        key = int.from_bytes(
            hashlib.blake2b(f"kode.worker\0{executor_id}".encode(), digest_size=8).digest(),
            "big",
            signed=True,
        )
        return _AdvisoryLock(url.set(drivername="postgresql+psycopg"), key)
    raise AgentError(
        f"a worker lease works on a SQLite or PostgreSQL system database, not {backend!r} ({url!s})"
    )


class WorkerLease:
    """This process's hold on a DBOS executor id, for as long as the process lives.

    A worker takes the lease of its executor id before it launches DBOS with that id; the
    lease ends with the process, however it ends. A live worker recovers a dead worker's runs
    with `recover_dead_workers` (or `watch`): only an executor whose lease it can take is dead,
    so a live worker's runs are never recovered, and two live workers cannot share an id.
    Let it end with the process, or release it only after ``DBOS.destroy()``: a worker that
    still runs steps must not look dead.

    Example:
        ```python {.no-run}
        lease = WorkerLease.acquire(url, "worker-3")
        DBOS(config={"name": "agents", "system_database_url": url, "executor_id": "worker-3"})
        DBOS.launch()  # recovers worker-3's own pending runs, if it was restarted
        await lease.watch(prefix="worker-")  # and, every few seconds, those of dead workers
        ```
    """

    def __init__(self, system_database_url: str, executor_id: str, lock: _Lock) -> None:
        """Use `acquire` or `try_acquire`."""
        self.system_database_url = system_database_url
        """The DBOS system database the lease is kept in."""
        self.executor_id = executor_id
        """The executor id it holds (DBOS's ``executor_id`` configuration)."""
        self._lock = lock

    @classmethod
    def try_acquire(cls, system_database_url: str, executor_id: str) -> WorkerLease | None:
        """The lease of `executor_id`, or None when a live process holds it.

        Raises:
            AgentError: the system database is not a SQLite file or PostgreSQL.
        """
        if not executor_id:
            raise ValueError("executor_id must be a non-empty string")
        lock = _lock_for(system_database_url, executor_id)
        if not lock.try_lock():
            return None
        return cls(system_database_url, executor_id, lock)

    @classmethod
    def acquire(
        cls, system_database_url: str, executor_id: str, *, timeout: float = 30.0
    ) -> WorkerLease:
        """Take the lease of `executor_id`, waiting up to `timeout` seconds for it.

        A worker recovering this executor's runs holds it for a moment; a live worker with
        the same id holds it for its life.

        Raises:
            AgentError: another live process kept the lease for `timeout` seconds, or the
                system database is not a SQLite file or PostgreSQL.
        """
        deadline = time.monotonic() + timeout
        while True:
            lease = cls.try_acquire(system_database_url, executor_id)
            if lease is not None:
                return lease
            if time.monotonic() >= deadline:
                raise AgentError(
                    f"executor id {executor_id!r} is held by a live worker (its lease stayed "
                    f"taken for {timeout:g} s): give each worker its own executor_id, or stop "
                    "the worker that has it"
                )
            time.sleep(0.1)

    def held(self) -> bool:
        """Whether the lease is still held (False once released, or its connection lost)."""
        return self._lock.held()

    def release(self) -> None:
        """Let the lease go (the process ending does the same)."""
        self._lock.unlock()

    def __enter__(self) -> WorkerLease:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()

    async def recover_dead_workers(
        self, *, prefix: str | None = None, executor_ids: Collection[str] | None = None
    ) -> list[str]:
        """Hand the pending runs of dead workers back to their queues; return their ids.

        Call it in a worker that launched DBOS with this lease's executor id. The executors
        looked at are those with pending runs whose id starts with `prefix`, or is in
        `executor_ids`: name only workers that take a lease, since a process without one
        would look dead. For each one whose lease it can take (its process is gone), DBOS's
        recovery puts its pending runs back on their queues (a run started without a queue on
        DBOS's internal one), where a live worker takes each once; the lease is then let go.
        A recovered run continues after its last completed step, by the rule for a call in
        flight. DBOS recovers only runs of this worker's application version.

        Raises:
            ValueError: neither or both of `prefix` and `executor_ids` given.
            AgentError: DBOS was launched with another executor id than this lease's.
        """
        if (prefix is None) == (executor_ids is None):
            raise ValueError(
                "give prefix= or executor_ids=: the executor ids of workers that take a "
                "WorkerLease (the runs of a process without one would look dead)"
            )
        if DBOS.executor_id != self.executor_id:
            raise AgentError(
                f"DBOS was launched with executor_id {DBOS.executor_id!r}, not this lease's "
                f"{self.executor_id!r}: configure DBOS with executor_id=lease.executor_id"
            )
        pending = await DBOS.list_workflows_async(
            status="PENDING",
            executor_id=sorted(executor_ids) if executor_ids is not None else None,
            load_input=False,
            load_output=False,
        )
        candidates = sorted(
            {
                run.executor_id
                for run in pending
                if run.executor_id
                and run.executor_id != self.executor_id
                and (
                    run.executor_id.startswith(prefix)
                    if prefix is not None
                    else run.executor_id in (executor_ids or ())
                )
            }
        )
        recovered: list[str] = []
        for executor_id in candidates:
            lease = await anyio.to_thread.run_sync(
                WorkerLease.try_acquire, self.system_database_url, executor_id
            )
            if lease is None:
                continue  # alive
            try:
                handles = await anyio.to_thread.run_sync(_recover, executor_id)
            finally:
                lease.release()
            ids = [handle.get_workflow_id() for handle in handles]
            if ids:
                _log.info("recovered %d runs of dead worker %s: %s", len(ids), executor_id, ids)
            recovered += ids
        return recovered

    async def watch(
        self,
        *,
        interval: float = 5.0,
        prefix: str | None = None,
        executor_ids: Collection[str] | None = None,
    ) -> None:
        """Recover dead workers' runs every `interval` seconds, until cancelled.

        Raises:
            AgentError: this worker lost its own lease (its PostgreSQL connection ended):
                another worker may now recover its runs, so it must stop.
        """
        while True:
            if not await anyio.to_thread.run_sync(self.held):
                raise AgentError(
                    f"worker {self.executor_id!r} lost its lease (its connection to the system "
                    "database ended): stop this worker, since another may recover its runs"
                )
            try:
                await self.recover_dead_workers(prefix=prefix, executor_ids=executor_ids)
            except (sa.exc.DBAPIError, OSError) as exc:
                _log.warning("recovering dead workers failed, trying again: %s", exc)
            await anyio.sleep(interval)


def _recover(executor_id: str) -> list[Any]:
    recover = getattr(DBOS, "_recover_pending_workflows", None)
    if recover is None:  # pragma: no cover - a DBOS without it fails the tests
        raise AgentError(
            "this DBOS version has no _recover_pending_workflows: kode.durable cannot recover "
            "a dead worker's runs with it"
        )
    handles: list[Any] = recover([executor_id])
    return handles
