"""MCP both ways: serve registered tools to any MCP client, and use any MCP server's tools.

- `serve` (and ``kode mcp serve my_module``) exposes registered tools over stdio or streamable
  HTTP, with their schemas, annotations, progress, log messages and cancellation
  (`kode.mcp.server`); over HTTP, `HTTPAccess` says which hosts and origins are accepted and
  how clients authenticate (`StaticTokenVerifier` for bearer tokens; `kode.mcp.http`);
- `connect` registers an MCP server's tools as ``mcp__<server>__<tool>``, ready for any agent
  whose template names them (`kode.mcp.client`), and answers what the server asks: sampling
  (`kode.mcp.sampling`), elicitation (`kode.mcp.elicitation`), roots and MCP Tasks
  (`kode.mcp.tasks`); its resources, prompts and their updates are read through the
  `MCPConnection` (`kode.mcp.resources`). A served tool's ``ctx.elicit`` and ``ctx.sample``
  reach the client (`kode.mcp.caller`), and its long calls can run as tasks
  (`kode.mcp.served_tasks`).

Both need the official SDK (the extra ``mcp``). Importing `kode` never imports it;
the names here load it on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kode.mcp.client import MCPConnection, connect
    from kode.mcp.errors import MCPConnectionError
    from kode.mcp.http import HTTPAccess, StaticTokenVerifier
    from kode.mcp.server import ToolServer, serve, serve_async

__all__ = [
    "HTTPAccess",
    "MCPConnection",
    "MCPConnectionError",
    "StaticTokenVerifier",
    "ToolServer",
    "connect",
    "serve",
    "serve_async",
]

_SOURCES = {
    "HTTPAccess": "kode.mcp.http",
    "MCPConnection": "kode.mcp.client",
    "MCPConnectionError": "kode.mcp.errors",
    "StaticTokenVerifier": "kode.mcp.http",
    "ToolServer": "kode.mcp.server",
    "connect": "kode.mcp.client",
    "serve": "kode.mcp.server",
    "serve_async": "kode.mcp.server",
}


def __getattr__(name: str) -> Any:
    source = _SOURCES.get(name)
    if source is None:
        raise AttributeError(f"module 'kode.mcp' has no attribute {name!r}")
    try:
        module = importlib.import_module(source)
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.split(".")[0] in ("mcp", "mcp_types"):
            from kode.extras import install_hint

            raise ModuleNotFoundError(
                f"kode.mcp.{name} needs the MCP SDK: {install_hint('mcp')}", name=exc.name
            ) from exc
        raise
    value = getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
