"""The fault suite: whatever a model or a tool does, every tool_use gets exactly one tool_result
and the agent's state still saves and loads."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from typing import Any

import anyio
import pytest
from support import assert_history_valid, make_agent

from kode import define_tool
from kode.agent import AgentState
from kode.agent.text import CUT_MARK, clean_value
from kode.models import Message, ScriptedModel, ToolResultContent, tool_use
from kode.models.messages import TextContent, ThinkingContent, ToolUseContent
from kode.registries import ToolRegistry
from kode.tools.results import MAX_ITERATOR_ITEMS
from kode.tools.validation import MAX_INPUT_DEPTH

pytestmark = pytest.mark.anyio


@pytest.fixture
def tools(reg: ToolRegistry) -> ToolRegistry:
    @define_tool(registry=reg, kind="read")
    def echo(text: str) -> str:
        """Echo."""
        return f"echo {text}"

    @define_tool(registry=reg, kind="read")
    def boom(kind: str) -> str:
        """Raise what it is told to."""
        if kind == "keyboard":
            raise KeyboardInterrupt
        if kind == "exit":
            raise SystemExit(3)
        if kind == "generator-exit":
            raise GeneratorExit
        return "fine"

    @define_tool(registry=reg, kind="read")
    async def nap() -> str:
        """Sleep a little."""
        await anyio.sleep(0.2)
        return "rested"

    @define_tool(registry=reg, kind="read")
    def keep(data: Any = None) -> str:
        """Keep any value."""
        return "kept"

    @define_tool(registry=reg, kind="read")
    def surrogate() -> str:
        """Return a lone surrogate."""
        return "bad \ud800 text"

    @define_tool(registry=reg, kind="read")
    def endless() -> Iterator[int]:
        """Count for ever."""
        n = 0
        while True:
            n += 1
            yield n

    @define_tool(registry=reg, kind="read")
    async def endless_async() -> Any:
        """Count for ever, from an async tool."""

        def count() -> Iterator[int]:
            n = 0
            while True:
                n += 1
                yield n

        return count()

    return reg


def assert_saved_and_loaded(messages: Sequence[Message], state: AgentState) -> None:
    """Each tool_use answered once, ids unique, and the state round-trips through JSON."""
    assert_history_valid(messages)
    ids = [c.id for m in messages for c in m.tool_uses]
    assert len(ids) == len(set(ids)), f"repeated tool_use ids: {ids}"
    answered = [
        b.tool_use_id for m in messages for b in m.content if isinstance(b, ToolResultContent)
    ]
    assert sorted(answered) == sorted(ids)
    text = state.model_dump_json()
    again = AgentState.model_validate_json(text)
    assert again.model_dump_json() == text
    json.loads(text.encode("utf-8"))  # valid UTF-8 JSON, as a provider would be sent


# --- duplicate call ids ---------------------------------------------------------------------


async def test_three_calls_with_one_id_run_once_and_the_history_stays_valid(
    tools: ToolRegistry,
) -> None:
    turn = [tool_use("echo", {"text": str(i)}, id="d") for i in range(3)]
    agent, model = make_agent(tools, [turn, "done"])
    reply = await agent.send("go")
    assert reply.text == "done"
    results = [b for b in agent.messages[2].content if isinstance(b, ToolResultContent)]
    assert results[0].text == "echo 0"
    for duplicate in results[1:]:
        assert duplicate.is_error
        assert "was not run: its call id 'd' was already used" in duplicate.text
    assert [c.id for c in agent.messages[1].tool_uses] == ["d", "d_dup1", "d_dup2"]
    # the next request carries the repaired history
    assert model.requests[1].messages[1].tool_uses[1].id == "d_dup1"
    assert_saved_and_loaded(agent.messages, agent.state)
    assert [r.status for r in agent.state.tool_calls] == ["done", "failed", "failed"]


async def test_a_thousand_calls_with_one_id(tools: ToolRegistry) -> None:
    turn = [tool_use("echo", {"text": "x"}, id="same") for _ in range(1000)]
    agent, _ = make_agent(tools, [turn, "done"])
    await agent.send("go")
    results = [b for b in agent.messages[2].content if isinstance(b, ToolResultContent)]
    assert len(results) == 1000
    assert sum(not r.is_error for r in results) == 1
    assert_saved_and_loaded(agent.messages, agent.state)


async def test_an_id_from_an_earlier_turn_and_an_empty_id(tools: ToolRegistry) -> None:
    agent, _ = make_agent(
        tools,
        [
            [tool_use("echo", {"text": "first"}, id="a")],
            [
                tool_use("echo", {"text": "again"}, id="a"),
                ToolUseContent(id="", name="echo", input={"text": "e"}),
            ],
            "done",
        ],
    )
    await agent.send("go")
    second = [b for b in agent.messages[4].content if isinstance(b, ToolResultContent)]
    assert "its call id 'a' was already used" in second[0].text
    assert "it came without a call id" in second[1].text
    assert all(c.id for m in agent.messages for c in m.tool_uses)
    assert_saved_and_loaded(agent.messages, agent.state)


# --- text that cannot be encoded ----------------------------------------------------------------


async def test_lone_surrogates_everywhere_still_save(tools: ToolRegistry) -> None:
    turn: list[Any] = [
        "model text \udfff ",
        tool_use("surrogate", {}, id="s1"),
        tool_use("echo", {"text": "in \ud800 put"}, id="s2"),
    ]
    agent, _ = make_agent(tools, [turn, "bye \ud801"])
    reply = await agent.send("prompt \ud800 here")
    assert "\ufffd" in reply.text
    assert_saved_and_loaded(agent.messages, agent.state)
    first = agent.messages[0].content[0]
    assert isinstance(first, TextContent) and first.text == "prompt \ufffd here"
    result = agent.messages[2].content[0]
    assert isinstance(result, ToolResultContent) and result.text == "bad \ufffd text"
    assert agent.messages[1].tool_uses[1].input == {"text": "in \ufffd put"}


async def test_a_valid_surrogate_pair_becomes_its_character(tools: ToolRegistry) -> None:
    thinking = ThinkingContent(thinking="pair \ud83d\ude00 alone \ud800")
    agent, _ = make_agent(tools, [[thinking, "ok"]])
    await agent.send("go")
    block = agent.messages[1].content[0]
    assert isinstance(block, ThinkingContent) and block.thinking == "pair \U0001f600 alone \ufffd"
    assert_saved_and_loaded(agent.messages, agent.state)


# --- input nested too deeply -----------------------------------------------------------------


def nested(depth: int, leaf: Any = "x \ud800") -> Any:
    """`leaf` inside `depth` lists."""
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize("form", ["object", "json"])
@pytest.mark.parametrize("depth", [MAX_INPUT_DEPTH, 600, 990, 5000])
async def test_input_nested_too_deeply_is_invalid_arguments_never_an_exception(
    tools: ToolRegistry, depth: int, form: str
) -> None:
    raw: Any = {"data": nested(depth)}
    if form == "json":  # as a provider's model would have sent it, before parsing
        raw = '{"data": ' + "[" * depth + '"x"' + "]" * depth + "}"
    agent, model = make_agent(tools, [[tool_use("keep", raw, id="k")], "ok"])
    reply = await agent.send("go")
    assert reply.text == "ok"
    result = agent.messages[2].content[0]
    assert isinstance(result, ToolResultContent)
    assert result.is_error
    assert f"nested more than {MAX_INPUT_DEPTH} levels deep" in result.text
    assert_saved_and_loaded(agent.messages, agent.state)
    for message in model.requests[1].messages:  # the next request could be sent
        message.model_dump_json()


async def test_input_at_the_depth_limit_runs_and_one_level_more_is_refused(
    tools: ToolRegistry,
) -> None:
    # the arguments object is level 1: data holds MAX - 1 levels of lists
    ok = tool_use("keep", {"data": nested(MAX_INPUT_DEPTH - 1, 1)}, id="ok")
    deep = tool_use("keep", {"data": nested(MAX_INPUT_DEPTH, 1)}, id="deep")
    agent, _ = make_agent(tools, [[ok, deep], "done"])
    await agent.send("go")
    results = [b for b in agent.messages[2].content if isinstance(b, ToolResultContent)]
    assert (results[0].text, results[0].is_error) == ("kept", False)
    assert results[1].is_error and "nested more than" in results[1].text
    # both calls are kept as the model sent them: they are not deep enough to be cut
    assert agent.messages[1].tool_uses[1].input == {"data": nested(MAX_INPUT_DEPTH, 1)}
    assert_saved_and_loaded(agent.messages, agent.state)


async def test_the_history_keeps_a_deep_input_cut_below_the_limit(tools: ToolRegistry) -> None:
    agent, _ = make_agent(tools, [[tool_use("keep", {"data": nested(5000, 1)}, id="k")], "ok"])
    await agent.send("go")
    kept: Any = agent.messages[1].tool_uses[0].input
    depth = 1  # the arguments object
    value = kept["data"]
    while isinstance(value, list):
        depth += 1
        value = value[0]
    assert depth == MAX_INPUT_DEPTH + 1  # one level past the limit: still refused if replayed
    assert value == CUT_MARK
    assert_saved_and_loaded(agent.messages, agent.state)


def test_clean_value_does_not_recurse() -> None:
    cleaned_list = clean_value(nested(50_000))
    for _ in range(50_000):  # walked, not compared: == on such lists recurses
        assert isinstance(cleaned_list, list) and len(cleaned_list) == 1
        cleaned_list = cleaned_list[0]
    assert cleaned_list == "x \ufffd"
    deep_dict: Any = "\udfff"
    for _ in range(50_000):
        deep_dict = {"k\ud800": deep_dict}
    cleaned = clean_value(deep_dict)
    for _ in range(50_000):
        cleaned = cleaned["k\ufffd"]
    assert cleaned == "\ufffd"


# --- tools raising what is not an Exception -------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "raised"), [("keyboard", KeyboardInterrupt), ("exit", SystemExit)]
)
async def test_keyboard_interrupt_and_system_exit_answer_every_call_first(
    tools: ToolRegistry, kind: str, raised: type[BaseException]
) -> None:
    turn = [
        tool_use("nap", {}, id="a"),
        tool_use("boom", {"kind": kind}, id="b"),
        tool_use("echo", {"text": "x"}, id="c"),
    ]
    agent, _ = make_agent(tools, [turn, "never"])
    with pytest.raises(BaseException) as caught:
        await agent.send("go")
    assert type(caught.value) is raised  # itself, not wrapped in an exception group
    assert agent.status == "failed"
    assert_saved_and_loaded(agent.messages, agent.state)
    results = {
        b.tool_use_id: b for b in agent.messages[-1].content if isinstance(b, ToolResultContent)
    }
    assert set(results) == {"a", "b", "c"}
    assert "was cancelled" in results["b"].text
    # the agent goes on afterwards
    agent.model = ScriptedModel(["after"])
    assert (await agent.send("again")).text == "after"
    assert_saved_and_loaded(agent.messages, agent.state)


async def test_generator_exit_from_a_tool_is_a_failure_not_a_crash(tools: ToolRegistry) -> None:
    agent, _ = make_agent(tools, [[tool_use("boom", {"kind": "generator-exit"}, id="g")], "ok"])
    reply = await agent.send("go")
    assert reply.text == "ok"
    result = agent.messages[2].content[0]
    assert isinstance(result, ToolResultContent) and result.is_error
    assert "failed: GeneratorExit" in result.text
    assert_saved_and_loaded(agent.messages, agent.state)


# --- endless results --------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["endless", "endless_async"])
async def test_an_endless_generator_result_is_cut_without_holding_the_loop(
    tools: ToolRegistry, name: str
) -> None:
    agent, _ = make_agent(tools, [[tool_use(name, {}, id="e")], "ok"])
    gaps: list[float] = []
    finished = anyio.Event()

    async def ticker() -> None:
        last = time.perf_counter()
        while not finished.is_set():
            await anyio.sleep(0.005)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    async with anyio.create_task_group() as tg:
        tg.start_soon(ticker)
        with anyio.fail_after(60):
            reply = await agent.send("go")
        finished.set()
    assert reply.text == "ok"
    result = agent.messages[2].content[0]
    assert isinstance(result, ToolResultContent) and result.is_error
    assert f"more than {MAX_ITERATOR_ITEMS:,} items" in result.text
    # The cut happens in a worker thread: the loop kept ticking. (A generous bound: the point
    # is "not held for the whole conversion", on a shared, noisy machine.)
    assert gaps and max(gaps) < 1.0


async def test_the_timeout_covers_turning_the_value_into_a_result(reg: ToolRegistry) -> None:
    def slow() -> Iterator[int]:
        time.sleep(3)
        yield 1

    @define_tool(registry=reg, kind="read", timeout=0.3)
    async def slow_value() -> Any:
        """Return something slow to turn into a result."""
        return slow()

    started = time.perf_counter()
    result = await slow_value.run({})
    assert result.is_error and result.error_type is not None
    assert result.error_type.value == "timeout"
    assert time.perf_counter() - started < 4
