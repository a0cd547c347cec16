"""Which kode call a server's request belongs to, and running its answer in that call's loop.

A server asks the client things (sample a model, ask the user, list the roots) while one of its
tools runs. The connection lives in an event loop of its own (`kode.mcp.session`), but the
answer belongs to the kode call that is waiting: its agent's model and approver live in the
caller's event loop. So each call in flight is a `CallSlot` holding its context, a task group
of the caller's loop and that loop's token; `run_in_call` starts the answer in that group (so
cancelling the call cancels it) and waits for it from the connection's loop.

MCP over stdio does not say which request a server's request belongs to, so the calls in
flight decide: one agent's calls are one asker (its model, its approver, its workspace), and
the request is answered in the first of them (a call that ends waits for the answers running
in it, so an answer is never cut short by another call ending); calls of several agents on
one connection at the same moment cannot be told apart, and such a request is refused with
that reason (see docs/limits.md).
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import CancelledError, Future
from dataclasses import dataclass, field
from typing import Any, TypeVar

import anyio
import anyio.abc
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread

from kode.tools.context import ToolContext

__all__ = ["AmbiguousCallError", "CallSlot", "InFlight", "SlotClosedError", "run_in_call"]

T = TypeVar("T")


class AmbiguousCallError(Exception):
    """Calls of several agents are in flight on one connection: a request cannot be placed."""


class SlotClosedError(CancelledError):
    """The call picked for a request ended before the answer started: pick another."""


@dataclass(kw_only=True, slots=True, eq=False)
class CallSlot:
    """One kode call of a server's tool, in flight."""

    ctx: ToolContext[Any]
    """The call's context."""
    group: anyio.abc.TaskGroup
    """A task group of the caller's loop, open for the call's duration."""
    token: anyio.lowlevel.EventLoopToken
    """The caller's event loop."""
    open: bool = field(default=True)
    """Whether the call is still running."""
    roots_told: anyio.Event | None = None
    """Set (in the caller's loop) once the server has asked for the roots during the call."""
    context: contextvars.Context = field(default_factory=contextvars.copy_context)
    """The call's context variables, where it started; kode's own (``kode_*``) are set again
    in each answer, which runs in a task of its own (the call served over MCP, for one)."""

    @property
    def asker(self) -> object:
        """What tells agents apart: the agent's id, else its services (one dict per agent)."""
        return self.ctx.agent_id or id(self.ctx.services)


class InFlight:
    """The calls of one connection in flight (from any thread)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._slots: list[CallSlot] = []

    def add(self, slot: CallSlot) -> None:
        """Record a call that starts."""
        with self._lock:
            self._slots.append(slot)

    def remove(self, slot: CallSlot) -> None:
        """Forget a call that ended."""
        slot.open = False
        with self._lock:
            if slot in self._slots:
                self._slots.remove(slot)

    def pick(self) -> CallSlot | None:
        """The call a server's request belongs to; `None` when no call is in flight.

        Raises:
            AmbiguousCallError: calls of more than one agent are in flight.
        """
        with self._lock:
            slots = list(self._slots)
        if not slots:
            return None
        askers = {slot.asker for slot in slots}
        if len(askers) > 1:
            raise AmbiguousCallError(
                f"calls of {len(askers)} agents are in flight on this connection, and the "
                "server's request does not say which one it belongs to"
            )
        return slots[0]


async def run_in_call(slot: CallSlot, fn: Callable[[], Awaitable[T]]) -> T:
    """Run `fn` in `slot`'s event loop, inside its call, and wait for it from this loop.

    Raises:
        SlotClosedError: the call had ended before `fn` could start (nothing ran).
        CancelledError: the call was cancelled (or timed out) while `fn` ran.
    """
    future: Future[T] = Future()

    def settle(value: T | None = None, exc: BaseException | None = None) -> None:
        if future.done():  # the waiting side gave up first
            return
        if exc is not None:
            future.set_exception(exc)
        else:
            future.set_result(value)  # type: ignore[arg-type]

    async def runner() -> None:
        for var, value in slot.context.items():
            if var.name.startswith("kode_"):
                var.set(value)
        try:
            settle(await fn())
        except anyio.get_cancelled_exc_class():
            settle(exc=CancelledError())
            raise
        except Exception as exc:
            settle(exc=exc)

    def schedule() -> None:
        anyio.from_thread.run_sync(slot.group.start_soon, runner, token=slot.token)

    if not slot.open:
        raise SlotClosedError()
    try:
        await anyio.to_thread.run_sync(schedule)
    except RuntimeError:  # the call's task group has closed: the call ended meanwhile
        raise SlotClosedError() from None
    try:
        return await anyio.to_thread.run_sync(future.result, abandon_on_cancel=True)
    except anyio.get_cancelled_exc_class():
        future.cancel()
        raise
