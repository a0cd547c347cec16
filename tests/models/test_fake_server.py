"""The loopback fake provider server (kode.testing.providers), checked on the wire."""

from __future__ import annotations

import http.client
import json
from typing import Any

import anthropic
import openai
import pytest

from kode.models import TextContent, ThinkingContent, ToolUseContent, Usage
from kode.testing.providers import ErrorReply, FakeProviderServer, RawEvents, RecordedRequest, Reply


def post(
    server: FakeProviderServer, path: str, body: Any, *, chunked: bool = False
) -> tuple[int, dict[str, str], str]:
    host, port = server.url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=5)
    data = json.dumps(body).encode()
    try:
        if chunked:
            connection.putrequest("POST", path)
            connection.putheader("content-type", "application/json")
            connection.putheader("transfer-encoding", "chunked")
            connection.endheaders()
            for piece in (data[:5], data[5:]):
                connection.send(b"%x\r\n%s\r\n" % (len(piece), piece))
            connection.send(b"0\r\n\r\n")
        else:
            connection.request("POST", path, data, {"content-type": "application/json"})
        response = connection.getresponse()
        text = response.read().decode()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, text
    finally:
        connection.close()


def sse(text: str) -> list[tuple[str | None, Any]]:
    """(event name, decoded data) for each server-sent event."""
    events = []
    for raw in text.strip().split("\n\n"):
        name, data = None, ""
        for line in raw.split("\n"):
            if line.startswith("event: "):
                name = line.removeprefix("event: ")
            elif line.startswith("data: "):
                data = line.removeprefix("data: ")
        events.append((name, data if data == "[DONE]" else json.loads(data)))
    return events


REPLY = Reply(
    content=[
        ThinkingContent(thinking="hmm", signature="sig"),
        "Hi you",
        ToolUseContent(id="t1", name="f", input={"a": 1}),
    ],
    chunk_size=4,
    usage=Usage(input_tokens=5, output_tokens=6),
)


def test_anthropic_stream_on_the_wire(server: FakeProviderServer) -> None:
    server.reply(REPLY)
    status, headers, text = post(server, "/v1/messages", {"model": "m", "stream": True})
    assert status == 200
    assert headers["content-type"].startswith("text/event-stream")
    assert headers["request-id"].startswith("req_fake_")
    events = sse(text)
    assert all(name == data["type"] for name, data in events)
    assert [data for _, data in events] == [
        {
            "type": "message_start",
            "message": {
                "id": "msg_fake_0001",
                "type": "message",
                "role": "assistant",
                "model": "m",
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": 5, "output_tokens": 0},
            },
        },
        {"type": "ping"},
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "thinking", "thinking": "", "signature": ""},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "thinking_delta", "thinking": "hmm"},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "signature_delta", "signature": "sig"},
        },
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "text_delta", "text": "Hi y"},
        },
        {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "ou"}},
        {"type": "content_block_stop", "index": 1},
        {
            "type": "content_block_start",
            "index": 2,
            "content_block": {"type": "tool_use", "id": "t1", "name": "f", "input": {}},
        },
        {
            "type": "content_block_delta",
            "index": 2,
            "delta": {"type": "input_json_delta", "partial_json": '{"a"'},
        },
        {
            "type": "content_block_delta",
            "index": 2,
            "delta": {"type": "input_json_delta", "partial_json": ":1}"},
        },
        {"type": "content_block_stop", "index": 2},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use", "stop_sequence": None},
            "usage": {"output_tokens": 6},
        },
        {"type": "message_stop"},
    ]


def test_openai_stream_on_the_wire(server: FakeProviderServer) -> None:
    server.reply(REPLY, REPLY)
    body = {"model": "m", "stream": True, "stream_options": {"include_usage": True}}
    status, headers, text = post(server, "/v1/chat/completions", body)
    assert status == 200
    assert headers["x-request-id"].startswith("req_fake_")
    events = sse(text)
    assert all(name is None for name, _ in events)
    assert events[-1] == (None, "[DONE]")
    chunks = [data for _, data in events[:-1]]
    assert {c["id"] for c in chunks} == {"chatcmpl-fake0001"}
    assert {c["object"] for c in chunks} == {"chat.completion.chunk"}
    assert {c["model"] for c in chunks} == {"m"}
    assert [c["choices"][0]["delta"] if c["choices"] else c["usage"] for c in chunks] == [
        {"role": "assistant", "content": ""},
        {"reasoning_content": "hmm"},
        {"content": "Hi y"},
        {"content": "ou"},
        {
            "tool_calls": [
                {
                    "index": 0,
                    "id": "t1",
                    "type": "function",
                    "function": {"name": "f", "arguments": ""},
                }
            ]
        },
        {"tool_calls": [{"index": 0, "function": {"arguments": '{"a"'}}]},
        {"tool_calls": [{"index": 0, "function": {"arguments": ":1}"}}]},
        {},
        {"prompt_tokens": 5, "completion_tokens": 6, "total_tokens": 11},
    ]
    assert [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]][-1] == "tool_calls"
    # Without stream_options.include_usage there is no usage chunk, as with OpenAI.
    _, _, text = post(server, "/v1/chat/completions", {"model": "m", "stream": True})
    assert all(data == "[DONE]" or data["choices"] for _, data in sse(text))


