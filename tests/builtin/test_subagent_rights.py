"""A sub-agent never has more rights than its parent, and its approvals travel up.

A hostile family: a parent that may not write files (by its permission mode, its deny list,
its rules, its template's or its own policy layer, its tool list, or an approval nobody can
give) starts a child through ``task_run`` or ``sessions_spawn`` whose template would let it
write, and the child calls the real ``fs_write``; nothing may be written, and the parent's
run must end. The same for the parent's shell command policy and ``bash_run`` (real
processes, in the real sandbox). Then where a child's approval goes: to the parent's
approver, to the parent's event stream (answered with ``decide``), or, when the parent has
neither, nowhere: the call is refused at once.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import anyio
import pytest

from kode import Agent, AgentTemplate, ToolRegistry
from kode.agent import (
    ApprovalDecision,
    ApprovalRequest,
    PermissionConfig,
    PermissionRule,
    SessionAccess,
    TemplateError,
    TemplateRegistry,
)
from kode.agent.permissions import check_permission
from kode.agent.template import PolicyConfig
from kode.builtin.fs import fs_write
from kode.builtin.runtime import RuntimePolicy, bash_run, set_default_runtime_policy
from kode.builtin.sessions import sessions_send, sessions_spawn
from kode.builtin.tasks import task_run
from kode.models import FunctionModel, ModelRequest, ScriptedModel, ToolResultContent, tool_use
from kode.registries import ToolPolicy
from kode.sessions import SQLiteStore
from kode.testing.programs import requires_sandbox

pytestmark = pytest.mark.anyio

SECONDS = 20  # a run that hangs fails the test instead of hanging the suite


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def default_policy() -> Iterator[None]:
    previous = set_default_runtime_policy(RuntimePolicy())
    try:
        yield
    finally:
        set_default_runtime_policy(previous)


@pytest.fixture
def tools() -> ToolRegistry:
    reg = ToolRegistry("subagent-rights")
    for made in (fs_write, bash_run, task_run, sessions_spawn):
        reg.register(made, source="core")
    return reg


class Approver:
    """Records what it was asked and answers with a fixed decision."""

    def __init__(self, decision: Literal["allow", "deny"]) -> None:
        self.decision = decision
        self.asked: list[ApprovalRequest] = []

    async def __call__(self, request: ApprovalRequest) -> ApprovalDecision:
        self.asked.append(request)
        return ApprovalDecision(decision=self.decision, note="no")


def spawn_call(spawner: str, prompt: str = "Do it.") -> Any:
    return tool_use(spawner, {"template_id": "child", "prompt": prompt})


def script(spawner: str, child_call: Any) -> ScriptedModel:
    """One model plays both: the parent's call, the child's call and answer, the parent's."""
    return ScriptedModel([[spawn_call(spawner)], [child_call], "child done", "parent done"])


def child_results(model: ScriptedModel) -> list[ToolResultContent]:
    """The results of the child's calls (what its second request carries)."""
    request: ModelRequest = model.requests[2]
    return [b for b in request.messages[-1].content if isinstance(b, ToolResultContent)]


def parent_store(spawner: str, tmp_path: Path) -> dict[str, Any]:
    return {"store": SQLiteStore(tmp_path / "s.db")} if spawner == "sessions_spawn" else {}


async def close(agent: Agent, options: dict[str, Any]) -> None:
    await agent.aclose()
    if "store" in options:
        await options["store"].aclose()


# --- fs_write: every way a parent may be kept from writing ----------------------------------

PARENT_TOOLS = ["task_run", "sessions_spawn", "fs_write"]

PARENTS: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    # name: (the parent template's fields, Agent.create options)
    "control": ({}, {}),  # a parent that may write: the child writes (the harness can fail)
    "mode-readonly": ({"permission": {"mode": "readonly"}}, {}),
    "permission-deny": ({"permission": {"deny": ["fs_*"]}}, {}),
    "rule-deny": (
        {
            "permission": {
                "rules": [PermissionRule(name="no-writes", tool="fs_write", decision="deny")]
            }
        },
        {},
    ),
    "template-policy": ({"policy": PolicyConfig(deny=["fs_write"])}, {}),
    "agent-policy": ({}, {"policy": ToolPolicy(name="agent", deny=["group:fs"])}),
    "no-such-tool": ({"tools": ["task_run", "sessions_spawn"]}, {}),
    "approval-nobody": (  # its own task_run and sessions_spawn run; a write would ask
        {"permission": {"mode": "approval", "allow": ["task_run", "sessions_spawn"]}},
        {},
    ),
}

