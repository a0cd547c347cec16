"""The session tools (group:sessions) over a real SQLite store: list, history, status, send,
spawn, agents; an agent reaches its own session and the sessions it spawned, nothing else."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kode.agent import Agent, AgentTemplate, TemplateRegistry
from kode.builtin import sessions as session_tools
from kode.models import FunctionModel, ModelRequest, ToolResultContent, tool_use
from kode.registries import ToolRegistry
from kode.sessions import SQLiteStore

pytestmark = pytest.mark.anyio

TOOLS = [
    "sessions_list",
    "sessions_history",
    "session_status",
    "sessions_send",
    "sessions_spawn",
    "agents_list",
]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def tools(reg: ToolRegistry, template_registry: TemplateRegistry) -> ToolRegistry:
    for name in TOOLS:
        reg.register(getattr(session_tools, name))
    template_registry.register(
        AgentTemplate(id="helper", system_prompt="Says what it was told.", tools=[])
    )
    return reg


def helper_model() -> FunctionModel:
    def reply(request: ModelRequest) -> str:
        users = [m.text for m in request.messages if m.role == "user"]
        return f"helper heard: {' / '.join(users)}"

    return FunctionModel(reply)


def scripted(turns: list[Any]) -> FunctionModel:
    """Plays `turns` by the number of replies so far; records every tool result."""

    def reply(request: ModelRequest) -> Any:
        index = sum(1 for m in request.messages if m.role == "assistant")
        return turns[index](request) if callable(turns[index]) else turns[index]

    return FunctionModel(reply)


def results(agent: Agent) -> list[ToolResultContent]:
    return [b for m in agent.messages for b in m.content if isinstance(b, ToolResultContent)]


def child_id(request: ModelRequest) -> str:
    last = request.messages[-1].content[0]
    assert isinstance(last, ToolResultContent) and not last.is_error, last
    return str(json.loads(last.text)["session_id"])


async def test_spawn_list_read_and_send_into_a_child_session(
    tools: ToolRegistry, tmp_path: Path
) -> None:
    spawned: list[str] = []

    def send(request: ModelRequest) -> Any:
        spawned.append(child_id(request))
        return [tool_use("sessions_send", {"session_id": spawned[0], "message": "and again"})]

    model = scripted(
        [
            [tool_use("sessions_spawn", {"template_id": "helper", "prompt": "hi", "label": "h"})],
            send,
            lambda r: [tool_use("sessions_list", {})],
            lambda r: [tool_use("sessions_history", {"session_id": spawned[0], "limit": 3})],
            lambda r: [tool_use("session_status", {"session_id": spawned[0]})],
            lambda r: [tool_use("agents_list", {})],
            lambda r: [
                tool_use(
                    "sessions_send",
                    {"session_id": spawned[0], "message": "later", "wait": False},
                )
            ],
            "done",
        ]
    )
    store = SQLiteStore(tmp_path / "s.db")
    agent = Agent.create(
        AgentTemplate(id="boss", tools=TOOLS),
        model=model,
        registry=tools,
        store=store,
        session_id="boss-1",
        subagent_models={"helper": helper_model()},
    )
    assert (await agent.send("start")).text == "done"
    out = [json.loads(r.text) for r in results(agent)]
    assert not any(r.is_error for r in results(agent)), results(agent)
    child = spawned[0]
    assert out[0] == {"session_id": child, "status": "idle", "reply": "helper heard: hi"}
    assert out[1]["reply"] == "helper heard: hi / and again"
    assert {s["session_id"] for s in out[2]} == {"boss-1", child}
    listed = {s["session_id"]: s for s in out[2]}
    assert listed[child]["label"] == "h" and listed[child]["parent_id"] == "boss-1"
    assert [m["role"] for m in out[3]] == ["assistant", "user", "assistant"]
    assert out[3][-1]["text"] == "helper heard: hi / and again"
    assert out[4]["status"] == "idle" and out[4]["messages"] == 4
    assert out[5] == [
        {"id": "helper", "about": "Says what it was told.", "tools": []},
    ]
    assert out[6] == {"session_id": child, "queued": True}
    # The queued message waits in the child's session; its next run answers it.
    await agent.aclose()
    resumed = await Agent.resume(child, store=store, model=helper_model(), registry=tools)
    reply = await resumed.send()
    assert reply.text == "helper heard: hi / and again / later"
    await resumed.aclose()
    # The parent's own session keeps the children it spawned.
    state = (await store.load("boss-1")).state()
    assert state.metadata["kode.children"] == [child]
    await store.aclose()


async def test_sessions_outside_the_tree_are_not_reached(
    tools: ToolRegistry, tmp_path: Path
) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    await store.create(template="helper", session_id="someone-else")
    model = scripted(
        [
            [tool_use("sessions_history", {"session_id": "someone-else"})],
            [tool_use("sessions_send", {"session_id": "someone-else", "message": "x"})],
            "done",
        ]
    )
    agent = Agent.create(
        AgentTemplate(id="boss", tools=TOOLS), model=model, registry=tools, store=store
    )
    await agent.send("start")
    first, second = results(agent)
    for result in (first, second):
        assert result.is_error and "is not one this agent may reach" in result.text
    await agent.aclose()
    await store.aclose()


async def test_without_a_store_the_tools_say_there_are_no_sessions(tools: ToolRegistry) -> None:
    model = scripted([[tool_use("sessions_list", {})], "done"])
    agent = Agent.create(AgentTemplate(id="boss", tools=TOOLS), model=model, registry=tools)
    await agent.send("start")
    (result,) = results(agent)
    assert result.is_error and "keeps its session in a store" in result.text


async def test_a_sub_agent_may_not_start_agents_by_default(
    tools: ToolRegistry, tmp_path: Path
) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    agent = Agent.create(
        AgentTemplate(id="boss", tools=TOOLS),
        model=helper_model(),
        registry=tools,
        store=store,
    )
    template, _, options = agent.subagent_options("helper")
    child = Agent.create(AgentTemplate(id="helper2", tools=TOOLS), model=helper_model(), **options)
    assert {t.name for t in child.tools} == set(TOOLS) - {"sessions_spawn", "sessions_send"}
    assert template.id == "helper"
    await store.aclose()
