"""Wire formats of the fake provider server: Gemini and the OpenAI Responses API.

This module owns how `kode.testing.providers.FakeProviderServer` renders a scripted `Reply` as
a Gemini ``streamGenerateContent`` stream (``alt=sse``: ``data:`` chunks, each a
``GenerateContentResponse``) and as an OpenAI Responses stream (named events from
``response.created`` to ``response.completed``), the error bodies of those APIs, and the
helpers every format shares. It serves nothing itself.
"""

from __future__ import annotations

import json
import time
from collections.abc import Generator, Iterator, Mapping, Sequence
from typing import Any, Protocol

from kode.models.base import StopReason
from kode.models.messages import (
    ProviderContent,
    TextContent,
    ThinkingContent,
    ToolUseContent,
    Usage,
)

__all__ = [
    "GEMINI_FINISH_REASONS",
    "ReplyLike",
    "arguments",
    "blocks_of",
    "gemini_error",
    "gemini_events",
    "pieces",
    "responses_events",
    "sse",
    "stop_reason_of",
]

Block = TextContent | ThinkingContent | ToolUseContent | ProviderContent


class ReplyLike(Protocol):
    """What the renderers read of a `Reply`."""

    @property
    def content(self) -> Sequence[str | Block]: ...
    @property
    def stop_reason(self) -> StopReason | None: ...
    @property
    def usage(self) -> Usage: ...
    @property
    def model(self) -> str | None: ...
    @property
    def chunk_size(self) -> int: ...


def sse(data: Mapping[str, Any] | str, event: str | None = None) -> bytes:
    """One server-sent event: a mapping as JSON ``data:``, a string as raw SSE text."""
    text = data if isinstance(data, str) else f"data: {json.dumps(data)}\n\n"
    return (f"event: {event}\n" if event else "").encode() + text.encode()


def pieces(text: str, size: int) -> list[str]:
    """`text` cut into pieces of `size` characters (at least one)."""
    size = max(size, 1)
    return [text[i : i + size] for i in range(0, len(text), size)]


def blocks_of(reply: ReplyLike, provider: str | None = None) -> list[Block]:
    """The reply's blocks, a string being a text block.

    `ProviderContent` blocks are kept only when they are `provider`'s.
    """
    return [
        TextContent(text=b) if isinstance(b, str) else b
        for b in reply.content
        if not isinstance(b, ProviderContent) or b.provider == provider
    ]


def arguments(call: ToolUseContent) -> str:
    """A call's arguments as JSON text (a string input as it is)."""
    if isinstance(call.input, str):
        return call.input
    return json.dumps(call.input, separators=(",", ":"))


def stop_reason_of(reply: ReplyLike, blocks: Sequence[object]) -> StopReason:
    """The reply's stop reason: its own, else ``tool_use`` with a call, else ``end_turn``."""
    if reply.stop_reason is not None:
        return reply.stop_reason
    return "tool_use" if any(isinstance(b, ToolUseContent) for b in blocks) else "end_turn"


# --- Gemini -----------------------------------------------------------------------------------

GEMINI_FINISH_REASONS: dict[StopReason, str] = {
    "end_turn": "STOP",
    "tool_use": "STOP",
    "max_tokens": "MAX_TOKENS",
    "stop_sequence": "STOP",
    "refusal": "SAFETY",
    "error": "MALFORMED_FUNCTION_CALL",
}
_GEMINI_STATUSES = {
    400: ("INVALID_ARGUMENT", "Request contains an invalid argument."),
    401: ("UNAUTHENTICATED", "API key not valid. Please pass a valid API key."),
    403: ("PERMISSION_DENIED", "The caller does not have permission."),
    404: ("NOT_FOUND", "Requested entity was not found."),
    429: ("RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota)."),
    500: ("INTERNAL", "An internal error has occurred."),
    503: ("UNAVAILABLE", "The model is overloaded. Please try again later."),
    504: ("DEADLINE_EXCEEDED", "The request timed out."),
}


def gemini_error(status: int, message: str | None, kind: str | None) -> dict[str, Any]:
    """A Gemini API error body: ``{"error": {"code", "message", "status"}}``."""
    name, text = _GEMINI_STATUSES.get(status, ("UNKNOWN", "Error."))
    return {"error": {"code": status, "message": message or text, "status": kind or name}}


