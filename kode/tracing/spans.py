"""The spans and metrics of an instrumented agent, named as the GenAI semantic conventions say.

This module owns what a traced run records: an ``invoke_agent {agent}`` span (INTERNAL) for a
run, a ``chat {model}`` span (CLIENT) for each model request, an ``execute_tool {tool}`` span
(INTERNAL) for each call, a ``tools/call {tool}`` span (CLIENT) for each call sent to an MCP
server, and the histograms ``gen_ai.client.operation.duration``, ``gen_ai.client.token.usage``,
``gen_ai.invoke_agent.duration`` and ``gen_ai.execute_tool.duration``. It follows the latest
experimental version of the conventions (what ``OTEL_SEMCONV_STABILITY_OPT_IN=
gen_ai_latest_experimental`` asks for): kode never emitted an older one, so there is no older
one to keep by default. It reads kode's objects by their public attributes only and imports
nothing else of kode. Importing it imports ``opentelemetry-api``.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit

from opentelemetry import metrics, trace
from opentelemetry.propagate import extract, inject
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from kode.tracing.settings import ACTIVE

if TYPE_CHECKING:
    from kode.tracing.settings import Instrumentation

__all__ = ["SCOPE", "Tracing", "extract_context", "inject_context", "provider_name"]

SCOPE = "kode"
"""The instrumentation scope of kode's spans and metrics."""

T = TypeVar("T")

_DURATION_BUCKETS = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48,
                     40.96, 81.92]  # fmt: skip
_TOKEN_BUCKETS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304,
                  16777216, 67108864]  # fmt: skip
_PROVIDERS = {
    "AnthropicModel": "anthropic",
    "OpenAIModel": "openai",
    "OpenAIResponsesModel": "openai",
    "GeminiModel": "gcp.gemini",
    "ScriptedModel": "kode.scripted",
    "FunctionModel": "kode.function",
}


def provider_name(model: Any) -> str:
    """``gen_ai.provider.name`` for a model: its ``provider`` attribute, or its class's."""
    named = getattr(model, "provider_name", None)
    if isinstance(named, str) and named:
        return named
    kind = type(model).__name__
    return _PROVIDERS.get(kind, kind.removesuffix("Model").lower() or "_OTHER")


def inject_context(carrier: dict[str, Any]) -> None:
    """Put the current trace context into `carrier` (``traceparent``, ``tracestate``)."""
    inject(carrier)


def extract_context(carrier: Mapping[str, Any] | None) -> Any:
    """The context `carrier` holds (``traceparent``...), or ``None`` when it holds none."""
    if not carrier or "traceparent" not in carrier:
        return None
    found = extract(dict(carrier))
    if not trace.get_current_span(found).get_span_context().is_valid:
        return None
    return found


