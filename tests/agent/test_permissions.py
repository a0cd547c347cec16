"""Permissions: modes, lists with globs, the tool's own requires_approval, approvers, decide()."""

from __future__ import annotations

from contextlib import aclosing
from typing import Any

import anyio
import pytest
from support import assert_history_valid, make_agent, of_type, sent_results, texts

from kode import define_tool
from kode.agent import (
    AgentError,
    ApprovalDecision,
    ApprovalRequest,
    ApprovalRequired,
    Done,
    ToolEnd,
)
from kode.models import tool_use
from kode.registries import ToolRegistry
from kode.tools import Kind

pytestmark = pytest.mark.anyio


@pytest.fixture
def tools(reg: ToolRegistry) -> ToolRegistry:
    @define_tool(registry=reg, kind="read")
    def fs_read(path: str) -> str:
        """Read a file.

        Args:
            path: The file.
        """
        return f"read {path}"

    @define_tool(registry=reg, kind="edit")
    def fs_write(path: str) -> str:
        """Write a file.

        Args:
            path: The file.
        """
        return f"wrote {path}"

    @define_tool(registry=reg, kind="execute")
    def shell(command: str) -> str:
        """Run a command.

        Args:
            command: The command.
        """
        return f"ran {command}"

    @define_tool(registry=reg)
    def note(text: str) -> str:
        """Keep a note (kind other).

        Args:
            text: The note.
        """
        return "noted"

    @define_tool(registry=reg, kind="delete", requires_approval=lambda args: args["path"] != "/tmp")
    def remove(path: str) -> str:
        """Remove a path.

        Args:
            path: The path.
        """
        return f"removed {path}"

    @define_tool(registry=reg, kind="read", requires_approval=True)
    def secrets() -> str:
        """Read the secrets."""
        return "s3cr3t"

    @define_tool(registry=reg, kind="edit", requires_approval=False)
    def touch(path: str) -> str:
        """Touch a file.

        Args:
            path: The file.
        """
        return f"touched {path}"

    return reg


CALLS = {
    "fs_read": {"path": "a"},
    "fs_write": {"path": "a"},
    "shell": {"command": "ls"},
    "note": {"text": "x"},
    "remove": {"path": "/etc"},
    "secrets": {},
    "touch": {"path": "a"},
}


class Recorder:
    """An approver that records every request and answers from a table (default allow)."""

    def __init__(self, answers: dict[str, ApprovalDecision] | None = None) -> None:
        self.requests: list[ApprovalRequest] = []
        self.answers = answers or {}

    async def __call__(self, request: ApprovalRequest) -> ApprovalDecision:
        self.requests.append(request)
        return self.answers.get(request.tool_name, ApprovalDecision(decision="allow"))


async def asked_for(tools: ToolRegistry, names: list[str], **template: Any) -> list[str]:
    """Which of these calls the approver was asked about."""
    approver = Recorder()
    calls = [tool_use(n, CALLS[n], id=n) for n in names]
    agent, model = make_agent(tools, [calls, "ok"], create={"approver": approver}, **template)
    await agent.send("go")
    assert all(not r.is_error for r in sent_results(model))
    return [r.tool_name for r in approver.requests]


ALL = list(CALLS)


async def test_mode_auto_asks_only_when_a_tool_or_the_lists_say_so(tools: ToolRegistry) -> None:
    assert sorted(await asked_for(tools, ALL)) == ["remove", "secrets"]


async def test_mode_approval_asks_for_everything_not_read_only(tools: ToolRegistry) -> None:
    asked = await asked_for(tools, ALL, permission={"mode": "approval"})
    # touch says it needs no approval; fs_read is read-only
    assert sorted(asked) == ["fs_write", "note", "remove", "secrets", "shell"]


async def test_mode_readonly_denies_mutating_kinds(tools: ToolRegistry) -> None:
    calls = [tool_use(n, CALLS[n], id=n) for n in ALL]
    agent, model = make_agent(
        tools, [calls, "ok"], permission={"mode": "readonly"}, create={"approver": Recorder()}
    )
    await agent.send("go")
    results = {r.tool_use_id: r for r in sent_results(model)}
    denied = sorted(k for k, r in results.items() if r.is_error)
    assert denied == ["fs_write", "remove", "shell", "touch"]
    assert results["shell"].text == (
        "Tool 'shell' was not run: the agent is read-only and tool 'shell' is of kind execute."
    )
    assert {r.id: r.status for r in agent.state.tool_calls}["touch"] == "denied"


