"""The checks every provider model passes, with its real SDK client against the loopback server.

Each test runs for Anthropic, OpenAI Chat Completions, the OpenAI Responses API and Gemini:
repeated ``send_sync``, parallel calls including a tool that takes no arguments, a call cut by
``max_tokens``, HTTP errors 400/401/429/500/503 (``retry-after`` honoured, retries reported as
events), a stream cut mid-way, and 20 tool turns whose every request carries a valid history
in the provider's own format. Options that are not request fields (``timeout``,
``max_retries``) never reach the body.
"""

from __future__ import annotations

import base64
import gc
import itertools
from collections.abc import Sequence
from typing import Any

import pytest

from kode import Agent, AgentTemplate, define_tool
from kode.agent.events import TurnEnd
from kode.models import (
    AnthropicModel,
    Message,
    ModelError,
    ModelRequest,
    ModelResponse,
    ModelRetry,
    ModelSettings,
    OpenAIModel,
    ThinkingContent,
    ToolInputDelta,
    ToolUseContent,
)
from kode.models.gemini import GeminiModel
from kode.models.openai_responses import OpenAIResponsesModel
from kode.registries import ToolRegistry
from kode.testing.providers import ErrorReply, FakeProviderServer, Reply

PROVIDERS = ["anthropic", "openai", "openai-responses", "gemini"]

pytestmark = [
    # On trio only, the SDKs leave some of their stream's async generators to the garbage
    # collector (see test_openai.py and test_gemini.py); the models have already answered.
    pytest.mark.filterwarnings(
        r"ignore:Exception ignored in. <async_generator object "
        r"(Response\.aiter_bytes|SSEDecoder\.aiter_bytes|AsyncStream\._iter_events"
        r"|BoundAsyncStream\.__aiter__|PoolByteStream\.__aiter__"
        r"|HttpResponse\._aiter_response_stream|_aiter_sse_lines) "
        ":pytest.PytestUnraisableExceptionWarning"
    ),
]

REG = ToolRegistry(name="provider-checks")


