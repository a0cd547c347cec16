"""What kode costs on top of pydantic's `validate_call`, measured on one realistic function.

Run ``python bench/overhead.py`` (``--quick`` for fewer rounds, ``--json`` for machine-readable
output, ``--check`` to exit 1 when a target is missed). Every figure is the median over many
rounds of a per-operation time; kode and its baseline run in the same process, alternating round
by round (and alternating which goes first), so a noisy machine slows both alike. The ratio is
kode's median over the baseline's median. See ``bench/README.md`` for what each row measures.

The figures that are pure CPU work in one thread are timed in that thread's CPU time; those
about waiting (a worker thread's round trip, the fan-outs, imports) by the wall clock.

No network, no pytest: a plain script.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import gc
import inspect
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import types
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from typing import Annotated, Any, Literal

import anyio
import anyio.to_thread
import pydantic
from pydantic import BaseModel, Field, ValidationError, validate_call

from kode import define_tool

# --- the function under test ---------------------------------------------------------------
# Four parameters a model fills plus a flag: a plain str, a str with a default, an int with a
# Field constraint, an optional list of Literals, a bool. Same body for every variant.


def _body(pattern: str, path: str, max_results: int, kinds: list[str] | None, hidden: bool) -> str:
    return f"{pattern} in {path}: up to {max_results} {'/'.join(kinds or ('any',))}{hidden:d}"


def search_files(
    pattern: str,
    path: str = ".",
    max_results: Annotated[int, Field(ge=1, le=500)] = 50,
    kinds: list[Literal["file", "dir"]] | None = None,
    include_hidden: bool = False,
) -> str:
    """Find files whose names match a glob pattern.

    Args:
        pattern: Glob pattern, e.g. "**/*.py".
        path: Directory to search from.
        max_results: Stop after this many matches.
        kinds: Only return these kinds of entries.
        include_hidden: Also match names starting with a dot.
    """
    return _body(pattern, path, max_results, kinds, include_hidden)


async def search_files_async(
    pattern: str,
    path: str = ".",
    max_results: Annotated[int, Field(ge=1, le=500)] = 50,
    kinds: list[Literal["file", "dir"]] | None = None,
    include_hidden: bool = False,
) -> str:
    """Find files whose names match a glob pattern.

    Args:
        pattern: Glob pattern, e.g. "**/*.py".
        path: Directory to search from.
        max_results: Stop after this many matches.
        kinds: Only return these kinds of entries.
        include_hidden: Also match names starting with a dot.
    """
    return _body(pattern, path, max_results, kinds, include_hidden)


async def search_files_slow(
    pattern: str,
    path: str = ".",
    max_results: Annotated[int, Field(ge=1, le=500)] = 50,
    kinds: list[Literal["file", "dir"]] | None = None,
    include_hidden: bool = False,
) -> str:
    """Find files whose names match a glob pattern (after a 10 ms pause).

    Args:
        pattern: Glob pattern, e.g. "**/*.py".
        path: Directory to search from.
        max_results: Stop after this many matches.
        kinds: Only return these kinds of entries.
        include_hidden: Also match names starting with a dot.
    """
    await anyio.sleep(0.01)
    return _body(pattern, path, max_results, kinds, include_hidden)


# --- the common case ------------------------------------------------------------------------
# What most tools look like: a pydantic model among the arguments, the arguments arriving as the
# JSON text a provider sends, and a dict (or a list of dicts) coming back.


class LineItem(BaseModel):
    """One line of an order."""

    sku: str
    quantity: Annotated[int, Field(ge=1, le=99)] = 1


def _order(customer: str, items: list[LineItem], express: bool, note: str | None) -> dict[str, Any]:
    return {
        "order_id": "ord_0042",
        "customer": customer,
        "skus": [item.sku for item in items],
        "quantity": sum(item.quantity for item in items),
        "express": express,
        "note": note,
    }


def _orders(customer: str, limit: int, status: str | None) -> list[dict[str, Any]]:
    return [
        {"order_id": f"ord_{i:04d}", "customer": customer, "status": status or "open", "total": i}
        for i in range(limit)
    ]


async def place_order(
    customer: str, items: list[LineItem], express: bool = False, note: str | None = None
) -> dict[str, Any]:
    """Place an order for a customer.

    Args:
        customer: The customer's id.
        items: What to order.
        express: Ship by express.
        note: A note for the warehouse.
    """
    return _order(customer, items, express, note)


def place_order_sync(
    customer: str, items: list[LineItem], express: bool = False, note: str | None = None
) -> dict[str, Any]:
    """Place an order for a customer.

    Args:
        customer: The customer's id.
        items: What to order.
        express: Ship by express.
        note: A note for the warehouse.
    """
    return _order(customer, items, express, note)


async def place_order_slow(
    customer: str, items: list[LineItem], express: bool = False, note: str | None = None
) -> dict[str, Any]:
    """Place an order for a customer (after a 10 ms pause).

    Args:
        customer: The customer's id.
        items: What to order.
        express: Ship by express.
        note: A note for the warehouse.
    """
    await anyio.sleep(0.01)
    return _order(customer, items, express, note)


async def list_orders(
    customer: str,
    limit: Annotated[int, Field(ge=1, le=50)] = 10,
    status: Literal["open", "shipped"] | None = None,
) -> list[dict[str, Any]]:
    """List a customer's orders.

    Args:
        customer: The customer's id.
        limit: At most this many orders.
        status: Only orders in this state.
    """
    return _orders(customer, limit, status)


ORDER_INPUT: dict[str, Any] = {
    "customer": "ada",
    "items": [{"sku": "book-1", "quantity": 2}, {"sku": "pen-7"}],
    "express": True,
}
ORDER_JSON = json.dumps(ORDER_INPUT)
"""The arguments as a provider sends them: JSON text."""
ORDER_ITEMS = [LineItem(sku="book-1", quantity=2), LineItem(sku="pen-7")]
ORDER_EXPECTED = _order("ada", ORDER_ITEMS, True, None)
LIST_JSON = json.dumps({"customer": "ada", "limit": 10})
LIST_EXPECTED = _orders("ada", 10, None)

ARGS: dict[str, Any] = {
    "pattern": "**/*.py",
    "path": "src",
    "max_results": 20,
    "kinds": ["file"],
    "include_hidden": False,
}
BAD_ARGS: dict[str, Any] = {**ARGS, "max_results": "twenty"}
EXPECTED = _body("**/*.py", "src", 20, ["file"], False)
FANOUT = 1000


def fresh(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A new function object with the same code, so no cache keyed on the function can help."""
    new = types.FunctionType(
        fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__
    )
    new.__kwdefaults__ = fn.__kwdefaults__
    new.__annotations__ = dict(fn.__annotations__)
    new.__doc__ = fn.__doc__
    new.__qualname__ = fn.__qualname__
    new.__module__ = fn.__module__
    return new


