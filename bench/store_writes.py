"""What a tool turn writes to a store, against one bare ``INSERT`` committed on the same database.

Run ``python bench/store_writes.py`` (``--quick`` for fewer rounds, ``--json`` for
machine-readable output, ``--no-postgres`` to leave PostgreSQL out). An agent's tool turn
commits twice (write-ahead): its reply with the call's start (the assistant message, the call
``running``, the usage), then the call's end with the results (the call ``done`` with its
result, the ``tool_result`` message). Subjects, per store (`SQLiteStore`, a file, WAL,
synchronous NORMAL; `PostgresStore`, a throwaway cluster from `kode.testing.postgres` with
fsync off, on loopback, so its figures are round trips):

- ``turn``: those two appends, with the run's lease, by the store as it is;
- ``turn, statements before`` (PostgreSQL): the same two appends with the statements of the
  code before, ``BEGIN``, the header's update, the ``INSERT``, ``COMMIT``: four round trips an
  append, where the store now sends one;
- ``turn, one INSERT a batch`` (SQLite): the same two appends with one ``INSERT`` of every
  record of a batch instead of the store's one prepared ``INSERT`` stepped per record
  (``executemany``): fewer statements, and what they cost;
- ``floor``: one bare ``INSERT`` of a row of the same size (a 200-character text), committed
  by itself (autocommit), on the same database: what one commit costs at least.

Each figure is the median over rounds of one operation, timed with ``time.perf_counter_ns``,
the subjects taking turns in a new random order each round; the ratio is against ``floor`` of
the same store in the same run. ``statements`` is what the subject sends per operation,
counted (SQLite's trace callback; on PostgreSQL each statement is a round trip).

No network beyond loopback, no pytest: a plain script.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import anyio

from kode.models.messages import Message, TextContent, ToolResultContent, ToolUseContent
from kode.sessions import (
    CallUpdated,
    Lease,
    MessageAdded,
    PostgresStore,
    SessionRecord,
    SQLiteStore,
    UsageAdded,
)
from kode.sessions._common import checksum
from kode.sessions._sql import SQLStore


class _Before:
    """A store that writes the other way while ``before`` is set (one store, one pool)."""

    before = False

    def _insert_records(
        self, cur: Any, session_id: str, first: int, now: int, rows: list[Any]
    ) -> None:
        if not self.before or getattr(self, "dialect", "") != "sqlite":
            super()._insert_records(cur, session_id, first, now, rows)  # type: ignore[misc]
            return
        values = [
            v
            for i, (k, d, _) in enumerate(rows)
            for v in (session_id, first + i, now, k, d, checksum(first + i, now, k, d))
        ]
        cur.execute(
            "INSERT INTO kode_records (session_id, seq, at, type, data, checksum) VALUES "
            + ", ".join(["(?, ?, ?, ?, ?, ?)"] * len(rows)),
            values,
        )

    def _append(self, cur: Any, *args: Any) -> int:
        if self.before:
            last = SQLStore._append(self, cur, *args)  # type: ignore[arg-type]
            if isinstance(self, PostgresStore):  # as the store would know it after its own
                self._remember(args[0], last)
            return last
        return super()._append(cur, *args)  # type: ignore[misc,no-any-return]


class BeforeSQLite(_Before, SQLiteStore):
    pass


class BeforePostgres(_Before, PostgresStore):
    pass


def turn_records() -> tuple[list[SessionRecord], list[SessionRecord]]:
    """The records of one tool turn's two commits."""
    use = ToolUseContent(id="call_1", name="add", input={"a": 2, "b": 3})
    reply = Message(role="assistant", content=[TextContent(text="Adding."), use])
    result = ToolResultContent(tool_use_id="call_1", content=[TextContent(text="5")])
    start: list[SessionRecord] = [
        MessageAdded(message=reply),
        CallUpdated(call_id="call_1", name="add", status="running", input={"a": 2, "b": 3}),
        UsageAdded(input_tokens=120, output_tokens=30),
    ]
    end: list[SessionRecord] = [
        CallUpdated(call_id="call_1", name="add", status="done", result=result),
        MessageAdded(message=Message(role="user", content=[result])),
    ]
    return start, end


async def _timed(fn: Callable[[], Awaitable[Any]]) -> float:
    started = time.perf_counter_ns()
    await fn()
    return (time.perf_counter_ns() - started) / 1000


