"""The live connection to one MCP server, kept in an event loop of its own.

This module owns `RemoteServer`: starting an MCP server (a command over stdio, or a URL over
streamable HTTP) with the official SDK's ``ClientSession``, noticing when it dies, starting it
again, and calling its tools. It does not name or register tools (`kode.mcp.client` does).

Why a thread: the SDK's sessions are anyio task groups that must be entered and left by one
task of one event loop, but a kode tool is called from whatever loop the agent runs in
(asyncio or trio), from a fresh loop per ``send_sync``, or from several tasks at once. So the
session lives in an asyncio loop in a daemon thread (an anyio blocking portal); a call sends
the request there and waits for the answer in a worker thread of the caller's loop, which is
also where the server's progress notifications reach ``ctx.progress``. Cancelling the call
(a timeout, an interrupted agent) cancels the request, and the SDK tells the server
(``notifications/cancelled``).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import queue
import tempfile
import threading
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import CancelledError, Future
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import IO, Any, TextIO, TypeVar, cast
from urllib.parse import urlsplit

import anyio
import anyio.abc
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
import mcp_types as types
from mcp.client.session import ClientRequestContext, ClientSession, IncomingMessage
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage

from kode.mcp._limits import (
    MAX_MESSAGE_BYTES,
    done_reading,
    guard_json,
    install,
    reading_with,
)
from kode.mcp.answers import ClientAnswers
from kode.mcp.errors import MCPConnectionError
from kode.mcp.modern import Protocol, call_answering, is_modern, negotiate, watch_lists
from kode.mcp.routing import AmbiguousCallError, CallSlot, InFlight, SlotClosedError, run_in_call
from kode.mcp.task_extension import TASKS_EXTENSION, task_claim
from kode.mcp.tasks import PeerTasks, TaskDispatcher, call_as_task, tasks_capability
from kode.tools.context import ToolContext
from kode.tools.errors import ToolError, ToolErrorType
from kode.tracing import attached, current_context, mark_mcp_result, mcp_call_span, trace_headers

__all__ = ["MCPConnectionError", "RemoteServer", "ServerEventFunc", "ServerSpec"]

T = TypeVar("T")

ServerEventFunc = Callable[[str, "str | None"], None]
"""Told of a server's notification: its kind and the resource URI it names, if any."""
_EVENT_KINDS: dict[type, str] = {
    types.ResourceUpdatedNotification: "resource_updated",
    types.ResourceListChangedNotification: "resources_changed",
    types.PromptListChangedNotification: "prompts_changed",
    types.ToolListChangedNotification: "tools_changed",
}

_ROOTS_WAIT = 2.0  # seconds a call waits for the server to ask for the roots it was told changed
_STDERR_TAIL = 1500
_STDERR_LINES = 6
_LOG_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL,
    "emergency": logging.CRITICAL,
}


@dataclass(kw_only=True, frozen=True, slots=True)
class ServerSpec:
    """How to reach one MCP server."""

    name: str
    """The server's name in kode."""
    command: tuple[str, ...] | None = None
    """The command that starts it (stdio), executable first."""
    url: str | None = None
    """Its streamable HTTP endpoint."""
    env: dict[str, str] | None = None
    """Environment variables for the command, over the SDK's safe defaults (PATH, HOME, ...)."""
    cwd: str | None = None
    """The command's working directory."""
    headers: dict[str, str] | None = None
    """HTTP headers for every request (authorisation, ...)."""
    connect_timeout: float = 30.0
    """Seconds to start the server and list its tools."""
    max_message_bytes: int = MAX_MESSAGE_BYTES
    """The longest message read from the server (see `kode.mcp._limits`)."""
    protocol: Protocol = "newest"
    """``"newest"``: the newest revision both sides speak; ``"handshake"``: 2025-11-25 or older."""

    def describe(self) -> str:
        """The server as a person recognises it, for messages."""
        where = " ".join(self.command) if self.command else self.url
        return f"MCP server '{self.name}' ({where})"


