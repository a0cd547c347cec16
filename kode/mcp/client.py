"""Importing an MCP server's tools: `connect` and the `MCPConnection` it returns.

This module owns turning a server's tool listing into registered kode tools: their names
(`kode.mcp.names`), cleaned schemas (`kode.mcp.schemas`), kinds (`kode.mcp.convert`), the
trust rule, and the lifetime of the connection. Talking to the server is `kode.mcp.session`.

The trust rule: a server is untrusted unless ``trust=True``. An untrusted server's tools
require approval (``requires_approval=True``), except those whose annotations say
``readOnlyHint: true``; a trusted server's tools follow the agent's permission mode like any
tool of their kind. Annotations are a server's own claims, so ``trust=True`` is for servers
you run or vouch for.
"""

from __future__ import annotations

import fnmatch
import threading
from collections.abc import Generator, Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any

import anyio.to_thread
import mcp_types as types

from kode.mcp._limits import MAX_MESSAGE_BYTES
from kode.mcp.answers import ClientAnswers, ElicitationOption, RootsOption, SamplingOption
from kode.mcp.convert import BlobFiles, kind_from_annotations, tool_result
from kode.mcp.modern import Protocol
from kode.mcp.names import check_server_name, kode_tool_names, server_prefix
from kode.mcp.resources import (
    MCPEvent,
    MCPEventFunc,
    list_prompts,
    list_resources,
    list_templates,
    prompt_messages,
    prompt_text,
    read_result,
    tool_description,
)
from kode.mcp.schemas import clean_remote_schema
from kode.mcp.session import MCPConnectionError, RemoteServer, ServerSpec, split_command
from kode.models.messages import Message
from kode.registries.meta import ToolSource
from kode.registries.tool_registry import ToolRegistry
from kode.registries.tool_registry import registry as global_registry
from kode.tools.context import ToolContext
from kode.tools.declared import DeclaredTool, declare_tool
from kode.tools.dialects import strip_titles
from kode.tools.errors import ToolDefinitionError
from kode.tools.kinds import Kind
from kode.tools.results import ToolResult, text_result

__all__ = ["MCPConnection", "MCPConnectionError", "connect"]


def _patterns(value: Iterable[str] | None, what: str) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str):
        raise TypeError(
            f"{what} must be a list of tool names or patterns, got the string {value!r}"
        )
    return tuple(value)


def _matches(name: str, patterns: Sequence[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


class _Handler:
    """Runs one imported tool: calls it on the server, converts the result."""

    def __init__(
        self, connection: MCPConnection, remote_name: str, kode_name: str, *, as_task: bool = False
    ) -> None:
        self.connection = connection
        self.remote_name = remote_name
        self.kode_name = kode_name
        self.as_task = as_task
        # Part of the tool's identity for the registry: connecting the same server again
        # replaces its tools quietly; another server's tool of the same name is a conflict.
        self.__qualname__ = f"mcp[{connection.name}]"

    async def __call__(self, arguments: dict[str, Any], ctx: ToolContext[Any]) -> ToolResult:
        connection = self.connection
        # An agent closes what its tools used (Agent.aclose closes its services).
        ctx.services.setdefault(f"mcp:{connection.name}", connection)
        result = await connection.remote.call(
            self.remote_name, arguments, ctx, tool_name=self.kode_name, as_task=self.as_task
        )
        return tool_result(result, tool_name=self.kode_name, files=connection.files)


class _ResourceReader:
    """Runs a connection's ``read_resource`` tool."""

    def __init__(self, connection: MCPConnection) -> None:
        self.connection = connection
        self.__qualname__ = f"mcp[{connection.name}]"

    async def __call__(self, arguments: dict[str, Any], ctx: ToolContext[Any]) -> ToolResult:
        ctx.services.setdefault(f"mcp:{self.connection.name}", self.connection)
        return await self.connection.read_resource(str(arguments["uri"]))


class _PromptGetter:
    """Runs a connection's ``get_prompt`` tool."""

    def __init__(self, connection: MCPConnection) -> None:
        self.connection = connection
        self.__qualname__ = f"mcp[{connection.name}]"

    async def __call__(self, arguments: dict[str, Any], ctx: ToolContext[Any]) -> ToolResult:
        ctx.services.setdefault(f"mcp:{self.connection.name}", self.connection)
        args = arguments.get("arguments") or {}
        messages = await self.connection.get_prompt(str(arguments["name"]), args)
        return text_result(prompt_text(messages))


_READ_RESOURCE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"uri": {"type": "string", "description": "The resource's URI."}},
    "required": ["uri"],
    "additionalProperties": False,
}
_GET_PROMPT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "The prompt's name."},
        "arguments": {
            "type": "object",
            "additionalProperties": {"type": "string"},
            "description": "The prompt's arguments, by name.",
        },
    },
    "required": ["name"],
    "additionalProperties": False,
}


