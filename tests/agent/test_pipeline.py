"""The pipeline for one tool_use, step by step; every failure is a tool_result, the loop goes on."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import anyio
import pytest
from support import assert_history_valid, make_agent, sent_results, texts

from kode import ToolContext, ToolError, ToolErrorType, define_tool
from kode.agent import AgentHooks, ApprovalDecision, ApprovalRequest, ToolEnd, ToolStart
from kode.models import TextContent, ToolResultContent, tool_use
from kode.registries import ToolRegistry

pytestmark = pytest.mark.anyio


@dataclass
class Deps:
    greeting: str


@pytest.fixture
def tools(reg: ToolRegistry) -> ToolRegistry:
    @define_tool(registry=reg, kind="read")
    def add(a: int, b: int) -> int:
        """Add two numbers.

        Args:
            a: The first.
            b: The second.
        """
        return a + b

    @define_tool(registry=reg, kind="search")
    def search(query: str) -> str:
        """Search for something.

        Args:
            query: What to look for.
        """
        return f"found {query}"

    @define_tool(registry=reg, kind="edit")
    def write(path: str) -> str:
        """Write a file.

        Args:
            path: The file.
        """
        return f"wrote {path}"

    @define_tool(registry=reg)
    def boom(reason: str = "nope") -> None:
        """Always fails.

        Args:
            reason: The message.
        """
        raise ValueError(reason)

    @define_tool(registry=reg)
    def refuse() -> None:
        """Fails on purpose."""
        raise ToolError("Give me a path first.", type=ToolErrorType.FILE_NOT_FOUND)

    @define_tool(registry=reg)
    def whoami(ctx: ToolContext[Deps | None]) -> dict[str, Any]:
        """Report the call's context."""
        return {
            "call": ctx.tool_call_id,
            "tool": ctx.tool_name,
            "agent": ctx.agent_id,
            "session": ctx.session_id,
            "deps": ctx.deps.greeting if ctx.deps is not None else None,
        }

    @define_tool(registry=reg)
    def big(n: int) -> str:
        """Return n characters.

        Args:
            n: How many.
        """
        return "x" * n

    return reg


AVAILABLE = "Available tools: add, big, boom, refuse, search, whoami, write."


async def run_one(registry: ToolRegistry, call: Any, **template: Any) -> ToolResultContent:
    agent, model = make_agent(registry, [[call], "ok"], **template)
    reply = await agent.send("go")
    assert reply.text == "ok"  # the model got the next turn
    assert len(model.requests) == 2
    assert_history_valid(agent.messages)
    (result,) = sent_results(model)
    assert result.tool_use_id == call.id
    return result


# --- 1. lookup ---------------------------------------------------------------------------------


async def test_unknown_tool_lists_the_available_tools_and_the_closest(tools: ToolRegistry) -> None:
    result = await run_one(tools, tool_use("serch", {"query": "x"}))
    assert texts([result]) == [
        (f"Tool 'serch' is not available. Did you mean 'search'? {AVAILABLE}", True)
    ]


async def test_unknown_tool_without_a_close_name(tools: ToolRegistry) -> None:
    result = await run_one(tools, tool_use(" qqqqqq ", {}))
    assert texts([result]) == [(f"Tool 'qqqqqq' is not available. {AVAILABLE}", True)]


async def test_unknown_tool_with_no_tools_at_all(reg: ToolRegistry) -> None:
    result = await run_one(reg, tool_use("add", {}), tools=[])
    assert texts([result]) == [("Tool 'add' is not available. Available tools: none.", True)]


@pytest.mark.parametrize("name", ["  add ", "ADD", "Add\n"])
async def test_stray_spaces_and_case_reach_the_tool(tools: ToolRegistry, name: str) -> None:
    agent, model = make_agent(tools, [[tool_use(name, {"a": 1, "b": 2}, id="c1")], "ok"])
    reply = await agent.send("go")
    assert texts(sent_results(model)) == [("3", False)]
    (start,) = [e for e in reply.events if isinstance(e, ToolStart)]
    assert start.name == "add"


async def test_an_alias_reaches_the_tool(tools: ToolRegistry) -> None:
    tools.add_alias("plus", "add")
    result = await run_one(tools, tool_use("plus", {"a": 2, "b": 2}))
    assert texts([result]) == [("4", False)]


# --- 2. validation -----------------------------------------------------------------------------


async def test_malformed_json_string_input(tools: ToolRegistry) -> None:
    result = await run_one(tools, tool_use("add", '{"a": 1,'))
    assert result.is_error
    assert result.text == (
        "Invalid arguments for tool 'add': the arguments are not valid JSON (Expecting property "
        "name enclosed in double quotes: line 1 column 9 (char 8)). Send a JSON object."
    )


