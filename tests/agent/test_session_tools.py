"""The session tools (group:sessions) over a real SQLite file and a real PostgreSQL server:
list, history, status, send, spawn, agents; an agent reaches its own session and the sessions
it spawned, and others only as its template's session_access allows."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from kode.agent import Agent, AgentTemplate, SessionAccess, TemplateRegistry
from kode.builtin import sessions as session_tools
from kode.models import FunctionModel, Message, ModelRequest, ToolResultContent, tool_use
from kode.registries import ToolRegistry
from kode.sessions import MessageAdded, SQLiteStore, Store, store_from

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


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 's.db'}"
    return str(request.getfixturevalue("postgres_url"))


def unique(name: str) -> str:
    """An id no other test uses (the PostgreSQL server is shared by the tests)."""
    return f"{name}-{uuid.uuid4().hex[:10]}"


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
    tools: ToolRegistry, store_url: str
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
    store = store_from(store_url)
    boss = unique("boss")
    agent = Agent.create(
        AgentTemplate(id="boss", tools=TOOLS),
        model=model,
        registry=tools,
        store=store,
        session_id=boss,
        subagent_models={"helper": helper_model()},
    )
    assert (await agent.send("start")).text == "done"
    out = [json.loads(r.text) for r in results(agent)]
    assert not any(r.is_error for r in results(agent)), results(agent)
    child = spawned[0]
    assert out[0] == {"session_id": child, "status": "idle", "reply": "helper heard: hi"}
    assert out[1]["reply"] == "helper heard: hi / and again"
    assert {s["session_id"] for s in out[2]} == {boss, child}
    listed = {s["session_id"]: s for s in out[2]}
    assert listed[child]["label"] == "h" and listed[child]["parent_id"] == boss
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
    state = (await store.load(boss)).state()
    assert state.metadata["kode.children"] == [child]
    await store.aclose()


async def test_sessions_outside_the_tree_are_not_reached(
    tools: ToolRegistry, store_url: str
) -> None:
    store = store_from(store_url)
    other = unique("someone-else")
    await store.create(template="helper", session_id=other)
    model = scripted(
        [
            [tool_use("sessions_history", {"session_id": other})],
            [tool_use("sessions_send", {"session_id": other, "message": "x"})],
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


async def others(store: Store) -> tuple[str, str, str, str, str]:
    """Sessions no agent of these tests spawned: one of a template, one with a label, one
    with neither of them; each holds one user message. Returns their ids and the names."""
    template, label = unique("reviewer"), unique("team")
    by_template, by_label, neither = unique("r"), unique("l"), unique("n")
    await store.create(template=template, session_id=by_template)
    await store.create(template=unique("other"), session_id=by_label, label=label)
    await store.create(template=unique("other"), session_id=neither)
    for session_id in (by_template, by_label, neither):
        note = MessageAdded(message=Message.user(f"hello from {session_id}"))
        await store.append(session_id, [note])
    return by_template, by_label, neither, template, label


async def test_session_access_reaches_sessions_of_named_templates_and_labels(
    tools: ToolRegistry, store_url: str
) -> None:
    store = store_from(store_url)
    by_template, by_label, neither, template, label = await others(store)
    model = scripted(
        [
            [tool_use("sessions_list", {})],
            lambda r: [tool_use("sessions_history", {"session_id": by_template})],
            lambda r: [tool_use("session_status", {"session_id": by_label})],
            lambda r: [tool_use("sessions_history", {"session_id": neither})],
            lambda r: [tool_use("sessions_list", {"template": template})],
            lambda r: [tool_use("sessions_list", {"label": label})],
            "done",
        ]
    )
    boss = unique("boss")
    access = SessionAccess(templates=[template], labels=[label])
    agent = Agent.create(
        AgentTemplate(id="boss", tools=TOOLS, session_access=access),
        model=model,
        registry=tools,
        store=store,
        session_id=boss,
    )
    await agent.send("start")
    got = results(agent)
    assert [r.is_error for r in got] == [False, False, False, True, False, False], got
    listed, history, status, refused, of_template, of_label = got
    assert {s["session_id"] for s in json.loads(listed.text)} == {boss, by_template, by_label}
    assert json.loads(history.text) == [{"role": "user", "text": f"hello from {by_template}"}]
    assert json.loads(status.text)["label"] == label
    assert "is not one this agent may reach" in refused.text
    assert f"sessions of templates {template}" in refused.text
    assert f"sessions labelled {label}" in refused.text
    assert [s["session_id"] for s in json.loads(of_template.text)] == [by_template]
    assert [s["session_id"] for s in json.loads(of_label.text)] == [by_label]
    await agent.aclose()
    await store.aclose()


async def test_session_access_all_reaches_every_session_of_the_store(
    tools: ToolRegistry, store_url: str
) -> None:
    store = store_from(store_url)
    _, _, neither, _, _ = await others(store)
    header = await store.get(neither)
    model = scripted(
        [
            [tool_use("sessions_history", {"session_id": neither})],
            lambda r: [tool_use("sessions_list", {"template": header.template})],
            lambda r: [tool_use("sessions_history", {"session_id": unique("missing")})],
            "done",
        ]
    )
    agent = Agent.create(
        AgentTemplate(id="boss", tools=TOOLS, session_access=SessionAccess(all=True)),
        model=model,
        registry=tools,
        store=store,
    )
    await agent.send("start")
    history, listed, missing = results(agent)
    assert not history.is_error and f"hello from {neither}" in history.text
    assert [s["session_id"] for s in json.loads(listed.text)] == [neither]
    assert missing.is_error and "there is no session" in missing.text
    await agent.aclose()
    await store.aclose()


def test_import_kode_builtin_registers_the_session_tools_in_their_group() -> None:
    """In a fresh interpreter: ``import kode.builtin`` alone registers all six."""
    code = (
        "import kode.builtin\n"
        "from kode.registries import registry\n"
        f"names = {TOOLS!r}\n"
        "print(all('group:sessions' in registry.meta(n).groups for n in names))\n"
        "print(sorted(n for n in registry.names() if n in names) == sorted(names))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True"]
