"""`OpenAIModel`: OpenAI Chat Completions (and compatible servers), streamed through ``openai``.

This module owns the OpenAI edge: it sends the conversation translated by
`kode.models.translate.to_openai_messages` and the tools' ``schema("openai")`` declarations with
``stream=True`` and ``stream_options={"include_usage": True}``, and assembles the chunks into
deltas and one `ModelResponse`. With `base_url` it talks to any server that speaks Chat
Completions (Ollama, vLLM, llama.cpp, LM Studio, ...). Message translation rules (system prompt,
tool results, images, thinking) are in `kode.models.translate`.

How the stream becomes a response:

- ``delta.content`` pieces are `TextDelta` events and one text block. ``delta.refusal`` pieces
  are text too, and make the stop reason ``refusal``.
- ``delta.reasoning_content`` / ``delta.reasoning`` (sent by DeepSeek, vLLM, Ollama and others,
  not by OpenAI) are `ThinkingDelta` events and one unsigned `ThinkingContent` block first in the
  message; translation drops it when the history goes back to Chat Completions.
- Tool calls are accumulated by their ``index``: the id and name arrive first, the arguments in
  pieces; parallel calls (several indexes) become several ``tool_use`` blocks in index order.
  Arguments are parsed at the end: a JSON object becomes the input dict, empty arguments ``{}``,
  anything else stays the raw string. A call without an id gets a generated ``call_...`` id.
- ``finish_reason``: ``tool_calls`` → ``tool_use``, ``stop`` → ``end_turn`` (``tool_use`` when the
  message has tool calls: some compatible servers say ``stop`` there), ``length`` →
  ``max_tokens``, ``content_filter`` → ``refusal``. A stream without a ``finish_reason`` is a
  `ModelError` (it was cut short).
- Usage comes from the chunk that carries ``usage`` (``prompt_tokens`` → ``input_tokens``,
  ``completion_tokens`` → ``output_tokens``); only choice 0 is read.
- The token limit is sent as ``max_completion_tokens`` to OpenAI itself and as ``max_tokens`` to
  any other server (what compatible servers read); `max_tokens_field` overrides the choice.
- Every SDK failure (HTTP status, connection, an error object mid-stream, an undecodable chunk)
  is raised as `ModelError`, naming the status and the server's message.

On trio, the ``openai`` SDK (3.x) leaves three async generators to the garbage collector after
``data: [DONE]``; trio closes them and reports each with a ``ResourceWarning`` (hidden unless
warnings are turned on). The response is complete; asyncio does not report them.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from kode.models._limits import (
    DEFAULT_IDLE_TIMEOUT,
    DEFAULT_MAX_REPLY_BYTES,
    DEFAULT_MAX_REPLY_CHARS,
    bounded_deltas,
    guard_response,
    limit_error,
)
from kode.models._retry import retry_after, worth_retrying
from kode.models._sdk import DEFAULT_MAX_RETRIES, SDKModel
from kode.models._sdk_import import LazySDK, load_sdks
from kode.models.base import (
    ModelError,
    ModelEvent,
    ModelRequest,
    ModelResponse,
    ModelRetry,
    OutputFormat,
    StopReason,
    TextDelta,
    ThinkingDelta,
    ToolInputDelta,
)
from kode.models.messages import (
    ContentBlock,
    Message,
    TextContent,
    ThinkingContent,
    ToolUseContent,
    Usage,
)
from kode.models.translate import parse_arguments, to_openai_messages
from kode.tools.dialects import openai_strict_schema

__all__ = ["MaxTokensField", "OpenAIModel", "openai_json_schema"]

if TYPE_CHECKING:
    import openai
else:  # imported by the first request, in a worker thread (see kode.models._sdk_import)
    openai = LazySDK("openai", needed_by="OpenAIModel", extra="openai")

MaxTokensField = Literal["max_completion_tokens", "max_tokens"]
"""The request field that carries the token limit."""

_PLACEHOLDER_KEY = "no-key-needed"
_FINISH_REASONS: dict[str, StopReason] = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}


def openai_json_schema(output: OutputFormat) -> dict[str, Any]:
    """An `OutputFormat` as OpenAI's ``json_schema`` object: strict whenever the schema allows.

    The schema is rewritten for strict mode as tool schemas are (`openai_strict_schema`); one
    strict mode cannot take is sent as it is, with ``strict: false``.
    """
    strict = openai_strict_schema(output.schema)
    found: dict[str, Any] = {
        "name": output.name,
        "schema": strict if strict is not None else output.schema,
        "strict": strict is not None,
    }
    if output.description:
        found["description"] = output.description
    return found


class OpenAIModel(SDKModel["openai.AsyncOpenAI"]):
    """A model behind the OpenAI Chat Completions API (or a compatible server), streaming.

    Example:
        ```python
        from kode.models import OpenAIModel

        gpt = OpenAIModel("gpt-4.1-mini", temperature=0)
        local = OpenAIModel("qwen3:8b", base_url="http://localhost:11434/v1")
        ```

    Args:
        model: The model name, e.g. ``"gpt-4.1"`` (or whatever the server calls it).
        client: An ``openai.AsyncOpenAI`` client to use as it is (then `api_key` and `base_url`
            must not be given). It stays yours: `aclose` leaves it open, and since its pooled
            connections belong to the event loop that opened them, use it from one event loop
            (not from repeated ``send_sync`` calls, which start a loop each). By default the
            model makes one client per event loop on first use there, and closes it when that
            loop ends (or on `aclose` in that loop).
        api_key: The API key (default: the SDK reads ``OPENAI_API_KEY``). With a `base_url` and
            no key anywhere, a placeholder is sent, since local servers need none.
        base_url: The server's address, ending in ``/v1`` for most servers (default: the SDK
            reads ``OPENAI_BASE_URL``, else OpenAI).
        max_tokens: The most tokens per response, used instead of the request's
            ``settings.max_tokens`` when given.
        max_tokens_field: The request field for the token limit (default: see the module notes).
        timeout: Seconds to wait for the connection and for each read of the response
            (default: the SDK's, 10 minutes).
        max_retries: How many times a request that failed in a way worth retrying (a rate
            limit, an overloaded server, a lost connection) is retried, honouring the server's
            ``retry-after``; a `ModelRetry` event comes before each retry.
        max_reply_chars: The most characters of text, thinking and tool input one reply may
            hold (default 4,000,000); a longer reply is cut off with a `ModelError`.
        max_reply_bytes: The most bytes of one reply's HTTP body (default 256 MiB); no line
            of it may be longer than 12 bytes per character of `max_reply_chars` (plus 1 MiB).
        idle_timeout: The most seconds a reply may go without progress, a piece of text,
            thinking or tool input (default 600); pings and keep-alive comments do not count.
        **settings: Request fields sent with every request, e.g. ``temperature=0`` or
            ``parallel_tool_calls=False``. A request's ``settings.temperature`` and
            ``settings.extra`` take precedence. ``stream`` is refused: kode always streams.

    Raises:
        ValueError: `client` was given together with `api_key` or `base_url`; `settings` set
            ``stream``; `timeout`, `max_retries` or a reply limit is not a valid value.
    """

    def __init__(
        self,
        model: str,
        *,
        client: openai.AsyncOpenAI | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        max_tokens: int | None = None,
        max_tokens_field: MaxTokensField | None = None,
        timeout: float | None = None,
        max_retries: int = DEFAULT_MAX_RETRIES,
        max_reply_chars: int = DEFAULT_MAX_REPLY_CHARS,
        max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES,
        idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
        **settings: Any,
    ) -> None:
        super().__init__(
            model,
            client=client,
            api_key=api_key,
            base_url=base_url,
            max_tokens=max_tokens,
            settings=settings,
            timeout=timeout,
            max_retries=max_retries,
            max_reply_chars=max_reply_chars,
            max_reply_bytes=max_reply_bytes,
            idle_timeout=idle_timeout,
        )
        self.max_tokens_field = max_tokens_field
        """The request field for the token limit (`None`: chosen by the server's address)."""

    _provider = "openai"
    _label = "OpenAI"

    def _make_client(self) -> openai.AsyncOpenAI:
        """Raises `openai.OpenAIError` when no API key is given or found and no `base_url`."""
        return make_openai_client(self._api_key, self._base_url)

    def _without_retries(self, client: openai.AsyncOpenAI) -> openai.AsyncOpenAI:
        return client.with_options(max_retries=0)

    def _model_error(self, exc: Exception) -> ModelError:
        return openai_model_error(exc)

    def request_params(self, request: ModelRequest) -> dict[str, Any]:
        """The keyword arguments of ``client.chat.completions.create`` for `request`.

        Streaming and the timeout are not included. Fields outside the SDK's typed parameters
        (`settings`, ``temperature``, the request's ``settings.extra``) travel in ``extra_body``.

        Raises:
            ModelError: the request's settings set ``stream``.
        """
        extra = self._extra_body(request)
        limit_field = self.max_tokens_field
        if limit_field is None:
            official = str(self.client.base_url).startswith("https://api.openai.com")
            limit_field = "max_completion_tokens" if official else "max_tokens"
        params: dict[str, Any] = {
            "model": self.name,
            "messages": to_openai_messages(request.messages, system=request.system),
            limit_field: self._max_tokens(request),
        }
        if request.tools:
            params["tools"] = [tool.schema("openai") for tool in request.tools]
        if request.output is not None:
            schema = openai_json_schema(request.output)
            params["response_format"] = {"type": "json_schema", "json_schema": schema}
        if extra:
            params["extra_body"] = extra
        return params

    def supports_output_format(self, *, tools: bool) -> bool:
        """Structured output (``response_format`` with a JSON schema), with or without tools."""
        return True

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """Stream one response: text (and reasoning) deltas, then the `ModelResponse`.

        A `ModelRetry` comes before each retry of a request that failed in a way worth
        retrying.

        Raises:
            ModelError: the server answered with an error, could not be reached, or the stream
                broke off.
        """
        await load_sdks(openai)
        options = self._options(request)
        try:
            params = self.request_params(request)  # makes the client: it may lack a key
        except openai.OpenAIError as exc:
            raise openai_model_error(exc) from exc
        if options.timeout is not None:
            params["timeout"] = options.timeout
        chunks: Any = None
        async for item in self._open(
            options,
            lambda client: client.chat.completions.create(
                **params, stream=True, stream_options={"include_usage": True}
            ),
        ):
            if isinstance(item, ModelRetry):
                yield item
            else:
                chunks = item.stream
        assembler = _Assembler()
        budget = self._budget(options)
        guard = guard_response(chunks.response, budget.wire())
        deltas = bounded_deltas(chunks, assembler.feed, budget, guard)
        try:
            async with chunks, contextlib.aclosing(deltas):
                async for delta in deltas:
                    yield delta
        except ModelError:
            raise
        except Exception as exc:  # an error object or a transport error mid-stream
            raise openai_model_error(exc, streaming=True) from exc
        yield assembler.response()


def make_openai_client(api_key: str | None, base_url: str | None) -> openai.AsyncOpenAI:
    """A client without the SDK's retries; a placeholder key for a `base_url` without one."""
    if api_key is None and base_url is not None:
        api_key = os.environ.get("OPENAI_API_KEY") or _PLACEHOLDER_KEY
    return openai.AsyncOpenAI(api_key=api_key, base_url=base_url, max_retries=0)


def openai_model_error(exc: Exception, *, streaming: bool = False) -> ModelError:
    """An ``openai`` SDK failure (or a transport error under it) as a `ModelError`.

    Args:
        exc: The failure.
        streaming: Whether the response had begun (a lost connection is then the stream's).
    """
    found = limit_error(exc)
    if found is not None:
        return found
    if isinstance(exc, openai.APIStatusError):
        return _status_error(exc)
    if isinstance(exc, openai.APIConnectionError):
        verb = "stream" if streaming else "request"
        return ModelError(
            f"OpenAI {verb} failed: {exc.message} ({exc.request.url})",
            provider="openai",
            retryable=not streaming,
        )
    if isinstance(exc, openai.APIError):  # an error object in the middle of the stream
        return ModelError(f"OpenAI stream failed: {exc.message}", provider="openai")
    if isinstance(exc, openai.OpenAIError):
        return ModelError(f"OpenAI request failed: {exc}", provider="openai")
    return ModelError(f"OpenAI stream failed: {type(exc).__name__}: {exc}", provider="openai")


def _status_error(exc: openai.APIStatusError) -> ModelError:
    body = exc.body  # the ``error`` object, or the raw text when the body was not JSON
    message = body.get("message") if isinstance(body, dict) else body
    if not isinstance(message, str) or not message.strip():
        message = exc.message
    kind = exc.code or exc.type
    label = f" ({kind})" if kind else ""
    headers = exc.response.headers
    return ModelError(
        f"OpenAI request failed with HTTP {exc.status_code}{label}: {_shorten(message)}",
        provider="openai",
        status_code=exc.status_code,
        retryable=worth_retrying(exc.status_code, headers),
        retry_after=retry_after(headers),
    )


def _shorten(text: str, limit: int = 500) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass(slots=True)
class _Call:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class _Assembler:
    """Builds the assistant message from chat completion chunks (choice 0 only)."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.thinking: list[str] = []
        self.calls: dict[int, _Call] = {}
        self.refused = False
        self.finish_reason: str | None = None
        self.usage = Usage()
        self.model = ""
        self.id = ""

    def feed(self, chunk: Any) -> list[TextDelta | ThinkingDelta | ToolInputDelta]:
        if chunk.model and not self.model:
            self.model = chunk.model
        if chunk.id and not self.id:
            self.id = chunk.id
        if chunk.usage is not None:
            self.usage = Usage(
                input_tokens=chunk.usage.prompt_tokens or 0,
                output_tokens=chunk.usage.completion_tokens or 0,
            )
        out: list[TextDelta | ThinkingDelta | ToolInputDelta] = []
        for choice in chunk.choices or ():
            if choice.index != 0:
                continue
            delta = choice.delta
            reasoning = _reasoning(delta)
            if reasoning:
                self.thinking.append(reasoning)
                out.append(ThinkingDelta(thinking=reasoning))
            for piece in (delta.content, delta.refusal):
                if piece:
                    self.text.append(piece)
                    out.append(TextDelta(text=piece))
            if delta.refusal:
                self.refused = True
            for call in delta.tool_calls or ():
                piece = self._tool_call(call)
                if piece is not None:
                    out.append(piece)
            if choice.finish_reason:
                self.finish_reason = choice.finish_reason
        return out

    def _tool_call(self, delta: Any) -> ToolInputDelta | None:
        call = self.calls.setdefault(delta.index, _Call())
        if delta.id and not call.id:
            call.id = delta.id
        function = delta.function
        if function is not None:
            if function.name and not call.name:
                call.name = function.name
            if function.arguments:
                call.arguments.append(function.arguments)
                return ToolInputDelta(id=call.id, name=call.name, text=function.arguments)
        return None

    def response(self) -> ModelResponse:
        if self.finish_reason is None:
            raise ModelError(
                "OpenAI stream ended without a finish_reason (the connection was cut or the "
                "server stopped early)",
                provider="openai",
            )
        content: list[ContentBlock] = []
        if self.thinking:
            content.append(ThinkingContent(thinking="".join(self.thinking)))
        if self.text:
            content.append(TextContent(text="".join(self.text)))
        for index, call in sorted(self.calls.items()):
            content.append(
                ToolUseContent(
                    id=call.id or f"call_{index}_{uuid.uuid4().hex[:12]}",
                    name=call.name,
                    input=parse_arguments("".join(call.arguments)),
                )
            )
        stop = _FINISH_REASONS.get(self.finish_reason, "end_turn")
        if self.calls and stop == "end_turn":
            stop = "tool_use"
        if self.refused:
            stop = "refusal"
        return ModelResponse(
            message=Message(role="assistant", content=content),
            stop_reason=stop,
            usage=self.usage,
            model=self.model,
            id=self.id,
        )


def _reasoning(delta: Any) -> str | None:
    for name in ("reasoning_content", "reasoning"):
        value = getattr(delta, name, None)
        if isinstance(value, str) and value:
            return value
    return None
