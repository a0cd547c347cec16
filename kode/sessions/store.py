"""The `Store` protocol: where sessions live, and the values it hands back.

This module owns the seam a storage backend fills (`Store`) and what crosses it: a session's
`SessionHeader`, a `SessionLog` (header and entries), a `SessionPage` of a listing, a `Lease`
and a `NewSession` for bulk creation. It implements no storage: `MemoryStore`, `SQLiteStore`
and `PostgresStore` do, with the same behaviour (one test-suite runs against all three).

A store only appends and reads: it gives each record its sequence number and time, keeps the
header's status and last activity current, and never interprets the records (see
`kode.sessions.state` for what they add up to). Every `append` is one transaction: a batch is
written whole or not at all, and is durable before `append` returns.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from kode.sessions.records import SessionEntry, SessionRecord, SessionStatus
from kode.sessions.state import SessionState, fold

if TYPE_CHECKING:  # the former path of start_session (see __getattr__)
    from kode.sessions.starting import start_session as start_session

__all__ = [
    "DEFAULT_LEASE_TTL",
    "MAX_PAGE_SIZE",
    "Lease",
    "NewSession",
    "SessionHeader",
    "SessionLog",
    "SessionPage",
    "Store",
]

DEFAULT_LEASE_TTL = 30.0
"""Seconds a lease lasts unless renewed."""

MAX_PAGE_SIZE = 1000
"""The most sessions one `Store.list_sessions` page holds."""


class SessionHeader(BaseModel):
    """What a store knows about a session without reading its records."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    id: str
    """The session's id."""
    template: str
    """The id of the agent template it runs."""
    label: str | None = None
    """A name people give it (`Store.set_label`), for finding it again."""
    status: SessionStatus = "idle"
    """Its latest `StatusChanged`."""
    created_at: float
    """When it was created (``time.time()``)."""
    last_active: float
    """When a record was last appended (or it was created)."""
    last_seq: int = 0
    """The sequence number of its last record (0: none yet)."""
    parent_id: str | None = None
    """The session that started this one (a sub-agent's parent), if any."""
    forked_from: str | None = None
    """The session this one was forked from, if any."""
    forked_at: int | None = None
    """The last record of `forked_from` this one copied."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """What the application stored with it at creation (JSON values)."""
    lease_owner: str | None = None
    """Who holds or last held its lease (check `lease_expires`), if anyone."""
    lease_expires: float | None = None
    """When that lease runs out (``time.time()``)."""

    def leased(self, now: float) -> bool:
        """Whether someone holds the lease at `now` (a lease past its expiry is free to take)."""
        return (
            self.lease_owner is not None
            and self.lease_expires is not None
            and self.lease_expires > now
        )


class SessionLog(BaseModel):
    """A session's header and the entries `Store.load` read."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    header: SessionHeader
    """The header."""
    entries: list[SessionEntry]
    """The entries read, by sequence number."""

    def state(self) -> SessionState:
        """The session's state: `fold` over the entries (which must start at record 1).

        Raises:
            ValueError: the entries were read from a later record, or filtered by type, so
                they are not the whole log.
            SessionRecordError: a record breaks a rule of `kode.sessions.state`.
        """
        complete = not self.entries or (
            self.entries[0].seq == 1 and self.entries[-1].seq - 1 == len(self.entries) - 1
        )
        if not complete:
            raise ValueError(
                f"the state of session {self.header.id!r} needs its whole log, but records "
                f"{self.entries[0].seq}..{self.entries[-1].seq} were read "
                f"({len(self.entries)} entries); load it without after=, types= or limit="
            )
        return fold(self.entries)


