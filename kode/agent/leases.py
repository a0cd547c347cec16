"""Leases a process still holds when it exits, given up at exit.

This module owns one thing: the sessions of this process that hold a store lease, so that
an interpreter exiting normally (a script that ends without ``aclose``, ``sys.exit``, an
uncaught exception) releases their leases in an ``atexit`` handler, and the next process can
resume those sessions at once instead of waiting for the leases to run out. It does not take
or renew leases (`kode.agent.session.Session` does), and cannot help a process killed by a
signal: there the store sees that the owner's process has ended (same host) or the lease runs
out (`kode.sessions.store.DEFAULT_LEASE_TTL`).
"""

from __future__ import annotations

import atexit
import os
import threading
import weakref
from typing import TYPE_CHECKING, Protocol

import anyio

if TYPE_CHECKING:
    from kode.sessions.store import Lease, Store

__all__ = ["EXIT_RELEASE_SECONDS", "Holder", "drop", "hold"]

EXIT_RELEASE_SECONDS = 2.0
"""How long the exit handler waits for one store to release a lease before going on."""


class Holder(Protocol):
    """What of a session this module uses (`kode.agent.session.Session` is one)."""

    lease: Lease | None
    store: Store | None


_HELD: weakref.WeakKeyDictionary[Holder, int] = weakref.WeakKeyDictionary()
_registered: list[bool] = []
_lock = threading.Lock()


def hold(session: Holder) -> None:
    """`session` holds its lease now (given up at exit unless `drop` is called first)."""
    with _lock:
        _HELD[session] = os.getpid()
        if not _registered:
            atexit.register(_release_all)
            _registered.append(True)


def drop(session: Holder) -> None:
    """`session` holds no lease any more."""
    with _lock:
        _HELD.pop(session, None)


def _release(store: Store, lease: Lease) -> None:
    try:
        anyio.run(store.release, lease)
    except Exception:  # the database is gone at exit: the lease runs out as usual
        pass


def _release_all() -> None:
    """Release every lease this process still holds (the ``atexit`` handler)."""
    with _lock:
        held = [s for s, pid in _HELD.items() if pid == os.getpid()]  # not a forked child's
        _HELD.clear()
    for session in held:
        lease, store = session.lease, session.store
        if lease is None or store is None:
            continue
        session.lease = None
        # In a thread of its own, waited for a bounded time: a store whose connection a
        # thread that is still running holds must not keep the interpreter from exiting.
        worker = threading.Thread(
            target=_release, args=(store, lease), name="kode-release-lease", daemon=True
        )
        worker.start()
        worker.join(EXIT_RELEASE_SECONDS)
