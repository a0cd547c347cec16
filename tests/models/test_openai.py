"""OpenAIModel with the real `openai` SDK client, against the loopback fake server."""

from __future__ import annotations

from typing import Any

import anyio
import openai
import pytest

from kode.models import (
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
from kode.models.openai import OpenAIModel
from kode.models.translate import to_openai_messages
from kode.testing.providers import ErrorReply, FakeProviderServer, RawEvents, Reply

pytestmark = [
    pytest.mark.anyio,
    # On trio only: after `data: [DONE]` the openai SDK's AsyncStream breaks out of its SSE loop
    # and leaves three async generators (Response.aiter_bytes, SSEDecoder.aiter_bytes,
    # AsyncStream._iter_events) to the garbage collector; trio closes them and reports each with
    # a ResourceWarning. The stream itself is complete: every other check runs on trio too.
    pytest.mark.filterwarnings(
        r"ignore:Exception ignored in. <async_generator object "
        r"(Response\.aiter_bytes|SSEDecoder\.aiter_bytes|AsyncStream\._iter_events) "
        ":pytest.PytestUnraisableExceptionWarning"
    ),
]

MODEL = "gpt-test-1"


def model_for(server: FakeProviderServer, **options: Any) -> OpenAIModel:
    return OpenAIModel(MODEL, base_url=server.openai_base_url, api_key="test-key", **options)


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
        Reply(content=["Hello, world!"], chunk_size=5, usage=Usage(input_tokens=9, output_tokens=3))
    )
    async with model_for(server) as model:
        deltas, response = await collect(model, ask())
    assert deltas == [TextDelta(text="Hello"), TextDelta(text=", wor"), TextDelta(text="ld!")]
    assert response.message == Message(
        role="assistant", content=[TextContent(text="Hello, world!")]
    )
    assert response.stop_reason == "end_turn"
    assert response.usage == Usage(input_tokens=9, output_tokens=3)
    assert response.model == MODEL


async def test_request_body_is_exact(server: FakeProviderServer, tools: Any) -> None:
    get_weather, get_time = tools
    history = [
        Message.user("Weather in Paris and the time in Rome?"),
        Message(
            role="assistant",
            content=[
                ThinkingContent(thinking="two calls", signature="sig"),
                TextContent(text="Checking."),
                ToolUseContent(id="call_1", name="get_weather", input={"city": "Paris"}),
                ToolUseContent(id="call_2", name="get_time", input={"zone": "Europe/Rome"}),
            ],
        ),
        Message(
            role="user",
            content=[
                ToolResultContent(tool_use_id="call_1", content=[TextContent(text="sunny")]),
                ToolResultContent(
                    tool_use_id="call_2", content=[TextContent(text="Unknown zone.")], is_error=True
                ),
            ],
        ),
    ]
    server.reply(Reply(content=["Sunny; the zone is unknown."]))
    request = ModelRequest(
        system="You are terse.",
        messages=history,
        tools=[get_weather, get_time],
        settings=ModelSettings(max_tokens=300, temperature=0.0, extra={"seed": 7}),
    )
    async with model_for(server, parallel_tool_calls=True) as model:
        await collect(model, request)
    [received] = server.requests
    assert received.path == "/v1/chat/completions"
    assert received.headers["authorization"] == "Bearer test-key"
    assert received.body == {
        "model": MODEL,
        "stream": True,
        "stream_options": {"include_usage": True},
        "max_tokens": 300,
        "messages": [
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "Weather in Paris and the time in Rome?"},
            {
                "role": "assistant",
                "content": "Checking.",
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                    },
                    {
                        "id": "call_2",
                        "type": "function",
                        "function": {"name": "get_time", "arguments": '{"zone":"Europe/Rome"}'},
                    },
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
            {"role": "tool", "tool_call_id": "call_2", "content": "Error: Unknown zone."},
        ],
        "tools": [get_weather.schema("openai"), get_time.schema("openai")],
        "parallel_tool_calls": True,
        "temperature": 0.0,
        "seed": 7,
    }
    assert received.body["messages"] == to_openai_messages(history, system="You are terse.")
    assert received.body["tools"][1] == {
        "type": "function",
        "function": {
            "name": "get_time",
            "description": "Get the time in a time zone.",
            "parameters": {
                "type": "object",
                "properties": {"zone": {"type": "string", "description": "An IANA zone name."}},
                "required": ["zone"],
                "additionalProperties": False,
            },
            "strict": True,
        },
    }