class SessionPage(BaseModel):
    """One page of `Store.list_sessions`: the most recently active first."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    sessions: list[SessionHeader]
    """The sessions of this page."""
    next_cursor: str | None = None
    """Pass it as ``cursor=`` for the next page; `None` on the last page."""


@dataclass(kw_only=True, frozen=True, slots=True)
class Lease:
    """The right to run a session, held by one owner until it expires or is released."""

    session_id: str
    """The session leased."""
    owner: str
    """Who holds it (unique per holder: two holders with one owner id are one holder)."""
    expires_at: float
    """When it runs out unless renewed (``time.time()``)."""


@dataclass(kw_only=True, frozen=True, slots=True)
class NewSession:
    """A session to create with `Store.create_many` (the arguments of `Store.create`)."""

    template: str
    """The id of the agent template it runs."""
    session_id: str | None = None
    """Its id (default: a new ``session_...`` id)."""
    label: str | None = None
    """A name people give it."""
    parent_id: str | None = None
    """The session that started it, if any."""
    metadata: dict[str, Any] = field(default_factory=dict)
    """JSON values the application keeps with it."""


@runtime_checkable
class Store(Protocol):
    """Where sessions live: headers and append-only logs of records.

    Every method is safe to call from concurrent tasks. Errors are `SessionError`s:
    `SessionNotFoundError` for an unknown id, `SessionExistsError`, `SessionLeaseError`,
    `StoreError` when the database fails; a bad argument is a `ValueError` or `TypeError`.

    One method is optional: ``start_session_at_once(session_id, template, parent_id, owner,
    ttl, records) -> (Lease, last_seq)``, what `start_session` does (create or take up an empty
    session, take its lease, append `records`) in one transaction. A store that has it is asked
    to; any other gets the same effect from `create`, `get`, `acquire` and `append`.
    kode's own stores have it.
    """

    async def create(
        self,
        *,
        template: str,
        session_id: str | None = None,
        label: str | None = None,
        parent_id: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> SessionHeader:
        """Create an empty session (status ``idle``, no records).

        Raises:
            SessionExistsError: a session with `session_id` exists.
        """
        ...

    async def create_many(self, sessions: Sequence[NewSession]) -> list[SessionHeader]:
        """Create many sessions in one transaction (all or none), in order.

        Raises:
            SessionExistsError: one of the ids exists, or is given twice.
        """
        ...

    async def append(
        self,
        session_id: str,
        records: Sequence[SessionRecord],
        *,
        lease: Lease | None = None,
        if_last_seq: int | None = None,
    ) -> int:
        """Append records in one transaction; return the sequence number of the last.

        With `lease`, the append happens only while that lease is the session's (fencing: a
        process whose lease was taken over cannot write). Without, anyone may append (an
        approval decision from another process).

        With `if_last_seq`, the append happens only if the session's last record is still
        that one: the check and the write are one conditional write, so of two writers that
        read the same log and append against it, exactly one succeeds (compare-and-set).

        Raises:
            SessionNotFoundError: no such session.
            SessionLeaseError: `lease` is no longer the session's.
            SessionConflictError: `if_last_seq` is given and the session has other records
                after it (or fewer).
            SessionRecordError: a record cannot be written as JSON (the message says which).
        """
        ...

    async def load(
        self,
        session_id: str,
        *,
        after: int = 0,
        limit: int | None = None,
        types: Collection[str] | None = None,
    ) -> SessionLog:
        """The header and the entries after sequence number `after`, in order.

        Args:
            session_id: The session.
            after: Only entries with a greater sequence number.
            limit: At most this many entries.
            types: Only records of these ``type`` values (``{"message"}``: the conversation).

        Raises:
            SessionNotFoundError: no such session.
            SessionRecordError: a record read does not match the checksum written with it
                (SQL stores: it was changed or damaged since), or cannot be read.
        """
        ...

    async def get(self, session_id: str) -> SessionHeader:
        """The header of a session.

        Raises:
            SessionNotFoundError: no such session.
        """
        ...

    async def list_sessions(
        self,
        *,
        template: str | None = None,
        label: str | None = None,
        status: SessionStatus | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> SessionPage:
        """A page of sessions, the most recently active first (ties: greater id first).

        Filters combine (all must match). Paging is by keyset: a page costs the same
        however deep it is, and sessions active after the first page was read do not
        shift later pages.

        Raises:
            ValueError: `limit` is not within 1..`MAX_PAGE_SIZE`, or `cursor` was not made
                by `list_sessions`.
        """
        ...

    async def set_label(self, session_id: str, label: str | None) -> SessionHeader:
        """Give a session a label (`None` removes it); return the new header.

        Raises:
            SessionNotFoundError: no such session.
        """
        ...

    async def fork(
        self,
        source_id: str,
        *,
        at: int | None = None,
        session_id: str | None = None,
        label: str | None = None,
    ) -> SessionHeader:
        """A new session with the records of `source_id` up to sequence number `at`.

        The copy keeps their sequence numbers and times, the template and the metadata; its
        status is the source's as of `at`, and `forked_from`/`forked_at` say where it came
        from. Default `at`: the whole log.

        Raises:
            SessionNotFoundError: no session `source_id`.
            SessionExistsError: a session with `session_id` exists.
            ValueError: `at` is below 0 or past the source's last record.
        """
        ...

    async def delete(self, session_id: str, *, force: bool = False) -> None:
        """Delete a session and its records.

        Raises:
            SessionNotFoundError: no such session.
            SessionLeaseError: someone holds its lease (pass ``force=True`` to delete anyway).
        """
        ...

    async def acquire(
        self, session_id: str, *, owner: str | None = None, ttl: float = DEFAULT_LEASE_TTL
    ) -> Lease:
        """Take the session's lease for `ttl` seconds (the same owner again: renew it).

        Args:
            session_id: The session.
            owner: Who takes it (default: a new unique id); unique per holder.
            ttl: Seconds until it runs out unless renewed.

        Raises:
            SessionNotFoundError: no such session.
            SessionLeaseError: another owner holds it and it has not expired.
        """
        ...

    async def renew(self, lease: Lease, *, ttl: float = DEFAULT_LEASE_TTL) -> Lease:
        """Extend a lease still held by its owner (also after its expiry, if nobody took it).

        Raises:
            SessionLeaseError: another owner took it, it was released, or the session is gone.
        """
        ...

    async def release(self, lease: Lease) -> bool:
        """Give up a lease; whether it was still the owner's (releasing twice is harmless)."""
        ...

    async def aclose(self) -> None:
        """Close connections; the store cannot be used after."""
        ...


def __getattr__(name: str) -> Any:
    """`start_session`, kept at its former path.

    It lives in `kode.sessions.starting`, beside `check_startable`, with the checks of
    `kode.sessions._common` it needs: this module, which `_common` imports, imports neither.
    """
    if name == "start_session":
        from kode.sessions.starting import start_session

        return start_session
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
