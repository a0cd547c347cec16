"""code_run inside real agents: every call of the script is a call of the agent.

The script runs in the real sandbox (real bubblewrap, real subprocesses); its calls come back
through the agent's pipeline: validation errors raise in the script, permission rules deny,
approvals are asked (or refused when nobody can give them), events carry the code_run call's
id, the session records hold the inner calls, and their results never reach the model.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from kode import Agent, AgentTemplate, ToolRegistry, define_tool
from kode.agent import AgentState, ApprovalDecision, ApprovalRequest
from kode.agent.events import AgentEvent, ApprovalRequired, ToolEnd, ToolStart
from kode.builtin.code import CODE_POLICY, CodePolicy, code_run
from kode.models import ScriptedModel, ToolResultContent, tool_use
from kode.sessions import SQLiteStore
from kode.testing.programs import requires_sandbox
from kode.tools.declared import declare_tool

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the sandbox is Linux's"),
    requires_sandbox(),
]


class World:
    """A registry with a lookup, a tool needing approval, and one the agent does not get."""

    def __init__(self) -> None:
        self.ran: list[str] = []
        self.reg = ToolRegistry("code")
        ran = self.ran

        @define_tool(registry=self.reg)
        def lookup(key: str) -> int:
            """Look up the number of a key.

            Args:
                key: The key.
            """
            ran.append(f"lookup {key}")
            return len(key) * 10

        @define_tool(registry=self.reg, kind="delete", requires_approval=True)
        def wipe(target: str) -> str:
            """Wipe something (asks first).

            Args:
                target: What to wipe.
            """
            ran.append(f"wipe {target}")
            return f"wiped {target}"

        @define_tool(registry=self.reg)
        def secret() -> str:
            """A tool the agent is not given."""
            ran.append("secret")
            return "the secret"

        self.reg.register(code_run, source="core")

    def agent(
        self,
        workspace: Path,
        turns: list[Any],
        *,
        approver: Any = None,
        deny: tuple[str, ...] = (),
        policy: CodePolicy | None = None,
        store: Any = None,
        mode: str = "auto",
    ) -> tuple[Agent, ScriptedModel]:
        model = ScriptedModel(turns)
        template = AgentTemplate(
            id="coder",
            tools=["lookup", "wipe", "code_run"],
            permission={"deny": list(deny), "mode": mode},
        )
        agent = Agent.create(
            template,
            model=model,
            registry=self.reg,
            approver=approver,
            workspace=workspace,
            store=store,
        )
        if policy is not None:
            CODE_POLICY.set(agent.services, policy)
        return agent, model


def script_turn(script: str, **extra: Any) -> list[Any]:
    return [tool_use("code_run", {"script": script, **extra})]


def answer(model: ScriptedModel, request: int = 1) -> ToolResultContent:
    last = model.requests[request].messages[-1]
    found = [b for b in last.content if isinstance(b, ToolResultContent)]
    assert len(found) == 1
    return found[0]


async def test_a_script_sums_lookups_and_only_its_output_reaches_the_model(
    tmp_path: Path,
) -> None:
    world = World()
    script = (
        "total = sum(int(lookup(key=k)) for k in ['a', 'bb', 'ccc'])\n"
        "print('total', total)\n"
        "result = {'total': total}\n"
    )
    agent, model = world.agent(tmp_path, [script_turn(script), "done"])
    events: list[AgentEvent] = []
    async with agent:
        await agent.send("sum them", on_event=events.append)
    got = answer(model)
    assert not got.is_error
    assert got.text == 'total 60\nresult = {"total": 60}'
    assert world.ran == ["lookup a", "lookup bb", "lookup ccc"]
    # the inner results are not in the conversation: one tool_result, code_run's
    texts = [
        b for m in model.requests[1].messages for b in m.content if isinstance(b, ToolResultContent)
    ]
    assert [b.tool_use_id for b in texts] == [got.tool_use_id]
    # each inner call's events carry code_run's call id
    starts = [e for e in events if isinstance(e, ToolStart)]
    ends = [e for e in events if isinstance(e, ToolEnd)]
    parent = got.tool_use_id
    assert [(e.name, e.parent_call_id) for e in starts] == [
        ("code_run", None),
        *[("lookup", parent)] * 3,
    ]
    assert [e.call_id for e in ends if e.parent_call_id == parent] == [
        f"{parent}.1",
        f"{parent}.2",
        f"{parent}.3",
    ]
    assert ends[-1].name == "code_run" and ends[-1].parent_call_id is None
    # and the session's records hold them, with their results
    record = agent.records.get(f"{parent}.2")
    assert record is not None and record.status == "done" and record.result is not None
    assert record.result.text == "20"


async def test_an_invalid_call_raises_in_the_script_with_kodes_message(tmp_path: Path) -> None:
    world = World()
    script = (
        "try:\n"
        "    lookup(nokey=1)\n"
        "except ToolCallError as exc:\n"
        "    print('caught:', exc.error_type, exc)\n"
        "lookup(key=5)\n"
    )
    agent, model = world.agent(tmp_path, [script_turn(script), "done"])
    async with agent:
        await agent.send("go")
    got = answer(model)
    assert "caught: invalid_tool_params Invalid arguments for tool 'lookup'" in got.text
    assert "'key' is required but missing" in got.text
    # the uncaught second one ends the script with its traceback, and an error
    assert got.is_error
    assert "ToolCallError: Invalid arguments for tool 'lookup'" in got.text
    assert "[the script exited with code 1]" in got.text
    assert world.ran == []


async def test_a_tool_the_agent_may_not_use_is_refused(tmp_path: Path) -> None:
    world = World()
    script = (
        "for name, args in [('secret', {}), ('wipe', {'target': 'db'}), ('code_run', "
        "{'script': 'print(1)'})]:\n"
        "    try:\n"
        "        print(call_tool(name, args))\n"
        "    except ToolCallError as exc:\n"
        "        print(name, 'refused:', exc.error_type, exc)\n"
        "print('secret' in dir(), 'wipe' in dir())\n"
    )
    agent, model = world.agent(tmp_path, [script_turn(script), "done"], deny=("wipe",))
    async with agent:
        await agent.send("go")
    text = answer(model).text
    assert "secret refused: tool_not_registered Tool 'secret' is not available." in text
    assert "wipe refused: permission_denied Tool 'wipe' was not run" in text
    assert "code_run refused: policy_violation Tool 'code_run' cannot be called" in text
    assert "False False" in text  # denied tools are no function of the script
    assert world.ran == []


async def test_a_call_needing_approval_with_nobody_to_give_it_is_refused(tmp_path: Path) -> None:
    world = World()
    script = (
        "try:\n    wipe(target='db')\nexcept ToolCallError as exc:\n    print('refused:', exc)\n"
    )
    agent, model = world.agent(tmp_path, [script_turn(script), "done"])
    async with agent:
        await agent.send("go")
    assert "refused: Tool 'wipe' was not run: it needs approval" in answer(model).text
    assert world.ran == []


async def test_a_call_needing_approval_waits_for_the_approver(tmp_path: Path) -> None:
    world = World()
    asked: list[ApprovalRequest] = []

    async def approver(request: ApprovalRequest) -> ApprovalDecision:
        asked.append(request)
        return ApprovalDecision(decision="allow" if request.input["target"] == "a" else "deny")

    script = (
        "print(wipe(target='a'))\n"
        "try:\n"
        "    wipe(target='b')\n"
        "except ToolCallError as exc:\n"
        "    print('denied:', exc.error_type)\n"
    )
    agent, model = world.agent(tmp_path, [script_turn(script), "done"], approver=approver)
    async with agent:
        await agent.send("go")
    assert answer(model).text == "wiped a\ndenied: permission_denied"
    assert [r.tool_name for r in asked] == ["wipe", "wipe"]
    parent = answer(model).tool_use_id
    assert [r.call_id for r in asked] == [f"{parent}.1", f"{parent}.2"]
    assert world.ran == ["wipe a"]


async def test_an_approval_by_event_is_marked_and_answered_with_decide(tmp_path: Path) -> None:
    world = World()
    agent, model = world.agent(tmp_path, [script_turn("print(wipe(target='x'))"), "done"])
    seen: list[AgentEvent] = []
    async with agent:
        async for event in agent.stream("go"):
            seen.append(event)
            if isinstance(event, ApprovalRequired):
                agent.decide(event.call_id, "allow")
    asked = [e for e in seen if isinstance(e, ApprovalRequired)]
    assert [e.call_id for e in asked] == [f"{answer(model).tool_use_id}.1"]
    assert answer(model).text == "wiped x"


async def test_the_call_limit_raises_in_the_script(tmp_path: Path) -> None:
    world = World()
    script = (
        "for i in range(5):\n"
        "    try:\n"
        "        lookup(key='k' * i)\n"
        "    except ToolCallError as exc:\n"
        "        print(i, exc.error_type)\n"
    )
    agent, model = world.agent(
        tmp_path, [script_turn(script), "done"], policy=CodePolicy(max_calls=3)
    )
    async with agent:
        await agent.send("go")
    text = answer(model).text
    assert "3 policy_violation" in text and "4 policy_violation" in text
    assert "[2 tool calls were refused: at most 3 per script]" in text
    assert len(world.ran) == 3


async def test_inner_calls_are_in_the_store_and_a_resumed_session_reads(tmp_path: Path) -> None:
    world = World()
    db = tmp_path / "s.db"
    store = SQLiteStore(db)
    agent, model = world.agent(
        tmp_path, [script_turn("print(lookup(key='abc'))"), "done"], store=store
    )
    async with agent:
        await agent.send("go")
    assert answer(model).text == "30"
    again = await Agent.resume(
        agent.session_id,
        store=SQLiteStore(db),
        model=ScriptedModel([]),
        registry=world.reg,
        template=AgentTemplate(id="coder", tools=["lookup", "wipe", "code_run"]),
    )
    async with again:
        outer = answer(model).tool_use_id
        record = again.records.get(f"{outer}.1")
        assert record is not None and record.status == "done" and record.name == "lookup"
        # no message holds an inner call: its records keep its arguments and its maker
        assert record.input == {"key": "abc"} and record.parent_call_id == outer
        assert [m.role for m in again.messages] == [m.role for m in agent.messages]


async def test_in_mode_approval_code_run_itself_asks(tmp_path: Path) -> None:
    world = World()
    asked: list[str] = []

    async def approver(request: ApprovalRequest) -> ApprovalDecision:
        asked.append(request.tool_name)
        return ApprovalDecision(decision="deny")

    agent, model = world.agent(
        tmp_path,
        [script_turn("print(lookup(key='a'))"), "done"],
        approver=approver,
        mode="approval",
    )
    async with agent:
        await agent.send("go")
    got = answer(model)
    assert got.is_error and "denied" in got.text
    assert asked == ["code_run"]
    assert world.ran == []


async def test_without_a_sandbox_no_script_runs(tmp_path: Path) -> None:
    from kode.builtin.runtime import POLICY, RuntimePolicy

    world = World()
    marker = tmp_path / "ran"
    script = f"open({str(marker)!r}, 'w').write('x')\nprint(lookup(key='a'))"
    agent, model = world.agent(tmp_path, [script_turn(script), "done"])
    POLICY.set(agent.services, RuntimePolicy(bwrap=str(tmp_path / "no-bwrap")))
    async with agent:
        await agent.send("go")
    got = answer(model)
    assert got.is_error
    assert "code_run runs scripts only in an OS sandbox, and there is none here" in got.text
    assert not marker.exists() and world.ran == []


async def test_a_state_saved_while_a_script_waits_cancels_its_calls_when_restored(
    tmp_path: Path,
) -> None:
    world = World()
    saved: list[AgentState] = []

    async def approver(request: ApprovalRequest) -> ApprovalDecision:
        saved.append(agent.state)  # the script's call waits for approval meanwhile
        return ApprovalDecision(decision="deny")

    agent, model = world.agent(
        tmp_path,
        [script_turn("print(lookup(key='a'))\nwipe(target='x')"), "done"],
        approver=approver,
    )
    async with agent:
        await agent.send("go")
    state = AgentState.model_validate_json(saved[0].model_dump_json())
    outer = answer(model).tool_use_id
    assert [(c.id, c.status, c.parent_call_id) for c in state.tool_calls] == [
        (outer, "running", None),
        (f"{outer}.1", "done", outer),
        (f"{outer}.2", "awaiting_approval", outer),
    ]
    again = Agent.from_state(state, model=ScriptedModel([]), registry=world.reg)
    assert [(r.id, r.status) for r in again.records] == [
        (outer, "cancelled"),
        (f"{outer}.1", "done"),
        (f"{outer}.2", "cancelled"),  # its script cannot resume either
    ]


async def test_a_client_tools_call_from_a_script_fails_and_its_record_ends(tmp_path: Path) -> None:
    world = World()
    world.reg.register(declare_tool("pick_file", input_schema={"type": "object"}), source="client")
    script = "try:\n    pick_file()\nexcept ToolCallError as exc:\n    print(exc.error_type, exc)\n"
    model = ScriptedModel([script_turn(script), "done"])
    agent = Agent.create(
        AgentTemplate(id="coder", tools=["pick_file", "code_run"]),
        model=model,
        registry=world.reg,
        workspace=tmp_path,
    )
    async with agent:
        assert (await agent.send("go")).text == "done"
    assert answer(model).text.startswith("execution_failed Tool 'pick_file' is run by the client")
    record = agent.records.get(f"{answer(model).tool_use_id}.1")
    # no client will ever answer it: it does not stay pending
    assert record is not None and record.status == "failed" and record.result is not None


async def test_an_inner_call_edited_at_approval_is_resumed_with_both_inputs(
    tmp_path: Path,
) -> None:
    # No message holds a script's call: what the script asked for is kept by the records alone.
    world = World()
    db = tmp_path / "s.db"

    async def approver(request: ApprovalRequest) -> ApprovalDecision:
        return ApprovalDecision(decision="allow", input={"target": "b"})

    agent, model = world.agent(
        tmp_path,
        [script_turn("print(wipe(target='a'))"), "done"],
        approver=approver,
        store=SQLiteStore(db),
    )
    async with agent:
        await agent.send("go")
    assert answer(model).text.endswith("wiped b") and world.ran == ["wipe b"]
    inner = f"{answer(model).tool_use_id}.1"
    live = agent.records.get(inner)
    assert live is not None and live.requested_input == {"target": "a"}
    again = await Agent.resume(
        agent.session_id,
        store=SQLiteStore(db),
        model=ScriptedModel([]),
        registry=world.reg,
        template=AgentTemplate(id="coder", tools=["lookup", "wipe", "code_run"]),
    )
    async with again:
        record = again.records.get(inner)
        assert record is not None
        assert (record.input, record.requested_input) == ({"target": "b"}, {"target": "a"})
