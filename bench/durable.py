"""What a durable run costs per step: kode's `DurableAgent` against a plain run, and against
pydantic-ai's DBOS agent, on the same canned work, in one process and one DBOS instance.

Run ``python bench/durable.py`` (``--quick`` for fewer runs, ``--json`` for machine-readable
output, ``--turns N`` for another run length, ``--postgres`` to put the system database in a
throwaway PostgreSQL cluster instead of a SQLite file). pydantic-ai's rows need
``pydantic-ai-slim[dbos]`` (see ``bench/README.md``); without it they say "not installed".

The work, in every subject: a tool ``add(a: int, b: int)``, a model that asks for it `turns`
times, one call a turn, then answers ``"The sum is 5."``; the models are stateless (the turn is
read from the last tool result's call id), so one model object serves every run. A run has
``2 * turns + 1`` steps (each model turn, each tool call). Subjects:

- ``kode``: a fresh `Agent` per run;
- ``kode durable``: `DurableAgent.run`, a DBOS workflow with a step per model turn and two per
  tool call (its *begin* and its *call*: the record that makes a call in flight at a crash
  known);
- ``pydantic-ai``: ``Agent.run`` with a `FunctionModel`;
- ``pydantic-ai DBOS``: an ``Agent`` with the ``DBOSDurability`` capability, run in a
  ``@DBOS.workflow``: its model requests are steps; function tools run inline in the workflow
  unless made steps, so its ``add`` calls a ``@DBOS.step`` function, for one checkpoint per
  call as in kode;
- ``pydantic-ai DBOSAgent``: the same agent wrapped in ``DBOSAgent`` (deprecated in
  pydantic-ai 2.68 for the capability), whose ``run`` is the workflow.

The subjects run interleaved, round by round (the first moves on each round); each figure is
the median over the rounds of a batch's mean wall time per run. The per-step overhead is
(durable - plain) / steps, each framework against its own plain run measured alongside.

No network, no pytest: a plain script.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import json
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peers import ANSWER, PROMPT, RESULT, A, B, _call_id, _next_turn


class _Calls:
    count = 0


def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first number.
        b: The second number.
    """
    _Calls.count += 1
    return a + b


Run = Callable[[], Awaitable[str]]


def kode_subjects(turns: int) -> dict[str, Run]:
    from kode import Agent, AgentTemplate, define_tool
    from kode.durable import DurableAgent
    from kode.models import Message, ModelRequest, ModelResponse, TextContent, tool_use
    from kode.models.base import ModelEvent
    from kode.models.messages import ToolResultContent
    from kode.registries.tool_registry import ToolRegistry

    registry = ToolRegistry()
    define_tool(registry=registry)(add)
    template = AgentTemplate(id="bench-durable", tools=["add"], max_turns=turns + 5)

    class TurnModel:
        """kode's stateless canned model: the turn from the last tool result's call id."""

        name = "bench"

        async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
            k = 0
            last = request.messages[-1].content[-1]
            if isinstance(last, ToolResultContent):
                assert last.text == str(RESULT), last
                k = _next_turn(last.tool_use_id)
            if k < turns:
                content: Any = [tool_use("add", {"a": A, "b": B}, id=_call_id(k))]
                stop = "tool_use"
            else:
                content = [TextContent(text=ANSWER)]
                stop = "end_turn"
            yield ModelResponse(
                message=Message(role="assistant", content=content), stop_reason=stop
            )

    model = TurnModel()
    durable = DurableAgent(template, model=model, options={"registry": registry})

    async def plain() -> str:
        agent = Agent.create(template, model=model, registry=registry)
        return (await agent.send(PROMPT)).text

    async def in_dbos() -> str:
        return await durable.run(PROMPT)

    return {"kode": plain, "kode durable": in_dbos}


def pydantic_ai_subjects(turns: int) -> dict[str, Run]:
    from dbos import DBOS
    from pydantic_ai import Agent, Tool
    from pydantic_ai.durable_exec.dbos import DBOSAgent, DBOSDurability
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.usage import UsageLimits

    async def model(messages: list[Any], info: AgentInfo) -> ModelResponse:
        k = 0
        part = messages[-1].parts[-1]
        if isinstance(part, ToolReturnPart):
            assert part.content == RESULT, part
            k = _next_turn(part.tool_call_id)
        if k < turns:
            return ModelResponse(
                parts=[ToolCallPart("add", {"a": A, "b": B}, tool_call_id=_call_id(k))]
            )
        return ModelResponse(parts=[TextPart(ANSWER)])

    @DBOS.step(name="bench.add")
    async def add_step(a: int, b: int) -> int:
        return add(a, b)

    async def add_checkpointed(a: int, b: int) -> int:
        """Add two integers.

        Args:
            a: The first number.
            b: The second number.
        """
        return await add_step(a, b)

    limits = UsageLimits(request_limit=turns + 5)
    tools: list[Any] = [Tool(add_checkpointed, name="add")]
    agent = Agent(FunctionModel(model), tools=[add])
    durable = Agent(
        FunctionModel(model), tools=tools, name="bench_durable", capabilities=[DBOSDurability()]
    )
    with warnings.catch_warnings():  # DBOSAgent is deprecated for DBOSDurability
        warnings.simplefilter("ignore")
        wrapped = DBOSAgent(Agent(FunctionModel(model), tools=tools, name="bench_wrapped"))

    @DBOS.workflow(name="bench.pydantic_ai_run")
    async def durable_run(prompt: str) -> str:
        return str((await durable.run(prompt, usage_limits=limits)).output)

    async def plain() -> str:
        return str((await agent.run(PROMPT, usage_limits=limits)).output)

    async def in_dbos() -> str:
        return await durable_run(PROMPT)

    async def in_dbos_agent() -> str:
        return str((await wrapped.run(PROMPT, usage_limits=limits)).output)

    return {
        "pydantic-ai": plain,
        "pydantic-ai DBOS": in_dbos,
        "pydantic-ai DBOSAgent": in_dbos_agent,
    }


