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
from kode.sessions._common import checksum, now_us, to_seconds
from kode.sessions._schema import migrate
from kode.sessions._sql import SQLStore
from kode.sessions.errors import StoreError
from kode.sessions.store import Lease

__all__ = ["PostgresStore"]

_KNOWN_SEQS = 4096  # sessions whose last record number a store remembers (then forgets all)

# An append as one statement, so one round trip in autocommit (its own transaction): the
# header's update, conditioned on the last record number the store expects, and the records
# inserted only if that update matched. The rows come as arrays, so the text is the same for
# any number of records and the server keeps it prepared.
_APPEND_AT = (
    "WITH s AS (UPDATE kode_sessions SET last_seq = %s, last_active = %s, "
    "status = COALESCE(%s, status) WHERE id = %s AND last_seq = %s{lease} RETURNING id) "
    "INSERT INTO kode_records (session_id, seq, at, type, data, checksum) "
    "SELECT s.id, r.seq, %s, r.type, r.data, r.checksum FROM s, "
    "unnest(%s::bigint[], %s::text[], %s::text[], %s::bigint[]) AS r(seq, type, data, checksum)"
)
_APPEND_AT_FREE = _APPEND_AT.format(lease="")
_APPEND_AT_LEASED = _APPEND_AT.format(lease=" AND lease_owner = %s")
# A run's first commit as one statement: the session made and leased, and its records written,
# unless the session exists (then the transaction of `SQLStore._start` takes it up).
_START_NEW = (
    "WITH s AS (INSERT INTO kode_sessions (id, template, status, created_at, last_active, "
    "last_seq, parent_id, metadata, lease_owner, lease_expires) "
    "VALUES (%s, %s, %s, %s, %s, %s, %s, '{}', %s, %s) ON CONFLICT (id) DO NOTHING RETURNING id) "
    "INSERT INTO kode_records (session_id, seq, at, type, data, checksum) "
    "SELECT s.id, r.seq, %s, r.type, r.data, r.checksum FROM s, "
    "unnest(%s::bigint[], %s::text[], %s::text[], %s::bigint[]) AS r(seq, type, data, checksum)"
)


def _columns(
    first: int, now: int, rows: list[tuple[str, str, str | None]]
) -> tuple[list[int], list[str], list[str], list[int]]:
    """The records from number `first` on as the four arrays `_APPEND_AT` and `_START_NEW` take."""
    seqs = list(range(first, first + len(rows)))
    kinds = [k for k, _, _ in rows]
    texts = [d for _, d, _ in rows]
    sums = [checksum(n, now, k, d) for n, (k, d, _) in zip(seqs, rows, strict=True)]
    return seqs, kinds, texts, sums


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
        # The last record number each session had at this store's last write: an append that
        # expects it is one statement; any other (another process wrote, or it was forgotten)
        # takes the transaction of `SQLStore._append`, which finds the number and checks
        # everything again.
        self._seqs: dict[str, int] = {}

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

    # --- one round trip per commit ----------------------------------------------------------

    def _remember(self, session_id: str, last_seq: int) -> None:
        if len(self._seqs) >= _KNOWN_SEQS and session_id not in self._seqs:
            self._seqs.clear()
        self._seqs[session_id] = last_seq

    def _append(
        self,
        cur: Any,
        session_id: str,
        rows: list[tuple[str, str, str | None]],
        lease: Lease | None,
        expected: int | None = None,
    ) -> int:
        """`SQLStore._append` in one statement when the session's last record is known."""
        known = expected if expected is not None else self._seqs.get(session_id)
        if rows and known is not None:
            now = now_us()
            statuses = [s for _, _, s in rows if s is not None]
            last = known + len(rows)
            params: list[Any] = [
                last,
                now,
                statuses[-1] if statuses else None,
                session_id,
                known,
            ]
            if lease is not None:
                params.append(lease.owner)
            params += [now, *_columns(known + 1, now, rows)]
            cur.execute(_APPEND_AT_LEASED if lease is not None else _APPEND_AT_FREE, params)
            if cur.rowcount == len(rows):
                self._seqs[session_id] = last
                return last
            # Not written: the last record is another, the lease another's, or no session.
        last = super()._append(cur, session_id, rows, lease, expected)
        self._remember(session_id, last)
        return last

    def _start(
        self,
        cur: Any,
        session_id: str,
        template: str,
        parent_id: str | None,
        owner: str,
        ttl: float,
        rows: list[tuple[str, str, str | None]],
    ) -> tuple[Lease, int]:
        """`SQLStore._start` in one statement when the session is new and gets records."""
        if rows:
            now = now_us()
            expires = now + round(ttl * 1_000_000)
            statuses = [s for _, _, s in rows if s is not None]
            params = [
                session_id,
                template,
                statuses[-1] if statuses else "idle",
                now,
                now,
                len(rows),
                parent_id,
                owner,
                expires,
                now,
                *_columns(1, now, rows),
            ]
            cur.execute(_START_NEW, params)
            if cur.rowcount == len(rows):
                self._remember(session_id, len(rows))
                lease = Lease(session_id=session_id, owner=owner, expires_at=to_seconds(expires))
                return lease, len(rows)
            # It exists: the transaction takes it up if it may.
        made = super()._start(cur, session_id, template, parent_id, owner, ttl, rows)
        self._remember(session_id, made[1])
        return made

    def _delete(self, cur: Any, session_id: str, force: bool) -> None:
        super()._delete(cur, session_id, force)
        self._seqs.pop(session_id, None)

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