class Tracing:
    """Spans and metrics for instrumented agents, with one `Instrumentation`'s providers."""

    def __init__(self, settings: Instrumentation) -> None:
        self.settings = settings
        """Where spans and metrics go, and whether content is captured."""
        self.tracer = trace.get_tracer(SCOPE, tracer_provider=settings.tracer_provider)
        """The tracer kode's spans come from."""
        meter = metrics.get_meter(SCOPE, meter_provider=settings.meter_provider)
        self.operation_duration = meter.create_histogram(
            "gen_ai.client.operation.duration",
            unit="s",
            description="GenAI operation duration.",
            explicit_bucket_boundaries_advisory=_DURATION_BUCKETS,
        )
        self.token_usage = meter.create_histogram(
            "gen_ai.client.token.usage",
            unit="{token}",
            description="Number of input and output tokens used.",
            explicit_bucket_boundaries_advisory=_TOKEN_BUCKETS,
        )
        self.agent_duration = meter.create_histogram(
            "gen_ai.invoke_agent.duration",
            unit="s",
            description="Duration of an agent's run.",
            explicit_bucket_boundaries_advisory=_DURATION_BUCKETS,
        )
        self.tool_duration = meter.create_histogram(
            "gen_ai.execute_tool.duration",
            unit="s",
            description="Duration of a tool call, by tool and outcome.",
            explicit_bucket_boundaries_advisory=_DURATION_BUCKETS,
        )
        self._live = False
        self._idle: tuple[Any, Any] = (None, None)
        self._global_only = settings.tracer_provider is None and settings.meter_provider is None

    def active(self) -> bool:
        """Whether anything would record: a tracer or a meter provider is configured.

        Without one (OpenTelemetry's API alone, or its no-op providers), a run takes kode's
        plain path, as if it were not traced. A global provider set later is seen by the next
        run (the answer is kept only once it is yes: a global provider cannot be unset). The
        global providers are only looked at once ``opentelemetry.sdk`` is imported: a provider
        of another implementation is given with `Instrumentation` instead.
        """
        if self._live:
            return True
        if self._global_only and "opentelemetry.sdk" not in sys.modules:
            return False  # no SDK loaded, so no provider that records: the common case, fast
        tracer_provider = self.settings.tracer_provider or trace.get_tracer_provider()
        meter_provider = self.settings.meter_provider or metrics.get_meter_provider()
        if tracer_provider is self._idle[0] and meter_provider is self._idle[1]:
            return False  # the same no-op providers as last time
        if not isinstance(
            tracer_provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider
        ) or not (
            isinstance(meter_provider, metrics.NoOpMeterProvider)
            or type(meter_provider).__name__.startswith("_Proxy")
        ):
            self._live = True
            return True
        self._idle = (tracer_provider, meter_provider)
        return False

    @property
    def capture_content(self) -> bool:
        """Whether spans carry messages, tool arguments and results."""
        return self.settings.captures_content()

    # --- invoke_agent --------------------------------------------------------------------------

    async def invoke_agent(
        self,
        agent: Any,
        run: Callable[[], Awaitable[T]],
        *,
        resume_from: Mapping[str, str] | None = None,
    ) -> T:
        """Run `run` (an agent's loop) inside its ``invoke_agent`` span; its last event.

        `resume_from` is the trace context a stopped process kept in the session's store
        (``traceparent``, ``tracestate`` of its run's span): the span of the run that takes
        over is then its child, in the same trace (the run goes on with the same work), with
        ``kode.agent.resumed``; a span current here in another trace (a worker's job) gets a
        link from it.
        """
        template = agent.template
        model = agent.model
        provider = provider_name(model)
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.provider.name": provider,
            "gen_ai.agent.name": template.id,
            "gen_ai.agent.id": agent.agent_id,
            "gen_ai.conversation.id": agent.session_id,
            "gen_ai.request.model": model.name,
        }
        parent = extract_context(resume_from) if resume_from else None
        links: list[trace.Link] | None = None
        if parent is not None:
            attributes["kode.agent.resumed"] = True
            stopped = trace.get_current_span(parent).get_span_context()
            here = trace.get_current_span().get_span_context()
            if here.is_valid and here.trace_id != stopped.trace_id:
                links = [trace.Link(here, {"kode.link.type": "caller"})]
        started = time.perf_counter()
        error: str | None = None
        active = ACTIVE.set(self)  # for what the run calls that has no agent (MCP clients)
        with self.tracer.start_as_current_span(
            f"invoke_agent {template.id}",
            context=parent,
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            links=links,
            record_exception=True,
            set_status_on_exception=True,
        ) as span:
            try:
                last = await run()
            except BaseException as exc:
                error = _error_type(exc)
                span.set_attribute("error.type", error)
                raise
            finally:
                ACTIVE.reset(active)
                self.agent_duration.record(
                    time.perf_counter() - started,
                    _metric_attributes(
                        {"gen_ai.operation.name": "invoke_agent", "gen_ai.provider.name":
                         provider, "gen_ai.agent.name": template.id}, error),
                )  # fmt: skip
            if span.is_recording():
                usage = getattr(last, "usage", None)
                if usage is not None:
                    span.set_attribute("gen_ai.usage.input_tokens", usage.input_tokens)
                    span.set_attribute("gen_ai.usage.output_tokens", usage.output_tokens)
                    _set_cache_usage(span, usage)
                if getattr(last, "type", "") == "error":
                    cause = getattr(last, "error", None)
                    error = type(cause).__name__ if cause is not None else "agent_error"
                    span.set_attribute("error.type", error)
                    span.set_status(Status(StatusCode.ERROR, getattr(last, "message", "")))
                else:
                    turns = getattr(last, "turns", None)
                    if turns is not None:
                        span.set_attribute("kode.agent.turns", turns)
                    if getattr(last, "interrupted", False):
                        span.add_event("kode.agent.interrupted")
                    pending = getattr(last, "pending_calls", ())
                    if pending:
                        span.set_attribute("kode.agent.pending_calls", list(pending))
            return last

    # --- chat ----------------------------------------------------------------------------------

    async def chat(
        self,
        agent: Any,
        request: Any,
        stream: AsyncIterator[Any],
        *,
        model: Any = None,
        compaction: bool = False,
    ) -> AsyncIterator[Any]:
        """`stream` (one model request's events), inside its ``chat`` span.

        `model` is the one asked when not the agent's; `compaction` marks a request that
        summarises the history (attribute ``kode.compaction``).
        """
        if model is None:
            model = agent.model
        provider = provider_name(model)
        settings = request.settings
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": provider,
            "gen_ai.request.model": model.name,
            "gen_ai.conversation.id": agent.session_id,
            "gen_ai.request.max_tokens": settings.max_tokens,
            "gen_ai.request.stream": True,  # every Model streams its response
        }
        if settings.temperature is not None:
            attributes["gen_ai.request.temperature"] = settings.temperature
        base_url = getattr(model, "base_url", None)
        server = _server(base_url) if isinstance(base_url, str) and base_url else {}
        attributes.update(server)
        if request.output is not None:
            attributes["gen_ai.output.type"] = "json"
        if compaction:
            attributes["kode.compaction"] = True
        span = self.tracer.start_span(f"chat {model.name}", kind=SpanKind.CLIENT)
        recording = span.is_recording()
        if recording:
            span.set_attributes(attributes)
            if self.capture_content:
                if request.system:
                    span.set_attribute(
                        "gen_ai.system_instructions",
                        _dumps([{"type": "text", "content": request.system}]),
                    )
                span.set_attribute(
                    "gen_ai.input.messages", _dumps([_message(m) for m in request.messages])
                )
                span.set_attribute(
                    "gen_ai.tool.definitions",
                    _dumps(
                        [
                            {"type": "function", "name": t.name, "description": t.description}
                            for t in request.tools
                        ]
                    ),
                )
        started = time.perf_counter()
        first_chunk: float | None = None
        error: str | None = None
        response: Any = None
        try:
            async for event in stream:
                kind = getattr(event, "type", None)
                if first_chunk is None and kind != "model_retry":
                    # From issuing the request to the first piece of the answer (a delta, or
                    # the whole response when the model sends no deltas), retries included.
                    first_chunk = time.perf_counter() - started
                    if recording:
                        span.set_attribute("gen_ai.response.time_to_first_chunk", first_chunk)
                if kind == "model_retry" and recording:
                    span.add_event(
                        "kode.model.retry",
                        {
                            "kode.retry.attempt": event.attempt,
                            "kode.retry.max_retries": event.max_retries,
                            "kode.retry.delay": event.delay,
                            "error.type": _error_type(event.error),
                        },
                    )
                elif hasattr(event, "stop_reason") and hasattr(event, "message"):
                    response = event
                yield event
        except BaseException as exc:
            error = _error_type(exc)
            if recording:
                span.set_attribute("error.type", error)
                span.record_exception(exc)
                span.set_status(Status(StatusCode.ERROR, str(exc)))
            raise
        finally:
            common = {
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": provider,
                "gen_ai.request.model": model.name,
                **server,
            }
            if response is not None:
                answered = response.model or model.name
                common["gen_ai.response.model"] = answered
                usage = response.usage
                self.token_usage.record(
                    usage.input_tokens, {**common, "gen_ai.token.type": "input"}
                )
                self.token_usage.record(
                    usage.output_tokens, {**common, "gen_ai.token.type": "output"}
                )
                if recording:
                    span.set_attributes(
                        {
                            "gen_ai.response.model": answered,
                            "gen_ai.response.finish_reasons": [response.stop_reason],
                            **({"gen_ai.response.id": response.id} if response.id else {}),
                            "gen_ai.usage.input_tokens": usage.input_tokens,
                            "gen_ai.usage.output_tokens": usage.output_tokens,
                        }
                    )
                    _set_cache_usage(span, usage)
                    if self.capture_content:
                        out = _message(response.message)
                        out["finish_reason"] = response.stop_reason
                        span.set_attribute("gen_ai.output.messages", _dumps([out]))
            self.operation_duration.record(
                time.perf_counter() - started, _metric_attributes(common, error)
            )
            span.end()

    # --- execute_tool --------------------------------------------------------------------------

    async def execute_tool(self, agent: Any, call: Any, pipeline: Any) -> Any:
        """Run one call's `pipeline` (``run()``) inside its ``execute_tool`` span.

        The pipeline's ``span`` is set to the span, so it can add events (approvals, hooks,
        denials); its ``result`` and the returned outcome's ``status`` describe the end.
        """
        tool = agent.lookup(call.name)
        name = tool.name if tool is not None else call.name.strip()
        started = time.perf_counter()
        with self.tracer.start_as_current_span(
            f"execute_tool {name}",
            kind=SpanKind.INTERNAL,
            record_exception=True,
            set_status_on_exception=True,
        ) as span:
            recording = span.is_recording()
            if recording:
                span.set_attributes(
                    {
                        "gen_ai.operation.name": "execute_tool",
                        "gen_ai.tool.name": name,
                        "gen_ai.tool.call.id": call.id,
                        "gen_ai.tool.type": "extension"
                        if tool is not None and "group:mcp" in tool.groups
                        else "function",
                    }
                )
                if tool is not None and tool.description:
                    span.set_attribute("gen_ai.tool.description", tool.description)
                if self.capture_content:
                    span.set_attribute("gen_ai.tool.call.arguments", _dumps(call.input))
                pipeline.span = span
            outcome = None
            try:
                outcome = await pipeline.run()
            finally:
                status = outcome.status if outcome is not None else "raised"
                result = pipeline.result
                error: str | None = None
                if result is not None and result.is_error:
                    error = result.error_type.value if result.error_type else "tool_error"
                elif outcome is None:
                    error = "raised"
                attributes = {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": name,
                    "kode.tool.outcome": status,
                }
                self.tool_duration.record(
                    time.perf_counter() - started, _metric_attributes(attributes, error)
                )
                if recording:
                    span.set_attribute("kode.tool.outcome", status)
                    if error is not None:
                        span.set_attribute("error.type", error)
                        span.set_status(Status(StatusCode.ERROR, error))
                    if self.capture_content and result is not None and not result.is_error:
                        span.set_attribute("gen_ai.tool.call.result", _result(result))
            return outcome

    # --- MCP -----------------------------------------------------------------------------------

    @contextmanager
    def mcp_call(self, name: str, arguments: Any, attributes: Mapping[str, Any]) -> Iterator[Span]:
        """A ``tools/call {name}`` CLIENT span (the MCP conventions), current in the block."""
        with self.tracer.start_as_current_span(
            f"tools/call {name}",
            kind=SpanKind.CLIENT,
            attributes={
                "mcp.method.name": "tools/call",
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": name,
                **attributes,
            },
            record_exception=True,
            set_status_on_exception=True,
        ) as span:
            if self.capture_content and span.is_recording():
                span.set_attribute("gen_ai.tool.call.arguments", _dumps(arguments))
            yield span

    async def served_tool(
        self,
        tool: Any,
        call_id: str,
        arguments: Any,
        meta: Mapping[str, Any] | None,
        run: Callable[[], Awaitable[T]],
    ) -> T:
        """Run a call ``kode mcp serve`` received inside its ``execute_tool`` span.

        The span's parent is the current span (the MCP SDK's ``tools/call`` SERVER span, which
        continues the client's trace), or else the trace context in the request's
        ``params._meta`` (``traceparent``, ``tracestate``).
        """
        parent = None
        if not trace.get_current_span().get_span_context().is_valid:
            parent = extract_context(meta)
        started = time.perf_counter()
        with self.tracer.start_as_current_span(
            f"execute_tool {tool.name}",
            context=parent,
            kind=SpanKind.INTERNAL,
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": tool.name,
                "gen_ai.tool.call.id": call_id,
                "gen_ai.tool.type": "function",
            },
        ) as span:
            if tool.description and span.is_recording():
                span.set_attribute("gen_ai.tool.description", tool.description)
            if self.capture_content and span.is_recording():
                span.set_attribute("gen_ai.tool.call.arguments", _dumps(arguments))
            result: Any = await run()
            error = None
            if getattr(result, "is_error", False):
                error = result.error_type.value if result.error_type else "tool_error"
                span.set_attribute("error.type", error)
                span.set_status(Status(StatusCode.ERROR, error))
            elif self.capture_content and span.is_recording():
                span.set_attribute("gen_ai.tool.call.result", _result(result))
            outcome = "failed" if error else "done"
            span.set_attribute("kode.tool.outcome", outcome)
            self.tool_duration.record(
                time.perf_counter() - started,
                _metric_attributes(
                    {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool.name,
                     "kode.tool.outcome": outcome}, error),
            )  # fmt: skip
            return result  # type: ignore[no-any-return]


