"""`GeminiModel`: the Gemini API's streaming ``generateContent``, through ``google-genai``.

This module owns the Gemini edge: it sends the conversation translated by
`kode.models.gemini_contents.to_gemini_contents`, the system prompt as ``system_instruction``
and the tools' ``schema("gemini")`` function declarations, and assembles the streamed chunks
into deltas and one `ModelResponse`. The SDK's automatic function calling is turned off: kode
runs the tools.

How the stream becomes a response:

- Text parts are `TextDelta` events and text blocks (consecutive parts joined); thought parts
  (``thought: true``, sent when ``thinking_config={"include_thoughts": True}``) are
  `ThinkingDelta` events and thinking blocks. Other parts (inline data, code execution) are
  dropped.
- A part's thought signature is kept on a `ThinkingContent` with ``provider="gemini"``: on the
  thinking block itself for a thought part, else on an empty one placed before the block of
  the part that carried it (see `kode.models.gemini_contents` for how it goes back). The
  signature is the base64 text the API sends.
- Function calls arrive whole: each is a ``tool_use`` block, in order (parallel calls are
  several parts); a call without an id gets a generated ``call_...`` id. No arguments are
  ``{}``; arguments that are not an object are kept as their JSON text.
- ``finishReason``: ``STOP`` → ``end_turn`` (``tool_use`` when there are calls),
  ``MAX_TOKENS`` → ``max_tokens``, the safety and recitation family (``SAFETY``,
  ``RECITATION``, ``BLOCKLIST``, ``PROHIBITED_CONTENT``, ``SPII``, ``LANGUAGE``, ``IMAGE_*``,
  ``MODEL_ARMOR``) and a prompt blocked by ``promptFeedback`` → ``refusal``, the malformed-call
  family (``MALFORMED_FUNCTION_CALL``, ``UNEXPECTED_TOOL_CALL``, ``TOO_MANY_TOOL_CALLS``,
  ``MISSING_THOUGHT_SIGNATURE``, ``MALFORMED_RESPONSE``) → ``error``, anything else →
  ``end_turn``. A stream that ends without a ``finishReason`` was cut short: `ModelError`.
- Usage comes from the last ``usageMetadata``: ``input_tokens`` is ``promptTokenCount`` (which
  counts cached tokens) plus ``toolUsePromptTokenCount``, ``output_tokens`` is
  ``candidatesTokenCount`` plus ``thoughtsTokenCount``. Only candidate 0 is read.
- Every failure (an HTTP status, a connection, an error object mid-stream, an undecodable
  chunk, settings the SDK refuses, a missing API key) is raised as `ModelError`.

The clients the model makes talk through an ``httpx2.AsyncClient`` of its own (one per event
loop, like the other models), which works on asyncio and trio alike; they share one TLS
context, made once per process. That client's response hook puts the byte limits of
`kode.models._limits` on the response of the request being opened (the SDK hides the response
from its caller); a ``genai.Client`` passed in has no such hook, so its replies get the
character limit and the idle timeout but not the byte limits.
"""

from __future__ import annotations

import base64
import contextlib
import contextvars
import functools
import json
import os
import ssl
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import pydantic

from kode.models._limits import (
    DEFAULT_IDLE_TIMEOUT,
    DEFAULT_MAX_REPLY_BYTES,
    DEFAULT_MAX_REPLY_CHARS,
    Guard,
    ReplyBudget,
    WireLimits,
    bounded_deltas,
    give_up,
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
    StopReason,
    TextDelta,
    ThinkingDelta,
)
from kode.models.gemini_contents import GEMINI, to_gemini_contents
from kode.models.messages import (
    ContentBlock,
    Message,
    TextContent,
    ThinkingContent,
    ToolUseContent,
    Usage,
)

__all__ = ["GeminiModel"]

if TYPE_CHECKING:
    import httpx2
    from google import genai
    from google.genai import errors as genai_errors
    from google.genai import types as genai_types
