"""The database schema of the SQL stores, and the migrations that build and upgrade it.

One schema, versioned: table ``kode_schema_version`` holds a row per migration applied.
A migration is an ordered list of SQL statements, one list per dialect (SQLite, PostgreSQL),
applied in one transaction with the row that records it, so a database is always at one
version. Opening a database runs the migrations it lacks; a database at a version newer than
this code knows is refused (`SchemaVersionError`), never written to.

To change the schema, append a `Migration` with the next version: never edit one that has
shipped, since databases out there already ran it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from kode.sessions._common import now_us
from kode.sessions.errors import SchemaVersionError

DialectName = Literal["sqlite", "postgres"]

# pg_advisory_xact_lock key: two processes opening a fresh database migrate one at a time.
_PG_LOCK_KEY = 0x6B6F6465  # "kode"


@dataclass(frozen=True, slots=True)
class Migration:
    """One step of the schema: its version, what it does, and its statements per dialect."""

    version: int
    description: str
    sqlite: tuple[str, ...]
    postgres: tuple[str, ...]

    def statements(self, dialect: DialectName) -> tuple[str, ...]:
        return self.sqlite if dialect == "sqlite" else self.postgres


def _v1(integer: str) -> tuple[str, ...]:
    return (
        f"""CREATE TABLE kode_sessions (
            id TEXT NOT NULL PRIMARY KEY,
            template TEXT NOT NULL,
            label TEXT,
            status TEXT NOT NULL,
            created_at {integer} NOT NULL,
            last_active {integer} NOT NULL,
            last_seq {integer} NOT NULL DEFAULT 0,
            parent_id TEXT,
            forked_from TEXT,
            forked_at {integer},
            metadata TEXT NOT NULL,
            lease_owner TEXT,
            lease_expires {integer}
        )""",
        # Listing is keyset paging on (last_active, id), newest first, optionally filtered:
        # each filter has an index that serves the order too.
        "CREATE INDEX kode_sessions_by_activity ON kode_sessions (last_active, id)",
        "CREATE INDEX kode_sessions_by_template ON kode_sessions (template, last_active, id)",
        "CREATE INDEX kode_sessions_by_label ON kode_sessions (label, last_active, id)",
        "CREATE INDEX kode_sessions_by_status ON kode_sessions (status, last_active, id)",
        f"""CREATE TABLE kode_records (
            session_id TEXT NOT NULL,
            seq {integer} NOT NULL,
            at {integer} NOT NULL,
            type TEXT NOT NULL,
            data TEXT NOT NULL,
            PRIMARY KEY (session_id, seq)
        )""",
    )


def _v3() -> tuple[str, ...]:
    return (
        "DROP INDEX kode_sessions_by_template",
        "DROP INDEX kode_sessions_by_label",
        "DROP INDEX kode_sessions_by_status",
        "CREATE INDEX kode_sessions_of_template ON kode_sessions (template)",
        "CREATE INDEX kode_sessions_of_label ON kode_sessions (label)",
    )


MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        version=1,
        description="sessions and their records",
        sqlite=_v1("INTEGER"),
        # JSON is kept as text, not jsonb: jsonb refuses the escape \u0000, which a tool's
        # output may hold, and text is written as is.
        postgres=_v1("BIGINT"),
    ),
    Migration(
        version=2,
        description="a checksum per record, checked on load",
        # Nullable: records written before have none, and load unchecked.
        sqlite=("ALTER TABLE kode_records ADD COLUMN checksum INTEGER",),
        postgres=("ALTER TABLE kode_records ADD COLUMN checksum BIGINT",),
    ),
    Migration(
        version=3,
        description="one listing index holds last_active",
        # Every append moves last_active, so each index holding it was a page more in the
        # append's commit (7 pages in SQLite's WAL, 4 with this schema). The listing keeps its
        # keyset index; a filtered page walks it, then reads the filter's own index when the
        # walk found too few (SQLiteStore._page). PostgreSQL: an append is never a HOT update
        # there (last_active is indexed and always changes), so every index gets an entry
        # whatever it holds; measured, the change gained nothing, and it is left as it was.
        sqlite=_v3(),
        postgres=(),
    ),
)
"""Every migration, in order; the last one's version is the schema this code writes."""

SCHEMA_VERSION = MIGRATIONS[-1].version
"""The schema version this code reads and writes."""


def _check_order(migrations: Sequence[Migration]) -> None:
    versions = [m.version for m in migrations]
    if versions != list(range(1, len(versions) + 1)):
        raise ValueError(f"migrations must be numbered 1, 2, 3, ... in order; got {versions}")


_check_order(MIGRATIONS)


def _current_version(cursor: Any) -> int | None:
    """The database's schema version, or `None` if it has no version table yet."""
    try:
        cursor.execute("SELECT MAX(version) FROM kode_schema_version")
        row = cursor.fetchone()
    except Exception:  # no such table: the locked path below makes it
        return None
    return int(row[0]) if row and row[0] is not None else 0


def _refuse_newer(current: int, latest: int, where: str) -> None:
    if current > latest:
        raise SchemaVersionError(
            f"{where} has session schema version {current}, but this kode knows versions "
            f"up to {latest}: it was written by a newer kode. Upgrade kode (pip install "
            "-U kode-sdk) to open it; it was left unchanged."
        )


def migrate(
    cursor: Any,
    dialect: DialectName,
    where: str,
    migrations: Sequence[Migration] = MIGRATIONS,
) -> int:
    """Bring the database `cursor` is on up to the last of `migrations`; return its version.

    Runs in one transaction (SQLite: ``BEGIN IMMEDIATE``; PostgreSQL: with an advisory lock),
    so two processes opening a new database at once migrate it once.

    Raises:
        SchemaVersionError: the database is at a version newer than `migrations` know.
    """
    _check_order(migrations)
    latest = migrations[-1].version if migrations else 0
    # Most opens find the schema current: a read tells, without waiting for another
    # process's write transaction.
    found = _current_version(cursor)
    if found is not None and found >= latest:
        _refuse_newer(found, latest, where)
        return found
    param = "?" if dialect == "sqlite" else "%s"
    cursor.execute("BEGIN IMMEDIATE" if dialect == "sqlite" else "BEGIN")
    try:
        if dialect == "postgres":
            cursor.execute(f"SELECT pg_advisory_xact_lock({param})", (_PG_LOCK_KEY,))
        cursor.execute(
            "CREATE TABLE IF NOT EXISTS kode_schema_version ("
            "version INTEGER NOT NULL PRIMARY KEY, description TEXT NOT NULL, "
            "applied_at BIGINT NOT NULL)"
        )
        cursor.execute("SELECT MAX(version) FROM kode_schema_version")
        row = cursor.fetchone()
        current = int(row[0]) if row and row[0] is not None else 0
        _refuse_newer(current, latest, where)
        for step in migrations:
            if step.version <= current:
                continue
            for statement in step.statements(dialect):
                cursor.execute(statement)
            cursor.execute(
                "INSERT INTO kode_schema_version (version, description, applied_at) "
                f"VALUES ({param}, {param}, {param})",
                (step.version, step.description, now_us()),
            )
    except BaseException:
        try:
            cursor.execute("ROLLBACK")
        except Exception:  # a broken connection: the error being raised says why
            pass
        raise
    cursor.execute("COMMIT")
    return max(current, latest)
