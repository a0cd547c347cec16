"""One trace across a restart: a session resumed in another process continues its run's trace."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.streams.text import TextReceiveStream
from opentelemetry.sdk.trace import TracerProvider
from otel_support import Telemetry

from kode import define_tool
from kode.agent import Agent, AgentTemplate, ApprovalRequired
from kode.agent.session import TRACE_KEY
from kode.models import ScriptedModel, tool_use
from kode.registries import ToolRegistry
from kode.sessions import MemoryStore

pytestmark = pytest.mark.anyio

PROGRAM = Path(__file__).parent / "resumed_agent.py"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the test drives subprocesses; the agent code runs in them


def _spans(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


async def test_a_run_resumed_in_another_process_after_sigkill_continues_its_trace(
    tmp_path: Path, telemetry: Telemetry
) -> None:
    url = f"sqlite:///{tmp_path / 'sessions.db'}"
    spans_file = tmp_path / "spans.jsonl"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    args = [sys.executable, str(PROGRAM), url, "trip", str(spans_file)]
    first = await anyio.open_process([*args, "start"], env=env)
    try:
        assert first.stdout is not None
        seen = ""
        with anyio.fail_after(60):
            async for chunk in TextReceiveStream(first.stdout):
                seen += chunk
                if "\n" in seen:
                    break
        assert seen == "approval c2\n", seen
    finally:
        first.send_signal(signal.SIGKILL)
        await first.wait()
        await first.aclose()
    started = _spans(spans_file)
    # Killed mid-run: its invoke_agent span (and book's, waiting) never ended, so never left.
    assert sorted(s["name"] for s in started) == [
        "chat scripted",
        "chat scripted",
        "execute_tool look",
    ]
    run_span_id = started[0]["parent_id"]
    assert {s["parent_id"] for s in started} == {run_span_id}
    trace_id = started[0]["trace_id"]

    # The approval is given from this process, inside a span of its own trace.
    tracer = telemetry.tracer_provider.get_tracer("test")
    with tracer.start_as_current_span("approve trip") as decider:
        await Agent.decide_in_store(url, "trip", "c2", "allow")
    decider_context = decider.get_span_context()

    with anyio.fail_after(60):
        done = await anyio.run_process([*args, "resume"], env=env, check=False)
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode().strip().endswith("FINAL Booked Rome."), done.stdout

    resumed = [s for s in _spans(spans_file) if s["process"] == "resume"]
    names = sorted(s["name"] for s in resumed)
    assert names == ["chat scripted", "execute_tool book", "invoke_agent travel"]
    assert {s["trace_id"] for s in resumed} == {trace_id}  # one trace id end to end
    run = next(s for s in resumed if s["name"] == "invoke_agent travel")
    assert run["parent_id"] == run_span_id  # a child of the killed run's span
    assert run["attributes"]["kode.agent.resumed"] is True
    assert run["attributes"]["gen_ai.conversation.id"] == "trip"
    assert run["links"] == []  # nothing was current in another trace where it resumed
    booked = next(s for s in resumed if s["name"] == "execute_tool book")
    assert booked["parent_id"] == run["span_id"]
    assert booked["attributes"]["kode.tool.outcome"] == "done"
    assert booked["links"] == [
        {
            "trace_id": f"{decider_context.trace_id:032x}",
            "span_id": f"{decider_context.span_id:016x}",
            "attributes": {"kode.link.type": "approval_decision"},
        }
    ]


TRAVEL = AgentTemplate(id="travel", tools=["book"])


def _agent(
    reg: ToolRegistry, store: MemoryStore, model: ScriptedModel, instrument: Any, **more: Any
) -> Agent:
    return Agent.create(
        TRAVEL,
        model=model,
        registry=reg,
        store=store,
        session_id="s",
        instrument=instrument,
        **more,
    )


@pytest.fixture
def booking(reg: ToolRegistry) -> ToolRegistry:
    @define_tool(kind="edit", requires_approval=True, registry=reg)
    def book(city: str) -> str:
        """Book a trip.

        Args:
            city: Where to.
        """
        return f"Booked {city}."

    return reg


async def _stop_at_approval(agent: Agent, store: MemoryStore) -> None:
    """Run until the call waits for approval; copy the session as it is then to ``stopped``.

    The copy is what a process stopped at that point leaves in the store (the run itself is
    then left, which ends it normally, cancelling the call).
    """
    async with agent.stream("Book Rome.") as events:
        async for event in events:
            if isinstance(event, ApprovalRequired):
                await store.fork("s", session_id="stopped")
                break
    await agent.aclose()


async def test_a_resumed_run_links_the_span_current_where_it_resumes(
    booking: ToolRegistry, telemetry: Telemetry
) -> None:
    store = MemoryStore()
    script = ScriptedModel([[tool_use("book", {"city": "Rome"}, id="c1")]])
    await _stop_at_approval(_agent(booking, store, script, telemetry.settings()), store)
    assert (await store.load("stopped")).state().status == "awaiting_approval"
    kept = (await store.load("stopped")).state().metadata[TRACE_KEY]
    await Agent.decide_in_store(store, "stopped", "c1", "deny")  # no trace current: no link
    worker = TracerProvider().get_tracer("worker")
    resumed = await Agent.resume(
        "stopped", store=store, model=ScriptedModel(["Not booked."]), template=TRAVEL,
        registry=booking, instrument=telemetry.settings(),
    )  # fmt: skip
    with worker.start_as_current_span("job") as job:
        assert (await resumed.send()).text == "Not booked."
    first, run = telemetry.named("invoke_agent travel")
    assert run.parent is not None
    assert f"{run.parent.trace_id:032x}" == kept["traceparent"].split("-")[1]
    assert f"{run.parent.span_id:016x}" == kept["traceparent"].split("-")[2]
    assert run.parent.span_id == first.context.span_id  # the stopped run's span
    assert run.attributes is not None and run.attributes["kode.agent.resumed"] is True
    assert [link.context for link in run.links] == [job.get_span_context()]
    assert run.links[0].attributes == {"kode.link.type": "caller"}
    assert telemetry.named("execute_tool book")[-1].links == ()
    # A later run of the session (it had ended) starts its own trace again.
    resumed.model = ScriptedModel(["Hello."])
    await resumed.send("Hi.")
    later = telemetry.named("invoke_agent travel")[-1]
    assert later.parent is None and "kode.agent.resumed" not in (later.attributes or {})
    await resumed.aclose()


async def test_an_untraced_run_keeps_no_trace_context(
    booking: ToolRegistry, telemetry: Telemetry
) -> None:
    store = MemoryStore()
    traced = _agent(booking, store, ScriptedModel(["Hello."]), telemetry.settings())
    assert (await traced.send("Hi.")).text == "Hello."
    await traced.aclose()
    assert TRACE_KEY in (await store.load("s")).state().metadata
    # A run that is not traced removes the context an earlier run kept.
    untraced = await Agent.resume(
        "s", store=store, model=ScriptedModel([[tool_use("book", {"city": "Rome"}, id="c1")]]),
        template=TRAVEL, registry=booking, instrument=False,
    )  # fmt: skip
    await _stop_at_approval(untraced, store)
    assert TRACE_KEY not in (await store.load("stopped")).state().metadata
    await Agent.decide_in_store(store, "stopped", "c1", "allow")
    resumed = await Agent.resume(
        "stopped", store=store, model=ScriptedModel(["Booked."]), template=TRAVEL,
        registry=booking, instrument=telemetry.settings(),
    )  # fmt: skip
    assert (await resumed.send()).text == "Booked."
    run = telemetry.named("invoke_agent travel")[-1]
    assert run.parent is None and "kode.agent.resumed" not in (run.attributes or {})
    await resumed.aclose()