else:  # imported by the first request, in a worker thread (see kode.models._sdk_import)
    genai = LazySDK("google.genai", needed_by="GeminiModel", extra="google")
    genai_errors = LazySDK(
        "google.genai.errors", needed_by="GeminiModel", extra="google", found_as="google.genai"
    )
    genai_types = LazySDK(
        "google.genai.types", needed_by="GeminiModel", extra="google", found_as="google.genai"
    )
    httpx2 = LazySDK("httpx2", needed_by="GeminiModel", extra="google")

_PLACEHOLDER_KEY = "no-key-needed"
_REFUSALS = frozenset(
    {
        "SAFETY",
        "RECITATION",
        "BLOCKLIST",
        "PROHIBITED_CONTENT",
        "SPII",
        "LANGUAGE",
        "IMAGE_SAFETY",
        "IMAGE_PROHIBITED_CONTENT",
        "IMAGE_RECITATION",
        "IMAGE_OTHER",
        "MODEL_ARMOR",
    }
)
_ERRORS = frozenset(
    {
        "MALFORMED_FUNCTION_CALL",
        "UNEXPECTED_TOOL_CALL",
        "TOO_MANY_TOOL_CALLS",
        "MISSING_THOUGHT_SIGNATURE",
        "MALFORMED_RESPONSE",
    }
)


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """One TLS context for every client the models make (building one takes ~0.1-0.3 s)."""
    if os.environ.get("SSL_CERT_FILE") or os.environ.get("SSL_CERT_DIR"):
        return ssl.create_default_context(
            cafile=os.environ.get("SSL_CERT_FILE"), capath=os.environ.get("SSL_CERT_DIR")
        )
    return httpx2.create_ssl_context()


