"""The versioned schema: made on first use, upgraded step by step, never written when newer."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kode.sessions import PostgresStore, SchemaVersionError, SQLiteStore, StatusChanged, Store
from kode.sessions._schema import MIGRATIONS, SCHEMA_VERSION, Migration, migrate

pytestmark = pytest.mark.anyio


class Database:
    """A raw connection to a store's database, and how to make a store on it."""

    def __init__(self, dialect: str, connect: Callable[[], Any], store: Callable[[], Store]):
        self.dialect = dialect
        self.conn = connect()
        self.store = store

    def rows(self, sql: str) -> list[tuple[Any, ...]]:
        cur = self.conn.cursor()
        cur.execute(sql)
        return [tuple(r) for r in cur.fetchall()]

    def execute(self, sql: str) -> None:
        self.conn.cursor().execute(sql)


@pytest.fixture(params=["sqlite", "postgres"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Database]:
    if request.param == "sqlite":
        path = tmp_path / "schema.db"
        made = Database(
            "sqlite",
            lambda: sqlite3.connect(path, isolation_level=None),
            lambda: SQLiteStore(path),
        )
    else:
        import psycopg

        url = request.getfixturevalue("postgres_url")
        made = Database(
            "postgres",
            lambda: psycopg.connect(url, autocommit=True),
            lambda: PostgresStore(url),
        )
    try:
        yield made
    finally:
        made.conn.close()


def add_column(version: int) -> Migration:
    sql = f"ALTER TABLE kode_sessions ADD COLUMN extra{version} TEXT"
    return Migration(version=version, description="a column", sqlite=(sql,), postgres=(sql,))


async def test_first_use_makes_the_schema(database: Database) -> None:
    store = database.store()
    await store.create(template="t", session_id="s")
    await store.aclose()
    versions = database.rows("SELECT version, description FROM kode_schema_version")
    assert versions == [(m.version, m.description) for m in MIGRATIONS]
    # Opening it again migrates nothing and keeps the data.
    again = database.store()
    assert (await again.get("s")).template == "t"
    await again.aclose()
    assert len(database.rows("SELECT version FROM kode_schema_version")) == len(MIGRATIONS)


async def test_a_newer_schema_is_refused_and_left_alone(database: Database) -> None:
    store = database.store()
    await store.create(template="t", session_id="s")
    await store.aclose()
    database.execute(
        "INSERT INTO kode_schema_version (version, description, applied_at) "
        f"VALUES ({SCHEMA_VERSION + 1}, 'from the future', 0)"
    )
    newer = database.store()
    with pytest.raises(SchemaVersionError) as caught:
        await newer.get("s")
    await newer.aclose()
    message = str(caught.value)
    assert f"has session schema version {SCHEMA_VERSION + 1}" in message
    assert f"knows versions up to {SCHEMA_VERSION}" in message
    assert "Upgrade kode" in message and "left unchanged" in message
    assert len(database.rows("SELECT version FROM kode_schema_version")) == len(MIGRATIONS) + 1
    assert database.rows("SELECT id FROM kode_sessions") == [("s",)]


async def test_migrations_apply_in_order_from_where_a_database_is(database: Database) -> None:
    store = database.store()
    await store.create(template="t", session_id="s")
    await store.aclose()
    steps = [*MIGRATIONS, add_column(SCHEMA_VERSION + 1), add_column(SCHEMA_VERSION + 2)]
    where = "the test database"
    assert migrate(database.conn.cursor(), database.dialect, where, steps) == SCHEMA_VERSION + 2
    versions = [r[0] for r in database.rows("SELECT version FROM kode_schema_version")]
    assert sorted(versions) == list(range(1, SCHEMA_VERSION + 3))
    assert database.rows(
        f"SELECT id, extra{SCHEMA_VERSION + 1}, extra{SCHEMA_VERSION + 2} FROM kode_sessions"
    ) == [("s", None, None)]
    # Migrating again is a no-op.
    assert migrate(database.conn.cursor(), database.dialect, where, steps) == SCHEMA_VERSION + 2


async def test_a_failing_migration_changes_nothing(database: Database) -> None:
    store = database.store()
    await store.create(template="t", session_id="s")
    await store.aclose()
    broken = Migration(
        version=SCHEMA_VERSION + 1,
        description="half right",
        sqlite=("ALTER TABLE kode_sessions ADD COLUMN half TEXT", "NOT SQL AT ALL"),
        postgres=("ALTER TABLE kode_sessions ADD COLUMN half TEXT", "NOT SQL AT ALL"),
    )
    with pytest.raises(Exception, match="syntax error"):
        migrate(database.conn.cursor(), database.dialect, "db", [*MIGRATIONS, broken])
    versions = [r[0] for r in database.rows("SELECT version FROM kode_schema_version")]
    assert sorted(versions) == [m.version for m in MIGRATIONS]
    with pytest.raises(Exception, match="half"):
        database.rows("SELECT half FROM kode_sessions")


def test_migrations_must_be_numbered_in_order() -> None:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    gap = SCHEMA_VERSION + 2
    with pytest.raises(ValueError, match=rf"numbered 1, 2, 3, ... in order; got \[.*, {gap}\]"):
        migrate(conn.cursor(), "sqlite", "db", [*MIGRATIONS, add_column(gap)])


async def _session_with_a_result(store: Store) -> None:
    from kode.models import Message, ToolResultContent
    from kode.models.messages import TextContent
    from kode.sessions import CallUpdated, MessageAdded

    await store.create(template="t", session_id="s")
    result = ToolResultContent(tool_use_id="c1", content=[TextContent(text="balance: 1000")])
    await store.append(
        "s",
        [
            MessageAdded(message=Message.user("go")),
            CallUpdated(call_id="c1", name="bank", status="running"),
            CallUpdated(call_id="c1", name="bank", status="done", result=result),
        ],
    )


async def test_a_record_changed_after_it_was_written_is_refused_on_load(
    database: Database,
) -> None:
    from kode.sessions import SessionRecordError

    store = database.store()
    await _session_with_a_result(store)
    assert len((await store.load("s")).entries) == 3
    # One changed letter inside a stored tool result: still valid JSON, still a record.
    database.execute("UPDATE kode_records SET data = REPLACE(data, '1000', '9000') WHERE seq = 3")
    with pytest.raises(
        SessionRecordError,
        match=r"record 3 \(call\) of session 's' does not match its checksum: it was changed",
    ):
        await store.load("s")
    assert len((await store.load("s", limit=2)).entries) == 2  # the records before it load
    fork = await store.fork("s", at=2, session_id="before")  # copies keep their checksums
    assert len((await store.load(fork.id)).entries) == 2
    await store.aclose()


async def test_records_without_a_checksum_still_load(database: Database) -> None:
    # A database made by the first schema, written before checksums were kept.
    migrate(database.conn.cursor(), database.dialect, "old", MIGRATIONS[:1])
    database.execute(
        "INSERT INTO kode_sessions (id, template, status, created_at, last_active, last_seq, "
        "metadata) VALUES ('old', 't', 'idle', 1, 1, 1, '{}')"
    )
    database.execute(
        "INSERT INTO kode_records (session_id, seq, at, type, data) VALUES "
        """('old', 1, 1, 'status', '{"type":"status","status":"running"}')"""
    )
    store = database.store()  # upgrades the schema; old records keep no checksum
    log = await store.load("old")
    assert [e.record.type for e in log.entries] == ["status"]
    await store.append("old", [StatusChanged(status="idle")])
    assert database.rows("SELECT seq, checksum IS NULL FROM kode_records ORDER BY seq") == [
        (1, True),
        (2, False),
    ]
    assert len((await store.load("old")).entries) == 2
    await store.aclose()


async def test_a_version_2_database_keeps_its_listing(database: Database) -> None:
    # Version 3 leaves last_active in one index (SQLite: every index holding it was a page
    # more in each append's commit); the listings read the same sessions in the same order.
    migrate(database.conn.cursor(), database.dialect, "old", MIGRATIONS[:2])
    for i in range(6):
        database.execute(
            "INSERT INTO kode_sessions (id, template, label, status, created_at, last_active, "
            f"last_seq, metadata) VALUES ('s{i}', 't{i % 2}', 'l{i % 3}', "
            f"'{'idle' if i % 2 else 'running'}', 1, {10 - i}, 0, '{{}}')"
        )
    store = database.store()
    assert (await store.list_sessions()).sessions[0].id == "s0"  # migrates
    assert database.rows("SELECT MAX(version) FROM kode_schema_version") == [(SCHEMA_VERSION,)]

    async def ids(**filters: Any) -> list[str]:
        return [h.id for h in (await store.list_sessions(**filters)).sessions]

    assert await ids() == ["s0", "s1", "s2", "s3", "s4", "s5"]
    assert await ids(template="t1") == ["s1", "s3", "s5"]
    assert await ids(label="l0") == ["s0", "s3"]
    assert await ids(status="running") == ["s0", "s2", "s4"]
    assert await ids(template="t0", status="running", label="l1") == ["s4"]
    page = await store.list_sessions(template="t0", limit=2)
    assert [h.id for h in page.sessions] == ["s0", "s2"]
    assert await ids(template="t0", cursor=page.next_cursor) == ["s4"]
    await store.append("s5", [StatusChanged(status="running")])  # now the most recent
    assert await ids(status="running") == ["s5", "s0", "s2", "s4"]
    assert await ids(template="t1", limit=1) == ["s5"]
    if database.dialect == "sqlite":
        indexes = database.rows(
            "SELECT name, sql FROM sqlite_master WHERE type = 'index' "
            "AND tbl_name = 'kode_sessions' AND sql IS NOT NULL ORDER BY name"
        )
        assert [name for name, _ in indexes] == [
            "kode_sessions_by_activity",
            "kode_sessions_of_label",
            "kode_sessions_of_template",
        ]
        assert [sql for _, sql in indexes if "last_active" in sql] == [
            "CREATE INDEX kode_sessions_by_activity ON kode_sessions (last_active, id)"
        ]
    await store.aclose()


# --- SQLite, version 2 to 3 in other processes: killed midway, or several at once ----------

_OPENER = """
import os, signal, sys, time
import anyio
import kode.sessions.sqlite as opening
from kode.sessions import SQLiteStore

path, kill_after, go, name = sys.argv[1:5]
migrate = opening.migrate

class Cursor:  # the store's own cursor, killed or slowed after a statement of the migration
    def __init__(self, cur):
        self.cur = cur
    def execute(self, sql, *args):
        out = self.cur.execute(sql, *args)
        if kill_after and sql.startswith(kill_after):
            os.kill(os.getpid(), signal.SIGKILL)
        if sql.startswith(("DROP", "CREATE INDEX")):
            time.sleep(0.1)  # a long migration: the others open meanwhile
        return out
    def __getattr__(self, attr):
        return getattr(self.cur, attr)

opening.migrate = lambda cur, *args: migrate(Cursor(cur), *args)
while go and not os.path.exists(go):
    time.sleep(0.005)

async def main():
    async with SQLiteStore(path, busy_timeout=30) as store:
        await store.create(template="t0", session_id=name)
        print(len((await store.list_sessions(template="t0")).sessions))

anyio.run(main)
"""

_V2_INDEXES = [
    "kode_sessions_by_activity",
    "kode_sessions_by_label",
    "kode_sessions_by_status",
    "kode_sessions_by_template",
]
_V3_INDEXES = ["kode_sessions_by_activity", "kode_sessions_of_label", "kode_sessions_of_template"]


def _version_2(path: Path) -> sqlite3.Connection:
    raw = sqlite3.connect(path, isolation_level=None)
    raw.execute("PRAGMA journal_mode=WAL")
    migrate(raw.cursor(), "sqlite", "old", MIGRATIONS[:2])
    for i in range(5):
        raw.execute(
            "INSERT INTO kode_sessions (id, template, label, status, created_at, last_active, "
            f"last_seq, metadata) VALUES ('old{i}', 't{i % 2}', 'l', 'idle', 1, {i}, 0, '{{}}')"
        )
    return raw


def _state(raw: sqlite3.Connection) -> tuple[list[tuple[int, int]], list[str]]:
    versions = raw.execute(
        "SELECT version, COUNT(*) FROM kode_schema_version GROUP BY version ORDER BY version"
    ).fetchall()
    indexes = raw.execute(
        "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'kode_sessions' "
        "AND sql IS NOT NULL ORDER BY name"
    ).fetchall()
    return versions, [name for (name,) in indexes]


def _open_in(path: Path, kill_after: str = "", go: str = "", name: str = "new") -> Any:
    return subprocess.Popen(
        [sys.executable, "-c", _OPENER, str(path), kill_after, go, name],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.parametrize(
    "kill_after",
    ["DROP INDEX kode_sessions_by_label", "CREATE INDEX kode_sessions_of_label", "INSERT INTO"],
)
def test_a_process_killed_while_it_migrates_leaves_version_2_whole(
    tmp_path: Path, kill_after: str
) -> None:
    path = tmp_path / "killed.db"
    raw = _version_2(path)
    killed = _open_in(path, kill_after)
    killed.communicate(timeout=60)
    assert killed.returncode == -signal.SIGKILL
    assert _state(raw) == ([(1, 1), (2, 1)], _V2_INDEXES)  # as before: nothing half done
    raw.close()
    again = _open_in(path)
    out, err = again.communicate(timeout=60)
    assert again.returncode == 0, err
    assert out.split() == ["4"]  # old0, old2, old4 and its own
    raw = sqlite3.connect(path, isolation_level=None)
    assert _state(raw) == ([(1, 1), (2, 1), (3, 1)], _V3_INDEXES)
    raw.close()


def test_processes_opening_a_version_2_database_at_once_migrate_it_once(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    _version_2(path).close()
    go = tmp_path / "go"
    openers = [_open_in(path, go=str(go), name=f"p{i}") for i in range(3)]
    go.touch()
    for opener in openers:
        out, err = opener.communicate(timeout=120)
        assert opener.returncode == 0, err
        assert 4 <= int(out) <= 6  # the old t0 sessions, its own, and those made before it
    raw = sqlite3.connect(path, isolation_level=None)
    assert _state(raw) == ([(1, 1), (2, 1), (3, 1)], _V3_INDEXES)
    assert raw.execute("SELECT COUNT(*) FROM kode_sessions").fetchone() == (8,)
    raw.close()
