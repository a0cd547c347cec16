"""The MCP side's exception, importable without the MCP SDK.

This module owns `MCPConnectionError`, so that ``except kode.MCPConnectionError`` works in a
program that does not install the ``mcp`` extra. It does not raise it: `kode.mcp.session` does.
"""

from __future__ import annotations

from kode.tools.errors import KodeError

__all__ = ["MCPConnectionError"]


class MCPConnectionError(KodeError):
    """An MCP server could not be started, reached or initialised."""
