"""What the bounded stream loop costs per event: every provider model's hot path.

Run ``python bench/stream_loop.py`` (``--events N``, default 20,000; ``--rounds N``, default
15; ``--json``). A round feeds N synthetic events through the loop that every provider model
runs over its SDK's stream (wait for the next event within the idle deadline, hand it to the
assembler, count and yield its delta; give the stream up on a failure), as a model's
``stream`` drives it:

- ``inline``: the loop as each model wrote it in its own ``stream`` (the baseline: a copy of
  the code the four models held before `kode.models._limits.bounded_deltas`);
- ``bounded_deltas``: the shared async generator, iterated inside the model's own generator
  under ``contextlib.aclosing``, as the models use it now.

Each is run with an assembler that returns one delta (Anthropic's and the Responses API's) and
one that returns a list (Chat Completions' and Gemini's). The events and deltas are made
beforehand and the "SDK stream" returns them at once, so the figure is the loop's own cost
(the idle deadline's cancel scope included), not an SDK's parsing. The rounds alternate their
order; each figure is the median over rounds, in nanoseconds per event, with its ratio to
``inline`` of the same shape. No network, no pytest: a plain script.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import platform
import statistics
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio

from kode.models._limits import (
    Delta,
    Guard,
    ReplyBudget,
    ReplyLimits,
    bounded_deltas,
    give_up,
)
from kode.models.base import TextDelta

LIMITS = ReplyLimits(max_chars=10**9, max_bytes=10**12, idle_timeout=600.0)
DELTA = TextDelta(text="four")
DELTAS = [DELTA]


class Events:
    """An SDK's event stream that has every event ready."""

    def __init__(self, count: int) -> None:
        self.left = count

    def __aiter__(self) -> Events:
        return self

    async def __anext__(self) -> object:
        if self.left <= 0:
            raise StopAsyncIteration
        self.left -= 1
        return self


def one(event: object) -> Delta | None:
    return DELTA


def many(event: object) -> list[Delta]:
    return DELTAS


async def inline_one(events: Any, budget: ReplyBudget, guard: Guard | None) -> AsyncIterator[Any]:
    try:
        while True:
            try:
                event = await budget.next(events)
            except StopAsyncIteration:
                break
            delta = one(event)
            if delta is not None:
                budget.took(delta)
                yield delta
    except (Exception, GeneratorExit):
        await give_up(events, guard)
        raise


async def inline_many(events: Any, budget: ReplyBudget, guard: Guard | None) -> AsyncIterator[Any]:
    try:
        while True:
            try:
                chunk = await budget.next(events)
            except StopAsyncIteration:
                break
            for delta in many(chunk):
                budget.took(delta)
                yield delta
    except (Exception, GeneratorExit):
        await give_up(events, guard)
        raise


def shared(feed: Callable[[Any], Any]) -> Callable[..., AsyncIterator[Any]]:
    async def model_stream(
        events: Any, budget: ReplyBudget, guard: Guard | None
    ) -> AsyncIterator[Any]:
        async with contextlib.aclosing(bounded_deltas(events, feed, budget, guard)) as deltas:
            async for delta in deltas:
                yield delta

    return model_stream


LOOPS: dict[str, Callable[..., AsyncIterator[Any]]] = {
    "inline, one delta": inline_one,
    "bounded_deltas, one delta": shared(one),
    "inline, a list": inline_many,
    "bounded_deltas, a list": shared(many),
}


async def one_round(loop: Callable[..., AsyncIterator[Any]], count: int) -> float:
    budget = ReplyBudget(LIMITS, provider="bench", label="Bench", owner="BenchModel")
    started = time.perf_counter_ns()
    seen = 0
    async for _delta in loop(Events(count), budget, None):
        seen += 1
    took = time.perf_counter_ns() - started
    assert seen == count
    return took / count


async def run(count: int, rounds: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {name: [] for name in LOOPS}
    names = list(LOOPS)
    for name in names:  # warm-up
        await one_round(LOOPS[name], min(count, 1000))
    for n in range(rounds):
        for name in names if n % 2 == 0 else names[::-1]:
            times[name].append(await one_round(LOOPS[name], count))
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    times = anyio.run(run, args.events, args.rounds)
    medians = {name: statistics.median(values) for name, values in times.items()}
    rows = []
    for name, ns in medians.items():
        base = medians["inline, " + name.split(", ", 1)[1]]
        rows.append({"loop": name, "ns_per_event": round(ns, 1), "ratio": round(ns / base, 3)})
    if args.json:
        info = {"python": platform.python_version(), "events": args.events, "rounds": args.rounds}
        print(json.dumps({"info": info, "rows": rows}, indent=2))
        return
    print(f"{args.events} events per round, medians over {args.rounds} rounds")
    print(f"{'loop':<28} {'ns/event':>9} {'x inline':>9}")
    for row in rows:
        print(f"{row['loop']:<28} {row['ns_per_event']:>9.1f} {row['ratio']:>8.3f}x")


if __name__ == "__main__":
    main()