# --- measuring -----------------------------------------------------------------------------


@dataclass
class Row:
    name: str
    baseline: str
    kode_ns: float
    baseline_ns: float
    ratio: float
    target: str
    passed: bool | None
    rounds: int
    per_round: int


CPU_CLOCK = time.thread_time_ns
"""For the figures that are pure CPU work in one thread (defining, calling in place,
validating): the thread's CPU time leaves out the time slices other processes take, which on a
shared machine swung wall-clock medians by 2-3x. Thread hops and concurrent waits (the
worker-thread call, the fan-outs) are about waiting, so they are timed by the wall clock."""

SyncBatch = Callable[[int], int]
AsyncBatch = Callable[[int], Awaitable[int]]


def _median_per_op(samples: list[int], n: int) -> float:
    return statistics.median(samples) / n


def pair_sync(kode: SyncBatch, base: SyncBatch, *, rounds: int, n: int) -> tuple[float, float]:
    """Alternate kode and baseline batches of `n` operations; median ns per operation."""
    ks: list[int] = []
    bs: list[int] = []
    for _ in range(2):  # warm-up
        kode(n)
        base(n)
    for i in range(rounds):
        gc.collect()
        gc.disable()
        try:
            if i % 2:
                ks.append(kode(n))
                bs.append(base(n))
            else:
                bs.append(base(n))
                ks.append(kode(n))
        finally:
            gc.enable()
    return _median_per_op(ks, n), _median_per_op(bs, n)


