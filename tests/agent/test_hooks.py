"""Hooks: pre_tool_use allows, denies, rewrites or answers; post_tool_use replaces or amends."""

from __future__ import annotations

from typing import Any

import anyio
import anyio.lowlevel
import pytest
from support import make_agent, of_type, sent_results, texts

from kode import ToolContext, define_tool
from kode.agent import AgentHooks, Allow, Deny, Respond, RewriteInput, ToolStart
from kode.models import ToolUseContent, tool_use
from kode.registries import ToolRegistry
from kode.tools import ToolErrorType, ToolResult, error_result, text_result

pytestmark = pytest.mark.anyio


@pytest.fixture
def ran() -> list[dict[str, Any]]:
    return []


@pytest.fixture
def tools(reg: ToolRegistry, ran: list[dict[str, Any]]) -> ToolRegistry:
    @define_tool(registry=reg, kind="read")
    def add(a: int, b: int) -> int:
        """Add two numbers.

        Args:
            a: The first.
            b: The second.
        """
        ran.append({"add": (a, b)})
        return a + b

    @define_tool(registry=reg, kind="read")
    def echo(text: str) -> str:
        """Echo a text.

        Args:
            text: The text.
        """
        ran.append({"echo": text})
        return text

    return reg


async def run(
    tools: ToolRegistry, call: ToolUseContent, hooks: AgentHooks, *, in_create: bool = False
) -> tuple[list[tuple[str, bool]], Any]:
    where: dict[str, Any] = {"create": {"hooks": hooks}} if in_create else {"hooks": hooks}
    agent, model = make_agent(tools, [[call], "ok"], **where)
    reply = await agent.send("go")
    return texts(sent_results(model)), (agent, reply)


ADD = tool_use("add", {"a": 1, "b": 2}, id="c1")


# --- pre_tool_use -------------------------------------------------------------------------------


async def test_none_lets_the_call_go_on(tools: ToolRegistry, ran: list[Any]) -> None:
    seen: list[tuple[str, str, Any]] = []

    def pre(call: ToolUseContent, ctx: ToolContext[Any]) -> None:
        seen.append((call.id, ctx.tool_call_id, call.input))

    results, _ = await run(tools, ADD, AgentHooks(pre_tool_use=[pre]))
    assert results == [("3", False)]
    assert seen == [("c1", "c1", {"a": 1, "b": 2})]
    assert ran == [{"add": (1, 2)}]


async def test_allow_skips_the_remaining_pre_hooks(tools: ToolRegistry) -> None:
    later: list[str] = []
    results, _ = await run(
        tools,
        ADD,
        AgentHooks(pre_tool_use=[lambda c, x: Allow(), lambda c, x: later.append("x")]),
    )
    assert results == [("3", False)]
    assert later == []


async def test_allow_does_not_override_the_permission_check(tools: ToolRegistry) -> None:
    agent, model = make_agent(
        tools,
        [[ADD], "ok"],
        permission={"deny": ["add"]},
        hooks=AgentHooks(pre_tool_use=[lambda c, x: Allow()]),
    )
    await agent.send("go")
    assert sent_results(model)[0].is_error


async def test_deny_with_a_reason(tools: ToolRegistry, ran: list[Any]) -> None:
    results, (agent, reply) = await run(
        tools, ADD, AgentHooks(pre_tool_use=[lambda c, x: Deny(reason="adding is off today")])
    )
    assert results == [("Tool 'add' was blocked: adding is off today", True)]
    assert ran == []
    assert agent.state.tool_calls[0].status == "denied"
    assert agent.state.tool_calls[0].error_type == "permission_denied"
    assert of_type(reply.events, ToolStart) == []


async def test_rewrite_input(tools: ToolRegistry, ran: list[Any]) -> None:
    results, (_, reply) = await run(
        tools, ADD, AgentHooks(pre_tool_use=[lambda c, x: RewriteInput(input={"a": 10, "b": "5"})])
    )
    assert results == [("15", False)]
    assert ran == [{"add": (10, 5)}]
    (start,) = of_type(reply.events, ToolStart)
    assert start.input == {"a": 10, "b": 5}


