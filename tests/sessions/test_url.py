"""store_from: the URLs kode opens, and clear errors for the rest."""

from __future__ import annotations

from pathlib import Path

import pytest

from kode.sessions import (
    MemoryStore,
    PostgresStore,
    SQLiteStore,
    StoreURLError,
    store_from,
)

pytestmark = pytest.mark.anyio


def test_memory_and_passthrough() -> None:
    made = store_from("memory://")
    assert isinstance(made, MemoryStore)
    assert store_from(made) is made


def test_sqlite_paths() -> None:
    relative = store_from("sqlite:///data/sessions.db")
    assert isinstance(relative, SQLiteStore) and relative.path == "data/sessions.db"
    absolute = store_from("sqlite:////var/lib/app/sessions.db")
    assert isinstance(absolute, SQLiteStore) and absolute.path == "/var/lib/app/sessions.db"
    memory = store_from("sqlite:///:memory:")
    assert isinstance(memory, SQLiteStore) and memory.path == ":memory:"
    full = store_from("sqlite:///x.db?synchronous=full&busy_timeout=2.5")
    assert isinstance(full, SQLiteStore)
    assert (full.synchronous, full.busy_timeout) == ("FULL", 2.5)
    assert store_from("SQLITE:///x.db").synchronous == "NORMAL"  # type: ignore[attr-defined]


async def test_a_sqlite_url_store_works(tmp_path: Path) -> None:
    store = store_from(f"sqlite:///{tmp_path}/s.db")
    await store.create(template="t", session_id="s")
    await store.aclose()
    assert (tmp_path / "s.db").exists()


def test_postgres_urls() -> None:
    made = store_from("postgresql://kode:secret@db.example:5432/app?sslmode=require")
    assert isinstance(made, PostgresStore)
    assert made.url == "postgresql://kode:secret@db.example:5432/app?sslmode=require"
    assert "secret" not in repr(made) and "kode:***@db.example:5432" in repr(made)
    assert isinstance(store_from("postgres://localhost/app"), PostgresStore)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("sessions.db", "is not a store URL; use memory://, sqlite:///"),
        ("redis://localhost", "no store for 'redis' URLs; use memory://"),
        ("postgresql+psycopg://h/db", r"drop the driver name: postgresql://"),
        ("sqlite+pysqlite:///x.db", r"drop the driver name: sqlite:///"),
        ("sqlite://x.db", "three slashes before a relative path"),
        ("sqlite:///", "names no file"),
        ("sqlite:///x.db?synchronous=off", "synchronous must be NORMAL or FULL, got 'off'"),
        ("sqlite:///x.db?busy_timeout=soon", "busy_timeout must be a number of seconds"),
        ("sqlite:///x.db?journal=wal", "unknown option 'journal'"),
        ("memory://somewhere", "just 'memory://'"),
        ("postgresql://", "names no PostgreSQL server"),
    ],
)
def test_wrong_urls_say_what_would_be_right(url: str, message: str) -> None:
    with pytest.raises(StoreURLError, match=message):
        store_from(url)
    assert issubclass(StoreURLError, ValueError)


def test_not_a_store() -> None:
    with pytest.raises(TypeError, match="a store must be a Store or a URL string, got int"):
        store_from(3)  # type: ignore[arg-type]


def test_kode_stores_pass_through_without_the_protocol_check(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An agent made with a store passes it through store_from each time: kode's own stores
    skip the runtime Protocol check (about 20 us, every method looked up); any other object
    that has the methods of a Store still passes."""
    import kode.sessions.url as url

    checked: list[object] = []

    class Recording(type):
        def __instancecheck__(cls, obj: object) -> bool:
            checked.append(obj)
            return hasattr(obj, "append") and hasattr(obj, "acquire")

    class Protocol(metaclass=Recording):
        pass

    monkeypatch.setattr(url, "Store", Protocol)
    own = [MemoryStore(), SQLiteStore(":memory:"), PostgresStore("postgresql://localhost/x")]
    for store in own:
        assert store_from(store) is store
    assert checked == []

    class Wrapped:
        def __init__(self, inner: MemoryStore) -> None:
            self.append, self.acquire = inner.append, inner.acquire

    other = Wrapped(MemoryStore())
    assert store_from(other) is other  # type: ignore[arg-type]
    assert checked == [other]
