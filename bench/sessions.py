"""What listing, appending and loading sessions cost in each store, with 10,000 sessions.

Run ``python bench/sessions.py`` (``--quick`` for fewer rounds, ``--json`` for
machine-readable output, ``--check`` to exit 1 when a target is missed, ``--count N`` for
another number of sessions). Each store gets the same sessions, made in one transaction:
10,000 headers over 10 templates, then 100 records appended to one of them. The stores are
`MemoryStore`, `SQLiteStore` (a file in a temporary directory; synchronous NORMAL and FULL)
and `PostgresStore` (a throwaway cluster from `kode.testing.postgres`, skipped where the
PostgreSQL binaries are not installed; the cluster runs with fsync off, so its append figure
is the round trip, not the disk).

Each figure is the median over rounds of one operation, timed with ``time.perf_counter_ns``:

- ``page_first``: the first page of 50 (``list_sessions(limit=50)``);
- ``page_deep``: a page of 50 halfway down (the cursor after 5,000 sessions). Keyset paging
  costs the same at any depth: its ratio to ``page_first`` (target <= 3x) is the check;
- ``page_filtered``: a page of 50 of one template, halfway down its sessions (``--templates
  1`` puts every session in one template: the filter that matches them all);
- ``page_status``: the first page of 50 idle sessions (``status="idle"``: every session is);
- ``append``: one batch of three records (a message, a call update, usage), committed;
- ``load_100``: the header and 100 records of one session, parsed.

No network beyond loopback, no pytest: a plain script.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from contextlib import ExitStack
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import anyio

from kode.models.messages import Message, TextContent, ToolResultContent
from kode.sessions import (
    CallUpdated,
    MemoryStore,
    MessageAdded,
    NewSession,
    PostgresStore,
    SQLiteStore,
    Store,
    UsageAdded,
)

DEEP_TARGET = 3.0


@dataclass
class Row:
    store: str
    figure: str
    median_us: float
    ratio: float | None
    target: str
    passed: bool | None


def records(i: int) -> list[Any]:
    block = ToolResultContent(tool_use_id=f"c{i}", content=[TextContent(text="x" * 200)])
    return [
        MessageAdded(message=Message(role="user", content=[block])),
        CallUpdated(call_id=f"c{i}", name="fs_read", status="done", result=block),
        UsageAdded(input_tokens=100, output_tokens=20),
    ]


async def median_us(rounds: int, op: Callable[[], Awaitable[object]]) -> float:
    await op()  # warm: connections, caches
    times = []
    for _ in range(rounds):
        start = time.perf_counter_ns()
        await op()
        times.append(time.perf_counter_ns() - start)
    return statistics.median(times) / 1000


async def fill(store: Store, count: int, templates: int) -> tuple[str, str, str]:
    """Make the sessions; return the deep cursor, the filtered cursor and the 100-record id."""
    await store.create_many(
        [NewSession(template=f"t{i % templates}", session_id=f"s{i:06}") for i in range(count)]
    )
    heavy = f"s{count // 3:06}"
    for start in range(0, 99, 3):
        await store.append(heavy, [*records(start), *records(start + 1), *records(start + 2)])
    await store.append(heavy, records(99)[:1])

    async def cursor_after(n: int, **filters: str) -> str:
        cursor = None
        seen = 0
        while seen < n:
            page = await store.list_sessions(limit=min(1000, n - seen), cursor=cursor, **filters)  # type: ignore[arg-type]
            seen += len(page.sessions)
            cursor = page.next_cursor
            assert cursor is not None
        return cursor

    half_of_one = count // templates // 2
    return (
        await cursor_after(count // 2),
        await cursor_after(half_of_one, template=f"t{3 % templates}"),
        heavy,
    )


async def bench_store(
    name: str, store: Store, count: int, rounds: int, templates: int
) -> list[Row]:
    deep, filtered, heavy = await fill(store, count, templates)
    first = await median_us(rounds, lambda: store.list_sessions(limit=50))
    deep_us = await median_us(rounds, lambda: store.list_sessions(limit=50, cursor=deep))
    filtered_us = await median_us(
        rounds,
        lambda: store.list_sessions(limit=50, cursor=filtered, template=f"t{3 % templates}"),
    )
    status_us = await median_us(rounds, lambda: store.list_sessions(limit=50, status="idle"))
    counter = iter(range(1000, 10**9))
    target_id = f"s{count - 1:06}"
    append_us = await median_us(rounds, lambda: store.append(target_id, records(next(counter))))
    load_us = await median_us(rounds, lambda: store.load(heavy, limit=100))
    ratio = deep_us / first
    return [
        Row(name, "page_first", first, None, "", None),
        Row(
            name,
            "page_deep",
            deep_us,
            ratio,
            f"<= {DEEP_TARGET:g}x page_first",
            ratio <= DEEP_TARGET,
        ),
        Row(name, "page_filtered", filtered_us, filtered_us / first, "(info)", None),
        Row(name, "page_status", status_us, status_us / first, "(info)", None),
        Row(name, "append", append_us, None, "", None),
        Row(name, "load_100", load_us, None, "", None),
    ]


async def run(
    count: int, rounds: int, postgres: bool, templates: int
) -> tuple[list[Row], list[str]]:
    rows: list[Row] = []
    notes: list[str] = []
    with ExitStack() as stack:
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="kode-bench-")))
        stores: list[tuple[str, Callable[[], Store]]] = [
            ("memory", MemoryStore),
            ("sqlite NORMAL", lambda: SQLiteStore(folder / "normal.db")),
            ("sqlite FULL", lambda: SQLiteStore(folder / "full.db", synchronous="FULL")),
        ]
        if postgres:
            from kode.testing.postgres import PostgresServer, PostgresUnavailable

            try:
                server = stack.enter_context(PostgresServer())
                url = server.create_database("bench")
                stores.append(("postgres", lambda: PostgresStore(url)))
            except (PostgresUnavailable, ImportError) as exc:
                notes.append(f"postgres skipped: {exc}")
        for name, make in stores:
            store = make()
            try:
                rows += await bench_store(name, store, count, rounds, templates)
            finally:
                await store.aclose()
    return rows, notes


def print_table(rows: list[Row], count: int) -> None:
    print(f"{count:,} sessions; median time per operation")
    header = ("store", "figure", "median", "ratio", "target", "result")
    lines = [
        (
            r.store,
            r.figure,
            f"{r.median_us / 1000:.2f} ms" if r.median_us >= 1000 else f"{r.median_us:.0f} us",
            "" if r.ratio is None else f"{r.ratio:.2f}x",
            r.target,
            "-" if r.passed is None else ("pass" if r.passed else "FAIL"),
        )
        for r in rows
    ]
    widths = [max(len(str(x)) for x in column) for column in zip(header, *lines, strict=True)]
    for line in [header, tuple("-" * w for w in widths), *lines]:
        print("  ".join(str(x).ljust(w) for x, w in zip(line, widths, strict=True)).rstrip())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds (noisier)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument("--count", type=int, default=10_000, help="sessions in each store")
    parser.add_argument("--no-postgres", action="store_true", help="leave PostgreSQL out")
    parser.add_argument("--templates", type=int, default=10, help="templates the sessions share")
    args = parser.parse_args()
    if args.templates < 1:
        parser.error("--templates must be 1 or more")
    rounds = 10 if args.quick else 40
    rows, notes = anyio.run(run, args.count, rounds, not args.no_postgres, args.templates)
    if args.json:
        print(
            json.dumps(
                {
                    "python": platform.python_version(),
                    "count": args.count,
                    "templates": args.templates,
                    "rounds": rounds,
                    "rows": [asdict(r) for r in rows],
                    "notes": notes,
                },
                indent=2,
            )
        )
    else:
        print_table(rows, args.count)
        for note in notes:
            print("note:", note)
    missed = [r for r in rows if r.passed is False]
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
