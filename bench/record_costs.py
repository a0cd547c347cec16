"""What a record's checksum and an append's fencing cost, against the same store without them.

Run ``python bench/record_costs.py`` (``--quick`` for fewer rounds, ``--json`` for
machine-readable output, ``--no-postgres`` to leave PostgreSQL out). Every figure is the
median over rounds of one operation, timed with ``time.perf_counter_ns``, the subjects taking
turns within each round, so a change of load on the machine reaches them alike; each ratio is
against the baseline of the same store in the same run.

Subjects, per store (`SQLiteStore`, a file, synchronous NORMAL; `PostgresStore`, a throwaway
cluster from `kode.testing.postgres` with fsync off, so its figures are round trips):

- ``append_1 baseline`` / ``append_3 baseline``: a batch of one / three records appended
  without a lease by a store that writes no checksum, with the statements of the code before
  checksums (on PostgreSQL: psycopg's ``executemany``, a pipeline);
- ``append_N checksum``: the same batch by the store as it is (a CRC-32 per record, one
  ``INSERT`` of every record; on PostgreSQL the whole append is one statement, one round trip,
  once the store knows the session's last record);
- ``append_N checksum+lease``: the same with the run's lease (the owner check in the
  append's own conditional update: the fencing every append of a run pays);
- ``append_N checksum+if_last_seq``: the same with a compare-and-set on the last record (what
  ``Agent.decide_in_store`` pays);
- ``load_100 baseline`` / ``load_100 checksum``: a session of 100 records (a tool result of
  about 1 KB each) loaded whole, its records without checksums (written before they were kept:
  not checked) and with them (each checked).

And ``checksum()`` alone on a 1 KB and a 10 KB record, for the CPU part.

No network beyond loopback, no pytest: a plain script.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import sys
import tempfile
import time
import zlib
from collections.abc import Awaitable, Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import anyio

from kode.models.messages import Message, TextContent, ToolResultContent
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


def _plain_insert(self: Any, cur: Any, session_id: str, first: int, now: int, rows: Any) -> None:
    """The insert of the code before checksums: no checksum, ``executemany``."""
    cur.executemany(
        self._sql(
            "INSERT INTO kode_records (session_id, seq, at, type, data) VALUES (?, ?, ?, ?, ?)"
        ),
        [(session_id, first + i, now, k, d) for i, (k, d, _) in enumerate(rows)],
    )


class _Switch:
    """A store that writes records as the code before checksums did while ``plain`` is set.

    One store object (one connection, one pool) for every subject: the subjects differ in
    nothing but what they measure.
    """

    plain = False

    def _insert_records(self, cur: Any, *args: Any) -> None:
        if self.plain:
            _plain_insert(self, cur, *args)
        else:
            super()._insert_records(cur, *args)  # type: ignore[misc]

    def _append(self, cur: Any, *args: Any) -> int:
        if self.plain:  # the transaction of the code before (PostgreSQL's is one statement)
            last = SQLStore._append(self, cur, *args)  # type: ignore[arg-type]
            if isinstance(self, PostgresStore):  # as the store would know it after its own
                self._remember(args[0], last)
            return last
        return super()._append(cur, *args)  # type: ignore[misc,no-any-return]


class SwitchSQLite(_Switch, SQLiteStore):
    pass


class SwitchPostgres(_Switch, PostgresStore):
    pass


def _records(count: int) -> list[SessionRecord]:
    result = ToolResultContent(tool_use_id="c1", content=[TextContent(text="x" * 1000)])
    kinds: list[SessionRecord] = [
        MessageAdded(message=Message.user("a prompt of a few words")),
        CallUpdated(call_id="c1", name="look", status="done", result=result),
        UsageAdded(input_tokens=120, output_tokens=30),
    ]
    return kinds[:count] if count <= 3 else [kinds[1]] * count


async def _timed(fn: Callable[[], Awaitable[Any]]) -> float:
    started = time.perf_counter_ns()
    await fn()
    return (time.perf_counter_ns() - started) / 1000


async def bench_store(name: str, store: Any, rounds: int) -> list[tuple[str, str, float, float]]:
    """Rows of (store, figure, median µs, ratio to the baseline)."""
    await store.create(template="t", session_id="plain")
    await store.create(template="t", session_id="real")
    lease: Lease = await store.acquire("real", ttl=600)
    one, three = _records(1), _records(3)
    last = [0]

    async def plain(batch: list[SessionRecord]) -> None:
        store.plain = True
        try:
            await store.append("plain", batch)
        finally:
            store.plain = False

    async def cas(batch: list[SessionRecord]) -> None:
        last[0] = await store.append("real", batch, if_last_seq=last[0])

    subjects: dict[str, Callable[[], Awaitable[Any]]] = {}
    for size, batch in (("1", one), ("3", three)):
        subjects[f"append_{size} baseline"] = lambda b=batch: plain(b)
        subjects[f"append_{size} checksum"] = lambda b=batch: store.append("real", b)
        subjects[f"append_{size} checksum+lease"] = lambda b=batch: store.append(
            "real", b, lease=lease
        )
        subjects[f"append_{size} checksum+if_last_seq"] = lambda b=batch: cas(b)
    # the load: 100 records without checksums (written as before they were kept) and with
    hundred = _records(100)
    await store.create(template="t", session_id="load")
    store.plain = True
    await store.append("load", hundred)
    store.plain = False
    await store.create(template="t", session_id="load-checked")
    await store.append("load-checked", hundred)
    subjects["load_100 baseline"] = lambda: store.load("load")
    subjects["load_100 checksum"] = lambda: store.load("load-checked")
    last[0] = (await store.get("real")).last_seq
    times: dict[str, list[float]] = {k: [] for k in subjects}
    order = list(subjects)
    shuffle = random.Random(34).shuffle
    for _ in range(rounds):
        # A new order each round: no subject always follows the same one (after a load of
        # 100 records, the next operation meets cold caches) or starts a round.
        shuffle(order)
        for key in order:
            if key.endswith("if_last_seq"):
                last[0] = (await store.get("real")).last_seq
            times[key].append(await _timed(subjects[key]))
    rows = []
    for key, values in times.items():
        figure = key.split(" ")[0]
        median = statistics.median(values)
        base = statistics.median(times[f"{figure} baseline"])
        rows.append((name, key, median, median / base))
    await store.release(lease)
    return rows


def checksum_cpu(rounds: int) -> list[tuple[str, str, float, float]]:
    rows = []
    for size in (1_000, 10_000):
        data = json.dumps({"type": "call", "text": "x" * size})
        samples = []
        for _ in range(rounds):
            started = time.perf_counter_ns()
            for _ in range(100):
                checksum(12, 1_700_000_000_000_000, "call", data)
            samples.append((time.perf_counter_ns() - started) / 100 / 1000)
        rows.append(("cpu", f"checksum {size // 1000} KB", statistics.median(samples), 0.0))
    return rows


async def main(args: argparse.Namespace) -> dict[str, Any]:
    rounds = 60 if args.quick else 400
    rows = checksum_cpu(20 if args.quick else 200)
    with ExitStack() as stack:
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        sqlite = SwitchSQLite(folder / "records.db")
        rows += await bench_store("sqlite NORMAL", sqlite, rounds)
        await sqlite.aclose()
        if not args.no_postgres:
            from kode.testing.postgres import PostgresServer, PostgresUnavailable

            try:
                server = stack.enter_context(PostgresServer())
            except PostgresUnavailable as exc:
                print(f"(postgres left out: {exc})", file=sys.stderr)
            else:
                postgres = SwitchPostgres(server.create_database("records"))
                rows += await bench_store("postgres", postgres, rounds)
                await postgres.aclose()
    return {
        "python": platform.python_version(),
        "zlib": zlib.ZLIB_RUNTIME_VERSION,
        "rounds": rounds,
        "rows": [
            {"store": s, "figure": f, "median_us": round(m, 2), "ratio": round(r, 3)}
            for s, f, m, r in rows
        ],
    }


def _print(report: dict[str, Any]) -> None:
    print(f"Python {report['python']}, {report['rounds']} rounds, medians")
    print(f"{'store':<14} {'figure':<32} {'median':>10}  {'ratio':>6}")
    print(f"{'-' * 14} {'-' * 32} {'-' * 10}  {'-' * 6}")
    for row in report["rows"]:
        ratio = f"{row['ratio']:.3f}x" if row["ratio"] else ""
        print(f"{row['store']:<14} {row['figure']:<32} {row['median_us']:>7.2f} us  {ratio:>6}")


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
