"""Translation of kode's messages into Gemini ``contents`` (the Gemini API's JSON form).

This module owns `to_gemini_contents`, a pure function at the Gemini edge: it does no I/O and
imports no SDK; streaming responses are assembled by `kode.models.gemini`.

The formats differ; these are the choices made where they do:

- **Roles.** ``assistant`` becomes ``model``; ``user`` stays. A message left with no part
  (say, only thinking from another provider) is not sent, since Gemini refuses empty contents.
- **Text and images.** A text block is a ``{"text"}`` part (an empty one is not sent); an image
  is an ``{"inlineData": {"mimeType", "data"}}`` part.
- **Tool calls.** A ``tool_use`` becomes ``{"functionCall": {"id", "name", "args"}}``. An input
  kept as a string (the model sent something that is not a JSON object) is sent as
  ``{"_invalid_json": "<the text>"}`` (`RAW_INPUT_KEY`), since ``args`` is an object.
- **Tool results.** A ``tool_result`` becomes ``{"functionResponse": {"id", "name",
  "response"}}``, named after the call it answers (looked up by id in the conversation).
  ``response`` is ``{"output": ...}``, or ``{"error": ...}`` when the result is an error, as
  Gemini's documentation asks. The value is the result's text; a result that is one JSON
  object or array (what `json_result` makes) is sent as that JSON value. An image in a result
  goes into the function response's own ``parts`` (``inlineData``), which Gemini 3 models read.
- **Thinking and thought signatures.** Gemini signs its reasoning with *thought signatures*
  carried on response parts, which must come back on the same parts. kode keeps one as a
  `ThinkingContent` with ``provider="gemini"``: with its thought text (a thought summary), it
  is sent as ``{"text", "thought": true, "thoughtSignature"}``; with empty text, its signature
  belongs to the next part (a function call, a text), or to an empty text part when nothing
  follows. Thinking from other providers is not sent.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from kode.models.messages import (
    ContentBlock,
    ImageContent,
    Message,
    TextContent,
    ThinkingContent,
    ToolResultContent,
    ToolUseContent,
)
from kode.models.translate import RAW_INPUT_KEY

__all__ = ["GEMINI", "UNKNOWN_TOOL_NAME", "to_gemini_contents"]

GEMINI = "gemini"
"""The `ThinkingContent.provider` of Gemini's thought signatures."""

UNKNOWN_TOOL_NAME = "unknown_tool"
"""The name a function response gets when no call in the conversation has its id."""


def to_gemini_contents(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Translate kode messages into the ``contents`` of a Gemini ``generateContent`` request.

    Args:
        messages: The conversation, in kode's Anthropic-style form.

    Returns:
        JSON-ready dicts (the API's own camelCase names); see the module's notes for what is
        changed or left out.
    """
    names: dict[str, str] = {}
    out: list[dict[str, Any]] = []
    for message in messages:
        parts = _parts(message.content, names)
        if parts:
            out.append({"role": "model" if message.role == "assistant" else "user", "parts": parts})
    return out


def _parts(blocks: Sequence[ContentBlock], names: dict[str, str]) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    signature: str | None = None  # a signature waiting for the next part
    for block in blocks:
        part: dict[str, Any] | None = None
        if isinstance(block, ThinkingContent):
            if block.provider != GEMINI or not (block.thinking or block.signature):
                continue
            if not block.thinking:
                signature = block.signature
                continue
            part = {"text": block.thinking, "thought": True}
            if block.signature:
                part["thoughtSignature"] = block.signature
        elif isinstance(block, TextContent):
            if block.text:
                part = {"text": block.text}
        elif isinstance(block, ImageContent):
            part = {"inlineData": {"mimeType": block.source.media_type, "data": block.source.data}}
        elif isinstance(block, ToolUseContent):
            names[block.id] = block.name
            args = block.input if isinstance(block.input, dict) else {RAW_INPUT_KEY: block.input}
            part = {"functionCall": {"id": block.id, "name": block.name, "args": args}}
        elif isinstance(block, ToolResultContent):
            part = {"functionResponse": _function_response(block, names)}
        if part is None:
            continue
        if signature is not None:
            part.setdefault("thoughtSignature", signature)
            signature = None
        parts.append(part)
    if signature is not None:
        parts.append({"text": "", "thoughtSignature": signature})
    return parts


def _function_response(result: ToolResultContent, names: dict[str, str]) -> dict[str, Any]:
    texts = [b.text for b in result.content if isinstance(b, TextContent)]
    images = [b for b in result.content if isinstance(b, ImageContent)]
    value: Any = "\n".join(texts)
    if len(texts) == 1 and texts[0][:1] in ("{", "["):
        try:
            value = json.loads(texts[0])
        except (ValueError, RecursionError):
            pass
    response: dict[str, Any] = {
        "id": result.tool_use_id,
        "name": names.get(result.tool_use_id, UNKNOWN_TOOL_NAME),
        "response": {"error" if result.is_error else "output": value},
    }
    if images:
        response["parts"] = [
            {"inlineData": {"mimeType": image.source.media_type, "data": image.source.data}}
            for image in images
        ]
    return response
