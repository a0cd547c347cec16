"""`PostgresStore`: sessions in a PostgreSQL database, shared by many processes and hosts.

psycopg 3 (the extra ``postgres``), a small pool of
connections, each operation in a worker thread as in `SQLiteStore`: psycopg's own async
connections run only on asyncio, and kode runs on trio too; a worker thread also finishes a
transaction whose task was cancelled, so a commit is never left half-known. Tables are
named ``kode_*`` so they can live in an application's own database; the schema is created or
upgraded on first use, under an advisory lock.
"""

from __future__ import annotations

import select
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import anyio.to_thread

from kode.extras import install_hint
from kode.sessions._schema import migrate
from kode.sessions._sql import SQLStore
from kode.sessions.errors import StoreError

__all__ = ["PostgresStore"]


def _import_psycopg() -> Any:
    try:
        import psycopg
    except ImportError:
        raise ImportError(f"PostgresStore needs psycopg 3: {install_hint('postgres')}") from None
    return psycopg


def redact(url: str) -> str:
    """`url` with its password replaced by ``***`` (for messages and reprs)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<a PostgreSQL URL>"
    if parts.password is None:
        return url
    host = parts.netloc.rsplit("@", 1)[-1]
    netloc = f"{parts.username or ''}:***@{host}"
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def _alive(conn: Any) -> bool:
    """Whether an idle connection still works.

    The server sends nothing to an idle connection, so a readable socket means it closed the
    connection (a restart, ``pg_terminate_backend``).
    """
    if conn.closed or conn.broken:
        return False
    try:
        readable, _, _ = select.select([conn.fileno()], [], [], 0)
    except (OSError, ValueError):
        return False
    return not readable


class PostgresStore(SQLStore):
    """A `Store` in PostgreSQL.

    Args:
        url: A libpq connection URL, ``postgresql://user:password@host:port/database``
            (query parameters such as ``sslmode`` pass through to libpq).
        max_connections: Connections the store opens at most; operations beyond that wait
            for one to be free.
        connect_timeout: Seconds to wait for the server when connecting.
        lock_timeout: Seconds an operation waits for a row another transaction holds (then a
            `StoreError`), and the longest one of this store's transactions may sit idle
            between its statements before the server ends it: a process stopped inside a
            write (``SIGSTOP``, a debugger) loses that transaction, and its lock, after this
            long, instead of blocking the session's other writers for as long as it stays
            stopped.

    Connections are made on first use; the schema is created or upgraded then.
    """

    dialect = "postgres"
    _begin_write = "BEGIN"
    _begin_read = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"  # one snapshot per load

    def __init__(
        self,
        url: str,
        *,
        max_connections: int = 4,
        connect_timeout: float = 10.0,
        lock_timeout: float = 5.0,
    ) -> None:
        if not isinstance(url, str) or not url.startswith(("postgresql://", "postgres://")):
            raise ValueError(f"url must be a postgresql:// URL, got {redact(str(url))!r}")
        if isinstance(max_connections, bool) or not isinstance(max_connections, int):
            raise TypeError("max_connections must be an int")
        if max_connections < 1:
            raise ValueError(f"max_connections must be 1 or more, got {max_connections}")
        if isinstance(lock_timeout, bool) or not isinstance(lock_timeout, int | float):
            raise TypeError("lock_timeout must be a number of seconds")
        if not 0 < lock_timeout < 86_400:
            raise ValueError(f"lock_timeout must be above 0 and under a day, got {lock_timeout}")
        self._psycopg = _import_psycopg()
        self._integrity_errors = (self._psycopg.IntegrityError,)
        self.url = url
        """The connection URL."""
        self.max_connections = max_connections
        """Connections the store opens at most."""
        self.connect_timeout = float(connect_timeout)
        """Seconds to wait for the server when connecting."""
        self.lock_timeout = float(lock_timeout)
        """Seconds an operation waits for a row lock, and a transaction may sit idle."""
        self._idle: list[Any] = []
        self._count = 0  # connections open or being opened
        self._free = threading.Condition()
        self._migrated = False
        self._migrate_lock = threading.Lock()
        self._closed = False

    def __repr__(self) -> str:
        return f"PostgresStore({redact(self.url)!r})"

    async def __aenter__(self) -> PostgresStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def _where(self) -> str:
        return f"the PostgreSQL database at {redact(self.url)}"

    def _connect(self) -> Any:
        conn = self._psycopg.connect(
            self.url, autocommit=True, connect_timeout=max(1, round(self.connect_timeout))
        )
        try:
            # No wait for a row lock, and no transaction left open, outlasts lock_timeout:
            # a writer stopped inside a transaction loses it (the server ends its connection),
            # so the others (a process taking over the session) are not blocked for good.
            ms = max(1, round(self.lock_timeout * 1000))
            conn.execute(f"SET lock_timeout = {ms}; SET idle_in_transaction_session_timeout = {ms}")
            with self._migrate_lock:
                if not self._migrated:
                    migrate(conn.cursor(), "postgres", self._where())
                    self._migrated = True
        except BaseException:
            conn.close()
            raise
        return conn

    @contextmanager
    def _connection(self) -> Iterator[Any]:
        conn = self._take()
        try:
            yield conn
        finally:
            healthy = (
                not conn.closed
                and not conn.broken
                and conn.info.transaction_status == self._psycopg.pq.TransactionStatus.IDLE
            )
            self._give_back(conn, broken=not healthy)

    def _take(self) -> Any:
        deadline = time.monotonic() + self.connect_timeout + 60.0
        with self._free:
            while True:
                if self._closed:
                    raise StoreError(f"this store of {self._where()} is closed")
                while self._idle:
                    conn = self._idle.pop()
                    if _alive(conn):
                        return conn
                    self._count -= 1  # the server ended it while it was idle
                    conn.close()
                if self._count < self.max_connections:
                    self._count += 1
                    break
                left = deadline - time.monotonic()
                if left <= 0:
                    raise StoreError(
                        f"no connection to {self._where()} was free for over a minute "
                        f"(max_connections={self.max_connections})"
                    )
                self._free.wait(left)
        try:
            return self._connect()
        except BaseException:
            with self._free:
                self._count -= 1
                self._free.notify()
            raise

    def _give_back(self, conn: Any, *, broken: bool) -> None:
        with self._free:
            if broken or self._closed:
                self._count -= 1
                close = True
            else:
                self._idle.append(conn)
                close = False
            self._free.notify()
        if close:
            try:
                conn.close()
            except Exception:  # closing a broken connection: nothing left to do
                pass

    def _failure(self, exc: Exception) -> Exception | None:
        if not isinstance(exc, self._psycopg.Error):
            return None
        text = str(exc).strip() or type(exc).__name__
        if isinstance(exc, self._psycopg.errors.LockNotAvailable):
            return StoreError(
                f"{self._where()}: a row this operation needs stayed locked by another "
                f"transaction for more than {self.lock_timeout:g} s (a process stopped inside "
                "a write loses its transaction after that long); try again"
            )
        if isinstance(exc, self._psycopg.OperationalError):
            return StoreError(f"cannot use {self._where()}: {text}")
        return StoreError(f"{self._where()} failed: {type(exc).__name__}: {text}")

    async def aclose(self) -> None:
        """Close every connection; the store cannot be used after."""

        def close() -> None:
            with self._free:
                self._closed = True
                idle, self._idle = self._idle, []
                self._count -= len(idle)
            for conn in idle:
                conn.close()

        await anyio.to_thread.run_sync(close)
