"""Translation between kode's messages and the OpenAI Chat Completions message format.

This module owns the two pure functions at the OpenAI edge: `to_openai_messages` turns a system
prompt and kode's Anthropic-style messages into Chat Completions messages, and
`from_openai_messages` turns Chat Completions messages back. It does no I/O and imports no SDK;
streaming responses are assembled by `kode.models.openai`.

The formats differ; these are the choices made where they do (``to`` is kode → OpenAI):

- **System prompt.** ``to``: a non-empty prompt becomes the first message,
  ``{"role": "system"}``. ``from``: every ``system`` and ``developer`` message is collected, in
  order, into the system prompt (joined with a blank line); where it stood is not kept.
- **Content.** No block → ``""``; exactly one text block → a string; anything else → a list of
  parts (``text``; an image becomes ``image_url`` with a ``data:`` URL). ``from`` inverts this
  exactly (``""`` → no block). Only ``data:`` image URLs come back; a remote image URL or another
  part type (audio, file) is a `ValueError`, since kode's images are base64 data.
- **Tool calls.** An assistant ``tool_use`` becomes an entry of ``tool_calls`` with
  ``function.arguments`` as compact JSON. An input kept as a string (the model sent text that is
  not a JSON object) is sent as that string unchanged. ``from`` parses the arguments: a JSON object
  becomes a dict, empty arguments become ``{}``, anything else stays the raw string. Chat
  Completions puts text before tool calls, so an assistant message is text blocks, then tool calls:
  text written after a ``tool_use`` moves before it. With tool calls and no text, ``content`` is
  ``null``.
- **Tool results.** Each ``tool_result`` becomes its own ``{"role": "tool", "tool_call_id": ...}``
  message, in the original order, before whatever else the user message held (which follows as a
  ``user`` message). Tool messages carry text only: an image in a result becomes the text note
  ``[image/png image omitted: tool results in Chat Completions carry text only]``. Chat
  Completions has no error flag: the text of a result with ``is_error`` starts with
  ``ERROR_PREFIX`` (``"Error: "``), and ``from`` reads that prefix back as ``is_error``.
  ``from`` gathers consecutive tool messages, and a user message right after them, into one
  user message, which is the form Anthropic (and kode's agent loop) uses.
- **Thinking.** Chat Completions has no place for reasoning: ``thinking`` blocks are dropped.
- **Refusals.** ``from`` reads an assistant ``refusal`` (field or content part) as text.

With these rules ``from_openai_messages(to_openai_messages(messages, system=s))`` gives back
``s`` and the same messages, for messages in the form kode's agent loop produces (no thinking, no
images in tool results, assistant text before tool calls, no non-error result starting with
``"Error: "``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from kode.models.messages import (
    ContentBlock,
    ImageContent,
    ImageSource,
    Message,
    TextContent,
    ToolResultContent,
    ToolUseContent,
)

__all__ = [
    "ERROR_PREFIX",
    "RAW_INPUT_KEY",
    "OpenAIHistory",
    "from_openai_messages",
    "parse_arguments",
    "to_openai_messages",
]

ERROR_PREFIX = "Error: "
"""Starts the text of a tool message that answers a failed call (Chat Completions has no flag)."""

RAW_INPUT_KEY = "_invalid_json"
"""The key under which a string tool input is sent back to an API that takes only objects."""

_DATA_URL = re.compile(r"data:(?P<media_type>[^;,]+);base64,(?P<data>.*)", re.DOTALL)


class OpenAIHistory(NamedTuple):
    """A conversation read from Chat Completions messages."""

    system: str
    """The system prompt (``system`` and ``developer`` messages joined by a blank line)."""
    messages: list[Message]
    """The rest, as kode messages."""


# --- kode → OpenAI ----------------------------------------------------------------------------


def to_openai_messages(messages: Sequence[Message], *, system: str = "") -> list[dict[str, Any]]:
    """Translate kode messages (and a system prompt) into Chat Completions messages.

    Args:
        messages: The conversation, in kode's Anthropic-style form.
        system: The system prompt; sent as the first message when not empty.

    Returns:
        The ``messages`` list of a Chat Completions request, as plain JSON-ready dicts.
    """
    out: list[dict[str, Any]] = []
    if system:
        out.append({"role": "system", "content": system})
    for message in messages:
        if message.role == "assistant":
            out.append(_assistant_to_openai(message.content))
        else:
            out.extend(_user_to_openai(message.content))
    return out


def _assistant_to_openai(blocks: Sequence[ContentBlock]) -> dict[str, Any]:
    texts = [b for b in blocks if isinstance(b, TextContent)]
    calls = [
        {
            "id": b.id,
            "type": "function",
            "function": {"name": b.name, "arguments": _arguments(b.input)},
        }
        for b in blocks
        if isinstance(b, ToolUseContent)
    ]
    message: dict[str, Any] = {"role": "assistant"}
    if calls and not texts:
        message["content"] = None
    else:
        message["content"] = _content(texts)
    if calls:
        message["tool_calls"] = calls
    return message


def _user_to_openai(blocks: Sequence[ContentBlock]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        {"role": "tool", "tool_call_id": b.tool_use_id, "content": _tool_content(b)}
        for b in blocks
        if isinstance(b, ToolResultContent)
    ]
    rest = [b for b in blocks if isinstance(b, TextContent | ImageContent)]
    if rest or not out:
        out.append({"role": "user", "content": _content(rest)})
    return out


def _content(blocks: Sequence[TextContent | ImageContent]) -> str | list[dict[str, Any]]:
    if not blocks:
        return ""
    if len(blocks) == 1 and isinstance(blocks[0], TextContent):
        return blocks[0].text
    return [_part(b) for b in blocks]


def _part(block: TextContent | ImageContent) -> dict[str, Any]:
    if isinstance(block, TextContent):
        return {"type": "text", "text": block.text}
    url = f"data:{block.source.media_type};base64,{block.source.data}"
    return {"type": "image_url", "image_url": {"url": url}}


def _tool_content(result: ToolResultContent) -> str | list[dict[str, Any]]:
    texts = [
        b.text
        if isinstance(b, TextContent)
        else f"[{b.source.media_type} image omitted: tool results in Chat Completions "
        "carry text only]"
        for b in result.content
    ]
    if result.is_error:
        texts = [ERROR_PREFIX + texts[0], *texts[1:]] if texts else [ERROR_PREFIX.rstrip()]
    if not texts:
        return ""
    if len(texts) == 1:
        return texts[0]
    return [{"type": "text", "text": t} for t in texts]


def _arguments(value: dict[str, Any] | str) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


# --- OpenAI → kode ----------------------------------------------------------------------------


def parse_arguments(arguments: str) -> dict[str, Any] | str:
    """Read a tool call's ``arguments`` string the way kode keeps tool input.

    Args:
        arguments: The JSON text the model wrote.

    Returns:
        The object as a dict; ``{}`` for empty (or blank) arguments; the text unchanged when it
        is not JSON, not a JSON object or nested too deeply to read, so the agent can answer
        with a precise error.
    """
    if not arguments.strip():
        return {}
    try:
        value = json.loads(arguments)
    except (ValueError, RecursionError):  # not JSON, or nested too deeply to read
        return arguments
    return value if isinstance(value, dict) else arguments


def from_openai_messages(messages: Iterable[Mapping[str, Any]]) -> OpenAIHistory:
    """Translate Chat Completions messages into a system prompt and kode messages.

    Args:
        messages: Chat Completions messages (plain dicts, as sent in a request).

    Returns:
        The system prompt and the conversation.

    Raises:
        ValueError: a message kode cannot represent: an unknown role, a remote image URL, or a
            content part other than text, refusal and ``data:`` image URLs.
    """
    system: list[str] = []
    out: list[Message] = []
    after_tool = False  # the last message appended answers tool calls
    for raw in messages:
        role = raw.get("role")
        if role in ("system", "developer"):
            system.append(_text_of(raw.get("content")))
            continue
        if role == "assistant":
            out.append(Message(role="assistant", content=_assistant_blocks(raw)))
            after_tool = False
        elif role == "tool":
            block = _tool_result(raw)
            if after_tool:
                out[-1].content.append(block)
            else:
                out.append(Message(role="user", content=[block]))
            after_tool = True
        elif role == "user":
            blocks = _blocks(raw.get("content"))
            if after_tool:
                out[-1].content.extend(blocks)
            else:
                out.append(Message(role="user", content=blocks))
            after_tool = False
        else:
            raise ValueError(
                f"Chat Completions message with role {role!r} cannot be translated: "
                "kode reads system, developer, user, assistant and tool messages"
            )
    return OpenAIHistory(system="\n\n".join(system), messages=out)


def _assistant_blocks(raw: Mapping[str, Any]) -> list[ContentBlock]:
    blocks = _blocks(raw.get("content"))
    refusal = raw.get("refusal")
    if refusal:
        blocks.append(TextContent(text=refusal))
    for call in raw.get("tool_calls") or ():
        function = call.get("function") or {}
        blocks.append(
            ToolUseContent(
                id=str(call.get("id") or ""),
                name=function.get("name", ""),
                input=parse_arguments(function.get("arguments") or ""),
            )
        )
    return blocks


def _tool_result(raw: Mapping[str, Any]) -> ToolResultContent:
    content = raw.get("content")
    texts = [content] if isinstance(content, str) else [_part_text(p) for p in content or ()]
    is_error = bool(texts) and (
        texts[0].startswith(ERROR_PREFIX) or texts[0] == ERROR_PREFIX.rstrip()
    )
    if is_error:
        texts[0] = texts[0][len(ERROR_PREFIX) :]
    if texts == [""]:
        texts = []
    return ToolResultContent(
        tool_use_id=str(raw.get("tool_call_id", "")),
        content=[TextContent(text=t) for t in texts],
        is_error=is_error,
    )


def _blocks(content: Any) -> list[ContentBlock]:
    if content is None or content == "":
        return []
    if isinstance(content, str):
        return [TextContent(text=content)]
    return [_block(part) for part in content]


def _block(part: Mapping[str, Any]) -> TextContent | ImageContent:
    kind = part.get("type")
    if kind == "image_url":
        url = str((part.get("image_url") or {}).get("url", ""))
        match = _DATA_URL.fullmatch(url)
        if match is None:
            raise ValueError(
                f"image URL {url[:60]!r} cannot be translated: kode keeps images as base64 "
                "data, so only data: URLs are read"
            )
        return ImageContent(source=ImageSource(media_type=match["media_type"], data=match["data"]))
    return TextContent(text=_part_text(part))


def _part_text(part: Mapping[str, Any]) -> str:
    kind = part.get("type")
    if kind == "text":
        return str(part.get("text", ""))
    if kind == "refusal":
        return str(part.get("refusal", ""))
    raise ValueError(
        f"Chat Completions content part of type {kind!r} cannot be translated: "
        "kode reads text, refusal and image_url parts"
    )


def _text_of(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(_part_text(p) for p in content)
