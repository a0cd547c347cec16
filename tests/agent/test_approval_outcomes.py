"""Approval outcomes: once, always for a tool / an MCP server / a pattern, changed input,
denial with a note; what a request says about a call (describe) and what a result shows."""

from __future__ import annotations

import itertools
from contextlib import aclosing
from typing import Any

import pytest
from support import make_agent, sent_results, texts

from kode import define_tool
from kode.agent import (
    Agent,
    AgentError,
    ApprovalDecision,
    ApprovalRequest,
    ApprovalRequired,
    ToolEnd,
)
from kode.agent.permissions import pattern_allowed
from kode.models import ScriptedModel, tool_use
from kode.registries import ToolRegistry
from kode.sessions import MemoryStore
from kode.tools import CallDetails, Display, ToolResult, text_result

pytestmark = pytest.mark.anyio


@pytest.fixture
def tools(reg: ToolRegistry) -> ToolRegistry:
    @define_tool(registry=reg, kind="execute")
    def shell(command: str) -> ToolResult:
        """Run a command.

        Args:
            command: The command.
        """
        return text_result(
            f"ran {command}", display=Display(kind="terminal", text=f"$ {command}\nok")
        )

    @shell.describe
    def _(args: dict[str, Any], ctx: Any) -> CallDetails:
        return CallDetails(
            description=f"Run `{args['command']}`", locations=("."), pattern=args["command"]
        )

    @define_tool(registry=reg, kind="edit")
    def save(path: str) -> str:
        """Save a file.

        Args:
            path: The file.
        """
        return f"saved {path}"

    def remote(name: str) -> Any:
        def fn(query: str) -> str:
            return f"{name}: {query}"

        fn.__name__ = name
        fn.__doc__ = "Ask the server.\n\nArgs:\n    query: What to ask.\n"
        return define_tool(registry=None, kind="execute")(fn)

    reg.register(remote("gh_issues"), source="mcp", server="github")
    reg.register(remote("gh_pulls"), source="mcp", server="github")
    reg.register(remote("jira_find"), source="mcp", server="jira")
    return reg


class Answers:
    """An approver answering from a list, in order, and recording every request."""

    def __init__(self, *answers: ApprovalDecision) -> None:
        self.answers = list(answers)
        self.requests: list[ApprovalRequest] = []

    async def __call__(self, request: ApprovalRequest) -> ApprovalDecision:
        self.requests.append(request)
        return self.answers.pop(0) if self.answers else ApprovalDecision(decision="deny")


_ids = itertools.count()


def calls(*pairs: tuple[str, dict[str, Any]]) -> list[Any]:
    """One turn's calls, each with an id of its own."""
    return [tool_use(name, args, id=f"c{next(_ids)}") for name, args in pairs]


async def run(tools: ToolRegistry, turns: list[Any], approver: Answers) -> Any:
    agent, model = make_agent(
        tools, [*turns, "done"], permission={"mode": "approval"}, create={"approver": approver}
    )
    await agent.send("go")
    return agent, model


async def test_allow_once_asks_again_for_the_next_call(tools: ToolRegistry) -> None:
    approver = Answers(ApprovalDecision(decision="allow"), ApprovalDecision(decision="allow"))
    await run(tools, [calls(("save", {"path": "a"})), calls(("save", {"path": "b"}))], approver)
    assert [r.input for r in approver.requests] == [{"path": "a"}, {"path": "b"}]


async def test_always_for_the_tool_is_asked_once_and_kept_in_the_session(
    tools: ToolRegistry,
) -> None:
    approver = Answers(ApprovalDecision(decision="allow_always"))
    agent, model = await run(
        tools, [calls(("save", {"path": "a"})), calls(("save", {"path": "b"}))], approver
    )
    assert len(approver.requests) == 1
    assert texts(sent_results(model)) == [("saved b", False)]
    assert "save" in agent.always_allowed
    assert "save" in agent.state.always_allowed


