"""GeminiModel with the real `google-genai` SDK client, against the loopback fake server."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from google import genai
from google.genai import errors as genai_errors

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
    ToolResultContent,
    ToolUseContent,
    Usage,
)
from kode.models.gemini import GeminiModel
from kode.models.gemini_contents import to_gemini_contents
from kode.testing.providers import ErrorReply, FakeProviderServer, RawEvents, Reply
from kode.tools import define_tool

pytestmark = [
    pytest.mark.anyio,
    # On trio only: when a chunk cannot be decoded, the google-genai SDK raises from inside its
    # stream and leaves its inner async generators (HttpResponse._aiter_response_stream,
    # _aiter_sse_lines, httpx2's Response.aiter_bytes) to the garbage collector; trio closes
    # them and reports each with a ResourceWarning. The model has already raised its ModelError.
    pytest.mark.filterwarnings(
        r"ignore:Exception ignored in. <async_generator object "
        r"(HttpResponse\._aiter_response_stream|_aiter_sse_lines|Response\.aiter_bytes) "
        ":pytest.PytestUnraisableExceptionWarning"
    ),
]

MODEL = "gemini-test-1"


@define_tool(registry=None)
def now() -> str:
    """The time now."""
    return "12:00"


def model_for(server: FakeProviderServer, **options: Any) -> GeminiModel:
    return GeminiModel(MODEL, base_url=server.url, api_key="test-key", **options)


def ask(text: str = "Hi", **options: Any) -> ModelRequest:
    return ModelRequest(system="", messages=[Message.user(text)], tools=[], **options)


async def collect(model: Model, request: ModelRequest) -> tuple[list[Any], ModelResponse]:
    """Stream to the end: the deltas, and the one final response (which must come last)."""
    events = [event async for event in model.stream(request)]
    *deltas, last = events
    assert isinstance(last, ModelResponse)
    assert all(isinstance(d, TextDelta | ThinkingDelta) for d in deltas)
    return deltas, last


def chunk(
    parts: list[dict[str, Any]] | None = None,
    *,
    finish: str | None = None,
    usage: dict[str, Any] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    candidate: dict[str, Any] = {"index": 0}
    if parts is not None:
        candidate["content"] = {"role": "model", "parts": parts}
    if finish is not None:
        candidate["finishReason"] = finish
    out: dict[str, Any] = {"candidates": [candidate], "modelVersion": MODEL, **extra}
    if usage is not None:
        out["usageMetadata"] = usage
    return out


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
    [received] = server.requests
    assert received.path == f"/v1/models/{MODEL}:streamGenerateContent"
    assert received.headers["x-goog-api-key"] == "test-key"


async def test_request_body_is_exact(server: FakeProviderServer, tools: Any) -> None:
    get_weather, _ = tools
    png = ImageSource(media_type="image/png", data="iVBORw0KGgo=")
    history = [
        Message.user("Weather in Paris, and the time?"),
        Message(
            role="assistant",
            content=[
                ThinkingContent(thinking="Two calls.", signature="c2ln", provider="gemini"),
                ThinkingContent(thinking="Claude's own.", signature="sig-anthropic"),
                TextContent(text="Checking."),
                ThinkingContent(thinking="", signature="YWJj", provider="gemini"),
                ToolUseContent(id="c1", name="get_weather", input={"city": "Paris"}),
                ToolUseContent(id="c2", name="now", input="{bad json"),
            ],
        ),
        Message(
            role="user",
            content=[
                ToolResultContent(tool_use_id="c1", content=[TextContent(text='{"temp": 21}')]),
                ToolResultContent(
                    tool_use_id="c2",
                    content=[TextContent(text="Invalid arguments."), ImageContent(source=png)],
                    is_error=True,
                ),
                TextContent(text="Thanks."),
            ],
        ),
    ]
    server.reply(Reply(content=["21 degrees."]))
    request = ModelRequest(
        system="You are terse.",
        messages=history,
        tools=[get_weather, now],
        settings=ModelSettings(max_tokens=300, temperature=0.5, extra={"top_k": 5}),
    )
    async with model_for(server, candidate_count=1) as model:
        await collect(model, request)
    [received] = server.requests
    assert received.body == {
        "contents": [
            {"role": "user", "parts": [{"text": "Weather in Paris, and the time?"}]},
            {
                "role": "model",
                "parts": [
                    {"text": "Two calls.", "thought": True, "thoughtSignature": "c2ln"},
                    {"text": "Checking."},
                    {
                        "functionCall": {
                            "id": "c1",
                            "name": "get_weather",
                            "args": {"city": "Paris"},
                        },
                        "thoughtSignature": "YWJj",
                    },
                    {
                        "functionCall": {
                            "id": "c2",
                            "name": "now",
                            "args": {"_invalid_json": "{bad json"},
                        }
                    },
                ],
            },
            {
                "role": "user",
                "parts": [
                    {
                        "functionResponse": {
                            "id": "c1",
                            "name": "get_weather",
                            "response": {"output": {"temp": 21}},
                        }
                    },
                    {
                        "functionResponse": {
                            "id": "c2",
                            "name": "now",
                            "response": {"error": "Invalid arguments."},
                            # The SDK writes a function response's parts in snake_case (the
                            # API's JSON reader takes both spellings).
                            "parts": [
                                {"inline_data": {"mime_type": "image/png", "data": png.data}}
                            ],
                        }
                    },
                    {"text": "Thanks."},
                ],
            },
        ],
        "systemInstruction": {"role": "user", "parts": [{"text": "You are terse."}]},
        "tools": [
            {
                "functionDeclarations": [
                    {
                        "name": "get_weather",
                        "description": "Get the current weather in a city.",
                        "parameters": {
                            "type": "OBJECT",
                            "properties": {
                                "city": {
                                    "type": "STRING",
                                    "description": 'The city, e.g. "Paris".',
                                },
                                "unit": {"type": "STRING", "description": '"c" or "f".'},
                            },
                            "required": ["city"],
                        },
                    },
                    {"name": "now", "description": "The time now."},
                ]
            }
        ],
        "generationConfig": {
            "candidateCount": 1,
            "temperature": 0.5,
            "topK": 5.0,
            "maxOutputTokens": 300,
        },
    }
    assert received.body["contents"][:2] == to_gemini_contents(history)[:2]


async def test_no_system_and_no_tools_are_left_out(server: FakeProviderServer) -> None:
    server.reply(Reply(content=["ok"]))
    async with model_for(server, max_tokens=64) as model:
        await collect(model, ask("ping"))
    assert server.bodies == [
        {
            "contents": [{"role": "user", "parts": [{"text": "ping"}]}],
            "generationConfig": {"maxOutputTokens": 64},
        }
    ]


async def test_parallel_calls_with_a_tool_that_takes_nothing(server: FakeProviderServer) -> None:
    calls = [
        ToolUseContent(id="call_a", name="get_weather", input={"city": "Paris"}),
        ToolUseContent(id="call_b", name="now", input={}),
    ]
    server.reply(Reply(content=["Both:", *calls], usage=Usage(input_tokens=20, output_tokens=15)))
    async with model_for(server) as model:
        _, response = await collect(model, ask())
    assert response.message.content == [TextContent(text="Both:"), *calls]
    assert response.stop_reason == "tool_use"
    assert response.usage == Usage(input_tokens=20, output_tokens=15)


async def test_a_call_without_an_id_gets_one(server: FakeProviderServer) -> None:
    part = {"functionCall": {"name": "now"}}
    server.reply(RawEvents(events=[chunk([part], finish="STOP")]))
    async with model_for(server) as model:
        _, response = await collect(model, ask())
    [call] = response.message.tool_uses
    assert call.id.startswith("call_1_")
    assert (call.name, call.input) == ("now", {})


async def test_thought_signatures_go_back_on_their_parts(server: FakeProviderServer) -> None:
    """A response's thinking and signatures, sent back with the next request, are unchanged."""
    server.reply(
        RawEvents(
            events=[
                chunk([{"text": "Let me ", "thought": True}]),
                chunk([{"text": "think.", "thought": True, "thoughtSignature": "dGhvdWdodA=="}]),
                chunk([{"text": "Calling."}]),
                chunk(
                    [
                        {
                            "functionCall": {"id": "f1", "name": "now", "args": {}},
                            "thoughtSignature": "Y2FsbA==",
                        },
                        {"functionCall": {"id": "f2", "name": "now", "args": {}}},
                    ]
                ),
                chunk([{"text": "", "thoughtSignature": "ZW5k"}], finish="STOP"),
            ]
        ),
        Reply(content=["Done."]),
    )
    async with model_for(server) as model:
        deltas, first = await collect(model, ask())
        assert deltas == [
            ThinkingDelta(thinking="Let me "),
            ThinkingDelta(thinking="think."),
            TextDelta(text="Calling."),
        ]
        assert first.message.content == [
            ThinkingContent(thinking="Let me think.", signature="dGhvdWdodA==", provider="gemini"),
            TextContent(text="Calling."),
            ThinkingContent(thinking="", signature="Y2FsbA==", provider="gemini"),
            ToolUseContent(id="f1", name="now", input={}),
            ToolUseContent(id="f2", name="now", input={}),
            ThinkingContent(thinking="", signature="ZW5k", provider="gemini"),
        ]
        results = Message(
            role="user",
            content=[
                ToolResultContent(tool_use_id="f1", content=[TextContent(text="12:00")]),
                ToolResultContent(tool_use_id="f2", content=[TextContent(text="12:00")]),
            ],
        )
        request = ModelRequest(
            system="", messages=[Message.user("Hi"), first.message, results], tools=[now]
        )
        await collect(model, request)
    assert server.bodies[1]["contents"][1] == {
        "role": "model",
        "parts": [
            {"text": "Let me think.", "thought": True, "thoughtSignature": "dGhvdWdodA=="},
            {"text": "Calling."},
            {
                "functionCall": {"id": "f1", "name": "now", "args": {}},
                "thoughtSignature": "Y2FsbA==",
            },
            {"functionCall": {"id": "f2", "name": "now", "args": {}}},
            {"text": "", "thoughtSignature": "ZW5k"},
        ],
    }


