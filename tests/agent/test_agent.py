"""The agent loop: conversation across sends, send_sync in scripts and under a running loop."""

from __future__ import annotations

from typing import Any

import anyio
import anyio.lowlevel
import pytest
from support import assert_history_valid, make_agent, sent_results, texts, user_text

from kode import ToolContext, define_tool
from kode.agent import Agent, AgentError, AgentTemplate, ToolProgress
from kode.models import (
    FunctionModel,
    ModelRequest,
    ScriptedModel,
    ScriptedTurn,
    ToolResultContent,
    tool_use,
)
from kode.registries import ToolRegistry


@pytest.fixture
def tools(reg: ToolRegistry) -> ToolRegistry:
    @define_tool(registry=reg, kind="read")
    def count(text: str, ctx: ToolContext) -> int:
        """Count the words of a text (sync, in a worker thread).

        Args:
            text: The text.
        """
        ctx.progress("counting", fraction=0.5)
        return len(text.split())

    return reg


SCRIPT = [[tool_use("count", {"text": "a b c"}, id="c1")], "Three words."]


def test_send_sync_in_a_script(tools: ToolRegistry) -> None:
    agent, model = make_agent(tools, SCRIPT)
    reply = agent.send_sync("How many words?")
    assert reply.text == "Three words."
    assert str(reply) == "Three words."
    assert reply.turns == 2
    assert texts(sent_results(model)) == [("3", False)]
    assert [e.message for e in reply.events if isinstance(e, ToolProgress)] == ["counting"]


@pytest.mark.anyio
async def test_send_sync_inside_a_running_loop(tools: ToolRegistry) -> None:
    # as in a notebook: the agent is made, used and used again while a loop runs
    agent, _ = make_agent(tools, [*SCRIPT, "again", "and again"])
    reply = agent.send_sync("How many words?")
    assert reply.text == "Three words."
    assert [e.message for e in reply.events if isinstance(e, ToolProgress)] == ["counting"]
    assert (await agent.send("more")).text == "again"
    assert agent.send_sync("more").text == "and again"
    assert_history_valid(agent.messages)


@pytest.mark.anyio
async def test_send_sync_from_a_worker_thread(tools: ToolRegistry) -> None:
    agent, _ = make_agent(tools, SCRIPT)
    reply = await anyio.to_thread.run_sync(agent.send_sync, "How many words?")
    assert reply.text == "Three words."


@pytest.mark.anyio
async def test_the_conversation_carries_over_between_sends(tools: ToolRegistry) -> None:
    agent, model = make_agent(tools, [*SCRIPT, "Bye."], system_prompt="Count.")
    await agent.send("How many words?")
    reply = await agent.send("Thanks")
    assert reply.text == "Bye."
    assert reply.turns == 1
    last = model.requests[-1]
    assert last.system == "Count."
    assert [m.role for m in last.messages] == ["user", "assistant", "user", "assistant", "user"]
    assert user_text(last.messages[-1]) == ["Thanks"]
    assert agent.messages[-1].text == "Bye."
    assert agent.status == "idle"
    assert_history_valid(agent.messages)


@pytest.mark.anyio
async def test_send_without_prompt_and_nothing_pending_is_an_error(tools: ToolRegistry) -> None:
    agent, model = make_agent(tools, ["x"])
    with pytest.raises(AgentError, match="nothing to send: give a prompt"):
        await agent.send()
    assert model.requests == []
    assert agent.messages == []


@pytest.mark.anyio
async def test_a_second_send_while_running_is_refused(tools: ToolRegistry) -> None:
    started = anyio.Event()
    release = anyio.Event()

    async def reply(request: ModelRequest) -> str:
        started.set()
        await release.wait()
        return "done"

    agent = Agent.create(
        AgentTemplate(id="t", tools=["count"]), model=FunctionModel(reply), registry=tools
    )
    async with anyio.create_task_group() as tg:
        tg.start_soon(agent.send, "first")
        await started.wait()
        with pytest.raises(AgentError, match="already running"):
            await agent.send("second")
        release.set()
    assert [m.role for m in agent.messages] == ["user", "assistant"]


