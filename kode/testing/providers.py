"""A fake Anthropic / OpenAI / Gemini server on the loopback interface, for real SDK clients.

This module owns `FakeProviderServer`: a small HTTP server (the standard library's, in a
thread, so it serves asyncio and trio tests alike) that speaks the four streaming wire formats
kode's models use. ``POST /v1/messages`` answers like the Anthropic Messages API with
``stream: true`` (``message_start``, ``content_block_start`` / ``_delta`` (``text_delta``,
``thinking_delta``, ``signature_delta``, ``input_json_delta``) / ``_stop``, ``message_delta``,
``message_stop``); ``POST .../chat/completions`` answers like OpenAI Chat Completions (chunks,
tool call deltas split across chunks by ``index``, a usage chunk when
``stream_options.include_usage`` is set, ``data: [DONE]``); ``POST .../responses`` answers like
the OpenAI Responses API with ``stream: true`` (``response.created`` ... ``response.completed``,
one output item per block); ``POST .../models/<model>:streamGenerateContent`` answers like the
Gemini API (``data:`` chunks of ``GenerateContentResponse``, the last with the
``finishReason``). The last two are rendered by `kode.testing._wire`. It records every request
so a test can assert on the exact JSON a client sent, and it plays scripted replies in order:

- `Reply`: content blocks (text, thinking, tool calls) streamed in pieces of `chunk_size`
  characters, in whichever format the request's endpoint speaks;
- `RawEvents`: exactly these events, for malformed or unusual streams (an endless iterable
  too, for a stream a client must cut off);
- `ErrorReply`: an HTTP error with the provider's JSON error shape.

It counts the bytes of each response it wrote (`sent`), so a test can tell how much of a
stream a client read before it hung up (`wait_answered` waits for the handlers to finish).
It does not serve non-streaming requests (nor Gemini's ``:generateContent``), and it checks
nothing about a request beyond its path.

Example:
    ```python
    from kode.models import AnthropicModel, Message, ModelRequest
    from kode.testing.providers import FakeProviderServer, Reply

    request = ModelRequest(system="Be brief.", messages=[Message.user("Hi")], tools=[])
    with FakeProviderServer([Reply(content=["Hello!"])]) as server:
        async with AnthropicModel("claude-test", base_url=server.url, api_key="-") as model:
            events = [event async for event in model.stream(request)]
    assert events[-1].message.text == "Hello!"
    assert server.bodies[0]["system"] == "Be brief."
    ```
"""

from __future__ import annotations

import itertools
import json
import math
import socket
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

from kode.models.base import StopReason
from kode.models.messages import (
    ProviderContent,
    TextContent,
    ThinkingContent,
    ToolUseContent,
    Usage,
)
from kode.testing._wire import (
    arguments,
    blocks_of,
    gemini_error,
    gemini_events,
    pieces,
    responses_events,
    sse,
    stop_reason_of,
)

__all__ = [
    "Dialect",
    "ErrorReply",
    "FakeProviderServer",
    "RawEvents",
    "RecordedRequest",
    "Reply",
    "ScriptedReply",
]

Dialect = Literal["anthropic", "openai", "openai-responses", "gemini"]
"""The wire format of an endpoint."""


