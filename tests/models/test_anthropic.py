"""AnthropicModel with the real `anthropic` SDK client, against the loopback fake server."""

from __future__ import annotations

from typing import Any

import anthropic
import anyio
import pytest

from kode.models import (
    ImageContent,
    ImageSource,
    Message,
    Model,
    ModelError,
    ModelRequest,
    ModelResponse,
    ModelSettings,
    TextContent,
    TextDelta,
    ThinkingContent,
    ThinkingDelta,
    ToolInputDelta,
    ToolResultContent,
    ToolUseContent,
    Usage,
)
from kode.models.anthropic import AnthropicModel, to_anthropic_messages
from kode.testing.providers import ErrorReply, FakeProviderServer, RawEvents, Reply

pytestmark = pytest.mark.anyio

MODEL = "claude-test-1"


def model_for(server: FakeProviderServer, **options: Any) -> AnthropicModel:
    return AnthropicModel(MODEL, base_url=server.url, api_key="test-key", **options)


def ask(text: str = "Hi", **options: Any) -> ModelRequest:
    return ModelRequest(system="", messages=[Message.user(text)], tools=[], **options)


async def collect(model: Model, request: ModelRequest) -> tuple[list[Any], ModelResponse]:
    """Stream to the end: the deltas, and the one final response (which must come last)."""
    events = [event async for event in model.stream(request)]
    *deltas, last = events
    assert isinstance(last, ModelResponse)
    assert all(isinstance(d, TextDelta | ThinkingDelta | ToolInputDelta) for d in deltas)
    # A call's argument pieces are checked in test_provider_checks.py.
    return [d for d in deltas if not isinstance(d, ToolInputDelta)], last


async def test_text_streams_in_deltas(server: FakeProviderServer) -> None:
    server.reply(
        Reply(content=["Hello, world!"], chunk_size=3, usage=Usage(input_tokens=7, output_tokens=4))
    )
    async with model_for(server) as model:
        deltas, response = await collect(model, ask())
    assert deltas == [TextDelta(text=t) for t in ["Hel", "lo,", " wo", "rld", "!"]]
    assert response.message == Message(
        role="assistant", content=[TextContent(text="Hello, world!")]
    )
    assert response.stop_reason == "end_turn"
    assert response.usage == Usage(input_tokens=7, output_tokens=4)
    assert response.model == MODEL


async def test_request_body_is_exact(server: FakeProviderServer, tools: Any) -> None:
    get_weather, get_time = tools
    png = ImageSource(media_type="image/png", data="iVBORw0KGgo=")
    history = [
        Message(
            role="user", content=[TextContent(text="Weather in Paris?"), ImageContent(source=png)]
        ),
        Message(
            role="assistant",
            content=[
                ThinkingContent(thinking="Use the tool.", signature="sig-1"),
                ThinkingContent(thinking="unsigned, from elsewhere"),
                TextContent(text=""),
                TextContent(text="Checking."),
                ToolUseContent(id="toolu_1", name="get_weather", input={"city": "Paris"}),
                ToolUseContent(id="toolu_2", name="get_weather", input='{"city": "Par'),
            ],
        ),
        Message(
            role="user",
            content=[
                ToolResultContent(tool_use_id="toolu_1", content=[TextContent(text="sunny")]),
                ToolResultContent(
                    tool_use_id="toolu_2",
                    content=[TextContent(text="Invalid JSON.")],
                    is_error=True,
                ),
            ],
        ),
    ]
    server.reply(Reply(content=["It is sunny."]))
    request = ModelRequest(
        system="You are terse.",
        messages=history,
        tools=[get_weather, get_time],
        settings=ModelSettings(max_tokens=300, temperature=0.5, extra={"top_k": 5}),
    )
    async with model_for(server, metadata={"user_id": "u1"}) as model:
        await collect(model, request)
    [received] = server.requests
    assert received.path == "/v1/messages"
    assert received.headers["content-type"] == "application/json"
    assert received.body == {
        "model": MODEL,
        "max_tokens": 300,
        "stream": True,
        "system": "You are terse.",
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Weather in Paris?"},
                    {
                        "type": "image",
                        "source": {
                            "type": "base64",
                            "media_type": "image/png",
                            "data": "iVBORw0KGgo=",
                        },
                    },
                ],
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "Use the tool.", "signature": "sig-1"},
                    {"type": "text", "text": "Checking."},
                    {
                        "type": "tool_use",
                        "id": "toolu_1",
                        "name": "get_weather",
                        "input": {"city": "Paris"},
                    },
                    {
                        "type": "tool_use",
                        "id": "toolu_2",
                        "name": "get_weather",
                        "input": {"_invalid_json": '{"city": "Par'},
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_1",
                        "content": [{"type": "text", "text": "sunny"}],
                    },
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_2",
                        "content": [{"type": "text", "text": "Invalid JSON."}],
                        "is_error": True,
                    },
                ],
            },
        ],
        "tools": [get_weather.schema("anthropic"), get_time.schema("anthropic")],
        "metadata": {"user_id": "u1"},
        "temperature": 0.5,
        "top_k": 5,
    }
    assert received.body["tools"][0] == {
        "name": "get_weather",
        "description": "Get the current weather in a city.",
        "input_schema": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": 'The city, e.g. "Paris".'},
                "unit": {"type": "string", "description": '"c" or "f".', "default": "c"},
            },
            "required": ["city"],
            "additionalProperties": False,
        },
    }


