"""kode: define a typed, documented function and it is an LLM agent tool.

The public API is importable from here. Submodules load on first use of a name, so
``import kode`` stays cheap; the names themselves are exactly those in `__all__`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kode.agent import (
        Agent,
        AgentError,
        AgentReply,
        AgentTemplate,
        RunLimitError,
        RunLimits,
        TemplateError,
    )
    from kode.agent.rules import RuleError
    from kode.mcp.errors import MCPConnectionError
    from kode.models import Message, Model, ModelError
    from kode.models.scripted import ScriptError
    from kode.registries import (
        PluginApi,
        PolicyError,
        ToolFactoryContext,
        ToolPolicy,
        ToolRegistry,
        ToolSource,
        define_tool,
        load_plugin,
        load_plugins,
        registry,
        tool,
        tool_factory,
    )
    from kode.registries.deps import DepsSpecError
    from kode.registries.discovery import DiscoveryError
    from kode.sessions.errors import (
        SchemaVersionError,
        SessionConflictError,
        SessionError,
        SessionExistsError,
        SessionLeaseError,
        SessionNotFoundError,
        SessionRecordError,
        StoreError,
        StoreURLError,
    )
    from kode.tools import (
        Image,
        ImageBlock,
        Kind,
        KodeError,
        TextBlock,
        Tool,
        ToolContext,
        ToolDefinitionError,
        ToolError,
        ToolErrorType,
        ToolEvent,
        ToolNotFoundError,
        ToolResult,
        ToolRetry,
        error_result,
        image_result,
        json_result,
        run_sync,
        text_result,
    )
    from kode.tools.declared import declare_tool
    from kode.tools.skills import SkillError
    from kode.tools.workspace import FilePool, Workspace

from kode.version import __version__

_SOURCES: dict[str, str] = {
    "Agent": "kode.agent",
    "AgentError": "kode.agent",
    "AgentReply": "kode.agent",
    "AgentTemplate": "kode.agent",
    "DepsSpecError": "kode.registries.deps",
    "DiscoveryError": "kode.registries.discovery",
    "FilePool": "kode.tools.workspace",
    "Image": "kode.tools",
    "ImageBlock": "kode.tools",
    "Kind": "kode.tools",
    "KodeError": "kode.tools",
    "MCPConnectionError": "kode.mcp.errors",
    "Message": "kode.models",
    "Model": "kode.models",
    "ModelError": "kode.models",
    "PluginApi": "kode.registries",
    "PolicyError": "kode.registries",
    "RuleError": "kode.agent.rules",
    "SchemaVersionError": "kode.sessions.errors",
    "ScriptError": "kode.models.scripted",
    "SessionConflictError": "kode.sessions.errors",
    "SessionError": "kode.sessions.errors",
    "SkillError": "kode.tools.skills",
    "SessionExistsError": "kode.sessions.errors",
    "SessionLeaseError": "kode.sessions.errors",
    "SessionNotFoundError": "kode.sessions.errors",
    "SessionRecordError": "kode.sessions.errors",
    "StoreError": "kode.sessions.errors",
    "StoreURLError": "kode.sessions.errors",
    "TemplateError": "kode.agent",
    "RunLimitError": "kode.agent",
    "RunLimits": "kode.agent",
    "TextBlock": "kode.tools",
    "Tool": "kode.tools",
    "ToolContext": "kode.tools",
    "ToolDefinitionError": "kode.tools",
    "ToolError": "kode.tools",
    "ToolRetry": "kode.tools",
    "ToolErrorType": "kode.tools",
    "ToolEvent": "kode.tools",
    "ToolFactoryContext": "kode.registries",
    "ToolNotFoundError": "kode.tools",
    "ToolPolicy": "kode.registries",
    "ToolRegistry": "kode.registries",
    "ToolResult": "kode.tools",
    "ToolSource": "kode.registries",
    "Workspace": "kode.tools.workspace",
    "declare_tool": "kode.tools.declared",
    "define_tool": "kode.registries",
    "error_result": "kode.tools",
    "image_result": "kode.tools",
    "json_result": "kode.tools",
    "load_plugin": "kode.registries",
    "load_plugins": "kode.registries",
    "registry": "kode.registries",
    "run_sync": "kode.tools",
    "text_result": "kode.tools",
    "tool": "kode.registries",
    "tool_factory": "kode.registries",
}

__all__ = [
    "Agent",
    "AgentError",
    "AgentReply",
    "AgentTemplate",
    "DepsSpecError",
    "DiscoveryError",
    "FilePool",
    "Image",
    "ImageBlock",
    "Kind",
    "KodeError",
    "MCPConnectionError",
    "Message",
    "Model",
    "ModelError",
    "PluginApi",
    "PolicyError",
    "RuleError",
    "RunLimitError",
    "RunLimits",
    "SchemaVersionError",
    "ScriptError",
    "SessionConflictError",
    "SessionError",
    "SessionExistsError",
    "SessionLeaseError",
    "SessionNotFoundError",
    "SessionRecordError",
    "SkillError",
    "StoreError",
    "StoreURLError",
    "TemplateError",
    "TextBlock",
    "Tool",
    "ToolContext",
    "ToolDefinitionError",
    "ToolError",
    "ToolErrorType",
    "ToolEvent",
    "ToolFactoryContext",
    "ToolNotFoundError",
    "ToolPolicy",
    "ToolRegistry",
    "ToolResult",
    "ToolRetry",
    "ToolSource",
    "Workspace",
    "__version__",
    "declare_tool",
    "define_tool",
    "error_result",
    "image_result",
    "json_result",
    "load_plugin",
    "load_plugins",
    "registry",
    "run_sync",
    "text_result",
    "tool",
    "tool_factory",
]


def __getattr__(name: str) -> Any:
    source = _SOURCES.get(name)
    if source is None:
        raise AttributeError(f"module 'kode' has no attribute {name!r}")
    value = getattr(importlib.import_module(source), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