@dataclass(kw_only=True, frozen=True, slots=True)
class Reply:
    """A scripted response, streamed in the format of the endpoint that receives the request."""

    content: Sequence[str | TextContent | ThinkingContent | ToolUseContent | ProviderContent] = ()
    """The blocks, in order; a string is a text block. A tool call's input that is a string is
    streamed as is (use it for arguments that are not valid JSON). A `ProviderContent` is sent
    only by its own provider's endpoint: an ``"anthropic"`` one as a content block (a
    ``server_tool_use`` with its input streamed as ``input_json_delta`` pieces, any other,
    e.g. a ``tool_search_tool_result``, whole in its ``content_block_start``), an ``"openai"``
    one as a Responses output item. OpenAI streams thinking as
    ``reasoning_content``, text, then tool calls. The Responses API streams thinking as a
    reasoning item whose ``encrypted_content`` is the signature. Gemini puts a thinking
    block's signature on its last piece, and an empty thinking block's signature on the next
    part (see `kode.testing._wire.gemini_events`)."""
    stop_reason: StopReason | None = None
    """Why it ends (`None`: ``tool_use`` when there is a tool call, else ``end_turn``); mapped to
    OpenAI's ``finish_reason`` for Chat Completions, Gemini's ``finishReason``, and the
    Responses API's final event (``max_tokens`` cuts the last item short)."""
    usage: Usage = field(default_factory=Usage)
    """The usage reported (the Anthropic endpoint reports the cache counts it holds apart, and
    ``input_tokens`` without them, as the API does)."""
    model: str | None = None
    """The model named in the response (`None`: the request's model)."""
    chunk_size: int = 4
    """Characters per delta for text, thinking and tool arguments."""
    delay: float = 0.0
    """Seconds to wait before each event."""
    cut_after: int | None = None
    """Drop the connection after this many events, mid-stream, without ending the response
    (`None`: send the whole stream). Use it for a stream cut short in any wire format."""
    applied_edits: Sequence[Mapping[str, Any]] = ()
    """Anthropic only: the ``context_management.applied_edits`` its ``message_delta`` reports
    (what server-side context editing cleared), e.g. ``{"type": "clear_tool_uses_20250919",
    "cleared_tool_uses": 4, "cleared_input_tokens": 12000}``."""


@dataclass(kw_only=True, frozen=True, slots=True)
class RawEvents:
    """Exactly these events: a mapping is sent as JSON, a string as raw SSE text.

    At ``/v1/messages`` and ``/v1/responses`` a mapping's ``type`` is also its SSE ``event:``
    name.
    """

    events: Iterable[Mapping[str, Any] | str]
    """The events, in order: a sequence, or any iterable (a generator may be endless: it is
    played until the client hangs up)."""
    done: bool = True
    """Chat Completions only: end with ``data: [DONE]``."""
    delay: float = 0.0
    """Seconds to wait before each event."""
    cut: bool = False
    """Drop the connection after the events, without ending the response properly."""


@dataclass(kw_only=True, frozen=True, slots=True)
class ErrorReply:
    """An HTTP error with the provider's JSON error body.

    Unless `retry_after` is set, the response carries ``x-should-retry: false`` so the SDKs fail
    at once instead of retrying with backoff.
    """

    status: int
    """The HTTP status, e.g. 401, 429, 500."""
    message: str | None = None
    """The error message (`None`: a standard one for the status)."""
    type: str | None = None
    """The error type (`None`: the provider's type for the status; Gemini's ``status``)."""
    code: str | None = None
    """Chat Completions only: the error ``code`` (`None`: the provider's code for the status)."""
    retry_after: float | None = None
    """Seconds the client should wait before retrying (sent as ``retry-after-ms``, and as
    ``retry-after`` in whole seconds, rounded up)."""
    body: str | None = None
    """A raw body sent instead of the JSON error, e.g. a proxy's HTML page."""


ScriptedReply = Reply | RawEvents | ErrorReply
"""Anything the server can play for one request."""


@dataclass(kw_only=True, frozen=True, slots=True)
class RecordedRequest:
    """A request the server received."""

    method: str
    """The HTTP method."""
    path: str
    """The path, e.g. ``/v1/messages``."""
    headers: Mapping[str, str]
    """The headers, names in lower case."""
    body: Any
    """The JSON body, decoded (the raw text when it is not JSON)."""
    dialect: Dialect | None
    """The wire format of the endpoint, `None` for an unknown path."""