class MCPConnection:
    """An MCP server whose tools are registered in kode; made by `connect`.

    Use it in one of three ways:

    - ``async with kode.mcp.connect(...) as server:`` registers the tools, and on exit closes
      the connection and unregisters them;
    - ``server = await kode.mcp.connect(...)`` registers them and keeps them; the connection
      closes with ``await server.aclose()``, or with the agent that used it
      (``Agent.aclose``: a call through an agent adds the connection to its services);
    - ``with kode.mcp.connect(...) as server:`` from sync code (a script).

    A closed connection (or one whose server died) is opened again by the next call of one of
    its tools, so a long-lived registry keeps working.
    """

    def __init__(
        self,
        spec: ServerSpec,
        *,
        include: Sequence[str] | None,
        exclude: Sequence[str],
        trust: bool,
        timeout: float | None,
        registry: ToolRegistry,
        groups: Sequence[str],
        answers: ClientAnswers | None = None,
        tasks: bool = True,
        on_event: MCPEventFunc | None = None,
        resource_tools: bool = False,
        prompt_tools: bool = False,
        files_dir: str | None = None,
    ) -> None:
        self.name = spec.name
        """The server's name in kode: its tools are ``mcp__<name>__<tool>``."""
        self.spec = spec
        """How the server is reached."""
        self.include = include
        """Remote tool names or globs to import (`None`: all)."""
        self.exclude = tuple(exclude)
        """Remote tool names or globs to leave out (wins over `include`)."""
        self.trust = trust
        """Whether the server's annotations are trusted (see the module docstring)."""
        self.timeout = timeout
        """Seconds one call may take (`None`: no limit)."""
        self.registry = registry
        """Where the tools are registered."""
        self.groups = tuple(groups)
        """Groups the tools join (always also ``group:mcp``)."""
        self.tools: dict[str, str] = {}
        """The registered tools: kode name → the server's own name."""
        self.skipped: dict[str, str] = {}
        """Remote tools not registered, and why."""
        self.remote_tools: dict[str, types.Tool] = {}
        """The server's own listing, by its tool names (registered or not)."""
        self.answers = answers
        """How the server's sampling, elicitation and roots requests are answered."""
        self.tasks = tasks
        """Whether tools that need MCP Tasks are called as tasks (and the server's task
        requests answered)."""
        self.on_event = on_event
        """Receives the server's events (`MCPEvent`)."""
        self.resource_tools = resource_tools
        """Whether ``mcp__<name>__read_resource`` is registered (when the server has resources)."""
        self.prompt_tools = prompt_tools
        """Whether ``mcp__<name>__get_prompt`` is registered (when the server has prompts)."""
        self.files = BlobFiles(files_dir)
        """Where binary resources the server sends are saved."""
        self._resources: list[types.Resource] = []
        self._templates: list[types.ResourceTemplate] = []
        self._prompts: list[types.Prompt] = []
        self.remote = RemoteServer(
            spec,
            on_tools_changed=self._register,
            answers=answers,
            tasks=tasks,
            on_event=self._notified,
        )
        """The live connection."""

    def __repr__(self) -> str:
        state = "alive" if self.remote.alive else "closed"
        return f"<MCPConnection {self.name!r} {state}, {len(self.tools)} tools>"

    # --- registration --------------------------------------------------------------------------

    def _wanted(self, remote_name: str) -> bool:
        if self.include is not None and not _matches(remote_name, self.include):
            return False
        return not _matches(remote_name, self.exclude)

    def _declare(self, remote: types.Tool, kode_name: str) -> DeclaredTool:
        read_only = remote.annotations is not None and remote.annotations.read_only_hint is True
        kind: Kind = kind_from_annotations(remote.annotations)
        description = remote.description or (remote.annotations.title if remote.annotations else "")
        task_support = remote.execution.task_support if remote.execution else None
        if task_support == "required" and not self.tasks:
            raise ToolDefinitionError(
                remote.name,
                ["it must be called as an MCP task, and this connection has tasks=False"],
            )
        return declare_tool(
            kode_name,
            description=description or remote.title or "",
            input_schema=clean_remote_schema(remote.input_schema),
            handler=_Handler(self, remote.name, kode_name, as_task=task_support == "required"),
            kind=kind,
            groups=("group:mcp", *self.groups),
            timeout=self.timeout,
            requires_approval=None if self.trust or read_only else True,
            output_schema=strip_titles(remote.output_schema) if remote.output_schema else None,
        )

    def _extra_tools(self, taken: set[str]) -> list[tuple[str, DeclaredTool]]:
        """The connection's own tools (reading resources, getting prompts), when wanted."""
        made: list[tuple[str, DeclaredTool]] = []
        caps = self.remote.capabilities
        prefix = server_prefix(self.name)
        wanted = [
            ("read_resource", self.resource_tools and caps is not None and caps.resources),
            ("get_prompt", self.prompt_tools and caps is not None and caps.prompts),
        ]
        for own, on in wanted:
            if not on:
                continue
            name = prefix + own
            if name.lower() in taken:
                self.skipped[f"({own})"] = f"the server has a tool of the same name, {name!r}"
                continue
            if own == "read_resource":
                tool = declare_tool(
                    name,
                    description=tool_description(
                        "resources", self.name, [*self._resources, *self._templates]
                    ),
                    input_schema=_READ_RESOURCE_SCHEMA,
                    handler=_ResourceReader(self),
                    kind=Kind.READ,
                    groups=("group:mcp", *self.groups),
                    timeout=self.timeout,
                )
            else:
                tool = declare_tool(
                    name,
                    description=tool_description("prompts", self.name, self._prompts),
                    input_schema=_GET_PROMPT_SCHEMA,
                    handler=_PromptGetter(self),
                    kind=Kind.READ,
                    groups=("group:mcp", *self.groups),
                    timeout=self.timeout,
                )
            made.append((own, tool))
        return made

    def _register(self, listing: list[types.Tool]) -> None:
        names = kode_tool_names(self.name, [t.name for t in listing])
        registered: dict[str, str] = {}
        skipped: dict[str, str] = {}
        for remote in listing:
            if not self._wanted(remote.name):
                skipped[remote.name] = "left out by include/exclude"
                continue
            kode_name = names[remote.name]
            try:
                made = self._declare(remote, kode_name)
            except ToolDefinitionError as exc:
                reason = "; ".join(exc.problems)
                skipped[remote.name] = reason
                self.registry.report(
                    "warning",
                    f"MCP tool {remote.name!r} of server {self.name!r} skipped: {reason}",
                    source=ToolSource.MCP,
                )
                continue
            self.registry.register(
                made, source=ToolSource.MCP, server=self.name, remote_name=remote.name
            )
            if self.registry.get(kode_name) is made:  # not skipped for a name taken by another
                registered[kode_name] = remote.name
            else:
                skipped[remote.name] = f"the name {kode_name!r} is taken (see the diagnostics)"
        self.skipped = skipped
        for own, made in self._extra_tools({n.lower() for n in names.values()}):
            self.registry.register(made, source=ToolSource.MCP, server=self.name)
            if self.registry.get(made.name) is made:
                registered[made.name] = f"({own})"
        for gone in set(self.tools) - set(registered):
            self._unregister_one(gone)
        self.tools = registered
        self.remote_tools = {remote.name: remote for remote in listing}

    def _unregister_one(self, name: str) -> None:
        try:
            meta = self.registry.meta(name)
        except KeyError:
            return
        tool = self.registry.get(name)
        owner = getattr(getattr(tool, "handler", None), "connection", None)
        # (the read_resource and get_prompt tools' handlers name their connection too)
        if meta.source is ToolSource.MCP and owner is self:
            self.registry.unregister(name)

    def unregister(self) -> None:
        """Remove this server's tools from the registry (the connection stays as it is)."""
        for name in list(self.tools):
            self._unregister_one(name)
        self.tools = {}

    # --- opening and closing -------------------------------------------------------------------

    def open_sync(self) -> MCPConnection:
        """Start the server, list its tools and register them (blocking); return self.

        Raises:
            MCPConnectionError: the server could not be started or did not answer in time.
        """
        try:
            listing = self.remote.start()
            self._list_extras()
        except BaseException:
            self.remote.stop()  # no thread left behind
            raise
        self._register(listing)
        return self

    def _list_extras(self) -> None:
        """List what the read_resource and get_prompt tools describe (blocking)."""
        caps = self.remote.capabilities
        if caps is None:
            return
        if self.resource_tools and caps.resources:
            self._resources = self.remote.request_sync(list_resources)
            self._templates = self.remote.request_sync(list_templates)
        if self.prompt_tools and caps.prompts:
            self._prompts = self.remote.request_sync(list_prompts)

    async def open(self) -> MCPConnection:
        """`open_sync` without blocking the event loop."""
        return await anyio.to_thread.run_sync(self.open_sync)

    def close_sync(self) -> None:
        """Close the connection (a stdio server process ends); the tools stay registered.

        Files saved from the server's binary resources in a temporary directory are removed.
        """
        try:
            self.remote.stop()
        finally:
            self.files.cleanup()

    async def aclose(self) -> None:
        """`close_sync` without blocking the event loop.

        The next call of one of the tools opens the connection again.
        """
        await anyio.to_thread.run_sync(self.close_sync)

    async def refresh(self) -> dict[str, str]:
        """List the server's tools again and update the registrations; return `tools`.

        The resources and prompts the read_resource and get_prompt tools name are listed again.
        """
        listing = await anyio.to_thread.run_sync(self.remote.list_tools)
        await anyio.to_thread.run_sync(self._list_extras)
        self._register(listing)
        return self.tools

    # --- resources, prompts and events ---------------------------------------------------------

    def _notified(self, kind: str, uri: str | None) -> None:
        """Handle a server's notification (in the connection's loop).

        `on_event` is told; when the resources or prompts changed, the read_resource and
        get_prompt tools describe the new ones (listed from a thread: this loop must not wait
        on itself).
        """
        wanted = (kind == "resources_changed" and self.resource_tools) or (
            kind == "prompts_changed" and self.prompt_tools
        )
        if wanted:
            threading.Thread(
                target=self._describe_again, name=f"kode-mcp-{self.name}-relist", daemon=True
            ).start()
        if self.on_event is not None:
            self.on_event(MCPEvent(server=self.name, kind=kind, uri=uri))  # type: ignore[arg-type]

    def _describe_again(self) -> None:
        try:
            self._list_extras()
            self._register(list(self.remote_tools.values()))
        except Exception as exc:  # the old descriptions stay; the next refresh() tries again
            self.remote.logger.warning("listing %s's resources again failed: %s", self.name, exc)

    async def list_resources(self) -> list[types.Resource]:
        """The server's resources (every page), as MCP ``Resource`` objects.

        Each has ``uri``, ``name``, ``description`` and ``mime_type``.

        Raises:
            MCPError: the server refused (it may have no resources).
        """
        return await self.remote.request(list_resources)

    async def list_resource_templates(self) -> list[types.ResourceTemplate]:
        """The server's resource templates (``uri_template``, ``name``, ...), every page."""
        return await self.remote.request(list_templates)

    async def read_resource(self, uri: str) -> ToolResult:
        """A resource's contents, as a tool result would show them to a model.

        Text stays text; binary contents become images (``image/*``), text (textual types) or
        files saved in `files` and named in the text. ``details`` holds the contents as sent.

        Raises:
            MCPError: the server refused (an unknown URI, ...).
        """
        result = await self.remote.request(lambda session: session.read_resource(uri))
        return read_result(result, self.files)

    async def list_prompts(self) -> list[types.Prompt]:
        """The server's prompts (every page): ``name``, ``description``, ``arguments``."""
        return await self.remote.request(list_prompts)

    async def get_prompt(
        self, name: str, arguments: Mapping[str, str] | None = None
    ) -> list[Message]:
        """A prompt of the server, filled in with `arguments`, as kode messages.

        Raises:
            MCPError: the server refused (an unknown prompt, a missing argument).
        """
        args = {str(k): str(v) for k, v in (arguments or {}).items()}
        result = await self.remote.request(lambda session: session.get_prompt(name, args))
        return prompt_messages(result, self.files)

    async def subscribe(self, uri: str) -> None:
        """Ask the server to say when the resource changes.

        Each change is a ``resource_updated`` `MCPEvent` given to ``on_event``.

        Raises:
            MCPError: the server refused (it may not support subscriptions).
        """
        request = types.SubscribeRequest(params=types.SubscribeRequestParams(uri=uri))
        await self.remote.request(lambda session: session.send_request(request, types.EmptyResult))

    async def unsubscribe(self, uri: str) -> None:
        """Stop the updates `subscribe` asked for."""
        request = types.UnsubscribeRequest(params=types.UnsubscribeRequestParams(uri=uri))
        await self.remote.request(lambda session: session.send_request(request, types.EmptyResult))

    @property
    def alive(self) -> bool:
        """Whether the connection is open and the server running."""
        return self.remote.alive

    @property
    def pattern(self) -> str:
        """The template entry that names every tool of this server: ``mcp__<name>__*``."""
        return f"{server_prefix(self.name)}*"

    def __await__(self) -> Generator[Any, None, MCPConnection]:
        return self.open().__await__()

    async def __aenter__(self) -> MCPConnection:
        return await self.open()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            await self.aclose()
        finally:
            self.unregister()

    def __enter__(self) -> MCPConnection:
        return self.open_sync()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            self.close_sync()
        finally:
            self.unregister()


