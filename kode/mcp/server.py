"""Serving registered tools over MCP: `serve`, `serve_async` and `ToolServer`.

This module owns the server direction. It is built on the official SDK's low-level ``Server``
(`mcp.server.lowlevel.Server`) rather than ``MCPServer``: ``MCPServer`` infers schemas from
functions itself, while a kode tool already has its schemas, its validation, its context and
its result normalisation, which must stay exactly what a model gets inside kode.

What a client sees:

- ``tools/list``: each selected tool's name, description, inferred input schema, output schema
  (when its return type gives a structured one; not an object → wrapped as ``{"result": ...}``)
  and annotations from its kind (`kode.mcp.convert`);
- ``tools/call``: kode validates the arguments and runs the tool as an agent would; every
  failure (invalid arguments, `ToolError`, an exception, a timeout) is an ``isError`` result
  with the text kode gives a model. A tool with an output schema sends ``structuredContent``
  only after checking it against that schema; a result that does not match is an ``isError``
  result naming the problems (and a warning on the ``kode.mcp`` logger). An unknown name is a
  protocol error (``-32602``), as the MCP specification requires, with kode's message;
- ``ctx.progress(...)`` becomes ``notifications/progress`` for the call, when the client asked
  for progress; ``ctx.emit(...)`` and records logged on ``ctx.logger`` become
  ``notifications/message`` log messages (level ``info`` for events);
- a client's ``notifications/cancelled`` cancels the call, and so does an HTTP client that
  hangs up: an async tool is cancelled, a sync one in a worker thread sees ``ctx.cancelled``
  (its result is discarded);
- over HTTP, ``Host`` and ``Origin`` are checked whatever the bind address, and a non-loopback
  one needs authentication (`kode.mcp.http.HTTPAccess`);
- a tool's ``ctx.elicit`` and ``ctx.sample`` become ``elicitation/create`` and
  ``sampling/createMessage`` requests to the client (`kode.mcp.caller`); on the 2026-07-28
  protocol, ``input_required`` results the client answers by calling again, with the answers
  so far in a sealed ``requestState`` (`kode.mcp.rounds`);
- over stdio, a ``tools/call`` with a ``task`` field runs as an MCP task
  (`kode.mcp.served_tasks`); on 2026-07-28, over streamable HTTP and stdio, a ``tools/call``
  that opts in to the tasks extension runs as a task when it does not end at once
  (`kode.mcp.served_task_extension`);
- with `skills` (a `SkillCatalog`): the ``skill`` tool, and each skill's files as resources
  ``skill://<name>/SKILL.md`` and ``skill://<name>/<path>`` (`kode.mcp.served_skills`), named
  in the server's instructions;
- tools registered (or removed) after the server started: ``notifications/tools/list_changed``,
  on the connection for handshake-era clients and through ``subscriptions/listen`` for
  2026-07-28 clients. The registry is watched by polling, every `poll_interval` seconds.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

import anyio
import anyio.abc
import anyio.from_thread
import anyio.lowlevel
import mcp_types as types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.server.session import ServerSession
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from kode.mcp.caller import CURRENT_REQUEST, ClientCaller
from kode.mcp.convert import annotations_for_kind, call_result, output_schema_for
from kode.mcp.http import (
    HEADER_TIMEOUT,
    HTTPAccess,
    disconnected,
    header_timeout_protocol,
    http_app,
)
from kode.mcp.inner import ServedCalls, script_may_call
from kode.mcp.relay import ForwardingLogger, LogItem, relay
from kode.mcp.rounds import CURRENT_ROUNDS, Asker, Rounds
from kode.mcp.served_skills import ServedSkills
from kode.mcp.served_task_extension import Questions, ServedTaskExtension
from kode.mcp.served_tasks import TASK_EXECUTION, ServedTasks, TaskReplies, tasks_capability
from kode.mcp.task_extension import TASKS_EXTENSION, opted_in
from kode.registries.meta import ToolSource
from kode.registries.tool_registry import ToolRegistry, normalize_name
from kode.registries.tool_registry import registry as global_registry
from kode.tools.context import ToolContext, ToolEvent
from kode.tools.core import Tool
from kode.tools.errors import ToolErrorType
from kode.tools.results import ToolResult, error_result
from kode.tools.services import CALLER, INNER_CALLS
from kode.tools.skills import SKILLS, SkillCatalog
from kode.tools.workspace import FilePool
from kode.tracing import tracing_for

__all__ = ["ToolServer", "Transport", "serve", "serve_async"]

Transport = Literal["stdio", "http"]
"""How a server talks to its clients: over its stdin/stdout, or streamable HTTP."""

_log = logging.getLogger("kode.mcp")

_LEVELS: tuple[types.LoggingLevel, ...] = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)
_MAX_SESSIONS_NOTIFIED = 1024


class _LowLevelServer(Server[Any]):
    """The SDK's server, announcing ``tools.listChanged`` on every transport.

    The streamable HTTP session manager builds the initialization options itself, from
    `create_initialization_options()` without arguments, hence the default here.
    """

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return super().create_initialization_options(
            notification_options or NotificationOptions(tools_changed=True),
            experimental_capabilities,
            extensions,
        )

    serves_tasks = False
    """Whether ``tasks`` is announced (tool calls as MCP tasks; 2025-11-25 clients only)."""
    serves_task_extension = False
    """Whether the tasks extension is announced (2026-07-28 clients)."""

    def get_capabilities(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
        *,
        protocol_version: str | None = None,
    ) -> types.ServerCapabilities:
        """The SDK's capabilities, with ``tasks`` (handshake era) or the tasks extension."""
        found = super().get_capabilities(
            notification_options,
            experimental_capabilities,
            extensions,
            protocol_version=protocol_version,
        )
        if protocol_version in MODERN_PROTOCOL_VERSIONS:
            if not self.serves_task_extension:
                return found
            named = {**(found.extensions or {}), TASKS_EXTENSION: {}}
            return found.model_copy(update={"extensions": named})
        if not self.serves_tasks:
            return found
        return found.model_copy(update={"tasks": tasks_capability()})


