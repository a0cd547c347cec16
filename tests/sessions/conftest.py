"""Stores for the sessions tests: one test-suite, run against every store.

`store` is parametrized over the memory, SQLite and PostgreSQL stores; `reopen` makes another
store object on the same data (a second process would see the same). The PostgreSQL cluster is
started once per test session; its tables are emptied before each test.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from kode.sessions import MemoryStore, PostgresStore, SQLiteStore, Store
from kode.testing.postgres import PostgresServer

KINDS = ["memory", "sqlite", "postgres"]


@pytest.fixture
def anyio_backend() -> str:
    # The stores run their I/O in worker threads; trio is covered by test_store.py::test_trio.
    return "asyncio"


@pytest.fixture(scope="session")
def suite_database(postgres_server: PostgresServer) -> str:
    """One database for the store suite (emptied before each test)."""
    return postgres_server.create_database("kode_sessions_suite")


def empty_postgres(url: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        exists = conn.execute("SELECT to_regclass('kode_sessions')").fetchone()
        if exists and exists[0] is not None:
            conn.execute("TRUNCATE kode_sessions, kode_records")


@pytest.fixture(params=KINDS)
def store_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def reopen(store_kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], Any]:
    """Make a new store object on this test's data (the memory store: the same object)."""
    memory = MemoryStore()
    url = ""
    if store_kind == "postgres":
        url = request.getfixturevalue("suite_database")
        empty_postgres(url)

    def make() -> Store:
        if store_kind == "memory":
            return memory
        if store_kind == "sqlite":
            return SQLiteStore(tmp_path / "sessions.db")
        return PostgresStore(url)

    return make


@pytest.fixture
async def store(reopen: Callable[[], Store]) -> AsyncIterator[Store]:
    made = reopen()
    try:
        yield made
    finally:
        await made.aclose()