CHILDREN: dict[str, dict[str, Any]] = {
    "auto": {},
    "allow-list": {"permission": {"allow": ["fs_write", "*"]}},
    "admin-rule": {
        "permission": {
            "rules": [
                PermissionRule(name="let-me", tool="*", decision="allow", tier="admin", priority=99)
            ]
        }
    },
}


@pytest.mark.parametrize("form", ["inline", "registered"])
@pytest.mark.parametrize("child", sorted(CHILDREN))
@pytest.mark.parametrize("parent", sorted(PARENTS))
@pytest.mark.parametrize("spawner", ["task_run", "sessions_spawn"])
async def test_a_child_writes_nothing_its_parent_could_not(
    tools: ToolRegistry,
    isolated_templates: TemplateRegistry,
    tmp_path: Path,
    spawner: str,
    parent: str,
    child: str,
    form: str,
) -> None:
    fields, options = PARENTS[parent]
    parent_template = AgentTemplate(id="parent", **{"tools": PARENT_TOOLS, **fields})
    isolated_templates.register(AgentTemplate(id="child", tools=["fs_write"], **CHILDREN[child]))
    if form == "registered":
        isolated_templates.register(parent_template)
    target = tmp_path / "out.txt"
    model = script(spawner, tool_use("fs_write", {"path": "out.txt", "content": "pwned"}))
    options = {**options, **parent_store(spawner, tmp_path)}
    agent = Agent.create(
        "parent" if form == "registered" else parent_template,
        model=model,
        registry=tools,
        workspace=tmp_path,
        **options,
    )
    try:
        with anyio.fail_after(SECONDS):
            reply = await agent.send("go")
    finally:
        await close(agent, options)
    assert reply.text == "parent done"
    (result,) = child_results(model)
    if parent == "control":
        assert not result.is_error, result.text
        assert target.read_text() == "pwned"
    else:
        assert result.is_error, result.text
        assert not target.exists()


# --- the parent's shell command policy (real processes, in the real sandbox) ------------------

RUNTIME: dict[str, tuple[RuntimePolicy | None, dict[str, Any], str, str]] = {
    # name: (the parent's own runtime policy, its permission, the child's command, outcome)
    "security-deny": (RuntimePolicy(security="deny"), {}, "ls", "refused"),
    "sandbox-read-only": (
        RuntimePolicy(security="full", ask="off", sandbox="read-only"),
        {},
        "touch made.txt",
        "read-only",
    ),
    "ask-always": (RuntimePolicy(ask="always"), {}, "ls", "asked"),
    "mode-readonly": (None, {"mode": "readonly"}, "ls", "refused"),
    "mode-approval": (
        None,
        {"mode": "approval", "allow": ["task_run", "sessions_spawn"]},
        "touch made.txt",
        "asked",
    ),
    "permission-deny": (
        RuntimePolicy(security="full", ask="off"),
        {"deny": ["bash_*"]},
        "touch made.txt",
        "refused",
    ),
}