async def test_always_for_a_server_covers_its_other_tools_not_other_servers(
    tools: ToolRegistry,
) -> None:
    approver = Answers(
        ApprovalDecision(decision="allow_always", scope="server"),
        ApprovalDecision(decision="deny", note="not jira"),
    )
    _, model = await run(
        tools,
        [
            calls(("gh_issues", {"query": "bug"})),
            calls(("gh_pulls", {"query": "open"}), ("jira_find", {"query": "x"})),
        ],
        approver,
    )
    assert [(r.tool_name, r.server) for r in approver.requests] == [
        ("gh_issues", "github"),
        ("jira_find", "jira"),
    ]
    assert approver.requests[0].description == "Call gh_issues on MCP server 'github'"
    results = texts(sent_results(model))
    assert results[0] == ("gh_pulls: open", False)
    assert results[1][1] and "not jira" in results[1][0]


async def test_always_for_a_command_prefix_covers_longer_commands_only(
    tools: ToolRegistry,
) -> None:
    approver = Answers(
        ApprovalDecision(decision="allow_always", scope="pattern", pattern="git status"),
        ApprovalDecision(decision="deny"),
        ApprovalDecision(decision="deny"),
    )
    _, model = await run(
        tools,
        [
            calls(("shell", {"command": "git status"})),
            calls(
                ("shell", {"command": "git status -s"}),
                ("shell", {"command": "git statusx"}),
                ("shell", {"command": "git status; rm -rf ~"}),
            ),
        ],
        approver,
    )
    asked = [r.input["command"] for r in approver.requests]
    assert asked == ["git status", "git statusx", "git status; rm -rf ~"]
    assert approver.requests[0].pattern == "git status"
    assert texts(sent_results(model))[0] == ("ran git status -s", False)


def test_pattern_prefixes_stop_at_shell_joiners() -> None:
    kept = {"shell:git status", "save"}
    assert pattern_allowed("shell", "git status", kept) == "git status"
    assert pattern_allowed("shell", "git status --short", kept) == "git status"
    for other in ("git statusx", "git status && rm x", "git status | sh", "git status $(id)"):
        assert pattern_allowed("shell", other, kept) is None
    assert pattern_allowed("save", "git status", kept) is None
    assert pattern_allowed("shell", None, kept) is None


async def test_changed_input_runs_after_it_is_validated_again(tools: ToolRegistry) -> None:
    approver = Answers(
        ApprovalDecision(decision="allow", input={"command": "ls -l"}),
        ApprovalDecision(decision="allow", input={"command": 42}),
    )
    _, model = await run(
        tools,
        [calls(("shell", {"command": "rm -rf x"})), calls(("shell", {"command": "rm y"}))],
        approver,
    )
    first = texts(sent_results(model, 1))
    assert first == [
        (
            "The user changed the input of this call before approving it, so it ran with "
            '{"command": "ls -l"} instead of the input you sent.\nran ls -l',
            False,
        )
    ]
    text, is_error = texts(sent_results(model))[0]
    assert is_error
    assert "the input the user gave instead is not valid" in text
    assert "command" in text


async def test_decide_refuses_an_invalid_input_and_the_call_still_waits(
    tools: ToolRegistry,
) -> None:
    agent, model = make_agent(
        tools,
        [calls(("shell", {"command": "rm -rf x"})), "done"],
        permission={"mode": "approval"},
    )
    seen: list[ApprovalRequired] = []
    async with aclosing(agent.stream("go")) as events:
        async for event in events:
            if isinstance(event, ApprovalRequired):
                seen.append(event)
                with pytest.raises(AgentError, match="not valid for shell, and the call still"):
                    agent.decide(event.call_id, "allow", input={"command": ["no"]})
                with pytest.raises(AgentError, match="not an MCP tool"):
                    agent.decide(event.call_id, "allow_always", scope="server")
                agent.decide(event.call_id, "allow", input={"command": "echo safe"})
    assert seen[0].description == "Run `rm -rf x`"
    assert seen[0].pattern == "rm -rf x"
    assert seen[0].rule == "mode approval"
    (text, is_error), *_ = texts(sent_results(model))
    assert text.endswith("\nran echo safe") and not is_error