_ANTHROPIC_ERRORS = {
    400: ("invalid_request_error", "Invalid request."),
    401: ("authentication_error", "invalid x-api-key"),
    402: ("billing_error", "Payment required."),
    403: ("permission_error", "Your API key does not have permission to use this resource."),
    404: ("not_found_error", "Not found."),
    413: ("request_too_large", "Request exceeds the maximum allowed size."),
    429: ("rate_limit_error", "Number of requests has exceeded your rate limit."),
    500: ("api_error", "Internal server error."),
    529: ("overloaded_error", "Overloaded"),
}
_OPENAI_ERRORS = {
    400: ("invalid_request_error", None, "Invalid request."),
    401: ("invalid_request_error", "invalid_api_key", "Incorrect API key provided."),
    403: ("invalid_request_error", "unsupported_country_region_territory", "Forbidden."),
    404: ("invalid_request_error", "model_not_found", "The model does not exist."),
    429: ("requests", "rate_limit_exceeded", "Rate limit reached for requests."),
    500: ("server_error", None, "The server had an error while processing your request."),
}
_FINISH_REASONS = {
    "end_turn": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "stop_sequence": "stop",
    "refusal": "content_filter",
    "error": "stop",
}


class FakeProviderServer:
    """An HTTP server on 127.0.0.1 that plays scripted Anthropic / OpenAI streaming replies.

    Use it as a context manager (or call `start` and `close`). Point an Anthropic or a Gemini
    client at `url` and an OpenAI client (Chat Completions or Responses) at `openai_base_url`;
    any API key is accepted. Each request takes the next scripted reply; when none is left, the
    server answers HTTP 500 saying so.

    Args:
        replies: The replies to play, in order (more can be added with `reply`).
        host: The address to listen on.
        port: The port (0: a free one).
    """

    def __init__(
        self, replies: Iterable[ScriptedReply] = (), *, host: str = "127.0.0.1", port: int = 0
    ) -> None:
        self._replies: list[ScriptedReply] = list(replies)
        self._requests: list[RecordedRequest] = []
        self._sent: dict[int, int] = {}
        self._answered = 0
        self._lock = threading.Lock()
        self._done = threading.Condition(self._lock)
        self._ids = itertools.count(1)
        self._host = host
        self._port = port
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle --------------------------------------------------------------------------

    def start(self) -> FakeProviderServer:
        """Start listening and serving in a background thread; returns the server."""
        if self._server is None:
            self._server = _Server((self._host, self._port), _Handler, fake=self)
            self._thread = threading.Thread(
                target=self._server.serve_forever,
                kwargs={"poll_interval": 0.02},  # how long `close` may wait for the loop
                name="FakeProviderServer",
                daemon=True,
            )
            self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving, drop open connections and release the port."""
        server, self._server = self._server, None
        if server is None:
            return
        server.shutdown()
        server.drop_connections()
        server.server_close()
        if self._thread is not None:
            self._thread.join()

    def __enter__(self) -> FakeProviderServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # --- addresses ---------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """The server's root, e.g. ``http://127.0.0.1:54321`` (Anthropic's, Gemini's base_url)."""
        if self._server is None:
            raise RuntimeError("FakeProviderServer is not running: use it in a `with` block")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def openai_base_url(self) -> str:
        """The OpenAI ``base_url``: `url` + ``/v1``."""
        return f"{self.url}/v1"

    # --- script and record ---------------------------------------------------------------------

    def reply(self, *replies: ScriptedReply) -> None:
        """Add replies to the end of the script."""
        with self._lock:
            self._replies.extend(replies)

    @property
    def pending(self) -> int:
        """How many scripted replies are still to be played."""
        with self._lock:
            return len(self._replies)

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received, in order."""
        with self._lock:
            return list(self._requests)

    @property
    def sent(self) -> list[int]:
        """Bytes of each response's body written so far, in the order of the requests.

        Counted as the operating system accepted them: a client that hung up mid-stream got
        at most this much (less what was still in flight).
        """
        with self._lock:
            return [self._sent.get(n, 0) for n in range(1, len(self._requests) + 1)]

    def wait_answered(self, count: int, timeout: float = 10.0) -> bool:
        """Wait until `count` requests have been answered in full or given up; whether they were.

        A response to a client that hung up ends at the server's next write.
        """
        with self._done:
            return self._done.wait_for(lambda: self._answered >= count, timeout)

    def _count_sent(self, number: int, size: int) -> None:
        with self._lock:
            self._sent[number] = self._sent.get(number, 0) + size

    def _finished(self) -> None:
        with self._done:
            self._answered += 1
            self._done.notify_all()

    @property
    def bodies(self) -> list[Any]:
        """The JSON body of every request received, in order."""
        return [r.body for r in self.requests]

    def _take(self, request: RecordedRequest) -> tuple[ScriptedReply | None, int]:
        with self._lock:
            self._requests.append(request)
            reply = self._replies.pop(0) if self._replies else None
            return reply, len(self._requests)

    def _next_id(self) -> int:
        return next(self._ids)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], handler: type[_Handler], *, fake: Any) -> None:
        super().__init__(address, handler)
        self.fake: FakeProviderServer = fake
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._connections_lock:
            self._connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._connections_lock:
            self._connections.discard(request)
        super().shutdown_request(request)

    def drop_connections(self) -> None:
        with self._connections_lock:
            connections = list(self._connections)
        for connection in connections:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Each event is its own small write: with Nagle's algorithm on, one waits for the client's
    # delayed acknowledgement of the last (some 40 ms on Linux), every request.
    disable_nagle_algorithm = True
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Stay quiet: tests read the recorded requests instead."""

    def do_POST(self) -> None:
        fake = self.server.fake
        raw = self._read_body()
        try:
            body: Any = json.loads(raw)
        except ValueError:
            body = raw.decode("utf-8", "replace")
        path = self.path.split("?", 1)[0]
        dialect: Dialect | None = None
        if path.endswith("/messages"):
            dialect = "anthropic"
        elif path.endswith("/chat/completions"):
            dialect = "openai"
        elif path.endswith("/responses"):
            dialect = "openai-responses"
        elif path.endswith((":streamGenerateContent", ":generateContent")):
            dialect = "gemini"
        request = RecordedRequest(
            method="POST",
            path=path,
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
            dialect=dialect,
        )
        reply, number = fake._take(request)
        self._number = number
        try:
            self._answer(dialect, reply, number, body if isinstance(body, dict) else {})
        except (BrokenPipeError, ConnectionResetError):  # the client went away mid-stream
            self.close_connection = True
        finally:
            fake._finished()

    def _answer(
        self,
        dialect: Dialect | None,
        reply: ScriptedReply | None,
        number: int,
        body: dict[str, Any],
    ) -> None:
        if dialect is None:
            self._error("openai", ErrorReply(status=404, message=f"No route for {self.path}."))
        elif reply is None:
            message = (
                f"FakeProviderServer has no scripted reply left for request {number} "
                f"(POST {self.path}); script one reply per request the test makes"
            )
            self._error(dialect, ErrorReply(status=500, message=message))
        elif isinstance(reply, ErrorReply):
            self._error(dialect, reply)
        elif isinstance(reply, RawEvents):
            self._stream(dialect, _raw(dialect, reply), reply.delay, cut=reply.cut)
        elif dialect == "gemini":
            path = self.path.split("?", 1)[0]
            if not path.endswith(":streamGenerateContent"):
                message = (
                    "FakeProviderServer serves streaming requests only (streamGenerateContent)."
                )
                self._error(dialect, ErrorReply(status=400, message=message))
                return
            model = path.rsplit("/", 1)[-1].split(":", 1)[0]
            self._play(dialect, reply, gemini_events(reply, model, number))
        elif body.get("stream") is not True:
            message = "FakeProviderServer serves streaming requests only (stream: true)."
            self._error(dialect, ErrorReply(status=400, message=message))
        elif dialect == "anthropic":
            self._play(dialect, reply, _anthropic(reply, body, number))
        elif dialect == "openai-responses":
            self._play(dialect, reply, responses_events(reply, body, number))
        else:
            self._play(dialect, reply, _openai(reply, body, number))

    def _play(self, dialect: Dialect, reply: Reply, events: Iterator[bytes]) -> None:
        if reply.cut_after is None:
            self._stream(dialect, events, reply.delay)
        else:
            self._stream(dialect, itertools.islice(events, reply.cut_after), reply.delay, cut=True)

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("transfer-encoding", "").lower():
            data = bytearray()
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return bytes(data)
                data += self.rfile.read(size)
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("content-length") or 0))

    def _stream(
        self, dialect: Dialect, events: Iterator[bytes], delay: float, *, cut: bool = False
    ) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self._request_id_header(dialect)
        self.end_headers()
        fake = self.server.fake
        for event in events:
            if delay:
                time.sleep(delay)
            self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
            self.wfile.flush()
            fake._count_sent(self._number, len(event))
        if cut:
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _error(self, dialect: Dialect, error: ErrorReply) -> None:
        if dialect == "anthropic":
            kind, message = _ANTHROPIC_ERRORS.get(error.status, ("api_error", "Error."))
            payload: dict[str, Any] = {
                "type": "error",
                "error": {"type": error.type or kind, "message": error.message or message},
            }
        elif dialect == "gemini":
            payload = gemini_error(error.status, error.message, error.type)
        else:
            kind, code, message = _OPENAI_ERRORS.get(
                error.status,
                (
                    "server_error" if error.status >= 500 else "invalid_request_error",
                    None,
                    "Error.",
                ),
            )
            payload = {
                "error": {
                    "message": error.message or message,
                    "type": error.type or kind,
                    "param": None,
                    "code": error.code or code,
                }
            }
        data = json.dumps(payload).encode() if error.body is None else error.body.encode()
        self.send_response(error.status)
        self.send_header("content-type", "application/json" if error.body is None else "text/html")
        self.send_header("content-length", str(len(data)))
        self._request_id_header(dialect)
        if error.retry_after is None:
            self.send_header("x-should-retry", "false")
        else:
            self.send_header("retry-after-ms", str(int(error.retry_after * 1000)))
            self.send_header("retry-after", str(math.ceil(error.retry_after)))
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def _request_id_header(self, dialect: Dialect) -> None:
        number = self.server.fake._next_id()
        if dialect == "anthropic":
            self.send_header("request-id", f"req_fake_{number:04d}")
        elif dialect == "gemini":
            self.send_header("x-goog-request-id", f"req_fake_{number:04d}")
        else:
            self.send_header("x-request-id", f"req_fake_{number:04d}")


