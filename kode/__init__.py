"""kode: define a typed, documented function and it is an LLM agent tool.

The public API is importable from here. Submodules load on first use of a name, so
``import kode`` stays cheap; the names themselves are exactly those in `__all__`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kode.registries import ToolRegistry, registry
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
        define_tool,
        error_result,
        image_result,
        json_result,
        run_sync,
        text_result,
        tool,
    )

__version__ = "0.1.0"

_SOURCES: dict[str, str] = {
    "Image": "kode.tools",
    "ImageBlock": "kode.tools",
    "Kind": "kode.tools",
    "KodeError": "kode.tools",
    "TextBlock": "kode.tools",
    "Tool": "kode.tools",
    "ToolContext": "kode.tools",
    "ToolDefinitionError": "kode.tools",
    "ToolError": "kode.tools",
    "ToolErrorType": "kode.tools",
    "ToolEvent": "kode.tools",
    "ToolNotFoundError": "kode.tools",
    "ToolRegistry": "kode.registries",
    "ToolResult": "kode.tools",
    "define_tool": "kode.tools",
    "error_result": "kode.tools",
    "image_result": "kode.tools",
    "json_result": "kode.tools",
    "registry": "kode.registries",
    "run_sync": "kode.tools",
    "text_result": "kode.tools",
    "tool": "kode.tools",
}

__all__ = [
    "Image",
    "ImageBlock",
    "Kind",
    "KodeError",
    "TextBlock",
    "Tool",
    "ToolContext",
    "ToolDefinitionError",
    "ToolError",
    "ToolErrorType",
    "ToolEvent",
    "ToolNotFoundError",
    "ToolRegistry",
    "ToolResult",
    "__version__",
    "define_tool",
    "error_result",
    "image_result",
    "json_result",
    "registry",
    "run_sync",
    "text_result",
    "tool",
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