async def test_deny_with_a_note_reaches_the_model(tools: ToolRegistry) -> None:
    approver = Answers(ApprovalDecision(decision="deny", note="use git diff"))
    _, model = await run(tools, [calls(("shell", {"command": "git log"}))], approver)
    text, is_error = texts(sent_results(model))[0]
    assert is_error and "denied by the user" in text and "use git diff" in text


async def test_a_display_reaches_the_event_but_never_the_model(tools: ToolRegistry) -> None:
    agent, model = make_agent(tools, [calls(("shell", {"command": "ls"})), "done"])
    ends: list[ToolEnd] = []
    async with aclosing(agent.stream("go")) as events:
        async for event in events:
            if isinstance(event, ToolEnd):
                ends.append(event)
    assert ends[0].display == Display(kind="terminal", text="$ ls\nok")
    block = sent_results(model)[0]
    assert "$ ls" not in block.model_dump_json()
    assert "$ ls" not in agent.state.model_dump_json()


async def test_always_answers_are_kept_by_the_store_and_resumed(tools: ToolRegistry) -> None:
    store = MemoryStore()
    approver = Answers(
        ApprovalDecision(decision="allow_always", scope="server"),
        ApprovalDecision(decision="allow_always", scope="pattern"),
        ApprovalDecision(decision="allow_always"),
    )
    agent, _ = make_agent(
        tools,
        [
            calls(
                ("gh_issues", {"query": "bug"}),
                ("shell", {"command": "git status"}),
                ("save", {"path": "a"}),
            ),
            "done",
        ],
        permission={"mode": "approval"},
        create={"approver": approver, "store": store},
    )
    await agent.send("go")
    await agent.aclose()
    kept = (await store.load(agent.session_id)).state().always_allowed
    assert sorted(kept) == ["save", "server:github", "shell:git status"]
    again = await Agent.resume(
        agent.session_id,
        store=store,
        model=ScriptedModel(
            [calls(("gh_pulls", {"query": "x"}), ("shell", {"command": "git status -s"})), "ok"]
        ),
        template=agent.template,
        registry=tools,
        approver=Answers(),  # denies anything it is asked
    )
    await again.send("more")
    await again.aclose()
    assert sorted(again.always_allowed) == ["save", "server:github", "shell:git status"]
    assert [r.tool_name for r in again.approver.requests] == []  # type: ignore[union-attr]


async def test_a_describe_function_that_fails_leaves_the_request_plain(
    reg: ToolRegistry, caplog: pytest.LogCaptureFixture
) -> None:
    @define_tool(registry=reg, kind="edit")
    def broken(x: int) -> str:
        """Break.

        Args:
            x: A number.
        """
        return "ran"

    @define_tool(registry=reg, kind="edit")
    def odd(x: int) -> str:
        """Return something odd from describe.

        Args:
            x: A number.
        """
        return "ran"

    @broken.describe
    def _(args: dict[str, Any], ctx: Any) -> CallDetails:
        raise RuntimeError("no description today")

    odd.describe(lambda args, ctx: "not details")  # type: ignore[arg-type,return-value]
    approver = Answers(ApprovalDecision(decision="allow"), ApprovalDecision(decision="allow"))
    _, model = await run(reg, [calls(("broken", {"x": 1}), ("odd", {"x": 2}))], approver)
    assert [(r.description, r.diff, r.pattern) for r in approver.requests] == [
        ("", "", None),
        ("", "", None),
    ]
    assert texts(sent_results(model)) == [("ran", False), ("ran", False)]
    assert "the describe function of 'broken' raised" in caplog.text
    assert "returned str, not CallDetails" in caplog.text
    with pytest.raises(TypeError, match="describe takes a function"):
        odd.describe("nope")  # type: ignore[arg-type]