@requires_sandbox(workspace=tempfile.gettempdir())  # kode's probe, where tmp_path is
@pytest.mark.parametrize("policy", sorted(RUNTIME))
@pytest.mark.parametrize("spawner", ["task_run", "sessions_spawn"])
async def test_a_child_runs_commands_under_its_parents_policy(
    tools: ToolRegistry,
    isolated_templates: TemplateRegistry,
    tmp_path: Path,
    spawner: str,
    policy: str,
) -> None:
    own, permission, command, outcome = RUNTIME[policy]
    isolated_templates.register(AgentTemplate(id="child", tools=["bash_run"]))
    model = script(spawner, tool_use("bash_run", {"command": command}))
    approver = Approver("deny")
    options = parent_store(spawner, tmp_path)
    agent = Agent.create(
        AgentTemplate(
            id="parent", tools=["task_run", "sessions_spawn", "bash_run"], permission=permission
        ),
        model=model,
        registry=tools,
        workspace=tmp_path,
        approver=approver,
        **options,
    )
    if own is not None:
        agent.services["runtime_policy"] = own  # set the way kode's docs say, after create
    try:
        with anyio.fail_after(SECONDS):
            await agent.send("go")
    finally:
        await close(agent, options)
    (result,) = child_results(model)
    assert not (tmp_path / "made.txt").exists()
    if outcome == "asked":  # asked, through the parent's approver, and denied
        assert [r.input["command"] for r in approver.asked] == [command]
        assert result.is_error and "denied" in result.text, result.text
    elif outcome == "refused":
        assert approver.asked == []
        assert result.is_error, result.text
    else:  # it ran, without asking, in the parent's read-only sandbox
        assert approver.asked == []
        assert "Read-only file system" in result.text, result.text


# --- where a child's approval goes ---------------------------------------------------------


SPAWNERS = ("task_run", "sessions_spawn")

ANSWERS = [
    # (spawner, who answers the child's approval, the decision)
    *((spawner, "approver", d) for spawner in SPAWNERS for d in ("allow", "deny")),
    *((spawner, "stream", d) for spawner in SPAWNERS for d in ("allow", "deny")),
    *((spawner, "nobody", "deny") for spawner in SPAWNERS),  # refused at once
    *(("sessions_spawn", "store", d) for d in ("allow", "deny")),
]


@pytest.mark.parametrize(
    ("spawner", "answerer", "decision"), ANSWERS, ids=["-".join(a) for a in ANSWERS]
)
async def test_a_childs_approval_goes_where_its_parent_is_answered(
    tools: ToolRegistry,
    isolated_templates: TemplateRegistry,
    tmp_path: Path,
    spawner: str,
    answerer: str,
    decision: Literal["allow", "deny"],
) -> None:
    """To the parent's approver; to the parent's event stream, answered with ``decide`` or
    (a spawned session) through the store; or, when the parent has neither approver nor
    stream, nowhere: the call is refused at once."""
    isolated_templates.register(
        AgentTemplate(id="child", tools=["fs_write"], permission={"mode": "approval"})
    )
    model = script(spawner, tool_use("fs_write", {"path": "out.txt", "content": "ok"}))
    approver = Approver(decision)
    options = parent_store(spawner, tmp_path)
    agent = Agent.create(
        AgentTemplate(id="parent", tools=PARENT_TOOLS),
        model=model,
        registry=tools,
        workspace=tmp_path,
        **({"approver": approver} if answerer == "approver" else {}),
        **options,
    )
    asked: list[tuple[str, str]] = []
    statuses = []
    try:
        with anyio.fail_after(SECONDS):
            if answerer in ("approver", "nobody"):
                reply = await agent.send("go")
                assert reply.text == "parent done"
            else:
                async with agent.stream("go") as events:
                    async for event in events:
                        if event.type != "approval_required":
                            continue
                        asked.append((event.name, event.reason))
                        if answerer == "stream":
                            agent.decide(event.call_id, decision)
                            continue
                        store = options["store"]
                        (child_id,) = agent.session.children
                        statuses.append((await store.get(child_id)).status)
                        await Agent.decide_in_store(store, child_id, event.call_id, decision)
        if spawner == "sessions_spawn" and answerer != "nobody":
            # the spawned session keeps the request and decision, and ends settled
            store = options["store"]
            (child_id,) = agent.session.children
            log = await store.load(child_id)
            types = [e.record.type for e in log.entries]
            assert "approval_request" in types and "approval_decision" in types, types
            state = log.state()
            assert state.status == "idle" and not state.approvals
    finally:
        await close(agent, options)
    (result,) = child_results(model)
    if answerer == "nobody":
        assert result.is_error and "nobody can give it here" in result.text
        assert not (tmp_path / "out.txt").exists()
        return
    assert result.is_error == (decision == "deny"), result.text
    assert (tmp_path / "out.txt").exists() == (decision == "allow")
    if answerer == "approver":
        (request,) = approver.asked
        assert request.tool_name == "fs_write"
        assert request.reason.startswith("sub-agent 'child': ")
    else:
        assert [name for name, _ in asked] == ["fs_write"]
        assert asked[0][1].startswith("sub-agent 'child': ")
    if answerer == "store":  # the request was in the store while it waited
        assert statuses == ["awaiting_approval"]


