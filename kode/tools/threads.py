"""What a call does in a worker thread, off the event loop.

A sync tool's function runs there, and so does the conversion of a value that is not plain
data (`kode.tools.plain`). `kode.tools.core` decides what runs where; this module holds the
pieces that run off the loop and the one exception carried across the thread boundary.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import anyio
import anyio.to_thread

from kode.tools.results import ToolResult, to_result

__all__ = ["RaisedInThread", "call_and_convert", "convert_in_thread"]


class RaisedInThread(Exception):
    """Carries a `GeneratorExit` a sync tool raised out of its worker thread.

    Raised as itself, it would end the awaiting coroutine as if it were being closed.
    """

    def __init__(self, raised: BaseException) -> None:
        super().__init__(repr(raised))
        self.raised = raised
        """The exception the tool raised."""


def call_and_convert(
    fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], name: str
) -> ToolResult:
    """Run a sync tool's function and turn its value into a result (in a worker thread).

    Raises:
        RaisedInThread: the function raised `GeneratorExit`.
    """
    try:
        out = fn(*args, **kwargs)
    except GeneratorExit as exc:
        raise RaisedInThread(exc) from None
    return to_result(out, tool_name=name)


async def convert_in_thread(value: Any, tool_name: str, limit: float | None) -> ToolResult | None:
    """`to_result(value)`, made in a worker thread; `None` if `limit` seconds pass first.

    Past the limit the thread is abandoned, not stopped: what it makes is discarded.
    """
    convert = functools.partial(to_result, value, tool_name=tool_name)
    if limit is None:
        return await anyio.to_thread.run_sync(convert, abandon_on_cancel=True)
    with anyio.move_on_after(limit):
        return await anyio.to_thread.run_sync(convert, abandon_on_cancel=True)
    return None
