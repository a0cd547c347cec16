"""The switch: off imports nothing of OpenTelemetry; the global switch and global providers."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
from otel_support import Telemetry

from kode import define_tool
from kode.agent import Agent, AgentTemplate
from kode.models import ScriptedModel, tool_use
from kode.registries import ToolRegistry
from kode.tracing import Instrumentation, tracing_for

SCRIPT = textwrap.dedent(
    """
    import json, sys
    import anyio
    from kode import define_tool
    from kode.agent import Agent, AgentTemplate
    from kode.models import ScriptedModel, tool_use
    from kode.registries import ToolRegistry

    reg = ToolRegistry("t")

    @define_tool(registry=reg)
    def add(a: int, b: int) -> int:
        '''Add.'''
        return a + b

    def run():
        model = ScriptedModel([[tool_use("add", {"a": 1, "b": 2})], "3"])
        agent = Agent.create(AgentTemplate(id="plain", tools=["add"]), model=model, registry=reg)
        assert anyio.run(agent.send, "Add.").text == "3"

    run()
    report = {"imported": sorted(m for m in sys.modules if m.startswith("opentelemetry"))}

    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    import kode.tracing

    run()  # OpenTelemetry imported, the switch still off: nothing recorded
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    run()
    report["before_switch"] = [s.name for s in exporter.get_finished_spans()]
    kode.tracing.instrument()
    run()
    report["after_switch"] = sorted(s.name for s in exporter.get_finished_spans())
    print(json.dumps(report))
    """
)


def test_off_imports_no_opentelemetry_and_the_global_switch_uses_the_global_provider() -> None:
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120, check=False
    )
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["imported"] == []
    assert report["before_switch"] == []
    assert report["after_switch"] == [
        "chat scripted",
        "chat scripted",
        "execute_tool add",
        "invoke_agent plain",
    ]


@pytest.mark.anyio
async def test_on_without_a_provider_takes_the_plain_path(reg: ToolRegistry) -> None:
    @define_tool(registry=reg)
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    model = ScriptedModel([[tool_use("add", {"a": 1, "b": 2})], "3"])
    agent = Agent.create(
        AgentTemplate(id="t", tools=["add"]), model=model, registry=reg, instrument=True
    )
    assert agent.tracing is not None and not agent.tracing.active()
    assert (await agent.send("Add.")).text == "3"


def test_a_provider_of_its_own_makes_it_active(telemetry: Telemetry) -> None:
    tracing = tracing_for(telemetry.settings())
    assert tracing is not None and tracing.active()
    assert tracing_for(Instrumentation(tracer_provider=telemetry.tracer_provider)) is not None


def test_a_wrong_setting_is_a_clear_error() -> None:
    with pytest.raises(
        TypeError, match="instrument must be True, False, None or an Instrumentation, got str"
    ):
        tracing_for("yes")  # type: ignore[arg-type]
    assert tracing_for(False) is None
    assert tracing_for(None) is None
