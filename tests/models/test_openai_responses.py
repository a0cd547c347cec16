"""OpenAIResponsesModel with the real `openai` SDK client, against the loopback fake server."""

from __future__ import annotations

from typing import Any

import anyio
import openai
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
from kode.models.openai_responses import OpenAIResponsesModel, responses_tool
from kode.models.responses_input import to_responses_input
from kode.testing.providers import ErrorReply, FakeProviderServer, RawEvents, Reply
from kode.tools import define_tool

pytestmark = pytest.mark.anyio

MODEL = "gpt-test-1"


@define_tool(registry=None)
def now() -> str:
    """The time now."""
    return "12:00"


@define_tool(registry=None)
def tag(labels: dict[str, str]) -> str:
    """Attach labels.

    Args:
        labels: Name to label.
    """
    return "tagged"


def model_for(server: FakeProviderServer, **options: Any) -> OpenAIResponsesModel:
    return OpenAIResponsesModel(
        MODEL, base_url=server.openai_base_url, api_key="test-key", **options
    )


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


def event(kind: str, **data: Any) -> dict[str, Any]:
    return {"type": kind, "sequence_number": 0, **data}


def response(status: str = "completed", **extra: Any) -> dict[str, Any]:
    return {
        "id": "resp_1",
        "object": "response",
        "created_at": 0,
        "status": status,
        "model": MODEL,
        "output": [],
        **extra,
    }


def call_item(index: int, call_id: str, name: str) -> dict[str, Any]:
    item = {
        "id": f"fc_{index}",
        "type": "function_call",
        "status": "in_progress",
        "call_id": call_id,
        "name": name,
        "arguments": "",
    }
    return event("response.output_item.added", output_index=index, item=item)


def args(index: int, delta: str) -> dict[str, Any]:
    return event(
        "response.function_call_arguments.delta",
        item_id=f"fc_{index}",
        output_index=index,
        delta=delta,
    )


async def test_text_streams_in_deltas(server: FakeProviderServer) -> None:
    server.reply(
        Reply(content=["Hello, world!"], chunk_size=5, usage=Usage(input_tokens=9, output_tokens=3))
    )
    async with model_for(server) as model:
        deltas, result = await collect(model, ask())
    assert deltas == [TextDelta(text="Hello"), TextDelta(text=", wor"), TextDelta(text="ld!")]
    assert result.message == Message(role="assistant", content=[TextContent(text="Hello, world!")])
    assert result.stop_reason == "end_turn"
    assert result.usage == Usage(input_tokens=9, output_tokens=3)
    assert result.model == MODEL
    [received] = server.requests
    assert received.path == "/v1/responses"
    assert received.headers["authorization"] == "Bearer test-key"


