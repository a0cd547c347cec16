"""Nothing a bash_run command starts survives it: every escape technique, every way to end it.

Each scenario tags what it starts twice: the shell exports a unique variable (inherited by
every process, found in ``/proc/*/environ``), and the process that escapes runs a copy of
``sleep`` under a unique file name (its ``comm``, readable in ``/proc/*/stat`` even once it is a
zombie). After the kill, ``/proc`` must hold no process of either kind, zombies included.
"""

from __future__ import annotations

import os
import secrets
import shutil
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from kode import ToolContext, ToolErrorType
from kode.builtin._shared import _launch_and_kill, _supervisor
from kode.builtin.runtime import (
    ProcessManager,
    RuntimePolicy,
    bash_kill,
    bash_run,
    set_default_runtime_policy,
)
from kode.tools.results import ToolResult
from kode.tools.workspace import Workspace

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc"),
]

MARK = "KODE_KILL_TEST_MARK"
PY = sys.executable

# How each technique starts ESCAPEE so that it leaves the shell's process group or tree.
TECHNIQUES: dict[str, str] = {
    "job_control": "set -m; ESCAPEE &",
    "python_setpgid": (
        f"{PY} -c 'import os, sys; os.setpgid(0, 0); os.execv(sys.argv[1], sys.argv[1:])' ESCAPEE &"
    ),
    "python_setsid": (
        f"{PY} -c 'import os, sys; os.setsid(); os.execv(sys.argv[1], sys.argv[1:])' ESCAPEE &"
    ),
    "setsid_command": "setsid ESCAPEE &",
    "setsid_fork": "setsid -f ESCAPEE",
    "perl_setpgrp": "perl -e 'setpgrp(0, 0); exec @ARGV' ESCAPEE &",
    "double_fork": "( ESCAPEE & ) &",
    "daemonize": (
        f"{PY} -c 'import os, sys\n"
        "if os.fork(): os._exit(0)\n"
        "os.setsid()\n"
        "if os.fork(): os._exit(0)\n"
        "os.execv(sys.argv[1], sys.argv[1:])' ESCAPEE"
    ),
    "nohup": "nohup ESCAPEE > /dev/null 2>&1 &",
    "disown": "ESCAPEE & disown",
}


@dataclass
class Scenario:
    """One command that starts an escaping process, and how to find what it left."""

    root: Path
    mark: str
    name: str
    ready: Path

    def command(self, technique: str, then: str) -> str:
        start = TECHNIQUES[technique].replace("ESCAPEE", f"./escapee.sh {self.ready.name}")
        waiting = f"while [ ! -e {self.ready.name} ]; do sleep 0.02; done"
        return f"export {MARK}={self.mark}\n{start}\n{waiting}\n{then}"

    def survivors(self) -> list[str]:
        """Every process of the scenario still in /proc (zombies of the escapee included)."""
        found: list[str] = []
        needle = f"{MARK}={self.mark}".encode()
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) == os.getpid():
                continue
            try:
                stat = Path(f"/proc/{entry}/stat").read_bytes()
                environ = Path(f"/proc/{entry}/environ").read_bytes()
            except OSError:
                continue
            comm = stat[stat.index(b"(") + 1 : stat.rindex(b")")].decode()
            state = stat[stat.rindex(b")") + 2 :].split()[0].decode()
            pid = int(entry)
            if comm == self.name or (state not in "ZX" and needle in environ.split(b"\0")):
                found.append(f"{pid} {comm} {state}")
        return found

    async def wait_ready(self) -> None:
        await until(self.ready.exists, 20)
        assert self.survivors(), "the escapee should be running before the kill"

    async def assert_none_left(self) -> None:
        # The kill waits for every process to end; a short settle only absorbs /proc lag.
        await until(lambda: not self.survivors(), 5, fail=False)
        assert self.survivors() == []


async def until(predicate: Callable[[], object], limit: float, *, fail: bool = True) -> None:
    """Wait until `predicate()` is true, for at most `limit` seconds."""
    with anyio.move_on_after(limit) as scope:
        while True:  # /proc and the file system have no event to wait on
            if predicate():
                break
            await anyio.sleep(0.02)
    if fail and scope.cancelled_caught:
        raise TimeoutError(f"still false after {limit} s: {predicate}")


