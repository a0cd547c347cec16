"""What a command's supervisor costs to start, and what its leftover check reads.

A short command's time is mostly its supervisor's start (a Python interpreter) and the
leftover check after it. The supervisor imports C modules only, and is imported from kode's
folder (its bytecode cached) rather than compiled as a script; once it has ended, the leftover
check reads the process table only when a process carrying the command's tag is left. These
tests check what is imported and what is read, never how long anything takes.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kode.builtin._shared import _launch_and_kill, _supervisor
from kode.builtin._shared._processes import run_command
from kode.builtin.runtime import sandbox_support
from kode.trust import sandbox as _sandbox

pytestmark = pytest.mark.skipif(
    not _launch_and_kill.TRACKING, reason="the supervisor runs on Linux only"
)

HEAVY = {"ctypes", "enum", "functools", "collections", "struct", "threading", "contextlib"}
"""Modules that each add milliseconds to the interpreter's start, and the supervisor avoids."""


def _imports(argv: list[str]) -> tuple[list[str], str]:
    """The modules the supervisor's interpreter imported (``-X importtime``), and its stderr."""
    python, rest = argv[0], argv[1:]
    done = subprocess.run(
        [python, "-X", "importtime", *rest],
        env={"PATH": "/usr/bin:/bin"},
        capture_output=True,
        check=False,
        timeout=60,
    )
    lines = done.stderr.decode().splitlines()
    names = [line.rsplit("|", 1)[1].strip() for line in lines if line.startswith("import time:")]
    assert done.stdout == b"hi\n", done
    return names[1:], "\n".join(line for line in lines if not line.startswith("import time:"))


def test_the_supervisor_imports_no_module_that_slows_its_start() -> None:
    argv, _, tag = _launch_and_kill.launch("echo hi", {"PATH": "/usr/bin:/bin"})
    assert tag is not None
    names, said = _imports(argv)
    assert said == "exit 0", said  # it ran the command and reported its status
    assert "_supervisor" in names  # imported (bytecode from the cache), not compiled as a script
    assert not HEAVY & set(names), sorted(HEAVY & set(names))


def test_the_supervisor_still_makes_itself_a_subreaper(tmp_path: Path) -> None:
    """prctl through ``_ctypes``: an orphan of the command is re-parented to the supervisor."""
    argv, env, _ = _launch_and_kill.launch(
        "(sleep 0.5 & echo $! > orphan) ; sleep 0.1; cat /proc/$(cat orphan)/stat",
        {"PATH": "/usr/bin:/bin"},
    )
    done = subprocess.Popen(argv, env=env, cwd=tmp_path, stdout=subprocess.PIPE)
    out, _ = done.communicate(timeout=30)
    fields = out.decode().rsplit(")", 1)[1].split()
    assert int(fields[1]) == done.pid, out  # the orphan's parent: the supervisor, not init


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Each read of the whole process table, counted."""
    count: list[int] = []
    table = _supervisor.process_table

    def counted() -> _supervisor.ProcessTable:
        count.append(1)
        return table()

    monkeypatch.setattr(_supervisor, "process_table", counted)
    yield count


@pytest.mark.anyio
async def test_a_command_that_left_nothing_reads_no_process_table(
    reads: list[int], tmp_path: Path
) -> None:
    outcome = await run_command("echo hi", cwd=tmp_path, seconds=30, max_chars=1000)
    assert outcome.output == "hi\n" and outcome.exit_code == 0
    assert not outcome.leftovers_killed
    assert reads == []


@pytest.mark.anyio
async def test_a_sandboxed_command_that_left_nothing_reads_no_process_table(
    reads: list[int], tmp_path: Path
) -> None:
    support = sandbox_support()
    if not support.available or support.program is None:
        pytest.skip(f"no OS sandbox here: {support.reason}")
    sandbox = _sandbox.Sandbox(
        program=support.program,
        mode="workspace-write",
        roots=(tmp_path,),
        user_namespace=support.user_namespace,
    )
    outcome = await run_command(
        "echo hi", cwd=tmp_path, seconds=30, max_chars=1000, sandbox=sandbox
    )
    assert outcome.output == "hi\n" and outcome.exit_code == 0, outcome.output
    assert reads == []


@pytest.mark.anyio
async def test_a_command_that_left_a_process_is_still_caught(
    reads: list[int], tmp_path: Path
) -> None:
    outcome = await run_command("sleep 600 &", cwd=tmp_path, seconds=30, max_chars=1000)
    assert outcome.leftovers_killed and outcome.exit_code == 0
    assert reads  # what is below the supervisor is read from the table


def test_an_ended_supervisor_still_finds_a_tagged_process_outside_its_tree() -> None:
    """Once the supervisor has ended, a process carrying the tag (which left its tree) is
    still found, and so is what it started; an untagged one is not the command's."""
    tag = secrets.token_hex(8)
    env = {"PATH": "/usr/bin:/bin", _launch_and_kill.TAG: tag}
    escaped = subprocess.Popen(["bash", "-c", "sleep 600 & wait"], env=env)
    stranger = subprocess.Popen(["sleep", "600"], env={"PATH": "/usr/bin:/bin"})
    gone = subprocess.Popen(["true"])
    gone.wait()  # the supervisor's pid: ended and reaped
    target = _launch_and_kill.Target(pid=gone.pid, tag=tag)
    try:
        assert target.alive(ended=True)
        table = _supervisor.process_table()
        assert {escaped.pid} < target.find(_supervisor.tagged(_launch_and_kill.TAG, tag))[0]
        assert stranger.pid not in target.find({escaped.pid})[0]
        escaped.kill()
        escaped.wait()
        for pid in _supervisor.descendants([escaped.pid], table):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, 9)
        assert not _wait_until(lambda: target.alive(ended=True))  # the tagged ones are gone
        assert not _launch_and_kill.Target(pid=gone.pid, tag=None, sandboxed=True).alive(ended=True)
    finally:
        for process in (escaped, stranger):
            process.kill()
            process.wait()


def _wait_until(check: Callable[[], bool]) -> bool:
    """`check()` until it is false (a killed process takes a moment to go); its last value."""
    deadline = time.monotonic() + 10
    while check() and time.monotonic() < deadline:
        time.sleep(0.02)
    return bool(check())