async def pair_async(
    kode: AsyncBatch, base: AsyncBatch, *, rounds: int, n: int
) -> tuple[float, float]:
    """`pair_sync` for batches that run in the event loop."""
    ks: list[int] = []
    bs: list[int] = []
    for _ in range(2):
        await kode(n)
        await base(n)
    for i in range(rounds):
        gc.collect()
        gc.disable()
        try:
            if i % 2:
                ks.append(await kode(n))
                bs.append(await base(n))
            else:
                bs.append(await base(n))
                ks.append(await kode(n))
        finally:
            gc.enable()
    return _median_per_op(ks, n), _median_per_op(bs, n)


def ratio_row(
    name: str, baseline: str, k: float, b: float, limit: float, rounds: int, n: int
) -> Row:
    return Row(name, baseline, k, b, k / b, f"<= {limit:g}x", k / b <= limit, rounds, n)


# --- the figures ---------------------------------------------------------------------------


def bench_define(rounds: int) -> Row:
    def kode(n: int) -> int:
        fns = [fresh(search_files) for _ in range(n)]
        t0 = CPU_CLOCK()
        for fn in fns:
            define_tool(registry=None)(fn)
        return CPU_CLOCK() - t0

    def base(n: int) -> int:
        fns = [fresh(search_files) for _ in range(n)]
        t0 = CPU_CLOCK()
        for fn in fns:
            validate_call(fn)
        return CPU_CLOCK() - t0

    made = define_tool(registry=None)(fresh(search_files))
    assert "max_results" in made.input_schema["properties"], "schema not materialised"
    n = 2
    k, b = pair_sync(kode, base, rounds=rounds, n=n)
    return ratio_row("define", "validate_call(fn)", k, b, 3.0, rounds, n)


async def bench_calls(rounds: int) -> list[Row]:
    rows: list[Row] = []
    args = ARGS
    bad = BAD_ARGS

    # call_async
    tool_async = define_tool(registry=None)(search_files_async)
    vc_async = validate_call(search_files_async)
    result = await tool_async.run(args)
    assert not result.is_error and result.text == EXPECTED, result
    assert await vc_async(**args) == EXPECTED

    async def k_async(n: int) -> int:
        run = tool_async.run
        t0 = CPU_CLOCK()
        for _ in range(n):
            await run(args)
        return CPU_CLOCK() - t0

    async def b_async(n: int) -> int:
        t0 = CPU_CLOCK()
        for _ in range(n):
            await vc_async(**args)
        return CPU_CLOCK() - t0

    n = 200
    k, b = await pair_async(k_async, b_async, rounds=rounds, n=n)
    rows.append(ratio_row("call_async", "await validate_call(fn)(**args)", k, b, 1.5, rounds, n))

    # call_sync, default worker-thread mode, next to a raw thread round trip
    tool_thread = define_tool(registry=None)(fresh(search_files))
    assert tool_thread.run_in_thread
    result = await tool_thread.run(args)
    assert not result.is_error and result.text == EXPECTED, result
    raw_call = functools.partial(search_files, **args)

    async def k_thread(n: int) -> int:
        run = tool_thread.run
        t0 = time.perf_counter_ns()
        for _ in range(n):
            await run(args)
        return time.perf_counter_ns() - t0

    async def b_thread(n: int) -> int:
        run_sync = anyio.to_thread.run_sync
        t0 = time.perf_counter_ns()
        for _ in range(n):
            await run_sync(raw_call)
        return time.perf_counter_ns() - t0

    n = 50
    k, b = await pair_async(k_thread, b_thread, rounds=rounds, n=n)
    extra_us = (k - b) / 1000
    rows.append(
        Row(
            "call_sync_thread",
            "anyio.to_thread.run_sync(fn)",
            k,
            b,
            k / b,
            "<= raw + 20us",
            extra_us <= 20.0,
            rounds,
            n,
        )
    )

    # call_sync, inline mode
    tool_inline = define_tool(registry=None, run_in_thread=False)(fresh(search_files))
    vc_sync = validate_call(search_files)
    result = await tool_inline.run(args)
    assert not result.is_error and result.text == EXPECTED, result

    async def k_inline(n: int) -> int:
        run = tool_inline.run
        t0 = CPU_CLOCK()
        for _ in range(n):
            await run(args)
        return CPU_CLOCK() - t0

    async def b_inline(n: int) -> int:
        t0 = CPU_CLOCK()
        for _ in range(n):
            vc_sync(**args)
        return CPU_CLOCK() - t0

    n = 200
    k, b = await pair_async(k_inline, b_inline, rounds=rounds, n=n)
    rows.append(ratio_row("call_sync_inline", "validate_call(fn)(**args)", k, b, 2.0, rounds, n))

    # invalid input, through to the error result
    result = await tool_async.run(bad)
    assert result.is_error and "max_results" in result.text, result
    try:
        await vc_async(**bad)
    except ValidationError:
        pass
    else:
        raise AssertionError("validate_call accepted invalid input")

    async def k_invalid(n: int) -> int:
        run = tool_async.run
        t0 = CPU_CLOCK()
        for _ in range(n):
            await run(bad)
        return CPU_CLOCK() - t0

    async def b_invalid(n: int) -> int:
        t0 = CPU_CLOCK()
        for _ in range(n):
            try:
                await vc_async(**bad)
            except ValidationError:
                pass
        return CPU_CLOCK() - t0

    n = 200
    k, b = await pair_async(k_invalid, b_invalid, rounds=rounds, n=n)
    rows.append(ratio_row("invalid", "validate_call raising ValidationError", k, b, 3.0, rounds, n))
    return rows