# --- the other dimensions ------------------------------------------------------------------


async def test_a_childs_workspace_lies_inside_its_parents(
    tools: ToolRegistry, isolated_templates: TemplateRegistry, tmp_path: Path
) -> None:
    isolated_templates.register(AgentTemplate(id="child", tools=["fs_write"]))
    inner = tmp_path / "inner"
    inner.mkdir()
    model = ScriptedModel(
        [
            [tool_use("fs_write", {"path": str(tmp_path / "outer.txt"), "content": "x"})],
            [tool_use("fs_write", {"path": "inner.txt", "content": "x"})],
            "done",
        ]
    )
    parent = Agent.create(
        AgentTemplate(id="parent", tools=["fs_write"]),
        model=model,
        registry=tools,
        workspace=inner,
    )
    with pytest.raises(TemplateError, match="must lie inside its parent's"):
        await parent.run_subagent("child", "go", workspace=tmp_path)
    deeper = inner / "deeper"
    deeper.mkdir()
    await parent.run_subagent("child", "go", workspace=deeper)
    assert not (tmp_path / "outer.txt").exists()
    assert (deeper / "inner.txt").read_text() == "x"


async def test_a_childs_session_access_is_within_its_parents(
    tools: ToolRegistry, isolated_templates: TemplateRegistry
) -> None:
    isolated_templates.register(
        AgentTemplate(
            id="child",
            session_access=SessionAccess(all=True),
        )
    )
    isolated_templates.register(
        AgentTemplate(
            id="child2",
            session_access=SessionAccess(templates=["a", "b"], labels=["x"]),
        )
    )
    plain = Agent.create(AgentTemplate(id="parent"), model=ScriptedModel([]), registry=tools)
    template, _, _ = plain.subagent_options("child")
    assert template.session_access == SessionAccess()
    lead = Agent.create(
        AgentTemplate(id="lead", session_access=SessionAccess(templates=["b", "c"], labels=["x"])),
        model=ScriptedModel([]),
        registry=tools,
    )
    template, _, _ = lead.subagent_options("child")
    assert template.session_access == lead.template.session_access
    template, _, _ = lead.subagent_options("child2")
    assert template.session_access == SessionAccess(templates=["b"], labels=["x"])


async def test_a_grandchild_is_held_by_every_ancestor(
    tools: ToolRegistry, isolated_templates: TemplateRegistry, tmp_path: Path
) -> None:
    """A readonly grandparent lets a child start a grandchild: the grandchild still cannot write."""
    isolated_templates.register(
        AgentTemplate(id="child", tools=["task_run", "fs_write"], permission={"mode": "auto"})
    )
    isolated_templates.register(AgentTemplate(id="grandchild", tools=["fs_write"]))
    model = ScriptedModel(
        [
            [spawn_call("task_run")],
            [tool_use("task_run", {"template_id": "grandchild", "prompt": "write"})],
            [tool_use("fs_write", {"path": "out.txt", "content": "pwned"})],
            "grandchild done",
            "child done",
            "parent done",
        ]
    )
    agent = Agent.create(
        AgentTemplate(id="parent", tools=["task_run", "fs_write"], permission={"mode": "readonly"}),
        model=model,
        registry=tools,
        workspace=tmp_path,
        subagent_policy=ToolPolicy(name="sub-agent"),  # children may start agents here
    )
    with anyio.fail_after(SECONDS):
        assert (await agent.send("go")).text == "parent done"
    last = model.requests[3].messages[-1].content[0]
    assert isinstance(last, ToolResultContent) and last.is_error
    assert last.text.endswith(
        "the agent is read-only and tool 'fs_write' is of kind edit (a setting of an agent "
        "that started this one)."
    ), last.text
    assert not (tmp_path / "out.txt").exists()


