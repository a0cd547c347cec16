"""Span events from the layers that call into tracing, without importing OpenTelemetry.

The pipeline marks what happens to a call (a denial, an approval, what a hook did) on its
``execute_tool`` span through `note`, which only touches the span it is given: an agent that
is not instrumented has no span, and its calls never reach this module's body.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["note"]


def note(span: Any, name: str, attributes: Mapping[str, Any]) -> None:
    """Add the event `name` to `span` when it records, leaving out ``None`` values."""
    if span is not None and span.is_recording():
        span.add_event(name, {k: v for k, v in attributes.items() if v is not None})