async def bench_common(rounds: int) -> list[Row]:
    """The common case: JSON text in, a pydantic model argument, a dict or a list out.

    The baseline is the least work any tool layer must do for such a call: parse the JSON,
    validate with `validate_call`, call, and `json.dumps` the result.
    """
    rows: list[Row] = []
    loads, dumps = json.loads, json.dumps

    async def pair(
        name: str, fn: Callable[..., Any], text: str, expected: Any, limit: float
    ) -> Row:
        is_async = inspect.iscoroutinefunction(fn)
        tool = define_tool(registry=None, run_in_thread=is_async)(fresh(fn))
        vc = validate_call(fn)
        result = await tool.run(text)
        assert not result.is_error and loads(result.text) == expected, result
        assert result.details == expected, result.details
        run = tool.run

        async def k(n: int) -> int:
            t0 = CPU_CLOCK()
            for _ in range(n):
                await run(text)
            return CPU_CLOCK() - t0

        if is_async:
            assert loads(dumps(await vc(**loads(text)))) == expected

            async def b(n: int) -> int:
                t0 = CPU_CLOCK()
                for _ in range(n):
                    dumps(await vc(**loads(text)))
                return CPU_CLOCK() - t0

            baseline = "json.loads, await validate_call(fn), json.dumps"
        else:
            assert loads(dumps(vc(**loads(text)))) == expected

            async def b(n: int) -> int:
                t0 = CPU_CLOCK()
                for _ in range(n):
                    dumps(vc(**loads(text)))
                return CPU_CLOCK() - t0

            baseline = "json.loads, validate_call(fn), json.dumps"
        n = 200
        kode_ns, base_ns = await pair_async(k, b, rounds=rounds, n=n)
        return ratio_row(name, baseline, kode_ns, base_ns, limit, rounds, n)

    rows.append(await pair("call_json_dict", place_order, ORDER_JSON, ORDER_EXPECTED, 1.5))
    rows.append(await pair("call_json_list", list_orders, LIST_JSON, LIST_EXPECTED, 1.5))
    rows.append(await pair("call_inline_dict", place_order_sync, ORDER_JSON, ORDER_EXPECTED, 2.0))
    return rows


