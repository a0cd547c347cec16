"""Calling a tool's function again when it fails for a reason that passes (a dropped connection).

This module owns `retrying`: the function a tool's calls run when ``define_tool(transient=...)``
names the exceptions that mean "try again later". It calls the tool's function, and on one of
those exceptions waits (0.25 s, then twice as long each time, at most 4 s) and calls it again,
up to ``transient_retries`` more times; the last failure is the call's. Only idempotent tools
get it (`kode.tools.define` refuses the others): a call that failed halfway may have acted.
The tool's `timeout` bounds the whole call, waits included. It does not decide what is
transient: the tool's author does.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from typing import Any

import anyio

__all__ = ["BACKOFF_CAP", "BACKOFF_FIRST", "retrying"]

BACKOFF_FIRST = 0.25
"""Seconds before the first retry; each later wait is twice the one before."""
BACKOFF_CAP = 4.0
"""The longest wait between two attempts, in seconds."""

_log = logging.getLogger("kode.tools")


def _wait(attempt: int) -> float:
    return float(min(BACKOFF_CAP, BACKOFF_FIRST * 2**attempt))


def retrying(
    fn: Callable[..., Any],
    *,
    name: str,
    is_async: bool,
    errors: tuple[type[BaseException], ...],
    retries: int,
) -> Callable[..., Any]:
    """`fn`, called again after a wait when it raises one of `errors`, at most `retries` times."""
    if is_async:

        @functools.wraps(fn)
        async def run_async(*args: Any, **kwargs: Any) -> Any:
            for attempt in range(retries + 1):
                try:
                    return await fn(*args, **kwargs)
                except errors as exc:
                    if attempt == retries:
                        raise
                    _note(name, exc, attempt)
                    await anyio.sleep(_wait(attempt))
            raise AssertionError("unreachable")  # pragma: no cover

        return run_async

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        for attempt in range(retries + 1):
            try:
                return fn(*args, **kwargs)
            except errors as exc:
                if attempt == retries:
                    raise
                _note(name, exc, attempt)
                time.sleep(_wait(attempt))  # in the call's worker thread
        raise AssertionError("unreachable")  # pragma: no cover

    return run


def _note(name: str, exc: BaseException, attempt: int) -> None:
    _log.info(
        "Tool %r: attempt %d raised %s (transient); trying again in %g s",
        name,
        attempt + 1,
        type(exc).__name__,
        _wait(attempt),
    )
