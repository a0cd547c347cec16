"""What a served call sends the client while it runs: progress and log messages.

This module owns the relay of one call's events (``ctx.progress`` as
``notifications/progress``, ``ctx.emit`` and records logged on ``ctx.logger`` as
``notifications/message`` at the levels the client wants), in the order they happened, for
`kode.mcp.server.ToolServer`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any

import anyio
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream
from mcp.server.context import ServerRequestContext

from kode.tools.context import ToolEvent

__all__ = ["ForwardingLogger", "LogItem", "mcp_level", "relay"]

_log = logging.getLogger("kode.mcp")


def mcp_level(levelno: int) -> types.LoggingLevel:
    """The MCP log level of a Python logging level."""
    if levelno >= logging.CRITICAL:
        return "critical"
    if levelno >= logging.ERROR:
        return "error"
    if levelno >= logging.WARNING:
        return "warning"
    if levelno >= logging.INFO:
        return "info"
    return "debug"


@dataclass(kw_only=True, frozen=True, slots=True)
class LogItem:
    """A record a tool logged on ``ctx.logger``, on its way to the client."""

    level: types.LoggingLevel
    """Its MCP level."""
    text: str
    """Its message."""


class ForwardingLogger(logging.LoggerAdapter[logging.Logger]):
    """A tool's ``ctx.logger``: records go to the ``kode.tools`` logger and to the client."""

    def __init__(self, logger: logging.Logger, forward: Callable[[LogItem], None]) -> None:
        super().__init__(logger, {})
        self._forward = forward

    def log(self, level: int, msg: object, *args: object, **kwargs: Any) -> None:
        """Log the record, and send it to the client."""
        try:
            text = str(msg) % args if args else str(msg)
        except (TypeError, ValueError):
            text = f"{msg} {args}"
        self._forward(LogItem(level=mcp_level(level), text=text))
        super().log(level, msg, *args, **kwargs)

    def process(self, msg: Any, kwargs: MutableMapping[str, Any]) -> tuple[Any, Any]:
        """Keep a record's own ``extra`` (LoggerAdapter's own would replace it)."""
        kwargs["extra"] = {**(self.extra or {}), **(kwargs.get("extra") or {})}
        return msg, kwargs


async def relay(
    receive: MemoryObjectReceiveStream[ToolEvent | LogItem],
    ctx: ServerRequestContext[Any, Any],
    tool_name: str,
    levels: frozenset[str],
    status: Callable[[str], None] | None = None,
    *,
    notify: Callable[[], bool] | None = None,
) -> None:
    """Send a call's progress and its log messages at `levels` to the client, in order.

    A call run as a task also makes each progress message the task's status message. A
    2026-07-28 task sends notifications only while `notify()` says its request is still
    unanswered; after that (or once its request's stream is closed) only the status goes on.
    """
    last: float | None = None
    gone = False
    async with receive:
        async for item in receive:
            sending = not gone and (notify is None or notify())
            try:
                if isinstance(item, ToolEvent) and item.event == "progress":
                    data = item.data if isinstance(item.data, Mapping) else {}
                    if status is not None and data.get("message"):
                        status(str(data["message"]))
                    if not sending:
                        continue
                    fraction = data.get("fraction")
                    # A fraction is progress out of 1.0; without one, count the steps.
                    total: float | None
                    if isinstance(fraction, int | float):
                        value, total = float(fraction), 1.0
                    else:
                        value, total = (last or 0.0) + 1.0, None
                    if last is not None and value <= last:
                        value = last + 1e-6  # MCP wants each value larger than the last
                    last = value
                    await ctx.session.report_progress(
                        value, total, str(data.get("message", "")) or None
                    )
                    continue
                if not sending:
                    continue
                level: types.LoggingLevel
                data_out: Any
                if isinstance(item, LogItem):
                    level, data_out = item.level, item.text
                else:
                    level, data_out = "info", {"event": item.event, "data": item.data}
                if level not in levels:
                    continue
                await ctx.session.send_notification(
                    types.LoggingMessageNotification(
                        params=types.LoggingMessageNotificationParams(
                            level=level, data=data_out, logger=tool_name
                        )
                    ),
                    related_request_id=ctx.request_id,
                )
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                if status is None:
                    return  # the client left; the call's result will not reach it either
                gone = True  # a task's request was answered: its status still goes on
            except Exception as exc:  # a payload that is not JSON: lose it, not the call
                _log.warning("could not send %r to the MCP client: %s", item, exc)