async def test_no_tools_are_left_out(server: FakeProviderServer) -> None:
    server.reply(Reply(content=["ok"]))
    async with model_for(server, max_tokens=64) as model:
        await collect(model, ask("ping"))
    assert server.bodies == [
        {
            "model": MODEL,
            "stream": True,
            "stream_options": {"include_usage": True},
            "max_tokens": 64,
            "messages": [{"role": "user", "content": "ping"}],
        }
    ]


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({}, "max_tokens"),
        ({"max_tokens_field": "max_completion_tokens"}, "max_completion_tokens"),
    ],
)
async def test_token_limit_field(
    server: FakeProviderServer, options: dict[str, Any], field: str
) -> None:
    server.reply(Reply(content=["ok"]))
    async with model_for(server, **options) as model:
        await collect(model, ask())
    [other] = {"max_tokens", "max_completion_tokens"} - {field}
    assert server.bodies[0][field] == 4096
    assert other not in server.bodies[0]


def test_official_api_gets_max_completion_tokens() -> None:
    model = OpenAIModel(MODEL, api_key="k")
    params = model.request_params(ask())
    assert params["max_completion_tokens"] == 4096
    assert "max_tokens" not in params


async def test_tool_call_arguments_split_across_many_chunks(server: FakeProviderServer) -> None:
    call = ToolUseContent(id="call_9", name="get_weather", input={"city": "São Paulo", "unit": "f"})
    server.reply(
        Reply(content=[call], chunk_size=1, usage=Usage(input_tokens=20, output_tokens=15))
    )
    async with model_for(server) as model:
        deltas, response = await collect(model, ask())
    assert deltas == []
    assert response.message.content == [call]
    assert response.stop_reason == "tool_use"
    assert response.usage == Usage(input_tokens=20, output_tokens=15)


async def test_two_parallel_tool_calls(server: FakeProviderServer) -> None:
    calls = [
        ToolUseContent(id="call_a", name="get_weather", input={"city": "Paris"}),
        ToolUseContent(id="call_b", name="get_time", input={"zone": "Europe/Rome"}),
    ]
    server.reply(Reply(content=["Both:", *calls], chunk_size=3))
    async with model_for(server) as model:
        deltas, response = await collect(model, ask())
    assert deltas == [TextDelta(text="Bot"), TextDelta(text="h:")]
    assert response.message.content == [TextContent(text="Both:"), *calls]


async def test_interleaved_parallel_tool_call_deltas_are_joined_by_index(
    server: FakeProviderServer,
) -> None:
    chunks = [
        _chunk({"role": "assistant", "content": None}),
        _chunk({"tool_calls": [_call(0, id="call_a", name="get_weather", arguments="")]}),
        _chunk({"tool_calls": [_call(1, id="call_b", name="get_time", arguments='{"zo')]}),
        _chunk({"tool_calls": [_call(0, arguments='{"city":')]}),
        _chunk({"tool_calls": [_call(1, arguments='ne": "UTC"}'), _call(0, arguments=' "Oslo"')]}),
        _chunk({"tool_calls": [_call(0, arguments="}")]}),
        _chunk({}, finish="tool_calls"),
    ]
    server.reply(RawEvents(events=chunks))
    async with model_for(server) as model:
        _, response = await collect(model, ask())
    assert response.message.tool_uses == [
        ToolUseContent(id="call_a", name="get_weather", input={"city": "Oslo"}),
        ToolUseContent(id="call_b", name="get_time", input={"zone": "UTC"}),
    ]
    assert response.usage == Usage()  # the stream carried no usage chunk


async def test_malformed_arguments_keep_the_raw_text(server: FakeProviderServer) -> None:
    server.reply(
        Reply(content=[ToolUseContent(id="c1", name="get_weather", input='{"city": Paris}')])
    )
    async with model_for(server) as model:
        _, response = await collect(model, ask())
    assert response.message.tool_uses == [
        ToolUseContent(id="c1", name="get_weather", input='{"city": Paris}')
    ]