def gemini_events(reply: ReplyLike, model: str, number: int) -> Iterator[bytes]:
    """A reply as a ``streamGenerateContent`` stream (``alt=sse``).

    Text and thinking stream in pieces, one part per chunk (thinking as ``thought`` parts, a
    signature on the last piece); the calls come whole, together in one chunk; the last chunk
    has the ``finishReason`` and the usage. An empty thinking block with a signature puts its
    signature on the first part of the next block, the way `GeminiModel` keeps signatures.
    """
    blocks = blocks_of(reply)
    base = {"modelVersion": reply.model or model, "responseId": f"resp_fake_{number:04d}"}

    def chunk(parts: list[dict[str, Any]]) -> bytes:
        content = {"role": "model", "parts": parts}
        return sse({"candidates": [{"content": content, "index": 0}], **base})

    waiting: str | None = None  # a signature for the next part
    calls: list[dict[str, Any]] = []
    for block in blocks:
        if isinstance(block, ToolUseContent):
            part: dict[str, Any] = {
                "functionCall": {"id": block.id, "name": block.name, "args": block.input}
            }
            if waiting is not None:
                part["thoughtSignature"], waiting = waiting, None
            calls.append(part)
            continue
        if calls:
            yield chunk(calls)
            calls = []
        if isinstance(block, ProviderContent):  # not Gemini's (blocks_of left them out)
            continue
        if isinstance(block, ThinkingContent) and not block.thinking:
            waiting = block.signature
            continue
        thought = isinstance(block, ThinkingContent)
        text = block.thinking if isinstance(block, ThinkingContent) else block.text
        texts = pieces(text, reply.chunk_size)
        for index, piece in enumerate(texts):
            part = {"text": piece, "thought": True} if thought else {"text": piece}
            if waiting is not None:
                part["thoughtSignature"], waiting = waiting, None
            last = index == len(texts) - 1
            if last and isinstance(block, ThinkingContent) and block.signature:
                part["thoughtSignature"] = block.signature
            yield chunk([part])
    if calls:
        yield chunk(calls)
    if waiting is not None:
        yield chunk([{"text": "", "thoughtSignature": waiting}])
    usage = {
        "promptTokenCount": reply.usage.input_tokens,
        "candidatesTokenCount": reply.usage.output_tokens,
        "totalTokenCount": reply.usage.input_tokens + reply.usage.output_tokens,
    }
    finish = GEMINI_FINISH_REASONS[stop_reason_of(reply, blocks)]
    end = {"candidates": [{"finishReason": finish, "index": 0}], "usageMetadata": usage}
    yield sse({**end, **base})


# --- OpenAI Responses ---------------------------------------------------------------------------


def responses_events(reply: ReplyLike, body: Mapping[str, Any], number: int) -> Iterator[bytes]:
    """A reply as an OpenAI Responses stream (named events with ``sequence_number``).

    Each block is one output item: thinking a ``reasoning`` item (its summary streamed; its
    signature the ``encrypted_content``, sent when the request's ``include`` asks for it),
    text a ``message`` item, a call a ``function_call`` item (its ``call_id`` the block's id),
    an ``"openai"`` `ProviderContent` the item in its `data` (e.g. ``tool_search_call``,
    ``tool_search_output``), added then done.
    ``end_turn`` and ``tool_use`` end with ``response.completed``; ``max_tokens`` cuts the
    last item short (the first half of its pieces, no ``.done`` events) and ends with
    ``response.incomplete``; ``refusal``
    streams the text as a ``refusal`` part; ``error`` ends with ``response.failed``.
    """
    blocks = blocks_of(reply, "openai")
    stop = stop_reason_of(reply, blocks)
    encrypted = "reasoning.encrypted_content" in (body.get("include") or ())
    counter = iter(range(1_000_000))
    response: dict[str, Any] = {
        "id": f"resp_fake_{number:04d}",
        "object": "response",
        "created_at": int(time.time()),
        "status": "in_progress",
        "model": reply.model or body.get("model", "fake"),
        "output": [],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": None,
    }

    def event(kind: str, **data: Any) -> bytes:
        return sse({"type": kind, "sequence_number": next(counter), **data}, kind)

    yield event("response.created", response=dict(response))
    yield event("response.in_progress", response=dict(response))
    done_items: list[dict[str, Any]] = []
    for index, block in enumerate(blocks):
        cut = stop == "max_tokens" and index == len(blocks) - 1
        items: _ItemEvents
        if isinstance(block, ThinkingContent):
            items = _reasoning(event, block, index, number, reply.chunk_size, encrypted, cut)
        elif isinstance(block, ProviderContent):
            items = _provider_item(event, block, index)
        elif isinstance(block, TextContent):
            refusal = stop == "refusal"
            items = _message(event, block.text, index, number, reply.chunk_size, refusal, cut)
        else:
            items = _function_call(event, block, index, number, reply.chunk_size, cut)
        item = yield from items
        if item is not None:
            done_items.append(item)
    usage = {
        "input_tokens": reply.usage.input_tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": reply.usage.output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": reply.usage.input_tokens + reply.usage.output_tokens,
    }
    final = {**response, "output": done_items, "usage": usage}
    if stop == "max_tokens":
        final.update(status="incomplete", incomplete_details={"reason": "max_output_tokens"})
        yield event("response.incomplete", response=final)
    elif stop == "error":
        error = {"code": "server_error", "message": "The model failed to answer."}
        final.update(status="failed", error=error)
        yield event("response.failed", response=final)
    else:
        yield event("response.completed", response={**final, "status": "completed"})


