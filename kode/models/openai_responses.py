"""`OpenAIResponsesModel`: the OpenAI Responses API, streamed through ``openai``.

This module owns the Responses edge: it sends the conversation translated by
`kode.models.responses_input.to_responses_input` as ``input``, the system prompt as
``instructions`` and the tools as Responses function tools (``{"type": "function", "name",
"description", "parameters", "strict"}``, from ``schema("openai")``: strict mode whenever the
schema allows it, and ``strict: false`` said outright otherwise, since the API's default is
strict), with ``stream=True``. Requests are stateless: ``store: false``, and ``include:
["reasoning.encrypted_content"]`` so that reasoning comes back encrypted and goes back with the
next request (settings can change both, e.g. ``store=True``).

How the stream becomes a response (items are kept by their ``output_index``):

- ``response.output_text.delta`` and ``response.refusal.delta`` are `TextDelta` events and one
  text block per message item; a refusal makes the stop reason ``refusal``.
- ``response.reasoning_summary_text.delta`` and ``response.reasoning_text.delta`` are
  `ThinkingDelta` events. A reasoning item becomes one `ThinkingContent` with
  ``provider="openai"``: its summary parts (joined by a blank line) as the text, its
  ``encrypted_content`` as the signature.
- A ``function_call`` item becomes a ``tool_use`` block: ``call_id`` is its id, the arguments
  come in ``response.function_call_arguments.delta`` pieces and are parsed at the end (a JSON
  object → the input, empty → ``{}``, anything else → the raw string). Parallel calls are
  several items, in order. ``tool_search_call`` and ``tool_search_output`` items (hosted tool
  search) are kept as they came in a `ProviderContent` and go back with the history; other
  items (built-in tools) are dropped.
- Tool search: made with ``tool_search="hosted"``, the model sends the request's
  `ModelRequest.deferred` tools with ``defer_loading: true`` and the hosted ``{"type":
  "tool_search"}`` tool, which finds and loads them on the API's side (an agent then leaves
  its own ``tool_search`` out).
- ``response.completed`` → ``end_turn`` (``tool_use`` with calls); ``response.incomplete`` →
  ``max_tokens`` (reason ``max_output_tokens``) or ``refusal`` (``content_filter``);
  ``response.failed`` and an ``error`` event are `ModelError`; a stream that ends before any of
  them was cut short: `ModelError`.
- Usage comes from the final response: ``input_tokens`` (cached ones included) and
  ``output_tokens`` (reasoning ones included).
- Every SDK failure (HTTP status, connection, an undecodable event) is raised as `ModelError`.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from kode.models._limits import (
    DEFAULT_IDLE_TIMEOUT,
    DEFAULT_MAX_REPLY_BYTES,
    DEFAULT_MAX_REPLY_CHARS,
    bounded_deltas,
    guard_response,
)
from kode.models._sdk import DEFAULT_MAX_RETRIES, SDKModel
from kode.models._sdk_import import LazySDK, load_sdks
from kode.models.base import (
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
    Message,
    ProviderContent,
    TextContent,
    ThinkingContent,
    ToolUseContent,
    Usage,
)
from kode.models.openai import make_openai_client, openai_json_schema, openai_model_error
from kode.models.responses_input import OPENAI, to_responses_input
from kode.models.translate import parse_arguments
from kode.tools.core import Tool

__all__ = ["OpenAIResponsesModel", "responses_tool"]

if TYPE_CHECKING:
    import openai
else:  # imported by the first request, in a worker thread (see kode.models._sdk_import)
    openai = LazySDK("openai", needed_by="OpenAIResponsesModel", extra="openai")


def responses_tool(tool: Tool[..., Any]) -> dict[str, Any]:
    """The tool as a Responses API function tool (strict whenever its schema allows)."""
    function = tool.schema("openai")["function"]
    return {"type": "function", **function}


class OpenAIResponsesModel(SDKModel["openai.AsyncOpenAI"]):
    """A model behind the OpenAI Responses API, streaming, stateless.

    ``model_from("openai-responses:<model>")`` makes one. It is a model of its own rather than
    an option of `OpenAIModel` because the two APIs share nothing but the client: other
    requests, other events, another history format (and reasoning that only this one carries
    from turn to turn).

    Example:
        ```python
        from kode.models import OpenAIResponsesModel

        gpt = OpenAIResponsesModel("gpt-5-mini", reasoning={"effort": "low", "summary": "auto"})
        ```

    Args:
        model: The model name, e.g. ``"gpt-5"``.
        client: An ``openai.AsyncOpenAI`` client to use as it is (then `api_key` and `base_url`
            must not be given). It stays yours: `aclose` leaves it open; use it from one event
            loop. By default the model makes one client per event loop on first use there, and
            closes it when that loop ends (or on `aclose` in that loop).
        api_key: The API key (default: the SDK reads ``OPENAI_API_KEY``). With a `base_url` and
            no key anywhere, a placeholder is sent.
        base_url: The server's address, ending in ``/v1`` (default: the SDK reads
            ``OPENAI_BASE_URL``, else OpenAI).
        max_tokens: The most tokens per response (``max_output_tokens``), used instead of the
            request's ``settings.max_tokens`` when given.
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
        tool_search: ``"hosted"``: an agent's deferred tools are found by the API's hosted
            tool search (``{"type": "tool_search"}``) instead of kode's ``tool_search``; the
            request carries every deferred definition with ``defer_loading: true``. `None`
            (the default): kode's search, which works with every model.
        **settings: Request fields sent with every request, e.g. ``reasoning={"effort":
            "low", "summary": "auto"}``, ``parallel_tool_calls=False`` or ``store=True``. A
            request's ``settings.temperature`` and ``settings.extra`` take precedence.
            ``stream`` is refused: kode always streams.

    Raises:
        ValueError: `client` was given together with `api_key` or `base_url`; `settings` set
            ``stream``; `timeout`, `max_retries` or a reply limit is not a valid value;
            `tool_search` is not ``"hosted"`` or `None`.
    """

    def __init__(
        self,
        model: str,
        *,
        client: openai.AsyncOpenAI | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        max_tokens: int | None = None,
        timeout: float | None = None,
        max_retries: int = DEFAULT_MAX_RETRIES,
        max_reply_chars: int = DEFAULT_MAX_REPLY_CHARS,
        max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES,
        idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
        tool_search: Literal["hosted"] | None = None,
        **settings: Any,
    ) -> None:
        if tool_search not in (None, "hosted"):
            raise ValueError(
                f"tool_search={tool_search!r} is not a tool search of the Responses API: use "
                "'hosted', or None for kode's own tool_search"
            )
        self.tool_search = tool_search
        """The API's tool search used for deferred tools (`None`: kode's own)."""
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
        """Whether deferred tools are found by the API's hosted tool search."""
        return self.tool_search is not None

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
        """The keyword arguments of ``client.responses.create`` for `request`.

        Streaming and the timeout are not included. Fields outside the SDK's typed parameters
        (`settings`, ``temperature``, the request's ``settings.extra``) travel in
        ``extra_body``, which wins over the typed ones (so ``store=True`` in the settings
        replaces the default ``store: false``).

        Raises:
            ModelError: the request's settings set ``stream``.
        """
        extra = self._extra_body(request)
        params: dict[str, Any] = {
            "model": self.name,
            "input": to_responses_input(request.messages),
            "max_output_tokens": self._max_tokens(request),
            "store": False,
            "include": ["reasoning.encrypted_content"],
        }
        if request.system:
            params["instructions"] = request.system
        tools = [responses_tool(tool) for tool in request.tools]
        if self.tool_search is not None and (
            request.deferred or _has_search_items(request.messages)
        ):
            tools += [{**responses_tool(tool), "defer_loading": True} for tool in request.deferred]
            tools.append({"type": "tool_search"})
        if tools:
            params["tools"] = tools
        if request.output is not None:
            schema = openai_json_schema(request.output)
            params["text"] = {"format": {"type": "json_schema", **schema}}
        if extra:
            params["extra_body"] = extra
        return params

    def supports_output_format(self, *, tools: bool) -> bool:
        """Structured output (``text.format`` with a JSON schema), with or without tools."""
        return True

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """Stream one response: text and reasoning deltas, then the `ModelResponse`.

        A `ModelRetry` comes before each retry of a request that failed in a way worth
        retrying.

        Raises:
            ModelError: the server answered with an error, could not be reached, or the stream
                broke off or failed.
        """
        await load_sdks(openai)
        options = self._options(request)
        params = self.request_params(request)
        if options.timeout is not None:
            params["timeout"] = options.timeout
        events: Any = None
        async for item in self._open(
            options, lambda client: client.responses.create(**params, stream=True)
        ):
            if isinstance(item, ModelRetry):
                yield item
            else:
                events = item.stream
        assembler = _Assembler()
        budget = self._budget(options)
        guard = guard_response(events.response, budget.wire())
        try:
            # aclosing: when an event makes the assembler raise, the SDK's iterator is closed
            # now, not left to the garbage collector (which trio reports).
            async with events, contextlib.aclosing(aiter(events)) as iterator:
                deltas = bounded_deltas(iterator, assembler.feed, budget, guard)
                async with contextlib.aclosing(deltas):
                    async for delta in deltas:
                        yield delta
        except ModelError:
            raise
        except Exception as exc:  # transport errors mid-stream, undecodable events
            raise openai_model_error(exc, streaming=True) from exc
        yield assembler.response()