async def bench_store(
    name: str,
    store: Any,
    floor: Callable[[], Awaitable[Any]],
    count: Callable[..., Any],
    rounds: int,
) -> list[dict[str, Any]]:
    """Rows of the store's subjects: median µs, ratio to the floor, statements per operation."""
    await store.create(template="t", session_id="turns")
    lease: Lease = await store.acquire("turns", ttl=3600)
    start, end = turn_records()

    async def turn() -> None:
        await store.append("turns", start, lease=lease)
        await store.append("turns", end, lease=lease)

    async def before() -> None:
        store.before = True
        try:
            await turn()
        finally:
            store.before = False

    other = "turn, one INSERT a batch" if store.dialect == "sqlite" else "turn, statements before"
    subjects: dict[str, Callable[[], Awaitable[Any]]] = {
        "turn": turn,
        other: before,
        "floor": floor,
    }
    for fn in subjects.values():  # warm: the connections, the statement caches
        for _ in range(10):
            await fn()
    statements = {key: await count(fn) for key, fn in subjects.items()}
    times: dict[str, list[float]] = {k: [] for k in subjects}
    order = list(subjects)
    shuffle = random.Random(40).shuffle
    for _ in range(rounds):
        shuffle(order)
        for key in order:
            times[key].append(await _timed(subjects[key]))
    await store.release(lease)
    base = statistics.median(times["floor"])
    return [
        {
            "store": name,
            "figure": key,
            "median_us": round(statistics.median(values), 2),
            "ratio": round(statistics.median(values) / base, 2),
            "statements": statements[key],
        }
        for key, values in times.items()
    ]


async def bench_sqlite(folder: Path, rounds: int) -> list[dict[str, Any]]:
    store = BeforeSQLite(folder / "turns.db")
    await store.create(template="t", session_id="open")  # opens the connection
    conn = store._conn
    assert conn is not None
    conn.execute("CREATE TABLE floor (at INTEGER NOT NULL, data TEXT NOT NULL)")
    text = "x" * 200

    async def floor() -> None:
        conn.execute("INSERT INTO floor (at, data) VALUES (?, ?)", (time.time_ns(), text))

    async def count(fn: Callable[[], Awaitable[Any]]) -> int:
        seen: list[str] = []
        conn.set_trace_callback(seen.append)
        try:
            await fn()
        finally:
            conn.set_trace_callback(None)
        return len(seen)

    try:
        return await bench_store("sqlite NORMAL", store, floor, count, rounds)
    finally:
        await store.aclose()


async def bench_postgres(url: str, rounds: int) -> list[dict[str, Any]]:
    import psycopg

    store = BeforePostgres(url, max_connections=1)
    raw = psycopg.connect(url, autocommit=True)
    raw.execute("CREATE TABLE floor (at BIGINT NOT NULL, data TEXT NOT NULL)")
    text = "x" * 200

    def insert() -> None:
        raw.execute("INSERT INTO floor (at, data) VALUES (%s, %s)", (time.time_ns(), text))

    async def floor() -> None:  # in a worker thread, as the store's operations are
        await anyio.to_thread.run_sync(insert)

    sent: list[str] = []
    wrapped = store._connection

    def counting(cur: Any) -> Any:
        class Cursor:
            def execute(self, sql: str, *args: Any) -> Any:
                sent.append(sql)
                return cur.execute(sql, *args)

            def __getattr__(self, name: str) -> Any:
                return getattr(cur, name)

        return Cursor()

    async def count(fn: Callable[[], Awaitable[Any]]) -> int:
        if fn.__name__ == "floor":
            return 1
        from contextlib import contextmanager

        @contextmanager
        def connection() -> Any:
            with wrapped() as conn:

                class Conn:
                    def cursor(self) -> Any:
                        return counting(conn.cursor())

                yield Conn()

        sent.clear()
        store._connection = connection
        try:
            await fn()
        finally:
            del store._connection
        return len(sent)

    try:
        return await bench_store("postgres", store, floor, count, rounds)
    finally:
        raw.close()
        await store.aclose()


async def main(args: argparse.Namespace) -> dict[str, Any]:
    rounds = 100 if args.quick else 1000
    rows: list[dict[str, Any]] = []
    with ExitStack() as stack:
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        rows += await bench_sqlite(folder, rounds)
        if not args.no_postgres:
            from kode.testing.postgres import PostgresServer, PostgresUnavailable

            try:
                server = stack.enter_context(PostgresServer())
            except PostgresUnavailable as exc:
                print(f"(postgres left out: {exc})", file=sys.stderr)
            else:
                rows += await bench_postgres(server.create_database("turns"), rounds)
    return {
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "rounds": rounds,
        "rows": rows,
    }


def _print(report: dict[str, Any]) -> None:
    print(
        f"Python {report['python']}, SQLite {report['sqlite']}, {report['rounds']} rounds, medians"
    )
    print(f"{'store':<14} {'figure':<26} {'median':>10}  {'floor':>7}  {'statements':>10}")
    print(f"{'-' * 14} {'-' * 26} {'-' * 10}  {'-' * 7}  {'-' * 10}")
    for row in report["rows"]:
        print(
            f"{row['store']:<14} {row['figure']:<26} {row['median_us']:>7.1f} us  "
            f"{row['ratio']:>6.2f}x  {row['statements']:>10}"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds (noisier)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument("--no-postgres", action="store_true", help="SQLite only")
    options = parser.parse_args()
    report = anyio.run(main, options)
    if options.json:
        print(json.dumps(report, indent=2))
    else:
        _print(report)