async def test_thinking_from_another_provider_is_not_sent() -> None:
    message = Message(
        role="assistant",
        content=[
            ThinkingContent(thinking="hm", signature="anthropic-sig"),
            ThinkingContent(thinking="r"),
        ],
    )
    assert to_gemini_contents([Message.user("Hi"), message]) == [
        {"role": "user", "parts": [{"text": "Hi"}]}
    ]


@pytest.mark.parametrize(
    ("finish", "with_call", "expected"),
    [
        ("STOP", False, "end_turn"),
        ("STOP", True, "tool_use"),
        ("MAX_TOKENS", False, "max_tokens"),
        ("MAX_TOKENS", True, "max_tokens"),
        ("SAFETY", False, "refusal"),
        ("RECITATION", False, "refusal"),
        ("PROHIBITED_CONTENT", False, "refusal"),
        ("MALFORMED_FUNCTION_CALL", False, "error"),
        ("OTHER", False, "end_turn"),
        ("LANGUAGE", False, "refusal"),
        ("FINISH_REASON_UNSPECIFIED", False, "end_turn"),
    ],
)
async def test_finish_reasons(
    server: FakeProviderServer, finish: str, with_call: bool, expected: str
) -> None:
    parts: list[dict[str, Any]] = [{"text": "x"}]
    if with_call:
        parts.append({"functionCall": {"id": "c", "name": "now", "args": {}}})
    server.reply(RawEvents(events=[chunk(parts), chunk(finish=finish)]))
    async with model_for(server) as model:
        _, response = await collect(model, ask())
    assert response.stop_reason == expected
    assert len(response.message.tool_uses) == with_call


