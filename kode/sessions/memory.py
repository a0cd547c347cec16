"""`MemoryStore`: sessions in this process's memory, gone when it exits.

For tests, notebooks and agents that need no durability. It behaves as the database stores
do (same errors, same ordering, same paging, leases between tasks) and keeps records in
their JSON wire form, so what it accepts a database store accepts too, and what it returns
cannot be changed by the caller's later edits. What a run does on every step (get,
append, renew, release) does not pause for the event loop, as `SQLiteStore`'s short
operations do not either.
"""

from __future__ import annotations

import bisect
import json
import threading
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio.lowlevel

from kode.sessions._common import (
    check_id,
    check_last_seq,
    check_limit,
    check_load,
    check_new,
    check_status,
    check_text,
    check_ttl,
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

__all__ = ["MemoryStore"]


@dataclass(kw_only=True, slots=True)
class _Session:
    id: str
    template: str
    label: str | None
    status: str
    created: int
    active: int
    parent_id: str | None
    forked_from: str | None = None
    forked_at: int | None = None
    metadata: str = "{}"
    lease_owner: str | None = None
    lease_expires: int | None = None
    # (seq, at in µs, type, JSON): the wire form, as a database keeps it
    records: list[tuple[int, int, str, str]] = field(default_factory=list)

    def header(self) -> SessionHeader:
        return SessionHeader(
            id=self.id,
            template=self.template,
            label=self.label,
            status=self.status,  # type: ignore[arg-type]
            created_at=to_seconds(self.created),
            last_active=to_seconds(self.active),
            last_seq=len(self.records),
            parent_id=self.parent_id,
            forked_from=self.forked_from,
            forked_at=self.forked_at,
            metadata=load_metadata(self.metadata),
            lease_owner=self.lease_owner,
            lease_expires=(
                to_seconds(self.lease_expires) if self.lease_expires is not None else None
            ),
        )


class MemoryStore:
    """A `Store` in memory: for tests, notebooks and agents that need no durability.

    Example:
        ```python
        import anyio
        from kode.models import Message
        from kode.sessions import MemoryStore, MessageAdded

        async def main() -> None:
            store = MemoryStore()
            session = await store.create(template="helper")
            await store.append(session.id, [MessageAdded(message=Message.user("Hi"))])
            log = await store.load(session.id)
            print(log.state().messages[0].text)

        anyio.run(main)
        ```
    """

    def __init__(self) -> None:
        self._sessions: dict[str, _Session] = {}
        self._order: list[tuple[int, str]] = []  # (last active, id), ascending
        self._lock = threading.Lock()  # decide() may append from another thread
        self._closed = False

    def __repr__(self) -> str:
        return f"MemoryStore({len(self._sessions)} sessions)"

    async def __aenter__(self) -> MemoryStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def _get(self, session_id: str) -> _Session:
        if self._closed:
            raise StoreError("this MemoryStore is closed")
        found = self._sessions.get(check_id(session_id))
        if found is None:
            raise SessionNotFoundError(f"no session {session_id!r} in this store")
        return found

    def _touch(self, session: _Session, active: int) -> None:
        if active == session.active:
            return
        old = (session.active, session.id)
        index = bisect.bisect_left(self._order, old)
        if index < len(self._order) and self._order[index] == old:
            del self._order[index]
        session.active = active
        bisect.insort(self._order, (active, session.id))

    def _insert(self, session: _Session) -> None:
        self._sessions[session.id] = session
        bisect.insort(self._order, (session.active, session.id))

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
        """Create sessions, all or none; see `Store.create_many`."""
        await anyio.lowlevel.checkpoint()
        checked = check_new(sessions)
        with self._lock:
            taken = [sid for _, sid, _ in checked if sid in self._sessions]
            if taken:
                raise SessionExistsError(
                    f"sessions exist already: {', '.join(map(repr, taken[:10]))}"
                )
            now = now_us()
            made = []
            for spec, sid, meta in checked:
                session = _Session(
                    id=sid,
                    template=spec.template,
                    label=spec.label,
                    status="idle",
                    created=now,
                    active=now,
                    parent_id=spec.parent_id,
                    metadata=meta,
                )
                self._insert(session)
                made.append(session.header())
            return made

    async def append(
        self,
        session_id: str,
        records: Sequence[SessionRecord],
        *,
        lease: Lease | None = None,
        if_last_seq: int | None = None,
    ) -> int:
        """Append records, all or none; see `Store.append`."""
        rows = dump_records(records)
        expected = check_last_seq(if_last_seq)
        with self._lock:
            session = self._get(session_id)
            if lease is not None and session.lease_owner != lease.owner:
                raise lost_error(session_id, lease.owner, session.lease_owner)
            if expected is not None and len(session.records) != expected:
                raise conflict_error(session_id, expected, len(session.records))
            return self._add(session, rows, now_us())

    async def start_session_at_once(
        self,
        session_id: str,
        template: str,
        parent_id: str | None,
        owner: str,
        ttl: float,
        records: Sequence[SessionRecord],
    ) -> tuple[Lease, int]:
        """Create or take up an empty session, take its lease and append, all or nothing.

        See `kode.sessions.starting.start_session`.
        """
        rows = dump_records(records)
        with self._lock:
            if self._closed:
                raise StoreError("this MemoryStore is closed")
            now = now_us()
            session = self._sessions.get(session_id)
            if session is None:
                session = _Session(
                    id=session_id,
                    template=template,
                    label=None,
                    status="idle",
                    created=now,
                    active=now,
                    parent_id=parent_id,
                )
                self._insert(session)
            elif session.records:
                raise SessionExistsError(
                    f"session {session_id!r} already has {len(session.records)} records in "
                    "the store"
                )
            elif (
                session.lease_owner not in (None, owner)
                and session.lease_expires is not None
                and session.lease_expires > now
                and not owner_gone(session.lease_owner)
            ):
                assert session.lease_owner is not None
                raise held_error(session_id, session.lease_owner, session.lease_expires, now)
            session.lease_owner = owner
            session.lease_expires = now + round(ttl * 1_000_000)
            lease = Lease(
                session_id=session_id, owner=owner, expires_at=to_seconds(session.lease_expires)
            )
            if rows:
                self._add(session, rows, now)
            return lease, len(session.records)

    def _add(self, session: _Session, rows: list[tuple[str, str, str | None]], now: int) -> int:
        seq = len(session.records)
        for kind, data, status in rows:
            seq += 1
            session.records.append((seq, now, kind, data))
            if status is not None:
                session.status = status
        self._touch(session, now)
        return seq

    async def load(
        self,
        session_id: str,
        *,
        after: int = 0,
        limit: int | None = None,
        types: Collection[str] | None = None,
    ) -> SessionLog:
        """Read a session; see `Store.load`."""
        await anyio.lowlevel.checkpoint()
        after, limit, chosen = check_load(after, limit, types)
        with self._lock:
            session = self._get(session_id)
            header = session.header()
            rows = session.records[after:]
        wanted = set(chosen) if chosen is not None else None
        entries = []
        for seq, at, kind, data in rows:
            if wanted is not None and kind not in wanted:
                continue
            entries.append(load_entry(seq, at, data))
            if limit is not None and len(entries) >= limit:
                break
        return SessionLog(header=header, entries=entries)

    async def get(self, session_id: str) -> SessionHeader:
        """A session's header; see `Store.get`."""
        with self._lock:
            return self._get(session_id).header()

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
        await anyio.lowlevel.checkpoint()
        limit = check_limit(limit)
        check_text(template, "template", optional=True)
        check_text(label, "label", optional=True)
        if status is not None:
            check_status(status)
        with self._lock:
            end = (
                bisect.bisect_left(self._order, decode_cursor(cursor))
                if cursor is not None
                else len(self._order)
            )
            found: list[_Session] = []
            more = False
            for index in range(end - 1, -1, -1):
                session = self._sessions[self._order[index][1]]
                if (
                    (template is not None and session.template != template)
                    or (label is not None and session.label != label)
                    or (status is not None and session.status != status)
                ):
                    continue
                if len(found) == limit:
                    more = True
                    break
                found.append(session)
            headers = [s.header() for s in found]
        last = found[-1] if found else None
        return SessionPage(
            sessions=headers,
            next_cursor=encode_cursor(last.active, last.id) if more and last else None,
        )

    async def set_label(self, session_id: str, label: str | None) -> SessionHeader:
        """Label a session; see `Store.set_label`."""
        await anyio.lowlevel.checkpoint()
        check_text(label, "label", optional=True)
        with self._lock:
            session = self._get(session_id)
            session.label = label
            return session.header()

    async def fork(
        self,
        source_id: str,
        *,
        at: int | None = None,
        session_id: str | None = None,
        label: str | None = None,
    ) -> SessionHeader:
        """Copy a session up to a record; see `Store.fork`."""
        await anyio.lowlevel.checkpoint()
        sid = check_id(session_id) if session_id is not None else new_session_id()
        check_text(label, "label", optional=True)
        with self._lock:
            source = self._get(source_id)
            last = len(source.records)
            point = last if at is None else at
            if isinstance(point, bool) or not isinstance(point, int) or not 0 <= point <= last:
                raise ValueError(
                    f"at must be a record of session {source_id!r} (0..{last}), got {at!r}"
                )
            if sid in self._sessions:
                raise SessionExistsError(f"sessions exist already: {sid!r}")
            copied = source.records[:point]
            status = "idle"
            for _, _, kind, data in reversed(copied):
                if kind == "status":
                    status = check_status(json.loads(data)["status"])
                    break
            now = now_us()
            session = _Session(
                id=sid,
                template=source.template,
                label=label,
                status=status,
                created=now,
                active=now,
                parent_id=None,
                forked_from=source.id,
                forked_at=point,
                metadata=source.metadata,
                records=list(copied),
            )
            self._insert(session)
            return session.header()

    async def delete(self, session_id: str, *, force: bool = False) -> None:
        """Delete a session; see `Store.delete`."""
        await anyio.lowlevel.checkpoint()
        with self._lock:
            session = self._get(session_id)
            now = now_us()
            if (
                not force
                and session.lease_owner is not None
                and session.lease_expires is not None
                and session.lease_expires > now
            ):
                raise held_error(session_id, session.lease_owner, session.lease_expires, now)
            del self._sessions[session.id]
            key = (session.active, session.id)
            del self._order[bisect.bisect_left(self._order, key)]

    async def acquire(
        self, session_id: str, *, owner: str | None = None, ttl: float = DEFAULT_LEASE_TTL
    ) -> Lease:
        """Take a session's lease; see `Store.acquire`."""
        await anyio.lowlevel.checkpoint()
        who = check_id(owner, "owner") if owner is not None else new_owner()
        seconds = check_ttl(ttl)
        with self._lock:
            session = self._get(session_id)
            now = now_us()
            if (
                session.lease_owner not in (None, who)
                and session.lease_expires is not None
                and session.lease_expires > now
                and not owner_gone(session.lease_owner)  # an ended process of this host
            ):
                assert session.lease_owner is not None
                raise held_error(session_id, session.lease_owner, session.lease_expires, now)
            session.lease_owner = who
            session.lease_expires = now + round(seconds * 1_000_000)
            return Lease(
                session_id=session.id, owner=who, expires_at=to_seconds(session.lease_expires)
            )

    async def renew(self, lease: Lease, *, ttl: float = DEFAULT_LEASE_TTL) -> Lease:
        """Extend a lease; see `Store.renew`."""
        seconds = check_ttl(ttl)
        with self._lock:
            session = self._sessions.get(lease.session_id)
            if session is None or session.lease_owner != lease.owner:
                holder = session.lease_owner if session is not None else None
                raise lost_error(lease.session_id, lease.owner, holder)
            session.lease_expires = now_us() + round(seconds * 1_000_000)
            return Lease(
                session_id=session.id,
                owner=lease.owner,
                expires_at=to_seconds(session.lease_expires),
            )

    async def release(self, lease: Lease) -> bool:
        """Give up a lease; see `Store.release`."""
        with self._lock:
            session = self._sessions.get(lease.session_id)
            if session is None or session.lease_owner != lease.owner:
                return False
            session.lease_owner = None
            session.lease_expires = None
            return True

    async def aclose(self) -> None:
        """Forget every session; the store cannot be used after."""
        await anyio.lowlevel.checkpoint()
        with self._lock:
            self._closed = True
            self._sessions.clear()
            self._order.clear()
