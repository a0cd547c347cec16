"""What the OS sandbox costs per command, next to the supervisor alone and plain subprocess.run.

Run ``python bench/sandbox.py`` (``--rounds N``, ``--quick`` for fewer rounds, ``--json`` for
machine-readable output). Each round runs ``true`` once in each of these ways, in an order that
rotates from round to round so that a noisy machine slows them alike:

- ``subprocess.run``: ``bash -c true``, the floor;
- ``supervisor``: `run_command` without a sandbox, as a command a person approved runs (the
  subreaper supervisor, output pipes, the exit status, the leftover check);
- ``sandbox``: `run_command` in the sandbox, as a command that skipped approval runs
  (bubblewrap, namespaces, the system-call filter, the supervisor inside);
- ``bash_run (sandbox)`` and ``bash_run (no sandbox)``: the whole tool call as a model makes it
  (the policy check, the environment, the result), with ``sandbox`` on and off;
- ``fs_grep (ripgrep)`` and ``fs_grep (python worker)``: the whole ``fs_grep`` call over a small
  tree (40 files), with ``rg`` and, for a look-behind pattern ripgrep refuses, with the Python
  worker process (``KODE_RG=off`` makes every pattern take that path); both run in the
  read-only sandbox where bubblewrap works;
- ``grep worker (sandbox)`` and ``grep worker (no sandbox)``: the Python worker alone
  (`python_search`), in the read-only sandbox and outside it, to set what the sandbox costs the
  worker against what it costs a command (``sandbox`` / ``supervisor``).

Each figure is the median wall-clock time of one command over the rounds; the ratios divide
medians measured in the same run. The one-time probe of bubblewrap (run once per process) is
reported apart. Linux with bubblewrap only; no network, no pytest.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio

from kode import ToolContext
from kode.builtin._shared._processes import run_command
from kode.builtin.fs import fs_grep
from kode.builtin.fs._grep import GrepQuery, confinement, python_search
from kode.builtin.runtime import RuntimePolicy, bash_run, sandbox_support
from kode.tools.workspace import Workspace
from kode.trust import sandbox as _sandbox

Runner = Callable[[], Awaitable[None]]


def _variants(root: Path) -> dict[str, Runner]:
    support = sandbox_support()
    if not support.available or support.program is None:
        sys.exit(f"no sandbox here: {support.reason}")
    sandbox = _sandbox.Sandbox(
        program=support.program,
        mode="workspace-write",
        roots=(root,),
        user_namespace=support.user_namespace,
    )

    async def plain() -> None:
        done = await anyio.to_thread.run_sync(
            lambda: subprocess.run(["bash", "-c", "true"], cwd=root, check=False)
        )
        assert done.returncode == 0

    async def supervised() -> None:
        outcome = await run_command("true", cwd=root, seconds=30, max_chars=1000)
        assert outcome.exit_code == 0, outcome.output

    async def sandboxed() -> None:
        outcome = await run_command("true", cwd=root, seconds=30, max_chars=1000, sandbox=sandbox)
        assert outcome.exit_code == 0, outcome.output

    def tool(policy: RuntimePolicy, expect_sandbox: bool) -> Runner:
        async def call() -> None:
            ctx: ToolContext[None] = ToolContext(workspace=Workspace(root=root))
            ctx.services["runtime_policy"] = policy
            result = await bash_run.run({"command": "true"}, ctx)
            assert not result.is_error and result.details["sandboxed"] is expect_sandbox, result

        return call

    def grep(pattern: str, engine: str) -> Runner:
        async def call() -> None:
            ctx: ToolContext[None] = ToolContext(workspace=Workspace(root=root))
            result = await fs_grep.run({"pattern": pattern, "output_mode": "count"}, ctx)
            assert not result.is_error and result.details["engine"] == engine, result
            assert result.details["matches"] == 40, result

        return call

    return {
        "subprocess.run": plain,
        "supervisor": supervised,
        "sandbox": sandboxed,
        "bash_run (sandbox)": tool(RuntimePolicy(security="full", ask="off"), True),
        "bash_run (no sandbox)": tool(
            RuntimePolicy(security="full", ask="off", sandbox="off"), False
        ),
        "fs_grep (ripgrep)": grep("hello", "ripgrep"),
        "fs_grep (python worker)": grep("(?<=hel)lo", "python"),
        "grep worker (sandbox)": worker(root, sandboxed=True),
        "grep worker (no sandbox)": worker(root, sandboxed=False),
    }


def worker(root: Path, *, sandboxed: bool) -> Runner:
    """The Python grep worker alone, in the read-only sandbox or outside it."""
    query = GrepQuery(
        pattern="(?<=hel)lo",
        ignore_case=False,
        base=root,
        file=None,
        glob=None,
        prune=frozenset(),
        mode="count",
        context=0,
        limit=100,
    )
    confine = confinement((root,)) if sandboxed else None
    assert confine is not None or not sandboxed, "no sandbox for the worker here"

    async def call() -> None:
        outcome = await python_search(query, roots=(root,), confine=confine)
        assert sum(f.count for f in outcome.files) == 40, outcome

    return call


def _tree(root: Path) -> None:
    """40 small text files in 4 directories, one matching line in each."""
    for index in range(40):
        folder = root / f"pkg{index % 4}"
        folder.mkdir(exist_ok=True)
        lines = [f"line {n} of file {index}" for n in range(50)]
        lines[index % 50] = "say hello"
        (folder / f"module{index}.py").write_text("\n".join(lines) + "\n")


async def _measure(rounds: int) -> tuple[dict[str, list[float]], float]:
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        _tree(root)
        started = time.perf_counter()
        _sandbox._support.clear()  # the probe, measured once
        sandbox_support()
        probe = time.perf_counter() - started
        variants = _variants(root)
        names = list(variants)
        samples: dict[str, list[float]] = {name: [] for name in names}
        for name in names:  # warm up: imports, caches, the first fork of each kind
            await variants[name]()
        for index in range(rounds):
            order = names[index % len(names) :] + names[: index % len(names)]
            for name in order:
                began = time.perf_counter()
                await variants[name]()
                samples[name].append(time.perf_counter() - began)
    return samples, probe


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40, help="rounds (default 40)")
    parser.add_argument("--quick", action="store_true", help="10 rounds")
    parser.add_argument("--json", action="store_true", help="print JSON")
    options = parser.parse_args()
    rounds = 10 if options.quick else options.rounds
    samples, probe = anyio.run(_measure, rounds)
    medians = {name: statistics.median(values) for name, values in samples.items()}
    floor = medians["subprocess.run"]
    supervisor = medians["supervisor"]
    rows = [
        {
            "figure": name,
            "median_ms": round(value * 1000, 2),
            "vs_subprocess_run": round(value / floor, 2),
            "vs_supervisor": round(value / supervisor, 2),
        }
        for name, value in medians.items()
    ]
    if options.json:
        print(json.dumps({"rounds": rounds, "probe_ms": round(probe * 1000, 2), "rows": rows}))
        return
    print(
        f"Python {platform.python_version()}, {platform.machine()}, "
        f"{rounds} rounds; medians of one `true` each"
    )
    print(f"{'figure':<26}{'median':>10}{'/ subprocess.run':>19}{'/ supervisor':>15}")
    for row in rows:
        print(
            f"{row['figure']:<26}{row['median_ms']:>8.2f} ms{row['vs_subprocess_run']:>18.2f}x"
            f"{row['vs_supervisor']:>14.2f}x"
        )
    print(f"one-time bubblewrap probe: {probe * 1000:.1f} ms (once per process)")
    inside, outside = medians["grep worker (sandbox)"], medians["grep worker (no sandbox)"]
    command = medians["sandbox"] - supervisor
    print(
        f"the sandbox costs the grep worker {(inside - outside) * 1000:.1f} ms "
        f"({inside / outside:.2f}x), a command {command * 1000:.1f} ms "
        f"({medians['sandbox'] / supervisor:.2f}x): "
        f"{(inside - outside) / command:.2f} of a command's sandbox cost"
    )


if __name__ == "__main__":
    main()
