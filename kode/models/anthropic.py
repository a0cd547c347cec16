"""`AnthropicModel`: the Anthropic Messages API, streamed through the ``anthropic`` SDK.

This module owns the Anthropic edge: it sends kode's messages (already Anthropic-style), the
system prompt and the tools' ``schema("anthropic")`` declarations with ``stream=True``, and
assembles the raw server-sent events into deltas and one `ModelResponse`. It reads the raw event
stream rather than the SDK's ``messages.stream()`` helper, because that helper raises on tool
input that is not valid JSON, where kode keeps the raw text so the agent can answer it.

Where kode's messages and the API differ, these are the choices made:

- A ``tool_use`` whose input is a string (the model once sent text that is not a JSON object) is
  sent back as ``{"_invalid_json": "<the text>"}`` (`RAW_INPUT_KEY`), since the API takes only
  objects; the ``tool_result`` answering it already says what was wrong.
- A ``thinking`` block without a signature (from another provider, or a script) is not sent:
  the API rejects unsigned thinking; nor is one signed by another provider (its `provider`
  set, e.g. a Gemini thought signature). Empty text blocks are not sent either (the API
  rejects them).
- From the stream: text and thinking arrive as `TextDelta` / `ThinkingDelta`; the thinking
  signature is kept on `ThinkingContent`; tool input JSON arriving in pieces is parsed when its
  block ends (empty → ``{}``, not a JSON object → the raw string). Server-tool blocks
  (``server_tool_use`` and the ``..._tool_result`` blocks answering them, e.g. tool search's
  ``tool_search_tool_result``) are kept as they came in a `ProviderContent` and sent back
  unchanged; ``redacted_thinking`` is dropped (kode has no block for it).
- Tool search: made with ``tool_search="bm25"`` or ``"regex"``, the model sends the request's
  `ModelRequest.deferred` tools with ``defer_loading: true`` and Anthropic's
  ``tool_search_tool_bm25_20251119`` (or ``..._regex_...``) server tool, which finds and loads
  them on the API's side (an agent then leaves its own ``tool_search`` out).
- Stop reasons: ``end_turn``, ``tool_use``, ``max_tokens``, ``stop_sequence`` and ``refusal``
  pass through; ``model_context_window_exceeded`` becomes ``max_tokens``; ``pause_turn`` becomes
  ``end_turn``.
- Usage: ``input_tokens`` counts every token read, cached or not (``input_tokens`` +
  ``cache_creation_input_tokens`` + ``cache_read_input_tokens``); the two cache counts are
  kept as well, in `Usage`'s fields of the same names.
- Prompt caching (``cache=True``, the default) and strict tools (``strict_tools=True``): see
  `kode.models._anthropic_request`.
- Every SDK failure (HTTP status, connection, an ``error`` event mid-stream, a stream that ends
  before ``message_stop``) is raised as `ModelError`, naming the status and the API's message.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from kode.models._anthropic_request import add_cache_breakpoints, declarations
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
from kode.models.anthropic_context import CONTEXT_MANAGEMENT_BETA, ContextEditing, applied_edits
from kode.models.base import (
    ContextEdit,
    ModelError,
    ModelEvent,
    ModelRequest,
    ModelResponse,
    ModelRetry,
    StopReason,
    TextDelta,
    ThinkingDelta,
    ToolInputDelta,
)
from kode.models.messages import (
    ContentBlock,
    ImageContent,
    Message,
    ProviderContent,
    TextContent,
    ThinkingContent,
    ToolResultContent,
    ToolUseContent,
    Usage,
)
from kode.models.translate import RAW_INPUT_KEY, parse_arguments

__all__ = ["RAW_INPUT_KEY", "AnthropicModel", "ContextEditing", "to_anthropic_messages"]

if TYPE_CHECKING:
    import anthropic
else:  # imported by the first request, in a worker thread (see kode.models._sdk_import)
    anthropic = LazySDK("anthropic", needed_by="AnthropicModel", extra="anthropic")

ANTHROPIC = "anthropic"
_SEARCH_TOOLS = {
    "bm25": {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"},
    "regex": {"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"},
}


_STOP_REASONS: dict[str, StopReason] = {
    "end_turn": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "stop_sequence": "stop_sequence",
    "refusal": "refusal",
    "model_context_window_exceeded": "max_tokens",
    "pause_turn": "end_turn",
}


class AnthropicModel(SDKModel["anthropic.AsyncAnthropic"]):
    """A Claude model, through the Anthropic Messages API with streaming.

    Example:
        ```python
        from kode.models import AnthropicModel

        model = AnthropicModel("claude-sonnet-4-6", max_tokens=2048, temperature=0.2)
        ```

    Args:
        model: The model name, e.g. ``"claude-sonnet-4-6"``.
        client: An ``anthropic.AsyncAnthropic`` client to use as it is (then `api_key` and
            `base_url` must not be given). It stays yours: `aclose` leaves it open, and since
            its pooled connections belong to the event loop that opened them, use it from one
            event loop (not from repeated ``send_sync`` calls, which start a loop each). By
            default the model makes one client per event loop on first use there, and closes
            it when that loop ends (or on `aclose` in that loop).
        api_key: The API key (default: the SDK reads ``ANTHROPIC_API_KEY``).
        base_url: The API's address (default: the SDK reads ``ANTHROPIC_BASE_URL``).
        max_tokens: The most tokens per response, used instead of the request's
            ``settings.max_tokens`` when given.
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
        tool_search: ``"bm25"`` (words) or ``"regex"``: an agent's deferred tools are found
            by Anthropic's own tool search (the ``tool_search_tool_bm25`` or
            ``tool_search_tool_regex`` server tool) instead of kode's ``tool_search``; the
            request carries every deferred definition with ``defer_loading: true``. `None`
            (the default): kode's search, which works with every model.
        strict_tools: Declare tools with ``strict: true`` (Anthropic's grammar-constrained
            tool inputs), each whose schema allows it, while the request stays within
            Anthropic's limits for one request (20 strict tools, 24 optional parameters, 16
            union-typed parameters); the others are declared plain. Off by default, because
            those limits are request-wide and not every model offers strict tool use.
        cache: Put prompt-cache breakpoints (``cache_control``) on the last tool, the system
            prompt and the last message, where the prefix each closes is long enough for
            Anthropic to cache (1,024 to 4,096 tokens, by model). On by default: an agent
            sends the same tools and system prompt, and a growing history, every turn, and
            reading them from the cache costs a tenth of reading them afresh.
        context_editing: Anthropic's server-side context editing (`ContextEditing`): each
            request carries a ``clear_tool_uses_20250919`` edit in its ``context_management``
            (and the ``anthropic-beta: context-management-2025-06-27`` header), and each
            response's ``applied_edits`` become its `ModelResponse.context_edits`. Off by
            default (`None`); only models that offer it accept it. A request's own
            ``context_editing`` (a template's `ContextPolicy.server_editing`) comes first.
        **settings: Request fields sent with every request, e.g. ``temperature=0.2`` or
            ``thinking={"type": "enabled", "budget_tokens": 2048}``. A request's
            ``settings.temperature`` and ``settings.extra`` take precedence. ``stream`` is
            refused: kode always streams.

    Raises:
        ValueError: `client` was given together with `api_key` or `base_url`; `settings` set
            ``stream``; `timeout`, `max_retries` or a reply limit is not a valid value;
            `tool_search` is not ``"bm25"``, ``"regex"`` or `None`.
    """

    def __init__(
        self,
        model: str,
        *,
        client: anthropic.AsyncAnthropic | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        max_tokens: int | None = None,
        timeout: float | None = None,
        max_retries: int = DEFAULT_MAX_RETRIES,
        max_reply_chars: int = DEFAULT_MAX_REPLY_CHARS,
        max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES,
        idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
        tool_search: Literal["bm25", "regex"] | None = None,
        strict_tools: bool = False,
        cache: bool = True,
        context_editing: ContextEditing | None = None,
        **settings: Any,
    ) -> None:
        if tool_search is not None and tool_search not in _SEARCH_TOOLS:
            raise ValueError(
                f"tool_search={tool_search!r} is not a tool search of Anthropic's: use "
                "'bm25' (words), 'regex', or None for kode's own tool_search"
            )
        self.tool_search = tool_search
        """Anthropic's tool search used for deferred tools (`None`: kode's own)."""
        self.strict_tools = strict_tools
        """Whether tools are declared with ``strict: true`` where their schemas allow."""
        self.cache = cache
        """Whether requests carry prompt-cache breakpoints."""
        if context_editing is not None and not isinstance(context_editing, ContextEditing):
            raise ValueError(
                f"context_editing must be a ContextEditing (or None), got "
                f"{type(context_editing).__name__}"
            )
        self.context_editing = context_editing
        """Anthropic's server-side context editing asked for, if any."""
        self._strict_warned: set[str] = set()
        self._strict_counts: dict[int, tuple[Any, int, int]] = {}
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

    @property
    def native_tool_search(self) -> bool:
        """Whether deferred tools are found by Anthropic's tool search (``tool_search`` set)."""
        return self.tool_search is not None

    _provider = "anthropic"
    _label = "Anthropic"

    def _make_client(self) -> anthropic.AsyncAnthropic:
        return anthropic.AsyncAnthropic(
            api_key=self._api_key, base_url=self._base_url, max_retries=0
        )

    def _without_retries(self, client: anthropic.AsyncAnthropic) -> anthropic.AsyncAnthropic:
        return client.with_options(max_retries=0)

    def request_params(self, request: ModelRequest) -> dict[str, Any]:
        """The keyword arguments of ``client.messages.create`` for `request` (without `stream`).

        Fields outside the SDK's typed parameters (``temperature``, `settings`, the request's
        ``settings.extra``) travel in ``extra_body``. The timeout is not included.

        Raises:
            ModelError: the request's settings set ``stream``.
        """
        extra = self._extra_body(request)
        params: dict[str, Any] = {
            "model": self.name,
            "max_tokens": self._max_tokens(request),
            "messages": to_anthropic_messages(request.messages),
        }
        if request.system:
            params["system"] = request.system
        tools = declarations(
            request.tools,
            strict=self.strict_tools,
            warned=self._strict_warned,
            counts=self._strict_counts,
        )
        if self.tool_search is not None and (
            request.deferred or _has_server_blocks(request.messages)
        ):
            tools += [
                {**tool.schema("anthropic"), "defer_loading": True} for tool in request.deferred
            ]
            tools.append(dict(_SEARCH_TOOLS[self.tool_search]))
        if tools:
            params["tools"] = tools
        if request.output is not None:
            # The SDK's own rewriting for structured outputs (closed objects, keywords the
            # API lacks moved into descriptions).
            output = {
                "type": "json_schema",
                "schema": anthropic.transform_schema(request.output.schema),
            }
            given = extra.get("output_config")
            if isinstance(given, dict):  # settings' output_config (effort) keeps its fields
                extra["output_config"] = {**given, "format": output}
            else:
                params["output_config"] = {"format": output}
        editing = request.context_editing or self.context_editing  # the policy's first
        if editing is not None:
            # Not a typed field of the (non-beta) messages API the model calls: it travels
            # in the body, with the beta header that enables it.
            given = extra.get("context_management")
            edits = list(given.get("edits", [])) if isinstance(given, dict) else []
            extra["context_management"] = {"edits": [*edits, editing.edit()]}
            params["extra_headers"] = {"anthropic-beta": CONTEXT_MANAGEMENT_BETA}
        if extra:
            params["extra_body"] = extra
        if self.cache:
            add_cache_breakpoints(params, self.name)
        return params

    def supports_output_format(self, *, tools: bool) -> bool:
        """Structured outputs (``output_config.format``), with or without tools."""
        return True

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """Stream one response: text and thinking deltas, then the `ModelResponse`.

        A `ModelRetry` comes before each retry of a request that failed in a way worth
        retrying.

        Raises:
            ModelError: the API answered with an error, could not be reached, or the stream
                broke off or made no sense.
        """
        await load_sdks(anthropic)
        options = self._options(request)
        params = self.request_params(request)
        if options.timeout is not None:
            params["timeout"] = options.timeout
        events: Any = None
        async for item in self._open(
            options, lambda client: client.messages.create(**params, stream=True)
        ):
            if isinstance(item, ModelRetry):
                yield item
            else:
                events = item.stream
        assembler = _Assembler()
        budget = self._budget(options)
        guard = guard_response(events.response, budget.wire())
        deltas = bounded_deltas(events, assembler.feed, budget, guard)
        try:
            async with events, contextlib.aclosing(deltas):
                async for delta in deltas:
                    yield delta
        except ModelError:
            raise
        except Exception as exc:  # transport errors mid-stream, undecodable events
            raise self._model_error(exc, streaming=True) from exc
        yield assembler.response()

    def _model_error(self, exc: Exception, *, streaming: bool = False) -> ModelError:
        found = limit_error(exc)
        if found is not None:
            return found
        if isinstance(exc, anthropic.APIStatusError):
            return _status_error(exc)
        if streaming and isinstance(exc, anthropic.APIConnectionError):
            # The stream broke off after it began (newer SDKs wrap the transport's error):
            # said as the transport's error, whatever the SDK's version.
            cause = exc.__cause__ or exc.__context__
            what = f"{type(cause).__name__}: {cause}" if cause is not None else exc.message
            return ModelError(f"Anthropic stream failed: {what}", provider="anthropic")
        if isinstance(exc, anthropic.APIConnectionError):
            return ModelError(
                f"Anthropic request failed: {exc.message} ({exc.request.url})",
                provider="anthropic",
                retryable=True,
            )
        if isinstance(exc, anthropic.AnthropicError):
            return ModelError(f"Anthropic request failed: {exc}", provider="anthropic")
        return ModelError(
            f"Anthropic stream failed: {type(exc).__name__}: {exc}", provider="anthropic"
        )


