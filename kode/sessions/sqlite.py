"""`SQLiteStore`: sessions in one SQLite file, the embedded default.

The standard library's `sqlite3`, one connection per store behind a lock, each operation in
a worker thread. The file is in WAL mode (readers never wait for the writer, and other
processes can open the same file), with ``synchronous=NORMAL`` by default: a commit survives
the process being killed, and a power cut can lose the last commits but never corrupts the
file. ``synchronous="FULL"`` makes each commit survive a power cut too, at the cost of an
fsync per commit. Writers from several processes take turns; one waits up to `busy_timeout`
seconds for another's transaction before a `StoreError`.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal, TypeVar, cast

import anyio.to_thread

from kode.sessions._schema import migrate
from kode.sessions._sql import _COLUMNS, SQLStore
from kode.sessions.errors import StoreError
from kode.trust.protected import protect_database

__all__ = ["SQLiteStore"]

T = TypeVar("T")

# How far a filtered listing walks the listing's order, per session it asks for, before it
# reads the filter's index instead (SQLiteStore._page): a filter matching 1 session in 20
# is found by the walk.
_WALK_PER_ROW = 20

_WAIT = object()  # an operation that would have waited for another writer

# The operations short enough to run in the caller's thread (see SQLiteStore._run).
_SHORT = frozenset(
    {
        "_create_many",
        "_start",
        "_append",
        "_header_of",
        "_acquire",
        "_renew",
        "_release",
        "_set_label",
    }
)

SynchronousMode = Literal["NORMAL", "FULL"]


class SQLiteStore(SQLStore):
    """A `Store` in one SQLite file (or ``":memory:"``), WAL mode.

    Args:
        path: The database file (made if missing; its directory must exist), or
            ``":memory:"`` for a database that lives as long as the store.
        synchronous: ``"NORMAL"`` (default: durable across a crash of the process) or
            ``"FULL"`` (durable across a power cut too; an fsync per commit).
        busy_timeout: Seconds a writer waits for another process's transaction.

    The file is opened, and its schema created or upgraded, on first use.

    Example:
        ```python
        import tempfile
        from pathlib import Path

        import anyio
        from kode.sessions import SQLiteStore, StatusChanged

        async def main(folder: str) -> None:
            async with SQLiteStore(Path(folder) / "sessions.db") as store:
                session = await store.create(template="helper", label="demo")
                await store.append(session.id, [StatusChanged(status="running")])
                page = await store.list_sessions(label="demo")
                print([s.status for s in page.sessions])

        with tempfile.TemporaryDirectory() as folder:
            anyio.run(main, folder)
        ```
    """

    dialect = "sqlite"
    _begin_write = "BEGIN IMMEDIATE"  # take the write lock first: no upgrade deadlocks
    _begin_read = "BEGIN"
    _integrity_errors = (sqlite3.IntegrityError,)

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        synchronous: SynchronousMode = "NORMAL",
        busy_timeout: float = 5.0,
    ) -> None:
        if not isinstance(path, str | os.PathLike):
            raise TypeError(f"path must be a file path or ':memory:', got {type(path).__name__}")
        mode = str(synchronous).upper()
        if mode not in ("NORMAL", "FULL"):
            raise ValueError(f"synchronous must be 'NORMAL' or 'FULL', got {synchronous!r}")
        if isinstance(busy_timeout, bool) or not isinstance(busy_timeout, int | float):
            raise TypeError("busy_timeout must be a number of seconds")
        if busy_timeout < 0:
            raise ValueError(f"busy_timeout must be 0 or more seconds, got {busy_timeout}")
        self.path = str(path) if str(path) == ":memory:" else str(Path(path))
        """The database file (or ``":memory:"``)."""
        if self.path != ":memory:":
            protect_database(self.path)  # sandboxed commands of this process may not write it
        self.synchronous: SynchronousMode = mode  # type: ignore[assignment]
        """``"NORMAL"`` or ``"FULL"``."""
        self.busy_timeout = float(busy_timeout)
        """Seconds a writer waits for another process's transaction."""
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._closed = False
        self._busy_ms = 0  # the connection's busy_timeout now (switched only when it changes)

    def __repr__(self) -> str:
        return f"SQLiteStore({self.path!r}, synchronous={self.synchronous!r})"

    async def __aenter__(self) -> SQLiteStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def _where(self) -> str:
        return f"the SQLite database {self.path!r}"

    def _page(
        self,
        cur: Any,
        filters: Sequence[tuple[str, str]],
        after: tuple[int, str] | None,
        count: int,
    ) -> list[Any]:
        """A page, filtered without an index per filter on ``(filter, last_active, id)``.

        Only the listing's own index holds last_active (an index more that held it was a page
        more in every append's commit), so a filtered page is found one of two ways: walking
        the listing's order and keeping the sessions that match, which is quick when many do;
        or reading every session that matches from the filter's index and ordering them,
        which is quick when few do. SQLite keeps no statistics to choose by, so the walk goes
        first, for at most `_WALK_PER_ROW` rows a session asked for; a page it leaves short
        is read the second way (status has no index of its own: its few values are each
        shared by many sessions, so the walk finds them).
        """
        indexed = [(c, v) for c, v in filters if c != "status"]
        if not indexed:
            return super()._page(cur, filters, after, count)

        def body() -> list[Any]:
            keyset, params = "", []
            if after is not None:
                keyset, params = " AND (last_active, id) < (?, ?)", list(after)
            # Where the walk stops: the session `walk` places on (read from the listing's index
            # alone), or nowhere when fewer are left.
            cur.execute(
                f"SELECT last_active, id FROM kode_sessions WHERE 1{keyset} "
                "ORDER BY last_active DESC, id DESC LIMIT 1 OFFSET ?",
                (*params, count * _WALK_PER_ROW - 1),
            )
            bound = cur.fetchone()
            # `+column` keeps the planner off the filter's index: the walk is the point.
            match = "".join(f" AND +{c} = ?" for c, _ in filters)
            stop = "" if bound is None else " AND (last_active, id) >= (?, ?)"
            cur.execute(
                f"SELECT {_COLUMNS} FROM kode_sessions WHERE 1{keyset}{stop}{match} "
                "ORDER BY last_active DESC, id DESC LIMIT ?",
                (*params, *(bound or ()), *(v for _, v in filters), count),
            )
            rows = list(cur.fetchall())
            if len(rows) == count or bound is None:  # a whole page, or the walk reached the end
                return rows
            return super(SQLiteStore, self)._page(cur, filters, after, count)

        return self._transaction(cur, body, write=False)

    def _open(self) -> sqlite3.Connection:
        if self.path != ":memory:":
            folder = Path(self.path).parent
            if not folder.is_dir():
                raise StoreError(
                    f"cannot open {self._where()}: the directory {str(folder)!r} does not exist"
                )
            if Path(self.path).is_dir():
                raise StoreError(f"cannot open {self._where()}: it is a directory")
        conn = sqlite3.connect(
            self.path, timeout=self.busy_timeout, isolation_level=None, check_same_thread=False
        )
        try:
            deadline = time.monotonic() + self.busy_timeout
            while True:  # a new file's first journal switch can race another process's
                try:
                    conn.execute("PRAGMA journal_mode=WAL").fetchall()
                    break
                except sqlite3.OperationalError as exc:
                    if "locked" not in str(exc) or time.monotonic() > deadline:
                        raise
                    time.sleep(0.01)
            conn.execute(f"PRAGMA synchronous={self.synchronous}")
            migrate(conn.cursor(), "sqlite", self._where())
        except BaseException:
            conn.close()
            raise
        self._busy_ms = int(self.busy_timeout * 1000)  # as connect(timeout=...) set it
        return conn

    def _busy(self, conn: sqlite3.Connection, ms: int) -> None:
        """Set the connection's busy_timeout to `ms`, unless it is that already."""
        if self._busy_ms != ms:
            conn.execute(f"PRAGMA busy_timeout = {ms}")
            self._busy_ms = ms

    @contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            if self._closed:
                raise StoreError(f"this store of {self._where()} is closed")
            if self._conn is None:
                self._conn = self._open()
            self._busy(self._conn, int(self.busy_timeout * 1000))  # may wait for a writer
            yield self._conn

    def _failure(self, exc: Exception) -> Exception | None:
        if not isinstance(exc, sqlite3.Error):
            return None
        text = str(exc)
        if isinstance(exc, sqlite3.OperationalError) and ("locked" in text or "busy" in text):
            return StoreError(
                f"{self._where()} stayed locked by another writer for more than "
                f"{self.busy_timeout:g} s; raise busy_timeout, or keep long transactions out "
                "of this file (a process stopped inside a write transaction, by SIGSTOP or a "
                "debugger, holds the lock until it continues or ends)"
            )
        if "not a database" in text:
            return StoreError(f"{self._where()} is not a SQLite database (or is encrypted)")
        return StoreError(f"{self._where()} failed: {type(exc).__name__}: {text}")

    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        """Run one operation: here when it is short and need not wait, else in a worker thread.

        With ``synchronous`` NORMAL (no fsync per commit), the small operations of a run
        (create, append, get, acquire, renew, release, set_label) run in the caller's thread
        when the connection is free and no other process holds the write lock (they do not
        wait for one): a commit then costs no hop to a worker thread. Everything else, and
        anything that would wait, runs in a worker thread, waiting up to ``busy_timeout``.
        """
        if (
            self.synchronous != "FULL"
            and self._conn is not None
            and getattr(fn, "__name__", "") in _SHORT
        ):
            done = self._run_here(fn, args)
            if done is not _WAIT:
                return cast("T", done)
        return await super()._run(fn, *args)

    def _run_here(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> Any:
        """`fn` in this thread, or `_WAIT` when it would have to wait."""
        if not self._lock.acquire(blocking=False):
            return _WAIT
        try:
            conn = self._conn
            if conn is None or self._closed:
                return _WAIT
            self._busy(conn, 0)  # never wait here (kept at 0 until an operation may wait)
            try:
                return fn(conn.cursor(), *args)
            except sqlite3.OperationalError as exc:
                if "locked" in str(exc) or "busy" in str(exc):
                    return _WAIT  # another process writes: wait for it in a worker thread
                raise (self._failure(exc) or exc) from exc
            except sqlite3.Error as exc:
                raise (self._failure(exc) or exc) from exc
        finally:
            self._lock.release()

    async def aclose(self) -> None:
        """Close the connection; the store cannot be used after."""

        def close() -> None:
            with self._lock:
                self._closed = True
                if self._conn is not None:
                    self._conn.close()
                    self._conn = None

        await anyio.to_thread.run_sync(close)