# --- helpers -----------------------------------------------------------------------------------


def _set_cache_usage(span: Span, usage: Any) -> None:
    """The prompt-cache counts (already part of ``gen_ai.usage.input_tokens``), when any."""
    read = getattr(usage, "cache_read_input_tokens", 0)
    written = getattr(usage, "cache_creation_input_tokens", 0)
    if read or written:
        span.set_attribute("gen_ai.usage.cache_read.input_tokens", read)
        span.set_attribute("gen_ai.usage.cache_creation.input_tokens", written)


def _error_type(exc: BaseException) -> str:
    name = type(exc).__name__
    if name == "CancelledError" or name == "Cancelled":
        return "cancelled"
    if name in ("TimeoutError", "TooSlowError"):
        return "timeout"
    return name


def _server(url: str) -> dict[str, Any]:
    """``server.address`` and ``server.port`` of a model's base URL (``{}`` without a host)."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return {}
    if not parts.hostname:
        return {}
    if port is None:
        port = 80 if parts.scheme == "http" else 443
    return {"server.address": parts.hostname, "server.port": port}


def _metric_attributes(common: Mapping[str, Any], error: str | None) -> dict[str, Any]:
    return {**common, "error.type": error} if error is not None else dict(common)


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _message(message: Any) -> dict[str, Any]:
    """A kode message in the conventions' form: ``{"role", "parts": [...]}``."""
    parts: list[dict[str, Any]] = []
    content = message.content
    if isinstance(content, str):
        content = []
        parts.append({"type": "text", "content": message.content})
    for block in content:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append({"type": "text", "content": block.text})
        elif kind == "thinking":
            parts.append({"type": "reasoning", "content": block.thinking})
        elif kind == "tool_use":
            parts.append(
                {"type": "tool_call", "id": block.id, "name": block.name, "arguments": block.input}
            )
        elif kind == "tool_result":
            texts = [getattr(b, "text", "") for b in block.content]
            parts.append(
                {"type": "tool_call_response", "id": block.tool_use_id, "response": "".join(texts)}
            )
        elif kind == "image":
            parts.append({"type": "blob", "modality": "image"})
    return {"role": message.role, "parts": parts}


def _result(result: Any) -> str:
    """A tool result's content as text (JSON blocks as JSON)."""
    pieces: list[str] = []
    for block in result.content:
        text = getattr(block, "text", None)
        if text is not None:
            pieces.append(text)
        elif hasattr(block, "data") and not isinstance(block.data, bytes | str):
            pieces.append(_dumps(block.data))
    return "\n".join(pieces)