async def test_decide_needs_a_pattern_for_the_pattern_scope(reg: ToolRegistry) -> None:
    @define_tool(registry=reg, kind="edit")
    def save(path: str) -> str:
        """Save.

        Args:
            path: Where.
        """
        return "saved"

    agent, model = make_agent(
        reg, [calls(("save", {"path": "a"})), "done"], permission={"mode": "approval"}
    )
    async with aclosing(agent.stream("go")) as events:
        async for event in events:
            if isinstance(event, ApprovalRequired):
                assert event.pattern is None
                with pytest.raises(AgentError, match="gives no pattern for its calls"):
                    agent.decide(event.call_id, "allow_always", scope="pattern")
                agent.decide(event.call_id, "allow_always", scope="pattern", pattern="a")
    assert "save:a" in agent.always_allowed
    assert texts(sent_results(model)) == [("saved", False)]


async def test_a_decision_through_the_store_carries_its_scope_and_input(
    tools: ToolRegistry,
) -> None:
    store = MemoryStore()
    agent, model = make_agent(
        tools,
        [
            calls(("shell", {"command": "git status"})),
            calls(("shell", {"command": "git status --short"})),
            "done",
        ],
        permission={"mode": "approval"},
        create={"store": store},
    )
    asked = 0
    async with aclosing(agent.stream("go")) as events:
        async for event in events:
            if isinstance(event, ApprovalRequired):
                asked += 1
                seen = (await store.load(agent.session_id)).state().approvals[event.call_id]
                assert (seen.request.description, seen.request.pattern, seen.request.rule) == (
                    "Run `git status`",
                    "git status",
                    "mode approval",
                )
                await Agent.decide_in_store(  # as another process would
                    store,
                    agent.session_id,
                    event.call_id,
                    "allow_always",
                    scope="pattern",
                    pattern="git status",
                    input={"command": "git status -b"},
                )
    await agent.aclose()
    assert asked == 1
    (text, is_error), *_ = texts(sent_results(model, 1))
    assert text.endswith(
        '{"command": "git status -b"} instead of the input you sent.\nran git status -b'
    )
    assert not is_error
    assert texts(sent_results(model)) == [("ran git status --short", False)]
    assert "shell:git status" in agent.always_allowed


async def test_an_action_a_call_asks_about_is_described_and_remembered(
    reg: ToolRegistry,
) -> None:
    from kode.tools.context import ToolContext
    from kode.tools.services import AGENT

    @define_tool(registry=None, kind="execute")
    def launch(target: str) -> str:
        """Launch (an action described as a call; not registered).

        Args:
            target: Where.
        """
        return ""

    @launch.describe
    def _(args: dict[str, Any], ctx: Any) -> CallDetails:
        return CallDetails(description=f"Launch at {args['target']}", pattern=args["target"])

    @define_tool(registry=reg, kind="think")
    async def plan(target: str, ctx: ToolContext) -> str:
        """Plan, asking to launch.

        Args:
            target: Where.
        """
        link = AGENT.get(ctx.services)
        assert link is not None
        refusal = await link.approve(launch, {"target": target}, ctx, call_id="launch-1")
        return refusal or "launched"

    approver = Answers(ApprovalDecision(decision="allow_always", scope="pattern"))
    agent, model = make_agent(
        reg,
        [calls(("plan", {"target": "moon"})), calls(("plan", {"target": "moon"})), "done"],
        permission={"mode": "approval"},
        create={"approver": approver},
    )
    await agent.send("go")
    assert [(r.description, r.pattern, r.rule) for r in approver.requests] == [
        ("Launch at moon", "moon", "mode approval")
    ]
    assert "launch:moon" in agent.always_allowed
    assert texts(sent_results(model)) == [("launched", False)]
