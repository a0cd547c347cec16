"""How long bash_run keeps the event loop from running other tasks: the loop's longest gap.

Each round is a fresh Python process (so the first call's one-time work counts: the sweep of
crashed processes' shell directories, bashlex's import, the bubblewrap probe). In it a monitor
task sleeps 1 ms at a time and records the longest gap between its wake-ups, first while the
loop is idle (the machine's own noise), then during bash_run's first call and during four more
calls. bash_run is called directly (``bash_run.run``, no agent, so no approval check), with
the sandbox and without, in the foreground and in the background.

    .venv/bin/python bench/bash_loop_gap.py [--rounds 5] [--tree PATH]

``--tree`` runs the rounds against another checkout of kode (e.g. one made with
``git archive <commit> | tar -x -C PATH``), to compare before and after a change.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROUND = r"""
import asyncio, json, sys, tempfile, time
from pathlib import Path

from kode import ToolContext
from kode.builtin.runtime import RuntimePolicy, bash_run, set_default_runtime_policy
from kode.tools.workspace import Workspace

sandbox, background = sys.argv[1], sys.argv[2] == "bg"


async def main():
    set_default_runtime_policy(RuntimePolicy(security="full", ask="off", sandbox=sandbox))
    gaps = []
    done = False

    async def monitor():
        last = time.perf_counter()
        while not done:
            await asyncio.sleep(0.001)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    def longest_since(start):
        return max(gaps[start:], default=0.0) * 1000

    watcher = asyncio.ensure_future(monitor())
    await asyncio.sleep(0.3)
    idle = longest_since(0)
    ctx = ToolContext(workspace=Workspace(root=Path(tempfile.mkdtemp())))
    mark = len(gaps)
    args = {"command": "echo hi > f.txt && cat f.txt", "background": background}
    result = await bash_run.run(args, ctx)
    assert not result.is_error, result.text
    await asyncio.sleep(0.01)
    first = longest_since(mark)
    mark = len(gaps)
    for _ in range(4):
        await bash_run.run(args, ctx)
    await asyncio.sleep(0.01)
    later = longest_since(mark)
    done = True
    await watcher
    manager = ctx.services.get("processes")
    if manager is not None:
        await manager.aclose()
    print(json.dumps({"idle": idle, "first": first, "later": later}))


asyncio.run(main())
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tree", type=Path, default=Path(__file__).resolve().parent.parent)
    options = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": str(options.tree.resolve())}
    print(f"kode from {options.tree}; {options.rounds} rounds; longest gap in ms (median, max)")
    for sandbox in ("workspace-write", "off"):
        for mode in ("fg", "bg"):
            rows: dict[str, list[float]] = {"idle": [], "first": [], "later": []}
            for _ in range(options.rounds):
                done = subprocess.run(
                    [sys.executable, "-c", ROUND, sandbox, mode],
                    env=env,
                    capture_output=True,
                    text=True,
                    check=True,
                    cwd=options.tree,
                )
                for key, value in json.loads(done.stdout.strip().splitlines()[-1]).items():
                    rows[key].append(value)
            text = "  ".join(
                f"{key} {statistics.median(v):6.1f} ({max(v):6.1f})" for key, v in rows.items()
            )
            print(f"sandbox={sandbox:15s} {mode}: {text}")


if __name__ == "__main__":
    main()