def _body_text(exc: anthropic.APIStatusError) -> str:
    """The body of an error answer that is not Anthropic's JSON (a proxy's page), as sent."""
    body = exc.body
    return body if isinstance(body, str) else ""


def _status_error(exc: anthropic.APIStatusError) -> ModelError:
    if exc.status_code == 200:  # an `error` event in the middle of a stream
        kind, message = exc.type, exc.api_message or str(exc)
        label = f" ({kind})" if kind else ""
        return ModelError(f"Anthropic stream failed{label}: {message}", provider="anthropic")
    label = f" ({exc.type})" if exc.type else ""
    headers = exc.response.headers
    return ModelError(
        f"Anthropic request failed with HTTP {exc.status_code}{label}: "
        f"{_shorten(exc.api_message or _body_text(exc) or exc.message)}",
        provider="anthropic",
        status_code=exc.status_code,
        retryable=worth_retrying(exc.status_code, headers),
        retry_after=retry_after(headers),
    )


def _shorten(text: str, limit: int = 500) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --- requests ---------------------------------------------------------------------------------


def to_anthropic_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """The ``messages`` of a Messages API request, from kode messages.

    Args:
        messages: The conversation.

    Returns:
        JSON-ready dicts; see the module's notes for the blocks that are changed or left out.
    """
    return [
        {"role": m.role, "content": [d for b in m.content if (d := _block(b)) is not None]}
        for m in messages
    ]