def exists(path: str) -> bool:
    return Path(path).exists()


def comm(pid: int) -> str:
    """The process's name; empty when it ended since it was listed (a double fork's middle)."""
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except (FileNotFoundError, ProcessLookupError):
        return ""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the matrix runs once; tests/builtin/test_runtime.py covers trio


@pytest.fixture(autouse=True)
def trusted_default() -> Iterator[None]:
    # The supervisor alone, outside the OS sandbox (as for a command a person approved);
    # tests/builtin/test_sandbox_attempts.py runs the same escapes inside the sandbox.
    previous = set_default_runtime_policy(RuntimePolicy(security="full", ask="off", sandbox="off"))
    try:
        yield
    finally:
        set_default_runtime_policy(previous)


@pytest.fixture
def scenario(tmp_path: Path) -> Scenario:
    name = "k" + secrets.token_hex(6)
    sleep = shutil.which("sleep")
    assert sleep is not None
    shutil.copy(sleep, tmp_path / name)
    escapee = tmp_path / "escapee.sh"
    escapee.write_text(f'#!/bin/sh\ntouch "$1"\nexec ./{name} 1000\n')
    escapee.chmod(0o755)
    return Scenario(root=tmp_path, mark=secrets.token_hex(8), name=name, ready=tmp_path / "ready")


@pytest.fixture
async def ctx(tmp_path: Path) -> AsyncIterator[ToolContext[None]]:
    made: ToolContext[None] = ToolContext(workspace=Workspace(root=tmp_path))
    try:
        yield made
    finally:
        manager = made.services.get("processes")
        if isinstance(manager, ProcessManager):
            await manager.aclose()


async def run(ctx: ToolContext[Any], **arguments: Any) -> ToolResult:
    return await bash_run.run(arguments, ctx)


@pytest.mark.parametrize("technique", sorted(TECHNIQUES))
async def test_timeout(ctx: ToolContext[None], scenario: Scenario, technique: str) -> None:
    result = await run(ctx, command=scenario.command(technique, "sleep 1000"), timeout=3)
    assert result.error_type is ToolErrorType.TIMEOUT, result.text
    assert scenario.ready.exists()
    await scenario.assert_none_left()


@pytest.mark.parametrize("technique", sorted(TECHNIQUES))
async def test_left_behind_after_exit(
    ctx: ToolContext[None], scenario: Scenario, technique: str
) -> None:
    result = await run(ctx, command=scenario.command(technique, "exit 0"), timeout=30)
    assert not result.is_error, result.text
    assert result.details["leftovers_killed"], result.text
    assert result.text.endswith("[exit code 0]")
    await scenario.assert_none_left()


@pytest.mark.parametrize("technique", sorted(TECHNIQUES))
async def test_bash_kill(ctx: ToolContext[None], scenario: Scenario, technique: str) -> None:
    started = await run(ctx, command=scenario.command(technique, "sleep 1000"), background=True)
    await scenario.wait_ready()
    killed = await bash_kill.run({"shell_id": started.details["shell_id"]}, ctx)
    assert killed.text.startswith("Killed shell_1 and every process it started"), killed.text
    await scenario.assert_none_left()
    assert not exists(f"/proc/{started.details['pid']}")  # the supervisor was reaped


@pytest.mark.parametrize("technique", sorted(TECHNIQUES))
async def test_closing_the_manager(
    ctx: ToolContext[None], scenario: Scenario, technique: str
) -> None:
    await run(ctx, command=scenario.command(technique, "exit 0"), background=True)
    await scenario.wait_ready()
    manager = ctx.services["processes"]
    assert isinstance(manager, ProcessManager)
    await until(lambda: manager.get("shell_1").exit_code is not None, 20)
    assert manager.get("shell_1").exit_code == 0  # the shell is gone; what it started is not
    assert scenario.survivors()
    await manager.aclose()
    await scenario.assert_none_left()


