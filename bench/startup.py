"""How long the ``kode`` command takes to start, and to show its first output.

Run ``python bench/startup.py`` (``--rounds N``, default 5; ``--json`` for machine-readable
output). Each figure is the median wall-clock time of fresh processes; the rows run round by
round in turn, so a noisy machine slows all alike, and each is given as a ratio to
``python -c pass`` measured in the same rounds.

- ``help``: ``kode --help``.
- ``run_scripted``: ``kode run`` of a template with no tools, on a scripted model (a JSON file
  of turns): kode's own start-up, no provider SDK.
- ``run_<provider>``: ``kode run --model <provider>:bench-model`` against a loopback fake of
  the provider (`kode.testing.providers.FakeProviderServer`), to the end of its one reply; the
  ``first_output`` column is when the reply's first byte reached stdout. The provider SDK is
  imported by the first request, in a worker thread.
- ``import_<sdk>``: ``python -c "import <sdk>"``, for what the SDK alone costs.

No network beyond loopback, no pytest: a plain script.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from kode.testing.providers import FakeProviderServer, Reply

PROVIDERS = ("anthropic", "openai", "openai-responses", "google")
SDKS = {"anthropic": "anthropic", "openai": "openai", "google": "google.genai"}


@dataclass
class Row:
    name: str
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    totals: list[float] = field(default_factory=list)
    firsts: list[float] = field(default_factory=list)


def _time(row: Row, cwd: Path) -> None:
    """Run `row` once: wall time to exit, and to the first byte on stdout."""
    started = time.perf_counter()
    process = subprocess.Popen(
        row.argv,
        cwd=cwd,
        env={**os.environ, **row.env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
    )
    assert process.stdout is not None
    first = process.stdout.read(1)
    first_at = time.perf_counter()
    rest, errors = process.communicate(timeout=120)
    ended = time.perf_counter()
    if process.returncode != 0:
        raise SystemExit(f"{row.name} failed ({process.returncode}): {errors.decode()[-2000:]}")
    row.totals.append(ended - started)
    if first:
        row.firsts.append(first_at - started)
    del rest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    py = sys.executable
    kode = [py, "-m", "kode"]
    with tempfile.TemporaryDirectory() as tmp, FakeProviderServer() as server:
        folder = Path(tmp)
        (folder / "agent.json").write_text(json.dumps({"id": "bench", "tools": []}))
        (folder / "turns.json").write_text(json.dumps(["Hello from a script."]))
        fake = {
            "ANTHROPIC_BASE_URL": server.url,
            "ANTHROPIC_API_KEY": "-",
            "OPENAI_BASE_URL": server.openai_base_url,
            "OPENAI_API_KEY": "-",
            "GOOGLE_GEMINI_BASE_URL": server.url,
            "GEMINI_API_KEY": "-",
        }
        rows = [
            Row("baseline", [py, "-c", "pass"]),
            Row("help", [*kode, "--help"]),
            Row(
                "run_scripted", [*kode, "run", "agent.json", "hi", "--model", "scripted:turns.json"]
            ),
            *(
                Row(
                    f"run_{provider}",
                    [*kode, "run", "agent.json", "hi", "--model", f"{provider}:bench-model"],
                    env=fake,
                )
                for provider in PROVIDERS
            ),
            *(
                Row(f"import_{name}", [py, "-c", f"import {module}"])
                for name, module in SDKS.items()
            ),
        ]
        for n in range(args.rounds):
            order = rows if n % 2 == 0 else rows[::-1]
            for row in order:
                if row.name.startswith("run_") and row.name != "run_scripted":
                    server.reply(Reply(content=["Hello from the provider."]))
                _time(row, folder)

    base = statistics.median(rows[0].totals)
    results = []
    for row in rows:
        total = statistics.median(row.totals)
        first = statistics.median(row.firsts) if row.firsts else None
        results.append(
            {
                "name": row.name,
                "seconds": round(total, 4),
                "ratio": round(total / base, 2),
                "first_output": None if first is None else round(first, 4),
            }
        )
    if args.json:
        print(json.dumps({"python": platform.python_version(), "rows": results}, indent=2))
        return
    print(f"{'row':<22} {'median s':>9} {'x pass':>8} {'first output s':>15}")
    for r in results:
        first = "" if r["first_output"] is None else f"{r['first_output']:.3f}"
        print(f"{r['name']:<22} {r['seconds']:>9.3f} {r['ratio']:>7.1f}x {first:>15}")


if __name__ == "__main__":
    main()
