"""bench/models.py runs: a round trip through each provider model, and its floor, in a few rounds.

No timing is asserted (the machine is shared): the script runs every model against the
loopback server (each round checks the agent's answer) and prints every row.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent.parent / "bench" / "models.py"


def test_the_models_bench_runs() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--json", "--rounds", "2"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["info"]["rounds"] == 2
    rows = report["rows"]
    assert [r["provider"] for r in rows] == ["anthropic", "openai", "openai-responses", "gemini"]
    assert all(r["median_ms"] > 0 and r["floor_ms"] > 0 and r["ratio"] > 0 for r in rows)
