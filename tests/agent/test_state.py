"""State: a pydantic model that round-trips through JSON and rebuilds an agent (from_state)."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import assert_history_valid, make_agent, sent_results, texts

from kode import ToolError, ToolErrorType, define_tool
from kode.agent import (
    Agent,
    AgentError,
    AgentState,
    AgentTemplate,
    ApprovalDecision,
    ApprovalRequest,
    TemplateError,
    TemplateRegistry,
)
from kode.models import (
    FunctionModel,
    Message,
    ModelError,
    ModelRequest,
    ScriptedModel,
    TextContent,
    ToolResultContent,
    Usage,
    tool_use,
)
from kode.registries import ToolRegistry
from kode.sessions import SQLiteStore
from kode.tools.declared import declare_tool

pytestmark = pytest.mark.anyio

TEMPLATE = AgentTemplate(id="saver", tools=["*"], permission={"deny": ["forbidden"]})


def define(reg: ToolRegistry, version: str = "v1") -> ToolRegistry:
    @define_tool(registry=reg, kind="read")
    def echo(text: str) -> str:
        """Echo a text.

        Args:
            text: The text.
        """
        return f"{version}: {text}"

    @define_tool(registry=reg)
    def boom() -> None:
        """Fails."""
        raise RuntimeError("bad")

    @define_tool(registry=reg, kind="edit")
    def forbidden() -> str:
        """Never allowed."""
        return "never"

    @define_tool(registry=reg)
    def stop() -> None:
        """Stops itself."""
        raise ToolError("stopped by the tool", type=ToolErrorType.CANCELLED)

    reg.register(declare_tool("ask_user", input_schema={"type": "object"}), source="client")
    return reg


@pytest.fixture
def tools(reg: ToolRegistry) -> ToolRegistry:
    return define(reg)


TURN = [
    tool_use("echo", {"text": "hi"}, id="c1"),
    tool_use("boom", id="c2"),
    tool_use("forbidden", id="c3"),
    tool_use("stop", id="c4"),
    tool_use("ask_user", {"q": "?"}, id="c5"),
]


async def test_state_round_trips_through_json_with_every_status(tools: ToolRegistry) -> None:
    agent = Agent.create(
        TEMPLATE, model=ScriptedModel([TURN]), registry=tools, agent_id="a1", session_id="s1"
    )
    agent.todos.append({"content": "check", "status": "pending"})
    reply = await agent.send("go")
    assert reply.pending_calls == ("c5",)
    state = agent.state
    assert AgentState.model_validate_json(state.model_dump_json()) == state
    assert (state.version, state.template_id, state.agent_id, state.session_id) == (
        1,
        "saver",
        "a1",
        "s1",
    )
    assert state.status == "awaiting_client"
    assert state.todos == [{"content": "check", "status": "pending"}]
    assert state.usage == Usage(input_tokens=1, output_tokens=0)
    assert [(r.id, r.name, r.status, r.error_type, r.client) for r in state.tool_calls] == [
        ("c1", "echo", "done", None, False),
        ("c2", "boom", "failed", "execution_failed", False),
        ("c3", "forbidden", "denied", "permission_denied", False),
        ("c4", "stop", "cancelled", "cancelled", False),
        ("c5", "ask_user", "pending", None, True),
    ]
    assert state.tool_calls[0].input == {"text": "hi"}
    assert state.tool_calls[0].result is not None and state.tool_calls[0].result.text == "v1: hi"
    assert state.tool_calls[4].result is None
    assert all(r.started_at is None or r.ended_at is not None for r in state.tool_calls)
    # a snapshot, not a view
    state.messages.clear()
    assert agent.messages


async def test_from_state_continues_the_conversation(
    tools: ToolRegistry, template_registry: TemplateRegistry
) -> None:
    template_registry.register(TEMPLATE)
    agent, _ = make_agent(
        tools, [[tool_use("echo", {"text": "a"}, id="c1")], "first"], id="saver", tools=["*"]
    )
    await agent.send("one")
    saved = AgentState.model_validate_json(agent.state.model_dump_json())

    # a new process: the same tool names, new implementations
    fresh = define(ToolRegistry(name="fresh"), version="v2")
    model = ScriptedModel([[tool_use("echo", {"text": "b"}, id="c2")], "second"])
    restored = Agent.from_state(saved, model=model, registry=fresh)
    assert restored.template is TEMPLATE
    assert (restored.agent_id, restored.session_id) == (agent.agent_id, agent.session_id)
    assert restored.messages == agent.messages
    assert restored.usage == agent.usage
    assert restored.lookup("echo") is fresh.get("echo")
    reply = await restored.send("two")
    assert reply.text == "second"
    assert model.requests[0].messages == [*agent.messages, Message.user("two")]
    assert texts(sent_results(model)) == [("v2: b", False)]
    assert [r.id for r in restored.state.tool_calls] == ["c1", "c2"]
    assert_history_valid(restored.messages)


async def test_from_state_rebuilds_an_agent_of_an_unregistered_template(
    tools: ToolRegistry, template_registry: TemplateRegistry
) -> None:
    agent, _ = make_agent(tools, ["hi"], id="unregistered", max_turns=7)
    await agent.send("go")
    assert "unregistered" not in template_registry
    saved = AgentState.model_validate_json(agent.state.model_dump_json())
    restored = Agent.from_state(saved, model=ScriptedModel(["again"]), registry=tools)
    assert restored.template.id == "unregistered"
    assert restored.template.max_turns == 7
    assert restored.messages == agent.messages
    assert (await restored.send("more")).text == "again"


async def test_from_state_needs_its_template(
    tools: ToolRegistry, template_registry: TemplateRegistry
) -> None:
    agent, _ = make_agent(tools, ["hi"], id="unregistered")
    await agent.send("go")
    old_format = agent.state.model_copy(update={"template": None})  # saved before templates were
    with pytest.raises(TemplateError, match="no agent template with id 'unregistered'"):
        Agent.from_state(old_format, model=ScriptedModel([]), registry=tools)
    with pytest.raises(TemplateError, match="saved from template 'unregistered', not 'other'"):
        Agent.from_state(agent.state, model=ScriptedModel([]), template=AgentTemplate(id="other"))
    again = Agent.from_state(
        agent.state, model=ScriptedModel([]), template=agent.template, registry=tools
    )
    assert again.messages == agent.messages


async def test_a_tool_missing_after_restore_is_an_error_at_from_state(tools: ToolRegistry) -> None:
    agent, _ = make_agent(tools, ["hi"], tools=["echo"])
    await agent.send("go")
    with pytest.raises(AgentError, match="'echo'"):
        Agent.from_state(
            agent.state, model=ScriptedModel([]), template=agent.template, registry=ToolRegistry()
        )


async def test_pending_client_calls_still_wait_after_restore(tools: ToolRegistry) -> None:
    agent = Agent.create(TEMPLATE, model=ScriptedModel([TURN]), registry=tools)
    await agent.send("go")
    saved = AgentState.model_validate_json(agent.state.model_dump_json())

    model = ScriptedModel(["thanks"])
    restored = Agent.from_state(saved, model=model, template=TEMPLATE, registry=tools)
    assert restored.status == "awaiting_client"
    with pytest.raises(AgentError, match="still waiting for results: c5"):
        await restored.send()
    restored.submit_tool_result("c5", "an answer")
    assert (await restored.send()).text == "thanks"
    results = sent_results(model)
    assert [r.tool_use_id for r in results] == ["c1", "c2", "c3", "c4", "c5"]
    assert texts(results)[0] == ("v1: hi", False)
    assert texts(results)[4] == ("an answer", False)
    assert_history_valid(restored.messages)


async def test_a_result_submitted_before_saving_is_kept(tools: ToolRegistry) -> None:
    turn = [tool_use("ask_user", id="q1"), tool_use("ask_user", id="q2")]
    agent = Agent.create(TEMPLATE, model=ScriptedModel([turn]), registry=tools)
    await agent.send("go")
    agent.submit_tool_result("q1", "first answer")
    model = ScriptedModel(["ok"])
    restored = Agent.from_state(agent.state, model=model, template=TEMPLATE, registry=tools)
    with pytest.raises(AgentError, match="still waiting for results: q2;"):
        await restored.send()
    restored.submit_tool_result("q2", "second answer")
    await restored.send()
    assert texts(sent_results(model)) == [("first answer", False), ("second answer", False)]


async def test_calls_running_when_saved_are_cancelled_on_restore(tools: ToolRegistry) -> None:
    snapshots: list[AgentState] = []
    holder: list[Agent] = []

    @define_tool(registry=tools, kind="edit")
    async def edit(text: str) -> str:
        """Runs before snapshot (mutating calls run in call order).

        Args:
            text: The text.
        """
        return f"v1: {text}"

    @define_tool(registry=tools, kind="edit")
    async def snapshot() -> str:
        """Saves the agent's state while it runs."""
        snapshots.append(AgentState.model_validate_json(holder[0].state.model_dump_json()))
        return "saved"

    turn = [tool_use("edit", {"text": "x"}, id="e1"), tool_use("snapshot", id="s1")]
    agent = Agent.create(
        AgentTemplate(id="saver", tools=["edit", "snapshot"]),
        model=ScriptedModel([turn, "ok"]),
        registry=tools,
    )
    holder.append(agent)
    await agent.send("go")
    (saved,) = snapshots
    assert saved.status == "running"
    assert [(r.id, r.status) for r in saved.tool_calls] == [("e1", "done"), ("s1", "running")]

    restored = Agent.from_state(
        saved, model=ScriptedModel([]), template=agent.template, registry=tools
    )
    assert_history_valid(restored.messages)
    assert texts(restored.messages[-1].content) == [  # type: ignore[arg-type]
        ("v1: x", False),
        ("Tool 'snapshot' was cancelled: the run was interrupted before it finished.", True),
    ]
    assert [(r.id, r.status) for r in restored.state.tool_calls] == [
        ("e1", "done"),
        ("s1", "cancelled"),
    ]
    assert restored.status == "idle"


