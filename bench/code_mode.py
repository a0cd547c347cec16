"""Code mode against plain tool calls: model turns, request size, wall time, cost per call.

Run ``python bench/code_mode.py`` (``--rounds N``, ``--json``). The model is a
`ScriptedModel` (no network, no provider), the sandbox is the real one (bubblewrap): the
script exits with a message where kode cannot sandbox commands.

The task: 20 lookups (each returns a record of about 300 characters) and the sum of one field.

- ``plain_sequential``: the model calls ``lookup`` once per turn, 20 turns, then answers;
- ``plain_parallel``: the model calls ``lookup`` 20 times in one turn, then answers;
- ``code_mode``: the model sends one ``code_run`` script that makes the 20 calls and prints
  the sum, then answers.

For each: the model turns (requests), the request size in characters / 4 (system prompt,
messages and tool declarations as JSON, summed over the requests: what a provider would be
sent again and again), and the wall time of ``agent.send`` (median of the rounds).

Then the cost of one call: a script making N calls against one making none (the difference
over N: one inner call, the sandbox's start paid once), against an ordinary call, made two
ways: N turns of one call against none (a call with its own model turn), and one turn of N
calls against none (a call within a turn). The sandbox's start is the empty script against
a plain call.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import anyio

from kode import Agent, AgentTemplate, ToolRegistry, define_tool
from kode.builtin.code import code_run
from kode.models import ScriptedModel, tool_use
from kode.models.base import ModelRequest
from kode.testing.programs import sandbox_here

LOOKUPS = 20
CALLS = 100


def registry() -> ToolRegistry:
    reg = ToolRegistry("bench")

    @define_tool(registry=reg, kind="read")
    def lookup(key: str) -> dict[str, Any]:
        """Look up an inventory record by key.

        Args:
            key: The record's key, e.g. "item-7".
        """
        number = int(key.rsplit("-", 1)[-1])
        return {
            "key": key,
            "name": f"Widget number {number}",
            "count": number * 3,
            "warehouse": "north-east regional distribution centre",
            "notes": "checked last week; the count includes the units held for returns",
            "tags": ["hardware", "stocked", "priority-normal"],
        }

    reg.register(code_run, source="core")
    return reg


REG = registry()
SUM = sum(i * 3 for i in range(LOOKUPS))
SCRIPT = (
    "import json\n"
    f"total = sum(json.loads(lookup(key=f'item-{{i}}'))['count'] for i in range({LOOKUPS}))\n"
    "print(total)\n"
)


def request_chars(request: ModelRequest) -> int:
    """What a provider is sent for one request, as JSON text: system, messages, tools."""
    size = len(request.system)
    size += sum(len(m.model_dump_json()) for m in request.messages)
    for tool in request.tools:
        size += len(json.dumps(tool.schema()))
    return size


def agent(turns: list[Any], workspace: Path) -> tuple[Agent, ScriptedModel]:
    model = ScriptedModel(turns)
    made = Agent.create(
        AgentTemplate(
            id="bench",
            tools=["lookup", "code_run"],
            max_concurrent_tools=CALLS,
            max_turns=CALLS + 5,
        ),
        model=model,
        registry=REG,
        workspace=workspace,
    )
    return made, model


async def timed(turns: list[Any], workspace: Path) -> tuple[float, ScriptedModel]:
    took, _, model = await measured(turns, workspace)
    return took, model


async def measured(turns: list[Any], workspace: Path) -> tuple[float, float, ScriptedModel]:
    """The wall time and this process's CPU time of one ``send``, and the model."""
    made, model = agent(turns, workspace)
    async with made:
        started, cpu = time.perf_counter(), time.process_time()
        await made.send("Sum the counts of items 0 to 19.")
        return time.perf_counter() - started, time.process_time() - cpu, model


def task_turns(kind: str) -> list[Any]:
    if kind == "plain_sequential":
        return [[tool_use("lookup", {"key": f"item-{i}"})] for i in range(LOOKUPS)] + [f"{SUM}"]
    if kind == "plain_parallel":
        return [[tool_use("lookup", {"key": f"item-{i}"}) for i in range(LOOKUPS)], f"{SUM}"]
    return [[tool_use("code_run", {"script": SCRIPT})], f"{SUM}"]