async def test_a_blocked_prompt_is_a_refusal(server: FakeProviderServer) -> None:
    blocked = {"promptFeedback": {"blockReason": "SAFETY"}, "modelVersion": MODEL}
    server.reply(RawEvents(events=[blocked]))
    async with model_for(server) as model:
        _, response = await collect(model, ask())
    assert (response.stop_reason, response.message.content) == ("refusal", [])


async def test_usage_counts_thoughts_and_tool_prompts(server: FakeProviderServer) -> None:
    usage = {
        "promptTokenCount": 100,
        "cachedContentTokenCount": 40,
        "toolUsePromptTokenCount": 5,
        "candidatesTokenCount": 7,
        "thoughtsTokenCount": 30,
        "totalTokenCount": 142,
    }
    early = {"promptTokenCount": 100, "totalTokenCount": 100}
    server.reply(
        RawEvents(events=[chunk([{"text": "a"}], usage=early), chunk(finish="STOP", usage=usage)])
    )
    async with model_for(server) as model:
        _, response = await collect(model, ask())
    assert response.usage == Usage(input_tokens=105, output_tokens=37)


async def test_only_candidate_zero_is_read(server: FakeProviderServer) -> None:
    other = {"index": 1, "content": {"role": "model", "parts": [{"text": "other"}]}}
    first = chunk([{"text": "first"}], finish="STOP")
    first["candidates"].append(other)
    server.reply(RawEvents(events=[first]))
    async with model_for(server) as model:
        _, response = await collect(model, ask())
    assert response.message.text == "first"