async def bench_fanout(rounds: int) -> Row:
    tool_slow = define_tool(registry=None)(search_files_slow)
    vc_slow = validate_call(search_files_slow)
    base_call = functools.partial(vc_slow, **ARGS)
    results: list[Any] = []

    async def collect(run: Callable[[], Awaitable[Any]]) -> None:
        results.append(await run())

    async def k_fan(n: int) -> int:
        t0 = time.perf_counter_ns()
        for _ in range(n):
            async with anyio.create_task_group() as tg:
                for _ in range(FANOUT):
                    tg.start_soon(tool_slow.run, ARGS)
        return time.perf_counter_ns() - t0

    async def b_fan(n: int) -> int:
        t0 = time.perf_counter_ns()
        for _ in range(n):
            async with anyio.create_task_group() as tg:
                for _ in range(FANOUT):
                    tg.start_soon(base_call)
        return time.perf_counter_ns() - t0

    async with anyio.create_task_group() as tg:
        tg.start_soon(collect, functools.partial(tool_slow.run, ARGS))
    assert results[0].text == EXPECTED, results
    k, b = await pair_async(k_fan, b_fan, rounds=rounds, n=1)
    return ratio_row(f"fanout_{FANOUT}", "same with validate_call", k, b, 1.2, rounds, 1)


async def bench_fanout_dict(rounds: int) -> list[Row]:
    """1000 concurrent calls in the common case, each gathered by a bare ``asyncio.gather``.

    The target row's baseline does for each call the least work any tool layer must do (as
    ``call_json_dict``'s: ``json.loads``, ``validate_call``, the call, ``json.dumps``); the
    information row's is the bare function with its arguments made beforehand (no validation,
    no result), the floor of a fan-out.
    """
    tool = define_tool(registry=None)(place_order_slow)
    vc = validate_call(place_order_slow)
    bare = functools.partial(place_order_slow, "ada", ORDER_ITEMS, True)
    loads, dumps = json.loads, json.dumps
    result = await tool.run(ORDER_JSON)
    assert not result.is_error and result.details == ORDER_EXPECTED, result

    async def least(text: str) -> str:
        return dumps(await vc(**loads(text)))

    assert loads(await least(ORDER_JSON)) == ORDER_EXPECTED

    def gathered(make: Callable[[], Awaitable[Any]]) -> AsyncBatch:
        async def batch(n: int) -> int:
            t0 = time.perf_counter_ns()
            for _ in range(n):
                await asyncio.gather(*[make() for _ in range(FANOUT)])  # noqa: TID251
            return time.perf_counter_ns() - t0

        return batch

    run = tool.run
    kode = gathered(lambda: run(ORDER_JSON))
    k, b = await pair_async(kode, gathered(lambda: least(ORDER_JSON)), rounds=rounds, n=1)
    rows = [
        ratio_row(
            f"fanout_{FANOUT}_dict",
            "asyncio.gather of json.loads, validate_call, json.dumps",
            k,
            b,
            1.1,
            rounds,
            1,
        )
    ]
    k, b = await pair_async(kode, gathered(bare), rounds=rounds, n=1)
    rows.append(
        Row(
            f"fanout_{FANOUT}_bare",
            "asyncio.gather of the bare function",
            k,
            b,
            k / b,
            "(info)",
            None,
            rounds,
            1,
        )
    )
    return rows


def _child_cpu_ns() -> int:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return int((usage.ru_utime + usage.ru_stime) * 1e9)