class GeminiModel(SDKModel["genai.Client"]):
    """A Gemini model, through the Gemini API's streaming ``generateContent``.

    Example:
        ```python
        from kode.models import GeminiModel

        gemini = GeminiModel(
            "gemini-2.5-flash",
            temperature=0.2,
            thinking_config={"include_thoughts": True, "thinking_budget": 1024},
        )
        ```

    Args:
        model: The model name, e.g. ``"gemini-2.5-flash"``.
        client: A ``google.genai.Client`` to use as it is (then `api_key` and `base_url` must
            not be given), e.g. one made for Vertex AI. It stays yours: `aclose` leaves it
            open. By default the model makes one client per event loop on first use there,
            and closes it when that loop ends (or on `aclose` in that loop).
        api_key: The API key (default: the SDK reads ``GEMINI_API_KEY`` or
            ``GOOGLE_API_KEY``). With a `base_url` and no key anywhere, a placeholder is sent.
        base_url: The API's address (default: Google's).
        max_tokens: The most tokens per response (``max_output_tokens``), used instead of the
            request's ``settings.max_tokens`` when given.
        timeout: Seconds to wait for the connection and for each read of the response
            (default: no limit).
        max_retries: How many times a request that failed in a way worth retrying (a rate
            limit, an overloaded server, a lost connection) is retried, honouring the server's
            ``retry-after``; a `ModelRetry` event comes before each retry.
        max_reply_chars: The most characters of text, thinking and tool input one reply may
            hold (default 4,000,000); a longer reply is cut off with a `ModelError`.
        max_reply_bytes: The most bytes of one reply's HTTP body (default 256 MiB); no line
            of it may be longer than 12 bytes per character of `max_reply_chars` (plus 1 MiB).
        idle_timeout: The most seconds a reply may go without progress, a piece of text,
            thinking or tool input (default 600); pings and keep-alive comments do not count.
        **settings: ``GenerateContentConfig`` fields sent with every request, in the SDK's
            names, e.g. ``temperature=0.2``, ``top_p=0.9``, ``safety_settings=[...]`` or
            ``thinking_config={"include_thoughts": True}``. A request's
            ``settings.temperature`` and ``settings.extra`` take precedence. ``stream`` is
            refused: kode always streams.

    Raises:
        ValueError: `client` was given together with `api_key` or `base_url`; `settings` set
            ``stream`` or a field ``GenerateContentConfig`` does not have; `timeout`,
            `max_retries` or a reply limit is not a valid value.
    """

    def __init__(
        self,
        model: str,
        *,
        client: genai.Client | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        max_tokens: int | None = None,
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
        # Only settings need the SDK's config fields: a model without them imports no SDK.
        fields = genai_types.GenerateContentConfig.model_fields if settings else {}
        unknown = sorted(set(settings) - set(fields))
        if unknown:
            raise ValueError(
                f"GeminiModel: {', '.join(map(repr, unknown))} is not a GenerateContentConfig "
                "field; settings are the SDK's config fields, e.g. temperature, top_p, "
                "thinking_config, safety_settings"
            )
        self._http_clients: dict[int, httpx2.AsyncClient] = {}

    _provider = "gemini"
    _label = "Gemini"

    def _make_client(self) -> genai.Client:
        """Raises `ValueError` when no API key is given or found and no `base_url`."""
        api_key = self._api_key
        if (
            api_key is None
            and self._base_url is not None
            and not (os.environ.get("GEMINI_API_KEY") or os.environ.get("GOOGLE_API_KEY"))
        ):
            api_key = _PLACEHOLDER_KEY
        tls = _tls_context()
        http = httpx2.AsyncClient(
            verify=tls, follow_redirects=True, event_hooks={"response": [_guard_opening]}
        )
        options = genai_types.HttpOptions(
            base_url=self._base_url,
            httpx_async_client=http,
            # A context given here spares the SDK building its own for its unused sync and
            # websocket clients.
            client_args={"verify": tls},
            async_client_args={"verify": tls, "ssl": tls},
        )
        client = genai.Client(api_key=api_key, http_options=options)
        self._http_clients[id(client)] = http
        return client

    async def _close_client(self, client: genai.Client) -> None:
        http = self._http_clients.pop(id(client), None)
        await client.aio.aclose()
        if http is not None:
            await http.aclose()

    def _model_error(self, exc: Exception) -> ModelError:
        return _model_error(exc, streaming=False)

    def request_config(self, request: ModelRequest) -> dict[str, Any]:
        """The ``config`` (``GenerateContentConfig`` fields) of a request for `request`.

        The timeout is not included.

        Raises:
            ModelError: the request's settings set ``stream``.
        """
        config: dict[str, Any] = self._extra_body(request)
        config["max_output_tokens"] = self._max_tokens(request)
        if request.system:
            config["system_instruction"] = request.system
        if request.tools:
            declarations = [tool.schema("gemini") for tool in request.tools]
            config["tools"] = [{"function_declarations": declarations}]
        config["automatic_function_calling"] = {"disable": True}
        if request.output is not None:
            config["response_mime_type"] = "application/json"
            config["response_json_schema"] = request.output.schema
        return config

    def supports_output_format(self, *, tools: bool) -> bool:
        """A response schema, when no tools are sent (Gemini does not take both)."""
        return not tools

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """Stream one response: text and thinking deltas, then the `ModelResponse`.

        A `ModelRetry` comes before each retry of a request that failed in a way worth
        retrying.

        Raises:
            ModelError: the API answered with an error, could not be reached, or the stream
                broke off or made no sense.
        """
        await load_sdks(genai, genai_errors, genai_types, httpx2)
        options = self._options(request)
        config = self.request_config(request)
        if options.timeout is not None:
            config["http_options"] = {"timeout": max(int(options.timeout * 1000), 1)}
        contents = to_gemini_contents(request.messages)

        async def open_stream(client: genai.Client) -> tuple[Any, Any, ReplyBudget, Guard | None]:
            chunks: Any = await client.aio.models.generate_content_stream(
                model=self.name, contents=cast(Any, contents), config=cast(Any, config)
            )
            budget = self._budget(options)
            # The request is sent when the first chunk is asked for: its response is guarded
            # by the client's hook, which finds the limits here.
            opening = _Opening(wire=budget.wire())
            token = _OPENING.set(opening)
            try:
                first = await budget.next(chunks)
            except StopAsyncIteration:
                first = None
            except BaseException:
                await _give_up(chunks, opening.guard)
                raise
            finally:
                _OPENING.reset(token)
            return chunks, first, budget, opening.guard

        opened: tuple[Any, Any, ReplyBudget, Guard | None] | None = None
        async for item in self._open(options, open_stream):
            if isinstance(item, ModelRetry):
                yield item
            else:
                opened = item.stream
        assert opened is not None
        chunks, chunk, budget, guard = opened
        assembler = _Assembler()
        try:
            if chunk is not None:  # else the stream ended before its first chunk
                deltas = bounded_deltas(
                    chunks,
                    assembler.feed,
                    budget,
                    guard,
                    read=(chunk,),
                    counted=assembler.take_call_chars,
                )
                async with contextlib.aclosing(deltas):
                    async for delta in deltas:
                        yield delta
        except ModelError:
            raise
        except Exception as exc:
            raise _model_error(exc, streaming=True) from exc
        finally:
            # The SDK nests async generators without closing the inner ones when the outer
            # is closed; on a failure `bounded_deltas` has given the body up already.
            await chunks.aclose()
        yield assembler.response()


# --- errors -----------------------------------------------------------------------------------


@dataclass(slots=True)
class _Opening:
    """A request being opened: its byte limits, and the guard its response got."""

    wire: WireLimits
    guard: Guard | None = None


_OPENING: contextvars.ContextVar[_Opening | None] = contextvars.ContextVar(
    "kode_gemini_opening", default=None
)
"""The request this task is opening (read by the client's response hook)."""


async def _guard_opening(response: httpx2.Response) -> None:
    """The response hook of the clients `GeminiModel` makes: guard a reply being opened."""
    opening = _OPENING.get()
    if opening is not None:
        opening.guard = guard_response(response, opening.wire)


async def _give_up(chunks: Any, guard: Guard | None) -> None:
    """End the SDK's stream early, failing its body first (`give_up`).

    The SDK nests async generators without closing the inner ones when the outer is closed.
    """
    await give_up(chunks, guard)
    await chunks.aclose()


def _model_error(exc: Exception, *, streaming: bool) -> ModelError:
    found = limit_error(exc)
    if found is not None:
        return found
    undecodable = isinstance(exc, genai_errors.UnknownApiResponseError)
    verb = "stream failed" if streaming or undecodable else "request failed"
    if isinstance(exc, genai_errors.APIError):
        label = f" ({exc.status})" if exc.status else ""
        message = _shorten(str(exc.message or exc.details or exc))
        if streaming:
            return ModelError(f"Gemini stream failed{label}: {message}", provider="gemini")
        headers = getattr(exc.response, "headers", None)
        return ModelError(
            f"Gemini request failed with HTTP {exc.code}{label}: {message}",
            provider="gemini",
            status_code=exc.code,
            retryable=worth_retrying(exc.code, headers),
            retry_after=retry_after(headers),
        )
    if isinstance(exc, httpx2.TransportError):
        where = ""
        try:
            where = f" ({exc.request.url})"
        except RuntimeError:  # no request attached
            pass
        said = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        return ModelError(f"Gemini {verb}: {said}{where}", provider="gemini", retryable=True)
    if isinstance(exc, pydantic.ValidationError):
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}"
            for e in exc.errors(include_url=False)
        )
        if exc.title.endswith("Response"):  # what the server sent, not what kode asked
            return ModelError(
                f"Gemini stream failed: a chunk is invalid: {problems}", provider="gemini"
            )
        return ModelError(f"Gemini request is invalid: {problems}", provider="gemini")
    return ModelError(f"Gemini {verb}: {type(exc).__name__}: {exc}", provider="gemini")