@pytest.mark.parametrize("technique", ["double_fork", "daemonize", "python_setsid"])
def test_sync_close(scenario: Scenario, technique: str) -> None:
    manager = ProcessManager()
    manager.start(scenario.command(technique, "sleep 1000"), cwd=scenario.root)
    anyio.run(scenario.wait_ready)
    manager.close()
    assert scenario.survivors() == []


@pytest.mark.parametrize("technique", ["double_fork", "daemonize", "setsid_fork"])
async def test_the_subreaper_alone_finds_orphans(
    ctx: ToolContext[None], scenario: Scenario, technique: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without the environment tag, double-forked orphans are still found: they are
    re-parented to the supervisor, not to init."""
    monkeypatch.setattr(_supervisor, "tagged", lambda name, value: set())
    started = await run(ctx, command=scenario.command(technique, "sleep 1000"), background=True)
    await scenario.wait_ready()
    table = _supervisor.process_table()
    below = _supervisor.descendants([started.details["pid"]], table)
    assert scenario.name in {comm(pid) for pid in below}
    await bash_kill.run({"shell_id": "shell_1"}, ctx)
    await scenario.assert_none_left()


async def test_a_command_that_kills_its_supervisor(
    ctx: ToolContext[None], scenario: Scenario
) -> None:
    """The tag still finds processes that left the tree with the supervisor gone."""
    command = scenario.command("double_fork", "kill -9 $PPID; sleep 1000")
    await run(ctx, command=command, background=True)
    await scenario.wait_ready()
    manager = ctx.services["processes"]
    await until(lambda: manager.get("shell_1").popen.poll() is not None, 10)
    killed = await bash_kill.run({"shell_id": "shell_1"}, ctx)
    assert killed.text.startswith("Killed shell_1"), killed.text
    await until(lambda: all(line.endswith(" Z") for line in scenario.survivors()), 5, fail=False)
    # Orphans of a killed supervisor belong to init, which may leave their zombies unreaped.
    assert [line for line in scenario.survivors() if not line.endswith(" Z")] == []


async def test_cancelling_while_the_supervisor_starts(
    ctx: ToolContext[None], scenario: Scenario
) -> None:
    """A kill that comes before the supervisor has started the shell still kills the shell."""
    await run(ctx, command=scenario.command("double_fork", "sleep 1000"), background=True)
    manager = ctx.services["processes"]
    shell = manager.get("shell_1")
    await manager.kill("shell_1")  # at once: the supervisor is usually still starting
    assert shell.popen.returncode is not None
    await anyio.sleep(0.5)  # a shell started after the kill would have escaped by now
    assert scenario.survivors() == []
    assert not scenario.ready.exists() or shell.killed_with is not None


async def test_an_escapee_ignoring_sigterm_gets_sigkill(
    ctx: ToolContext[None], scenario: Scenario, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_launch_and_kill, "KILL_GRACE", 0.3)
    command = scenario.command("python_setsid", "sleep 1000").replace(
        f"export {MARK}", f"trap '' TERM\nexport {MARK}"
    )
    result = await run(ctx, command=command, timeout=3)
    assert result.details["killed_with"] == "SIGKILL", result.text
    await scenario.assert_none_left()


@pytest.mark.skipif(not _launch_and_kill.TRACKING, reason="the supervisor runs on Linux only")
def test_the_supervisor_kills_everything_when_its_parent_dies(scenario: Scenario) -> None:
    """Even when the kode process is SIGKILLed, the supervisor takes its command down."""
    import subprocess

    parent = subprocess.Popen(
        [
            PY,
            "-c",
            "import subprocess, sys, time\n"
            "from kode.builtin._shared import _launch_and_kill\n"
            "argv, env, tag = _launch_and_kill.launch(sys.argv[1], {'PATH': '/usr/bin:/bin'})\n"
            "subprocess.Popen(argv, env=env, cwd=sys.argv[2], start_new_session=True)\n"
            "time.sleep(1000)",
            scenario.command("daemonize", "sleep 1000"),
            str(scenario.root),
        ],
    )
    try:
        anyio.run(scenario.wait_ready)
    finally:
        parent.kill()
        parent.wait()
    anyio.run(scenario.assert_none_left)