async def test_no_system_and_no_tools_are_left_out(server: FakeProviderServer) -> None:
    server.reply(Reply(content=["ok"]))
    async with model_for(server, max_tokens=64) as model:
        await collect(model, ask("ping"))
    assert server.bodies == [
        {
            "model": MODEL,
            "max_tokens": 64,
            "stream": True,
            "messages": [{"role": "user", "content": [{"type": "text", "text": "ping"}]}],
        }
    ]


async def test_tool_call_json_split_across_many_chunks(server: FakeProviderServer) -> None:
    call = ToolUseContent(
        id="toolu_9", name="get_weather", input={"city": "São Paulo", "unit": "f"}
    )
    server.reply(
        Reply(
            content=["Let me look.", call],
            chunk_size=1,
            usage=Usage(input_tokens=30, output_tokens=12),
        )
    )
    async with model_for(server) as model:
        deltas, response = await collect(model, ask())
    assert "".join(d.text for d in deltas if isinstance(d, TextDelta)) == "Let me look."
    assert response.message.content == [TextContent(text="Let me look."), call]
    assert response.stop_reason == "tool_use"
    assert response.usage == Usage(input_tokens=30, output_tokens=12)


async def test_two_parallel_tool_calls(server: FakeProviderServer) -> None:
    calls = [
        ToolUseContent(id="toolu_a", name="get_weather", input={"city": "Paris"}),
        ToolUseContent(id="toolu_b", name="get_time", input={"zone": "Europe/Rome"}),
    ]
    server.reply(Reply(content=calls, chunk_size=5))
    async with model_for(server) as model:
        deltas, response = await collect(model, ask())
    assert deltas == []
    assert response.message.tool_uses == calls
    assert response.stop_reason == "tool_use"


async def test_thinking_streams_and_keeps_its_signature(server: FakeProviderServer) -> None:
    thinking = ThinkingContent(thinking="The user wants a greeting.", signature="EqQBCgIYAhIM")
    server.reply(Reply(content=[thinking, "Hi!"], chunk_size=8))
    async with model_for(server, thinking={"type": "enabled", "budget_tokens": 1024}) as model:
        deltas, response = await collect(model, ask())
    assert deltas == [
        ThinkingDelta(thinking="The user"),
        ThinkingDelta(thinking=" wants a"),
        ThinkingDelta(thinking=" greetin"),
        ThinkingDelta(thinking="g."),
        TextDelta(text="Hi!"),
    ]
    assert response.message.content == [thinking, TextContent(text="Hi!")]
    assert server.bodies[0]["thinking"] == {"type": "enabled", "budget_tokens": 1024}


async def test_malformed_tool_json_keeps_the_raw_text(server: FakeProviderServer) -> None:
    server.reply(
        Reply(content=[ToolUseContent(id="t1", name="get_weather", input='{"city": "Par')])
    )
    async with model_for(server) as model:
        _, response = await collect(model, ask())
    assert response.message.tool_uses == [
        ToolUseContent(id="t1", name="get_weather", input='{"city": "Par')
    ]


async def test_tool_call_without_arguments_has_empty_input(server: FakeProviderServer) -> None:
    server.reply(Reply(content=[ToolUseContent(id="t1", name="get_time", input="")]))
    async with model_for(server) as model:
        _, response = await collect(model, ask())
    assert response.message.tool_uses == [ToolUseContent(id="t1", name="get_time", input={})]


@pytest.mark.parametrize(
    ("wire", "expected"),
    [
        ("end_turn", "end_turn"),
        ("tool_use", "tool_use"),
        ("max_tokens", "max_tokens"),
        ("stop_sequence", "stop_sequence"),
        ("refusal", "refusal"),
        ("model_context_window_exceeded", "max_tokens"),
        ("pause_turn", "end_turn"),
    ],
)
async def test_stop_reasons(server: FakeProviderServer, wire: str, expected: str) -> None:
    server.reply(RawEvents(events=_events(stop_reason=wire)))
    async with model_for(server) as model:
        _, response = await collect(model, ask())
    assert response.stop_reason == expected


