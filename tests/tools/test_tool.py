"""Running a tool: validation before the call, context injection, results, errors, timeouts."""

from __future__ import annotations

import dataclasses
import inspect
import logging
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import BaseModel

from kode import (
    Image,
    ImageBlock,
    TextBlock,
    Tool,
    ToolContext,
    ToolError,
    ToolErrorType,
    ToolResult,
    define_tool,
    json_result,
)
from kode.tools.results import EMPTY_RESULT_TEXT

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16

pytestmark = pytest.mark.anyio


def make(fn: Any, **options: Any) -> Tool[..., Any]:
    return define_tool(registry=None, **options)(fn)


# --- still a function -------------------------------------------------------------------------


def test_tool_is_callable_like_the_function() -> None:
    def add(a: int, b: int = 2) -> int:
        """Add."""
        return a + b

    tool = make(add)
    assert tool(1) == 3
    assert tool(1, b=5) == 6
    assert tool.__wrapped__ is add
    assert inspect.signature(tool) == inspect.signature(add)
    assert tool.__name__ == "add" and tool.__doc__ == "Add."


async def test_async_tool_call_returns_coroutine() -> None:
    async def double(x: int) -> int:
        """Double."""
        return 2 * x

    tool = make(double)
    assert tool.is_async
    assert await tool(4) == 8


def test_repr_and_markdown() -> None:
    def greet(name: str, times: int = 1) -> str:
        """Greet someone.

        Args:
            name: Who to greet.
            times: How often.
        """
        return name * times

    tool = make(greet)
    assert repr(tool) == "<Tool greet(name: str, times: int = 1) -> str>"
    md = tool._repr_markdown_()
    assert "Greet someone." in md
    assert "| `name` | string | yes |  | Who to greet. |" in md
    assert "| `times` | integer | no | 1 | How often. |" in md


# --- validation ---------------------------------------------------------------------------------


async def test_lax_input_is_coerced_and_function_receives_python_values() -> None:
    seen: dict[str, Any] = {}

    def f(n: int, flag: bool = False, ratio: float = 0.5) -> str:
        """F."""
        seen.update(n=n, flag=flag, ratio=ratio)
        return "ok"

    result = await make(f).run({"n": "20", "flag": "true", "ratio": "2"})
    assert not result.is_error
    assert seen == {"n": 20, "flag": True, "ratio": 2.0}


async def test_json_string_input_is_accepted() -> None:
    def f(n: int) -> int:
        """F."""
        return n + 1

    result = await make(f).run('{"n": 41}')
    assert result.text == "42" and result.details == 42


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        ("not json", "not valid JSON"),
        ("[1, 2]", "expected a JSON object"),
        (7, "expected a JSON object with the parameters by name, got int 7"),
        ([1], "got list [1]"),
    ],
)
async def test_input_that_is_not_an_object(raw: Any, fragment: str) -> None:
    called = False

    def f(n: int = 1) -> int:
        """F."""
        nonlocal called
        called = True
        return n

    result = await make(f).run(raw)
    assert result.is_error and result.error_type is ToolErrorType.INVALID_TOOL_PARAMS
    assert fragment in result.text
    assert not called


async def test_none_and_empty_input_mean_no_arguments() -> None:
    def f(n: int = 3) -> int:
        """F."""
        return n

    tool = make(f)
    assert (await tool.run(None)).text == "3"
    assert (await tool.run("")).text == "3"
    assert (await tool.run({})).text == "3"


async def test_invalid_input_never_reaches_the_function_and_names_every_field() -> None:
    called = False

    def f(name: str, count: int, mode: str = "a") -> str:
        """F."""
        nonlocal called
        called = True
        return "x"

    result = await make(f).run({"count": "many", "extra": 1, "nmae": "x"})
    assert result.is_error
    assert not called
    text = result.text
    assert text.startswith("Invalid arguments for tool 'f': ")
    assert "'name' is required but missing" in text
    assert "'count' should be a valid integer" in text and 'got "many"' in text
    assert "'extra' is not a parameter of this tool (parameters: name, count, mode)" in text
    assert text.endswith("Fix the arguments and call the tool again.")


async def test_nested_error_locations_are_named() -> None:
    class Pair(BaseModel):
        x: int
        y: int

    def f(points: list[Pair]) -> int:
        """F."""
        return len(points)

    result = await make(f).run({"points": [{"x": 1, "y": 2}, {"x": "a", "y": 2}]})
    assert result.is_error
    assert "'points[1].x' should be a valid integer" in result.text


