"""A tool round trip through each provider model, with its real SDK client, on the loopback.

Run ``python bench/models.py`` (``--quick`` for fewer rounds, ``--json`` for machine-readable
output). For each of `AnthropicModel`, `OpenAIModel`, `OpenAIResponsesModel` and `GeminiModel`
one round is one ``agent.send``: the model asks for a tool (``add``), the tool runs, the model
answers; two streamed requests to `kode.testing.providers.FakeProviderServer`, each reply in
pieces of 8 characters. The floor is the same two requests sent by hand with ``httpx`` (the
bodies kode sent, replayed; the stream read to its end), so the ratio is what the SDK client
and kode add to the bytes on the wire: building the request, the client, reading the events,
the agent's loop. The server is the same Python process's thread in both, and its share
(rendering the stream) is in both figures.

Each figure is the median over rounds of one round trip (``time.perf_counter_ns``); the
rounds of the four models and the floor alternate, so load on the machine falls on all of
them. No network beyond loopback, no pytest: a plain script.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from typing import Any

import anyio
import httpx

from kode import Agent, AgentTemplate, define_tool
from kode.models import AnthropicModel, Model, OpenAIModel, ToolUseContent, Usage
from kode.models.gemini import GeminiModel
from kode.models.openai_responses import OpenAIResponsesModel
from kode.registries import ToolRegistry
from kode.testing.providers import FakeProviderServer, Reply

PROVIDERS = ("anthropic", "openai", "openai-responses", "gemini")
REG = ToolRegistry(name="bench-models")


@define_tool(registry=REG, kind="read")
def add(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: The first.
        b: The second.
    """
    return a + b


@dataclass
class Row:
    provider: str
    median_ms: float
    floor_ms: float
    ratio: float


def replies() -> list[Reply]:
    usage = Usage(input_tokens=40, output_tokens=12)
    call = ToolUseContent(id="call_1", name="add", input={"a": 2, "b": 3})
    return [
        Reply(content=["Let me add them.", call], usage=usage, chunk_size=8),
        Reply(content=["2 + 3 is 5, as the tool says."], usage=usage, chunk_size=8),
    ]


def model_for(provider: str, server: FakeProviderServer) -> Model:
    if provider == "anthropic":
        return AnthropicModel("claude-bench", base_url=server.url, api_key="k")
    if provider == "openai":
        return OpenAIModel("gpt-bench", base_url=server.openai_base_url, api_key="k")
    if provider == "openai-responses":
        return OpenAIResponsesModel("gpt-bench", base_url=server.openai_base_url, api_key="k")
    return GeminiModel("gemini-bench", base_url=server.url, api_key="k")


async def run(rounds: int) -> list[Row]:
    template = AgentTemplate(id="bench", system_prompt="Be brief.", tools=["add"])
    times: dict[str, list[int]] = {p: [] for p in PROVIDERS}
    floors: dict[str, list[int]] = {p: [] for p in PROVIDERS}
    with FakeProviderServer() as server:
        models = {p: model_for(p, server) for p in PROVIDERS}
        sent: dict[str, list[tuple[str, Any]]] = {}

        async def kode_round(provider: str) -> None:
            server.reply(*replies())
            agent = Agent.create(template, model=models[provider], registry=REG)
            reply = await agent.send("What is 2 + 3?")
            assert reply.text == "2 + 3 is 5, as the tool says.", reply.text

        # Warm each model (its client, the SDK's imports) and record what it sends.
        for provider in PROVIDERS:
            before = len(server.requests)
            await kode_round(provider)
            requests = server.requests[before:]
            sent[provider] = [(r.path, r.body) for r in requests]

        async with httpx.AsyncClient(base_url=server.url) as http:

            async def floor_round(provider: str) -> None:
                server.reply(*replies())
                for path, body in sent[provider]:
                    query = "?alt=sse" if provider == "gemini" else ""
                    async with http.stream("POST", path + query, json=body) as response:
                        async for _ in response.aiter_bytes():
                            pass
                    assert response.status_code == 200

            for provider in PROVIDERS:
                await floor_round(provider)
            for _ in range(rounds):
                for provider in PROVIDERS:
                    times[provider].append(await timed(lambda p=provider: kode_round(p)))
                    floors[provider].append(await timed(lambda p=provider: floor_round(p)))
        for model in models.values():
            await model.aclose()  # type: ignore[attr-defined]
    rows = []
    for provider in PROVIDERS:
        median = statistics.median(times[provider]) / 1e6
        floor = statistics.median(floors[provider]) / 1e6
        rows.append(Row(provider, median, floor, median / floor))
    return rows


async def timed(op: Callable[[], Awaitable[None]]) -> int:
    start = time.perf_counter_ns()
    await op()
    return time.perf_counter_ns() - start


def print_table(rows: list[Row], rounds: int) -> None:
    print(f"one tool round trip (two streamed requests); medians over {rounds} rounds")
    header = ("model", "kode + SDK", "httpx floor", "ratio")
    lines = [header] + [
        (
            {
                "anthropic": "AnthropicModel",
                "openai": "OpenAIModel",
                "openai-responses": "OpenAIResponsesModel",
                "gemini": "GeminiModel",
            }[r.provider],
            f"{r.median_ms:.2f} ms",
            f"{r.floor_ms:.2f} ms",
            f"{r.ratio:.2f}x",
        )
        for r in rows
    ]
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    for line in lines:
        print("  ".join(x.ljust(w) for x, w in zip(line, widths, strict=True)).rstrip())


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds (noisier)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument("--rounds", type=int, default=None, help="rounds of each (default 60)")
    args = parser.parse_args()
    rounds = args.rounds or (10 if args.quick else 60)
    rows = anyio.run(run, rounds)
    if args.json:
        info = {"python": platform.python_version(), "rounds": rounds}
        print(json.dumps({"info": info, "rows": [asdict(r) for r in rows]}, indent=2))
    else:
        print_table(rows, rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
