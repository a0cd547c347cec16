"""What only the PostgreSQL store has: a pool of connections, a server that can go away."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import pytest

from kode.extras import install_hint
from kode.models.messages import Message
from kode.sessions import (
    MessageAdded,
    PostgresStore,
    SessionConflictError,
    SessionLeaseError,
    SessionNotFoundError,
    StoreError,
)
from kode.sessions.starting import start_session

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_more_tasks_than_connections_take_turns(postgres_url: str) -> None:
    async with PostgresStore(postgres_url, max_connections=1) as store:
        await store.create(template="t", session_id="s")

        async def add(i: int) -> None:
            await store.append("s", [MessageAdded(message=Message.user(str(i)))])

        async with anyio.create_task_group() as tg:
            for i in range(8):
                tg.start_soon(add, i)
        log = await store.load("s")
        assert sorted(m.text for m in log.state().messages) == [str(i) for i in range(8)]


async def test_a_connection_the_server_closed_is_replaced(postgres_url: str) -> None:
    import psycopg

    async with PostgresStore(postgres_url) as store:
        await store.create(template="t", session_id="s")
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            ended = admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            ).fetchall()
        assert ended  # the store's idle connection was ended
        await anyio.sleep(0.2)  # the server's goodbye reaches the socket
        assert (await store.get("s")).template == "t"


async def test_an_unreachable_server_is_a_clear_error() -> None:
    store = PostgresStore("postgresql://kode:secret@127.0.0.1:1/nothing", connect_timeout=2)
    with pytest.raises(StoreError, match="cannot use the PostgreSQL database at") as caught:
        await store.get("s")
    assert "secret" not in str(caught.value) and "kode:***@127.0.0.1:1" in str(caught.value)
    await store.aclose()


def test_without_psycopg_the_error_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)  # as if it were not installed
    with pytest.raises(ImportError, match=re.escape(install_hint("postgres"))):
        PostgresStore("postgresql://localhost/db")


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="must be a postgresql:// URL"):
        PostgresStore("mysql://localhost/db")
    with pytest.raises(ValueError, match="max_connections must be 1 or more"):
        PostgresStore("postgresql://localhost/db", max_connections=0)


class _Counting(PostgresStore):
    """A `PostgresStore` that keeps the statements it sends (each one a round trip)."""

    sent: list[str]

    @contextmanager
    def _connection(self) -> Iterator[Any]:
        with super()._connection() as conn:
            yield _CountingConnection(conn, self.sent)


class _CountingConnection:
    def __init__(self, conn: Any, sent: list[str]) -> None:
        self._conn, self._sent = conn, sent

    def cursor(self) -> Any:
        cur, sent = self._conn.cursor(), self._sent

        class Cursor:
            def execute(self, sql: str, *args: Any) -> Any:
                sent.append(sql.split(None, 1)[0])
                return cur.execute(sql, *args)

            def executemany(self, sql: str, *args: Any) -> Any:
                sent.append("executemany")
                return cur.executemany(sql, *args)

            def __getattr__(self, name: str) -> Any:
                return getattr(cur, name)

        return Cursor()


async def test_an_append_is_one_round_trip_when_the_store_knows_the_last_record(
    postgres_url: str,
) -> None:
    async with _Counting(postgres_url) as store, PostgresStore(postgres_url) as other:
        store.sent = []
        records = [MessageAdded(message=Message.user(str(i))) for i in range(3)]
        lease, _ = await start_session(store, "s", template="t", records=records[:1])
        assert store.sent[-1:] == ["WITH"]  # made, leased and written in one statement
        for batch in (records, records[:1], records * 400):  # 1,200 records: one statement too
            store.sent = []
            await store.append("s", batch, lease=lease)
            assert store.sent == ["WITH"]
        # Another store wrote meanwhile: the append finds the last record in a transaction.
        await other.append("s", records, lease=lease)
        store.sent = []
        assert await store.append("s", records, lease=lease) == 1 + 3 + 1 + 1200 + 3 + 3
        assert store.sent == ["WITH", "BEGIN", "UPDATE", "INSERT", "COMMIT"]
        store.sent = []
        await store.append("s", records[:1], lease=lease)
        assert store.sent == ["WITH"]
        log = await store.load("s")
        assert [e.seq for e in log.entries] == list(range(1, 1213))
        assert log.header.last_seq == 1212
        # What a one-statement append refused gets the transaction's error.
        await store.release(lease)
        taken = await other.acquire("s", owner="other")
        with pytest.raises(SessionLeaseError, match="was lost"):
            await store.append("s", records, lease=lease)
        with pytest.raises(SessionConflictError, match="not 3"):
            await store.append("s", records, if_last_seq=3)
        assert await store.append("s", records[:1], lease=taken, if_last_seq=1212) == 1213
        await store.delete("s", force=True)
        with pytest.raises(SessionNotFoundError):
            await store.append("s", records, lease=taken)