# --- rendering --------------------------------------------------------------------------------


def _raw(dialect: Dialect, reply: RawEvents) -> Iterator[bytes]:
    for event in reply.events:
        named = dialect in ("anthropic", "openai-responses") and not isinstance(event, str)
        yield sse(event, event.get("type") if named and isinstance(event, Mapping) else None)
    if dialect == "openai" and reply.done:
        yield b"data: [DONE]\n\n"


def _anthropic_usage(usage: Usage) -> dict[str, int]:
    """A `Usage` as Anthropic reports it: ``input_tokens`` without the cached ones."""
    read, written = usage.cache_read_input_tokens, usage.cache_creation_input_tokens
    out = {"input_tokens": max(usage.input_tokens - read - written, 0), "output_tokens": 0}
    if read or written:
        out |= {"cache_read_input_tokens": read, "cache_creation_input_tokens": written}
    return out


def _anthropic(reply: Reply, body: Mapping[str, Any], number: int) -> Iterator[bytes]:
    blocks = blocks_of(reply, "anthropic")
    message: dict[str, Any] = {
        "id": f"msg_fake_{number:04d}",
        "type": "message",
        "role": "assistant",
        "model": reply.model or body.get("model", "fake"),
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": _anthropic_usage(reply.usage),
    }
    yield sse({"type": "message_start", "message": message}, "message_start")
    yield sse({"type": "ping"}, "ping")
    for index, block in enumerate(blocks):
        if isinstance(block, TextContent):
            start: dict[str, Any] = {"type": "text", "text": ""}
            deltas = [
                {"type": "text_delta", "text": p} for p in pieces(block.text, reply.chunk_size)
            ]
        elif isinstance(block, ThinkingContent):
            start = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [
                {"type": "thinking_delta", "thinking": p}
                for p in pieces(block.thinking, reply.chunk_size)
            ]
            if block.signature:
                deltas.append({"type": "signature_delta", "signature": block.signature})
        elif isinstance(block, ProviderContent):
            start, deltas = dict(block.data), []
            if start.get("type") == "server_tool_use":
                text = json.dumps(start.get("input", {}), separators=(",", ":"))
                start["input"] = {}
                deltas = [
                    {"type": "input_json_delta", "partial_json": p}
                    for p in pieces(text, reply.chunk_size)
                ]
        else:
            start = {"type": "tool_use", "id": block.id, "name": block.name, "input": {}}
            deltas = [
                {"type": "input_json_delta", "partial_json": p}
                for p in pieces(arguments(block), reply.chunk_size)
            ]
        event = {"type": "content_block_start", "index": index, "content_block": start}
        yield sse(event, "content_block_start")
        for delta in deltas:
            event = {"type": "content_block_delta", "index": index, "delta": delta}
            yield sse(event, "content_block_delta")
        yield sse({"type": "content_block_stop", "index": index}, "content_block_stop")
    end = {"stop_reason": stop_reason_of(reply, blocks), "stop_sequence": None}
    usage = {"output_tokens": reply.usage.output_tokens}
    ending: dict[str, Any] = {"type": "message_delta", "delta": end, "usage": usage}
    if reply.applied_edits:
        ending["context_management"] = {"applied_edits": [dict(e) for e in reply.applied_edits]}
    yield sse(ending, "message_delta")
    yield sse({"type": "message_stop"}, "message_stop")


