"""What tracing costs: a tool round trip with instrumentation off, on without a provider, on
with the OpenTelemetry SDK.

Run ``python bench/tracing.py`` (``--quick`` for fewer rounds, ``--json`` for machine-readable
output). One round trip is ``agent.send`` on a fresh agent whose `ScriptedModel` asks for one
call of a small async tool, then answers: two model requests, one tool call, four spans when
traced (``invoke_agent``, two ``chat``, ``execute_tool``). Three agents are timed round by
round, alternating, in one process, on the thread's CPU clock (the work is CPU work in the
event loop's thread; the clock leaves out the time slices other processes take):

- off: ``instrument=False``; a first phase runs before anything imports OpenTelemetry, and
  checks that the round trip did not import it;
- on, no provider: ``instrument=True`` with no tracer or meter provider configured
  (OpenTelemetry's API only: its spans do not record and its instruments drop what they get);
- on, SDK: an SDK ``TracerProvider`` with a ``SimpleSpanProcessor`` into an
  ``InMemorySpanExporter``, and an SDK ``MeterProvider`` with an ``InMemoryMetricReader``;
  its extra cost over *off*, divided by the four spans, is the cost per span reported.

No network, no pytest: a plain script.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import anyio

from kode import Agent, AgentTemplate, define_tool
from kode.models import ScriptedModel, tool_use
from kode.registries.tool_registry import ToolRegistry

SPANS_PER_ROUND_TRIP = 4
REG = ToolRegistry("bench-tracing")


@define_tool(registry=REG, kind="read")
async def add(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: The first.
        b: The second.
    """
    return a + b


TEMPLATE = AgentTemplate(id="bench", tools=["add"])


def _agent(instrument: Any) -> Agent:
    model = ScriptedModel([[tool_use("add", {"a": 1, "b": 2}, id="c1")], "Done."])
    if instrument is False:  # as before tracing existed (so --off-only runs on older kode)
        return Agent.create(TEMPLATE, model=model, registry=REG)
    return Agent.create(TEMPLATE, model=model, registry=REG, instrument=instrument)


async def _time(instrument: Any) -> int:
    agent = _agent(instrument)
    start = time.thread_time_ns()
    await agent.send("Add.")
    return time.thread_time_ns() - start


async def _rounds(variants: dict[str, Callable[[], Any]], rounds: int) -> dict[str, list[int]]:
    times: dict[str, list[int]] = {name: [] for name in variants}
    for _ in range(rounds // 10):  # warm-up
        for setting in variants.values():
            await _time(setting())
    for _ in range(rounds):
        for name, setting in variants.items():
            times[name].append(await _time(setting()))
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument(
        "--off-only",
        action="store_true",
        help="time only the first phase (runs on a kode from before tracing, as a baseline)",
    )
    args = parser.parse_args()
    rounds = 300 if args.quick else 3000

    # Phase 1: tracing off, OpenTelemetry never imported (as without the otel extra).
    before = anyio.run(_rounds, {"off": lambda: False}, rounds)
    imported = sorted(m for m in sys.modules if m.startswith("opentelemetry"))
    assert not imported, f"a round trip with tracing off imported {imported[:3]}"
    med_before = statistics.median(before["off"]) / 1000
    if args.off_only:
        print(json.dumps({"rounds": rounds, "off_before_otel_import_us": round(med_before, 1)}))
        return

    # Phase 2: off against on with OpenTelemetry's API and no provider, alternating.
    plain = anyio.run(_rounds, {"off": lambda: False, "no_provider": lambda: True}, rounds)

    # Phase 3: off against on with the SDK, alternating.
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from kode.tracing import Instrumentation

    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    sdk = Instrumentation(
        tracer_provider=tracer_provider,
        meter_provider=MeterProvider(metric_readers=[InMemoryMetricReader()]),
    )

    def sdk_setting() -> Instrumentation:
        exporter.clear()  # keep memory flat: the spans of one round trip at a time
        return sdk

    times = anyio.run(_rounds, {"off": lambda: False, "sdk": sdk_setting}, rounds)
    med = {name: statistics.median(values) / 1000 for name, values in plain.items()}
    sdk_med = {name: statistics.median(values) / 1000 for name, values in times.items()}
    per_span = (sdk_med["sdk"] - sdk_med["off"]) / SPANS_PER_ROUND_TRIP
    result = {
        "rounds": rounds,
        "python": platform.python_version(),
        "off_before_otel_import_us": round(med_before, 1),
        "off_us": round(med["off"], 1),
        "no_provider_us": round(med["no_provider"], 1),
        "no_provider_ratio": round(med["no_provider"] / med["off"], 3),
        "no_provider_ratio_to_not_imported": round(med["no_provider"] / med_before, 3),
        "sdk_off_us": round(sdk_med["off"], 1),
        "sdk_us": round(sdk_med["sdk"], 1),
        "sdk_ratio": round(sdk_med["sdk"] / sdk_med["off"], 3),
        "sdk_cost_per_span_us": round(per_span, 1),
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return
    r = result
    print(f"tool round trip, median of {rounds} rounds each (thread CPU time, µs)")
    print(f"  1. off, OpenTelemetry not imported   {r['off_before_otel_import_us']:>8}")
    print(f"  2. off                               {r['off_us']:>8}  1.000")
    print(
        f"     on, API only, no provider         {r['no_provider_us']:>8}  {r['no_provider_ratio']}"
    )
    print(f"  3. off                               {r['sdk_off_us']:>8}  1.000")
    print(f"     on, SDK + in-memory exporter      {r['sdk_us']:>8}  {r['sdk_ratio']}")
    print(f"     SDK: added cost per span          {r['sdk_cost_per_span_us']:>8}")


if __name__ == "__main__":
    main()