async def test_allow_always_and_usage_survive_a_restore(tools: ToolRegistry) -> None:
    asked: list[str] = []

    async def approver(request: ApprovalRequest) -> ApprovalDecision:
        asked.append(request.call_id)
        return ApprovalDecision(decision="allow_always")

    template = AgentTemplate(
        id="careful", tools=["echo"], permission={"require_approval": ["echo"]}
    )
    agent = Agent.create(
        template,
        model=ScriptedModel([[tool_use("echo", {"text": "a"}, id="a1")], "ok"]),
        registry=tools,
        approver=approver,
    )
    await agent.send("go")
    assert agent.state.always_allowed == ["echo"]
    model = ScriptedModel([[tool_use("echo", {"text": "b"}, id="b1")], "ok"])
    restored = Agent.from_state(
        AgentState.model_validate_json(agent.state.model_dump_json()),
        model=model,
        template=template,
        registry=tools,
        approver=approver,
    )
    reply = await restored.send("again")
    assert asked == ["a1"]
    assert restored.usage == agent.usage + reply.usage
    assert reply.usage.input_tokens > 0


async def test_a_state_saved_while_the_model_answers_restores_to_the_prompt(
    tools: ToolRegistry,
) -> None:
    saved: list[AgentState] = []
    box: list[Agent] = []

    def reply(request: ModelRequest) -> str:
        saved.append(box[0].state)
        raise ModelError("connection reset")

    agent = Agent.create(
        AgentTemplate(id="t", tools=["echo"]), model=FunctionModel(reply), registry=tools
    )
    box.append(agent)
    with pytest.raises(AgentError, match="connection reset"):
        await agent.send("hello")
    (state,) = saved
    assert state.status == "running"
    restored = Agent.from_state(
        state, model=ScriptedModel(["hi"]), template=agent.template, registry=tools
    )
    assert restored.messages == [Message.user("hello")]
    assert (await restored.send("again")).text == "hi"
    assert restored.messages[0] == Message(
        role="user", content=[TextContent(text="hello"), TextContent(text="again")]
    )
    assert_history_valid(restored.messages)


