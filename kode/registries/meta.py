"""What a registry knows about each tool besides the tool: its source, groups, and diagnostics.

This module owns `ToolSource`, `ToolMeta` and `Diagnostic`, the records that let a registry
explain where every tool came from and why anything was skipped. It holds no behaviour.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

from kode.tools.kinds import Kind

__all__ = ["SOURCE_ORDER", "Diagnostic", "DiagnosticLevel", "ToolMeta", "ToolSource"]


class ToolSource(StrEnum):
    """Where a registered tool came from."""

    CORE = "core"
    """kode's own built-in tools."""
    USER = "user"
    """Defined with `define_tool` in application code."""
    PLUGIN = "plugin"
    """Registered by a plugin (see `ToolMeta.plugin_id`)."""
    DISCOVERED = "discovered"
    """Declared by a discovery command and run by a call command."""
    MCP = "mcp"
    """Imported from an MCP server (see `ToolMeta.server`)."""
    CLIENT = "client"
    """Declared by schema only; the caller executes it."""


SOURCE_ORDER: dict[ToolSource, int] = {source: i for i, source in enumerate(ToolSource)}
"""The order in which resolved tools are listed: core, user, plugin, discovered, mcp, client."""

DiagnosticLevel = Literal["info", "warning", "error"]
"""How serious a diagnostic is."""


@dataclass(kw_only=True, frozen=True, slots=True)
class ToolMeta:
    """Everything a registry records about one tool name."""

    name: str
    """The tool's name."""
    source: ToolSource
    """Where it came from."""
    plugin_id: str | None = None
    """The plugin that registered it, for `ToolSource.PLUGIN`."""
    server: str | None = None
    """The MCP server it came from, for `ToolSource.MCP`."""
    remote_name: str | None = None
    """The tool's own name on its server or command, when kode renamed it."""
    optional: bool = False
    """Whether it is left out unless named explicitly."""
    groups: tuple[str, ...] = ()
    """The groups it belongs to, including implicit ones (``group:plugins``, the plugin id)."""
    kind: Kind = Kind.OTHER
    """What it does to the world."""
    aliases: tuple[str, ...] = ()
    """Other names that reach it."""
    factory: bool = False
    """Whether it is made per context by a factory."""
    defer_loading: bool = False
    """Whether an agent sends its definition only once ``tool_search`` has found it."""


@dataclass(kw_only=True, frozen=True, slots=True)
class Diagnostic:
    """Something a registry decided on its own: a skipped tool, a blocked plugin, a typo."""

    level: DiagnosticLevel
    """``info``, ``warning`` or ``error``."""
    source: ToolSource | None
    """The source involved, if one is."""
    plugin_id: str | None
    """The plugin involved, if one is."""
    message: str
    """What happened and what to do about it."""

    def __str__(self) -> str:
        who = f" [{self.plugin_id}]" if self.plugin_id else ""
        return f"{self.level}{who}: {self.message}"