async def test_a_call_without_an_id_gets_one(server: FakeProviderServer) -> None:
    chunks = [
        _chunk({"tool_calls": [{"index": 0, "function": {"name": "get_time", "arguments": "{}"}}]}),
        _chunk({}, finish="tool_calls"),
    ]
    server.reply(RawEvents(events=chunks))
    async with model_for(server) as model:
        _, response = await collect(model, ask())
    [call] = response.message.tool_uses
    assert call.id.startswith("call_0_")
    assert (call.name, call.input) == ("get_time", {})


@pytest.mark.parametrize(
    ("finish", "with_call", "expected"),
    [
        ("stop", False, "end_turn"),
        ("tool_calls", True, "tool_use"),
        ("stop", True, "tool_use"),
        ("length", False, "max_tokens"),
        ("content_filter", False, "refusal"),
        ("function_call", True, "tool_use"),
        ("something_new", False, "end_turn"),
    ],
)
async def test_finish_reasons(
    server: FakeProviderServer, finish: str, with_call: bool, expected: str
) -> None:
    chunks = [_chunk({"content": "x"})]
    if with_call:
        chunks.append(_chunk({"tool_calls": [_call(0, id="c", name="get_time", arguments="{}")]}))
    chunks.append(_chunk({}, finish=finish))
    server.reply(RawEvents(events=chunks))
    async with model_for(server) as model:
        _, response = await collect(model, ask())
    assert response.stop_reason == expected


async def test_refusal_is_text_and_the_stop_reason(server: FakeProviderServer) -> None:
    chunks = [
        _chunk({"refusal": "I can't "}),
        _chunk({"refusal": "help."}),
        _chunk({}, finish="stop"),
    ]
    server.reply(RawEvents(events=chunks))
    async with model_for(server) as model:
        deltas, response = await collect(model, ask())
    assert deltas == [TextDelta(text="I can't "), TextDelta(text="help.")]
    assert response.message.content == [TextContent(text="I can't help.")]
    assert response.stop_reason == "refusal"


async def test_reasoning_from_compatible_servers_is_thinking(server: FakeProviderServer) -> None:
    chunks = [
        _chunk({"role": "assistant", "reasoning_content": "Think"}),
        _chunk({"reasoning": "ing."}),
        _chunk({"content": "Answer."}),
        _chunk({}, finish="stop"),
    ]
    server.reply(RawEvents(events=chunks))
    async with model_for(server) as model:
        deltas, response = await collect(model, ask())
    assert deltas == [
        ThinkingDelta(thinking="Think"),
        ThinkingDelta(thinking="ing."),
        TextDelta(text="Answer."),
    ]
    assert response.message.content == [
        ThinkingContent(thinking="Thinking."),
        TextContent(text="Answer."),
    ]


async def test_only_choice_zero_is_read(server: FakeProviderServer) -> None:
    other = {"index": 1, "delta": {"content": "other"}, "finish_reason": None}
    chunks = [_chunk({"content": "first"}, extra_choices=[other]), _chunk({}, finish="stop")]
    server.reply(RawEvents(events=chunks))
    async with model_for(server) as model:
        _, response = await collect(model, ask())
    assert response.message.text == "first"


@pytest.mark.parametrize(
    ("status", "message"),
    [
        (401, "OpenAI request failed with HTTP 401 (invalid_api_key): Incorrect API key provided."),
        (
            429,
            "OpenAI request failed with HTTP 429 (rate_limit_exceeded): "
            "Rate limit reached for requests.",
        ),
        (
            500,
            "OpenAI request failed with HTTP 500 (server_error): "
            "The server had an error while processing your request.",
        ),
    ],
)
async def test_http_errors_become_model_errors(
    server: FakeProviderServer, status: int, message: str
) -> None:
    server.reply(ErrorReply(status=status))
    async with model_for(server) as model:
        with pytest.raises(ModelError) as caught:
            await collect(model, ask())
    assert str(caught.value) == message
    assert caught.value.status_code == status
    assert caught.value.provider == "openai"
    assert isinstance(caught.value.__cause__, openai.APIStatusError)


