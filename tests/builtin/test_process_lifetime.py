"""What kode starts lives as long as the kode process, whichever thread started it.

A parent-death signal (``PR_SET_PDEATHSIG``, bubblewrap's ``--die-with-parent``) fires when the
*thread* that started the process ends, and trio starts processes in worker threads that end
after 10 s idle: a sandboxed command, or a Python grep search, of more than 10 s was killed
under trio. They are now tied to the kode process instead (a pipe only kode writes to, whose
end they watch). These tests start them from threads that end while they run, and check that
they finish; that a SIGKILLed kode process still leaves nothing is tests/builtin/test_leftovers.py.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from kode import ToolContext
from kode.builtin.fs._grep import confinement, python_search
from kode.builtin.fs._grep_types import GrepQuery
from kode.builtin.runtime import (
    ProcessManager,
    RuntimePolicy,
    bash_run,
    sandbox_support,
    set_default_runtime_policy,
)
from kode.testing.programs import requires_sandbox
from kode.tools.errors import ToolError
from kode.tools.workspace import Workspace
from kode.trust.sandbox import Sandbox

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="parent-death signals are Linux's"
)
NO_BWRAP = requires_sandbox()

SUPPORT = sandbox_support()
IDLE = 0.2
"""Seconds trio's worker threads are kept idle in these tests (trio's default is 10)."""


GREP_IDLE = 1.5
"""The same for the grep test: longer than the grep worker takes to start (0.5 s on a loaded
machine), since a parent-death signal armed after the thread ended never fires."""


def _idle_trio_threads(seconds: float, backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Under trio, worker threads end after `seconds` idle instead of 10 s.

    trio keeps the limit in a private module constant, read each time a thread starts
    waiting (trio._core._thread_cache.IDLE_TIMEOUT, trio 0.35); patching it lets a test of a
    few seconds do what a command of more than 10 s would.
    """
    if backend == "trio":
        from trio._core import _thread_cache

        assert isinstance(_thread_cache.IDLE_TIMEOUT, (int, float))
        monkeypatch.setattr(_thread_cache, "IDLE_TIMEOUT", seconds)


@pytest.fixture
def short_lived_trio_threads(anyio_backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    _idle_trio_threads(IDLE, anyio_backend, monkeypatch)


@pytest.fixture
def sandboxed() -> Iterator[None]:
    if not SUPPORT.available:
        pytest.skip(f"no OS sandbox here: {SUPPORT.reason}")
    previous = set_default_runtime_policy(
        RuntimePolicy(security="full", ask="off", sandbox="workspace-write")
    )
    try:
        yield
    finally:
        set_default_runtime_policy(previous)


@pytest.fixture
async def ctx(tmp_path: Path) -> AsyncIterator[ToolContext[None]]:
    made: ToolContext[None] = ToolContext(workspace=Workspace(root=tmp_path))
    try:
        yield made
    finally:
        manager = made.services.get("processes")
        if manager is not None:
            await manager.aclose()


@NO_BWRAP
@pytest.mark.anyio
async def test_a_sandboxed_command_outlives_the_worker_thread_that_started_it(
    short_lived_trio_threads: None, sandboxed: None, ctx: ToolContext[None]
) -> None:
    """Under trio the process is started in a worker thread, which ends after `IDLE` s idle
    while the command still runs (under asyncio, the loop's thread starts it)."""
    seconds = 10 * IDLE
    result = await bash_run.run({"command": f"sleep {seconds}; echo finished", "timeout": 60}, ctx)
    assert result.details["sandboxed"] is True
    assert not result.is_error, result.text
    assert result.text.startswith("finished"), result.text
    assert result.details["exit_code"] == 0, result.details


@NO_BWRAP
def test_a_background_shell_outlives_the_thread_that_started_it(tmp_path: Path) -> None:
    if not SUPPORT.available:
        pytest.skip(f"no OS sandbox here: {SUPPORT.reason}")
    assert SUPPORT.program is not None
    sandbox = Sandbox(
        program=SUPPORT.program,
        mode="workspace-write",
        roots=(tmp_path,),
        user_namespace=SUPPORT.user_namespace,
    )
    manager = ProcessManager()
    started: list[object] = []

    def start() -> None:
        started.append(
            manager.start("touch started; sleep 1; echo finished", cwd=tmp_path, sandbox=sandbox)
        )
        # The thread ends once the command runs (a parent-death signal armed after the thread
        # ended would never fire).
        deadline = time.monotonic() + 20
        while not (tmp_path / "started").exists() and time.monotonic() < deadline:
            time.sleep(0.01)

    starter = threading.Thread(target=start)
    starter.start()
    starter.join()
    try:
        shell = manager.get("shell_1")
        assert started == [shell]
        assert shell.popen.wait(timeout=30) == 0
        assert shell.exit_code == 0
        assert manager.read_new("shell_1", max_chars=1000).output == "finished\n"
    finally:
        manager.close()


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["trio"])  # asyncio starts it in the loop's thread
@pytest.mark.parametrize("where", ["plain", "sandbox"])
async def test_a_python_grep_search_outlives_the_worker_thread_that_started_it(
    anyio_backend: str, where: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A pattern that backtracks for minutes runs until its deadline, past trio's (patched)
    idle time, and is stopped by it: not killed when the thread that started it ended (in
    the read-only sandbox too: bubblewrap gets no parent-death signal)."""
    confine = None
    if where == "sandbox":
        if not SUPPORT.available:
            pytest.skip(f"no sandbox here: {SUPPORT.reason}")
        confine = confinement((tmp_path,))
    _idle_trio_threads(GREP_IDLE, anyio_backend, monkeypatch)
    (tmp_path / "a.txt").write_text("a" * 40 + "!\n")
    query = GrepQuery(
        pattern="(a+)+$",
        ignore_case=False,
        base=tmp_path,
        file="a.txt",
        glob=None,
        prune=frozenset(),
        mode="content",
        context=0,
        limit=10,
    )
    with pytest.raises(ToolError, match="did not finish within 5 s"):
        await python_search(query, deadline=5, roots=(tmp_path,), confine=confine)


JAM = (
    "import os\n"
    "for fd in os.listdir('/proc/1/fd'):\n"
    "    try:\n"
    "        end = os.open(f'/proc/1/fd/{fd}', os.O_WRONLY | os.O_NONBLOCK)\n"
    "        print(fd, 'wrote', os.write(end, b'x' * 65536))\n"
    "    except OSError as exc:\n"
    "        print(fd, type(exc).__name__)\n"
)


@NO_BWRAP
@pytest.mark.anyio
async def test_a_sandboxed_command_cannot_reach_its_supervisors_descriptors(
    sandboxed: None, ctx: ToolContext[None]
) -> None:
    """Not the lifeline every sandbox of this kode shares: bytes written into it would make
    every supervisor started later take them for kode's end, and start nothing."""
    jam = await bash_run.run({"command": f'{sys.executable} -I -S -c "{JAM}"'}, ctx)
    assert jam.details["sandboxed"] is True and jam.details["exit_code"] == 0, jam.text
    tried = dict(line.split(" ", 1) for line in jam.text.splitlines() if line[:1].isdigit())
    assert tried and set(tried.values()) == {"PermissionError"}, jam.text
    after = await bash_run.run({"command": "echo next"}, ctx)
    assert after.details["exit_code"] == 0 and after.text.startswith("next"), after.text
