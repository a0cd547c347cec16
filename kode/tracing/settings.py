"""How an agent is traced (`Instrumentation`), and the run being traced in this context.

This module owns the settings of the tracing switch and the context variable an instrumented
run sets (`ACTIVE`): `kode.tracing`, which loads no OpenTelemetry, and `kode.tracing.spans`,
which does, both read them, and it imports neither.
"""

from __future__ import annotations

import contextvars
import os
from dataclasses import dataclass
from typing import Any

__all__ = ["ACTIVE", "CAPTURE_CONTENT_ENV", "Instrumentation"]

CAPTURE_CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
"""The environment variable that switches content capture on by default (``true``)."""


@dataclass(kw_only=True, frozen=True, slots=True)
class Instrumentation:
    """How an agent is traced: which providers get its spans and metrics, and what they hold.

    Example:
        ```python
        from opentelemetry.sdk.trace import TracerProvider

        from kode import Agent, AgentTemplate
        from kode.models import ScriptedModel
        from kode.tracing import Instrumentation

        agent = Agent.create(
            AgentTemplate(id="traced"),
            model=ScriptedModel(["Hello."]),
            instrument=Instrumentation(tracer_provider=TracerProvider()),
        )
        assert agent.tracing is not None
        ```
    """

    tracer_provider: Any = None
    """An OpenTelemetry ``TracerProvider`` for the spans; ``None`` uses the global one."""
    meter_provider: Any = None
    """An OpenTelemetry ``MeterProvider`` for the metrics; ``None`` uses the global one."""
    capture_content: bool | None = None
    """Whether spans carry what was said: messages, tool arguments and results. ``None``
    reads ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` (off unless ``true``)."""

    def captures_content(self) -> bool:
        """Whether content is captured (`capture_content`, or else the environment)."""
        if self.capture_content is not None:
            return self.capture_content
        return os.environ.get(CAPTURE_CONTENT_ENV, "").strip().lower() == "true"


ACTIVE: contextvars.ContextVar[Any] = contextvars.ContextVar("kode_tracing", default=None)
"""The `kode.tracing.spans.Tracing` of the instrumented run going on in this context (set by
``invoke_agent``; `kode.tracing.active_tracing` reads it). Typed loosely: naming the class
would import the module that sets it."""
