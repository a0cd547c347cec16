"""Tool registries: registering decorators, sources, factories, plugins, policy, resolution."""

from __future__ import annotations

from kode.registries.define import define_tool, tool
from kode.registries.factories import ToolFactoryContext, ToolFactoryFunc, tool_factory
from kode.registries.meta import Diagnostic, ToolMeta, ToolSource
from kode.registries.plugins import PluginApi, PluginReport, load_plugin, load_plugins
from kode.registries.policy import BUILTIN_PROFILES, PolicyError, ToolPolicy
from kode.registries.registry import RegisteredTool, ToolRegistry, normalize_name, registry
from kode.registries.resolve import Exclusion, Resolution, UnmatchedEntry

__all__ = [
    "BUILTIN_PROFILES",
    "Diagnostic",
    "Exclusion",
    "PluginApi",
    "PluginReport",
    "PolicyError",
    "RegisteredTool",
    "Resolution",
    "ToolFactoryContext",
    "ToolFactoryFunc",
    "ToolMeta",
    "ToolPolicy",
    "ToolRegistry",
    "ToolSource",
    "UnmatchedEntry",
    "define_tool",
    "load_plugin",
    "load_plugins",
    "normalize_name",
    "registry",
    "tool",
    "tool_factory",
]