async def test_request_body_is_exact(server: FakeProviderServer, tools: Any) -> None:
    get_weather, _ = tools
    png = ImageSource(media_type="image/png", data="iVBORw0KGgo=")
    history = [
        Message.user("Weather in Paris, and the time?"),
        Message(
            role="assistant",
            content=[
                ThinkingContent(thinking="Two calls.", signature="ENCRYPTED", provider="openai"),
                ThinkingContent(thinking="Claude's own.", signature="sig-anthropic"),
                TextContent(text="Checking."),
                ToolUseContent(id="call_1", name="get_weather", input={"city": "Paris"}),
                ToolUseContent(id="call_2", name="now", input="{bad json"),
            ],
        ),
        Message(
            role="user",
            content=[
                ToolResultContent(tool_use_id="call_1", content=[TextContent(text="sunny")]),
                ToolResultContent(
                    tool_use_id="call_2",
                    content=[TextContent(text="Invalid arguments."), ImageContent(source=png)],
                    is_error=True,
                ),
                TextContent(text="Thanks."),
            ],
        ),
    ]
    server.reply(Reply(content=["Sunny."]))
    request = ModelRequest(
        system="You are terse.",
        messages=history,
        tools=[get_weather, now, tag],
        settings=ModelSettings(max_tokens=300, temperature=0.0, extra={"top_p": 0.5}),
    )
    async with model_for(server, reasoning={"effort": "low"}) as model:
        await collect(model, request)
    [received] = server.requests
    assert received.body == {
        "model": MODEL,
        "stream": True,
        "store": False,
        "include": ["reasoning.encrypted_content"],
        "instructions": "You are terse.",
        "max_output_tokens": 300,
        "input": [
            {"role": "user", "content": "Weather in Paris, and the time?"},
            {
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": "Two calls."}],
                "encrypted_content": "ENCRYPTED",
            },
            {"role": "assistant", "content": "Checking."},
            {
                "type": "function_call",
                "call_id": "call_1",
                "name": "get_weather",
                "arguments": '{"city":"Paris"}',
            },
            {"type": "function_call", "call_id": "call_2", "name": "now", "arguments": "{bad json"},
            {"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
            {
                "type": "function_call_output",
                "call_id": "call_2",
                "output": [
                    {"type": "input_text", "text": "Error: Invalid arguments."},
                    {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="},
                ],
            },
            {"role": "user", "content": "Thanks."},
        ],
        "tools": [
            {
                "type": "function",
                "name": "get_weather",
                "description": "Get the current weather in a city.",
                "parameters": get_weather.schema("openai")["function"]["parameters"],
                "strict": True,
            },
            {
                "type": "function",
                "name": "now",
                "description": "The time now.",
                "parameters": {
                    "type": "object",
                    "properties": {},
                    "required": [],
                    "additionalProperties": False,
                },
                "strict": True,
            },
            # Not strict (a free-form dict), and said so: the Responses API's default is strict.
            {
                "type": "function",
                "name": "tag",
                "description": "Attach labels.",
                "parameters": tag.input_schema,
                "strict": False,
            },
        ],
        "reasoning": {"effort": "low"},
        "temperature": 0.0,
        "top_p": 0.5,
    }
    assert received.body["input"] == to_responses_input(history)
    assert received.body["tools"][2] == responses_tool(tag)


async def test_reasoning_items_are_carried_to_the_next_turn(server: FakeProviderServer) -> None:
    server.reply(
        Reply(
            content=[
                ThinkingContent(thinking="Think first.", signature="gAAAA-encrypted"),
                ToolUseContent(id="call_1", name="now", input={}),
            ],
            chunk_size=6,
        ),
        Reply(content=["It is noon."]),
    )
    async with model_for(server) as model:
        deltas, first = await collect(model, ask("Time?"))
        assert deltas == [ThinkingDelta(thinking="Think "), ThinkingDelta(thinking="first.")]
        assert first.message.content == [
            ThinkingContent(
                thinking="Think first.", signature="gAAAA-encrypted", provider="openai"
            ),
            ToolUseContent(id="call_1", name="now", input={}),
        ]
        answered = Message(
            role="user",
            content=[ToolResultContent(tool_use_id="call_1", content=[TextContent(text="12:00")])],
        )
        request = ModelRequest(
            system="", messages=[Message.user("Time?"), first.message, answered], tools=[now]
        )
        await collect(model, request)
    assert server.bodies[1]["input"] == [
        {"role": "user", "content": "Time?"},
        {
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": "Think first."}],
            "encrypted_content": "gAAAA-encrypted",
        },
        {"type": "function_call", "call_id": "call_1", "name": "now", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_1", "output": "12:00"},
    ]


async def test_reasoning_without_encrypted_content_is_not_sent_back(
    server: FakeProviderServer,
) -> None:
    server.reply(Reply(content=[ThinkingContent(thinking="hm", signature="x"), "ok"]))
    async with model_for(server, include=[]) as model:
        _, result = await collect(model, ask())
    assert server.bodies[0]["include"] == []
    [thinking, _] = result.message.content
    assert thinking == ThinkingContent(thinking="hm", signature=None, provider="openai")
    assert to_responses_input([result.message]) == [{"role": "assistant", "content": "ok"}]


async def test_parallel_calls_with_a_tool_that_takes_nothing(server: FakeProviderServer) -> None:
    calls = [
        ToolUseContent(id="call_a", name="get_weather", input={"city": "São Paulo"}),
        ToolUseContent(id="call_b", name="now", input={}),
    ]
    server.reply(
        Reply(
            content=["Both:", *calls], chunk_size=1, usage=Usage(input_tokens=20, output_tokens=15)
        )
    )
    async with model_for(server) as model:
        deltas, result = await collect(model, ask())
    assert deltas == [TextDelta(text=c) for c in "Both:"]
    assert result.message.content == [TextContent(text="Both:"), *calls]
    assert result.stop_reason == "tool_use"
    assert result.usage == Usage(input_tokens=20, output_tokens=15)


async def test_interleaved_call_arguments_are_joined_by_output_index(
    server: FakeProviderServer,
) -> None:
    events = [
        event("response.created", response=response("in_progress")),
        call_item(0, "call_a", "get_weather"),
        call_item(1, "call_b", "now"),
        args(0, '{"city":'),
        args(1, "{"),
        args(0, ' "Oslo"}'),
        args(1, "}"),
        event("response.completed", response=response()),
    ]
    server.reply(RawEvents(events=events))
    async with model_for(server) as model:
        _, result = await collect(model, ask())
    assert result.message.tool_uses == [
        ToolUseContent(id="call_a", name="get_weather", input={"city": "Oslo"}),
        ToolUseContent(id="call_b", name="now", input={}),
    ]
    assert result.usage == Usage()  # the final response carried no usage


async def test_malformed_arguments_keep_the_raw_text(server: FakeProviderServer) -> None:
    server.reply(
        Reply(content=[ToolUseContent(id="c1", name="get_weather", input='{"city": Paris}')])
    )
    async with model_for(server) as model:
        _, result = await collect(model, ask())
    assert result.message.tool_uses == [
        ToolUseContent(id="c1", name="get_weather", input='{"city": Paris}')
    ]


async def test_a_call_cut_by_max_tokens(server: FakeProviderServer) -> None:
    call = ToolUseContent(id="c1", name="get_weather", input={"city": "Paris", "unit": "c"})
    server.reply(Reply(content=["Let me check.", call], stop_reason="max_tokens", chunk_size=6))
    async with model_for(server) as model:
        _, result = await collect(model, ask())
    assert result.stop_reason == "max_tokens"
    # The arguments that arrived before the cut: kept as text, for the agent to answer.
    assert result.message.content == [
        TextContent(text="Let me check."),
        ToolUseContent(id="c1", name="get_weather", input='{"city":"Par'),
    ]


async def test_refusal_is_text_and_the_stop_reason(server: FakeProviderServer) -> None:
    server.reply(Reply(content=["I can't help."], stop_reason="refusal", chunk_size=8))
    async with model_for(server) as model:
        deltas, result = await collect(model, ask())
    assert deltas == [TextDelta(text="I can't "), TextDelta(text="help.")]
    assert result.message.content == [TextContent(text="I can't help.")]
    assert result.stop_reason == "refusal"


async def test_incomplete_for_the_content_filter_is_a_refusal(server: FakeProviderServer) -> None:
    done = response("incomplete", incomplete_details={"reason": "content_filter"})
    server.reply(RawEvents(events=[event("response.incomplete", response=done)]))
    async with model_for(server) as model:
        _, result = await collect(model, ask())
    assert result.stop_reason == "refusal"


async def test_a_failed_response_is_a_model_error(server: FakeProviderServer) -> None:
    server.reply(Reply(content=["par"], stop_reason="error"))
    async with model_for(server) as model:
        with pytest.raises(
            ModelError,
            match=r"^OpenAI response failed \(server_error\): The model failed to answer\.$",
        ):
            await collect(model, ask())


async def test_an_error_event_mid_stream(server: FakeProviderServer) -> None:
    error = event("error", code="rate_limit_exceeded", message="Slow down.", param=None)
    server.reply(
        RawEvents(events=[event("response.created", response=response("in_progress")), error])
    )
    async with model_for(server) as model:
        with pytest.raises(
            ModelError, match=r"^OpenAI stream failed \(rate_limit_exceeded\): Slow down\.$"
        ):
            await collect(model, ask())


async def test_stream_without_a_final_event(server: FakeProviderServer) -> None:
    server.reply(RawEvents(events=[event("response.created", response=response("in_progress"))]))
    async with model_for(server) as model:
        with pytest.raises(ModelError, match=r"ended before response\.completed"):
            await collect(model, ask())


async def test_connection_cut_mid_stream(server: FakeProviderServer) -> None:
    created = event("response.created", response=response("in_progress"))
    server.reply(RawEvents(events=[created], cut=True))
    async with model_for(server) as model:
        with pytest.raises(ModelError, match=r"^OpenAI stream failed: Connection error\."):
            await collect(model, ask())


async def test_an_event_for_an_unknown_item_is_malformed(server: FakeProviderServer) -> None:
    server.reply(RawEvents(events=[args(3, "{}")]))
    async with model_for(server) as model:
        with pytest.raises(ModelError, match="an event for output item 3 before"):
            await collect(model, ask())


@pytest.mark.parametrize(
    ("status", "message"),
    [
        (400, "OpenAI request failed with HTTP 400 (invalid_request_error): Invalid request."),
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
        (503, "OpenAI request failed with HTTP 503 (server_error): Error."),
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
    assert len(server.requests) == 1


async def test_missing_key_is_a_model_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    model = OpenAIResponsesModel(MODEL)
    with pytest.raises(ModelError, match=r"^OpenAI request failed: Missing credentials"):
        await collect(model, ask())


async def test_cancelled_stream_leaves_the_model_usable(server: FakeProviderServer) -> None:
    server.reply(Reply(content=["slow " * 20], chunk_size=5, delay=0.02), Reply(content=["fast"]))
    async with model_for(server) as model:
        seen: list[Any] = []
        with anyio.CancelScope() as scope:
            async for item in model.stream(ask()):
                seen.append(item)
                if len(seen) == 3:
                    scope.cancel()
        assert scope.cancelled_caught
        assert seen == [TextDelta(text="slow ")] * 3
        _, result = await collect(model, ask())
    assert result.message.text == "fast"


def test_repr_and_name() -> None:
    model = OpenAIResponsesModel(MODEL)
    assert isinstance(model, Model)
    assert model.name == MODEL
    assert repr(model) == "OpenAIResponsesModel('gpt-test-1')"