def cost_turns(kind: str, n: int) -> list[Any]:
    if kind == "inner":
        script = f"for i in range({n}):\n    lookup(key=f'item-{{i}}')\n"
        return [[tool_use("code_run", {"script": script})], "done"]
    if kind == "own_turn":
        return [[tool_use("lookup", {"key": f"item-{i}"})] for i in range(n)] + ["done"]
    if kind == "in_turn":
        return ([[tool_use("lookup", {"key": f"item-{i}"}) for i in range(n)]] if n else []) + [
            "done"
        ]
    return [[tool_use("lookup", {"key": "item-1"})], "done"]  # one plain call


async def main(rounds: int, as_json: bool) -> None:
    support = sandbox_here()
    if not support.available:
        sys.exit(f"code_mode.py needs the sandbox: {support.reason}")
    workspace = Path.cwd()
    out: dict[str, Any] = {}
    for kind in ("plain_sequential", "plain_parallel", "code_mode"):
        times = []
        model = None
        for _ in range(rounds):
            took, model = await timed(task_turns(kind), workspace)
            times.append(took)
        assert model is not None
        out[kind] = {
            "turns": len(model.requests),
            "request_tokens": sum(request_chars(r) for r in model.requests) // 4,
            "wall_ms": round(statistics.median(times) * 1000, 1),
        }
    # the cost of one call: differences of medians, the kinds alternating round by round
    samples: dict[str, list[float]] = {}
    cpu: dict[str, list[float]] = {}
    plan = {
        "inner_n": ("inner", CALLS),
        "inner_0": ("inner", 0),
        "own_turn_n": ("own_turn", CALLS),
        "own_turn_0": ("own_turn", 0),
        "in_turn_n": ("in_turn", CALLS),
        "in_turn_0": ("in_turn", 0),
        "plain_1": ("plain", 1),
    }
    for _ in range(rounds):
        for name, (kind, n) in plan.items():
            took, used, _ = await measured(cost_turns(kind, n), workspace)
            samples.setdefault(name, []).append(took)
            cpu.setdefault(name, []).append(used)
    med = {k: statistics.median(v) for k, v in samples.items()}
    med_cpu = {k: statistics.median(v) for k, v in cpu.items()}
    inner_cpu = (med_cpu["inner_n"] - med_cpu["inner_0"]) / CALLS
    within_cpu = (med_cpu["in_turn_n"] - med_cpu["in_turn_0"]) / CALLS
    inner = (med["inner_n"] - med["inner_0"]) / CALLS
    own = (med["own_turn_n"] - med["own_turn_0"]) / CALLS
    within = (med["in_turn_n"] - med["in_turn_0"]) / CALLS
    out["per_call_us"] = {
        "inner_call": round(inner * 1e6),
        "ordinary_call_own_turn": round(own * 1e6),
        "ordinary_call_in_a_turn": round(within * 1e6),
        "inner_vs_own_turn": round(inner / own, 2),
        "inner_vs_in_a_turn": round(inner / within, 2),
        "inner_call_cpu": round(inner_cpu * 1e6),
        "ordinary_call_in_a_turn_cpu": round(within_cpu * 1e6),
        "inner_vs_in_a_turn_cpu": round(inner_cpu / within_cpu, 2),
    }
    out["sandbox_start_ms"] = round((med["inner_0"] - med["plain_1"]) * 1000, 1)
    if as_json:
        print(json.dumps(out, indent=2))
        return
    print(f"{'task':<18} {'turns':>6} {'request tokens':>15} {'wall ms':>9}")
    for kind in ("plain_sequential", "plain_parallel", "code_mode"):
        row = out[kind]
        print(f"{kind:<18} {row['turns']:>6} {row['request_tokens']:>15} {row['wall_ms']:>9}")
    per = out["per_call_us"]
    print(
        f"one inner call {per['inner_call']} µs; an ordinary call with its own turn "
        f"{per['ordinary_call_own_turn']} µs ({per['inner_vs_own_turn']}x), within a turn of "
        f"{CALLS} {per['ordinary_call_in_a_turn']} µs ({per['inner_vs_in_a_turn']}x); "
        f"the sandbox's start {out['sandbox_start_ms']} ms once per script"
    )
    print(
        f"kode's own CPU time: one inner call {per['inner_call_cpu']} µs, an ordinary call "
        f"within a turn {per['ordinary_call_in_a_turn_cpu']} µs "
        f"({per['inner_vs_in_a_turn_cpu']}x)"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args()
    anyio.run(main, options.rounds, options.json)
