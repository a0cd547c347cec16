"""Starting a session's run: the algorithm every `Store` shares, and its check beforehand.

This module owns `start_session` (create a session or take up an empty one, take its lease,
append the first records: in one transaction where the store has the optional
``start_session_at_once``, else through `Store.create`, `get`, `acquire` and `append`) and
`check_startable`, which raises what `start_session` would without writing. It sits above
the stores' shared checks (`kode.sessions._common`) and the `Store` protocol, which import
nothing of it.
"""

from __future__ import annotations

from collections.abc import Sequence

from kode.sessions._common import check_id, check_ttl, held_error, new_owner, now_us, owner_gone
from kode.sessions.errors import SessionExistsError, SessionNotFoundError
from kode.sessions.records import SessionRecord
from kode.sessions.store import DEFAULT_LEASE_TTL, Lease, Store

__all__ = ["check_startable", "start_session"]


async def start_session(
    store: Store,
    session_id: str,
    *,
    template: str,
    parent_id: str | None = None,
    owner: str | None = None,
    ttl: float = DEFAULT_LEASE_TTL,
    records: Sequence[SessionRecord] = (),
) -> tuple[Lease, int]:
    """Start running a new session: create it, take its lease and append `records`.

    A session made beforehand and still empty is taken up instead. Returns the lease and the
    sequence number of the last record. kode's own stores do it in one transaction (a new
    agent session costs one commit instead of three); any other `Store` gets the same effect
    from `create`, `get`, `acquire` and `append`.

    Raises:
        SessionExistsError: the session exists and has records (resume it instead).
        SessionLeaseError: another owner holds its lease.
    """
    check_id(session_id)
    check_id(template, "template")
    if parent_id is not None:
        check_id(parent_id, "parent_id")
    who = check_id(owner, "owner") if owner is not None else new_owner()
    seconds = check_ttl(ttl)
    fast = getattr(store, "start_session_at_once", None)  # optional (see `Store`)
    if fast is not None:
        started: tuple[Lease, int] = await fast(
            session_id, template, parent_id, who, seconds, records
        )
        return started
    try:
        await store.create(template=template, session_id=session_id, parent_id=parent_id)
    except SessionExistsError:
        header = await store.get(session_id)
        if header.last_seq:
            raise SessionExistsError(
                f"session {session_id!r} already has {header.last_seq} records in the store"
            ) from None
    lease = await store.acquire(session_id, owner=who, ttl=seconds)
    last = await store.append(session_id, records, lease=lease) if records else 0
    return lease, last


async def check_startable(store: Store, session_id: str) -> None:
    """Raise what `start_session` would for `session_id` as it is now, writing nothing.

    A session not made yet, or made and still empty with its lease free, passes.

    Raises:
        SessionExistsError: the session has records (resume it instead).
        SessionLeaseError: someone holds its lease.
    """
    try:
        header = await store.get(session_id)
    except SessionNotFoundError:
        return
    if header.last_seq:
        raise SessionExistsError(
            f"session {session_id!r} already has {header.last_seq} records in the store"
        )
    now = now_us()
    if header.lease_owner is not None and header.lease_expires is not None:
        expires = round(header.lease_expires * 1_000_000)
        if expires > now and not owner_gone(header.lease_owner):
            raise held_error(session_id, header.lease_owner, expires, now)