async def test_json_encoded_containers_are_decoded() -> None:
    class Spot(BaseModel):
        x: int

    def f(items: list[int], point: Spot, mapping: dict[str, int]) -> str:
        """F."""
        return f"{sum(items)} {point.x} {mapping['a']}"

    result = await make(f).run({"items": "[1, 2]", "point": '{"x": 5}', "mapping": '{"a": 3}'})
    assert not result.is_error, result.text
    assert result.text == "3 5 3"


async def test_json_string_that_is_not_a_container_is_still_an_error() -> None:
    def f(items: list[int]) -> int:
        """F."""
        return len(items)

    result = await make(f).run({"items": '"nope"'})
    assert result.is_error and "'items' should be a valid list" in result.text


async def test_null_for_an_optional_parameter_means_its_default() -> None:
    def f(path: str = ".", depth: int = 2) -> str:
        """F."""
        return f"{path}:{depth}"

    result = await make(f).run({"path": None, "depth": None})
    assert result.text == ".:2"


async def test_null_for_a_required_parameter_is_an_error() -> None:
    def f(path: str) -> str:
        """F."""
        return path

    result = await make(f).run({"path": None})
    assert result.is_error and "'path' is required and cannot be null" in result.text


async def test_many_errors_are_capped() -> None:
    def f(a: int, b: int, c: int, d: int, e: int, g: int, h: int, i: int, j: int, k: int) -> int:
        """F."""
        return 0

    result = await make(f).run({})
    assert result.is_error and "and 2 more" in result.text


def test_validate_returns_kwargs_or_raises_tool_error() -> None:
    def f(n: int, tags: list[str] | None = None) -> int:
        """F."""
        return n

    tool = make(f)
    assert tool.validate({"n": "3"}) == {"n": 3, "tags": None}
    with pytest.raises(ToolError) as info:
        tool.validate({"n": "x"})
    assert info.value.type is ToolErrorType.INVALID_TOOL_PARAMS


# --- context ------------------------------------------------------------------------------------


@dataclasses.dataclass
class Deps:
    greeting: str


async def test_context_is_injected_in_any_position() -> None:
    def first(ctx: ToolContext[Deps], name: str) -> str:
        """F."""
        return f"{ctx.deps.greeting} {name} from {ctx.tool_name}"

    def positional_only(ctx: ToolContext, /, name: str) -> str:
        """F."""
        return f"{ctx.agent_id} {name}"

    ctx: ToolContext[Deps] = ToolContext(
        tool_call_id="toolu_1", tool_name="first", agent_id="a1", deps=Deps("hi")
    )
    assert (await make(first).run({"name": "bo"}, ctx)).text == "hi bo from first"
    assert (await make(positional_only).run({"name": "bo"}, ctx)).text == "a1 bo"
    assert "ctx" not in make(first).input_schema["properties"]


async def test_standalone_context_is_made_when_none_given() -> None:
    def f(ctx: ToolContext) -> str:
        """F."""
        ctx.emit("custom", {"k": 1})
        ctx.progress("half", fraction=0.5)
        return f"{ctx.tool_name} {ctx.tool_call_id!r} {len(ctx.events)}"

    assert (await make(f).run({})).text == "f '' 2"


async def test_events_reach_the_sink_from_a_worker_thread() -> None:
    seen: list[tuple[str, Any, str]] = []

    def f(n: int, ctx: ToolContext) -> str:
        """F."""
        for i in range(n):
            ctx.progress(f"step {i}", fraction=(i + 1) / n)
        return "done"

    ctx: ToolContext[None] = ToolContext(
        tool_call_id="c1",
        tool_name="f",
        event_sink=lambda e: seen.append((e.event, e.data, e.tool_call_id)),
    )
    result = await make(f).run({"n": 2}, ctx)
    assert result.text == "done"
    assert seen == [
        ("progress", {"message": "step 0", "fraction": 0.5}, "c1"),
        ("progress", {"message": "step 1", "fraction": 1.0}, "c1"),
    ]


def test_progress_fraction_is_checked() -> None:
    ctx: ToolContext[None] = ToolContext()
    with pytest.raises(ValueError, match=r"between 0\.0 and 1\.0"):
        ctx.progress("x", fraction=1.5)


def test_for_call_shares_ids_deps_and_sink() -> None:
    sink: list[Any] = []
    base: ToolContext[Deps] = ToolContext(
        agent_id="a", session_id="s", deps=Deps("x"), event_sink=sink.append
    )
    call = base.for_call(tool_name="t", tool_call_id="c")
    assert (call.agent_id, call.session_id, call.deps, call.tool_call_id) == (
        "a",
        "s",
        base.deps,
        "c",
    )
    call.emit("e")
    assert len(sink) == 1 and base.events == []


# --- results ------------------------------------------------------------------------------------


class Weather(BaseModel):
    city: str
    celsius: float