_EventFunc = Any  # event(kind, **data) -> bytes


def _sent(texts: list[str], cut: bool) -> list[str]:
    """The pieces streamed: all, or the first half when the item is cut short."""
    return texts[: max(1, len(texts) // 2)] if cut else texts


_ItemEvents = Generator[bytes, None, dict[str, Any] | None]  # an item's events, then the item


def _reasoning(
    event: _EventFunc,
    block: ThinkingContent,
    index: int,
    number: int,
    size: int,
    encrypted: bool,
    cut: bool,
) -> _ItemEvents:
    item_id = f"rs_fake_{number:04d}_{index}"
    item: dict[str, Any] = {"id": item_id, "type": "reasoning", "summary": []}
    yield event("response.output_item.added", output_index=index, item=item)
    where = {"item_id": item_id, "output_index": index, "summary_index": 0}
    if block.thinking:
        empty = {"type": "summary_text", "text": ""}
        yield event("response.reasoning_summary_part.added", **where, part=empty)
        for piece in _sent(pieces(block.thinking, size), cut):
            yield event("response.reasoning_summary_text.delta", **where, delta=piece)
        if cut:
            return None
        yield event("response.reasoning_summary_text.done", **where, text=block.thinking)
        part = {"type": "summary_text", "text": block.thinking}
        yield event("response.reasoning_summary_part.done", **where, part=part)
    if cut:
        return None
    summary = [{"type": "summary_text", "text": block.thinking}] if block.thinking else []
    done = {**item, "summary": summary}
    if encrypted and block.signature:
        done["encrypted_content"] = block.signature
    yield event("response.output_item.done", output_index=index, item=done)
    return done


def _provider_item(event: _EventFunc, block: ProviderContent, index: int) -> _ItemEvents:
    added = {**block.data, "status": "in_progress"} if "status" in block.data else block.data
    yield event("response.output_item.added", output_index=index, item=added)
    yield event("response.output_item.done", output_index=index, item=block.data)
    return block.data


def _message(
    event: _EventFunc, text: str, index: int, number: int, size: int, refusal: bool, cut: bool
) -> _ItemEvents:
    item_id = f"msg_fake_{number:04d}_{index}"
    item: dict[str, Any] = {
        "id": item_id,
        "type": "message",
        "status": "in_progress",
        "role": "assistant",
        "content": [],
    }
    yield event("response.output_item.added", output_index=index, item=item)
    where = {"item_id": item_id, "output_index": index, "content_index": 0}
    kind, key = ("refusal", "refusal") if refusal else ("output_text", "text")
    empty: dict[str, Any] = {"type": kind, key: ""}
    if not refusal:
        empty["annotations"] = []
    yield event("response.content_part.added", **where, part=empty)
    for piece in _sent(pieces(text, size), cut):
        if refusal:
            yield event("response.refusal.delta", **where, delta=piece)
        else:
            yield event("response.output_text.delta", **where, delta=piece, logprobs=[])
    if cut:
        return None
    if refusal:
        yield event("response.refusal.done", **where, refusal=text)
    else:
        yield event("response.output_text.done", **where, text=text, logprobs=[])
    part = {**empty, key: text}
    yield event("response.content_part.done", **where, part=part)
    done = {**item, "status": "completed", "content": [part]}
    yield event("response.output_item.done", output_index=index, item=done)
    return done


def _function_call(
    event: _EventFunc, call: ToolUseContent, index: int, number: int, size: int, cut: bool
) -> _ItemEvents:
    item_id = f"fc_fake_{number:04d}_{index}"
    item: dict[str, Any] = {
        "id": item_id,
        "type": "function_call",
        "status": "in_progress",
        "call_id": call.id,
        "name": call.name,
        "arguments": "",
    }
    yield event("response.output_item.added", output_index=index, item=item)
    text = arguments(call)
    for piece in _sent(pieces(text, size), cut):
        yield event(
            "response.function_call_arguments.delta",
            item_id=item_id,
            output_index=index,
            delta=piece,
        )
    if cut:
        return None
    yield event(
        "response.function_call_arguments.done",
        item_id=item_id,
        output_index=index,
        name=call.name,
        arguments=text,
    )
    done = {**item, "status": "completed", "arguments": text}
    yield event("response.output_item.done", output_index=index, item=done)
    return done