async def test_usage_counts_cached_input_tokens(server: FakeProviderServer) -> None:
    events = _events(
        start_usage={
            "input_tokens": 10,
            "output_tokens": 1,
            "cache_creation_input_tokens": 100,
            "cache_read_input_tokens": 1000,
        },
        delta_usage={"output_tokens": 42},
    )
    server.reply(RawEvents(events=events))
    async with model_for(server) as model:
        _, response = await collect(model, ask())
    assert response.usage == Usage(
        input_tokens=1110,
        output_tokens=42,
        cache_read_input_tokens=1000,
        cache_creation_input_tokens=100,
    )


async def test_cache_counts_of_message_delta_replace_those_of_message_start(
    server: FakeProviderServer,
) -> None:
    events = _events(
        start_usage={"input_tokens": 10, "output_tokens": 1, "cache_read_input_tokens": 5},
        delta_usage={
            "output_tokens": 42,
            "input_tokens": 20,
            "cache_read_input_tokens": 3000,
            "cache_creation_input_tokens": 0,
        },
    )
    server.reply(RawEvents(events=events))
    async with model_for(server) as model:
        _, response = await collect(model, ask())
    assert response.usage == Usage(
        input_tokens=3020, output_tokens=42, cache_read_input_tokens=3000
    )
    assert (response.usage + response.usage).cache_read_input_tokens == 6000


async def test_redacted_thinking_and_unknown_blocks_are_dropped(server: FakeProviderServer) -> None:
    events = _events(
        blocks=[
            [
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "redacted_thinking", "data": "xyz"},
                }
            ],
            _text_block(1, "visible"),
        ]
    )
    server.reply(RawEvents(events=events))
    async with model_for(server) as model:
        _, response = await collect(model, ask())
    assert response.message.content == [TextContent(text="visible")]


@pytest.mark.parametrize(
    ("status", "fragment"),
    [
        (401, "HTTP 401 (authentication_error): invalid x-api-key"),
        (429, "HTTP 429 (rate_limit_error): Number of requests has exceeded your rate limit."),
        (500, "HTTP 500 (api_error): Internal server error."),
        (529, "HTTP 529 (overloaded_error): Overloaded"),
    ],
)
async def test_http_errors_become_model_errors(
    server: FakeProviderServer, status: int, fragment: str
) -> None:
    server.reply(ErrorReply(status=status))
    async with model_for(server) as model:
        with pytest.raises(ModelError) as caught:
            await collect(model, ask())
    assert str(caught.value) == f"Anthropic request failed with {fragment}"
    assert caught.value.status_code == status
    assert caught.value.provider == "anthropic"
    assert isinstance(caught.value.__cause__, anthropic.APIStatusError)


async def test_error_event_mid_stream(server: FakeProviderServer) -> None:
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    server.reply(RawEvents(events=[*_events()[:3], error]))
    async with model_for(server) as model:
        with pytest.raises(
            ModelError, match=r"^Anthropic stream failed \(overloaded_error\): Overloaded$"
        ) as caught:
            await collect(model, ask())
    assert caught.value.status_code is None


async def test_stream_cut_before_message_stop(server: FakeProviderServer) -> None:
    server.reply(RawEvents(events=_events()[:-1]))
    async with model_for(server) as model:
        with pytest.raises(ModelError, match="ended before message_stop"):
            await collect(model, ask())


async def test_connection_refused() -> None:
    with FakeProviderServer() as gone:
        url = gone.url
    client = anthropic.AsyncAnthropic(base_url=url, api_key="k", max_retries=0)
    model = AnthropicModel(MODEL, client=client)
    try:
        # The SDK's words for it: "Connection error." before 2.17, the address and errno after.
        with pytest.raises(
            ModelError, match=r"^Anthropic request failed: Connection (error\.|to \S+ failed)"
        ):
            await collect(model, ask())
    finally:
        await model.aclose()
        assert not client.is_closed()  # a client passed in belongs to the caller
        await client.close()


async def test_client_and_base_url_are_exclusive() -> None:
    client = anthropic.AsyncAnthropic(api_key="k")
    try:
        with pytest.raises(ValueError, match="either client or api_key/base_url"):
            AnthropicModel(MODEL, client=client, base_url="http://127.0.0.1:1")
    finally:
        await client.close()