@pytest.mark.anyio
@pytest.mark.parametrize("is_async", [False, True])
async def test_a_function_model_decides_from_the_history(
    tools: ToolRegistry, is_async: bool
) -> None:
    def decide(request: ModelRequest) -> ScriptedTurn:
        last = request.messages[-1]
        if isinstance(last.content[0], ToolResultContent):
            return f"{last.content[0].text} words"
        return [tool_use("count", {"text": last.text})]

    async def decide_async(request: ModelRequest) -> ScriptedTurn:
        await anyio.lowlevel.checkpoint()
        return decide(request)

    model = FunctionModel(decide_async if is_async else decide)
    agent = Agent.create(AgentTemplate(id="t", tools=["count"]), model=model, registry=tools)
    reply = await agent.send("a b c d")
    assert reply.text == "4 words"
    assert len(model.requests) == 2


def test_scripted_model_out_of_turns_in_a_script(tools: ToolRegistry) -> None:
    agent = Agent.create(
        AgentTemplate(id="t", tools=["count"]), model=ScriptedModel([]), registry=tools
    )
    with pytest.raises(AgentError, match="has no turns left"):
        agent.send_sync("hi")


@pytest.mark.anyio
async def test_a_second_stream_while_running_is_refused(tools: ToolRegistry) -> None:
    started = anyio.Event()
    release = anyio.Event()

    async def reply(request: ModelRequest) -> str:
        started.set()
        await release.wait()
        return "done"

    agent = Agent.create(
        AgentTemplate(id="t", tools=["count"]), model=FunctionModel(reply), registry=tools
    )
    async with anyio.create_task_group() as tg:
        tg.start_soon(agent.send, "first")
        await started.wait()
        with pytest.raises(AgentError, match="already running"):
            async for _ in agent.stream("second"):
                pass
        release.set()
    assert (await agent.send("third")).text == "done"


# --- what create accepts -----------------------------------------------------------------------


def test_create_takes_provider_model_strings(reg: ToolRegistry) -> None:
    from kode.models import AnthropicModel, OpenAIModel

    tpl = AgentTemplate(id="t", tools=[])
    anthropic = Agent.create(tpl, model="anthropic:claude-sonnet-4-6", registry=reg)
    assert isinstance(anthropic.model, AnthropicModel)
    openai = Agent.create(tpl, model="openai:gpt-4o", registry=reg)
    assert isinstance(openai.model, OpenAIModel)


@pytest.mark.parametrize(
    ("model", "error", "message"),
    [
        ("gpt-4o", ValueError, "names no provider: use 'anthropic:<model>', 'openai:<model>'"),
        ("mistral:large", ValueError, "names no provider"),
        ("openai:", ValueError, "names no model after 'openai:'"),
        (42, TypeError, "model must be a Model .* got int"),
        (None, TypeError, "model must be a Model .* got NoneType"),
    ],
)
def test_create_refuses_what_is_not_a_model_at_once(
    reg: ToolRegistry, model: Any, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        Agent.create(AgentTemplate(id="t", tools=[]), model=model, registry=reg)


def test_create_refuses_a_template_of_the_wrong_type(reg: ToolRegistry) -> None:
    with pytest.raises(TypeError, match="template must be an AgentTemplate"):
        Agent.create({"id": "t"}, model=ScriptedModel([]), registry=reg)  # type: ignore[arg-type]


def test_create_refuses_a_workspace_that_is_not_a_path(reg: ToolRegistry, tmp_path: Any) -> None:
    tpl = AgentTemplate(id="t", tools=[])
    with pytest.raises(TypeError, match=r"Agent\.create: workspace must be a Workspace, a path"):
        Agent.create(tpl, model=ScriptedModel([]), registry=reg, workspace=42)  # type: ignore[arg-type]
    made = Agent.create(tpl, model=ScriptedModel([]), registry=reg, workspace=str(tmp_path))
    assert made.workspace is not None and made.workspace.root == tmp_path.resolve()