def test_always_answers_settle_a_parents_ask_but_never_lift_its_refusal() -> None:
    def verdict(parent: PermissionConfig, always: set[str]) -> str:
        child = PermissionConfig(mode="auto", inherited=[parent])
        args = {"path": "a", "content": "b"}
        return check_permission(fs_write, args, child, always_allowed=always).action

    assert verdict(PermissionConfig(mode="approval"), set()) == "ask"
    assert verdict(PermissionConfig(mode="approval"), {"fs_write"}) == "allow"
    assert verdict(PermissionConfig(mode="readonly"), {"fs_write"}) == "deny"
    assert verdict(PermissionConfig(deny=["fs_write"]), {"fs_write"}) == "deny"
    assert verdict(PermissionConfig(require_approval=["fs_*"]), set()) == "ask"
    nested = PermissionConfig(inherited=[PermissionConfig(mode="readonly")])
    assert verdict(nested, {"fs_write"}) == "deny"


async def test_an_always_answer_for_a_childs_call_is_kept_for_the_child(
    tools: ToolRegistry, isolated_templates: TemplateRegistry, tmp_path: Path
) -> None:
    isolated_templates.register(AgentTemplate(id="child", tools=["fs_write"]))
    model = ScriptedModel(
        [
            [spawn_call("task_run")],
            [tool_use("fs_write", {"path": "a.txt", "content": "a"})],
            [tool_use("fs_write", {"path": "b.txt", "content": "b"})],
            "child done",
            "parent done",
        ]
    )
    asked: list[ApprovalRequest] = []

    async def always(request: ApprovalRequest) -> ApprovalDecision:
        asked.append(request)
        return ApprovalDecision(decision="allow_always")

    agent = Agent.create(
        AgentTemplate(
            id="parent",
            tools=PARENT_TOOLS,
            permission={"mode": "approval", "allow": ["task_run"]},
        ),
        model=model,
        registry=tools,
        workspace=tmp_path,
        approver=always,
    )
    with anyio.fail_after(SECONDS):
        await agent.send("go")
    assert [r.tool_name for r in asked] == ["fs_write"]  # once: the answer covers the second
    assert (tmp_path / "a.txt").exists() and (tmp_path / "b.txt").exists()
    assert agent.always_allowed == set()  # the parent's own calls still ask


async def test_a_queued_session_run_by_sessions_send_is_held_by_the_sender(
    tools: ToolRegistry, isolated_templates: TemplateRegistry, tmp_path: Path
) -> None:
    """sessions_spawn queues a prompt (wait=false); sessions_send runs it: still read-only."""
    tools.register(sessions_send, source="core")
    isolated_templates.register(AgentTemplate(id="child", tools=["fs_write"]))
    seen: list[ToolResultContent] = []

    def parent_turn(request: ModelRequest) -> Any:
        last = request.messages[-1].content[0]
        if not isinstance(last, ToolResultContent):
            return [
                tool_use("sessions_spawn", {"template_id": "child", "prompt": "x", "wait": False})
            ]
        spawned = json.loads(last.text)
        if spawned.get("queued"):
            return [
                tool_use("sessions_send", {"session_id": spawned["session_id"], "message": "go"})
            ]
        return "parent done"

    def child_turn(request: ModelRequest) -> Any:
        last = request.messages[-1].content[0]
        if isinstance(last, ToolResultContent):
            seen.append(last)
            return "child done"
        return [tool_use("fs_write", {"path": "out.txt", "content": "pwned"})]

    store = SQLiteStore(tmp_path / "s.db")
    agent = Agent.create(
        AgentTemplate(
            id="parent",
            tools=["sessions_spawn", "sessions_send", "fs_write"],
            permission={"mode": "readonly"},
        ),
        model=FunctionModel(parent_turn),
        registry=tools,
        workspace=tmp_path,
        store=store,
        subagent_models={"child": FunctionModel(child_turn)},
    )
    try:
        with anyio.fail_after(SECONDS):
            assert (await agent.send("go")).text == "parent done"
    finally:
        await close(agent, {"store": store})
    (result,) = seen
    assert result.is_error and "read-only" in result.text, result.text
    assert not (tmp_path / "out.txt").exists()