def _has_server_blocks(messages: Sequence[Message]) -> bool:
    """Whether the history holds Anthropic server-tool blocks (their tool must be declared)."""
    return any(
        isinstance(b, ProviderContent) and b.provider == ANTHROPIC
        for m in messages
        if m.role == "assistant"
        for b in m.content
    )


def _block(block: ContentBlock) -> dict[str, Any] | None:
    if isinstance(block, ProviderContent):
        return dict(block.data) if block.provider == ANTHROPIC else None
    if isinstance(block, TextContent):
        return {"type": "text", "text": block.text} if block.text else None
    if isinstance(block, ImageContent):
        return block.model_dump()
    if isinstance(block, ThinkingContent):
        if not block.signature or block.provider not in (None, "anthropic"):
            return None
        return {"type": "thinking", "thinking": block.thinking, "signature": block.signature}
    if isinstance(block, ToolUseContent):
        value = block.input if isinstance(block.input, dict) else {RAW_INPUT_KEY: block.input}
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": value}
    return _tool_result(block)


def _tool_result(block: ToolResultContent) -> dict[str, Any]:
    content = [
        item.model_dump()
        for item in block.content
        if not (isinstance(item, TextContent) and not item.text)
    ]
    out: dict[str, Any] = {"type": "tool_result", "tool_use_id": block.tool_use_id}
    out["content"] = content
    if block.is_error:
        out["is_error"] = True
    return out