@dataclasses.dataclass
class Point:
    x: int
    y: int


@pytest.mark.parametrize(
    ("value", "text", "details"),
    [
        ("plain", "plain", None),
        (None, EMPTY_RESULT_TEXT, None),
        ({"a": [1, 2]}, '{"a":[1,2]}', {"a": [1, 2]}),
        ([1, "b"], '[1,"b"]', [1, "b"]),
        (
            Weather(city="Oslo", celsius=-3.5),
            '{"city":"Oslo","celsius":-3.5}',
            {"city": "Oslo", "celsius": -3.5},
        ),
        (Point(1, 2), '{"x":1,"y":2}', {"x": 1, "y": 2}),
        (3, "3", 3),
        (True, "true", True),
    ],
)
async def test_return_values_become_results(value: Any, text: str, details: Any) -> None:
    def f() -> Any:
        """F."""
        return value

    result = await make(f).run({})
    assert not result.is_error
    assert result.content == (TextBlock(text=text),)
    assert result.details == details


async def test_images_become_image_blocks() -> None:
    def raw() -> bytes:
        """F."""
        return PNG

    def wrapped() -> Image:
        """F."""
        return Image(data=b"\xff\xd8\xff\xe0rest", media_type="image/jpeg")

    r1 = await make(raw).run({})
    assert r1.content == (ImageBlock(data=PNG, media_type="image/png"),)
    block = r1.to_block("t1")
    assert block["content"][0]["source"]["media_type"] == "image/png"
    r2 = await make(wrapped).run({})
    assert isinstance(r2.content[0], ImageBlock) and r2.content[0].media_type == "image/jpeg"


async def test_bytes_that_are_not_an_image_are_an_error() -> None:
    def f() -> bytes:
        """F."""
        return b"hello"

    result = await make(f).run({})
    assert result.is_error and result.error_type is ToolErrorType.INVALID_RESULT
    assert "5 bytes that are not a recognised image" in result.text


async def test_unserialisable_return_is_an_error_naming_the_type() -> None:
    class Opaque:
        pass

    def f() -> object:
        """F."""
        return Opaque()

    result = await make(f).run({})
    assert result.is_error and result.error_type is ToolErrorType.INVALID_RESULT
    assert "returned an Opaque that cannot be shown to a model" in result.text


async def test_tool_result_passes_through() -> None:
    custom = json_result({"k": 1})

    def f() -> ToolResult:
        """F."""
        return custom

    assert await make(f).run({}) is custom


def test_to_block_shape() -> None:
    block = json_result({"a": 1}).to_block("toolu_9")
    assert block == {
        "type": "tool_result",
        "tool_use_id": "toolu_9",
        "content": [{"type": "text", "text": '{"a":1}'}],
        "is_error": False,
    }


# --- errors -------------------------------------------------------------------------------------


async def test_tool_error_becomes_its_message() -> None:
    def f(path: str) -> str:
        """F."""
        raise ToolError(
            f"{path} does not exist; list the folder first.",
            type=ToolErrorType.FILE_NOT_FOUND,
            details={"path": path},
        )

    result = await make(f).run({"path": "a.txt"})
    assert result.is_error and result.error_type is ToolErrorType.FILE_NOT_FOUND
    assert result.text == "a.txt does not exist; list the folder first."
    assert result.details == {"path": "a.txt"}


async def test_other_exceptions_name_type_and_message_and_log_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def boom(n: int) -> int:
        """F."""
        return 10 // n

    with caplog.at_level(logging.DEBUG, logger="kode.tools"):
        result = await make(boom).run({"n": 0})
    assert result.is_error and result.error_type is ToolErrorType.EXECUTION_FAILED
    assert (
        result.text == "Tool 'boom' failed: ZeroDivisionError: integer division or modulo by zero"
    )
    assert "Traceback" not in result.text
    warning, debug = caplog.records
    assert warning.levelno == logging.WARNING and warning.exc_info is None
    assert warning.getMessage().startswith(
        "Tool 'boom' raised ZeroDivisionError: integer division or modulo by zero"
    )
    assert debug.levelno == logging.DEBUG and debug.exc_info is not None


def test_a_handled_tool_error_prints_one_line_in_library_use(tmp_path: Path) -> None:
    # Nothing configures logging in a script: Python's last-resort handler prints warnings.
    script = tmp_path / "script.py"
    script.write_text(
        "from kode import define_tool\n"
        "@define_tool(registry=None)\n"
        "def boom(n: int) -> int:\n"
        "    '''Divide.'''\n"
        "    return 10 // n\n"
        "print(boom.run_sync({'n': 0}).text)\n"
    )
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip().startswith("Tool 'boom' failed: ZeroDivisionError")
    assert done.stderr.splitlines() == [
        "Tool 'boom' raised ZeroDivisionError: integer division or modulo by zero"
    ]