def test_requests_are_recorded(server: FakeProviderServer) -> None:
    server.reply(Reply(content=["a"]), Reply(content=["b"]))
    post(server, "/v1/messages?beta=true", {"model": "x", "stream": True})
    post(server, "/v1/chat/completions", {"model": "y", "stream": True}, chunked=True)
    first, second = server.requests
    assert first == RecordedRequest(
        method="POST",
        path="/v1/messages",
        headers=first.headers,
        body={"model": "x", "stream": True},
        dialect="anthropic",
    )
    assert first.headers["content-type"] == "application/json"
    assert (second.dialect, second.body) == ("openai", {"model": "y", "stream": True})
    assert server.bodies == [first.body, second.body]
    assert server.pending == 0


@pytest.mark.parametrize(
    ("path", "body"),
    [
        (
            "/v1/messages",
            {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}},
        ),
        (
            "/v1/chat/completions",
            {
                "error": {
                    "message": "slow down",
                    "type": "requests",
                    "param": None,
                    "code": "rate_limit_exceeded",
                }
            },
        ),
    ],
)
def test_error_replies_use_the_provider_shape(
    server: FakeProviderServer, path: str, body: Any
) -> None:
    server.reply(ErrorReply(status=429, message="slow down"))
    status, headers, text = post(server, path, {"stream": True})
    assert (status, json.loads(text)) == (429, body)
    assert headers["content-type"] == "application/json"
    assert headers["x-should-retry"] == "false"


def test_error_fields_can_be_set(server: FakeProviderServer) -> None:
    server.reply(ErrorReply(status=418, message="teapot", type="odd", code="tea"))
    status, _, text = post(server, "/v1/chat/completions", {})
    assert (status, json.loads(text)) == (
        418,
        {"error": {"message": "teapot", "type": "odd", "param": None, "code": "tea"}},
    )


def test_no_reply_left_is_a_500_that_says_so(server: FakeProviderServer) -> None:
    status, _, text = post(server, "/v1/messages", {"stream": True})
    assert status == 500
    assert json.loads(text)["error"]["message"] == (
        "FakeProviderServer has no scripted reply left for request 1 (POST /v1/messages); "
        "script one reply per request the test makes"
    )


def test_non_streaming_requests_are_refused(server: FakeProviderServer) -> None:
    server.reply(Reply(content=["x"]))
    status, _, text = post(server, "/v1/messages", {"model": "m"})
    assert status == 400
    assert "streaming requests only" in json.loads(text)["error"]["message"]


def test_unknown_path_is_404(server: FakeProviderServer) -> None:
    status, _, text = post(server, "/v1/embeddings", {})
    assert status == 404
    assert json.loads(text)["error"]["message"] == "No route for /v1/embeddings."
    assert server.requests[0].dialect is None


def test_raw_events_are_sent_as_given(server: FakeProviderServer) -> None:
    server.reply(
        RawEvents(events=[{"type": "ping"}, ": a comment\n\n"]),
        RawEvents(events=[{"x": 1}], done=False),
    )
    _, _, text = post(server, "/v1/messages", {})
    assert text == 'event: ping\ndata: {"type": "ping"}\n\n: a comment\n\n'
    _, _, text = post(server, "/v1/chat/completions", {})
    assert text == 'data: {"x": 1}\n\n'


def test_url_needs_a_running_server() -> None:
    server = FakeProviderServer()
    with pytest.raises(RuntimeError, match="not running"):
        server.url  # noqa: B018
    server.close()  # closing a server that never started is fine


def test_stop_reason_and_model_can_be_set(server: FakeProviderServer) -> None:
    server.reply(Reply(content=[TextContent(text="x")], stop_reason="max_tokens", model="other"))
    _, _, text = post(server, "/v1/chat/completions", {"model": "m", "stream": True})
    chunks = [data for _, data in sse(text)[:-1]]
    assert chunks[0]["model"] == "other"
    assert chunks[-1]["choices"][0]["finish_reason"] == "length"


@pytest.mark.anyio
@pytest.mark.filterwarnings(  # the openai SDK on trio: see the note in test_openai.py
    r"ignore:Exception ignored in. <async_generator object "
    r"(Response\.aiter_bytes|SSEDecoder\.aiter_bytes|AsyncStream\._iter_events) "
    ":pytest.PytestUnraisableExceptionWarning"
)
async def test_retry_after_lets_the_sdks_retry(server: FakeProviderServer) -> None:
    server.reply(
        ErrorReply(status=529, retry_after=0.01),
        Reply(content=["anthropic ok"]),
        ErrorReply(status=429, retry_after=0.01),
        Reply(content=["openai ok"]),
    )
    claude = anthropic.AsyncAnthropic(base_url=server.url, api_key="k", max_retries=1)
    gpt = openai.AsyncOpenAI(base_url=server.openai_base_url, api_key="k", max_retries=1)
    try:
        events = await claude.messages.create(
            model="m", max_tokens=5, messages=[{"role": "user", "content": "hi"}], stream=True
        )
        async with events:
            kinds = [event.type async for event in events]
        assert kinds[0] == "message_start"
        assert kinds[-1] == "message_stop"
        chunks = await gpt.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}], stream=True
        )
        async with chunks:
            text = "".join([c.choices[0].delta.content or "" async for c in chunks if c.choices])
        assert text == "openai ok"
    finally:
        await claude.close()
        await gpt.close()
    assert [r.headers["x-stainless-retry-count"] for r in server.requests] == ["0", "1", "0", "1"]