async def test_error_object_mid_stream(server: FakeProviderServer) -> None:
    error = {"error": {"message": "The model is overloaded.", "type": "server_error"}}
    server.reply(RawEvents(events=[_chunk({"content": "par"}), error]))
    async with model_for(server) as model:
        with pytest.raises(ModelError, match=r"^OpenAI stream failed: The model is overloaded\.$"):
            await collect(model, ask())


async def test_stream_without_finish_reason(server: FakeProviderServer) -> None:
    server.reply(RawEvents(events=[_chunk({"content": "cut"})]))
    async with model_for(server) as model:
        with pytest.raises(ModelError, match="ended without a finish_reason"):
            await collect(model, ask())


async def test_connection_refused() -> None:
    with FakeProviderServer() as gone:
        url = gone.openai_base_url
    client = openai.AsyncOpenAI(base_url=url, api_key="k", max_retries=0)
    model = OpenAIModel(MODEL, client=client)
    try:
        with pytest.raises(ModelError, match=r"^OpenAI request failed: Connection error\."):
            await collect(model, ask())
    finally:
        await model.aclose()
        assert not client.is_closed()  # a client passed in belongs to the caller
        await client.close()


async def test_base_url_without_a_key_uses_a_placeholder(
    server: FakeProviderServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    server.reply(Reply(content=["local"]))
    async with OpenAIModel("llama3", base_url=server.openai_base_url) as model:
        _, response = await collect(model, ask())
    assert response.message.text == "local"
    assert server.requests[0].headers["authorization"] == "Bearer no-key-needed"


async def test_missing_key_is_a_model_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    model = OpenAIModel(MODEL)
    with pytest.raises(ModelError, match=r"^OpenAI request failed: Missing credentials"):
        await collect(model, ask())


async def test_aclose_closes_the_client_it_made(server: FakeProviderServer) -> None:
    model = model_for(server)
    client = model.client
    await model.aclose()
    assert client.is_closed()


async def test_client_and_base_url_are_exclusive() -> None:
    client = openai.AsyncOpenAI(api_key="k")
    try:
        with pytest.raises(ValueError, match="either client or api_key/base_url"):
            OpenAIModel(MODEL, client=client, api_key="other")
    finally:
        await client.close()


def test_repr_and_name() -> None:
    model = OpenAIModel(MODEL)
    assert isinstance(model, Model)
    assert model.name == MODEL
    assert repr(model) == "OpenAIModel('gpt-test-1')"


# --- raw chunk helpers -----------------------------------------------------------------------


def _chunk(
    delta: dict[str, Any],
    *,
    finish: str | None = None,
    extra_choices: list[dict[str, Any]] = (),  # type: ignore[assignment]
) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": MODEL,
        "choices": [choice, *extra_choices],
    }


def _call(
    index: int, *, id: str | None = None, name: str | None = None, arguments: str
) -> dict[str, Any]:
    call: dict[str, Any] = {"index": index, "function": {"arguments": arguments}}
    if id is not None:
        call["id"] = id
        call["type"] = "function"
    if name is not None:
        call["function"]["name"] = name
    return call


async def test_connection_cut_mid_stream(server: FakeProviderServer) -> None:
    server.reply(RawEvents(events=[_chunk({"content": "par"})], cut=True))
    async with model_for(server) as model:
        with pytest.raises(ModelError, match="ended without a finish_reason"):
            await collect(model, ask())


async def test_undecodable_chunk(server: FakeProviderServer) -> None:
    server.reply(RawEvents(events=["data: {not json\n\n"]))
    async with model_for(server) as model:
        with pytest.raises(ModelError, match=r"^OpenAI stream failed: JSONDecodeError: "):
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


async def test_a_non_json_error_body_is_shown_shortened(server: FakeProviderServer) -> None:
    page = "<html><body><h1>502 Bad Gateway</h1>\n" + "x" * 1000 + "</body></html>"
    server.reply(ErrorReply(status=502, body=page))
    async with model_for(server) as model:
        with pytest.raises(ModelError) as caught:
            await collect(model, ask())
    message = str(caught.value)
    assert message.startswith(
        "OpenAI request failed with HTTP 502: <html><body><h1>502 Bad Gateway</h1> xxx"
    )
    assert message.endswith("x…")
    assert len(message) < 600
    assert caught.value.status_code == 502
