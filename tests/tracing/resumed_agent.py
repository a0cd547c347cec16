"""A traced agent that keeps its session in SQLite, for the resume tracing test.

Usage: ``python resumed_agent.py STORE_URL SESSION_ID SPANS_FILE start|resume``

Each process exports its spans, as each one ends, to SPANS_FILE (one JSON object a line,
appended) with the SDK's ``SimpleSpanProcessor``. ``start`` runs the agent on a prompt: its
model calls ``look`` (runs), then ``book`` (needs approval); when ``book`` waits for approval it
prints ``approval <call id>`` and waits (the test kills it with SIGKILL). ``resume`` resumes
the session (waiting for the killed process's lease to run out) and runs it to the end,
printing ``FINAL <text>``.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence

import anyio
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

from kode import define_tool
from kode.agent import Agent, AgentTemplate, ApprovalRequired
from kode.models import ScriptedModel, tool_use
from kode.registries import ToolRegistry
from kode.sessions import SessionLeaseError
from kode.tracing import Instrumentation

URL, SESSION, SPANS, MODE = sys.argv[1:5]
LEASE_TTL = 0.3


class JsonLinesExporter(SpanExporter):
    """Appends each span to a file as one JSON line, flushed at once (it survives SIGKILL)."""

    def __init__(self, path: str) -> None:
        self.path = path

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        lines = []
        for span in spans:
            context = span.context
            assert context is not None
            lines.append(
                json.dumps(
                    {
                        "process": MODE,
                        "name": span.name,
                        "trace_id": f"{context.trace_id:032x}",
                        "span_id": f"{context.span_id:016x}",
                        "parent_id": f"{span.parent.span_id:016x}" if span.parent else None,
                        "attributes": dict(span.attributes or {}),
                        "links": [
                            {
                                "trace_id": f"{link.context.trace_id:032x}",
                                "span_id": f"{link.context.span_id:016x}",
                                "attributes": dict(link.attributes or {}),
                            }
                            for link in span.links
                        ],
                    }
                )
            )
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, "".join(line + "\n" for line in lines).encode())
        finally:
            os.close(fd)
        return SpanExportResult.SUCCESS


registry = ToolRegistry(name="resumed")


@define_tool(kind="read", registry=registry)
def look(city: str) -> str:
    """Today's weather in a city.

    Args:
        city: The city.
    """
    return f"Sunny in {city}."


@define_tool(kind="edit", requires_approval=True, registry=registry)
def book(city: str) -> str:
    """Book a trip.

    Args:
        city: Where to.
    """
    return f"Booked {city}."


TEMPLATE = AgentTemplate(id="travel", tools=["look", "book"])


def mark(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


async def main() -> None:
    provider = TracerProvider(resource=Resource.create({"service.name": f"travel-{MODE}"}))
    provider.add_span_processor(SimpleSpanProcessor(JsonLinesExporter(SPANS)))
    traced = Instrumentation(tracer_provider=provider)
    if MODE == "start":
        model = ScriptedModel(
            [
                [tool_use("look", {"city": "Rome"}, id="c1")],
                [tool_use("book", {"city": "Rome"}, id="c2")],
            ]
        )
        agent = Agent.create(
            TEMPLATE, model=model, registry=registry, store=URL, session_id=SESSION,
            lease_ttl=LEASE_TTL, instrument=traced,
        )  # fmt: skip
        async with agent.stream("Book Rome if it is sunny.") as events:
            async for event in events:
                if isinstance(event, ApprovalRequired):
                    mark(f"approval {event.call_id}")
                    await anyio.sleep_forever()  # the test kills the process here
        return
    while True:  # the killed process's lease runs out within LEASE_TTL
        try:
            agent = await Agent.resume(
                SESSION, store=URL, model=ScriptedModel(["Booked Rome."]), template=TEMPLATE,
                registry=registry, lease_ttl=LEASE_TTL, instrument=traced,
            )  # fmt: skip
            break
        except SessionLeaseError:
            await anyio.sleep(0.05)
    async with agent:
        reply = await agent.send()
    mark(f"FINAL {reply.text}")
    provider.shutdown()


anyio.run(main)