async def test_rewrite_into_invalid_input(tools: ToolRegistry, ran: list[Any]) -> None:
    results, _ = await run(
        tools, ADD, AgentHooks(pre_tool_use=[lambda c, x: RewriteInput(input={"a": 1})])
    )
    assert results == [
        (
            "A pre_tool_use hook rewrote the input of 'add' into invalid arguments: Invalid "
            "arguments for tool 'add': 'b' is required but missing. Fix the arguments and call "
            "the tool again.",
            True,
        )
    ]
    assert ran == []


async def test_a_later_hook_runs_after_a_rewrite(tools: ToolRegistry, ran: list[Any]) -> None:
    hooks = AgentHooks(
        pre_tool_use=[
            lambda c, x: RewriteInput(input={"a": 2, "b": 2}),
            lambda c, x: RewriteInput(input={"a": 3, "b": 3}),
        ]
    )
    results, _ = await run(tools, ADD, hooks)
    assert results == [("6", False)]


async def test_later_hooks_see_the_rewritten_call_and_the_history_keeps_the_original(
    tools: ToolRegistry,
) -> None:
    seen: list[tuple[str, Any]] = []

    def look(call: ToolUseContent, ctx: ToolContext) -> None:
        seen.append(("pre", call.input))

    def after(call: ToolUseContent, result: ToolResult, ctx: ToolContext) -> None:
        seen.append(("post", call.input))

    hooks = AgentHooks(
        pre_tool_use=[lambda c, x: RewriteInput(input={"a": 2, "b": 2}), look],
        post_tool_use=[after],
    )
    agent, model = make_agent(tools, [ADD, "ok"], create={"hooks": hooks})
    reply = await agent.send("go")
    assert seen == [("pre", {"a": 2, "b": 2}), ("post", {"a": 2, "b": 2})]
    assert texts(sent_results(model)) == [("4", False)]
    assert of_type(reply.events, ToolStart)[0].input == {"a": 2, "b": 2}
    call = agent.messages[1].content[0]
    assert isinstance(call, ToolUseContent) and call.input == ADD.input


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("cached: 3", ("cached: 3", False)),
        (error_result("no adding", type=ToolErrorType.PERMISSION_DENIED), ("no adding", True)),
    ],
)
async def test_respond_without_running_the_tool(
    tools: ToolRegistry, ran: list[Any], answer: ToolResult | str, expected: tuple[str, bool]
) -> None:
    results, _ = await run(
        tools, ADD, AgentHooks(pre_tool_use=[lambda c, x: Respond(result=answer)])
    )
    assert results == [expected]
    assert ran == []


async def test_a_raising_pre_hook(tools: ToolRegistry, ran: list[Any]) -> None:
    def pre(call: ToolUseContent, ctx: ToolContext[Any]) -> None:
        raise RuntimeError("hook bug")

    results, (agent, _) = await run(tools, ADD, AgentHooks(pre_tool_use=[pre]))
    assert results == [
        ("Tool 'add' was not run: a pre_tool_use hook raised RuntimeError: hook bug", True)
    ]
    assert ran == []
    assert agent.state.tool_calls[0].status == "failed"


async def test_a_respond_with_a_wrong_value_is_still_a_tool_result(tools: ToolRegistry) -> None:
    bad = Respond(result=42)  # type: ignore[arg-type]
    results, (agent, _) = await run(tools, ADD, AgentHooks(pre_tool_use=[lambda c, x: bad]))
    ((text, is_error),) = results
    assert is_error
    assert text.startswith("Tool 'add' could not be run: AttributeError: ")
    assert agent.state.tool_calls[0].status == "failed"


# --- post_tool_use ------------------------------------------------------------------------------


async def test_post_hook_replaces_the_result(tools: ToolRegistry) -> None:
    results, _ = await run(tools, ADD, AgentHooks(post_tool_use=[lambda c, r, x: "replaced"]))
    assert results == [("replaced", False)]


async def test_post_hook_amends_the_result(tools: ToolRegistry) -> None:
    def amend(call: ToolUseContent, result: ToolResult, ctx: ToolContext[Any]) -> ToolResult:
        return text_result(f"{result.text} (checked by {ctx.tool_name})")

    results, _ = await run(tools, ADD, AgentHooks(post_tool_use=[amend]))
    assert results == [("3 (checked by add)", False)]


