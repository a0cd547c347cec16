"""Noticing an async tool that holds the event loop (a blocking call inside ``async def``).

An async tool runs in the event loop's thread, one step at a time: from one ``await`` that
really waits to the next. A step that calls ``time.sleep``, a blocking HTTP client or heavy
computation holds the loop, so every other call of the turn waits, and the tool's timeout
cannot fire until the step ends. Nothing can preempt such a step; this module only notices it:
`drive` runs a coroutine step by step and keeps the longest step's duration, and
`blocked_loop_message` says what was seen and what to do about it.

Timing every step costs about a microsecond a call, so `kode.tools.core` times the steps of a
tool's first call and of each call that follows one that took `BLOCKED_LOOP_SECONDS` or longer
in all; other calls cost two clock readings. This module does not decide what is done with a
report (the tool logs a warning and marks its result; an agent emits an event).

A step is not blamed on the tool when the whole process was stopped during it (SIGSTOP, a
shell's Ctrl-Z, a debugger): the clock ran on while no thread did. The kernel sends SIGCONT
when such a process goes on; a handler installed at import (from the main thread, where no
other handler is set) notes the moment, and a slow step that saw one is not reported.
"""

from __future__ import annotations

import dataclasses
import logging
import signal
import threading
import time
import types
from collections.abc import Coroutine, Generator
from typing import TYPE_CHECKING, Any

from kode.tools.results import ToolResult, error_result

if TYPE_CHECKING:
    from kode.tools.context import ToolContext

__all__ = [
    "BLOCKED_LOOP_KEY",
    "BLOCKED_LOOP_SECONDS",
    "StepTimer",
    "blocked_loop_message",
    "drive",
    "report_blocked",
    "stopped_since",
]

_logger = logging.getLogger("kode.tools")

BLOCKED_LOOP_SECONDS = 0.1
"""A step of an async tool (the code between two ``await``s that really wait) that holds the
event loop this long or longer is reported. asyncio's debug mode uses the same threshold for a
slow callback."""

BLOCKED_LOOP_KEY = "blocked_event_loop_seconds"
"""The key of `ToolResult.metadata` that holds the longest step, in seconds, of a call that
held the event loop."""


_CONTINUED_AT = [float("-inf")]
"""When the process last went on after being stopped (``time.perf_counter``)."""


def _on_continue(signum: int, frame: types.FrameType | None) -> None:
    _CONTINUED_AT[0] = time.perf_counter()


def _watch_for_continue() -> None:
    """Note each SIGCONT, unless the platform has none or someone else handles it."""
    sigcont = getattr(signal, "SIGCONT", None)
    if sigcont is None or threading.current_thread() is not threading.main_thread():
        return
    try:
        if signal.getsignal(sigcont) == signal.SIG_DFL:
            signal.signal(sigcont, _on_continue)
    except (ValueError, OSError):  # an embedded interpreter that refuses handlers
        return


_watch_for_continue()


def stopped_since(started: float) -> bool:
    """Whether the process was stopped and went on since `started` (``time.perf_counter``).

    Only known where kode's SIGCONT handler is installed (see the module's docstring).
    """
    return _CONTINUED_AT[0] >= started


class StepTimer:
    """The longest step, in seconds, of the coroutine `drive` ran."""

    __slots__ = ("longest",)

    def __init__(self) -> None:
        self.longest = 0.0


@types.coroutine
def drive(coro: Coroutine[Any, Any, Any], timer: StepTimer) -> Generator[Any, Any, Any]:
    """Await `coro`, timing each of its steps into `timer`.

    Every value the coroutine yields goes to the event loop and every answer (or exception,
    such as a cancellation) goes back, exactly as ``await coro`` would do.
    """
    clock = time.perf_counter
    send = coro.send
    value: Any = None
    error: BaseException | None = None
    while True:
        start = clock()
        try:
            step = send(value) if error is None else coro.throw(error)
        except StopIteration as stop:
            _note_step(timer, start, clock() - start)
            return stop.value
        except BaseException:
            _note_step(timer, start, clock() - start)
            raise
        took = clock() - start
        if took > timer.longest:
            _note_step(timer, start, took)
        try:
            value = yield step
            error = None
        except GeneratorExit:
            coro.close()
            raise
        except BaseException as exc:  # a cancellation, thrown in by the event loop
            value, error = None, exc


def _note_step(timer: StepTimer, start: float, took: float) -> None:
    """Keep `took` as the longest step, unless the process was stopped during it."""
    if took > timer.longest and not (took >= BLOCKED_LOOP_SECONDS and stopped_since(start)):
        timer.longest = took


def blocked_loop_message(
    tool_name: str, seconds: float, timeout: float | None, *, inline: bool = False
) -> str:
    """The warning for a call that held the event loop for `seconds` in one step.

    `inline`: the tool is a sync function run in the loop's thread (``run_in_thread=False``).
    """
    past = (
        f" (longer than its timeout of {timeout:g} s, which cannot fire while it does)"
        if timeout is not None and seconds > timeout
        else ""
    )
    if inline:
        return (
            f"Tool '{tool_name}' held the event loop for {seconds:.2f} s{past}: it is a sync "
            "tool defined with run_in_thread=False, so it runs in the loop's own thread and "
            "every other task waited. Drop run_in_thread=False for work that takes this long."
        )
    return (
        f"Tool '{tool_name}' held the event loop for {seconds:.2f} s in one step{past}: it is "
        "an async function that called something blocking (time.sleep, a blocking client, "
        "heavy computation), so every other task waited. Await the async form (anyio.sleep, "
        "an async client), move the blocking work to anyio.to_thread.run_sync, or define the "
        "tool with a plain def: sync tools run in a worker thread."
    )


def report_blocked(
    result: ToolResult | None,
    tool_name: str,
    seconds: float,
    timeout: float | None,
    *,
    inline: bool = False,
    ctx: ToolContext[Any] | None = None,
) -> ToolResult:
    """Report a call that held the event loop for `seconds`: a warning, and a marked result.

    The warning goes to the context's logger (``kode.tools`` without one); the result is a copy
    of `result` with the seconds under `BLOCKED_LOOP_KEY` in its metadata. With `result`
    `None` (the call is being cancelled) the warning is all there is.
    """
    logger = ctx.logger if ctx is not None else _logger
    logger.warning(blocked_loop_message(tool_name, seconds, timeout, inline=inline))
    if result is None:
        return error_result(f"Tool '{tool_name}' was cancelled.")
    return dataclasses.replace(result, metadata={**result.metadata, BLOCKED_LOOP_KEY: seconds})