async def test_odd_inputs_and_images_round_trip(tools: ToolRegistry) -> None:
    from kode import Image

    png = b"\x89PNG\r\n\x1a\n" + b"\x00" * 8

    @define_tool(registry=tools, kind="read")
    def shot() -> Image:
        """Take a screenshot."""
        return Image(data=png)

    turn = [tool_use("echo", "{not json", id="j1"), tool_use("shot", id="i1")]
    agent = Agent.create(TEMPLATE, model=ScriptedModel([turn, "ok"]), registry=tools)
    await agent.send("go")
    state = agent.state
    assert state.tool_calls[0].input == "{not json"
    assert state.tool_calls[1].result is not None
    assert state.tool_calls[1].result.content[0].type == "image"
    assert AgentState.model_validate_json(state.model_dump_json()) == state


def _records_share_results(agent: Agent) -> dict[str, bool]:
    """Per call with a result: whether its record holds the history's own block."""
    blocks = {
        block.tool_use_id: block
        for message in agent.messages
        if message.role == "user"
        for block in message.content
        if isinstance(block, ToolResultContent)
    }
    return {r.id: r.result is blocks[r.id] for r in agent.session.records if r.result is not None}


async def test_a_restored_record_holds_the_historys_result_block(
    tools: ToolRegistry, tmp_path: Path
) -> None:
    # A live run keeps one block for the record and the message; a restored agent did keep
    # two equal copies of every result, a quarter more of what a long session keeps tracked.
    calls = [tool_use("echo", {"text": "a"}, id="c1"), tool_use("boom", id="c2")]
    store = SQLiteStore(tmp_path / "s.db")
    agent = Agent.create(
        TEMPLATE, model=ScriptedModel([calls, "done"]), registry=tools, store=store
    )
    await agent.send("go")
    assert _records_share_results(agent) == {"c1": True, "c2": True}
    saved = AgentState.model_validate_json(agent.state.model_dump_json())
    restored = Agent.from_state(saved, model=ScriptedModel(["x"]), registry=tools)
    assert _records_share_results(restored) == {"c1": True, "c2": True}
    assert restored.state == saved
    await agent.aclose()
    resumed = await Agent.resume(
        agent.session_id, store=store, model=ScriptedModel(["x"]), template=TEMPLATE, registry=tools
    )
    assert _records_share_results(resumed) == {"c1": True, "c2": True}
    # (the two calls of the turn run at once: their records' order is the order they ended)
    assert {r.id: (r.status, r.result) for r in resumed.state.tool_calls} == {
        r.id: (r.status, r.result) for r in saved.tool_calls
    }
    await resumed.aclose()
    # A record whose result differs from the history's block keeps its own.
    first = next(r for r in saved.tool_calls if r.id == "c1")
    first.result = ToolResultContent(tool_use_id="c1", content=[TextContent(text="other")])
    different = Agent.from_state(saved, model=ScriptedModel(["x"]), registry=tools)
    assert _records_share_results(different) == {"c1": False, "c2": True}
    assert next(r for r in different.state.tool_calls if r.id == "c1").result == first.result