@pytest.mark.parametrize(
    ("status", "message"),
    [
        (
            400,
            "Gemini request failed with HTTP 400 (INVALID_ARGUMENT): "
            "Request contains an invalid argument.",
        ),
        (
            401,
            "Gemini request failed with HTTP 401 (UNAUTHENTICATED): "
            "API key not valid. Please pass a valid API key.",
        ),
        (
            429,
            "Gemini request failed with HTTP 429 (RESOURCE_EXHAUSTED): "
            "Resource has been exhausted (e.g. check quota).",
        ),
        (500, "Gemini request failed with HTTP 500 (INTERNAL): An internal error has occurred."),
        (
            503,
            "Gemini request failed with HTTP 503 (UNAVAILABLE): "
            "The model is overloaded. Please try again later.",
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
    assert caught.value.provider == "gemini"
    assert caught.value.retryable is False  # the fake server says x-should-retry: false
    assert isinstance(caught.value.__cause__, genai_errors.APIError)
    assert len(server.requests) == 1


async def test_error_object_mid_stream(server: FakeProviderServer) -> None:
    error = {"error": {"code": 500, "message": "Internal error mid-stream.", "status": "INTERNAL"}}
    server.reply(RawEvents(events=[chunk([{"text": "par"}]), error]))
    async with model_for(server) as model:
        with pytest.raises(
            ModelError, match=r"^Gemini stream failed \(INTERNAL\): Internal error mid-stream\.$"
        ):
            await collect(model, ask())


async def test_stream_without_finish_reason(server: FakeProviderServer) -> None:
    server.reply(RawEvents(events=[chunk([{"text": "cut"}])]))
    async with model_for(server) as model:
        with pytest.raises(ModelError, match="ended without a finishReason"):
            await collect(model, ask())


async def test_connection_cut_mid_stream(server: FakeProviderServer) -> None:
    server.reply(RawEvents(events=[chunk([{"text": "par"}])], cut=True))
    async with model_for(server) as model:
        with pytest.raises(
            ModelError, match=r"^Gemini stream failed: RemoteProtocolError: peer closed connection"
        ):
            await collect(model, ask())


async def test_undecodable_chunk(server: FakeProviderServer) -> None:
    server.reply(RawEvents(events=["data: {not json\n\n"]))
    async with model_for(server) as model:
        with pytest.raises(ModelError, match=r"^Gemini stream failed: UnknownApiResponseError: "):
            await collect(model, ask())


async def test_connection_refused() -> None:
    with FakeProviderServer() as gone:
        url = gone.url
    model = GeminiModel(MODEL, base_url=url, api_key="k", max_retries=0)
    try:
        with pytest.raises(ModelError, match=r"^Gemini request failed: ConnectError: ") as caught:
            await collect(model, ask())
        assert caught.value.retryable
    finally:
        await model.aclose()


async def test_a_non_json_error_body_is_shown_shortened(server: FakeProviderServer) -> None:
    page = "<html><body><h1>502 Bad Gateway</h1>\n" + "x" * 1000 + "</body></html>"
    server.reply(ErrorReply(status=502, body=page))
    async with model_for(server) as model:
        with pytest.raises(ModelError) as caught:
            await collect(model, ask())
    message = str(caught.value)
    assert message.startswith("Gemini request failed with HTTP 502 (Bad Gateway): <html><body>")
    assert message.endswith("x…")
    assert len(message) < 600
    assert caught.value.status_code == 502


async def test_missing_key_is_a_model_error(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI"):
        monkeypatch.delenv(name, raising=False)
    model = GeminiModel(MODEL)
    with pytest.raises(ModelError, match=r"^Gemini request failed: ValueError: No API key"):
        await collect(model, ask())


async def test_base_url_without_a_key_uses_a_placeholder(
    server: FakeProviderServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    server.reply(Reply(content=["local"]))
    async with GeminiModel(MODEL, base_url=server.url) as model:
        _, response = await collect(model, ask())
    assert response.message.text == "local"
    assert server.requests[0].headers["x-goog-api-key"] == "no-key-needed"


def test_unknown_settings_are_refused_at_once() -> None:
    with pytest.raises(ValueError, match=r"'top_kk' is not a GenerateContentConfig field"):
        GeminiModel(MODEL, top_kk=3)


async def test_settings_the_sdk_refuses_are_a_model_error(server: FakeProviderServer) -> None:
    async with model_for(server) as model:
        request = ask(settings=ModelSettings(extra={"temperature": "hot"}))
        with pytest.raises(ModelError, match=r"^Gemini request is invalid: temperature: "):
            await collect(model, request)
    assert server.requests == []


async def test_aclose_closes_the_client_it_made(server: FakeProviderServer) -> None:
    server.reply(Reply(content=["ok"]))
    model = model_for(server)
    await collect(model, ask())
    http = model.client._api_client._async_httpx_client
    assert not http.is_closed
    await model.aclose()
    assert http.is_closed


async def test_client_and_base_url_are_exclusive() -> None:
    client = genai.Client(api_key="k")
    with pytest.raises(ValueError, match="either client or api_key/base_url"):
        GeminiModel(MODEL, client=client, api_key="other")


async def test_cancelled_stream_leaves_the_model_usable(server: FakeProviderServer) -> None:
    server.reply(Reply(content=["slow " * 20], chunk_size=5, delay=0.02), Reply(content=["fast"]))
    async with model_for(server) as model:
        seen: list[Any] = []
        with anyio.CancelScope() as scope:
            async for event in model.stream(ask()):
                seen.append(event)
                if len(seen) == 3:
                    scope.cancel()
        assert scope.cancelled_caught
        assert seen == [TextDelta(text="slow ")] * 3
        _, response = await collect(model, ask())
    assert response.message.text == "fast"


def test_repr_and_name() -> None:
    model = GeminiModel(MODEL)
    assert isinstance(model, Model)
    assert model.name == MODEL
    assert repr(model) == "GeminiModel('gemini-test-1')"
