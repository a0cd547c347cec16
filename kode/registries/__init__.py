"""Tool registries: registering decorators, sources, factories, plugins, policy, resolution."""

from __future__ import annotations

from typing import TYPE_CHECKING

# ``kode.registries.registry`` is the global registry, bound below. The module of that name (the
# former home of `ToolRegistry`, kept for imports written against it) is loaded first: the
# import system binds a submodule on its package only as it loads it, so no later import binds
# it over the registry. (A type checker, which would read this import as binding the module
# here, is not shown it.)
if not TYPE_CHECKING:
    import kode.registries.registry as _former_registry_module

from kode.registries.define import define_tool, tool
from kode.registries.factories import ToolFactoryContext, ToolFactoryFunc, tool_factory
from kode.registries.meta import Diagnostic, ToolMeta, ToolSource
from kode.registries.plugins import PluginApi, PluginReport, load_plugin, load_plugins
from kode.registries.policy import BUILTIN_PROFILES, PolicyError, ToolPolicy
from kode.registries.resolve import Exclusion, Resolution, UnmatchedEntry
from kode.registries.tool_registry import RegisteredTool, ToolRegistry, normalize_name, registry

if not TYPE_CHECKING:
    del _former_registry_module

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
