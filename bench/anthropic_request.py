"""What prompt-cache breakpoints and strict tools add to building one Anthropic request.

Run ``python bench/anthropic_request.py`` (``--rounds N``, ``--json``). One round builds the
keyword arguments of ``client.messages.create`` (`AnthropicModel.request_params`) for a
request of 50 tools, a 6,000-character system prompt and a history of 1,000 messages, with
each of four models: plain (``cache=False``, the baseline), ``cache=True`` (the default),
``strict_tools=True``, and both. The models alternate within a round, so load on the machine
falls on all of them; each figure is the median over rounds, and the ratio is against the
plain model's median in the same run. No network, no SDK call: only kode's own work.
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import time
from typing import Any

from kode.models import AnthropicModel, Message, ModelRequest, TextContent, ToolResultContent
from kode.models.messages import ToolUseContent
from kode.tools import Tool

VARIANTS: dict[str, dict[str, Any]] = {
    "plain": {"cache": False},
    "cache": {},
    "strict": {"cache": False, "strict_tools": True},
    "cache+strict": {"strict_tools": True},
}


def request() -> ModelRequest:
    tools = [
        Tool.from_schema(
            f"tool_{n}",
            description=f"Tool number {n}: does one thing and does it well.",
            input_schema={
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "A file."},
                    "limit": {"type": "integer", "minimum": 1, "default": 10},
                },
                "required": ["path"],
            },
        )
        for n in range(50)
    ]
    messages = [Message.user("Start.")]
    for n in range(1, 500):
        call = ToolUseContent(id=f"t{n}", name="tool_1", input={"path": f"f{n}.txt"})
        messages.append(Message(role="assistant", content=[call]))
        result = ToolResultContent(tool_use_id=f"t{n}", content=[TextContent(text="x" * 200)])
        messages.append(Message(role="user", content=[result]))
    return ModelRequest(system="You are careful. " * 350, messages=messages, tools=tools)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--rounds", type=int, default=200, help="rounds (default 200)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    args = parser.parse_args()
    # 30 of the 50 tools pass the strict limits: said once, and not what is measured.
    logging.getLogger("kode.models").setLevel(logging.ERROR)
    req = request()
    models = {
        name: AnthropicModel("claude-sonnet-4-6", api_key="k", **kw)
        for name, kw in VARIANTS.items()
    }
    times: dict[str, list[int]] = {name: [] for name in models}
    for _ in range(args.rounds):
        for name, model in models.items():
            started = time.perf_counter_ns()
            model.request_params(req)
            times[name].append(time.perf_counter_ns() - started)
    base = statistics.median(times["plain"])
    rows = [
        {
            "variant": name,
            "median_ms": statistics.median(t) / 1e6,
            "ratio": statistics.median(t) / base,
        }
        for name, t in times.items()
    ]
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        for row in rows:
            print(f"{row['variant']:<13} {row['median_ms']:8.3f} ms  {row['ratio']:.3f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