def _shorten(text: str, limit: int = 500) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --- responses --------------------------------------------------------------------------------


@dataclass(slots=True)
class _Item:
    kind: str  # "text", "thought" or "call"
    parts: list[str] = field(default_factory=list)
    signature: str | None = None
    call: ToolUseContent | None = None


class _Assembler:
    """Builds the assistant message from streamed chunks (candidate 0 only)."""

    def __init__(self) -> None:
        self.items: list[_Item] = []
        self.finish_reason: str | None = None
        self.blocked: str | None = None
        self.usage = Usage()
        self.model = ""
        self.id = ""
        self.calls = 0
        self.call_chars = 0
        """Characters of the calls' arguments not yet counted (`take_call_chars`)."""

    def take_call_chars(self) -> int:
        """The characters of the calls' arguments since the last time, which arrive whole."""
        count, self.call_chars = self.call_chars, 0
        return count

    def feed(self, chunk: Any) -> list[TextDelta | ThinkingDelta]:
        if chunk.model_version and not self.model:
            self.model = chunk.model_version
        if chunk.response_id and not self.id:
            self.id = chunk.response_id
        usage = chunk.usage_metadata
        if usage is not None:
            self.usage = Usage(
                input_tokens=(usage.prompt_token_count or 0)
                + (usage.tool_use_prompt_token_count or 0),
                output_tokens=(usage.candidates_token_count or 0)
                + (usage.thoughts_token_count or 0),
            )
        feedback = chunk.prompt_feedback
        if feedback is not None and feedback.block_reason is not None:
            self.blocked = _name(feedback.block_reason)
        out: list[TextDelta | ThinkingDelta] = []
        for candidate in chunk.candidates or ():
            if (candidate.index or 0) != 0:
                continue
            content = candidate.content
            for part in (content.parts if content is not None else None) or ():
                delta = self._part(part)
                if delta is not None:
                    out.append(delta)
            if candidate.finish_reason is not None:
                self.finish_reason = _name(candidate.finish_reason)
        return out

    def _part(self, part: Any) -> TextDelta | ThinkingDelta | None:
        raw = part.thought_signature
        signature = base64.b64encode(raw).decode("ascii") if raw else None
        call = part.function_call
        if call is not None:
            args = call.args
            self.calls += 1
            self.call_chars += len(call.name or "") + (
                len(json.dumps(args, default=str)) if args else 0
            )
            block = ToolUseContent(
                id=call.id or f"call_{self.calls}_{uuid.uuid4().hex[:12]}",
                name=call.name or "",
                input=args if isinstance(args, dict) else {} if args is None else json.dumps(args),
            )
            self.items.append(_Item("call", signature=signature, call=block))
            return None
        text = part.text
        if text is None:
            if signature is not None:  # a signature on a part kode keeps nothing else of
                self.items.append(_Item("text", signature=signature))
            return None
        kind = "thought" if part.thought else "text"
        last = self.items[-1] if self.items else None
        if (
            last is not None
            and last.kind == kind
            and not (signature and last.signature and signature != last.signature)
        ):
            last.parts.append(text)
            last.signature = last.signature or signature
        else:
            self.items.append(_Item(kind, parts=[text], signature=signature))
        if not text:
            return None
        return ThinkingDelta(thinking=text) if kind == "thought" else TextDelta(text=text)

    def response(self) -> ModelResponse:
        if self.finish_reason is None and self.blocked is None:
            raise ModelError(
                "Gemini stream ended without a finishReason (the connection was cut or the "
                "server stopped early)",
                provider="gemini",
            )
        content: list[ContentBlock] = []
        for item in self.items:
            text = "".join(item.parts)
            if item.kind == "thought":
                content.append(
                    ThinkingContent(thinking=text, signature=item.signature, provider=GEMINI)
                )
                continue
            if item.signature:
                content.append(
                    ThinkingContent(thinking="", signature=item.signature, provider=GEMINI)
                )
            if item.call is not None:
                content.append(item.call)
            elif text:
                content.append(TextContent(text=text))
        return ModelResponse(
            message=Message(role="assistant", content=content),
            stop_reason=self._stop_reason(),
            usage=self.usage,
            model=self.model,
            id=self.id,
        )

    def _stop_reason(self) -> StopReason:
        reason = self.finish_reason
        if reason is None or reason in _REFUSALS:
            return "refusal"
        if reason == "MAX_TOKENS":
            return "max_tokens"
        if reason in _ERRORS:
            return "error"
        return "tool_use" if self.calls else "end_turn"


def _name(value: Any) -> str:
    """An enum member's name (the SDK gives enums, or the raw string for a new value)."""
    return str(getattr(value, "value", value))
