"""How long the ``kode`` command takes to start, and to show its first output.

Run ``python bench/startup.py`` (``--rounds N``, default 5; ``--json`` for machine-readable
output). Each figure is the median wall-clock time of fresh processes; the rows run round by
round in turn, so a noisy machine slows all alike, and each is given as a ratio to
``python -c pass`` measured in the same rounds.

- ``help``: ``kode --help``.
- ``run_scripted``: ``kode run --status`` of a template with no tools, on a scripted model (a
  JSON file of turns): kode's own start-up, no provider SDK.
- ``run_<provider>``: ``kode run --status --model <provider>:bench-model`` against a loopback
  fake of the provider (`kode.testing.providers.FakeProviderServer`), to the end of its one
  reply. The provider SDK is imported in a thread from the moment the model is read.

Two columns say when something was first shown: ``first_output``, the first byte on stdout or
stderr (for ``kode run``, the ``--status`` line on stderr), which is what a person at the
terminal waits for; and ``first_reply``, the first byte on stdout (the reply's first text).
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
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

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
    replies: list[float] = field(default_factory=list)


def _read(stream: IO[bytes], into: dict[str, Any], key: str) -> None:
    """Read `stream` to its end, noting when its first byte came (under `key`)."""
    first = stream.read(1)
    if first:
        into[key] = time.perf_counter()
    into[key + "_text"] = first + stream.read()


def _time(row: Row, cwd: Path) -> None:
    """Run `row` once: wall time to exit, to the first byte shown, and to the first on stdout."""
    started = time.perf_counter()
    process = subprocess.Popen(
        row.argv,
        cwd=cwd,
        env={**os.environ, **row.env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
    )
    assert process.stdout is not None and process.stderr is not None
    seen: dict[str, Any] = {}
    readers = [
        threading.Thread(target=_read, args=(process.stdout, seen, "out")),
        threading.Thread(target=_read, args=(process.stderr, seen, "err")),
    ]
    for reader in readers:
        reader.start()
    for reader in readers:
        reader.join(timeout=120)
    process.wait(timeout=120)
    ended = time.perf_counter()
    if process.returncode != 0:
        errors = seen.get("err_text", b"").decode()[-2000:]
        raise SystemExit(f"{row.name} failed ({process.returncode}): {errors}")
    row.totals.append(ended - started)
    shown = [seen[key] for key in ("out", "err") if key in seen]
    if shown:
        row.firsts.append(min(shown) - started)
    if "out" in seen:
        row.replies.append(seen["out"] - started)


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
                "run_scripted",
                [*kode, "run", "agent.json", "hi", "--status", "--model", "scripted:turns.json"],
            ),
            *(
                Row(
                    f"run_{provider}",
                    [
                        *kode,
                        "run",
                        "agent.json",
                        "hi",
                        "--status",
                        "--model",
                        f"{provider}:bench-model",
                    ],
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
        reply = statistics.median(row.replies) if row.replies else None
        results.append(
            {
                "name": row.name,
                "seconds": round(total, 4),
                "ratio": round(total / base, 2),
                "first_output": None if first is None else round(first, 4),
                "first_reply": None if reply is None else round(reply, 4),
            }
        )
    if args.json:
        print(json.dumps({"python": platform.python_version(), "rows": results}, indent=2))
        return
    print(f"{'row':<22} {'median s':>9} {'x pass':>8} {'first output s':>15} {'first reply s':>14}")
    for r in results:
        first = "" if r["first_output"] is None else f"{r['first_output']:.3f}"
        reply = "" if r["first_reply"] is None else f"{r['first_reply']:.3f}"
        print(f"{r['name']:<22} {r['seconds']:>9.3f} {r['ratio']:>7.1f}x {first:>15} {reply:>14}")


if __name__ == "__main__":
    main()
