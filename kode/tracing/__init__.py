"""Tracing and metrics with OpenTelemetry, as the GenAI semantic conventions name them.

This package owns the switch and the seam: `instrument` turns tracing on for every agent made
afterwards, ``Agent.create(instrument=...)`` for one agent, and `tracing_for` gives the agent
layer a `Tracing` object, or ``None`` when tracing is off. Nothing here imports OpenTelemetry:
only turning tracing on does (the ``otel`` extra, ``opentelemetry-api``), so an agent that is
not instrumented pays one ``is None`` test per run, per model request and per tool call. The
spans and metrics themselves are made in `kode.tracing.spans`; `kode.tracing.setup` configures
the OpenTelemetry SDK for ``kode run --otel`` and ``kode mcp serve --otel``.

The package imports nothing else of kode, so every layer may call into it.
"""

from __future__ import annotations

import contextlib
import sys
import weakref
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, nullcontext
from typing import TYPE_CHECKING, Any, cast

from kode.tracing.settings import ACTIVE, CAPTURE_CONTENT_ENV, Instrumentation

if TYPE_CHECKING:
    from kode.tracing.spans import Tracing

__all__ = [
    "CAPTURE_CONTENT_ENV",
    "Instrumentation",
    "InstrumentSetting",
    "active_tracing",
    "attached",
    "current_context",
    "instrument",
    "is_instrumented",
    "mark_mcp_result",
    "mcp_call_span",
    "trace_headers",
    "tracing_for",
    "uninstrument",
]

InstrumentSetting = bool | Instrumentation | None
"""What ``Agent.create(instrument=...)`` takes: ``True`` (the global settings, or the global
providers), ``False`` (off, whatever the global switch says), an `Instrumentation`, or
``None`` (follow the global switch)."""

_global: Instrumentation | None = None
_kept: Tracing | None = None  # the global switch's, kept while it is on
# Agents keep their Tracing; one no agent holds any more goes (its providers with it).
_made: weakref.WeakValueDictionary[Instrumentation, Tracing] = weakref.WeakValueDictionary()


def instrument(
    *,
    tracer_provider: Any = None,
    meter_provider: Any = None,
    capture_content: bool | None = None,
) -> None:
    """Trace every agent made from now on (those made with ``instrument=False`` excepted).

    Args:
        tracer_provider: The ``TracerProvider`` to use; ``None`` uses OpenTelemetry's global
            one (whatever ``opentelemetry.trace.set_tracer_provider`` set, when it is set).
        meter_provider: The ``MeterProvider`` to use; ``None`` uses the global one.
        capture_content: Whether spans carry messages, tool arguments and results (see
            `Instrumentation.capture_content`).

    Raises:
        ImportError: ``opentelemetry-api`` is not installed (the extra ``otel``).
    """
    global _global, _kept
    settings = Instrumentation(
        tracer_provider=tracer_provider,
        meter_provider=meter_provider,
        capture_content=capture_content,
    )
    _kept = _load(settings)  # fail now, not at the first run, when the extra is missing
    _global = settings


def uninstrument() -> None:
    """Turn the global switch off again (agents made with ``instrument=True`` stay traced)."""
    global _global, _kept
    _global = _kept = None


def is_instrumented() -> bool:
    """Whether the global switch is on."""
    return _global is not None


def tracing_for(setting: InstrumentSetting) -> Tracing | None:
    """The `Tracing` for an agent's ``instrument=`` setting, or ``None`` when it is off.

    Raises:
        TypeError: `setting` is not a bool, an `Instrumentation` or ``None``.
        ImportError: tracing is on and ``opentelemetry-api`` is not installed.
    """
    if setting is None:
        return None if _global is None else _load(_global)
    if setting is False:
        return None
    if setting is True:
        return _load(_global or Instrumentation())
    if isinstance(setting, Instrumentation):
        return _load(setting)
    raise TypeError(
        f"instrument must be True, False, None or an Instrumentation, got {type(setting).__name__}"
    )


def _load(settings: Instrumentation) -> Tracing:
    made = _made.get(settings)
    if made is None:
        try:
            from kode.tracing.spans import Tracing
        except ImportError as exc:
            from kode.extras import install_hint

            raise ImportError(
                f"tracing needs OpenTelemetry's API ({exc}); install it with {install_hint('otel')}"
            ) from None
        made = _made[settings] = Tracing(settings)
    return made


def trace_headers() -> dict[str, str]:
    """The current trace context as W3C headers (``traceparent``, ``tracestate``), or ``{}``.

    Reads OpenTelemetry's current context only when OpenTelemetry's trace API is already
    imported (by an instrumented agent, or by the application): otherwise there is no trace
    to continue and this costs a dictionary lookup. Used to hand a trace to a child process
    (``TRACEPARENT``), to an MCP server (``params._meta``) and to a session's store (a run's
    context, a decision's).
    """
    if "opentelemetry.trace" not in sys.modules:
        return {}
    from opentelemetry.propagate import inject

    carrier: dict[str, str] = {}
    inject(carrier)
    return carrier


def active_tracing() -> Tracing | None:
    """The `Tracing` of the run going on here, else the global switch's; ``None`` when off."""
    found = cast("Tracing | None", ACTIVE.get())
    if found is not None:
        return found
    return None if _global is None else _load(_global)


def current_context() -> Any:
    """OpenTelemetry's current context (to carry to another event loop), or ``None``.

    ``None`` when OpenTelemetry is not imported: there is then no trace to carry.
    """
    if "opentelemetry.context" not in sys.modules:
        return None
    from opentelemetry import context

    return context.get_current()


@contextmanager
def attached(context: Any) -> Iterator[None]:
    """Make `context` (from `current_context`) current inside the block; nothing if ``None``."""
    if context is None:
        yield
        return
    from opentelemetry import context as otel_context

    token = otel_context.attach(context)
    try:
        yield
    finally:
        otel_context.detach(token)


def mcp_call_span(
    name: str, arguments: Any, attributes: Mapping[str, Any]
) -> contextlib.AbstractContextManager[Any]:
    """A ``tools/call {name}`` CLIENT span for a call to an MCP server, when tracing is on.

    The span (or ``None``) is what the block gets; `mark_mcp_result` marks an error result.
    """
    tracing = active_tracing()
    if tracing is None:
        return nullcontext(None)
    return tracing.mcp_call(name, arguments, attributes)


def mark_mcp_result(span: Any, *, is_error: bool) -> None:
    """Mark a ``tools/call`` span failed (``error.type`` ``tool_error``) for an error result."""
    if is_error and span is not None and span.is_recording():
        from opentelemetry.trace import Status, StatusCode

        span.set_attribute("error.type", "tool_error")
        span.set_status(Status(StatusCode.ERROR))