def connect(
    name: str,
    *,
    command: str | Sequence[str] | None = None,
    url: str | None = None,
    include: Iterable[str] | None = None,
    exclude: Iterable[str] = (),
    trust: bool = False,
    timeout: float | None = 60.0,
    connect_timeout: float = 30.0,
    max_message_bytes: int = MAX_MESSAGE_BYTES,
    protocol: Protocol = "newest",
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    headers: Mapping[str, str] | None = None,
    registry: ToolRegistry | None = None,
    groups: Iterable[str] = (),
    sampling: SamplingOption = "agent",
    elicitation: ElicitationOption = "agent",
    roots: RootsOption = "workspace",
    tasks: bool = True,
    on_event: MCPEventFunc | None = None,
    resource_tools: bool = False,
    prompt_tools: bool = False,
    files_dir: str | None = None,
) -> MCPConnection:
    """Connect to an MCP server and register its tools as ``mcp__<name>__<tool>``.

    Nothing happens until the result is awaited or entered (``await connect(...)``,
    ``async with connect(...)``, ``with connect(...)``): see `MCPConnection`.

    Args:
        name: The server's name in kode (letters, digits, ``-``, single ``_``): tool names
            start with ``mcp__<name>__`` and a template names them all with ``mcp__<name>__*``.
        command: The command that starts a stdio server, e.g.
            ``["uvx", "mcp-server-time"]`` (a string is split like a shell would).
        url: The endpoint of a streamable HTTP server, e.g. ``"http://127.0.0.1:8000/mcp"``.
        include: The server's tool names (or globs) to import; default: all.
        exclude: The server's tool names (or globs) to leave out; wins over `include`.
        trust: Trust the server's annotations: see the module docstring.
        timeout: Seconds one call may take before it is cancelled (`None`: no limit).
        connect_timeout: Seconds to start the server and list its tools.
        max_message_bytes: The longest message read from the server (default 32 MiB): a
            longer answer (a resource, a tool result) fails its call with an error naming
            this limit, without being read into memory; the connection stays usable.
        protocol: Which MCP revision to speak: ``"newest"`` (the newest both sides speak:
            ``server/discover``, else the ``initialize`` handshake) or ``"handshake"`` (the
            handshake revisions only, 2025-11-25 and older).
        env: Environment variables for the command (over PATH, HOME and the other variables
            the SDK passes on; the rest of kode's environment is not inherited).
        cwd: The command's working directory.
        headers: HTTP headers sent with every request to `url` (e.g. authorisation).
        registry: Where to register the tools (default: the global registry).
        groups: Groups the tools join, besides ``group:mcp``.
        sampling: What answers the server's sampling requests: ``"agent"`` (the model of the
            agent whose call is running, once the agent's permission rules allow it: see
            docs/mcp.md), a kode `Model`, an async `SamplingFunc`, or `None` (not offered, so
            the server hides tools that need it).
        elicitation: What answers the server's questions to the user (form and URL modes):
            ``"agent"`` (the calling agent's elicitation function, ``Agent.create(
            elicitation=...)``, or the MCP client of a tool served by ``kode mcp serve``), an
            async `ElicitationFunc`, or `None` (not offered, so the server hides tools that
            need it).
        roots: The directories the server may work in: ``"workspace"`` (the calling agent's
            workspace, else the current directory), a list of paths, or `None` (not offered).
        tasks: Speak MCP Tasks: call tools that require it as tasks, and run the server's
            task requests (`False`: such tools are skipped).
        on_event: Receives the server's `MCPEvent` objects (resource updates after
            `MCPConnection.subscribe`, changed lists); called from the connection's thread.
        resource_tools: Also register ``mcp__<name>__read_resource`` (when the server has
            resources), whose description lists them.
        prompt_tools: Also register ``mcp__<name>__get_prompt`` (when the server has prompts).
        files_dir: Where binary resources the server sends are saved (default: a temporary
            directory removed when the connection closes).

    Raises:
        ValueError: the name is invalid, not exactly one of `command` and `url` is given,
            or `max_message_bytes` is not a whole number greater than 0, or `protocol` is
            neither ``"newest"`` nor ``"handshake"``.
    """
    check_server_name(name)
    if (
        isinstance(max_message_bytes, bool)
        or not isinstance(max_message_bytes, int)
        or max_message_bytes < 1
    ):
        raise ValueError(
            f"MCP server {name!r}: max_message_bytes must be a whole number of bytes greater "
            f"than 0, got {max_message_bytes!r}"
        )
    if (command is None) == (url is None):
        raise ValueError(
            f"MCP server {name!r}: give exactly one of command= (stdio) or url= (HTTP)"
        )
    if protocol not in ("newest", "handshake"):
        raise ValueError(
            f"MCP server {name!r}: protocol must be 'newest' or 'handshake', got {protocol!r}"
        )
    if isinstance(groups, str):
        raise TypeError(f"groups must be a list of group names, got the string {groups!r}")
    spec = ServerSpec(
        name=name,
        command=split_command(command) if command is not None else None,
        url=url,
        env=dict(env) if env is not None else None,
        cwd=str(cwd) if cwd is not None else None,
        headers=dict(headers) if headers is not None else None,
        connect_timeout=connect_timeout,
        max_message_bytes=max_message_bytes,
        protocol=protocol,
    )
    answers = ClientAnswers(
        name, sampling=sampling, elicitation=elicitation, roots=roots, trust=trust
    )
    return MCPConnection(
        spec,
        include=_patterns(include, "include"),
        exclude=_patterns(exclude, "exclude") or (),
        trust=trust,
        timeout=timeout,
        registry=registry if registry is not None else global_registry,
        groups=tuple(groups),
        answers=answers,
        tasks=tasks,
        on_event=on_event,
        resource_tools=resource_tools,
        prompt_tools=prompt_tools,
        files_dir=str(files_dir) if files_dir is not None else None,
    )
