"""Translation of kode's messages into OpenAI Responses API ``input`` items.

This module owns `to_responses_input`, a pure function at the Responses edge: it does no I/O
and imports no SDK; streaming responses are assembled by `kode.models.openai_responses`.

The conversation is sent whole with every request (``store: false``, the API keeps nothing),
so nothing refers to an item the server would have to remember: no item carries an ``id``.
Where kode's messages and the items differ, these are the choices made:

- **Messages.** A user message's text and images become one ``{"role": "user"}`` message
  (``content`` a string for a lone text, else ``input_text`` / ``input_image`` parts, the image
  as a ``data:`` URL); each assistant text block becomes ``{"role": "assistant", "content"}``.
  Empty text is not sent.
- **Tool calls.** A ``tool_use`` becomes a ``function_call`` item (``call_id`` its id,
  ``arguments`` compact JSON; an input kept as a string is sent as that string unchanged).
- **Tool results.** A ``tool_result`` becomes a ``function_call_output`` item, in order, before
  whatever else the user message held. ``output`` is the text; a result with images is a list
  of ``input_text`` / ``input_image`` parts. The items have no error flag: the text of an error
  result starts with ``"Error: "`` (`ERROR_PREFIX`), as in Chat Completions.
- **Reasoning.** A `ThinkingContent` with ``provider="openai"`` is a reasoning item the API
  returned: it goes back as ``{"type": "reasoning", "summary", "encrypted_content"}`` (its text
  the summary, its signature the encrypted content), in its place, so the model continues its
  own reasoning. Thinking from other providers, and a reasoning item without encrypted content,
  is not sent.
- **Hosted tool search.** A `ProviderContent` with ``provider="openai"`` is an output item the
  API returned (``tool_search_call``, ``tool_search_output``): it goes back in its place,
  without its ``id`` (and ``created_by``). Other providers' blocks are not sent.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from kode.models.messages import (
    ContentBlock,
    ImageContent,
    Message,
    ProviderContent,
    TextContent,
    ThinkingContent,
    ToolResultContent,
    ToolUseContent,
)
from kode.models.translate import ERROR_PREFIX

__all__ = ["OPENAI", "to_responses_input"]

OPENAI = "openai"
"""The `ThinkingContent.provider` of OpenAI Responses reasoning items."""


def to_responses_input(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Translate kode messages into the ``input`` of a Responses API request.

    Args:
        messages: The conversation, in kode's Anthropic-style form.

    Returns:
        JSON-ready item dicts; see the module's notes for what is changed or left out.
    """
    out: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "assistant":
            out.extend(_assistant(message.content))
        else:
            out.extend(_user(message.content))
    return out


def _assistant(blocks: Sequence[ContentBlock]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for block in blocks:
        if isinstance(block, ThinkingContent):
            if block.provider == OPENAI and block.signature:
                text = block.thinking
                summary = [{"type": "summary_text", "text": text}] if text else []
                out.append(
                    {
                        "type": "reasoning",
                        "summary": summary,
                        "encrypted_content": block.signature,
                    }
                )
        elif isinstance(block, TextContent):
            if block.text:
                out.append({"role": "assistant", "content": block.text})
        elif isinstance(block, ProviderContent):
            if block.provider == OPENAI:
                out.append({k: v for k, v in block.data.items() if k not in ("id", "created_by")})
        elif isinstance(block, ToolUseContent):
            out.append(
                {
                    "type": "function_call",
                    "call_id": block.id,
                    "name": block.name,
                    "arguments": _arguments(block.input),
                }
            )
    return out


def _user(blocks: Sequence[ContentBlock]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        {"type": "function_call_output", "call_id": b.tool_use_id, "output": _output(b)}
        for b in blocks
        if isinstance(b, ToolResultContent)
    ]
    rest: list[TextContent | ImageContent] = [
        b for b in blocks if isinstance(b, ImageContent) or (isinstance(b, TextContent) and b.text)
    ]
    if rest or not out:
        content: str | list[dict[str, Any]]
        if not rest:
            content = ""
        elif len(rest) == 1 and isinstance(rest[0], TextContent):
            content = rest[0].text
        else:
            content = [_part(b) for b in rest]
        out.append({"role": "user", "content": content})
    return out


def _part(block: TextContent | ImageContent) -> dict[str, Any]:
    if isinstance(block, TextContent):
        return {"type": "input_text", "text": block.text}
    url = f"data:{block.source.media_type};base64,{block.source.data}"
    return {"type": "input_image", "image_url": url}


def _output(result: ToolResultContent) -> str | list[dict[str, Any]]:
    parts: list[TextContent | ImageContent] = list(result.content)
    if result.is_error:
        first = parts[0] if parts else None
        if isinstance(first, TextContent):
            parts[0] = TextContent(text=ERROR_PREFIX + first.text)
        else:
            parts.insert(0, TextContent(text=ERROR_PREFIX.rstrip()))
    if not any(isinstance(p, ImageContent) for p in parts):
        return "\n".join(p.text for p in parts if isinstance(p, TextContent))
    return [_part(p) for p in parts]


def _arguments(value: dict[str, Any] | str) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
