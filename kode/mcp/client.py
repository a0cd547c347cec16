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
from collections.abc import Generator, Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any

import anyio.to_thread
import mcp_types as types

from kode.mcp.convert import kind_from_annotations, tool_result
from kode.mcp.names import check_server_name, kode_tool_names, server_prefix
from kode.mcp.schemas import clean_remote_schema
from kode.mcp.session import MCPConnectionError, RemoteServer, ServerSpec, split_command
from kode.registries.meta import ToolSource
from kode.registries.registry import ToolRegistry
from kode.registries.registry import registry as global_registry
from kode.tools.context import ToolContext
from kode.tools.declared import DeclaredTool, declare_tool
from kode.tools.dialects import strip_titles
from kode.tools.errors import ToolDefinitionError
from kode.tools.kinds import Kind
from kode.tools.results import ToolResult

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

    def __init__(self, connection: MCPConnection, remote_name: str, kode_name: str) -> None:
        self.connection = connection
        self.remote_name = remote_name
        self.kode_name = kode_name
        # Part of the tool's identity for the registry: connecting the same server again
        # replaces its tools quietly; another server's tool of the same name is a conflict.
        self.__qualname__ = f"mcp[{connection.name}]"

    async def __call__(self, arguments: dict[str, Any], ctx: ToolContext[Any]) -> ToolResult:
        connection = self.connection
        # An agent closes what its tools used (Agent.aclose closes its services).
        ctx.services.setdefault(f"mcp:{connection.name}", connection)
        result = await connection.remote.call(
            self.remote_name, arguments, ctx, tool_name=self.kode_name
        )
        return tool_result(result, tool_name=self.kode_name)


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
        self.remote = RemoteServer(spec, on_tools_changed=self._register)
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
        return declare_tool(
            kode_name,
            description=description or remote.title or "",
            input_schema=clean_remote_schema(remote.input_schema),
            handler=_Handler(self, remote.name, kode_name),
            kind=kind,
            groups=("group:mcp", *self.groups),
            timeout=self.timeout,
            requires_approval=None if self.trust or read_only else True,
            output_schema=strip_titles(remote.output_schema) if remote.output_schema else None,
        )

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
        for gone in set(self.tools) - set(registered):
            self._unregister_one(gone)
        self.tools = registered
        self.skipped = skipped
        self.remote_tools = {remote.name: remote for remote in listing}

    def _unregister_one(self, name: str) -> None:
        try:
            meta = self.registry.meta(name)
        except KeyError:
            return
        tool = self.registry.get(name)
        owner = getattr(getattr(tool, "handler", None), "connection", None)
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
        except BaseException:
            self.remote.stop()  # no thread left behind
            raise
        self._register(listing)
        return self

    async def open(self) -> MCPConnection:
        """`open_sync` without blocking the event loop."""
        return await anyio.to_thread.run_sync(self.open_sync)

    def close_sync(self) -> None:
        """Close the connection (a stdio server process ends); the tools stay registered."""
        self.remote.stop()

    async def aclose(self) -> None:
        """`close_sync` without blocking the event loop.

        The next call of one of the tools opens the connection again.
        """
        await anyio.to_thread.run_sync(self.remote.stop)

    async def refresh(self) -> dict[str, str]:
        """List the server's tools again and update the registrations; return `tools`."""
        listing = await anyio.to_thread.run_sync(self.remote.list_tools)
        self._register(listing)
        return self.tools

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
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    headers: Mapping[str, str] | None = None,
    registry: ToolRegistry | None = None,
    groups: Iterable[str] = (),
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
        env: Environment variables for the command (over PATH, HOME and the other variables
            the SDK passes on; the rest of kode's environment is not inherited).
        cwd: The command's working directory.
        headers: HTTP headers sent with every request to `url` (e.g. authorisation).
        registry: Where to register the tools (default: the global registry).
        groups: Groups the tools join, besides ``group:mcp``.

    Raises:
        ValueError: the name is invalid, or not exactly one of `command` and `url` is given.
    """
    check_server_name(name)
    if (command is None) == (url is None):
        raise ValueError(
            f"MCP server {name!r}: give exactly one of command= (stdio) or url= (HTTP)"
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
    )
    return MCPConnection(
        spec,
        include=_patterns(include, "include"),
        exclude=_patterns(exclude, "exclude") or (),
        trust=trust,
        timeout=timeout,
        registry=registry if registry is not None else global_registry,
        groups=tuple(groups),
    )