async def test_post_hook_can_turn_a_result_into_an_error(tools: ToolRegistry) -> None:
    hook = AgentHooks(post_tool_use=[lambda c, r, x: error_result("too big")])
    results, (agent, _) = await run(tools, ADD, hook)
    assert results == [("too big", True)]
    assert agent.state.tool_calls[0].status == "failed"


async def test_post_hook_returning_none_keeps_the_result(tools: ToolRegistry) -> None:
    results, _ = await run(tools, ADD, AgentHooks(post_tool_use=[lambda c, r, x: None]))
    assert results == [("3", False)]


async def test_post_hook_sees_a_respond_answer(tools: ToolRegistry) -> None:
    seen: list[str] = []
    hooks = AgentHooks(
        pre_tool_use=[lambda c, x: Respond(result="cached")],
        post_tool_use=[lambda c, r, x: seen.append(r.text)],
    )
    results, _ = await run(tools, ADD, hooks)
    assert (results, seen) == ([("cached", False)], ["cached"])


async def test_a_raising_post_hook(tools: ToolRegistry, ran: list[Any]) -> None:
    def post(call: ToolUseContent, result: ToolResult, ctx: ToolContext[Any]) -> None:
        raise ValueError("bad post")

    results, _ = await run(tools, ADD, AgentHooks(post_tool_use=[post, lambda c, r, x: "later"]))
    assert results == [
        ("Tool 'add' ran, but a post_tool_use hook raised ValueError: bad post", True)
    ]
    assert ran == [{"add": (1, 2)}]


# --- where hooks come from, and their order -----------------------------------------------------


async def test_template_create_and_per_tool_hooks_in_order(tools: ToolRegistry) -> None:
    log: list[str] = []

    def pre(label: str) -> Any:
        async def hook(call: ToolUseContent, ctx: ToolContext[Any]) -> None:
            await anyio.lowlevel.checkpoint()
            log.append(f"pre {label} {ctx.tool_name}")

        return hook

    def post(label: str) -> Any:
        def hook(call: ToolUseContent, result: ToolResult, ctx: ToolContext[Any]) -> None:
            log.append(f"post {label} {ctx.tool_name}")

        return hook

    template_hooks = AgentHooks(
        pre_tool_use=[pre("T1"), pre("T2")],
        post_tool_use=[post("T")],
        tools={"echo": AgentHooks(pre_tool_use=[pre("Techo")], post_tool_use=[post("Techo")])},
    )
    create_hooks = AgentHooks(
        pre_tool_use=[pre("C")],
        tools={"echo": AgentHooks(pre_tool_use=[pre("Cecho")])},
    )
    agent, _ = make_agent(
        tools,
        [[tool_use("echo", {"text": "x"})], [tool_use("add", {"a": 1, "b": 1})], "ok"],
        hooks=template_hooks,
        create={"hooks": create_hooks},
    )
    await agent.send("go")
    assert log == [
        "pre T1 echo",
        "pre T2 echo",
        "pre C echo",
        "pre Techo echo",
        "pre Cecho echo",
        "post T echo",
        "post Techo echo",
        "pre T1 add",
        "pre T2 add",
        "pre C add",
        "post T add",
    ]


async def test_per_tool_hooks_apply_to_that_tool_only(tools: ToolRegistry) -> None:
    hooks = AgentHooks(tools={"echo": AgentHooks(pre_tool_use=[lambda c, x: Deny(reason="no")])})
    agent, model = make_agent(
        tools,
        [[tool_use("echo", {"text": "x"}), tool_use("add", {"a": 1, "b": 1})], "ok"],
        hooks=hooks,
    )
    await agent.send("go")
    assert texts(sent_results(model)) == [("Tool 'echo' was blocked: no", True), ("2", False)]


async def test_async_hooks_of_each_kind(tools: ToolRegistry) -> None:
    async def pre(call: ToolUseContent, ctx: ToolContext[Any]) -> RewriteInput:
        await anyio.lowlevel.checkpoint()
        return RewriteInput(input={"text": "rewritten"})

    async def post(call: ToolUseContent, result: ToolResult, ctx: ToolContext[Any]) -> str:
        await anyio.lowlevel.checkpoint()
        return result.text.upper()

    results, _ = await run(
        tools,
        tool_use("echo", {"text": "x"}),
        AgentHooks(pre_tool_use=[pre], post_tool_use=[post]),
        in_create=True,
    )
    assert results == [("REWRITTEN", False)]
