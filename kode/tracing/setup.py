"""The OpenTelemetry SDK for ``kode run --otel`` and ``kode mcp serve --otel``.

This module owns the one place kode sets OpenTelemetry's *global* providers, which an
application embedding kode does itself instead. With ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``) set, spans and metrics are sent over OTLP/HTTP
(``opentelemetry-exporter-otlp-proto-http``); otherwise spans are printed as JSON to a stream
(stderr, never the stdout an MCP server speaks on). The usual ``OTEL_*`` variables
(``OTEL_SERVICE_NAME``, ``OTEL_RESOURCE_ATTRIBUTES``, ``OTEL_BSP_*``) apply.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import IO

__all__ = ["configure_sdk", "otlp_endpoint"]


def otlp_endpoint() -> str | None:
    """The OTLP endpoint the environment names, if any."""
    for name in ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"):
        value = os.environ.get(name, "").strip()
        if value:
            return value
    return None


def configure_sdk(
    *, service_name: str, out: IO[str] | None = None, capture_content: bool | None = None
) -> Callable[[], None]:
    """Set global SDK providers, switch kode's tracing on, and return what flushes them.

    Args:
        service_name: ``service.name`` unless ``OTEL_SERVICE_NAME`` says otherwise.
        out: Where spans are printed without an OTLP endpoint (default: stderr).
        capture_content: Whether spans carry messages, tool arguments and results (``None``:
            ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``).

    Raises:
        ImportError: the SDK (``opentelemetry-sdk``), or with an endpoint the OTLP exporter
            (``opentelemetry-exporter-otlp-proto-http``), is not installed.
    """
    try:
        from opentelemetry import metrics, trace
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import MetricReader, PeriodicExportingMetricReader
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
        from opentelemetry.sdk.trace.export import (
            BatchSpanProcessor,
            ConsoleSpanExporter,
            SimpleSpanProcessor,
        )
    except ImportError as exc:
        raise ImportError(
            f"--otel needs the OpenTelemetry SDK ({exc}): install the package opentelemetry-sdk"
        ) from None
    from kode.tracing import instrument

    attributes = {} if os.environ.get("OTEL_SERVICE_NAME") else {"service.name": service_name}
    resource = Resource.create(attributes)
    tracer_provider = TracerProvider(resource=resource)
    readers: list[MetricReader] = []
    processor: SpanProcessor
    if otlp_endpoint() is not None:
        try:
            from opentelemetry.exporter.otlp.proto.http.metric_exporter import (
                OTLPMetricExporter,
            )
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        except ImportError as exc:
            raise ImportError(
                f"OTEL_EXPORTER_OTLP_ENDPOINT is set, and sending to it needs the OTLP "
                f"exporter ({exc}): install the package "
                "opentelemetry-exporter-otlp-proto-http"
            ) from None
        processor = BatchSpanProcessor(OTLPSpanExporter())
        readers.append(PeriodicExportingMetricReader(OTLPMetricExporter()))
    else:
        processor = SimpleSpanProcessor(ConsoleSpanExporter(out=out or sys.stderr))
    tracer_provider.add_span_processor(processor)
    meter_provider = MeterProvider(resource=resource, metric_readers=readers)
    trace.set_tracer_provider(tracer_provider)
    metrics.set_meter_provider(meter_provider)
    instrument(capture_content=capture_content)

    def shutdown() -> None:
        tracer_provider.shutdown()
        meter_provider.shutdown()

    return shutdown
