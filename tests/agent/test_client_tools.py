"""Client tools: a pending result pauses the run; submit_tool_result and send() continue it."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from support import assert_history_valid, make_agent, of_type, sent_results, texts

from kode import define_tool
from kode.agent import AgentError, AgentState, Done, ToolEnd
from kode.models import TextContent, tool_use
from kode.registries import ToolRegistry
from kode.tools import ToolErrorType, error_result
from kode.tools.declared import declare_tool

pytestmark = pytest.mark.anyio


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

    reg.register(
        declare_tool(
            "ask_user",
            description="Ask the user a question in the app.",
            input_schema={
                "type": "object",
                "properties": {"question": {"type": "string"}},
                "required": ["question"],
            },
            handler=None,
        ),
        source="client",
    )
    reg.register(declare_tool("pick_file", input_schema={"type": "object"}), source="client")
    return reg


TURN = [
    tool_use("add", {"a": 1, "b": 2}, id="c1"),
    tool_use("ask_user", {"question": "colour?"}, id="c2"),
    tool_use("add", {"a": 2, "b": 2}, id="c3"),
    tool_use("pick_file", {}, id="c4"),
]


async def test_a_pending_result_pauses_the_run_until_results_are_submitted(
    tools: ToolRegistry,
) -> None:
    agent, model = make_agent(tools, [["Let me ask.", *TURN], "Blue it is."])
    first = await agent.send("go")
    assert first.pending_calls == ("c2", "c4")
    assert first.text == "Let me ask."
    assert of_type(first.events, Done)[0].pending_calls == ("c2", "c4")
    assert agent.status == "awaiting_client"
    assert len(model.requests) == 1  # paused: the model was not asked again
    ends = {e.call_id: (e.status, e.is_error) for e in of_type(first.events, ToolEnd)}
    assert ends == {
        "c1": ("done", False),
        "c2": ("pending", False),
        "c3": ("done", False),
        "c4": ("pending", False),
    }
    records = {r.id: (r.status, r.client) for r in agent.state.tool_calls}
    assert records == {
        "c1": ("done", False),
        "c2": ("pending", True),
        "c3": ("done", False),
        "c4": ("pending", True),
    }

    agent.submit_tool_result("c4", {"path": "a.txt"})
    agent.submit_tool_result("c2", "blue")
    second = await agent.send()
    assert second.text == "Blue it is."
    assert texts(sent_results(model)) == [
        ("3", False),
        ("blue", False),
        ("4", False),
        ('{"path":"a.txt"}', False),
    ]
    assert {r.id: r.status for r in agent.state.tool_calls} == {
        "c1": "done",
        "c2": "done",
        "c3": "done",
        "c4": "done",
    }
    assert agent.status == "idle"
    assert_history_valid(agent.messages)


async def test_the_pending_call_is_validated_first(tools: ToolRegistry) -> None:
    agent, model = make_agent(tools, [[tool_use("ask_user", {}, id="c1")], "ok"])
    reply = await agent.send("go")
    assert reply.pending_calls == ()
    assert texts(sent_results(model)) == [
        (
            "Invalid arguments for tool 'ask_user': 'question' is required but missing. Fix the "
            "arguments and call the tool again.",
            True,
        )
    ]


async def test_send_before_every_result_is_submitted_is_an_error(tools: ToolRegistry) -> None:
    agent, model = make_agent(tools, [TURN, "ok"])
    await agent.send("go")
    with pytest.raises(AgentError) as info:
        await agent.send()
    assert str(info.value) == (
        "client tool calls are still waiting for results: c2, c4; call submit_tool_result for "
        "each, then send()"
    )
    agent.submit_tool_result("c2", "blue")
    with pytest.raises(AgentError, match="still waiting for results: c4;"):
        await agent.send("and a prompt")
    assert len(model.requests) == 1
    agent.submit_tool_result("c4", "a.txt")
    assert (await agent.send()).text == "ok"


async def test_submitting_an_unknown_id(tools: ToolRegistry) -> None:
    agent, _ = make_agent(tools, [TURN, "ok"])
    with pytest.raises(
        AgentError, match=r"no client tool call 'c2' is waiting for a result; waiting: none"
    ):
        agent.submit_tool_result("c2", "early")
    await agent.send("go")
    with pytest.raises(
        AgentError, match=r"no client tool call 'c1' is waiting for a result; waiting: c2, c4"
    ):
        agent.submit_tool_result("c1", "not a client call")
    with pytest.raises(AgentError, match="'zz'"):
        agent.submit_tool_result("zz", "x")


async def test_a_prompt_joins_the_submitted_results(tools: ToolRegistry) -> None:
    agent, model = make_agent(tools, [[tool_use("pick_file", id="p1")], "ok"])
    await agent.send("go")
    agent.submit_tool_result(
        "p1", error_result("the user closed the dialog", type=ToolErrorType.CANCELLED)
    )
    await agent.send("Never mind the file.")
    last = model.requests[-1].messages[-1]
    assert [b.type for b in last.content] == ["tool_result", "text"]
    assert last.content[1] == TextContent(text="Never mind the file.")
    assert texts([last.content[0]]) == [("the user closed the dialog", True)]  # type: ignore[list-item]
    assert agent.state.tool_calls[0].status == "failed"
    assert_history_valid(agent.messages)


async def test_submitting_twice_keeps_the_last(tools: ToolRegistry) -> None:
    agent, model = make_agent(tools, [[tool_use("pick_file", id="p1")], "ok"])
    await agent.send("go")
    agent.submit_tool_result("p1", "first")
    agent.submit_tool_result("p1", ["second"])
    await agent.send()
    assert texts(sent_results(model)) == [('["second"]', False)]
    with pytest.raises(AgentError, match="waiting: none"):
        agent.submit_tool_result("p1", "late")


async def test_stream_pauses_with_done(tools: ToolRegistry) -> None:
    agent, model = make_agent(tools, [[tool_use("pick_file", id="p1")], "ok"])
    with anyio.fail_after(5):
        events: list[Any] = [e async for e in agent.stream("go")]
    assert events[-1].type == "done"
    assert events[-1].pending_calls == ("p1",)
    agent.submit_tool_result("p1", "a.txt")
    with anyio.fail_after(5):
        events = [e async for e in agent.stream()]
    assert events[-1].text == "ok"
    assert texts(sent_results(model)) == [("a.txt", False)]


async def test_interrupt_is_not_needed_to_abandon_pending_calls(tools: ToolRegistry) -> None:
    # a pending call can be answered with an error by the client, and the model sees it
    agent, model = make_agent(tools, [[tool_use("ask_user", {"question": "?"}, id="q")], "ok"])
    await agent.send("go")
    agent.submit_tool_result("q", error_result("no user is present"))
    await agent.send()
    assert texts(sent_results(model)) == [("no user is present", True)]


async def test_a_huge_submitted_result_is_truncated_too(tools: ToolRegistry) -> None:
    agent, model = make_agent(tools, [[tool_use("pick_file", id="p1")], "ok"], max_result_chars=100)
    await agent.send("go")
    agent.submit_tool_result("p1", "y" * 130)
    await agent.send()
    assert texts(sent_results(model)) == [
        (
            "y" * 100 + "\n[output truncated: 30 of 130 characters left out; ask for less, e.g. a "
            "narrower query or a smaller range]",
            False,
        )
    ]


@pytest.mark.parametrize(
    ("result", "expected"),
    [
        ("x\ud800y", ("x\ufffdy", False)),
        (["x\ud800y"], None),  # JSON that cannot be encoded: refused, as a tool's value is
        (error_result("x\ud800y"), ("x\ufffdy", True)),
    ],
    ids=["text", "json", "tool-result"],
)
async def test_a_submitted_result_takes_the_path_of_the_agents_own(
    tools: ToolRegistry, result: Any, expected: tuple[str, bool] | None
) -> None:
    agent, model = make_agent(tools, [[tool_use("pick_file", id="p1")], "ok"])
    await agent.send("go")
    agent.submit_tool_result("p1", result)
    agent.state.model_dump_json()  # savable while the result waits for send()
    await agent.send()
    (sent,) = sent_results(model)
    if expected is None:
        assert sent.is_error
        assert sent.text.startswith("Tool 'pick_file' returned a list that cannot be shown")
    else:
        assert (sent.text, sent.is_error) == expected
    saved = agent.state.model_dump_json()
    assert AgentState.model_validate_json(saved).model_dump_json() == saved
    assert_history_valid(agent.messages)