@dataclass(kw_only=True, slots=True)
class _Listed:
    tool: Tool[..., Any]
    entry: types.Tool
    wrapped: bool


async def _cancel_on(
    event: anyio.Event, target: anyio.CancelScope, watch: anyio.CancelScope
) -> None:
    with watch:
        await event.wait()
        target.cancel()


class ToolServer:
    """Registered tools as an MCP server (the low-level SDK ``Server`` in `server`).

    `serve` builds one and runs it; build one yourself to mount its HTTP app in a larger
    application (`streamable_http_app`) or to run it on streams you own (`run`).

    Args:
        tools: Tools and names or patterns as a template writes them (``"fs_*"``,
            ``"group:web"``, ``"mcp__github__*"``); `None` serves every non-optional tool.
            Patterns are resolved again whenever the registry changes.
        name: The server's name, as clients show it.
        registry: Where names are looked up (default: the global registry).
        poll_interval: Seconds between two looks at the registry for new or removed tools.
        tool_timeout: Seconds a call may take when its tool has no `timeout` of its own
            (`None`: no limit), as an agent template's ``tool_timeout``.
        instructions: Text telling clients what the server is for.
        deps: The application's dependencies, given to every call as ``ctx.deps`` (as
            `Agent.create`'s ``deps``): one object, shared by all clients.
        tasks: Let clients run calls as MCP tasks: on 2025-11-25 over stdio or any stream pair
            given to `run` (`kode.mcp.served_tasks`), on 2026-07-28 (the tasks extension) over
            streamable HTTP too (`kode.mcp.served_task_extension`).
        task_idle_timeout: Seconds a 2026-07-28 task may run without its client asking about
            it (``tasks/get``) before it is cancelled: what a client that left costs.
        skills: Skills to offer (`kode.tools.skills.skill_sources` finds them): the ``skill``
            tool is served with them (besides `tools`), their files are resources, and the
            instructions name them (`kode.mcp.served_skills`).
    """

    def __init__(
        self,
        tools: Sequence[Tool[..., Any] | str] | None = None,
        *,
        name: str = "kode",
        registry: ToolRegistry | None = None,
        poll_interval: float = 0.5,
        tool_timeout: float | None = None,
        instructions: str | None = None,
        deps: Any = None,
        tasks: bool = True,
        skills: SkillCatalog | None = None,
        task_idle_timeout: float = 300.0,
    ) -> None:
        from kode.version import installed_version

        if isinstance(tools, str):
            raise TypeError(f"tools must be a list of tools or patterns, got the string {tools!r}")
        self.registry = registry if registry is not None else global_registry
        """Where tool names and patterns are looked up."""
        self.poll_interval = poll_interval
        """Seconds between two looks at the registry."""
        self.tool_timeout = tool_timeout
        """Seconds a call may take when its tool has no `timeout` of its own."""
        self.deps = deps
        """Given to every call as ``ctx.deps``."""
        self.unmatched: list[str] = []
        """Names and patterns that selected no tool, at the last look at the registry."""
        self._fixed = [t for t in tools or () if isinstance(t, Tool)]
        self.skills = ServedSkills(skills) if skills is not None else None
        """The skills offered (`None`: none)."""
        if self.skills is not None:
            self._fixed.append(self.skills.tool())  # first, so it wins over a namesake
            told = self.skills.instructions()
            if told:
                instructions = f"{instructions.rstrip()}\n\n{told}" if instructions else told
        self._patterns: list[str] | None = (
            None if tools is None else [t for t in tools if isinstance(t, str)]
        )
        self._listing: dict[str, _Listed] = {}
        self._listed_for: tuple[Any, ...] | None = None
        self._sessions: list[ServerSession] = []
        self._bus = InMemorySubscriptionBus()
        self._min_level: types.LoggingLevel = "debug"
        self.services: dict[str, Any] = {CALLER.name: ClientCaller()}
        if skills is not None:
            self.services[SKILLS.name] = skills
        """Shared by every call this server runs (`ToolContext.services`); `CALLER` sends a
        tool's ``ctx.elicit`` and ``ctx.sample`` to the client of the call; `INNER_CALLS` runs
        a served ``code_run`` script's calls (`kode.mcp.inner`)."""
        self.files = FilePool()
        """What the served tools read and wrote (`ToolContext.files`)."""
        self.services[INNER_CALLS.name] = ServedCalls(
            lambda: self.tools,
            deps=deps,
            files=self.files,
            services=self.services,
            timeout=tool_timeout,
        )
        self.served_tasks = ServedTasks() if tasks else None
        """The calls clients asked to run as MCP tasks (`None`: tasks are not offered)."""
        self.task_extension = ServedTaskExtension(idle_timeout=task_idle_timeout) if tasks else None
        """The calls 2026-07-28 clients run as tasks (`None`: the extension is not offered)."""
        kode_version = installed_version()
        self.server: Server[Any] = _LowLevelServer(
            name,
            version=kode_version,
            instructions=instructions,
            on_list_tools=self._list_tools,
            # the SDK's type says a tool's result; the runner sends a task (a dict) just as well
            on_call_tool=cast("Any", self._call_tool),
            on_subscriptions_listen=ListenHandler(self._bus),
        )
        """The SDK's low-level server."""
        # Registered here, not as `on_set_logging_level=`, which warns that logging is
        # deprecated in 2026-07-28: kode still serves the handshake era, where it is not.
        self.server.add_request_handler(
            "logging/setLevel", types.SetLevelRequestParams, self._set_level
        )
        self.server.middleware.append(self._remember_sessions)
        # 2026-07-28: the answers a tool collected travel in requestState, sealed with a key
        # of this server's (kode.mcp.rounds); what comes back unsealed is what it sent.
        self.server.middleware.append(
            RequestStateBoundary(RequestStateSecurity.ephemeral(), default_audience=name)
        )
        if self.skills is not None:
            self.skills.install(self.server)
        if self.served_tasks is not None:
            self.served_tasks.install(self.server, self.task_extension)
        self.refresh()

    # --- selection ---------------------------------------------------------------------------

    def _signature(self) -> tuple[Any, ...]:
        entries = self.registry.entries()
        factories = self.registry.snapshot().factories
        return (
            tuple((e.meta, e.origin, id(e.tool), id(e.factory)) for e in entries),
            tuple(id(f.factory) for f in factories),
        )

    def refresh(self) -> bool:
        """Choose the tools again if the registry changed; return whether the list changed."""
        signature = self._signature()
        if signature == self._listed_for:
            return False
        self._listed_for = signature
        chosen: list[Tool[..., Any]] = list(self._fixed)
        if self._patterns is None or self._patterns:
            resolution = self.registry.resolve(self._patterns)
            self.unmatched = [u.entry for u in resolution.unmatched]
            for made in resolution.tools:
                meta = resolution.metas.get(made.name)
                if meta is not None and meta.source is ToolSource.CLIENT:
                    continue  # its caller runs it: nothing to serve
                chosen.append(made)
        listing: dict[str, _Listed] = {}
        for made in chosen:
            key = normalize_name(made.name)
            if key in listing:
                continue
            output, wrapped = output_schema_for(made.output_schema)
            entry = types.Tool(
                name=made.name,
                description=self._description(made, chosen) or None,
                input_schema=made.input_schema,
                output_schema=output,
                annotations=annotations_for_kind(made.kind),
            )
            listing[key] = _Listed(tool=made, entry=entry, wrapped=wrapped)
        before = {k: id(v.tool) for k, v in self._listing.items()}
        self._listing = listing
        return before != {k: id(v.tool) for k, v in listing.items()}

    def _description(self, made: Tool[..., Any], chosen: list[Tool[..., Any]]) -> str:
        """A tool's description for clients, with what it adds for an agent's prompt.

        A served ``code_run`` lists there the functions its scripts have: the served tools a
        script may call (`kode.mcp.inner.script_may_call`).
        """
        if made.agent_instructions is None:
            return made.description
        # (without the caller: the listing it would read is the one being made)
        services = {k: v for k, v in self.services.items() if k != INNER_CALLS.name}
        ctx: ToolContext[Any] = ToolContext(
            tool_name=made.name, deps=self.deps, files=self.files, services=services
        )
        shown = [t for t in chosen if script_may_call(t)]
        added = made.agent_instructions(shown, ctx)
        return f"{made.description}\n\n{added}" if added else made.description

    @property
    def tools(self) -> list[Tool[..., Any]]:
        """The tools served now, in order."""
        return [listed.tool for listed in self._listing.values()]

    # --- handlers ------------------------------------------------------------------------------

    async def _list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        await self._look()
        entries = [listed.entry for listed in self._listing.values()]
        if self.served_tasks is not None and self.served_tasks.running:
            entries = [e.model_copy(update={"execution": TASK_EXECUTION}) for e in entries]
        return types.ListToolsResult(tools=entries)

    def _unknown(self, name: str) -> MCPError:
        import difflib

        names = [listed.tool.name for listed in self._listing.values()]
        close = difflib.get_close_matches(name, names, n=1)
        hint = f" Did you mean '{close[0]}'?" if close else ""
        return MCPError(
            code=types.INVALID_PARAMS,
            message=f"Tool '{name.strip()}' is not available.{hint} Available tools: "
            f"{', '.join(names) or 'none'}.",
        )

    async def _set_level(
        self, ctx: ServerRequestContext[Any, Any], params: types.SetLevelRequestParams
    ) -> types.EmptyResult:
        self._min_level = params.level
        return types.EmptyResult()

    def _levels_for(self, ctx: ServerRequestContext[Any, Any]) -> frozenset[str]:
        """The log levels this request may receive (2026-07-28: the request's own opt-in)."""
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            wanted = (ctx.meta or {}).get(types.LOG_LEVEL_META_KEY)
        else:
            wanted = self._min_level
        if wanted not in _LEVELS:
            return frozenset()
        return frozenset(_LEVELS[_LEVELS.index(wanted) :])

    async def _call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult | dict[str, Any]:
        listed = self._listing.get(normalize_name(params.name))
        if listed is None:
            await self._look()
            listed = self._listing.get(normalize_name(params.name))
            if listed is None:
                raise self._unknown(params.name)
        served = self.served_tasks
        if params.task is not None and served is not None and served.running:
            # a task: answered at once with its id; the call runs on in the server's task group
            return served.start(
                lambda status: self._run_call(ctx, params, listed, status), params.task
            )
        if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            return await self._run_call(ctx, params, listed, None)
        extension = self.task_extension
        if extension is not None and extension.running and opted_in(ctx.meta):
            # 2026-07-28, the client opted in to tasks: a call that does not end at once is one
            async def as_task(
                status: Callable[[str], None], questions: Questions, pending: Callable[[], bool]
            ) -> Any:
                return await self._run_call(ctx, params, listed, status, questions, pending=pending)

            return await extension.start(ctx, as_task)
        # 2026-07-28: the tool's questions are input_required results (kode.mcp.rounds)
        rounds = Rounds.resume(params)
        result = await self._run_call(ctx, params, listed, None, rounds)
        return rounds.input_required() if rounds.asked is not None else result

    async def _run_call(
        self,
        ctx: ServerRequestContext[Any, Any],
        params: types.CallToolRequestParams,
        listed: _Listed,
        status: Callable[[str], None] | None,
        rounds: Asker | None = None,
        *,
        pending: Callable[[], bool] | None = None,
    ) -> types.CallToolResult:
        """Run one call of a served tool (as the request, or as a task: `status` is given).

        With `Rounds` (the 2026-07-28 protocol), a question the tool asks without an answer
        in them stops the run: `rounds.asked` says so, and the result returned is moot. A
        2026-07-28 task gives its `Questions` instead, and `pending`: whether its request is still
        unanswered, so notifications can go with it (`relay`).
        """
        tool = listed.tool
        send, receive = anyio.create_memory_object_stream[ToolEvent | LogItem](math.inf)
        token = anyio.lowlevel.current_token()
        loop_thread = threading.get_ident()

        def forward(item: ToolEvent | LogItem) -> None:
            # A sync tool runs in a worker thread: hand its events to the loop.
            try:
                if threading.get_ident() == loop_thread:
                    send.send_nowait(item)
                else:
                    anyio.from_thread.run_sync(send.send_nowait, item, token=token)
            except (RuntimeError, anyio.ClosedResourceError, anyio.BrokenResourceError):
                pass  # the call is over (or the loop is gone): nobody to tell

        call_ctx: ToolContext[Any] = ToolContext(
            tool_call_id=str(ctx.request_id) if ctx.request_id is not None else "",
            tool_name=tool.name,
            deps=self.deps,
            event_sink=forward,
            logger=ForwardingLogger(logging.getLogger("kode.tools"), forward),
            files=self.files,
            services=self.services,
        )
        gone = disconnected(ctx.request) if status is None else None
        result: ToolResult | None = None
        current = CURRENT_REQUEST.set(ctx)  # what ctx.elicit and ctx.sample ask (ClientCaller)
        asking = CURRENT_ROUNDS.set(rounds)
        async with anyio.create_task_group() as tg:
            tg.start_soon(
                functools.partial(relay, notify=pending),
                receive,
                ctx,
                tool.name,
                self._levels_for(ctx),
                status,
            )
            with anyio.CancelScope() as call_scope:
                if isinstance(rounds, Rounds):
                    rounds.scope = call_scope  # a question without an answer ends the run
                watch = anyio.CancelScope()
                if gone is not None:  # an HTTP client that hangs up cancels its call
                    tg.start_soon(_cancel_on, gone, call_scope, watch)
                try:
                    arguments = params.arguments or {}
                    tracing = tracing_for(None)
                    if tracing is None:
                        result = await tool.run(
                            arguments, call_ctx, default_timeout=self.tool_timeout
                        )
                    else:  # traced (kode mcp serve --otel): continues the client's trace
                        result = await tracing.served_tool(
                            tool,
                            call_ctx.tool_call_id,
                            arguments,
                            params.meta,
                            lambda: tool.run(
                                arguments, call_ctx, default_timeout=self.tool_timeout
                            ),
                        )
                finally:
                    send.close()  # the relay sends what is left, then ends
                    watch.cancel()
                    CURRENT_REQUEST.reset(current)
                    CURRENT_ROUNDS.reset(asking)
        if result is None:
            result = error_result(
                "The call was cancelled: the client disconnected.", type=ToolErrorType.CANCELLED
            )
        schema = listed.entry.output_schema
        sent = call_result(
            result,
            has_output_schema=schema is not None,
            wrapped=listed.wrapped,
            output_schema=schema,
            tool_name=tool.name,
        )
        if sent.is_error and not result.is_error:  # the tool broke its own output schema
            said = sent.content[0] if sent.content else None
            _log.warning("%s", said.text if isinstance(said, types.TextContent) else "")
        return sent

    # --- list changes --------------------------------------------------------------------------

    async def _remember_sessions(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        """Keep each handshake-era connection, to tell it when the tool list changes."""
        out = await call_next(ctx)
        if ctx.method == "notifications/initialized":
            self._sessions.append(ctx.session)
            del self._sessions[:-_MAX_SESSIONS_NOTIFIED]
        return out

    async def notify_tools_changed(self) -> None:
        """Tell every client that the tool list changed."""
        for session in list(self._sessions):
            try:
                await session.send_tool_list_changed()
            except Exception as exc:  # a closed connection: notifications are best-effort
                _log.debug("tools/list_changed not sent: %s", exc)
        await self._bus.publish(ToolsListChanged())

    async def _look(self) -> None:
        """Choose the tools again; when the list changed, tell every client.

        Whoever notices a change announces it: a client listing tools before the next poll
        would otherwise take the news with it, and the other clients would never hear it.
        """
        if self.refresh():
            await self.notify_tools_changed()

    async def watch(self) -> None:
        """Look at the registry every `poll_interval` seconds; announce changes. Never returns."""
        while True:
            await anyio.sleep(self.poll_interval)
            await self._look()

    # --- running -------------------------------------------------------------------------------

    async def run(self, read_stream: Any, write_stream: Any) -> None:
        """Serve one connection over a pair of SDK streams until it closes."""
        async with anyio.create_task_group() as tg:
            tg.start_soon(self.watch)
            with self._tasks_in(tg):
                if self.served_tasks is not None:
                    write_stream = TaskReplies(write_stream)
                await self.server.run(
                    read_stream, write_stream, self.server.create_initialization_options()
                )
            tg.cancel_scope.cancel()

    @contextlib.contextmanager
    def _tasks_in(self, tg: anyio.abc.TaskGroup) -> Iterator[None]:
        """Offer tasks, and run the calls clients ask for as tasks in `tg`, while serving."""
        served = self.served_tasks
        if served is None:
            yield
            return
        served.tasks.task_group = tg
        self.server.serves_tasks = True  # type: ignore[attr-defined]  # a _LowLevelServer
        try:
            with self._task_extension_in(tg):
                yield
        finally:
            served.tasks.task_group = None
            self.server.serves_tasks = False  # type: ignore[attr-defined]

    def _task_extension_in(
        self, tg: anyio.abc.TaskGroup
    ) -> contextlib.AbstractContextManager[None]:
        """Offer the tasks extension (2026-07-28), running its tasks in `tg`, while serving."""
        if self.task_extension is None:
            return contextlib.nullcontext()
        return self.task_extension.serving(tg, self.server)

    async def run_stdio(self) -> None:
        """Serve one client over this process's stdin and stdout until it closes them."""
        import sys

        from mcp.server.stdio import stdio_server

        sys.stdout.flush()
        async with stdio_server() as (read_stream, write_stream):
            # stdout is the protocol: what tools print goes to stderr (the SDK moves fd 1 to
            # stderr, but Python's own buffer of sys.stdout would be flushed onto the wire).
            with contextlib.redirect_stdout(sys.stderr):
                await self.run(read_stream, write_stream)

    def streamable_http_app(
        self, *, host: str = "127.0.0.1", path: str = "/mcp", access: HTTPAccess | None = None
    ) -> Any:
        """A Starlette app serving the tools over streamable HTTP at `path`.

        Args:
            host: The address the app will be bound to: the ``Host``/``Origin`` checks accept
                it, and a non-loopback one needs authentication (see `HTTPAccess`).
            path: The endpoint's path.
            access: Which hosts and origins are accepted and how clients authenticate
                (default: the loopback names and `host`, no authentication).

        Raises:
            ValueError: a non-loopback `host` without authentication, unless allowed; an
                invalid `access`.
        """
        app = http_app(self.server, host=host, path=path, access=access or HTTPAccess())
        if self.task_extension is not None:  # 2026-07-28 tasks outlive their request
            self.task_extension.run_in_lifespan(app, self._task_extension_in)
        return app

    async def run_http(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 8000,
        path: str = "/mcp",
        access: HTTPAccess | None = None,
        header_timeout: float = HEADER_TIMEOUT,
        on_listening: Callable[[int], None] | None = None,
    ) -> None:
        """Serve over streamable HTTP on ``http://host:port/path`` until cancelled.

        `host`, `path` and `access` are `streamable_http_app`'s; a connection that has not
        sent a request's headers `header_timeout` seconds after it connected, or after the
        previous response, is closed (see `kode.mcp.http.header_timeout_protocol`). The socket
        is bound first, so `on_listening` is called with the port it got (port 0: one the
        system chose).

        Raises:
            OSError: the address cannot be bound (the port is taken, the host is not local).
        """
        import socket

        import uvicorn

        protocol = header_timeout_protocol(header_timeout)
        app = self.streamable_http_app(host=host, path=path, access=access)
        config = uvicorn.Config(
            app,
            host=host,
            port=port,
            log_level="warning",
            lifespan="on",
            http=protocol,
        )
        sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((host, port))
            sock.listen(config.backlog)  # connections wait from here, before uvicorn starts
        except OSError:
            sock.close()
            raise
        with sock:
            if on_listening is not None:
                on_listening(int(sock.getsockname()[1]))
            async with anyio.create_task_group() as tg:
                tg.start_soon(self.watch)
                await uvicorn.Server(config).serve(sockets=[sock])
                tg.cancel_scope.cancel()


async def serve_async(
    tools_or_patterns: Sequence[Tool[..., Any] | str] | None = None,
    *,
    name: str = "kode",
    transport: Transport = "stdio",
    host: str = "127.0.0.1",
    port: int = 8000,
    path: str = "/mcp",
    registry: ToolRegistry | None = None,
    poll_interval: float = 0.5,
    tool_timeout: float | None = None,
    deps: Any = None,
    access: HTTPAccess | None = None,
) -> None:
    """`serve`, in a running event loop (stdio: asyncio or trio; HTTP: asyncio)."""
    server = ToolServer(
        tools_or_patterns,
        name=name,
        registry=registry,
        poll_interval=poll_interval,
        tool_timeout=tool_timeout,
        deps=deps,
    )
    if transport == "stdio":
        await server.run_stdio()
    elif transport == "http":
        await server.run_http(host=host, port=port, path=path, access=access)
    else:
        raise ValueError(f"unknown MCP transport {transport!r}: use 'stdio' or 'http'")


def serve(
    tools_or_patterns: Sequence[Tool[..., Any] | str] | None = None,
    *,
    name: str = "kode",
    transport: Transport = "stdio",
    host: str = "127.0.0.1",
    port: int = 8000,
    path: str = "/mcp",
    registry: ToolRegistry | None = None,
    poll_interval: float = 0.5,
    tool_timeout: float | None = None,
    deps: Any = None,
    access: HTTPAccess | None = None,
) -> None:
    """Serve registered tools over MCP until the client leaves (stdio) or the process stops.

    Args:
        tools_or_patterns: Tools, names and patterns as a template writes them (``"fs_*"``,
            ``"group:web"``); `None` serves every non-optional tool of the registry.
        name: The server's name, as clients show it.
        transport: ``"stdio"`` (the process's stdin and stdout) or ``"http"`` (streamable
            HTTP on ``http://host:port/path``).
        host: The interface to listen on (HTTP only; the default is the loopback one).
        port: The port to listen on (HTTP only).
        path: The endpoint's path (HTTP only).
        registry: Where names are looked up (default: the global registry).
        poll_interval: Seconds between two looks at the registry for tools defined later.
        tool_timeout: Seconds a call may take when its tool has no `timeout` of its own.
        deps: The application's dependencies, given to every call as ``ctx.deps``.
        access: Accepted hosts and origins, and authentication (HTTP only; see `HTTPAccess`:
            a non-loopback `host` needs a token verifier or ``allow_unauthenticated``).
    """
    anyio.run(
        lambda: serve_async(
            tools_or_patterns,
            name=name,
            transport=transport,
            host=host,
            port=port,
            path=path,
            registry=registry,
            poll_interval=poll_interval,
            tool_timeout=tool_timeout,
            deps=deps,
            access=access,
        ),
        backend="asyncio",
    )