@define_tool(registry=REG, kind="read")
def add(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: The first.
        b: The second.
    """
    return a + b


@define_tool(registry=REG, kind="read")
def now() -> str:
    """The time now."""
    return "12:00"


Model = AnthropicModel | OpenAIModel | OpenAIResponsesModel | GeminiModel


def model_for(provider: str, server: FakeProviderServer, **options: Any) -> Model:
    if provider == "anthropic":
        return AnthropicModel("claude-test", base_url=server.url, api_key="k", **options)
    if provider == "openai":
        return OpenAIModel("gpt-test", base_url=server.openai_base_url, api_key="k", **options)
    if provider == "openai-responses":
        return OpenAIResponsesModel(
            "gpt-test", base_url=server.openai_base_url, api_key="k", **options
        )
    return GeminiModel("gemini-test", base_url=server.url, api_key="k", **options)


def agent_for(provider: str, server: FakeProviderServer, **template: Any) -> Agent:
    tpl = AgentTemplate(id="checks", tools=["add", "now"], system_prompt="Be brief.", **template)
    return Agent.create(tpl, model=model_for(provider, server), registry=REG)


def history(provider: str, body: dict[str, Any]) -> list[Any]:
    """The conversation a request carried, in the provider's own form.

    Without Anthropic's prompt-cache breakpoints: the one on the last message moves forward
    with each request, as Anthropic asks, and says nothing about the conversation.
    """
    if provider == "gemini":
        return list(body["contents"])
    if provider == "openai-responses":
        return list(body["input"])
    return [_without_cache_control(m) for m in body["messages"]]


def _without_cache_control(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_cache_control(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_without_cache_control(v) for v in value]
    return value


def last_user_text(provider: str, body: dict[str, Any]) -> str:
    last = history(provider, body)[-1]
    if provider == "gemini":
        return " ".join(p.get("text", "") for p in last["parts"])
    content = last["content"]
    if isinstance(content, str):
        return content
    return " ".join(p.get("text", "") for p in content)


# --- what a valid history is, per wire format ----------------------------------------------------


def assert_valid_history(provider: str, body: dict[str, Any]) -> None:
    """Every call answered once, in order, right after it, and no answer without its call."""
    items = history(provider, body)
    if provider == "anthropic":
        _anthropic_history(items)
    elif provider == "openai":
        _chat_history(items)
    elif provider == "openai-responses":
        _responses_history(items)
    else:
        _gemini_history(items)


def _alternates(roles: Sequence[str], first: str) -> None:
    assert roles[0] == first, roles
    assert all(a != b for a, b in itertools.pairwise(roles)), roles


def _anthropic_history(messages: list[dict[str, Any]]) -> None:
    _alternates([m["role"] for m in messages], "user")
    pending: list[str] = []
    for message in messages:
        blocks = message["content"] if isinstance(message["content"], list) else []
        results = [b["tool_use_id"] for b in blocks if b.get("type") == "tool_result"]
        assert results == pending, (results, pending)
        kinds = [b.get("type") == "tool_result" for b in blocks]
        assert kinds == sorted(kinds, reverse=True), "tool results come first"
        pending = [b["id"] for b in blocks if b.get("type") == "tool_use"]
    assert not pending


def _chat_history(messages: list[dict[str, Any]]) -> None:
    assert messages[0] == {"role": "system", "content": "Be brief."}
    pending: list[str] = []
    for message in messages[1:]:
        if message["role"] == "tool":
            assert pending, f"a tool message answers no call: {message}"
            assert message["tool_call_id"] == pending.pop(0)
            continue
        assert not pending, f"calls {pending} unanswered before {message}"
        if message["role"] == "assistant":
            pending = [c["id"] for c in message.get("tool_calls") or ()]
    assert not pending


def _responses_history(items: list[dict[str, Any]]) -> None:
    pending: list[str] = []
    answering = False
    for item in items:
        kind = item.get("type", "message")
        assert "id" not in item, "stateless requests refer to no stored item"
        if kind == "function_call":
            assert not answering, "a call among the outputs of the previous calls"
            pending.append(item["call_id"])
        elif kind == "function_call_output":
            answering = True
            assert pending, f"an output answers no call: {item}"
            assert item["call_id"] == pending.pop(0)
        else:
            assert not pending, f"calls {pending} unanswered before {item}"
            answering = False
    assert not pending


def _gemini_history(contents: list[dict[str, Any]]) -> None:
    _alternates([c["role"] for c in contents], "user")
    pending: list[tuple[str, str]] = []
    for content in contents:
        parts = content["parts"]
        assert parts, "Gemini refuses an empty content"
        answers = [
            (p["functionResponse"]["id"], p["functionResponse"]["name"])
            for p in parts
            if "functionResponse" in p
        ]
        assert answers == pending, (answers, pending)
        pending = [
            (p["functionCall"]["id"], p["functionCall"]["name"])
            for p in parts
            if "functionCall" in p
        ]
    assert not pending


# --- the checks ----------------------------------------------------------------------------------


@pytest.mark.parametrize("provider", PROVIDERS)
def test_send_sync_again_and_again(provider: str, server: FakeProviderServer) -> None:
    """Every ``send_sync`` runs a new event loop: the model makes a client for each."""
    server.reply(*(Reply(content=[f"reply {n}"]) for n in range(4)))
    agent = agent_for(provider, server)
    answers = [agent.send_sync(f"question {n}").text for n in range(4)]
    assert answers == ["reply 0", "reply 1", "reply 2", "reply 3"]
    assert len(server.requests) == 4  # each sent once
    for n, body in enumerate(server.bodies):
        assert f"question {n}" in last_user_text(provider, body)
        assert_valid_history(provider, body)
    gc.collect()  # an unclosed connection would be reported here (warnings are errors)


@pytest.mark.anyio
@pytest.mark.parametrize("provider", PROVIDERS)
async def test_parallel_calls_with_a_tool_that_takes_no_arguments(
    provider: str, server: FakeProviderServer
) -> None:
    server.reply(
        Reply(
            content=[
                "Let me look.",
                ToolUseContent(id="call_1", name="now", input={}),
                ToolUseContent(id="call_2", name="add", input={"a": 2, "b": 3}),
                ToolUseContent(id="call_3", name="now", input={}),
            ]
        ),
        Reply(content=["It is 12:00 and 2 + 3 = 5."]),
    )
    reply = await agent_for(provider, server).send("What time is it, and what is 2 + 3?")
    assert reply.text == "It is 12:00 and 2 + 3 = 5."
    second = server.bodies[1]
    assert_valid_history(provider, second)
    outputs = _outputs(provider, second)
    assert outputs == [("call_1", "12:00"), ("call_2", "5"), ("call_3", "12:00")]


def _outputs(provider: str, body: dict[str, Any]) -> list[tuple[str, str]]:
    """(call id, result text) of every tool result in the request, in order."""
    items = history(provider, body)
    if provider == "anthropic":
        return [
            (b["tool_use_id"], b["content"][0]["text"] if b["content"] else "")
            for m in items
            if isinstance(m["content"], list)
            for b in m["content"]
            if b["type"] == "tool_result"
        ]
    if provider == "openai":
        return [(m["tool_call_id"], m["content"]) for m in items if m["role"] == "tool"]
    if provider == "openai-responses":
        return [
            (i["call_id"], i["output"]) for i in items if i.get("type") == "function_call_output"
        ]
    return [
        (p["functionResponse"]["id"], str(p["functionResponse"]["response"]["output"]))
        for c in items
        for p in c["parts"]
        if "functionResponse" in p
    ]


@pytest.mark.anyio
@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_call_cut_by_max_tokens(provider: str, server: FakeProviderServer) -> None:
    """The cut call gets a result the model can act on; the next request is still valid."""
    call = ToolUseContent(id="call_cut", name="add", input={"a": 1, "b": 2})
    server.reply(
        Reply(content=["Adding.", call], stop_reason="max_tokens"),
        Reply(content=["Sorry, once more."]),
    )
    events: list[Any] = []
    reply = await agent_for(provider, server).send("1 + 2?", on_event=events.append)
    assert reply.text == "Sorry, once more."
    ends = [e for e in events if isinstance(e, TurnEnd)]
    assert [e.stop_reason for e in ends] == ["max_tokens", "end_turn"]
    assert_valid_history(provider, server.bodies[1])
    [(call_id, _)] = _outputs(provider, server.bodies[1])
    assert call_id == "call_cut"


@pytest.mark.anyio
@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("status", [400, 401, 500])
async def test_errors_that_are_not_retried(
    provider: str, status: int, server: FakeProviderServer
) -> None:
    """400 and 401 never succeed; a 500 the server says not to retry is not retried."""
    server.reply(ErrorReply(status=status, message=f"status {status} here"))
    async with model_for(provider, server) as model:
        with pytest.raises(ModelError) as caught:
            _ = [event async for event in model.stream(_request())]
    error = caught.value
    assert error.status_code == status
    assert f"status {status} here" in str(error)
    assert not error.retryable
    assert len(server.requests) == 1


@pytest.mark.anyio
@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("status", [429, 503, 500])
async def test_retry_after_is_honoured_and_reported(
    provider: str, status: int, server: FakeProviderServer
) -> None:
    server.reply(
        ErrorReply(status=status, retry_after=0.05),
        ErrorReply(status=status, retry_after=0.02),
        Reply(content=["At last."]),
    )
    events: list[Any] = []
    reply = await agent_for(provider, server).send("Hi", on_event=events.append)
    assert reply.text == "At last."
    retries = [e for e in events if isinstance(e, ModelRetry)]
    assert [(r.attempt, r.max_retries, r.delay) for r in retries] == [(1, 2, 0.05), (2, 2, 0.02)]
    assert all(r.error.status_code == status and r.error.retryable for r in retries)
    assert retries[0].type == "model_retry"
    assert len(server.requests) == 3
    # kode retries, not the SDK: none of the requests says it is an SDK retry
    assert all(r.headers.get("x-stainless-retry-count", "0") == "0" for r in server.requests)
    assert server.bodies[0] == server.bodies[2]


@pytest.mark.anyio
@pytest.mark.parametrize("provider", PROVIDERS)
async def test_retries_run_out(provider: str, server: FakeProviderServer) -> None:
    server.reply(*(ErrorReply(status=503, retry_after=0.01) for _ in range(2)))
    async with model_for(provider, server, max_retries=1) as model:
        seen: list[Any] = []
        with pytest.raises(ModelError) as caught:
            async for event in model.stream(_request()):
                seen.append(event)
    assert [type(e) for e in seen] == [ModelRetry]
    assert caught.value.status_code == 503
    assert len(server.requests) == 2


@pytest.mark.anyio
@pytest.mark.parametrize("provider", PROVIDERS)
async def test_max_retries_zero_in_the_settings(provider: str, server: FakeProviderServer) -> None:
    server.reply(ErrorReply(status=429, retry_after=0.01))
    settings = ModelSettings(extra={"max_retries": 0, "timeout": 5})
    async with model_for(provider, server) as model:
        with pytest.raises(ModelError) as caught:
            _ = [event async for event in model.stream(_request(settings=settings))]
    assert caught.value.status_code == 429
    assert caught.value.retryable
    assert len(server.requests) == 1


@pytest.mark.anyio
@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_stream_cut_mid_way(provider: str, server: FakeProviderServer) -> None:
    """Not retried (its start was already streamed); the model stays usable."""
    server.reply(
        Reply(content=["This answer will never end"], chunk_size=2, cut_after=5),
        Reply(content=["Whole."]),
    )
    async with model_for(provider, server) as model:
        seen: list[Any] = []
        with pytest.raises(ModelError) as caught:
            async for event in model.stream(_request()):
                seen.append(event)
        assert seen, "the start of the stream came through"
        assert not any(isinstance(e, ModelResponse | ModelRetry) for e in seen)
        assert len(server.requests) == 1
        events = [event async for event in model.stream(_request())]
    assert caught.value.provider in ("anthropic", "openai", "gemini")
    assert isinstance(events[-1], ModelResponse)
    assert events[-1].message.text == "Whole."


@pytest.mark.anyio
@pytest.mark.parametrize("provider", PROVIDERS)
async def test_twenty_tool_turns_each_with_a_valid_history(
    provider: str, server: FakeProviderServer
) -> None:
    """Thinking (signed) and calls, one or several a turn, for 20 turns; then the answer."""
    for turn in range(20):
        signature = _b64(f"sig{turn}")
        content: list[Any] = [ThinkingContent(thinking=f"turn {turn}", signature=signature)]
        content.append(ToolUseContent(id=f"c{turn}", name="add", input={"a": turn, "b": 1}))
        if turn % 4 == 0:
            content.append(ToolUseContent(id=f"t{turn}", name="now", input={}))
        if turn % 3 == 0:
            content.insert(1, f"Turn {turn}.")
        server.reply(Reply(content=content))
    server.reply(Reply(content=["All done."]))
    agent = agent_for(provider, server)
    reply = await agent.send("Count to twenty.")
    assert reply.text == "All done."
    assert reply.turns == 21
    bodies = server.bodies
    assert len(bodies) == 21
    for before, after in itertools.pairwise(bodies):
        assert_valid_history(provider, after)
        sent = history(provider, before)
        assert history(provider, after)[: len(sent)] == sent, "history was rewritten"
    assert_valid_history(provider, bodies[0])
    outputs = _outputs(provider, bodies[-1])
    assert len(outputs) == 20 + 5
    assert [text for call_id, text in outputs if call_id.startswith("c")] == [
        str(turn + 1) for turn in range(20)
    ]
    signatures = _signatures(provider, bodies[-1])
    if provider == "openai":  # Chat Completions has no way to send reasoning back
        assert signatures == []
    else:
        assert signatures == [_b64(f"sig{turn}") for turn in range(20)]


def _b64(text: str) -> str:
    """Signatures are base64 text (Gemini's SDK decodes them)."""
    return base64.b64encode(text.encode()).decode()


def _signatures(provider: str, body: dict[str, Any]) -> list[str]:
    """The signed reasoning a request carries back, in order."""
    items = history(provider, body)
    if provider == "anthropic":
        return [
            b["signature"]
            for m in items
            if isinstance(m["content"], list)
            for b in m["content"]
            if b["type"] == "thinking"
        ]
    if provider == "openai-responses":
        return [i["encrypted_content"] for i in items if i.get("type") == "reasoning"]
    if provider == "gemini":
        return [p["thoughtSignature"] for c in items for p in c["parts"] if p.get("thought")]
    return [m["reasoning_content"] for m in items if "reasoning_content" in m]


@pytest.mark.anyio
@pytest.mark.parametrize("provider", PROVIDERS)
async def test_timeout_and_max_retries_are_not_sent(
    provider: str, server: FakeProviderServer
) -> None:
    server.reply(Reply(content=["one"]), Reply(content=["two"]))
    settings = ModelSettings(extra={"timeout": 3, "max_retries": 1, "top_p": 0.5})
    async with model_for(provider, server, timeout=2, max_retries=0) as model:
        _ = [event async for event in model.stream(_request())]
        _ = [event async for event in model.stream(_request(settings=settings))]
    for body in server.bodies:
        text = str(body)
        assert "timeout" not in text and "max_retries" not in text, body
    config = server.bodies[1].get("generationConfig", server.bodies[1])
    assert config["top_p" if provider != "gemini" else "topP"] == 0.5


@pytest.mark.parametrize("provider", PROVIDERS)
def test_stream_in_the_settings_is_refused(provider: str, server: FakeProviderServer) -> None:
    with pytest.raises(ValueError, match="'stream' cannot be set"):
        model_for(provider, server, stream=False)
    with pytest.raises(ValueError, match="'stream' cannot be set in model_settings"):
        AgentTemplate(id="t", model_settings={"stream": False})


@pytest.mark.anyio
@pytest.mark.parametrize("provider", PROVIDERS)
async def test_stream_in_a_request_is_a_clear_error(
    provider: str, server: FakeProviderServer
) -> None:
    async with model_for(provider, server) as model:
        with pytest.raises(ModelError, match="'stream' cannot be set"):
            _ = [
                e async for e in model.stream(_request(settings=ModelSettings(extra={"stream": 0})))
            ]
    assert server.requests == []


def _request(**options: Any) -> ModelRequest:
    return ModelRequest(system="", messages=[Message.user("Hi")], tools=[], **options)


@pytest.mark.anyio
@pytest.mark.parametrize("provider", PROVIDERS)
async def test_call_arguments_stream_in_pieces(provider: str, server: FakeProviderServer) -> None:
    """Each call's pieces, joined, are its arguments (Gemini sends calls whole: no pieces)."""
    server.reply(
        Reply(
            content=[
                ToolUseContent(id="call_1", name="add", input={"a": 20, "b": 22}),
                ToolUseContent(id="call_2", name="now", input={}),
                ToolUseContent(id="call_3", name="add", input={"a": 1, "b": 2}),
            ],
            chunk_size=3,
        )
    )
    async with model_for(provider, server) as model:
        events = [event async for event in model.stream(_request())]
    pieces: dict[tuple[str, str], list[str]] = {}
    for event in events:
        if isinstance(event, ToolInputDelta):
            pieces.setdefault((event.id, event.name), []).append(event.text)
    if provider == "gemini":
        assert pieces == {}
        return
    joined = {key: "".join(texts) for key, texts in pieces.items()}
    assert joined == {
        ("call_1", "add"): '{"a":20,"b":22}',
        ("call_2", "now"): "{}",
        ("call_3", "add"): '{"a":1,"b":2}',
    }
    assert len(pieces["call_1", "add"]) == 5  # streamed in pieces of 3 characters
    response = events[-1]
    assert isinstance(response, ModelResponse)
    assert [c.input for c in response.message.tool_uses] == [
        {"a": 20, "b": 22},
        {},
        {"a": 1, "b": 2},
    ]
