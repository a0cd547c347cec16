"""todo_read / todo_write and task_run, alone and inside real agents."""

from __future__ import annotations

from typing import Any

import pytest

from kode import Agent, AgentTemplate, ToolContext, ToolRegistry, define_tool
from kode.agent import AgentState, templates
from kode.builtin.tasks import task_run
from kode.builtin.todo import todo_read, todo_write
from kode.models import ScriptedModel, tool_use
from kode.registries import ToolSource

pytestmark = pytest.mark.anyio


def registry_with(*tools: Any) -> ToolRegistry:
    reg = ToolRegistry("test")
    for made in tools:
        reg.register(made, source="core")
    return reg


async def test_todo_write_then_read_standalone() -> None:
    ctx: ToolContext[None] = ToolContext()
    result = await todo_write.run(
        {
            "todos": [
                {"id": "1", "title": "Read the config", "status": "completed"},
                {"id": "2", "title": "Fix the bug", "status": "in_progress"},
                {"id": "3", "title": "Write a test"},
            ]
        },
        ctx,
    )
    assert not result.is_error
    assert result.text == (
        "[x] 1: Read the config\n[>] 2: Fix the bug\n[ ] 3: Write a test\n(1 of 3 completed)"
    )
    assert ctx.services["todos"][2] == {
        "id": "3",
        "title": "Write a test",
        "status": "pending",
        "notes": "",
    }
    assert [e.event for e in ctx.events] == ["todos"]
    assert (await todo_read.run({}, ctx)).text == result.text


async def test_todo_rules() -> None:
    ctx: ToolContext[None] = ToolContext()
    two = await todo_write.run(
        {
            "todos": [
                {"id": "a", "title": "x", "status": "in_progress"},
                {"id": "b", "title": "y", "status": "in_progress"},
            ]
        },
        ctx,
    )
    assert two.is_error and "Only one todo may be in progress at a time; a, b are." in two.text
    dup = await todo_write.run(
        {"todos": [{"id": "a", "title": "x"}, {"id": "a", "title": "y"}]}, ctx
    )
    assert dup.is_error and "repeated: a" in dup.text
    bad = await todo_write.run({"todos": [{"id": "a", "title": "x", "status": "doing"}]}, ctx)
    assert bad.is_error and "'todos[0].status' should be 'pending', 'in_progress' or" in bad.text
    assert ctx.services.get("todos", []) == []  # nothing changed by the refused writes
    assert (await todo_read.run({}, ctx)).text == "The todo list is empty."


def test_builtins_register_as_core_with_groups() -> None:
    from kode import registry

    for name in ("todo_write", "todo_read", "task_run"):
        meta = registry.meta(name)
        assert meta.source is ToolSource.CORE
    assert "group:think" in registry.meta("todo_write").groups
    assert registry.get("TodoWrite") is todo_write


async def test_todos_live_in_the_agent_state() -> None:
    reg = registry_with(todo_write, todo_read)
    model = ScriptedModel(
        [
            [
                tool_use(
                    "todo_write", {"todos": [{"id": "1", "title": "Plan", "status": "in_progress"}]}
                )
            ],
            "Planned.",
        ]
    )
    agent = Agent.create(
        AgentTemplate(id="planner", tools=["group:think"]), model=model, registry=reg
    )
    reply = await agent.send("Plan it.")
    assert reply.text == "Planned."
    assert agent.todos == [{"id": "1", "title": "Plan", "status": "in_progress", "notes": ""}]
    custom = [e for e in reply.events if e.type == "tool_custom"]
    assert custom and custom[0].event == "todos"
    state = AgentState.model_validate_json(agent.state.model_dump_json())
    assert state.todos == agent.todos


async def test_task_run_delegates_to_a_sub_agent(isolated_templates: object) -> None:
    @define_tool(registry=None, kind="read")
    def lookup(key: str) -> str:
        """Look a key up."""
        return {"port": "6379"}.get(key, "unknown")

    reg = registry_with(task_run, lookup)
    templates.register(AgentTemplate(id="helper-sub", tools=["lookup", "task_run"]))
    # One model object plays both: parent turn 1, then the sub-agent's two turns, then parent.
    model = ScriptedModel(
        [
            [tool_use("task_run", {"template_id": "helper-sub", "prompt": "Find the port."})],
            [tool_use("lookup", {"key": "port"})],
            "The port is 6379.",
            "The sub-agent says the port is 6379.",
        ]
    )
    # A sub-agent has only tools its parent has: the parent has lookup too.
    parent = Agent.create(
        AgentTemplate(id="boss", tools=["task_run", "lookup"]), model=model, registry=reg
    )
    events: list[Any] = []
    reply = await parent.send("What port?", on_event=events.append)
    assert reply.text == "The sub-agent says the port is 6379."
    ends = [e for e in events if e.type == "tool_end"]
    assert ends[-1].name == "task_run" and ends[-1].result.text == "The port is 6379."
    sub = [e.data for e in events if e.type == "tool_custom" and e.event == "subagent"]
    assert {"template_id": "helper-sub", "event": "tool_start", "name": "lookup"} in sub
    progress = [e for e in events if e.type == "tool_progress"]
    assert progress and progress[0].message == "sub-agent helper-sub: running lookup"
    # the sub-agent ran without task_run (the sub-agent policy layer) but with lookup
    sub_request = model.requests[1]
    assert [t.name for t in sub_request.tools] == ["lookup"]


async def test_task_run_outside_an_agent_and_with_an_unknown_template() -> None:
    alone = await task_run.run({"template_id": "x", "prompt": "y"})
    assert alone.is_error and "task_run works only inside an agent" in alone.text

    reg = registry_with(task_run)
    model = ScriptedModel(
        [[tool_use("task_run", {"template_id": "no-such-template", "prompt": "p"})], "ok"]
    )
    agent = Agent.create(AgentTemplate(id="boss2", tools=["task_run"]), model=model, registry=reg)
    reply = await agent.send("go")
    end = next(e for e in reply.events if e.type == "tool_end")
    assert end.is_error
    assert (
        "Sub-agent 'no-such-template' could not run: no agent template with id" in end.result.text
    )


async def test_a_sub_agent_can_have_its_own_model(isolated_templates: object) -> None:
    @define_tool(registry=None, kind="read")
    def lookup(key: str) -> str:
        """Look a key up."""
        return "6379"

    reg = registry_with(task_run, lookup)
    templates.register(AgentTemplate(id="cheap-sub", tools=["lookup"]))
    parent_model = ScriptedModel(
        [
            [tool_use("task_run", {"template_id": "cheap-sub", "prompt": "Find the port."})],
            "It is 6379.",
        ],
        name="big",
    )
    sub_model = ScriptedModel([[tool_use("lookup", {"key": "port"})], "6379."], name="small")
    parent = Agent.create(
        AgentTemplate(id="boss3", tools=["task_run", "lookup"]),
        model=parent_model,
        registry=reg,
        subagent_models={"cheap-sub": sub_model},
    )
    reply = await parent.send("What port?")
    assert reply.text == "It is 6379."
    assert len(parent_model.requests) == 2 and len(sub_model.requests) == 2
    assert sub_model.turns == [] and parent_model.turns == []
