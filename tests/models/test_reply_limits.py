"""Replies too long, lines too long, and silences kept alive: every model gives up.

Real SDK clients (``anthropic``, ``openai`` for Chat Completions and the Responses API,
``google-genai``) against `FakeProviderServer` on the loopback interface, playing streams in
each wire format far longer than the limits (64 MiB, or 200 drops of a drip 20 ms apart). A
reply over ``max_reply_chars``, a line over the longest an event may be, a body over
``max_reply_bytes``, and a drip of keep-alive comments or empty events past ``idle_timeout``
each end in a `ModelError` naming the limit; for the sizes, the server counts what it wrote
until the client hung up, which must stay near the limit rather than reach the 64 MiB it
would send to a client reading on. Limits are small so each test takes a fraction of a second.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest

from kode.models import (
    AnthropicModel,
    GeminiModel,
    Message,
    ModelError,
    ModelRequest,
    ModelSettings,
    OpenAIModel,
    OpenAIResponsesModel,
)
from kode.models.base import Model
from kode.testing.providers import FakeProviderServer, RawEvents, Reply

pytestmark = [
    pytest.mark.anyio,
    # openai's stream stops reading at ``data: [DONE]`` and leaves its own generators (and
    # httpx's under them) to the collector, which trio reports; the same makes the trio cases
    # of OpenAI in tests/models/test_provider_checks.py fail without any limit in the way.
    pytest.mark.filterwarnings(
        "ignore:Async generator 'openai._streaming.:ResourceWarning",
        "ignore:Async generator 'httpx2._models.Response.aiter_bytes':ResourceWarning",
    ),
]

PIECE = "x" * 16_384
"""The text of one event of a long reply."""

LONG = 64 * 2**20
"""The bytes of every long stream here: what a client that does not stop would read."""

SLACK = 16 * 2**20
"""What may be in flight when a client hangs up: the server's send buffer and the client's
receive buffer on the loopback interface, and the event being written (some 4 MiB here)."""

DRIPS = 200
"""Drops of a drip, 20 ms apart: 4 s, against an idle_timeout of 0.3 s."""

DIALECTS = ["anthropic", "openai", "openai-responses", "gemini"]


def model_for(dialect: str, server: FakeProviderServer, **options: Any) -> Model:
    if dialect == "anthropic":
        return AnthropicModel("claude-test", base_url=server.url, api_key="-", **options)
    if dialect == "openai":
        return OpenAIModel("gpt-test", base_url=server.openai_base_url, api_key="-", **options)
    if dialect == "openai-responses":
        url = server.openai_base_url
        return OpenAIResponsesModel("gpt-test", base_url=url, api_key="-", **options)
    return GeminiModel("gemini-test", base_url=server.url, api_key="-", **options)


def head(dialect: str) -> list[dict[str, Any] | str]:
    """The events that open a reply whose text follows, in `dialect`."""
    if dialect == "anthropic":
        message = {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 0},
        }
        block = {"type": "content_block_start", "index": 0, "content_block": {"type": "text"}}
        block["content_block"]["text"] = ""
        return [{"type": "message_start", "message": message}, block]
    if dialect == "openai":
        return [chat_chunk({"role": "assistant", "content": ""})]
    if dialect == "openai-responses":
        response = {
            "id": "resp_1",
            "object": "response",
            "created_at": 0,
            "status": "in_progress",
            "model": "gpt-test",
            "output": [],
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
        }
        item = {"id": "msg_1", "type": "message", "role": "assistant", "status": "in_progress"}
        item["content"] = []
        return [
            {"type": "response.created", "sequence_number": 0, "response": response},
            {
                "type": "response.output_item.added",
                "sequence_number": 1,
                "output_index": 0,
                "item": item,
            },
        ]
    return []


def chat_chunk(delta: dict[str, Any]) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": None}
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "gpt-test",
        "choices": [choice],
    }


def text_event(dialect: str, text: str) -> dict[str, Any]:
    """One event adding `text` to the reply, in `dialect`."""
    if dialect == "anthropic":
        delta = {"type": "text_delta", "text": text}
        return {"type": "content_block_delta", "index": 0, "delta": delta}
    if dialect == "openai":
        return chat_chunk({"content": text})
    if dialect == "openai-responses":
        return {
            "type": "response.output_text.delta",
            "sequence_number": 2,
            "item_id": "msg_1",
            "output_index": 0,
            "content_index": 0,
            "delta": text,
            "logprobs": [],
        }
    part = {"content": {"role": "model", "parts": [{"text": text}]}, "index": 0}
    return {"candidates": [part], "modelVersion": "gemini-test"}


def nothing_event(dialect: str) -> dict[str, Any] | str:
    """An event of some 1,000 bytes that adds nothing to the reply, in `dialect`."""
    if dialect == "gemini":  # google-genai takes every line for a chunk: no comments
        return {"modelVersion": "gemini-test", "responseId": "z" * 1000}
    return ": " + "z" * 1000 + "\n\n"  # a comment line, which the SDKs skip


def long(dialect: str, event: dict[str, Any] | str, **options: Any) -> RawEvents:
    """The head of a reply, then `event` again and again, for `LONG` bytes."""
    size = len(event) if isinstance(event, str) else len(json.dumps(event))
    events = itertools.repeat(event, LONG // size + 1)
    return RawEvents(events=itertools.chain(head(dialect), events), **options)


def dripping(dialect: str, event: dict[str, Any] | str, **options: Any) -> RawEvents:
    """The head of a reply, then `event` `DRIPS` times (20 ms apart)."""
    events = itertools.repeat(event, DRIPS)
    return RawEvents(events=itertools.chain(head(dialect), events), delay=0.02, **options)


def request(**extra: Any) -> ModelRequest:
    return ModelRequest(
        system="", messages=[Message.user("Hi")], tools=[], settings=ModelSettings(extra=extra)
    )


async def fails(model: Model, req: ModelRequest | None = None) -> ModelError:
    with pytest.raises(ModelError) as caught:
        async with model:  # type: ignore[attr-defined]
            async for _ in model.stream(req or request()):
                pass
    return caught.value


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_an_endless_reply_is_cut_off_at_max_reply_chars(dialect: str) -> None:
    limit = 1_000_000
    with FakeProviderServer([long(dialect, text_event(dialect, PIECE))]) as server:
        error = await fails(model_for(dialect, server, max_reply_chars=limit))
        assert server.wait_answered(1)
        (sent,) = server.sent
    assert "max_reply_chars (1,000,000 characters" in str(error)
    assert "max_reply_chars=N" in str(error)
    assert error.provider is not None and not error.retryable
    assert limit < sent < limit * 2 + SLACK, sent


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_a_request_may_raise_the_limit_for_itself(dialect: str) -> None:
    pieces = itertools.repeat(text_event(dialect, PIECE), 10)
    ended = RawEvents(events=itertools.chain(head(dialect), pieces))
    with FakeProviderServer([ended]) as server:
        # 163,840 characters: over the model's limit, under the request's; the stream then
        # ends without a proper end, which is the next error.
        error = await fails(
            model_for(dialect, server, max_reply_chars=1000), request(max_reply_chars=200_000)
        )
    assert "max_reply_chars" not in str(error)


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_an_endless_line_is_cut_off_before_the_sdk_buffers_it(dialect: str) -> None:
    """A line with no end: the SDK's decoder would hold all of it before kode saw an event."""
    limit = 10_000
    line = itertools.chain(["data: {"], itertools.repeat("y" * 65_536, LONG // 65_536))
    with FakeProviderServer([RawEvents(events=itertools.chain(head(dialect), line))]) as server:
        error = await fails(model_for(dialect, server, max_reply_chars=limit))
        assert server.wait_answered(1)
        (sent,) = server.sent
    longest = limit * 12 + 2**20
    assert f"a line longer than {longest:,} bytes" in str(error)
    assert longest < sent < longest + SLACK, sent


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_an_endless_body_is_cut_off_at_max_reply_bytes(dialect: str) -> None:
    """Events that add nothing to the reply still cost bytes (and the SDK's time)."""
    with FakeProviderServer([long(dialect, nothing_event(dialect))]) as server:
        error = await fails(model_for(dialect, server, max_reply_bytes=4 * 2**20))
        assert server.wait_answered(1)
        (sent,) = server.sent
    assert "max_reply_bytes (4,194,304 bytes" in str(error)
    assert 4 * 2**20 < sent < 4 * 2**20 + SLACK, sent


# google-genai takes a comment line for a chunk and fails on it at once (it never waits), and
# leaves its line readers to the collector when it does, which trio reports.
GEMINI_COMMENTS = pytest.param(
    "gemini",
    "comments",
    marks=pytest.mark.filterwarnings("ignore:Async generator 'google.genai.:ResourceWarning"),
)


@pytest.mark.parametrize(
    ("dialect", "drip"),
    [
        *[(d, "comments") for d in DIALECTS if d != "gemini"],
        GEMINI_COMMENTS,
        *[(d, "empty events") for d in DIALECTS],
    ],
)
async def test_a_drip_that_adds_nothing_ends_at_idle_timeout(dialect: str, drip: str) -> None:
    """Keep-alive comments (which the SDKs swallow) and events that add no text, every 20 ms:
    the reply makes no progress, and is given up after idle_timeout."""
    one: dict[str, Any] | str = (
        ": keep-alive\n\n" if drip == "comments" else text_event(dialect, "")
    )
    with FakeProviderServer([dripping(dialect, one)]) as server:
        error = await fails(model_for(dialect, server, idle_timeout=0.3))
        assert server.wait_answered(1)
        (sent,) = server.sent
    if dialect == "gemini" and drip == "comments":  # google-genai refuses them at once
        assert "Failed to parse response as JSON. Raw response: : keep-alive" in str(error)
        return
    assert "made no progress for 0.3 s (idle_timeout)" in str(error)
    assert "idle_timeout=SECONDS" in str(error)
    # Given up after some 15 drops, not after the 200 the server would send.
    size = len(one) if isinstance(one, str) else len(json.dumps(one)) + 8
    assert sent < size * DRIPS // 2 + 2000, sent


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_text_that_keeps_coming_slowly_is_not_idle(dialect: str) -> None:
    """Progress resets the idle clock: some 20 events 60 ms apart outlast an idle_timeout of
    0.6 s, since 15 of them bring text (the few before and after bring none)."""
    reply = Reply(content=["ok " * 15], chunk_size=3, delay=0.06)
    with FakeProviderServer([reply]) as server:
        async with model_for(dialect, server, idle_timeout=0.6) as model:  # type: ignore[attr-defined]
            events = [event async for event in model.stream(request())]
    assert events[-1].message.text == "ok " * 15


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("max_reply_chars", 0),
        ("max_reply_chars", 1.5),
        ("max_reply_bytes", -1),
        ("idle_timeout", 0),
        ("idle_timeout", float("inf")),
        ("idle_timeout", True),
    ],
)
def test_invalid_limits_are_refused(option: str, value: Any) -> None:
    with pytest.raises(ValueError, match=option):
        AnthropicModel("claude-test", api_key="-", **{option: value})


async def test_invalid_limits_in_a_request_are_a_model_error() -> None:
    with FakeProviderServer() as server:
        error = await fails(model_for("anthropic", server), request(idle_timeout=-1))
    assert "idle_timeout must be a finite number of seconds greater than 0" in str(error)
