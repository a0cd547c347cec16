"""What only the PostgreSQL store has: a pool of connections, a server that can go away."""

from __future__ import annotations

import re
import sys

import anyio
import pytest

from kode.extras import install_hint
from kode.models.messages import Message
from kode.sessions import MessageAdded, PostgresStore, StoreError

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