async def measure(
    subjects: dict[str, Run], *, turns: int, rounds: int, per_batch: int
) -> dict[str, dict[str, float]]:
    """Median over `rounds` of each subject's mean wall and CPU ns per run, interleaved."""
    names = list(subjects)
    for name in names:  # warm up, and check each subject does the work
        calls = _Calls.count
        answer = await subjects[name]()
        assert answer == ANSWER, (name, answer)
        assert _Calls.count - calls == turns, (name, _Calls.count - calls)
    wall: dict[str, list[float]] = {name: [] for name in names}
    cpu: dict[str, list[float]] = {name: [] for name in names}
    for i in range(rounds):
        start = i % len(names)
        for name in names[start:] + names[:start]:
            run = subjects[name]
            c0, w0 = time.process_time_ns(), time.perf_counter_ns()
            for _ in range(per_batch):
                await run()
            wall[name].append((time.perf_counter_ns() - w0) / per_batch)
            cpu[name].append((time.process_time_ns() - c0) / per_batch)
    return {
        name: {"wall_ns": statistics.median(wall[name]), "cpu_ns": statistics.median(cpu[name])}
        for name in names
    }


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "?"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=10)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--postgres", action="store_true")
    args = parser.parse_args()
    turns: int = args.turns
    rounds, per_batch = (3, 3) if args.quick else (7, 10)

    from dbos import DBOS

    with ExitStack() as stack:
        if args.postgres:
            from kode.testing.postgres import PostgresServer

            server = stack.enter_context(PostgresServer())
            url = server.create_database("bench_durable")
        else:
            folder = Path(stack.enter_context(tempfile.TemporaryDirectory()))
            url = f"sqlite:///{folder / 'dbos.sqlite'}"
        subjects = kode_subjects(turns)
        peer = importlib.util.find_spec("pydantic_ai") is not None
        if peer:
            subjects |= pydantic_ai_subjects(turns)
        DBOS(config={"name": "bench-durable", "system_database_url": url, "log_level": "WARNING"})
        DBOS.launch()
        try:
            medians = await measure(subjects, turns=turns, rounds=rounds, per_batch=per_batch)
        finally:
            DBOS.destroy()

    steps = 2 * turns + 1
    rows: list[dict[str, Any]] = []

    def overhead(durable: str, plain: str) -> None:
        d, p = medians[durable], medians[plain]
        rows.append(
            {
                "subject": durable,
                "baseline": plain,
                "durable_ms": d["wall_ns"] / 1e6,
                "plain_ms": p["wall_ns"] / 1e6,
                "ratio": d["wall_ns"] / p["wall_ns"],
                "cpu_ratio": d["cpu_ns"] / p["cpu_ns"],
                "per_step_us": (d["wall_ns"] - p["wall_ns"]) / steps / 1e3,
                "per_step_cpu_us": (d["cpu_ns"] - p["cpu_ns"]) / steps / 1e3,
            }
        )

    overhead("kode durable", "kode")
    if peer:
        overhead("pydantic-ai DBOS", "pydantic-ai")
        overhead("pydantic-ai DBOSAgent", "pydantic-ai")
        k, q = medians["kode durable"], medians["pydantic-ai DBOS"]
        versus = k["wall_ns"] / q["wall_ns"]
        versus_cpu = k["cpu_ns"] / q["cpu_ns"]
    backend = "PostgreSQL" if args.postgres else "SQLite"
    info = {
        "turns": turns,
        "steps": steps,
        "rounds": rounds,
        "runs_per_batch": per_batch,
        "system_database": backend,
        "dbos": _version("dbos"),
        "pydantic_ai": _version("pydantic-ai-slim") if peer else None,
        "python": sys.version.split()[0],
    }
    if args.json:
        print(
            json.dumps(
                {
                    "info": info,
                    "medians_ns": medians,
                    "rows": rows,
                    "kode_durable_vs_pydantic_ai_dbos": versus if peer else None,
                    "kode_durable_vs_pydantic_ai_dbos_cpu": versus_cpu if peer else None,
                },
                indent=2,
            )
        )
        return
    print(
        f"{turns} tool turns a run ({steps} steps), {backend} system database, dbos "
        f"{info['dbos']}, median of {rounds} rounds of {per_batch} runs"
    )
    for name, m in medians.items():
        print(f"  {name:18} {m['wall_ns'] / 1e6:9.2f} ms a run  ({m['cpu_ns'] / 1e6:.2f} ms CPU)")
    for row in rows:
        print(
            f"  {row['subject']} / {row['baseline']}: {row['ratio']:.2f}x "
            f"({row['cpu_ratio']:.2f}x CPU), "
            f"{row['per_step_us']:.0f} us a step ({row['per_step_cpu_us']:.0f} us CPU)"
        )
    if peer:
        print(f"  kode durable / pydantic-ai DBOS: {versus:.2f}x ({versus_cpu:.2f}x CPU)")
    else:
        print("  pydantic-ai: not installed (pip install 'pydantic-ai-slim[dbos]')")


if __name__ == "__main__":
    anyio.run(main)