def bench_import(rounds: int) -> list[Row]:
    """``python -c "import ..."`` in fresh processes, kode's imports against pydantic's.

    Both run with bytecode caching on (in a temporary ``PYTHONPYCACHEPREFIX``, warmed by the
    first rounds), as an installed package has its ``.pyc`` files: with
    ``PYTHONDONTWRITEBYTECODE`` set, kode's sources would be compiled in every process while
    pydantic's installed bytecode is read. Each pair is timed by the wall clock and by the
    children's CPU time (which leaves out the time slices other processes take).
    """
    pairs = [
        ("import", "import kode", "import pydantic", 1.5),
        (
            "import_loaded",
            "import kode; kode.define_tool",
            "import pydantic; pydantic.validate_call",
            None,
        ),
        ("import_builtin", "import kode.builtin", "import pydantic", 3.0),
    ]
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="kode-bench-pycache-") as cache:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = cache

        def once(code: str) -> tuple[int, int]:
            c0, t0 = _child_cpu_ns(), time.perf_counter_ns()
            subprocess.run([sys.executable, "-c", code], check=True, env=env)
            return time.perf_counter_ns() - t0, _child_cpu_ns() - c0

        for name, kode_code, base_code, limit in pairs:
            for _ in range(2):  # warm-up: bytecode written
                once(kode_code)
                once(base_code)
            walls: tuple[list[int], list[int]] = ([], [])
            cpus: tuple[list[int], list[int]] = ([], [])
            for i in range(rounds):
                order = ((0, kode_code), (1, base_code))
                for side, code in order if i % 2 else order[::-1]:
                    wall, cpu = once(code)
                    walls[side].append(wall)
                    cpus[side].append(cpu)
            for clock, (ks, bs) in (("", walls), ("_cpu", cpus)):
                k, b = statistics.median(ks), statistics.median(bs)
                label = base_code if not clock else f"{base_code} (CPU time)"
                if limit is not None and not clock:
                    rows.append(ratio_row(name, label, k, b, limit, rounds, 1))
                else:
                    rows.append(Row(name + clock, label, k, b, k / b, "(info)", None, rounds, 1))
    return rows


# --- output --------------------------------------------------------------------------------


def _fmt_ns(ns: float) -> str:
    if ns >= 1e6:
        return f"{ns / 1e6:.2f} ms"
    return f"{ns / 1e3:.1f} us"


def print_table(rows: list[Row]) -> None:
    header = ("figure", "kode", "baseline", "ratio", "target", "result", "baseline is")
    lines = [
        (
            r.name,
            _fmt_ns(r.kode_ns),
            _fmt_ns(r.baseline_ns),
            f"{r.ratio:.2f}x"
            + (f" (+{(r.kode_ns - r.baseline_ns) / 1e3:.1f} us)" if "raw" in r.target else ""),
            r.target,
            "-" if r.passed is None else ("pass" if r.passed else "FAIL"),
            r.baseline,
        )
        for r in rows
    ]
    widths = [max(len(str(x)) for x in col) for col in zip(header, *lines, strict=True)]
    for line in (header, tuple("-" * w for w in widths), *lines):
        print("  ".join(str(x).ljust(w) for x, w in zip(line, widths, strict=True)).rstrip())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds (noisier)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--check", action="store_true", help="exit 1 if a target is missed")
    parser.add_argument(
        "--only",
        action="append",
        help="run only these figures (define, call, common, fanout, import)",
    )
    opts = parser.parse_args(argv)
    scale = 0.25 if opts.quick else 1.0
    only = set(opts.only or ("define", "call", "common", "fanout", "import"))

    def rounds(full: int) -> int:
        return max(5, int(full * scale))

    rows: list[Row] = []
    if "define" in only:
        rows.append(bench_define(rounds(120)))
    if "call" in only:
        rows += anyio.run(bench_calls, rounds(60), backend="asyncio")
    if "common" in only:
        rows += anyio.run(bench_common, rounds(60), backend="asyncio")
    if "fanout" in only:
        rows.append(anyio.run(bench_fanout, rounds(24), backend="asyncio"))
        rows += anyio.run(bench_fanout_dict, rounds(24), backend="asyncio")
    if "import" in only:
        rows += bench_import(rounds(24))

    if opts.json:
        env = {
            "python": platform.python_version(),
            "pydantic": pydantic.VERSION,
            "anyio_backend": "asyncio",
            "quick": opts.quick,
        }
        print(json.dumps({"environment": env, "rows": [asdict(r) for r in rows]}, indent=2))
    else:
        print(
            f"kode overhead vs pydantic {pydantic.VERSION} validate_call "
            f"(Python {platform.python_version()}, anyio/asyncio; medians, lower is better)"
        )
        print_table(rows)
    failed = [r.name for r in rows if r.passed is False]
    return 1 if opts.check and failed else 0


if __name__ == "__main__":
    sys.exit(main())
