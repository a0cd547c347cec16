"""bench/sessions.py runs: every store's rows, in quick mode, with a few sessions.

No timing is asserted (the machine is shared): the script runs, finds what it lists, and
prints every row.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent.parent / "bench" / "sessions.py"


def test_the_sessions_bench_runs() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--json", "--count", "300", "--no-postgres"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["count"] == 300
    rows = {(r["store"], r["figure"]) for r in report["rows"]}
    stores = ("memory", "sqlite NORMAL", "sqlite FULL")
    figures = ("page_first", "page_deep", "page_filtered", "page_status", "append", "load_100")
    assert rows == {(s, f) for s in stores for f in figures}
    assert all(r["median_us"] > 0 for r in report["rows"])


RUNS = SCRIPT.with_name("session_runs.py")


def test_the_session_runs_bench_runs() -> None:
    done = subprocess.run(
        [sys.executable, str(RUNS), "--quick", "--json", "--no-peers"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    rows = {(r["figure"], r["subject"]) for r in report["rows"]}
    subjects = ("kode, SQLite NORMAL", "kode, SQLite FULL", "kode, MemoryStore", "kode, no store")
    expected = {(f, s) for f in ("round_trip", "turns_50") for s in subjects}
    assert rows - expected == {("depth_1000", "kode, SQLite NORMAL: last 10 turns vs turns 6-15")}
    assert expected <= rows
    assert all(r["median_ms"] > 0 for r in report["rows"])


def test_the_session_runs_bench_times_cold_and_warm_round_trips() -> None:
    done = subprocess.run(
        [sys.executable, str(RUNS), "--quick", "--json", "--no-peers", "--caches"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)["rows"]
    subjects = ["kode, SQLite NORMAL", "kode, SQLite FULL", "kode, MemoryStore", "kode, no store"]
    for figure in ("round_trip_cold", "round_trip_warm"):
        found = [r for r in rows if r["figure"] == figure]
        assert [r["subject"] for r in found] == subjects
        assert all(r["median_ms"] > 0 and r["passed"] is None for r in found)
        assert found[0]["ratio"] == 1.0


COSTS = SCRIPT.with_name("record_costs.py")


def test_the_record_costs_bench_runs() -> None:
    done = subprocess.run(
        [sys.executable, str(COSTS), "--quick", "--json", "--no-postgres"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    rows = {(r["store"], r["figure"]): r for r in json.loads(done.stdout)["rows"]}
    for size in ("1", "3"):
        for subject in ("baseline", "checksum", "checksum+lease", "checksum+if_last_seq"):
            assert rows["sqlite NORMAL", f"append_{size} {subject}"]["median_us"] > 0
    assert rows["sqlite NORMAL", "load_100 baseline"]["ratio"] == 1.0
    assert rows["cpu", "checksum 1 KB"]["median_us"] > 0


WRITES = SCRIPT.with_name("store_writes.py")


def test_the_store_writes_bench_runs_and_counts_statements() -> None:
    done = subprocess.run(
        [sys.executable, str(WRITES), "--quick", "--json", "--no-postgres"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    rows = {r["figure"]: r for r in json.loads(done.stdout)["rows"]}
    assert list(rows) == ["turn", "turn, one INSERT a batch", "floor"]
    # a tool turn: two commits of BEGIN, the update, the INSERT stepped per record (the
    # turn's five), COMMIT; with one INSERT a batch, eight; the floor, one INSERT by itself
    assert [r["statements"] for r in rows.values()] == [11, 8, 1]
    assert rows["floor"]["ratio"] == 1.0
    assert all(r["median_us"] > 0 for r in rows.values())
