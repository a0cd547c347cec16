"""What the SQLite and PostgreSQL stores share: every operation as SQL over a DB-API cursor.

The two stores differ in how they connect (one SQLite connection behind a lock, a small pool
of PostgreSQL connections), in the placeholder, in how a write transaction begins, and in
their errors; the statements, the transactions and the checks are the same, here. Each
operation runs in a worker thread (`anyio.to_thread.run_sync`), so asyncio and trio both
work and the event loop never waits on the database; the thread is not cancellable, so a
transaction a task started is finished (committed or rolled back) even if the task is
cancelled meanwhile: an append either is in the log or is not.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Sequence
from contextlib import AbstractContextManager
from typing import Any, TypeVar

import anyio.to_thread

from kode.sessions._common import (
    check_checksum,
    check_id,
    check_last_seq,
    check_limit,
    check_load,
    check_new,
    check_status,
    check_text,
    check_ttl,
    checksum,
    conflict_error,
    decode_cursor,
    dump_records,
    encode_cursor,
    held_error,
    load_entry,
    load_metadata,
    lost_error,
    new_owner,
    new_session_id,
    now_us,
    owner_gone,
    to_seconds,
)
from kode.sessions._schema import DialectName
from kode.sessions.errors import SessionExistsError, SessionNotFoundError, StoreError
from kode.sessions.records import SessionRecord, SessionStatus
from kode.sessions.store import (
    DEFAULT_LEASE_TTL,
    Lease,
    NewSession,
    SessionHeader,
    SessionLog,
    SessionPage,
)

T = TypeVar("T")

_ROWS_PER_INSERT = 1000  # PostgreSQL takes at most 65,535 parameters per statement

_COLUMNS = (
    "id, template, label, status, created_at, last_active, last_seq, parent_id, "
    "forked_from, forked_at, metadata, lease_owner, lease_expires"
)


def _header(row: Sequence[Any]) -> SessionHeader:
    return SessionHeader(
        id=row[0],
        template=row[1],
        label=row[2],
        status=row[3],
        created_at=to_seconds(row[4]),
        last_active=to_seconds(row[5]),
        last_seq=row[6],
        parent_id=row[7],
        forked_from=row[8],
        forked_at=row[9],
        metadata=load_metadata(row[10]),
        lease_owner=row[11],
        lease_expires=to_seconds(row[12]) if row[12] is not None else None,
    )


class SQLStore:
    """The operations of `Store` in SQL; a subclass says how to connect and what failed."""

    dialect: DialectName = "sqlite"
    _begin_write = "BEGIN IMMEDIATE"
    _begin_read = "BEGIN"
    _integrity_errors: tuple[type[Exception], ...] = ()

    # --- what a subclass provides --------------------------------------------------------------

    def _connection(self) -> AbstractContextManager[Any]:
        """A connection for one operation (in a worker thread), migrated, in autocommit."""
        raise NotImplementedError

    def _failure(self, exc: Exception) -> Exception | None:
        """The `StoreError` for a driver's exception, or `None` to let it through."""
        raise NotImplementedError

    # --- running -------------------------------------------------------------------------------

    def _sql(self, text: str) -> str:
        return text if self.dialect == "sqlite" else text.replace("?", "%s")

    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        return await anyio.to_thread.run_sync(self._call, fn, args)

    def _call(self, fn: Callable[..., T], args: tuple[Any, ...]) -> T:
        try:
            with self._connection() as conn:
                return fn(conn.cursor(), *args)
        except StoreError:
            raise
        except Exception as exc:
            failure = self._failure(exc)
            if failure is None:
                raise
            raise failure from exc

    def _transaction(self, cur: Any, body: Callable[[], T], *, write: bool = True) -> T:
        cur.execute(self._begin_write if write else self._begin_read)
        try:
            out = body()
        except BaseException:
            try:
                cur.execute("ROLLBACK")
            except Exception:  # a broken connection: the error being raised says why
                pass
            raise
        cur.execute("COMMIT")
        return out

    def _one(self, cur: Any, sql: str, params: Sequence[Any] = ()) -> Any:
        cur.execute(self._sql(sql), tuple(params))
        rows = cur.fetchall()
        return rows[0] if rows else None

    def _header_of(self, cur: Any, session_id: str) -> SessionHeader:
        row = self._one(cur, f"SELECT {_COLUMNS} FROM kode_sessions WHERE id = ?", (session_id,))
        if row is None:
            raise SessionNotFoundError(f"no session {session_id!r} in this store")
        return _header(row)

    def _exists_error(self, cur: Any, ids: Sequence[str]) -> SessionExistsError:
        taken: list[str] = []
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ", ".join("?" * len(chunk))
            cur.execute(self._sql(f"SELECT id FROM kode_sessions WHERE id IN ({marks})"), chunk)
            taken += [r[0] for r in cur.fetchall()]
            if len(taken) >= 10:
                break
        return SessionExistsError(
            f"sessions exist already: {', '.join(map(repr, taken[:10])) or '(one of them)'}"
        )

    # --- Store ---------------------------------------------------------------------------------

    async def create(
        self,
        *,
        template: str,
        session_id: str | None = None,
        label: str | None = None,
        parent_id: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> SessionHeader:
        """Create an empty session; see `Store.create`."""
        made = await self.create_many(
            [
                NewSession(
                    template=template,
                    session_id=session_id,
                    label=label,
                    parent_id=parent_id,
                    metadata=metadata if metadata is not None else {},
                )
            ]
        )
        return made[0]

    async def create_many(self, sessions: Sequence[NewSession]) -> list[SessionHeader]:
        """Create sessions in one transaction; see `Store.create_many`."""
        checked = check_new(sessions)
        return await self._run(self._create_many, checked)

    def _create_many(
        self, cur: Any, checked: list[tuple[NewSession, str, str]]
    ) -> list[SessionHeader]:
        now = now_us()
        rows = [
            (sid, spec.template, spec.label, now, now, spec.parent_id, meta)
            for spec, sid, meta in checked
        ]
        try:
            self._transaction(
                cur,
                lambda: cur.executemany(
                    self._sql(
                        "INSERT INTO kode_sessions (id, template, label, status, created_at, "
                        "last_active, last_seq, parent_id, metadata) "
                        "VALUES (?, ?, ?, 'idle', ?, ?, 0, ?, ?)"
                    ),
                    rows,
                ),
            )
        except self._integrity_errors:
            raise self._exists_error(cur, [r[0] for r in rows]) from None
        return [
            SessionHeader(
                id=sid,
                template=spec.template,
                label=spec.label,
                created_at=to_seconds(now),
                last_active=to_seconds(now),
                parent_id=spec.parent_id,
                metadata=load_metadata(meta),
            )
            for spec, sid, meta in checked
        ]

    async def append(
        self,
        session_id: str,
        records: Sequence[SessionRecord],
        *,
        lease: Lease | None = None,
        if_last_seq: int | None = None,
    ) -> int:
        """Append records in one transaction; see `Store.append`."""
        check_id(session_id)
        rows = dump_records(records)
        expected = check_last_seq(if_last_seq)
        return await self._run(self._append, session_id, rows, lease, expected)

    def _append(
        self,
        cur: Any,
        session_id: str,
        rows: list[tuple[str, str, str | None]],
        lease: Lease | None,
        expected: int | None = None,
    ) -> int:
        def body() -> int:
            if not rows:
                header = self._header_of(cur, session_id)
                if lease is not None and header.lease_owner != lease.owner:
                    raise lost_error(session_id, lease.owner, header.lease_owner)
                if expected is not None and header.last_seq != expected:
                    raise conflict_error(session_id, expected, header.last_seq)
                return header.last_seq
            now = now_us()
            statuses = [s for _, _, s in rows if s is not None]
            sql = (
                "UPDATE kode_sessions SET last_seq = last_seq + ?, last_active = ?, "
                "status = COALESCE(?, status) WHERE id = ?"
            )
            params: list[Any] = [len(rows), now, statuses[-1] if statuses else None, session_id]
            if lease is not None:
                sql += " AND lease_owner = ?"
                params.append(lease.owner)
            if expected is not None:  # compare-and-set: the check is this very update
                sql += " AND last_seq = ?"
                params.append(expected)
            found = self._one(cur, sql + " RETURNING last_seq", params)
            if found is None:
                holder = self._one(
                    cur,
                    "SELECT lease_owner, last_seq FROM kode_sessions WHERE id = ?",
                    (session_id,),
                )
                if holder is None:
                    raise SessionNotFoundError(f"no session {session_id!r} in this store")
                if lease is not None and holder[0] != lease.owner:
                    raise lost_error(session_id, lease.owner, holder[0])
                assert expected is not None
                raise conflict_error(session_id, expected, int(holder[1]))
            last = int(found[0])
            self._insert_records(cur, session_id, last - len(rows) + 1, now, rows)
            return last

        return self._transaction(cur, body)

    async def start_session_at_once(
        self,
        session_id: str,
        template: str,
        parent_id: str | None,
        owner: str,
        ttl: float,
        records: Sequence[SessionRecord],
    ) -> tuple[Lease, int]:
        """Create or take up an empty session, take its lease and append, in one transaction.

        See `kode.sessions.starting.start_session`.
        """
        rows = dump_records(records)
        return await self._run(self._start, session_id, template, parent_id, owner, ttl, rows)

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
        def body() -> tuple[Lease, int]:
            now = now_us()
            expires = now + round(ttl * 1_000_000)
            statuses = [s for _, _, s in rows if s is not None]
            status = statuses[-1] if statuses else None
            count = len(rows)
            cur.execute(
                self._sql(
                    "INSERT INTO kode_sessions (id, template, status, created_at, last_active, "
                    "last_seq, parent_id, metadata, lease_owner, lease_expires) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, '{}', ?, ?) ON CONFLICT (id) DO NOTHING"
                ),
                (
                    session_id,
                    template,
                    status or "idle",
                    now,
                    now,
                    count,
                    parent_id,
                    owner,
                    expires,
                ),
            )
            if cur.rowcount != 1:  # it exists: take it up if it has no records and is free
                self._take_up(cur, session_id, owner, expires, count, now, status)
            if rows:
                self._insert_records(cur, session_id, 1, now, rows)
            return Lease(session_id=session_id, owner=owner, expires_at=to_seconds(expires)), count

        return self._transaction(cur, body)

    def _take_up(
        self,
        cur: Any,
        session_id: str,
        owner: str,
        expires: int,
        count: int,
        now: int,
        status: str | None,
    ) -> None:
        """Take the lease of an existing session that has no records (see `_start`)."""
        for _ in range(3):  # its lease released between the two statements: try again
            row = self._one(
                cur,
                "UPDATE kode_sessions SET lease_owner = ?, lease_expires = ?, last_seq = ?, "
                "last_active = ?, status = COALESCE(?, status) WHERE id = ? AND last_seq = 0 "
                "AND (lease_owner IS NULL OR lease_owner = ? OR lease_expires IS NULL "
                "OR lease_expires <= ?) RETURNING last_seq",
                (owner, expires, count, now, status, session_id, owner, now),
            )
            if row is not None:
                return
            held = self._one(
                cur,
                "SELECT last_seq, lease_owner, lease_expires FROM kode_sessions WHERE id = ?",
                (session_id,),
            )
            if held is None:  # deleted meanwhile
                raise SessionNotFoundError(f"no session {session_id!r} in this store")
            if held[0]:
                raise SessionExistsError(
                    f"session {session_id!r} already has {held[0]} records in the store"
                )
            if held[1] is not None and held[2] is not None and int(held[2]) > now:
                if not owner_gone(held[1]):
                    raise held_error(session_id, held[1], int(held[2]), now)
                cur.execute(  # an ended process's lease: taken from it, then taken up again
                    self._sql(
                        "UPDATE kode_sessions SET lease_owner = NULL, lease_expires = NULL "
                        "WHERE id = ? AND lease_owner = ?"
                    ),
                    (session_id, held[1]),
                )
        raise StoreError(f"the lease of session {session_id!r} changed hands too often to take")

    def _insert_records(
        self,
        cur: Any,
        session_id: str,
        first: int,
        now: int,
        rows: list[tuple[str, str, str | None]],
    ) -> None:
        values = [
            (session_id, first + i, now, k, d, checksum(first + i, now, k, d))
            for i, (k, d, _) in enumerate(rows)
        ]
        insert = "INSERT INTO kode_records (session_id, seq, at, type, data, checksum) VALUES "
        if self.dialect == "sqlite":
            # One prepared statement stepped once per record: measured a little faster than
            # one INSERT of every record (bench/store_writes.py), and no round trips to save.
            cur.executemany(insert + "(?, ?, ?, ?, ?, ?)", values)
            return
        # PostgreSQL: whole statements, never a pipeline (psycopg's executemany): between two
        # statements the server waits idle in the transaction, where its
        # idle_in_transaction_session_timeout ends a transaction whose process stopped; inside
        # a pipeline it would wait for the rest with no timeout. (An append is usually one
        # statement without a transaction: see PostgresStore._append.)
        for start in range(0, len(values), _ROWS_PER_INSERT):
            chunk = values[start : start + _ROWS_PER_INSERT]
            cur.execute(
                insert + ", ".join(["(%s, %s, %s, %s, %s, %s)"] * len(chunk)),
                [v for row in chunk for v in row],
            )

    async def load(
        self,
        session_id: str,
        *,
        after: int = 0,
        limit: int | None = None,
        types: Collection[str] | None = None,
    ) -> SessionLog:
        """Read a session; see `Store.load`."""
        check_id(session_id)
        checked = check_load(after, limit, types)
        header, rows = await self._run(self._load, session_id, *checked)
        entries = []
        for seq, at, kind, data, stored in rows:
            check_checksum(session_id, seq, at, kind, data, stored)
            entries.append(load_entry(seq, at, data))
        return SessionLog(header=header, entries=entries)

    def _load(
        self,
        cur: Any,
        session_id: str,
        after: int,
        limit: int | None,
        types: list[str] | None,
    ) -> tuple[SessionHeader, list[tuple[int, int, str, str, int | None]]]:
        def body() -> tuple[SessionHeader, list[tuple[int, int, str, str, int | None]]]:
            header = self._header_of(cur, session_id)
            sql = (
                "SELECT seq, at, type, data, checksum FROM kode_records "
                "WHERE session_id = ? AND seq > ?"
            )
            params: list[Any] = [session_id, after]
            if types is not None:
                sql += f" AND type IN ({', '.join('?' * len(types))})"
                params += types
            sql += " ORDER BY seq"
            if limit is not None:
                sql += " LIMIT ?"
                params.append(limit)
            cur.execute(self._sql(sql), tuple(params))
            return header, [
                (int(s), int(a), k, d, None if c is None else int(c))
                for s, a, k, d, c in cur.fetchall()
            ]

        return self._transaction(cur, body, write=False)

    async def get(self, session_id: str) -> SessionHeader:
        """A session's header; see `Store.get`."""
        check_id(session_id)
        return await self._run(self._header_of, session_id)

    async def list_sessions(
        self,
        *,
        template: str | None = None,
        label: str | None = None,
        status: SessionStatus | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> SessionPage:
        """A page of sessions, most recently active first; see `Store.list_sessions`."""
        limit = check_limit(limit)
        check_text(template, "template", optional=True)
        check_text(label, "label", optional=True)
        filters: list[tuple[str, str]] = []
        for column, value in (("template", template), ("label", label), ("status", status)):
            if value is not None:
                if column == "status":
                    check_status(value)
                filters.append((column, value))
        after = decode_cursor(cursor) if cursor is not None else None
        rows = await self._run(self._page, filters, after, limit + 1)
        more = len(rows) > limit
        rows = rows[:limit]
        return SessionPage(
            sessions=[_header(r) for r in rows],
            next_cursor=encode_cursor(int(rows[-1][5]), rows[-1][0]) if more else None,
        )

    def _page(
        self,
        cur: Any,
        filters: Sequence[tuple[str, str]],
        after: tuple[int, str] | None,
        count: int,
    ) -> list[Any]:
        """Up to `count` headers' rows matching `filters`, newest first, after the keyset."""
        where = [f"{column} = ?" for column, _ in filters]
        params: list[Any] = [value for _, value in filters]
        if after is not None:
            where.append("(last_active, id) < (?, ?)")
            params += after
        sql = f"SELECT {_COLUMNS} FROM kode_sessions"
        if where:
            sql += " WHERE " + " AND ".join(where)
        cur.execute(
            self._sql(sql + " ORDER BY last_active DESC, id DESC LIMIT ?"), (*params, count)
        )
        return list(cur.fetchall())

    async def set_label(self, session_id: str, label: str | None) -> SessionHeader:
        """Label a session; see `Store.set_label`."""
        check_id(session_id)
        check_text(label, "label", optional=True)
        return await self._run(self._set_label, session_id, label)

    def _set_label(self, cur: Any, session_id: str, label: str | None) -> SessionHeader:
        row = self._one(
            cur,
            f"UPDATE kode_sessions SET label = ? WHERE id = ? RETURNING {_COLUMNS}",
            (label, session_id),
        )
        if row is None:
            raise SessionNotFoundError(f"no session {session_id!r} in this store")
        return _header(row)

    async def fork(
        self,
        source_id: str,
        *,
        at: int | None = None,
        session_id: str | None = None,
        label: str | None = None,
    ) -> SessionHeader:
        """Copy a session up to a record; see `Store.fork`."""
        check_id(source_id, "source_id")
        new_id = check_id(session_id) if session_id is not None else new_session_id()
        check_text(label, "label", optional=True)
        if at is not None and (isinstance(at, bool) or not isinstance(at, int)):
            raise ValueError(f"at must be a record's sequence number (an int), got {at!r}")
        return await self._run(self._fork, source_id, at, new_id, label)

    def _fork(
        self, cur: Any, source_id: str, at: int | None, new_id: str, label: str | None
    ) -> SessionHeader:
        def body() -> SessionHeader:
            source = self._header_of(cur, source_id)
            point = source.last_seq if at is None else at
            if not 0 <= point <= source.last_seq:
                raise ValueError(
                    f"at must be a record of session {source_id!r} (0..{source.last_seq}), "
                    f"got {at!r}"
                )
            row = self._one(
                cur,
                "SELECT data FROM kode_records WHERE session_id = ? AND seq <= ? "
                "AND type = 'status' ORDER BY seq DESC LIMIT 1",
                (source_id, point),
            )
            status = check_status(json.loads(row[0])["status"]) if row else "idle"
            now = now_us()
            try:
                cur.execute(
                    self._sql(
                        "INSERT INTO kode_sessions (id, template, label, status, created_at, "
                        "last_active, last_seq, forked_from, forked_at, metadata) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
                    ),
                    (
                        new_id,
                        source.template,
                        label,
                        status,
                        now,
                        now,
                        point,
                        source_id,
                        point,
                        json.dumps(source.metadata, ensure_ascii=False, separators=(",", ":")),
                    ),
                )
            except self._integrity_errors:
                raise SessionExistsError(f"sessions exist already: {new_id!r}") from None
            cur.execute(
                self._sql(
                    "INSERT INTO kode_records (session_id, seq, at, type, data, checksum) "
                    "SELECT ?, seq, at, type, data, checksum FROM kode_records "
                    "WHERE session_id = ? AND seq <= ?"
                ),
                (new_id, source_id, point),
            )
            return self._header_of(cur, new_id)

        return self._transaction(cur, body)

    async def delete(self, session_id: str, *, force: bool = False) -> None:
        """Delete a session; see `Store.delete`."""
        check_id(session_id)
        await self._run(self._delete, session_id, force)

    def _delete(self, cur: Any, session_id: str, force: bool) -> None:
        def body() -> None:
            row = self._one(
                cur,
                "SELECT lease_owner, lease_expires FROM kode_sessions WHERE id = ?",
                (session_id,),
            )
            if row is None:
                raise SessionNotFoundError(f"no session {session_id!r} in this store")
            now = now_us()
            if not force and row[0] is not None and row[1] is not None and row[1] > now:
                raise held_error(session_id, row[0], int(row[1]), now)
            cur.execute(self._sql("DELETE FROM kode_records WHERE session_id = ?"), (session_id,))
            cur.execute(self._sql("DELETE FROM kode_sessions WHERE id = ?"), (session_id,))

        self._transaction(cur, body)

    async def acquire(
        self, session_id: str, *, owner: str | None = None, ttl: float = DEFAULT_LEASE_TTL
    ) -> Lease:
        """Take a session's lease; see `Store.acquire`."""
        check_id(session_id)
        who = check_id(owner, "owner") if owner is not None else new_owner()
        seconds = check_ttl(ttl)
        return await self._run(self._acquire, session_id, who, seconds)

    def _acquire(self, cur: Any, session_id: str, owner: str, ttl: float) -> Lease:
        for _ in range(3):  # a lease released between the two statements: try again
            now = now_us()
            expires = now + round(ttl * 1_000_000)
            row = self._one(
                cur,
                "UPDATE kode_sessions SET lease_owner = ?, lease_expires = ? WHERE id = ? AND "
                "(lease_owner IS NULL OR lease_owner = ? OR lease_expires IS NULL "
                "OR lease_expires <= ?) RETURNING lease_expires",
                (owner, expires, session_id, owner, now),
            )
            if row is not None:
                return Lease(session_id=session_id, owner=owner, expires_at=to_seconds(expires))
            held = self._one(
                cur,
                "SELECT lease_owner, lease_expires FROM kode_sessions WHERE id = ?",
                (session_id,),
            )
            if held is None:
                raise SessionNotFoundError(f"no session {session_id!r} in this store")
            if held[0] is not None and held[1] is not None and int(held[1]) > now:
                if not owner_gone(held[0]):
                    raise held_error(session_id, held[0], int(held[1]), now)
                # Its owner was a process of this host that has ended: nobody can renew the
                # lease, so it is taken now, from that owner only (one conditional write).
                row = self._one(
                    cur,
                    "UPDATE kode_sessions SET lease_owner = ?, lease_expires = ? WHERE id = ? "
                    "AND lease_owner = ? RETURNING lease_expires",
                    (owner, expires, session_id, held[0]),
                )
                if row is not None:
                    return Lease(session_id=session_id, owner=owner, expires_at=to_seconds(expires))
        raise StoreError(f"the lease of session {session_id!r} changed hands too often to take")

    async def renew(self, lease: Lease, *, ttl: float = DEFAULT_LEASE_TTL) -> Lease:
        """Extend a lease; see `Store.renew`."""
        if not isinstance(lease, Lease):
            raise TypeError(f"lease must be a Lease from acquire(), got {type(lease).__name__}")
        seconds = check_ttl(ttl)
        return await self._run(self._renew, lease, seconds)

    def _renew(self, cur: Any, lease: Lease, ttl: float) -> Lease:
        expires = now_us() + round(ttl * 1_000_000)
        row = self._one(
            cur,
            "UPDATE kode_sessions SET lease_expires = ? WHERE id = ? AND lease_owner = ? "
            "RETURNING lease_expires",
            (expires, lease.session_id, lease.owner),
        )
        if row is None:
            held = self._one(
                cur, "SELECT lease_owner FROM kode_sessions WHERE id = ?", (lease.session_id,)
            )
            raise lost_error(lease.session_id, lease.owner, held[0] if held else None)
        return Lease(session_id=lease.session_id, owner=lease.owner, expires_at=to_seconds(expires))

    async def release(self, lease: Lease) -> bool:
        """Give up a lease; see `Store.release`."""
        if not isinstance(lease, Lease):
            raise TypeError(f"lease must be a Lease from acquire(), got {type(lease).__name__}")
        return await self._run(self._release, lease)

    def _release(self, cur: Any, lease: Lease) -> bool:
        cur.execute(
            self._sql(
                "UPDATE kode_sessions SET lease_owner = NULL, lease_expires = NULL "
                "WHERE id = ? AND lease_owner = ?"
            ),
            (lease.session_id, lease.owner),
        )
        return bool(cur.rowcount and cur.rowcount > 0)
