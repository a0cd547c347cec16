"""code_run's inner calls are traced as child spans of the code_run call's span."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from otel_support import Telemetry

from kode import define_tool
from kode.agent import Agent, AgentTemplate
from kode.builtin.code import code_run
from kode.models import ScriptedModel, tool_use
from kode.registries import ToolRegistry
from kode.testing.programs import requires_sandbox

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the sandbox is Linux's"),
    requires_sandbox(),
]


async def test_inner_calls_are_child_spans_of_code_run(
    reg: ToolRegistry, telemetry: Telemetry, tmp_path: Path
) -> None:
    @define_tool(registry=reg, kind="read")
    def lookup(key: str) -> str:
        """Look up a key.

        Args:
            key: The key.
        """
        return key.upper()

    reg.register(code_run, source="core")
    script = "print(lookup(key='a') + lookup(key='b'))"
    model = ScriptedModel([[tool_use("code_run", {"script": script})], "done"])
    agent = Agent.create(
        AgentTemplate(id="coder", tools=["lookup", "code_run"]),
        model=model,
        registry=reg,
        workspace=tmp_path,
        instrument=telemetry.settings(),
    )
    async with agent:
        assert (await agent.send("go")).text == "done"
    outer = telemetry.one("execute_tool code_run")
    inner = telemetry.named("execute_tool lookup")
    assert len(inner) == 2
    for span in inner:
        assert span.parent is not None and span.parent.span_id == outer.context.span_id
        assert span.context.trace_id == outer.context.trace_id
    assert model.requests[1].messages[-1].content[0].text == "AB"  # type: ignore[union-attr]
