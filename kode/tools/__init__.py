"""The tool layer: `define_tool`, `Tool`, schema inference, `ToolContext`, results and errors."""

from __future__ import annotations

from kode.tools.context import ToolContext, ToolEvent
from kode.tools.define import define_tool, tool
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
from kode.tools.tool import PreparedCall, Tool

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
