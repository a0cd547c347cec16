"""A writer that stops itself (SIGSTOP) inside an append's transaction; test_frozen_writer.py
takes the session over meanwhile, then lets it continue.

Usage: ``python frozen_writer.py STORE_URL SESSION_ID``

It takes the session's lease (ttl 0.5 s), prints ``in transaction`` and stops itself in the
middle of an append (after the session's row is updated, before the records are inserted).
Once continued, it prints ``first <outcome>`` for that append and ``second <outcome>`` for
another append with the same lease: ``ok <seq>`` or ``refused <error type>``.
"""

from __future__ import annotations

import signal
import sys
import threading
from typing import Any

import anyio

from kode.sessions import MetadataSet, PostgresStore, SessionError, SQLiteStore

URL, SESSION = sys.argv[1:3]


def freeze_once(insert: Any) -> Any:
    frozen: list[bool] = []

    def inserted(self: Any, *args: Any) -> None:
        if not frozen:
            frozen.append(True)
            print("in transaction", flush=True)
            # Sent to this very thread, so that it stops here and not a moment later.
            signal.pthread_kill(threading.get_ident(), signal.SIGSTOP)
        insert(self, *args)

    return inserted


class FrozenPostgres(PostgresStore):
    _insert_records = freeze_once(PostgresStore._insert_records)


class FrozenSQLite(SQLiteStore):
    _insert_records = freeze_once(SQLiteStore._insert_records)


async def main() -> None:
    if URL.startswith("sqlite:///"):
        store: Any = FrozenSQLite(URL.removeprefix("sqlite:///"), busy_timeout=1.0)
    else:
        store = FrozenPostgres(URL, lock_timeout=1.0)
    lease = await store.acquire(SESSION, ttl=0.5)
    for attempt in ("first", "second"):
        try:
            seq = await store.append(
                SESSION, [MetadataSet(key="stale", value=attempt)], lease=lease
            )
        except SessionError as exc:
            print(f"{attempt} refused {type(exc).__name__}: {exc}", flush=True)
        else:
            print(f"{attempt} ok {seq}", flush=True)
    await store.aclose()


anyio.run(main)
