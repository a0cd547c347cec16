"""`AgentStream`: one run's events as they happen, safe to leave at any point.

This module owns what `Agent.stream` returns. The run has to go on while the caller is busy
with an event (a tool finishing, an approval being asked), so it runs in a task of its own and
hands its events over a memory stream. Two ways to hold that task:

- ``async with agent.stream(prompt) as events:`` keeps it in a task group of the caller's:
  structured, and leaving the block early ends the run before the block is left;
- a plain ``async for event in agent.stream(prompt):`` cannot hold a task group across
  iterations (an async generator that yields inside one breaks the caller's cancel scopes when
  it is left early), so the run gets a task of its own on the event loop (an asyncio task, or
  a trio system task). Leaving the loop early (``break``, an exception, a cancelled caller)
  cancels the run; the agent answers the calls it had started with cancelled results.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING

import anyio
from anyio.abc import TaskGroup

from kode.agent.events import AgentEvent
from kode.agent.run import AgentRun

if TYPE_CHECKING:
    from kode.agent.ports import AgentLike

__all__ = ["AgentStream"]


class _StreamRun:
    """What the run's task holds: the channel, the cancel scope and the outcome.

    Kept apart from `AgentStream` so that the task does not keep the consumer's handle
    alive: when the consumer drops the handle (a plain ``async for`` left early), the
    handle's finaliser can end the run.
    """

    __slots__ = (
        "agent",
        "agent_run",
        "cancel_soon",
        "failed",
        "finished",
        "prompt",
        "receive",
        "scope",
        "send",
        "task",
    )

    def __init__(self, agent: AgentLike, prompt: str | None) -> None:
        self.agent = agent
        self.prompt = prompt
        self.send, self.receive = anyio.create_memory_object_stream[AgentEvent](math.inf)
        self.scope = anyio.CancelScope()
        self.finished = anyio.Event()
        self.failed: list[BaseException] = []
        self.cancel_soon: Callable[[], None] | None = None
        self.task: asyncio.Task[None] | None = None  # keeps a detached asyncio task alive
        self.agent_run = AgentRun(agent, self.push, interactive=True)

    def push(self, event: AgentEvent) -> None:
        # Once the consumer has stopped reading, the run is being cancelled: events emitted
        # meanwhile (a tool finishing) have nowhere to go and are dropped, instead of failing
        # the tool that emitted them.
        try:
            self.send.send_nowait(event)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass

    async def produce(self) -> None:
        try:
            with self.scope:
                async with self.send:
                    try:
                        await self.agent.execute(self.agent_run, self.prompt)
                    except (Exception, KeyboardInterrupt, SystemExit) as exc:
                        # Raised to the consumer as itself. A KeyboardInterrupt or SystemExit
                        # must not leave the run's task: asyncio would stop its event loop.
                        self.failed.append(exc)
        finally:
            self.finished.set()
            self.task = None

    def start_detached(self) -> None:
        """Run the agent in a task of its own on the current event loop."""
        scope = self.scope
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # not asyncio: trio
            import trio

            token = trio.lowlevel.current_trio_token()

            def cancel_in_trio() -> None:
                token.run_sync_soon(scope.cancel)

            self.cancel_soon = cancel_in_trio
            trio.lowlevel.spawn_system_task(self.produce, name="kode agent stream")
        else:

            def cancel_in_asyncio() -> None:
                loop.call_soon_threadsafe(scope.cancel)

            self.cancel_soon = cancel_in_asyncio
            self.task = loop.create_task(self.produce(), name="kode agent stream")

    def stop(self) -> None:
        """End the run if it is still going (from any thread, without waiting)."""
        if self.finished.is_set():
            return
        self.agent_run.abandoned = True
        if self.cancel_soon is not None and not self.agent_run.on_loop():
            try:
                self.cancel_soon()
            except RuntimeError:  # the event loop is closed: nothing runs any more
                pass
        else:
            self.scope.cancel()


class AgentStream:
    """The events of one run, as they happen; the last is `Done` or `ErrorEvent`.

    Iterate it with ``async for``, preferably inside ``async with`` (see `Agent.stream`).
    Leaving early ends the run: running tools are cancelled and every outstanding call is
    answered with a cancelled result, so the history stays valid.

    Raises (while iterating):
        AgentError: the agent is already running.
        Exception: whatever the run raised (an event listener that failed), as itself; so are
            a tool's KeyboardInterrupt and SystemExit, once every call has its result.
    """

    def __init__(self, agent: AgentLike, prompt: str | None) -> None:
        self._run = _StreamRun(agent, prompt)
        self._started = False
        self._group: TaskGroup | None = None  # the caller's, with ``async with``

    # --- iteration ---------------------------------------------------------------------------

    def __aiter__(self) -> AgentStream:
        return self

    async def __anext__(self) -> AgentEvent:
        run = self._run
        if not self._started:
            self._started = True
            run.start_detached()
        try:
            return await run.receive.receive()
        except anyio.EndOfStream:
            run.receive.close()
            if run.failed:
                raise run.failed.pop() from None
            raise StopAsyncIteration from None
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            raise StopAsyncIteration from None
        except BaseException:  # the consumer was cancelled: so is the run
            run.stop()
            raise

    async def aclose(self) -> None:
        """End the run if it is still going, and wait until it has ended."""
        run = self._run
        if self._started:
            run.stop()
            await run.finished.wait()
        run.receive.close()

    def __del__(self) -> None:
        # A plain `async for` left early (break, return, an exception) drops the stream here.
        run = self._run
        if not self._started:
            run.send.close()
        elif self._group is None:
            run.stop()
        run.receive.close()

    # --- structured use ----------------------------------------------------------------------

    async def __aenter__(self) -> AgentStream:
        if self._started:
            raise RuntimeError("this stream has already started; make a new one with stream()")
        group = anyio.create_task_group()
        await group.__aenter__()
        self._group = group
        self._started = True
        group.start_soon(self._run.produce)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        run = self._run
        run.scope.cancel()  # a no-op once the run has ended; ends it if it has not
        run.receive.close()
        group = self._group
        assert group is not None
        # The run's task catches what it raises, so the group only waits for it here; the
        # caller's own exception (if any) then leaves the block as itself, not in a group.
        await group.__aexit__(None, None, None)
        return None

    def __repr__(self) -> str:
        run = self._run
        state = "ended" if run.finished.is_set() else "running" if self._started else "not started"
        return f"<AgentStream of {run.agent.agent_id} ({state})>"