def test_to_anthropic_messages_is_the_internal_form() -> None:
    messages = [
        Message.user("hi"),
        Message(role="assistant", content=[ToolUseContent(id="t", name="x", input={"a": 1})]),
        Message(role="user", content=[ToolResultContent(tool_use_id="t", content=[])]),
    ]
    assert to_anthropic_messages(messages) == [
        m.model_dump(exclude={"content": {0: {"is_error"}}} if i == 2 else None)
        for i, m in enumerate(messages)
    ]


async def test_tool_json_split_at_awkward_places(server: FakeProviderServer) -> None:
    pieces = ['{"ci', 'ty": "S', "\\u00e3", 'o Paulo", "un', 'it": "f"', "}"]
    start = {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}}
    block = [
        {"type": "content_block_start", "index": 0, "content_block": start},
        *[
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": p},
            }
            for p in pieces
        ],
        {"type": "content_block_stop", "index": 0},
    ]
    server.reply(RawEvents(events=_events(stop_reason="tool_use", blocks=[block])))
    async with model_for(server) as model:
        _, response = await collect(model, ask())
    assert response.message.tool_uses == [
        ToolUseContent(id="toolu_1", name="get_weather", input={"city": "São Paulo", "unit": "f"})
    ]


def test_repr_and_name() -> None:
    model = AnthropicModel(MODEL)
    assert isinstance(model, Model)
    assert model.name == MODEL
    assert repr(model) == "AnthropicModel('claude-test-1')"


# --- raw event helpers ----------------------------------------------------------------------


def _text_block(index: int, text: str) -> list[dict[str, Any]]:
    return [
        {
            "type": "content_block_start",
            "index": index,
            "content_block": {"type": "text", "text": ""},
        },
        {
            "type": "content_block_delta",
            "index": index,
            "delta": {"type": "text_delta", "text": text},
        },
        {"type": "content_block_stop", "index": index},
    ]


def _events(
    *,
    stop_reason: str = "end_turn",
    blocks: list[list[dict[str, Any]]] | None = None,
    start_usage: dict[str, Any] | None = None,
    delta_usage: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": start_usage or {"input_tokens": 3, "output_tokens": 1},
    }
    body = [event for block in (blocks or [_text_block(0, "text")]) for event in block]
    return [
        {"type": "message_start", "message": message},
        *body,
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": None},
            "usage": delta_usage or {"output_tokens": 5},
        },
        {"type": "message_stop"},
    ]


async def test_aclose_closes_the_client_it_made(server: FakeProviderServer) -> None:
    model = model_for(server)
    client = model.client
    assert model.client is client
    await model.aclose()
    assert client.is_closed()


async def test_connection_cut_mid_stream(server: FakeProviderServer) -> None:
    server.reply(RawEvents(events=_events()[:2], cut=True))
    async with model_for(server) as model:
        with pytest.raises(ModelError, match=r"^Anthropic stream failed: RemoteProtocolError: "):
            await collect(model, ask())


# On trio only: the anthropic SDK's AsyncStream lets the JSON error escape its SSE loop without
# closing its inner async generators; trio reports each one it collects with a ResourceWarning.
@pytest.mark.filterwarnings(
    r"ignore:Exception ignored in. <async_generator object "
    r"(Response\.aiter_bytes|SSEDecoder\.aiter_bytes|AsyncStream\._iter_events) "
    ":pytest.PytestUnraisableExceptionWarning"
)
async def test_undecodable_event(server: FakeProviderServer) -> None:
    server.reply(RawEvents(events=["event: message_start\ndata: {not json\n\n"]))
    async with model_for(server) as model:
        with pytest.raises(ModelError, match=r"^Anthropic stream failed: JSONDecodeError: "):
            await collect(model, ask())


async def test_cancelled_stream_leaves_the_model_usable(server: FakeProviderServer) -> None:
    server.reply(Reply(content=["slow " * 20], chunk_size=5, delay=0.02), Reply(content=["fast"]))
    async with model_for(server) as model:
        seen: list[Any] = []
        with anyio.CancelScope() as scope:
            async for event in model.stream(ask()):
                seen.append(event)
                if len(seen) == 3:
                    scope.cancel()  # the next read from the server is cancelled
        assert scope.cancelled_caught
        assert seen == [TextDelta(text=t) for t in ["slow ", "slow ", "slow "]]
        _, response = await collect(model, ask())
    assert response.message.text == "fast"


async def test_a_non_json_error_body_is_shown(server: FakeProviderServer) -> None:
    server.reply(ErrorReply(status=502, body="<html>502 Bad Gateway</html>"))
    async with model_for(server) as model:
        with pytest.raises(ModelError) as caught:
            await collect(model, ask())
    assert (
        str(caught.value) == "Anthropic request failed with HTTP 502: <html>502 Bad Gateway</html>"
    )
    assert caught.value.status_code == 502