@pytest.mark.parametrize(
    ("permission", "asked"),
    [
        ({"mode": "approval", "allow": ["fs_*", "SHELL"]}, ["note", "remove", "secrets"]),
        ({"require_approval": ["*_read", "n?te"]}, ["fs_read", "note", "remove", "secrets"]),
        ({"allow": ["remove", "secrets"]}, []),
        ({"mode": "readonly", "allow": ["*"]}, []),
    ],
)
async def test_allow_and_require_approval_lists_with_globs(
    tools: ToolRegistry, permission: dict[str, Any], asked: list[str]
) -> None:
    names = ["fs_read", "fs_write", "shell", "note", "remove", "secrets"]
    assert sorted(await asked_for(tools, names, permission=permission)) == asked


async def test_deny_list_with_globs_wins_over_everything(tools: ToolRegistry) -> None:
    calls = [tool_use(n, CALLS[n], id=n) for n in ["fs_read", "fs_write", "note"]]
    agent, model = make_agent(
        tools, [calls, "ok"], permission={"deny": ["FS_*"], "allow": ["fs_read"]}
    )
    await agent.send("go")
    assert texts(sent_results(model)) == [
        ("Tool 'fs_read' was not run: tool 'fs_read' is denied by the agent's settings.", True),
        ("Tool 'fs_write' was not run: tool 'fs_write' is denied by the agent's settings.", True),
        ("noted", False),
    ]


async def test_requires_approval_as_a_function_of_the_input(tools: ToolRegistry) -> None:
    approver = Recorder()
    calls = [
        tool_use("remove", {"path": "/tmp"}, id="r1"),
        tool_use("remove", {"path": "/home"}, id="r2"),
    ]
    agent, _ = make_agent(tools, [calls, "ok"], create={"approver": approver})
    await agent.send("go")
    assert [(r.call_id, r.input) for r in approver.requests] == [("r2", {"path": "/home"})]


@pytest.mark.parametrize(("mode", "asked"), [("auto", []), ("approval", ["tidy"])])
async def test_a_requires_approval_function_answering_none_leaves_it_to_the_mode(
    reg: ToolRegistry, mode: str, asked: list[str]
) -> None:
    def no_opinion_unless_root(arguments: dict[str, Any]) -> str | None:
        return "tidying the root" if arguments["path"] == "/" else None

    @define_tool(registry=reg, kind="delete", requires_approval=no_opinion_unless_root)
    def tidy(path: str) -> str:
        """Tidy a directory."""
        return "tidied"

    approver = Recorder()
    agent, _ = make_agent(
        reg,
        [[tool_use("tidy", {"path": "/tmp"}, id="t1")], "ok"],
        permission={"mode": mode},
        create={"approver": approver},
    )
    await agent.send("go")
    assert [r.tool_name for r in approver.requests] == asked
    assert [r.reason for r in approver.requests] == ["kind delete needs approval"] * len(asked)


async def test_the_approver_gets_the_request(tools: ToolRegistry) -> None:
    approver = Recorder()
    agent, _ = make_agent(
        tools,
        [[tool_use("shell", {"command": "ls"}, id="s1")], "ok"],
        permission={"mode": "approval"},
        create={"approver": approver},
    )
    await agent.send("go")
    assert approver.requests == [
        ApprovalRequest(
            call_id="s1",
            tool_name="shell",
            input={"command": "ls"},
            reason="kind execute needs approval",
            kind=Kind.EXECUTE,
            rule="mode approval",
        )
    ]


async def test_an_approvers_denial_note_reaches_the_model(tools: ToolRegistry) -> None:
    approver = Recorder({"shell": ApprovalDecision(decision="deny", note="use fs_read instead")})
    agent, model = make_agent(
        tools,
        [[tool_use("shell", {"command": "cat a"}, id="s1")], "ok"],
        permission={"mode": "approval"},
        create={"approver": approver},
    )
    await agent.send("go")
    assert texts(sent_results(model)) == [
        ("Tool 'shell' was denied by the user. Note from the user: use fs_read instead", True)
    ]
    assert agent.state.tool_calls[0].status == "denied"


