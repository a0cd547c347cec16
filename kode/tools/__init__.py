"""The tool layer: `Tool`, schema inference, `ToolContext`, results and errors.

`define_tool` and `tool`, which register the tool they make, live in `kode.registries.define`
beside the registry; reading them here still works (they are imported on first use, so
``import kode.tools`` loads nothing of the layer above).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kode.tools.context import ToolContext, ToolEvent
from kode.tools.core import PreparedCall, Tool
from kode.tools.errors import (
    KodeError,
    ToolDefinitionError,
    ToolError,
    ToolErrorType,
    ToolNotFoundError,
    ToolRetry,
)
from kode.tools.invocation import CallDetails, Display
from kode.tools.kinds import Kind
from kode.tools.results import (
    Image,
    ImageBlock,
    TextBlock,
    ToolResult,
    error_result,
    image_result,
    json_result,
    text_result,
)
from kode.tools.sync import run_sync

if TYPE_CHECKING:
    from kode.registries.define import define_tool, tool

# ``kode.tools.tool`` is the decorator, as it has always been, read through __getattr__ below.
# The module of that name (the former home of `Tool`, kept for imports written against it) is
# loaded here, once, and its binding dropped: the import system binds a submodule on its
# package only as it loads it, so no later import binds it over the decorator.
import kode.tools.tool as _former_tool_module

del _former_tool_module
globals().pop("tool", None)

__all__ = [
    "CallDetails",
    "Display",
    "Image",
    "ImageBlock",
    "Kind",
    "KodeError",
    "PreparedCall",
    "TextBlock",
    "Tool",
    "ToolContext",
    "ToolDefinitionError",
    "ToolError",
    "ToolErrorType",
    "ToolEvent",
    "ToolNotFoundError",
    "ToolResult",
    "ToolRetry",
    "define_tool",
    "error_result",
    "image_result",
    "json_result",
    "run_sync",
    "text_result",
    "tool",
]


def __getattr__(name: str) -> Any:
    """`define_tool` and `tool`, kept at this path: they live in `kode.registries.define`."""
    if name in ("define_tool", "tool"):
        from kode.registries.define import define_tool, tool

        return define_tool if name == "define_tool" else tool
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
