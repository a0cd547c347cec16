"""Telemetry kept in memory by the SDK, for the tracing tests."""

from __future__ import annotations

from dataclasses import dataclass

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from kode.tracing import Instrumentation


@dataclass
class Telemetry:
    """An SDK tracer and meter provider that keep what they record in memory."""

    exporter: InMemorySpanExporter
    reader: InMemoryMetricReader
    tracer_provider: TracerProvider
    meter_provider: MeterProvider

    def settings(self, *, capture_content: bool | None = None) -> Instrumentation:
        return Instrumentation(
            tracer_provider=self.tracer_provider,
            meter_provider=self.meter_provider,
            capture_content=capture_content,
        )

    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def named(self, name: str) -> list[ReadableSpan]:
        return [s for s in self.spans() if s.name == name]

    def one(self, name: str) -> ReadableSpan:
        found = self.named(name)
        assert len(found) == 1, (
            f"{len(found)} spans named {name!r}: {[s.name for s in self.spans()]}"
        )
        return found[0]

    def points(self, metric: str) -> list[tuple[dict[str, object], int, float]]:
        """(attributes, count, sum) of each point of a histogram."""
        data = self.reader.get_metrics_data()
        out = []
        assert data is not None
        for resource in data.resource_metrics:
            for scope in resource.scope_metrics:
                for found in scope.metrics:
                    if found.name == metric:
                        for point in found.data.data_points:
                            out.append((dict(point.attributes or {}), point.count, point.sum))
        return out
