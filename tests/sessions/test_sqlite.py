"""What only the SQLite store has: one file, WAL, synchronous modes, other processes."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kode.models.messages import Message
from kode.sessions import MessageAdded, SessionLeaseError, SQLiteStore, StatusChanged, StoreError

pytestmark = pytest.mark.anyio


async def test_wal_and_synchronous_modes(tmp_path: Path) -> None:
    for mode, code in (("NORMAL", 1), ("FULL", 2), ("full", 2)):
        store = SQLiteStore(tmp_path / f"{mode}.db", synchronous=mode)  # type: ignore[arg-type]
        await store.create(template="t")
        assert store._conn is not None
        assert store._conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert store._conn.execute("PRAGMA synchronous").fetchone() == (code,)
        await store.aclose()
    with pytest.raises(ValueError, match="synchronous must be 'NORMAL' or 'FULL'"):
        SQLiteStore(tmp_path / "x.db", synchronous="OFF")  # type: ignore[arg-type]


def test_in_memory_database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)

    async def use() -> None:
        async with SQLiteStore(":memory:") as store:
            await store.create(template="t", session_id="s")
            await store.append("s", [MessageAdded(message=Message.user("hi"))])
            assert (await store.load("s")).state().messages[0].text == "hi"

    anyio.run(use)
    assert not list(tmp_path.iterdir())  # no file was made


async def test_files_it_cannot_use_are_clear_errors(tmp_path: Path) -> None:
    missing = SQLiteStore(tmp_path / "no" / "such" / "dir.db")
    with pytest.raises(StoreError, match=r"the directory .* does not exist"):
        await missing.create(template="t")
    folder = SQLiteStore(tmp_path)
    with pytest.raises(StoreError, match="it is a directory"):
        await folder.create(template="t")
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not a database, not even close" * 100)
    with pytest.raises(StoreError, match="is not a SQLite database"):
        await SQLiteStore(junk).create(template="t")
    with pytest.raises(TypeError, match="path must be a file path"):
        SQLiteStore(3)  # type: ignore[arg-type]


async def test_a_writer_held_up_too_long_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "busy.db"
    async with SQLiteStore(path) as first:
        await first.create(template="t", session_id="s")
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process in a long write transaction
    try:
        store = SQLiteStore(path, busy_timeout=0.1)
        with pytest.raises(
            StoreError, match=r"stayed locked by another writer for more than 0\.1 s"
        ):
            await store.append("s", [MessageAdded(message=Message.user("hi"))])
        assert (await store.get("s")).last_seq == 0  # reading still works (WAL)
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert await store.append("s", [MessageAdded(message=Message.user("hi"))]) == 1
    await store.aclose()


_RACER = textwrap.dedent(
    """
    import json, sys, time
    import anyio
    from kode.sessions import SQLiteStore, SessionLeaseError

    async def main(path: str, owner: str, start: float) -> None:
        store = SQLiteStore(path)
        while time.time() < start:  # both processes ask at the same moment
            time.sleep(0.001)
        try:
            lease = await store.acquire("shared", owner=owner, ttl=60)
            print(json.dumps({"owner": owner, "won": True, "expires": lease.expires_at}))
        except SessionLeaseError as exc:
            print(json.dumps({"owner": owner, "won": False, "error": str(exc)}))
        await store.aclose()

    anyio.run(main, sys.argv[1], sys.argv[2], float(sys.argv[3]))
    """
)


def test_two_processes_competing_for_a_lease(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"

    async def create() -> None:
        async with SQLiteStore(path) as store:
            await store.create(template="t", session_id="shared")

    anyio.run(create)
    start = time.time() + 1.5  # after both interpreters have started
    racers = [
        subprocess.Popen(
            [sys.executable, "-c", _RACER, str(path), f"process{i}", str(start)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(2)
    ]
    outcomes = []
    for racer in racers:
        out, err = racer.communicate(timeout=60)
        assert racer.returncode == 0, err
        outcomes.append(json.loads(out))
    winners = [o for o in outcomes if o["won"]]
    losers = [o for o in outcomes if not o["won"]]
    assert len(winners) == 1 and len(losers) == 1
    assert f"is leased by '{winners[0]['owner']}'" in losers[0]["error"]

    async def check() -> None:
        async with SQLiteStore(path) as store:
            header = await store.get("shared")
            assert header.lease_owner == winners[0]["owner"]
            with pytest.raises(SessionLeaseError):  # it outlives the process that took it
                await store.acquire("shared", owner="a third")

    anyio.run(check)


async def test_an_append_waits_for_another_writer_off_the_event_loop(tmp_path: Path) -> None:
    # Appends run in the caller's thread when nothing is in the way; when another process
    # holds the write lock, the append must wait in a worker thread, not block the loop.
    store = SQLiteStore(tmp_path / "s.db")
    await store.create(template="t", session_id="s")
    other = sqlite3.connect(tmp_path / "s.db", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await anyio.sleep(0.01)

    async def release() -> None:
        await anyio.sleep(0.3)
        other.execute("COMMIT")

    async with anyio.create_task_group() as tg:
        tg.start_soon(tick)
        tg.start_soon(release)
        seq = await store.append("s", [StatusChanged(status="running")])
        tg.cancel_scope.cancel()
    other.close()
    assert seq == 1 and ticks >= 10
    assert await store.append("s", [StatusChanged(status="idle")]) == 2  # in this thread
    await store.aclose()


def size(path: Path) -> int:
    return path.stat().st_size


async def test_an_append_writes_four_pages_to_the_wal(tmp_path: Path) -> None:
    # The records' table and its primary key, the session's row and the one listing index
    # that holds last_active: an index per listing filter on (filter, last_active, id) made
    # it 7, each page more in every commit (bench/store_writes.py).
    path = tmp_path / "pages.db"
    store = SQLiteStore(path)
    for i in range(300):  # enough headers for each index to span several pages
        await store.create(template=f"t{i % 10}", session_id=f"s{i:04}", label=f"l{i % 7}")
    raw = sqlite3.connect(path, isolation_level=None)
    page = raw.execute("PRAGMA page_size").fetchone()[0]
    wal = Path(f"{path}-wal")
    added = MessageAdded(message=Message.user("x" * 200))
    done = StatusChanged(status="idle")
    try:
        for records in ([added], [added, added], [added, done]):
            await store.append("s0150", records)  # warm: the session's pages are in the WAL
            assert raw.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0] == 0
            assert size(wal) == 0
            await store.append("s0150", records)
            frames = (size(wal) - 32) // (page + 24)  # the WAL header, then frames
            assert frames == 4, (records, frames)
    finally:
        raw.close()
        await store.aclose()


_STATUSES = ("idle", "running", "failed")
_row = st.tuples(
    st.integers(0, 2),  # template
    st.one_of(st.none(), st.integers(0, 2)),  # label
    st.integers(0, 2),  # status
    st.integers(0, 4),  # last_active: many ties, ordered by id then
)


@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(_row, max_size=50),
    limit=st.integers(1, 7),
    template=st.one_of(st.none(), st.integers(0, 2)),
    label=st.one_of(st.none(), st.integers(0, 2)),
    status=st.one_of(st.none(), st.integers(0, 2)),
    walk=st.sampled_from([1, 3, 20]),
)
def test_filtered_pages_are_the_brute_force_order(
    rows: list[tuple[int, int | None, int, int]],
    limit: int,
    template: int | None,
    label: int | None,
    status: int | None,
    walk: int,
) -> None:
    # The walk of the listing's index and the filter's own index (SQLiteStore._page) must
    # give, page after page, what filtering and sorting every session gives.
    import kode.sessions.sqlite as sqlite_module

    filters: dict[str, str] = {}
    if template is not None:
        filters["template"] = f"t{template}"
    if label is not None:
        filters["label"] = f"l{label}"
    if status is not None:
        filters["status"] = _STATUSES[status]
    made = [
        (f"s{i:03}", f"t{t}", None if lab is None else f"l{lab}", _STATUSES[s], active)
        for i, (t, lab, s, active) in enumerate(rows)
    ]
    expected = [
        sid
        for sid, t, lab, s, active in sorted(made, key=lambda r: (r[4], r[0]), reverse=True)
        if filters.get("template", t) == t
        and ("label" not in filters or filters["label"] == lab)
        and filters.get("status", s) == s
    ]

    async def listed() -> list[str]:
        store = SQLiteStore(":memory:")
        try:
            await store.list_sessions()  # opens it
            with store._connection() as conn:
                conn.executemany(
                    "INSERT INTO kode_sessions (id, template, label, status, created_at, "
                    "last_active, last_seq, metadata) VALUES (?, ?, ?, ?, 0, ?, 0, '{}')",
                    made,
                )
            found: list[str] = []
            cursor = None
            while True:
                page = await store.list_sessions(limit=limit, cursor=cursor, **filters)  # type: ignore[arg-type]
                assert len(page.sessions) <= limit
                found += [h.id for h in page.sessions]
                cursor = page.next_cursor
                if cursor is None:
                    return found
                assert len(found) <= len(made)
        finally:
            await store.aclose()

    kept = sqlite_module._WALK_PER_ROW
    sqlite_module._WALK_PER_ROW = walk  # short walks reach the filter's index too
    try:
        assert anyio.run(listed) == expected
    finally:
        sqlite_module._WALK_PER_ROW = kept
