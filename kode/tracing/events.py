"""Span events from the layers that call into tracing, without importing OpenTelemetry.

The pipeline marks what happens to a call (a denial, an approval, what a hook did) on its
``execute_tool`` span through `note`, which only touches the span it is given: an agent that
is not instrumented has no span, and its calls never reach this module's body. `link` links
it to a span of another process (a decision made with ``Agent.decide_in_store``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["link", "note"]


def note(span: Any, name: str, attributes: Mapping[str, Any]) -> None:
    """Add the event `name` to `span` when it records, leaving out ``None`` values."""
    if span is not None and span.is_recording():
        span.add_event(name, {k: v for k, v in attributes.items() if v is not None})


def link(span: Any, carrier: Mapping[str, str] | None, attributes: Mapping[str, Any]) -> None:
    """Link `span` to the span whose context `carrier` holds (``traceparent``), if any."""
    if span is None or not carrier or not span.is_recording():
        return
    from opentelemetry import trace

    from kode.tracing.spans import extract_context

    found = extract_context(carrier)
    if found is not None:
        span.add_link(trace.get_current_span(found).get_span_context(), dict(attributes))