# --- responses --------------------------------------------------------------------------------


@dataclass(slots=True)
class _Block:
    kind: str
    parts: list[str] = field(default_factory=list)
    id: str = ""
    name: str = ""
    signature: str | None = None
    initial_input: dict[str, Any] = field(default_factory=dict)
    input: dict[str, Any] | str | None = None
    raw: dict[str, Any] | None = None  # a server-tool block as it started


class _Assembler:
    """Builds the assistant message from raw stream events, in the order they arrive."""

    def __init__(self) -> None:
        self.blocks: dict[int, _Block] = {}
        self.model = ""
        self.id = ""
        self.usage = Usage()
        self.stop_reason: str | None = None
        self.started = False
        self.stopped = False
        self.edits: tuple[ContextEdit, ...] = ()  # what server-side context editing cleared

    def feed(self, event: Any) -> TextDelta | ThinkingDelta | ToolInputDelta | None:
        kind = event.type
        if kind == "message_start":
            self.started = True
            self.model = event.message.model
            self.id = getattr(event.message, "id", None) or ""
            usage = event.message.usage
            self.usage = Usage(
                input_tokens=_input_tokens(usage) or 0,
                output_tokens=usage.output_tokens,
                cache_read_input_tokens=usage.cache_read_input_tokens or 0,
                cache_creation_input_tokens=usage.cache_creation_input_tokens or 0,
            )
            return None
        if not self.started:
            raise ModelError(
                f"Anthropic stream is malformed: {kind!r} arrived before message_start",
                provider="anthropic",
            )
        if kind == "content_block_start":
            started = self.blocks[event.index] = _start(event.content_block)
            if started.parts and started.kind == "text":
                return TextDelta(text=started.parts[0])
            if started.parts and started.kind == "thinking":
                return ThinkingDelta(thinking=started.parts[0])
        elif kind == "content_block_delta":
            return self._delta(event.index, event.delta)
        elif kind == "content_block_stop":
            block = self.blocks.get(event.index)
            if block is not None and block.kind == "tool_use":
                text = "".join(block.parts)
                block.input = parse_arguments(text) if text else block.initial_input
        elif kind == "message_delta":
            self.stop_reason = event.delta.stop_reason
            # Sent when the request asked for context editing (a field the non-beta event
            # type does not declare, kept by the SDK as it came).
            edits = applied_edits(getattr(event, "context_management", None))
            if edits:
                self.edits = edits
            usage = event.usage
            input_tokens = _input_tokens(usage)
            # A count message_delta leaves out is message_start's.
            read = usage.cache_read_input_tokens
            written = usage.cache_creation_input_tokens
            if read is None:
                read = self.usage.cache_read_input_tokens
            if written is None:
                written = self.usage.cache_creation_input_tokens
            self.usage = Usage(
                input_tokens=self.usage.input_tokens if input_tokens is None else input_tokens,
                output_tokens=usage.output_tokens,
                cache_read_input_tokens=read,
                cache_creation_input_tokens=written,
            )
        elif kind == "message_stop":
            self.stopped = True
        return None

    def _delta(self, index: int, delta: Any) -> TextDelta | ThinkingDelta | ToolInputDelta | None:
        block = self.blocks.get(index)
        if block is None:
            raise ModelError(
                f"Anthropic stream is malformed: a delta for block {index} before its start",
                provider="anthropic",
            )
        kind = delta.type
        if kind == "text_delta" and block.kind == "text":
            block.parts.append(delta.text)
            return TextDelta(text=delta.text) if delta.text else None
        if kind == "thinking_delta" and block.kind == "thinking":
            block.parts.append(delta.thinking)
            return ThinkingDelta(thinking=delta.thinking) if delta.thinking else None
        if kind == "signature_delta" and block.kind == "thinking":
            block.signature = delta.signature
        elif kind == "input_json_delta" and block.kind == "server_tool_use":
            block.parts.append(delta.partial_json)
        elif kind == "input_json_delta" and block.kind == "tool_use":
            block.parts.append(delta.partial_json)
            if delta.partial_json:
                return ToolInputDelta(id=block.id, name=block.name, text=delta.partial_json)
        return None

    def response(self) -> ModelResponse:
        if not self.stopped:
            raise ModelError(
                "Anthropic stream ended before message_stop (the connection was cut or the "
                "server stopped early)",
                provider="anthropic",
            )
        content: list[ContentBlock] = []
        for _, block in sorted(self.blocks.items()):
            text = "".join(block.parts)
            if block.kind == "text" and text:
                content.append(TextContent(text=text))
            elif block.kind == "thinking":
                content.append(ThinkingContent(thinking=text, signature=block.signature or None))
            elif block.kind == "tool_use":
                value = block.input
                if value is None:  # the block never stopped: parse what arrived
                    value = parse_arguments(text) if text else block.initial_input
                content.append(ToolUseContent(id=block.id, name=block.name, input=value))
            elif block.raw is not None:
                data = block.raw
                if block.kind == "server_tool_use" and text:
                    parsed = parse_arguments(text)
                    data = {**data, "input": parsed if isinstance(parsed, dict) else {}}
                content.append(ProviderContent(provider=ANTHROPIC, data=data))
        return ModelResponse(
            message=Message(role="assistant", content=content),
            stop_reason=_STOP_REASONS.get(self.stop_reason or "", "end_turn"),
            usage=self.usage,
            model=self.model,
            id=self.id,
            context_edits=self.edits,
        )


def _start(block: Any) -> _Block:
    kind = block.type
    if kind == "text":
        return _Block(kind, parts=[block.text] if block.text else [])
    if kind == "thinking":
        return _Block(
            kind, parts=[block.thinking] if block.thinking else [], signature=block.signature
        )
    if kind == "tool_use":
        initial = block.input if isinstance(block.input, dict) else {}
        return _Block(kind, id=block.id, name=block.name, initial_input=initial)
    if kind == "server_tool_use" or kind.endswith("_tool_result"):  # kept to be sent back
        return _Block(kind, raw=block.to_dict())
    return _Block(kind)  # redacted thinking: not kept


def _input_tokens(usage: Any) -> int | None:
    base = usage.input_tokens
    if base is None:
        return None
    cached = (usage.cache_creation_input_tokens or 0) + (usage.cache_read_input_tokens or 0)
    return int(base) + cached