async def test_a_denial_without_a_note(tools: ToolRegistry) -> None:
    approver = Recorder({"shell": ApprovalDecision(decision="deny")})
    agent, model = make_agent(
        tools,
        [[tool_use("shell", {"command": "ls"})], "ok"],
        permission={"mode": "approval"},
        create={"approver": approver},
    )
    await agent.send("go")
    assert texts(sent_results(model)) == [("Tool 'shell' was denied by the user.", True)]


async def test_allow_always_from_an_approver_is_remembered(tools: ToolRegistry) -> None:
    approver = Recorder({"shell": ApprovalDecision(decision="allow_always")})
    agent, model = make_agent(
        tools,
        [
            [tool_use("shell", {"command": "ls"}, id="s1")],
            [tool_use("shell", {"command": "pwd"}, id="s2"), tool_use("note", {"text": "n"})],
            "ok",
        ],
        permission={"mode": "approval"},
        create={"approver": approver},
    )
    await agent.send("go")
    assert [r.call_id for r in approver.requests if r.tool_name == "shell"] == ["s1"]
    assert texts(sent_results(model, 1)) == [("ran ls", False)]
    assert texts(sent_results(model, 2))[0] == ("ran pwd", False)
    assert agent.state.always_allowed == ["shell"]


# --- without an approver: events and decide() ---------------------------------------------------


async def stream_deciding(
    agent: Any, prompt: str, answers: dict[str, tuple[str, str]]
) -> list[Any]:
    """Run `agent.stream`, answering each approval from `answers` (by call id)."""
    events: list[Any] = []
    with anyio.fail_after(5):
        async for event in agent.stream(prompt):
            events.append(event)
            if isinstance(event, ApprovalRequired):
                decision, note = answers[event.call_id]
                agent.decide(event.call_id, decision, note)
    return events


async def test_stream_asks_and_decide_allows(tools: ToolRegistry) -> None:
    agent, model = make_agent(
        tools,
        [[tool_use("shell", {"command": "ls"}, id="s1")], "ok"],
        permission={"mode": "approval"},
    )
    events = await stream_deciding(agent, "go", {"s1": ("allow", "")})
    assert of_type(events, ApprovalRequired) == [
        ApprovalRequired(
            call_id="s1",
            name="shell",
            input={"command": "ls"},
            reason="kind execute needs approval",
            rule="mode approval",
        )
    ]
    types = [e.type for e in events if e.type != "text_delta"]
    assert types == ["turn_end", "approval_required", "tool_start", "tool_end", "turn_end", "done"]
    assert texts(sent_results(model)) == [("ran ls", False)]


async def test_decide_deny_with_a_note_reaches_the_model(tools: ToolRegistry) -> None:
    agent, model = make_agent(
        tools,
        [[tool_use("shell", {"command": "rm"}, id="s1")], "ok"],
        permission={"mode": "approval"},
    )
    events = await stream_deciding(agent, "go", {"s1": ("deny", "never rm")})
    assert texts(sent_results(model)) == [
        ("Tool 'shell' was denied by the user. Note from the user: never rm", True)
    ]
    (end,) = of_type(events, ToolEnd)
    assert (end.is_error, end.status) == (True, "denied")


async def test_decide_allow_always_is_not_asked_again(tools: ToolRegistry) -> None:
    agent, model = make_agent(
        tools,
        [
            [tool_use("shell", {"command": "ls"}, id="s1")],
            [tool_use("shell", {"command": "pwd"}, id="s2")],
            "ok",
            [tool_use("shell", {"command": "whoami"}, id="s3")],
            "ok again",
        ],
        permission={"mode": "approval"},
    )
    events = await stream_deciding(agent, "go", {"s1": ("allow_always", "")})
    assert [e.call_id for e in of_type(events, ApprovalRequired)] == ["s1"]
    events = await stream_deciding(agent, "more", {})  # the next run of the session too
    assert of_type(events, ApprovalRequired) == []
    assert texts(sent_results(model)) == [("ran whoami", False)]