async def test_a_json_string_that_is_valid_is_used(tools: ToolRegistry) -> None:
    result = await run_one(tools, tool_use("add", '{"a": 1, "b": 2}'))
    assert texts([result]) == [("3", False)]


async def test_input_that_is_not_an_object(tools: ToolRegistry) -> None:
    result = await run_one(tools, tool_use("add", "[1, 2]"))
    assert texts([result]) == [
        (
            "Invalid arguments for tool 'add': expected a JSON object with the parameters by "
            "name, got list [1, 2].",
            True,
        )
    ]


async def test_arguments_for_the_wrong_tool(tools: ToolRegistry) -> None:
    result = await run_one(tools, tool_use("add", {"query": "redis"}))
    assert texts([result]) == [
        (
            "Invalid arguments for tool 'add': 'a' is required but missing; 'b' is required but "
            "missing; 'query' is not a parameter of this tool (parameters: a, b). Fix the "
            "arguments and call the tool again.",
            True,
        )
    ]


async def test_validation_error(tools: ToolRegistry) -> None:
    result = await run_one(tools, tool_use("add", {"a": "one", "b": 2}))
    assert texts([result]) == [
        (
            "Invalid arguments for tool 'add': 'a' should be a valid integer, unable to parse "
            'string as an integer, got "one". Fix the arguments and call the tool again.',
            True,
        )
    ]


# --- 3. permission -----------------------------------------------------------------------------


async def test_permission_deny(tools: ToolRegistry) -> None:
    result = await run_one(tools, tool_use("write", {"path": "a"}), permission={"deny": ["wr*"]})
    assert texts([result]) == [
        ("Tool 'write' was not run: tool 'write' is denied by the agent's settings.", True)
    ]


async def test_a_raising_requires_approval_function_is_an_error_result(reg: ToolRegistry) -> None:
    def check(args: dict[str, Any]) -> bool:
        raise KeyError("mode")

    @define_tool(registry=reg, requires_approval=check)
    def act() -> str:
        """Act."""
        return "acted"

    result = await run_one(reg, tool_use("act", {}))
    assert result.is_error
    assert result.text == "Tool 'act' was not run: its permission check raised KeyError: 'mode'"


async def test_a_raising_approver_is_an_error_result(tools: ToolRegistry) -> None:
    async def approver(request: ApprovalRequest) -> ApprovalDecision:
        raise RuntimeError("approval service down")

    result = await run_one(
        tools,
        tool_use("write", {"path": "a"}),
        permission={"mode": "approval"},
        create={"approver": approver},
    )
    assert texts([result]) == [
        (
            "Tool 'write' was not run: asking for approval failed: RuntimeError: approval "
            "service down",
            True,
        )
    ]


# --- 5. context ----------------------------------------------------------------------------------


async def test_context_injection(tools: ToolRegistry) -> None:
    agent, model = make_agent(
        tools,
        [[tool_use("whoami", {}, id="call_7")], "ok"],
        create={"deps": Deps(greeting="hi"), "agent_id": "ag", "session_id": "se"},
    )
    await agent.send("go")
    assert sent_results(model)[0].text == (
        '{"call":"call_7","tool":"whoami","agent":"ag","session":"se","deps":"hi"}'
    )
    assert "ctx" not in tools.get("whoami").input_schema["properties"]


# --- 6. execution --------------------------------------------------------------------------------


async def test_a_raising_tool(tools: ToolRegistry) -> None:
    result = await run_one(tools, tool_use("boom", {"reason": "disk full"}))
    assert texts([result]) == [("Tool 'boom' failed: ValueError: disk full", True)]


async def test_a_tool_error(tools: ToolRegistry) -> None:
    agent, model = make_agent(tools, [[tool_use("refuse", {}, id="c1")], "ok"])
    await agent.send("go")
    assert texts(sent_results(model)) == [("Give me a path first.", True)]
    assert agent.state.tool_calls[0].error_type == "file_not_found"


async def test_timeout_from_the_template(reg: ToolRegistry) -> None:
    seen: list[ToolContext[Any]] = []

    @define_tool(registry=reg)
    async def slow(ctx: ToolContext) -> str:
        """Never finishes."""
        seen.append(ctx)
        await anyio.sleep_forever()
        return "never"

    result = await run_one(reg, tool_use("slow", {}), tool_timeout=0.05)
    assert texts([result]) == [("Tool 'slow' timed out after 0.05 s.", True)]
    assert seen[0].cancelled


async def test_the_tools_own_timeout_wins_over_the_template(reg: ToolRegistry) -> None:
    @define_tool(registry=reg, timeout=0.02)
    async def slow() -> str:
        """Never finishes."""
        await anyio.sleep_forever()
        return "never"

    result = await run_one(reg, tool_use("slow", {}), tool_timeout=60)
    assert texts([result]) == [("Tool 'slow' timed out after 0.02 s.", True)]


