"""A tool that holds the event loop is noticed: a warning naming it and the time, a marked result.

The loop cannot stop a step that does not yield (``time.sleep`` in an ``async def``), so the
call ends late, and successfully; what kode can do is say so. The agent's event for it is
tested in tests/agent/test_blocked_loop.py.
"""

from __future__ import annotations

import itertools
import logging
import signal
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

from kode import define_tool
from kode.tools.blocking import BLOCKED_LOOP_KEY, BLOCKED_LOOP_SECONDS

pytestmark = pytest.mark.anyio

NAP = 0.2
assert NAP > BLOCKED_LOOP_SECONDS


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


async def test_a_blocking_async_tool_is_reported_with_its_name_and_time(
    caplog: pytest.LogCaptureFixture,
) -> None:
    @define_tool(registry=None, timeout=0.05)
    async def nap_badly() -> str:
        """Rest, the wrong way."""
        time.sleep(NAP)  # noqa: ASYNC251 - the blocking call under test
        return "rested"

    with caplog.at_level(logging.WARNING, logger="kode.tools"):
        result = await nap_badly.run({})
    # the timeout could not fire during the step; the result is kept, and marked
    assert not result.is_error and result.text == "rested"
    assert result.metadata[BLOCKED_LOOP_KEY] >= NAP
    (warning,) = _warnings(caplog)
    assert warning.startswith("Tool 'nap_badly' held the event loop for 0.")
    assert "s in one step (longer than its timeout of 0.05 s" in warning
    assert "anyio.to_thread.run_sync" in warning


async def test_other_tasks_waited_for_the_blocking_step() -> None:
    """What the report is about: the loop ran nothing else during the step."""

    @define_tool(registry=None)
    async def nap_badly() -> str:
        """Rest, the wrong way."""
        time.sleep(NAP)  # noqa: ASYNC251 - the blocking call under test
        return "rested"

    ticks: list[float] = []

    async def ticker() -> None:
        while True:
            ticks.append(time.perf_counter())
            await anyio.sleep(0.01)

    async with anyio.create_task_group() as tg:
        tg.start_soon(ticker)
        await anyio.sleep(0.03)
        result = await nap_badly.run({})
        await anyio.sleep(0.03)  # the ticker's first tick after the step
        tg.cancel_scope.cancel()
    gaps = [b - a for a, b in itertools.pairwise(ticks)]
    assert max(gaps) >= NAP * 0.9
    assert result.metadata[BLOCKED_LOOP_KEY] >= NAP


async def test_a_cooperative_slow_tool_is_not_reported(caplog: pytest.LogCaptureFixture) -> None:
    @define_tool(registry=None)
    async def nap_well() -> str:
        """Rest, the right way."""
        await anyio.sleep(NAP)
        return "rested"

    with caplog.at_level(logging.WARNING, logger="kode.tools"):
        first = await nap_well.run({})
        second = await nap_well.run({})  # timed too: it follows a call that took NAP
    assert BLOCKED_LOOP_KEY not in first.metadata and BLOCKED_LOOP_KEY not in second.metadata
    assert not _warnings(caplog)


async def test_the_first_call_and_calls_after_a_slow_one_are_timed() -> None:
    """Quick calls are not timed, so a block after them is reported from the next call on."""
    naps = [0.0, NAP, NAP, 0.0, 0.0]

    @define_tool(registry=None)
    async def sometimes() -> str:
        """Sometimes rest the wrong way."""
        time.sleep(naps.pop(0))  # noqa: ASYNC251 - the blocking call under test
        return "done"

    reported = [BLOCKED_LOOP_KEY in (await sometimes.run({})).metadata for _ in range(5)]
    # 1: timed, quick; 2: not timed (after a quick call), slow; 3: timed, reported;
    # 4: timed (after a slow call), quick; 5: not timed.
    assert reported == [False, False, True, False, False]


async def test_a_tool_that_blocks_and_then_raises_is_reported_too(
    caplog: pytest.LogCaptureFixture,
) -> None:
    @define_tool(registry=None)
    async def nap_and_fail() -> str:
        """Rest the wrong way, then fail."""
        time.sleep(NAP)  # noqa: ASYNC251 - the blocking call under test
        raise ValueError("no")

    with caplog.at_level(logging.WARNING, logger="kode.tools"):
        result = await nap_and_fail.run({})
    assert result.is_error and "ValueError: no" in result.text
    assert result.metadata[BLOCKED_LOOP_KEY] >= NAP
    assert any("'nap_and_fail' held the event loop" in w for w in _warnings(caplog))


async def test_a_slow_inline_sync_tool_is_reported(caplog: pytest.LogCaptureFixture) -> None:
    @define_tool(registry=None, run_in_thread=False)
    def crunch() -> int:
        """Work in the loop's thread."""
        time.sleep(NAP)
        return 42

    with caplog.at_level(logging.WARNING, logger="kode.tools"):
        result = await crunch.run({})
    assert result.text == "42" and result.metadata[BLOCKED_LOOP_KEY] >= NAP
    (warning,) = _warnings(caplog)
    assert warning.startswith("Tool 'crunch' held the event loop for 0.")
    assert "run_in_thread=False" in warning


async def test_a_timed_call_is_still_cancelled_at_its_timeout() -> None:
    """Timing the steps passes cancellation through: a cooperative tool times out as before."""

    @define_tool(registry=None, timeout=0.1)
    async def wait_long() -> str:
        """Wait too long."""
        await anyio.sleep(10)
        return "never"

    started = time.perf_counter()
    result = await wait_long.run({})  # the first call: its steps are timed
    assert result.error_type is not None and result.error_type.value == "timeout"
    assert time.perf_counter() - started < 5


async def test_a_timed_call_sees_exceptions_thrown_into_it() -> None:
    """A cancellation delivered while timing reaches the tool, which may clean up and answer."""
    cleaned: list[bool] = []

    @define_tool(registry=None, timeout=0.1)
    async def tidy() -> str:
        """Wait, and tidy up when cancelled."""
        try:
            await anyio.sleep(10)
        finally:
            cleaned.append(True)
        return "never"

    result = await tidy.run({})
    assert result.error_type is not None and result.error_type.value == "timeout"
    assert cleaned == [True]


STEPPING = """
import sys, time
import anyio
from kode import define_tool

@define_tool(registry=None)
async def stepping(n: int) -> str:
    '''Work in short blocking steps, each under the threshold.'''
    print("ready", flush=True)
    for _ in range(n):
        time.sleep(0.05)
        await anyio.sleep(0)
    return "done"

result = stepping.run_sync({"n": 30})
print(result.text, result.metadata.get("blocked_event_loop_seconds"), flush=True)
"""


@pytest.mark.parametrize("stop", [True, False], ids=["stopped", "running"])
def test_a_stopped_process_is_not_blamed_on_the_tool(stop: bool, tmp_path: Path) -> None:
    # SIGSTOP lands inside one of the tool's 50 ms steps (the loop's thread sleeps in them
    # nearly all the time); the clock runs on for the second the process is stopped.
    script = tmp_path / "stepping.py"
    script.write_text(STEPPING)
    child = subprocess.Popen(
        [sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ready"
        if stop:
            time.sleep(0.3)
            child.send_signal(signal.SIGSTOP)
            time.sleep(1.0)
            child.send_signal(signal.SIGCONT)
        out, err = child.communicate(timeout=60)
    finally:
        child.kill()
        child.wait()
    assert out.strip() == "done None"
    assert "held the event loop" not in err
    assert err == ""