async def test_concurrent_approvals_are_answered_independently(tools: ToolRegistry) -> None:
    calls = [
        tool_use("shell", {"command": "a"}, id="s1"),
        tool_use("note", {"text": "b"}, id="n1"),
    ]
    agent, model = make_agent(tools, [calls, "ok"], permission={"mode": "approval"})
    events = await stream_deciding(agent, "go", {"s1": ("deny", "no"), "n1": ("allow", "")})
    assert sorted(e.call_id for e in of_type(events, ApprovalRequired)) == ["n1", "s1"]
    assert texts(sent_results(model)) == [
        ("Tool 'shell' was denied by the user. Note from the user: no", True),
        ("noted", False),
    ]


async def test_the_agent_awaits_approval_until_every_request_is_answered(
    tools: ToolRegistry,
) -> None:
    calls = [tool_use("shell", {"command": "a"}, id="s1"), tool_use("note", {"text": "b"}, id="n1")]
    agent, _ = make_agent(tools, [calls, "ok"], permission={"mode": "approval"})
    waiting: set[str] = set()
    statuses: list[str] = []
    with anyio.fail_after(5):
        async with aclosing(agent.stream("go")) as events:
            async for event in events:
                if isinstance(event, ApprovalRequired):
                    waiting.add(event.call_id)
                if waiting == {"s1", "n1"}:
                    waiting.clear()
                    agent.decide("s1", "allow")
                    await anyio.wait_all_tasks_blocked()
                    statuses.append(agent.status)  # n1 still waits
                    agent.decide("n1", "allow")
    assert statuses == ["awaiting_approval"]
    assert agent.status == "idle"


async def test_send_with_on_event_can_decide(tools: ToolRegistry) -> None:
    agent, model = make_agent(
        tools,
        [[tool_use("shell", {"command": "ls"}, id="s1")], "ok"],
        permission={"mode": "approval"},
    )

    def on_event(event: Any) -> None:
        if isinstance(event, ApprovalRequired):
            agent.decide(event.call_id, "allow")

    with anyio.fail_after(5):
        reply = await agent.send("go", on_event=on_event)
    assert texts(sent_results(model)) == [("ran ls", False)]
    assert len(of_type(reply.events, ApprovalRequired)) == 1


async def test_send_without_approver_or_on_event_denies_instead_of_hanging(
    tools: ToolRegistry,
) -> None:
    agent, model = make_agent(
        tools,
        [[tool_use("shell", {"command": "ls"}, id="s1")], "ok"],
        permission={"mode": "approval"},
    )
    with anyio.fail_after(5):
        reply = await agent.send("go")
    assert reply.text == "ok"
    assert texts(sent_results(model)) == [
        (
            "Tool 'shell' was not run: it needs approval (kind execute needs approval) and "
            "nobody can give it here. To allow such calls, pass approver= to Agent.create, or "
            "run the agent with agent.stream() or send(on_event=...) and answer with "
            "agent.decide().",
            True,
        )
    ]
    assert of_type(reply.events, ApprovalRequired) == []


async def test_decide_for_an_unknown_call(tools: ToolRegistry) -> None:
    agent, _ = make_agent(tools, [])
    with pytest.raises(AgentError, match=r"no call 'x' is waiting for approval; waiting: none"):
        agent.decide("x", "allow")


async def test_state_while_awaiting_approval(tools: ToolRegistry) -> None:
    agent, _ = make_agent(
        tools,
        [[tool_use("shell", {"command": "ls"}, id="s1")], "ok"],
        permission={"mode": "approval"},
    )
    seen: list[tuple[str, str]] = []
    with anyio.fail_after(5):
        async for event in agent.stream("go"):
            if isinstance(event, ApprovalRequired):
                state = agent.state
                seen.append((state.status, state.tool_calls[0].status))
                with pytest.raises(AgentError, match="waiting: s1"):
                    agent.decide("other", "allow")
                agent.decide("s1", "allow")
            if isinstance(event, Done):
                seen.append((agent.status, agent.state.tool_calls[0].status))
    assert seen == [("awaiting_approval", "awaiting_approval"), ("idle", "done")]
    assert_history_valid(agent.messages)