async def test_a_huge_output_is_truncated_with_a_marker(tools: ToolRegistry) -> None:
    result = await run_one(tools, tool_use("big", {"n": 250}), max_result_chars=100)
    assert not result.is_error
    assert result.content == [
        TextContent(text="x" * 100),
        TextContent(
            text="[output truncated: 150 of 250 characters left out; ask for less, e.g. a "
            "narrower query or a smaller range]"
        ),
    ]


async def test_output_at_the_limit_is_kept_whole(tools: ToolRegistry) -> None:
    result = await run_one(tools, tool_use("big", {"n": 100}), max_result_chars=100)
    assert texts([result]) == [("x" * 100, False)]


# --- the whole turn ---------------------------------------------------------------------------


async def test_every_failure_is_an_error_result_in_call_order_in_one_message(
    tools: ToolRegistry,
) -> None:
    calls = [
        tool_use("add", {"a": 1, "b": 2}, id="ok"),
        tool_use("nope", {}, id="unknown"),
        tool_use("add", "{", id="malformed"),
        tool_use("add", {"query": "x"}, id="wrong_tool"),
        tool_use("write", {"path": "a"}, id="denied"),
        tool_use("boom", {}, id="raised"),
        tool_use("search", {"query": "q"}, id="ok2"),
    ]
    agent, model = make_agent(tools, [calls, "fixed it"], permission={"mode": "readonly"})
    reply = await agent.send("go")
    assert reply.text == "fixed it"
    results = sent_results(model)
    assert [r.tool_use_id for r in results] == [c.id for c in calls]
    assert [r.is_error for r in results] == [False, True, True, True, True, True, False]
    assert results[4].text == (
        "Tool 'write' was not run: the agent is read-only and tool 'write' is of kind edit."
    )
    ends = [e for e in reply.events if isinstance(e, ToolEnd)]
    assert sorted(e.call_id for e in ends) == sorted(c.id for c in calls)
    statuses = {r.id: r.status for r in agent.state.tool_calls}
    assert statuses == {
        "ok": "done",
        "unknown": "failed",
        "malformed": "failed",
        "wrong_tool": "failed",
        "denied": "denied",
        "raised": "failed",
        "ok2": "done",
    }
    assert_history_valid(agent.messages)


async def test_results_follow_call_order_not_completion_order(reg: ToolRegistry) -> None:
    second_done = anyio.Event()
    finished: list[str] = []

    @define_tool(registry=reg, kind="read")
    async def first() -> str:
        """Waits for the second."""
        await second_done.wait()
        finished.append("first")
        return "one"

    @define_tool(registry=reg, kind="read")
    async def second() -> str:
        """Finishes first."""
        finished.append("second")
        second_done.set()
        return "two"

    agent, model = make_agent(reg, [[tool_use("first"), tool_use("second")], "ok"])
    with anyio.fail_after(5):
        await agent.send("go")
    assert finished == ["second", "first"]
    assert texts(sent_results(model)) == [("one", False), ("two", False)]


async def test_text_and_thinking_around_calls_are_kept_and_the_loop_continues(
    tools: ToolRegistry,
) -> None:
    from kode.models import Message, ThinkingContent

    turn = Message(
        role="assistant",
        content=[
            ThinkingContent(thinking="add them", signature="sig"),
            TextContent(text="Adding."),
            tool_use("add", {"a": 1, "b": 1}, id="a1"),
        ],
    )
    agent, model = make_agent(tools, [turn, [tool_use("add", {"a": 2, "b": 2}, id="a2")], "4"])
    reply = await agent.send("go")
    assert reply.text == "4"
    assert reply.turns == 3
    assert agent.messages[1] == turn
    assert texts(sent_results(model, 1)) == [("2", False)]
    assert texts(sent_results(model, 2)) == [("4", False)]
    assert_history_valid(agent.messages)


async def test_a_hook_raising_on_one_call_does_not_affect_the_other(tools: ToolRegistry) -> None:
    def pre(call: Any, ctx: ToolContext[Any]) -> None:
        if call.id == "bad":
            raise RuntimeError("hook bug")

    agent, model = make_agent(
        tools,
        [[tool_use("add", {"a": 1, "b": 1}, id="bad"), tool_use("add", {"a": 1, "b": 2})], "ok"],
        hooks=AgentHooks(pre_tool_use=[pre]),
    )
    await agent.send("go")
    assert texts(sent_results(model)) == [
        ("Tool 'add' was not run: a pre_tool_use hook raised RuntimeError: hook bug", True),
        ("3", False),
    ]
