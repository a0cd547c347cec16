"""``tool_result`` blocks: a `ToolResult` as the conversation holds it.

This module owns the conversion of a tool's result into the ``tool_result`` block the history
keeps (with text that can always be encoded, see `kode.agent.text`), and the blocks that
answer a call that did not run to its end.
"""

from __future__ import annotations

from kode.agent.text import clean_text
from kode.models.messages import ImageContent, TextContent, ToolResultContent, ToolUseContent
from kode.tools.errors import ToolErrorType
from kode.tools.results import TextBlock, ToolResult, error_result

__all__ = ["cancelled_result", "interrupted_result", "result_block"]


def result_block(call_id: str, result: ToolResult) -> ToolResultContent:
    """The ``tool_result`` block answering `call_id` with `result`."""
    content: list[TextContent | ImageContent] = []
    for block in result.content:
        if isinstance(block, TextBlock):
            content.append(TextContent(text=clean_text(block.text)))
        else:
            content.append(ImageContent.model_validate(block.to_dict()))
    return ToolResultContent(tool_use_id=call_id, content=content, is_error=result.is_error)


def cancelled_result(call: ToolUseContent) -> ToolResultContent:
    """The ``tool_result`` answering a call the run was interrupted before it finished."""
    return result_block(
        call.id,
        error_result(
            f"Tool '{call.name}' was cancelled: the run was interrupted before it finished.",
            type=ToolErrorType.CANCELLED,
        ),
    )


def interrupted_result(call: ToolUseContent) -> ToolResultContent:
    """The ``tool_result`` of a call that was running when its process stopped (resume).

    Its tool neither only reads nor is idempotent, so it is not run again.
    """
    return result_block(
        call.id,
        error_result(
            f"Tool '{call.name}' was interrupted by a restart while it ran, and was not run "
            "again: it may have partly run. Check what it was doing before calling it again.",
            type=ToolErrorType.EXECUTION_FAILED,
        ),
    )