async def test_async_tool_errors_too() -> None:
    async def f() -> str:
        """F."""
        raise KeyError("missing")

    result = await make(f).run({})
    assert result.text == "Tool 'f' failed: KeyError: 'missing'"


# --- timeouts and cancellation ------------------------------------------------------------------


async def test_async_timeout_cancels_the_tool() -> None:
    finished = False
    cancelled = False

    async def slow(ctx: ToolContext) -> str:
        """F."""
        nonlocal finished, cancelled
        try:
            await anyio.sleep(5)
        except anyio.get_cancelled_exc_class():
            cancelled = True
            raise
        finished = True
        return "late"

    tool = make(slow, timeout=0.05)
    result = await tool.run({})
    assert result.is_error and result.error_type is ToolErrorType.TIMEOUT
    assert result.text == "Tool 'slow' timed out after 0.05 s."
    assert cancelled and not finished


async def test_sync_timeout_discards_the_result_and_signals_the_thread() -> None:
    release = threading.Event()
    saw_cancel = threading.Event()

    def stubborn(ctx: ToolContext) -> str:
        """F."""
        release.wait(5)
        if ctx.cancelled:
            saw_cancel.set()
        return "late"

    tool = make(stubborn, timeout=0.05)
    result = await tool.run({})
    assert result.error_type is ToolErrorType.TIMEOUT
    assert "still running in a worker thread" in result.text
    release.set()
    await anyio.to_thread.run_sync(saw_cancel.wait, 5)
    assert saw_cancel.is_set()


async def test_cooperative_sync_tool_stops_via_raise_if_cancelled() -> None:
    stopped = threading.Event()

    def loop(ctx: ToolContext) -> str:
        """F."""
        for _ in range(500):
            try:
                ctx.raise_if_cancelled()
            except ToolError:
                stopped.set()
                raise
            time.sleep(0.01)
        return "finished"

    result = await make(loop, timeout=0.05).run({})
    assert result.error_type is ToolErrorType.TIMEOUT
    await anyio.to_thread.run_sync(stopped.wait, 5)
    assert stopped.is_set()


async def test_cancellation_of_the_caller_propagates() -> None:
    started = anyio.Event()
    ctx: ToolContext[None] = ToolContext()

    async def forever(ctx: ToolContext) -> str:
        """F."""
        started.set()
        await anyio.sleep(10)
        return "never"

    tool = make(forever)
    outcome: list[Any] = []
    async with anyio.create_task_group() as tg:

        async def call() -> None:
            outcome.append(await tool.run({}, ctx))

        tg.start_soon(call)
        await started.wait()
        tg.cancel_scope.cancel()
    assert outcome == []  # no result was made up: the cancellation went through
    assert ctx.cancelled


async def test_cancellation_of_a_thread_tool_propagates_without_waiting() -> None:
    release = threading.Event()
    ctx: ToolContext[None] = ToolContext()

    def blocking(ctx: ToolContext) -> str:
        """F."""
        release.wait(5)
        return "x"

    tool = make(blocking)
    with anyio.move_on_after(0.05) as scope:
        await tool.run({}, ctx)
    release.set()
    assert scope.cancelled_caught and ctx.cancelled


async def test_inline_sync_tool_runs_in_the_event_loop_thread() -> None:
    loop_thread = threading.get_ident()

    def where() -> bool:
        """F."""
        return threading.get_ident() == loop_thread

    assert (await make(where, run_in_thread=False).run({})).text == "true"
    assert (await make(where).run({})).text == "false"


async def test_parallel_calls_are_independent() -> None:
    async def echo(n: int) -> int:
        """F."""
        await anyio.sleep(0.01)
        return n

    tool = make(echo)
    results: dict[int, ToolResult] = {}
    async with anyio.create_task_group() as tg:
        for i in range(50):

            async def one(i: int = i) -> None:
                results[i] = await tool.run({"n": i})

            tg.start_soon(one)
    assert [results[i].details for i in range(50)] == list(range(50))


async def test_string_annotations_resolve_classes_local_to_the_defining_function() -> None:
    class Point(BaseModel):  # shadows the module-level dataclass of the same name
        label: str

    @define_tool(registry=None)
    def bare_options(p: Point) -> str:
        """F."""
        return p.label

    def plain(p: Point) -> str:
        """F."""
        return p.label

    for tool in (bare_options, define_tool(plain, registry=None), make(plain)):
        assert tool.input_schema["$defs"]["Point"]["required"] == ["label"]
        assert (await tool.run({"p": {"label": "here"}})).text == "here"