def _openai(reply: Reply, body: Mapping[str, Any], number: int) -> Iterator[bytes]:
    blocks = blocks_of(reply)
    base = {
        "id": f"chatcmpl-fake{number:04d}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": reply.model or body.get("model", "fake"),
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return sse({**base, "choices": [choice]})

    yield chunk({"role": "assistant", "content": ""})
    for block in blocks:
        if isinstance(block, ThinkingContent):
            for piece in pieces(block.thinking, reply.chunk_size):
                yield chunk({"reasoning_content": piece})
    for block in blocks:
        if isinstance(block, TextContent):
            for piece in pieces(block.text, reply.chunk_size):
                yield chunk({"content": piece})
    calls = [b for b in blocks if isinstance(b, ToolUseContent)]
    for index, call in enumerate(calls):
        function = {"name": call.name, "arguments": ""}
        first = {"index": index, "id": call.id, "type": "function", "function": function}
        yield chunk({"tool_calls": [first]})
        for piece in pieces(arguments(call), reply.chunk_size):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    yield chunk({}, _FINISH_REASONS[stop_reason_of(reply, blocks)])
    options = body.get("stream_options")
    if isinstance(options, dict) and options.get("include_usage"):
        usage = {
            "prompt_tokens": reply.usage.input_tokens,
            "completion_tokens": reply.usage.output_tokens,
            "total_tokens": reply.usage.input_tokens + reply.usage.output_tokens,
        }
        yield sse({**base, "choices": [], "usage": usage})
    yield b"data: [DONE]\n\n"