# --- responses --------------------------------------------------------------------------------


@dataclass(slots=True)
class _Item:
    kind: str  # "message", "reasoning", "function_call" or another item type (dropped)
    parts: list[str] = field(default_factory=list)
    summary_index: int = 0
    call_id: str = ""
    name: str = ""
    arguments: str | None = None  # the final arguments, when the item ended
    encrypted: str | None = None
    final_text: str | None = None
    final_summary: list[str] | None = None
    raw: dict[str, Any] | None = None  # a hosted tool search item, as it ended


class _Assembler:
    """Builds the assistant message from Responses stream events, item by item."""

    def __init__(self) -> None:
        self.items: dict[int, _Item] = {}
        self.model = ""
        self.id = ""
        self.usage = Usage()
        self.status: str | None = None
        self.incomplete: str | None = None
        self.refused = False

    def feed(self, event: Any) -> TextDelta | ThinkingDelta | ToolInputDelta | None:
        kind = event.type
        if kind in ("response.created", "response.in_progress"):
            self.model = self.model or (event.response.model or "")
            self.id = self.id or (event.response.id or "")
        elif kind == "response.output_item.added":
            self.items[event.output_index] = _start(event.item)
        elif kind == "response.output_text.delta" or kind == "response.refusal.delta":
            item = self._item(event.output_index)
            item.parts.append(event.delta)
            self.refused = self.refused or kind == "response.refusal.delta"
            return TextDelta(text=event.delta) if event.delta else None
        elif kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            item = self._item(event.output_index)
            summary = kind == "response.reasoning_summary_text.delta"
            index = event.summary_index if summary else event.content_index
            if item.parts and index != item.summary_index:
                item.parts.append("\n\n")
            item.summary_index = index
            item.parts.append(event.delta)
            return ThinkingDelta(thinking=event.delta) if event.delta else None
        elif kind == "response.function_call_arguments.delta":
            item = self._item(event.output_index)
            item.parts.append(event.delta)
            if event.delta:
                return ToolInputDelta(id=item.call_id, name=item.name, text=event.delta)
        elif kind == "response.function_call_arguments.done":
            self._item(event.output_index).arguments = event.arguments
        elif kind == "response.output_item.done":
            self._finish(event.output_index, event.item)
        elif kind in ("response.completed", "response.incomplete"):
            self._end(event.response)
        elif kind == "response.failed":
            error = event.response.error
            said = f" ({error.code})" if error is not None and error.code else ""
            message = error.message if error is not None else "the response failed"
            raise ModelError(f"OpenAI response failed{said}: {message}", provider="openai")
        elif kind == "error":
            said = f" ({event.code})" if event.code else ""
            raise ModelError(f"OpenAI stream failed{said}: {event.message}", provider="openai")
        return None

    def _item(self, index: int) -> _Item:
        item = self.items.get(index)
        if item is None:
            raise ModelError(
                f"OpenAI stream is malformed: an event for output item {index} before "
                "response.output_item.added",
                provider="openai",
            )
        return item

    def _finish(self, index: int, raw: Any) -> None:
        item = self.items.setdefault(index, _start(raw))
        if raw.type == "function_call":
            item.arguments = raw.arguments
        elif raw.type == "reasoning":
            item.encrypted = raw.encrypted_content or None
            item.final_summary = [s.text for s in raw.summary or ()]
        elif raw.type in _KEPT:
            item.raw = raw.to_dict()
        elif raw.type == "message":
            parts = raw.content or ()
            item.final_text = "".join(
                getattr(p, "text", None) or getattr(p, "refusal", None) or "" for p in parts
            )

    def _end(self, response: Any) -> None:
        self.status = response.status or "completed"
        details = response.incomplete_details
        self.incomplete = details.reason if details is not None else None
        self.model = response.model or self.model
        self.id = response.id or self.id
        usage = response.usage
        if usage is not None:
            self.usage = Usage(input_tokens=usage.input_tokens, output_tokens=usage.output_tokens)

    def response(self) -> ModelResponse:
        if self.status is None:
            raise ModelError(
                "OpenAI stream ended before response.completed (the connection was cut or the "
                "server stopped early)",
                provider="openai",
            )
        content: list[ContentBlock] = []
        calls = 0
        for index, item in sorted(self.items.items()):
            if item.kind == "message":
                text = item.final_text if item.final_text is not None else "".join(item.parts)
                if text:
                    content.append(TextContent(text=text))
            elif item.kind == "reasoning":
                summary = item.final_summary
                text = "\n\n".join(summary) if summary is not None else "".join(item.parts)
                content.append(
                    ThinkingContent(thinking=text, signature=item.encrypted, provider=OPENAI)
                )
            elif item.kind == "function_call":
                calls += 1
                arguments = item.arguments if item.arguments is not None else "".join(item.parts)
                content.append(
                    ToolUseContent(
                        id=item.call_id or f"call_{index}_{uuid.uuid4().hex[:12]}",
                        name=item.name,
                        input=parse_arguments(arguments),
                    )
                )
            elif item.raw is not None:
                content.append(ProviderContent(provider=OPENAI, data=item.raw))
        return ModelResponse(
            message=Message(role="assistant", content=content),
            stop_reason=self._stop_reason(calls),
            usage=self.usage,
            model=self.model,
            id=self.id,
        )

    def _stop_reason(self, calls: int) -> StopReason:
        if self.refused or self.incomplete == "content_filter":
            return "refusal"
        if self.status == "incomplete":
            return "max_tokens"
        return "tool_use" if calls else "end_turn"


_KEPT = ("tool_search_call", "tool_search_output")  # items kept to go back with the history


def _has_search_items(messages: Sequence[Message]) -> bool:
    """Whether the history holds hosted tool search items (the tool must be declared)."""
    return any(
        isinstance(b, ProviderContent) and b.provider == OPENAI
        for m in messages
        if m.role == "assistant"
        for b in m.content
    )


def _start(raw: Any) -> _Item:
    if raw.type == "function_call":
        return _Item("function_call", call_id=raw.call_id or "", name=raw.name or "")
    return _Item(raw.type)
