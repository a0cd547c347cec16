"""What one shell command costs through bash_run, against the floors measured in the same run.

Run ``python bench/shell_command.py`` (``--rounds N``, ``--json`` for machine-readable
output). Each round runs ``true`` once in each of these ways, in an order that rotates from
round to round so that a noisy machine slows them alike:

- ``bash -c``: ``subprocess.run(["bash", "-c", "true"])``, the floor of an unsandboxed command;
- ``bwrap``: ``subprocess.run`` of a bare ``bwrap --unshare-all --ro-bind / / --dev /dev
  --proc /proc true`` (the bubblewrap kode uses), the floor of a sandboxed one;
- ``python -I -S``: an interpreter that starts and does nothing, what a helper written in
  Python costs at least;
- ``bwrap, kode's sandbox``: ``subprocess.run`` of the bubblewrap command line kode builds for
  a sandboxed command in this workspace (the default policy's namespaces, mounts and
  system-call filter; the command line built and the filter's descriptor made per command, as
  kode does), running ``bash -c true`` itself, with no supervisor: what a sandboxed
  command would cost if kode did nothing else, the floor of any launch that keeps kode's
  sandbox as it is;
- ``bash_run (sandbox)`` and ``bash_run (no sandbox)``: the whole tool call as a model makes
  it (``bash_run.run``: the policy check, the environment, the launch under the supervisor,
  the leftover check, the result), with the sandbox on and off.

Each figure is the median wall-clock time of one command over the rounds; the ratios divide
medians measured in the same run: the sandboxed call by ``bwrap``, the unsandboxed one by
``bash -c``. The load average is printed with them. Linux with bubblewrap only; no network,
no pytest.
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
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio

from kode import ToolContext
from kode.builtin.runtime import RuntimePolicy, bash_run, sandbox_support
from kode.tools.workspace import Workspace
from kode.trust.executables import shell
from kode.trust.sandbox import Sandbox
from kode.trust.seccomp import seccomp_fd

Runner = Callable[[], Awaitable[None]]


def _variants(root: Path) -> dict[str, Runner]:
    support = sandbox_support()
    if not support.available or support.program is None:
        sys.exit(f"no sandbox here: {support.reason}")
    bwrap = [support.program, "--unshare-all", "--ro-bind", "/", "/", "--dev", "/dev"]
    bwrap += ["--proc", "/proc", "true"]
    python = [os.path.realpath(sys.executable), "-I", "-S", "-c", "pass"]
    policy = RuntimePolicy(security="full", ask="off")
    sandbox = Sandbox(
        program=support.program,
        mode="workspace-write",  # the default policy's
        roots=(root,),
        network=policy.network,
        hidden=policy.hidden_paths,
        home_paths=policy.home_paths,
        user_namespace=support.user_namespace,
    )
    bash = shell().path
    assert bash is not None

    def run(argv: list[str]) -> Runner:
        async def call() -> None:  # in a worker thread, as bench/sandbox.py's floor
            done = await anyio.to_thread.run_sync(
                lambda: subprocess.run(argv, cwd=root, check=False)
            )
            assert done.returncode == 0, argv

        return call

    def in_sandbox() -> Runner:
        async def call() -> None:  # the filter's descriptor is made per command, as kode does
            def once() -> subprocess.CompletedProcess[bytes]:
                fd = seccomp_fd()
                try:
                    argv = sandbox.argv([bash, "-c", "true"], cwd=root, seccomp=fd)
                    return subprocess.run(
                        argv, cwd=root, check=False, pass_fds=() if fd is None else (fd,)
                    )
                finally:
                    if fd is not None:
                        os.close(fd)

            done = await anyio.to_thread.run_sync(once)
            assert done.returncode == 0, done

        return call

    def tool(policy: RuntimePolicy, expect_sandbox: bool) -> Runner:
        async def call() -> None:
            ctx: ToolContext[None] = ToolContext(workspace=Workspace(root=root))
            ctx.services["runtime_policy"] = policy
            result = await bash_run.run({"command": "true"}, ctx)
            assert not result.is_error and result.details["sandboxed"] is expect_sandbox, result

        return call

    return {
        "bash -c": run(["bash", "-c", "true"]),
        "bwrap": run(bwrap),
        "python -I -S": run(python),
        "bwrap, kode's sandbox": in_sandbox(),
        "bash_run (sandbox)": tool(policy, True),
        "bash_run (no sandbox)": tool(
            RuntimePolicy(security="full", ask="off", sandbox="off"), False
        ),
    }


async def _measure(rounds: int) -> dict[str, list[float]]:
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        variants = _variants(root)
        names = list(variants)
        samples: dict[str, list[float]] = {name: [] for name in names}
        for name in names:  # warm up: imports, the probe, caches, the first fork of each kind
            await variants[name]()
        for index in range(rounds):
            order = names[index % len(names) :] + names[: index % len(names)]
            for name in order:
                began = time.perf_counter()
                await variants[name]()
                samples[name].append(time.perf_counter() - began)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40, help="rounds (default 40)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    options = parser.parse_args()
    before = os.getloadavg()[0]
    samples = anyio.run(_measure, options.rounds)
    load = (before + os.getloadavg()[0]) / 2
    medians = {name: statistics.median(values) for name, values in samples.items()}
    floors = {
        "bash_run (sandbox)": "bwrap",
        "bash_run (no sandbox)": "bash -c",
        "python -I -S": "bash -c",
        "bwrap, kode's sandbox": "bwrap",
    }
    rows = [
        {
            "figure": name,
            "median_ms": round(value * 1000, 2),
            "floor": floors.get(name, ""),
            "vs_floor": round(value / medians[floors[name]], 2) if name in floors else None,
        }
        for name, value in medians.items()
    ]
    if options.json:
        print(json.dumps({"rounds": options.rounds, "load": round(load, 2), "rows": rows}))
        return
    print(
        f"Python {platform.python_version()}, {platform.machine()}, {options.rounds} rounds, "
        f"load average {load:.2f}; medians of one `true` each"
    )
    print(f"{'figure':<24}{'median':>11}   {'against the floor':<20}")
    for row in rows:
        ratio = f"{row['vs_floor']:.2f}x {row['floor']}" if row["vs_floor"] is not None else ""
        print(f"{row['figure']:<24}{row['median_ms']:>8.2f} ms   {ratio}")


if __name__ == "__main__":
    main()