class _WatchedStream:
    """The session's read stream, telling `RemoteServer` when the server has gone."""

    def __init__(self, inner: Any, on_end: Callable[[], None]) -> None:
        self._inner = inner
        self._on_end = on_end

    async def receive(self) -> SessionMessage | Exception:
        try:
            item: SessionMessage | Exception = await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._on_end()
            raise
        return item

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> _WatchedStream:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None

    async def __aenter__(self) -> _WatchedStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


@dataclass(kw_only=True, slots=True)
class _Live:
    """One running session (in the portal's loop)."""

    session: ClientSession
    stop: anyio.Event
    tasks: anyio.abc.TaskGroup
    dispatcher: TaskDispatcher
    dead: bool = False
    errlog: IO[str] | None = None
    future: Future[None] | None = field(default=None)


@dataclass(kw_only=True, frozen=True, slots=True)
class _Progress:
    progress: float
    total: float | None
    message: str | None


@dataclass(kw_only=True, frozen=True, slots=True)
class _Status:
    message: str
    fraction: float | None


_DONE = object()


def _leaf(exc: BaseException) -> BaseException:
    """The first real error inside nested exception groups (task groups wrap them)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


class RemoteServer:
    """One MCP server, started on demand and restarted after it dies."""

    def __init__(
        self,
        spec: ServerSpec,
        *,
        on_tools_changed: Callable[[list[types.Tool]], None] | None = None,
        answers: ClientAnswers | None = None,
        tasks: bool = True,
        on_event: ServerEventFunc | None = None,
    ) -> None:
        self.spec = spec
        """How to reach the server."""
        self.answers = answers
        """How the server's sampling, elicitation and roots requests are answered."""
        self.tasks = tasks
        """Whether kode speaks MCP Tasks with the server (both ways)."""
        self.on_event = on_event
        """Told of the server's notifications (resource updates, changed lists)."""
        self.capabilities: types.ServerCapabilities | None = None
        """What the server said it can do, at the last start."""
        self.in_flight = InFlight()
        """The calls of the server's tools in flight (for the server's requests)."""
        self.logger = logging.getLogger(f"kode.mcp.{spec.name}")
        """Where the server's log messages go (``kode.mcp.<server>``)."""
        self.on_tools_changed = on_tools_changed
        """Called with the new listing when the server says its tools changed."""
        self.server_info: types.Implementation | None = None
        """The server's name and version, from the last start."""
        self.protocol_version: str | None = None
        """The MCP protocol version agreed at the last start."""
        self.session_id: str | None = None
        """The ``Mcp-Session-Id`` the server gave at the last start (HTTP servers that
        keep sessions; `None` over stdio)."""
        self._lock = threading.Lock()
        self._portal_cm: contextlib.AbstractContextManager[anyio.from_thread.BlockingPortal] | None
        self._portal_cm = None
        self._portal: anyio.from_thread.BlockingPortal | None = None
        self._live: _Live | None = None
        self._last_stderr = ""
        self._roots_told: list[str] | None = None  # the roots last sent to the server

    # --- state -------------------------------------------------------------------------------

    @property
    def alive(self) -> bool:
        """Whether a session is open and the server has not gone away."""
        live = self._live
        return live is not None and not live.dead

    def stderr_tail(self) -> str:
        """The end of what a stdio server wrote on stderr (its last words, when it died)."""
        live = self._live
        if live is not None and live.errlog is not None:
            self._keep_stderr(live.errlog)
        return self._last_stderr.strip()

    def _keep_stderr(self, errlog: IO[str]) -> None:
        with contextlib.suppress(OSError, ValueError):
            errlog.flush()
            errlog.seek(0, 2)
            size = errlog.tell()
            errlog.seek(max(0, size - _STDERR_TAIL * 4))
            lines = errlog.read()[-_STDERR_TAIL:].rstrip().splitlines()
            self._last_stderr = "\n".join(lines[-_STDERR_LINES:])

    def _why(self) -> str:
        tail = self.stderr_tail()
        return f"; its stderr ends with:\n{tail}" if tail else ""

    # --- the session, in the portal's loop -------------------------------------------------------

    async def _open_transport(self, stack: AsyncExitStack, errlog: TextIO) -> tuple[Any, Any]:
        spec = self.spec
        if spec.command is not None:
            from mcp.client.stdio import StdioServerParameters, stdio_client

            params = StdioServerParameters(
                command=spec.command[0], args=list(spec.command[1:]), env=spec.env, cwd=spec.cwd
            )
            install()
            token = reading_with(spec.max_message_bytes)  # the SDK's reader task starts in here
            try:
                return await stack.enter_async_context(stdio_client(params, errlog=errlog))
            finally:
                done_reading(token)
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        assert spec.url is not None
        self.session_id = None

        async def note_session(response: httpx2.Response) -> None:
            found = response.headers.get("mcp-session-id")
            if found:
                self.session_id = found

        client = await stack.enter_async_context(
            httpx2.AsyncClient(
                headers=spec.headers,
                timeout=httpx2.Timeout(30.0, read=300.0),
                event_hooks={"response": [note_session, guard_json(spec.max_message_bytes)]},
            )
        )
        streams = await stack.enter_async_context(
            streamable_http_client(
                spec.url, http_client=client, max_sse_event_size=spec.max_message_bytes
            )
        )
        return streams[0], streams[1]

    async def _on_log(self, params: types.LoggingMessageNotificationParams) -> None:
        level = _LOG_LEVELS.get(params.level, logging.INFO)
        where = f" [{params.logger}]" if params.logger else ""
        self.logger.log(level, "%s%s: %s", self.spec.name, where, params.data)

    async def _on_message(self, message: IncomingMessage) -> None:
        live = self._live
        if isinstance(message, types.ToolListChangedNotification) and live is not None:
            live.tasks.start_soon(self._relist, live)
        kind = _EVENT_KINDS.get(type(message))
        if kind is not None and self.on_event is not None:
            uri = (
                message.params.uri
                if isinstance(message, types.ResourceUpdatedNotification)
                else None
            )
            try:
                self.on_event(kind, uri)
            except Exception as exc:  # a failing listener must not break the connection
                self.logger.error("the event listener of %s raised", self.spec.name, exc_info=exc)

    # --- the server's requests, in the portal's loop -------------------------------------------

    async def _answer(
        self,
        what: str,
        make: Callable[[CallSlot | None], Awaitable[T]],
        *,
        slot: CallSlot | None = None,
    ) -> T | types.ErrorData:
        """Run `make` for the call in flight, in its caller's loop (or here, outside calls).

        With `slot` (a 2026-07-28 call's own input request), the call is known: it is that one.
        """
        try:
            if slot is not None:
                return await run_in_call(slot, functools.partial(make, slot))
            for _ in range(100):  # a call that ends as it is picked: pick again
                try:
                    picked = self.in_flight.pick()
                except AmbiguousCallError as exc:
                    return types.ErrorData(
                        code=types.INVALID_REQUEST, message=f"kode cannot answer {what}: {exc}"
                    )
                if picked is None:
                    return await make(None)
                try:
                    return await run_in_call(picked, functools.partial(make, picked))
                except SlotClosedError:
                    self.in_flight.remove(picked)
            raise CancelledError()
        except CancelledError:
            return types.ErrorData(
                code=types.INVALID_REQUEST, message=f"the call ended before kode answered {what}"
            )
        except Exception as exc:
            self.logger.error("answering %s of %s failed", what, self.spec.name, exc_info=exc)
            return types.ErrorData(
                code=types.INTERNAL_ERROR,
                message=f"answering {what} failed: {type(exc).__name__}: {exc}",
            )

    async def _sampling(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.ErrorData:
        answers = self.answers
        assert answers is not None
        return await self._answer(
            "a sampling request", lambda slot: answers.sample(params, slot.ctx if slot else None)
        )

    async def _elicitation(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        answers = self.answers
        assert answers is not None
        return await self._answer(
            "an elicitation request",
            lambda slot: answers.elicit(params, slot.ctx if slot else None),
        )

    async def _roots(
        self, context: ClientRequestContext, *, slot: CallSlot | None = None
    ) -> types.ListRootsResult | types.ErrorData:
        answers = self.answers
        assert answers is not None

        async def roots(slot: CallSlot | None) -> types.ListRootsResult:
            result = await answers.list_roots(slot.ctx if slot is not None else None)
            self._roots_told = [str(root.uri) for root in result.roots]
            if slot is not None and slot.roots_told is not None:
                slot.roots_told.set()  # in the caller's loop: run_in_call runs this there
            return result

        return await self._answer("a roots request", roots, slot=slot)

    async def _tell_roots(self, slot: CallSlot, live: _Live) -> None:
        """Tell the server the roots changed when this call's workspace is not what it has.

        A server asks for the roots when it starts, outside any call (so it is told the
        current directory), and remembers them; a call from an agent with another workspace
        sends ``notifications/roots/list_changed`` and waits (a little) for the server to ask
        again before the call is made, so the server works with the agent's workspace.
        """
        answers = self.answers
        if answers is None or answers.roots != "workspace" or self._roots_told is None:
            return
        if is_modern(live.session):  # 2026-07-28: each call's input requests ask for the roots
            return
        wanted = [p.as_uri() for p in answers.root_paths(slot.ctx)]
        if wanted == self._roots_told:
            return
        slot.roots_told = anyio.Event()
        portal = self._portal
        if portal is None:
            return
        notice = types.RootsListChangedNotification()
        await anyio.to_thread.run_sync(portal.call, live.session.send_notification, notice)
        with anyio.move_on_after(_ROOTS_WAIT):
            await slot.roots_told.wait()

    async def _changed(self, live: _Live, kind: str, uri: str | None) -> None:
        """A change the server announced on its ``subscriptions/listen`` stream (2026-07-28)."""
        if kind == "tools_changed":
            live.tasks.start_soon(self._relist, live)
        if self.on_event is not None:
            try:
                self.on_event(kind, uri)
            except Exception as exc:  # a failing listener must not break the connection
                self.logger.error("the event listener of %s raised", self.spec.name, exc_info=exc)

    async def _answer_input(
        self, slot: CallSlot, request: types.InputRequest
    ) -> types.InputResponse | types.ErrorData:
        """Answer one input request of a 2026-07-28 call, in the call it belongs to."""
        answers = self.answers
        if isinstance(request, types.ElicitRequest):
            if answers is None or answers.elicitation is None:
                return types.ErrorData(
                    code=types.INVALID_REQUEST,
                    message="kode cannot answer an elicitation request: this connection has no "
                    "elicitation function (connect(elicitation=...))",
                )
            elicit = answers.elicit
            return await self._answer(
                "an elicitation request",
                lambda s: elicit(request.params, s.ctx if s else None),
                slot=slot,
            )
        if isinstance(request, types.CreateMessageRequest):
            if answers is None or answers.sampling is None:
                return types.ErrorData(
                    code=types.INVALID_REQUEST,
                    message="kode cannot answer a sampling request: this connection does not "
                    "sample (connect(sampling=...))",
                )
            sample = answers.sample
            return await self._answer(
                "a sampling request",
                lambda s: sample(request.params, s.ctx if s else None),
                slot=slot,
            )
        if answers is None or answers.roots is None:
            return types.ErrorData(
                code=types.INVALID_REQUEST,
                message="kode cannot answer a roots request: this connection offers no roots "
                "(connect(roots=...))",
            )
        found = await self._roots(cast("ClientRequestContext", None), slot=slot)
        return found

    async def _relist(self, live: _Live) -> None:
        try:
            tools = await _list_all(live.session)
        except Exception as exc:
            self.logger.warning("listing the tools of %s again failed: %s", self.spec.name, exc)
            return
        if self.on_tools_changed is not None:
            self.on_tools_changed(tools)

    async def _run_session(
        self, *, task_status: anyio.abc.TaskStatus[list[types.Tool]] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        from importlib.metadata import PackageNotFoundError, version

        try:
            kode_version = version("kode-sdk")
        except PackageNotFoundError:  # pragma: no cover - running from a source tree
            kode_version = "0"
        errlog = cast("TextIO", tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace"))
        stop = anyio.Event()
        live: _Live | None = None

        def gone() -> None:
            if live is not None:
                live.dead = True
            stop.set()

        try:
            async with AsyncExitStack() as stack:
                stack.callback(errlog.close)
                stack.callback(self._keep_stderr, errlog)  # once the server has stopped
                self._last_stderr = ""
                self._roots_told = None
                read, write = await self._open_transport(stack, errlog)
                answers = self.answers
                sampling = answers is not None and answers.sampling is not None
                elicitation = answers is not None and answers.elicitation is not None
                client_tasks = PeerTasks() if self.tasks else None
                extra = (
                    {"tasks": tasks_capability(sampling=sampling, elicitation=elicitation)}
                    if self.tasks
                    else {}
                )
                dispatcher = TaskDispatcher(
                    _WatchedStream(read, gone), write, capabilities=extra, tasks=client_tasks
                )
                session = await stack.enter_async_context(
                    ClientSession(
                        dispatcher=dispatcher,
                        # 2026-07-28: each request opts in to the tasks extension (the SDK
                        # leaves it out of a handshake-era session), and a task is followed
                        extensions={TASKS_EXTENSION: {}} if self.tasks else None,
                        result_claims={TASKS_EXTENSION: [task_claim()]} if self.tasks else None,
                        sampling_callback=self._sampling if sampling else None,
                        elicitation_callback=self._elicitation if elicitation else None,
                        list_roots_callback=(
                            self._roots
                            if answers is not None and answers.roots is not None
                            else None
                        ),
                        logging_callback=self._on_log,
                        # 2026-07-28: log messages are sent to requests that ask for them
                        log_level="debug",
                        message_handler=self._on_message,
                        client_info=types.Implementation(name="kode", version=kode_version),
                    )
                )
                with anyio.fail_after(self.spec.connect_timeout):
                    # the newest revision the server offers (server/discover, else initialize)
                    if self.spec.protocol == "newest":
                        await negotiate(session)
                    else:
                        await session.initialize()
                    tools = await _list_all(session)
                self.server_info = session.server_info
                self.protocol_version = session.protocol_version
                self.capabilities = session.server_capabilities
                async with anyio.create_task_group() as tg:
                    if client_tasks is not None:
                        client_tasks.task_group = tg
                    live = _Live(
                        session=session, stop=stop, tasks=tg, errlog=errlog, dispatcher=dispatcher
                    )
                    self._live = live
                    if is_modern(session):  # list changes come on a stream of their own
                        tg.start_soon(watch_lists, session, functools.partial(self._changed, live))
                    task_status.started(tools)
                    await stop.wait()
                    tg.cancel_scope.cancel()
        finally:
            if live is not None:
                live.dead = True
                live.errlog = None

    # --- starting and stopping (blocking: call from a worker thread) ---------------------------

    def start(self) -> list[types.Tool]:
        """Start the server (a new session) and return its tools.

        Raises:
            MCPConnectionError: it could not be started, did not answer in time, or failed.
        """
        with self._lock:
            return self._start()

    def _start(self) -> list[types.Tool]:
        self._stop_session()
        if self._portal is None:
            cm = anyio.from_thread.start_blocking_portal(
                "asyncio", name=f"kode-mcp-{self.spec.name}"
            )
            self._portal = cm.__enter__()
            self._portal_cm = cm
        tools: list[types.Tool]
        try:
            future, tools = self._portal.start_task(self._run_session)
        except BaseException as exc:
            cause = _leaf(exc)
            if isinstance(cause, TimeoutError):
                what = f"did not answer within {self.spec.connect_timeout:g} s"
            elif isinstance(cause, FileNotFoundError | PermissionError):
                what = f"could not be started: {cause}"
            elif isinstance(cause, MCPError) and cause.code == types.CONNECTION_CLOSED:
                what = "stopped before it finished starting"
            else:
                what = f"failed to start: {type(cause).__name__}: {cause}"
            raise MCPConnectionError(f"{self.spec.describe()} {what}{self._why()}") from cause
        if self._live is not None:
            self._live.future = future
        return tools

    def ensure(self) -> None:
        """Start the server again if it is not running (after it died, or was closed)."""
        if self.alive:
            return
        with self._lock:
            if not self.alive:
                self._start()
                self.logger.info("%s started", self.spec.describe())

    def _stop_session(self) -> None:
        live, portal = self._live, self._portal
        self._live = None
        if live is None or portal is None:
            return
        with contextlib.suppress(RuntimeError):
            portal.call(live.stop.set)
        if live.future is not None:
            with contextlib.suppress(Exception, CancelledError):
                live.future.result(timeout=10)

    def stop(self) -> None:
        """End the session, the server process (stdio) and the thread. Idempotent."""
        with self._lock:
            self._stop_session()
            cm, self._portal_cm, self._portal = self._portal_cm, None, None
            if cm is not None:
                with contextlib.suppress(Exception):
                    cm.__exit__(None, None, None)

    def list_tools(self) -> list[types.Tool]:
        """The server's tools now (starting it if needed)."""
        return self.request_sync(_list_all)

    def request_sync(self, what: Callable[[ClientSession], Awaitable[T]]) -> T:
        """Run `what` with the live session (starting the server if needed); blocking."""
        self.ensure()
        live, portal = self._live, self._portal
        if live is None or portal is None:
            raise MCPConnectionError(f"{self.spec.describe()} is not running")
        return portal.call(what, live.session)

    # --- calls (from any event loop) -----------------------------------------------------------

    async def call(
        self,
        remote_name: str,
        arguments: dict[str, Any],
        ctx: ToolContext[Any],
        *,
        tool_name: str,
        as_task: bool = False,
    ) -> types.CallToolResult:
        """Call one of the server's tools; the server's progress reaches ``ctx.progress``.

        With `as_task`, the call is an MCP task (`kode.mcp.tasks.call_as_task`). A streamable
        HTTP server that forgot the session (it restarted, or let the session expire) refuses
        the call before running it: the call is made again in a new session. A server that
        needs URL elicitations first (error -32042) has them answered, then the call is made
        again once.

        Raises:
            ToolError: the server could not be started, died during the call, refused it, or
                broke the protocol: the message says which, for the model.
        """
        with mcp_call_span(remote_name, arguments, self._span_attributes()) as span:
            result = await self._call_retrying(remote_name, arguments, ctx, tool_name, as_task)
            if span is not None:  # traced: a tools/call span (MCP conventions) around the call
                mark_mcp_result(span, is_error=bool(result.is_error))
            return result

    async def _call_retrying(
        self,
        remote_name: str,
        arguments: dict[str, Any],
        ctx: ToolContext[Any],
        tool_name: str,
        as_task: bool,
    ) -> types.CallToolResult:
        retried = False
        for _ in range(3):
            try:
                return await self._call_once(remote_name, arguments, ctx, as_task=as_task)
            except MCPError as exc:
                if not retried and self._session_lost(exc):
                    self.logger.info(
                        "%s lost the session; starting a new one", self.spec.describe()
                    )
                elif not retried and exc.code == types.URL_ELICITATION_REQUIRED:
                    refusal = await self._elicit_first(exc, ctx)
                    if refusal is not None:
                        raise ToolError(
                            f"Tool '{tool_name}' was not run: {self.spec.describe()} needs the "
                            f"user to open a page first, and {refusal}.",
                            type=ToolErrorType.EXECUTION_FAILED,
                        ) from None
                else:
                    raise self._failure(exc, tool_name) from None
                retried = True
            except Exception as exc:
                raise self._failure(exc, tool_name) from None
        raise AssertionError("unreachable")  # pragma: no cover

    def _span_attributes(self) -> dict[str, Any]:
        """The MCP conventions' transport attributes of this server's ``tools/call`` spans."""
        url = self.spec.url
        found: dict[str, Any] = {}
        if self.protocol_version:
            found["mcp.protocol.version"] = self.protocol_version
        if url is None:
            found["network.transport"] = "pipe"
            return found
        if self.session_id:
            found["mcp.session.id"] = self.session_id
        parts = urlsplit(url)
        found.update({"network.transport": "tcp", "network.protocol.name": "http"})
        if parts.hostname:
            found["server.address"] = parts.hostname
            found["server.port"] = parts.port or (443 if parts.scheme == "https" else 80)
        return found

    async def _elicit_first(self, exc: MCPError, ctx: ToolContext[Any]) -> str | None:
        """Answer the URL elicitations of an error -32042; `None` when all were accepted."""
        answers = self.answers
        if answers is None or answers.elicitation is None:
            return "this connection has no elicitation function (connect(elicitation=...))"
        try:
            data = types.ElicitationRequiredErrorData.model_validate(exc.error.data, by_name=False)
        except Exception:
            return "its request for that was malformed"
        for params in data.elicitations:
            answer = await answers.elicit(params, ctx)
            if isinstance(answer, types.ErrorData):
                return f"answering it failed: {answer.message}"
            if answer.action != "accept":
                return f"the user chose {answer.action!r} for {params.url}"
        return None

    def _session_lost(self, exc: MCPError) -> bool:
        if self.spec.url is None or exc.code != types.INVALID_REQUEST:
            return False
        if "session" not in exc.message.lower():
            return False
        live = self._live
        if live is not None:
            live.dead = True
        return True

    async def _call_once(
        self,
        remote_name: str,
        arguments: dict[str, Any],
        ctx: ToolContext[Any],
        *,
        as_task: bool,
    ) -> types.CallToolResult:
        await anyio.to_thread.run_sync(self.ensure, abandon_on_cancel=True)
        live, portal = self._live, self._portal
        if live is None or portal is None:
            raise MCPConnectionError(f"{self.spec.describe()} was closed")
        inbox: queue.SimpleQueue[object] = queue.SimpleQueue()
        trace = current_context()  # the call runs on the connection's loop: carry the trace

        async def progress(progress: float, total: float | None, message: str | None) -> None:
            inbox.put(_Progress(progress=progress, total=total, message=message))

        def status(message: str, fraction: float | None) -> None:
            inbox.put(_Status(message=message, fraction=fraction))

        async def remote_call() -> types.CallToolResult:
            # With the caller's trace current, the SDK puts it in params._meta (traceparent).
            with attached(trace):
                if as_task and not is_modern(live.session):  # 2026-07-28: the extension's
                    return await call_as_task(
                        live.session, live.dispatcher, remote_name, arguments, progress=status
                    )
                headers = trace_headers()
                if is_modern(live.session):  # questions come as input_required results
                    return await call_answering(
                        live.session,
                        remote_name,
                        arguments,
                        answer=functools.partial(self._answer_input, slot),
                        progress=progress,
                        status=lambda message: status(message, None),
                        meta=cast("types.RequestParamsMeta", headers) if headers else None,
                    )
                result: types.CallToolResult = await live.session.call_tool(
                    remote_name,
                    arguments,
                    progress_callback=progress,
                    meta=cast("types.RequestParamsMeta", headers) if headers else None,
                )
                return result

        def wait() -> None:
            # In a worker thread of the caller's loop: ctx.progress reaches the agent from here.
            while (item := inbox.get()) is not _DONE:
                with contextlib.suppress(Exception):
                    if isinstance(item, _Progress):
                        fraction = (
                            min(1.0, max(0.0, item.progress / item.total)) if item.total else None
                        )
                        ctx.progress(item.message or f"{item.progress:g}", fraction)
                    elif isinstance(item, _Status):
                        ctx.progress(item.message, item.fraction)

        async with anyio.create_task_group() as group:
            # The server's requests during the call (sampling, elicitation, roots) run in
            # `group`, in this loop. A cancelled call cancels them; a call that ended waits for
            # those still running, which may belong to another call of the same agent in
            # flight (stdio does not say which call a server's request is for).
            slot = CallSlot(ctx=ctx, group=group, token=anyio.lowlevel.current_token())
            self.in_flight.add(slot)
            ended = False
            try:
                await self._tell_roots(slot, live)
                future: Future[types.CallToolResult] = portal.start_task_soon(remote_call)
                future.add_done_callback(lambda _: inbox.put(_DONE))
                try:
                    await anyio.to_thread.run_sync(wait, abandon_on_cancel=True)
                except BaseException:
                    future.cancel()  # the SDK sends notifications/cancelled to the server
                    raise
                ended = True
            finally:
                self.in_flight.remove(slot)
                if not ended:
                    group.cancel_scope.cancel()
        try:
            return future.result()
        except MCPError as exc:
            if exc.code == types.CONNECTION_CLOSED:
                live.dead = True
            raise
        except Exception:
            if live.dead:
                raise MCPError(types.CONNECTION_CLOSED, "Connection closed") from None
            raise

    async def request(self, what: Callable[[ClientSession], Awaitable[T]]) -> T:
        """Run `what` with the live session (starting the server if needed), from any loop.

        Raises:
            MCPConnectionError: the server could not be started.
            MCPError: the server refused the request.
        """
        await anyio.to_thread.run_sync(self.ensure, abandon_on_cancel=True)
        live, portal = self._live, self._portal
        if live is None or portal is None:
            raise MCPConnectionError(f"{self.spec.describe()} was closed")
        future: Future[T] = portal.start_task_soon(what, live.session)
        try:
            return await anyio.to_thread.run_sync(future.result, abandon_on_cancel=True)
        except BaseException:
            future.cancel()
            raise

    def _failure(self, exc: BaseException, tool_name: str) -> ToolError:
        """The error result for a call that did not get a result from the server."""
        where = self.spec.describe()
        if isinstance(exc, MCPConnectionError):
            text = f"Tool '{tool_name}' could not run: {exc}"
            kind = ToolErrorType.EXECUTION_FAILED
        elif isinstance(exc, CancelledError):
            text = f"Tool '{tool_name}' was cancelled: {where} was closed during the call."
            kind = ToolErrorType.CANCELLED
        elif isinstance(exc, MCPError) and exc.code == types.CONNECTION_CLOSED:
            how = (
                "closed the connection during the call"
                if self.spec.command is not None
                else "could not be reached, or dropped the call"
            )
            text = (
                f"Tool '{tool_name}' failed: {where} {how}{self._why()}. "
                "It will be started again on the next call."
                if self.spec.command is not None
                else f"Tool '{tool_name}' failed: {where} {how}. kode will connect again on "
                "the next call."
            )
            kind = ToolErrorType.EXECUTION_FAILED
        elif isinstance(exc, MCPError):
            text = f"Tool '{tool_name}' failed: {where} refused the call: {exc.message} "
            text += f"(error {exc.code})."
            kind = ToolErrorType.EXECUTION_FAILED
        else:
            text = (
                f"Tool '{tool_name}' failed: {where} answered with something kode could not "
                f"use: {type(exc).__name__}: {exc}"
            )
            kind = ToolErrorType.EXECUTION_FAILED
        return ToolError(text, type=kind)


async def _list_all(session: ClientSession) -> list[types.Tool]:
    """Every tool of the server, following pagination."""
    tools: list[types.Tool] = []
    cursor: str | None = None
    for _ in range(1000):  # a server whose cursor never ends cannot hang kode
        params = types.PaginatedRequestParams(cursor=cursor) if cursor is not None else None
        page = await session.list_tools(params=params)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None:
            break
    return tools


def split_command(command: str | Sequence[str]) -> tuple[str, ...]:
    """A command as a tuple of arguments (a string is split like a shell would)."""
    import shlex

    parts = shlex.split(command) if isinstance(command, str) else [str(c) for c in command]
    if not parts:
        raise ValueError("the command of an MCP server cannot be empty")
    return tuple(parts)
