"""What choosing an agent's tools costs as the registry grows, and what an agent keeps.

Run ``python bench/registry_scale.py`` (``--quick`` for fewer rounds, ``--json`` for
machine-readable output, ``--check`` to exit 1 when a target is missed). Registries are filled
with schema tools (``Tool.from_schema``) named ``tool_00000``, ``tool_00001``, ... in groups of
100 (``group:g000``, ...). Figures, each the median over rounds (``time.perf_counter_ns``):

- ``resolve_one``: ``registry.resolve(["tool_00005"])`` in a 10-tool and a 10,000-tool registry;
  the ratio of the two is the check (target <= 1.5x: the cost must not grow with the registry);
- ``create_one``: ``Agent.create`` of a template listing one tool, in a 10-tool and a 10,000-tool
  registry (target <= 1.5x);
- ``create_group``: ``Agent.create`` listing one group of 100 tools in the 10,000-tool registry
  against listing those 100 tools by name in a 100-tool registry (information: O(matches));
- ``create_10000``: ``Agent.create`` listing all 10,000 names explicitly (target < 100 ms);
- ``agent_bytes``: memory an agent listing one tool keeps in a 10,000-tool registry
  (``tracemalloc``, what is still allocated after ``Agent.create`` returns, the agent alive).

No network, no pytest: a plain script.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

from kode import Agent, AgentTemplate, Tool, ToolRegistry
from kode.models import ScriptedModel

CREATE_RATIO_TARGET = 1.5
ALL_NAMES_TARGET_MS = 100.0


def _schema(i: int) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"value": {"type": "string", "description": f"the value for tool {i}"}},
        "required": ["value"],
    }


def filled(count: int) -> ToolRegistry:
    """A registry of `count` schema tools in groups of 100."""
    reg = ToolRegistry(f"bench-{count}")
    for i in range(count):
        reg.register(
            Tool.from_schema(
                f"tool_{i:05d}",
                description=f"Tool number {i} of the benchmark.",
                input_schema=_schema(i),
                groups=[f"g{i // 100:03d}"],
            )
        )
    return reg


def median_ms(fn: Callable[[], object], rounds: int) -> float:
    fn()  # warm up
    times = []
    for _ in range(rounds):
        gc.collect()
        start = time.perf_counter_ns()
        fn()
        times.append((time.perf_counter_ns() - start) / 1e6)
    return statistics.median(times)


def create(reg: ToolRegistry, tools: list[str]) -> Agent:
    template = AgentTemplate(id="bench", tools=tools)
    return Agent.create(template, model=ScriptedModel(["ok"]), registry=reg)


def agent_bytes(reg: ToolRegistry) -> int:
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    agent = create(reg, ["tool_00005"])
    gc.collect()
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    total = sum(s.size_diff for s in after.compare_to(before, "filename"))
    del agent
    return total


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds (noisier)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args()
    rounds = 5 if args.quick else 21
    small, big, hundred = filled(10), filled(10_000), filled(100)
    rows: dict[str, Any] = {}

    def one(reg: ToolRegistry) -> Callable[[], object]:
        return lambda: reg.resolve(["tool_00005"])

    rows["resolve_one_10_ms"] = median_ms(one(small), rounds)
    rows["resolve_one_10000_ms"] = median_ms(one(big), rounds)
    rows["resolve_one_ratio"] = rows["resolve_one_10000_ms"] / rows["resolve_one_10_ms"]
    rows["create_one_10_ms"] = median_ms(lambda: create(small, ["tool_00005"]), rounds)
    rows["create_one_10000_ms"] = median_ms(lambda: create(big, ["tool_00005"]), rounds)
    rows["create_one_ratio"] = rows["create_one_10000_ms"] / rows["create_one_10_ms"]
    names_100 = [f"tool_{i:05d}" for i in range(100)]
    rows["create_group_100_in_10000_ms"] = median_ms(lambda: create(big, ["group:g042"]), rounds)
    rows["create_names_100_in_100_ms"] = median_ms(lambda: create(hundred, names_100), rounds)
    all_names = [f"tool_{i:05d}" for i in range(10_000)]
    rows["create_10000_names_ms"] = median_ms(lambda: create(big, all_names), max(7, rounds // 3))
    rows["agent_bytes_10000"] = agent_bytes(big)
    rows["agent_bytes_10"] = agent_bytes(small)
    missed = []
    if rows["create_one_ratio"] > CREATE_RATIO_TARGET:
        missed.append(f"create_one_ratio {rows['create_one_ratio']:.2f} > {CREATE_RATIO_TARGET}")
    if rows["create_10000_names_ms"] > ALL_NAMES_TARGET_MS:
        missed.append(
            f"create_10000_names {rows['create_10000_names_ms']:.1f} ms > {ALL_NAMES_TARGET_MS}"
        )
    if args.json:
        print(json.dumps({"figures": rows, "missed": missed}, indent=2))
    else:
        for key, value in rows.items():
            shown = f"{value:,.3f}" if isinstance(value, float) else f"{value:,}"
            print(f"{key:32} {shown}")
        for line in missed:
            print(f"MISSED: {line}")
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
