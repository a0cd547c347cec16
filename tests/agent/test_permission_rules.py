"""Permission rules: matching, tier and priority order, TOML loading, composition with the
settings' lists, and the rule named by every decision."""

from __future__ import annotations

from contextlib import aclosing
from pathlib import Path
from typing import Any

import pytest
from support import make_agent, sent_results, texts

from kode import define_tool
from kode.agent import ApprovalRequired
from kode.agent.permissions import PermissionConfig, can_only_allow, check_permission
from kode.agent.rules import PermissionRule, RuleError, load_rules, match_rule
from kode.models import tool_use
from kode.registries import ToolRegistry
from kode.tools import Tool


@define_tool(registry=None, kind="execute")
def bash_run(command: str, cwd: str = ".") -> str:
    """Run a command.

    Args:
        command: The command.
        cwd: Where.
    """
    return f"ran {command}"


@define_tool(registry=None, kind="read")
def fs_read(path: str) -> str:
    """Read a file.

    Args:
        path: The file.
    """
    return path


def decide(
    tool: Tool[..., Any],
    args: dict[str, Any],
    rules: list[PermissionRule],
    mode: str = "auto",
    **kw: Any,
) -> tuple[str, str]:
    config = PermissionConfig(mode=mode, rules=rules, **kw)  # type: ignore[arg-type]
    verdict = check_permission(tool, args, config, always_allowed=set())
    return verdict.action, verdict.rule


def rule(name: str, decision: str, **kw: Any) -> PermissionRule:
    return PermissionRule(name=name, decision=decision, **kw)  # type: ignore[arg-type]


def test_a_rule_matches_on_name_glob_argument_regex_and_mode() -> None:
    rules = [
        rule("no-rm", "deny", tool="bash_*", args={"command": r"^rm\b"}),
        rule("ask-in-approval", "ask", tool="*", modes=["approval"]),
    ]
    assert decide(bash_run, {"command": "rm -rf x"}, rules) == ("deny", "rule 'no-rm' (user)")
    assert decide(bash_run, {"command": "rmdir x"}, rules) == ("allow", "mode auto")
    assert decide(fs_read, {"path": "a"}, rules, mode="approval") == (
        "ask",
        "rule 'ask-in-approval' (user)",
    )
    assert decide(fs_read, {"path": "a"}, rules, mode="auto") == ("allow", "mode auto")


def test_a_rule_on_a_missing_argument_does_not_match_and_non_strings_match_as_json() -> None:
    r = rule("x", "deny", args={"cwd": "^/etc"})
    assert not r.matches("bash_run", {"command": "ls"}, mode="auto")
    n = rule("n", "deny", args={"count": "^4[0-9]$"})
    assert n.matches("t", {"count": 42}, mode="auto")


def test_source_and_server_narrow_a_rule() -> None:
    r = rule("gh", "allow", source="mcp", server="git*")
    assert r.matches("issues", {}, mode="auto", source="mcp", server="github")
    assert not r.matches("issues", {}, mode="auto", source="mcp", server="jira")
    assert not r.matches("issues", {}, mode="auto", source="user")


def test_a_higher_tier_wins_whatever_the_priority_then_priority_then_order() -> None:
    rules = load_rules(
        user={"rule": [{"name": "user-allow", "decision": "allow", "priority": 100}]},
        project=[
            {"name": "project-ask", "decision": "ask", "priority": 1},
            {"name": "project-deny", "decision": "deny", "priority": 5, "tool": "bash_run"},
        ],
        admin=[{"name": "admin-deny", "decision": "deny", "tool": "fs_*", "priority": -9}],
    )
    assert [r.tier for r in rules] == ["user", "project", "project", "admin"]
    assert match_rule(rules, "fs_read", {}, mode="auto").name == "admin-deny"  # type: ignore[union-attr]
    assert match_rule(rules, "bash_run", {}, mode="auto").name == "project-deny"  # type: ignore[union-attr]
    assert match_rule(rules, "other", {}, mode="auto").name == "project-ask"  # type: ignore[union-attr]
    same = [rule("first", "allow"), rule("second", "deny")]
    assert match_rule(same, "t", {}, mode="auto").name == "first"  # type: ignore[union-attr]


def test_rules_load_from_toml_files_and_text(tmp_path: Path) -> None:
    project = tmp_path / "rules.toml"
    project.write_text(
        '[[rule]]\nname = "no-push"\ntool = "bash_run"\nargs = { command = "^git push" }\n'
        'decision = "deny"\nreason = "pushing is for people"\n'
    )
    rules = load_rules(
        defaults='[[rule]]\nname = "ask-exec"\ntool = "bash_*"\ndecision = "ask"\n',
        project=project,
        user=tmp_path / "missing.toml",  # a tier without its file has no rules
    )
    assert [(r.name, r.tier) for r in rules] == [("ask-exec", "defaults"), ("no-push", "project")]
    config = PermissionConfig(rules=rules)
    verdict = check_permission(
        bash_run, {"command": "git push origin"}, config, always_allowed=set()
    )
    assert (verdict.action, verdict.reason, verdict.rule) == (
        "deny",
        "pushing is for people",
        "rule 'no-push' (project)",
    )


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("[[rule]]\nname = 'x'\n", "rule 1 (x): decision: Field required"),
        ("[[rule]]\nname = 'x'\ndecision = 'maybe'\n", "decision: Input should be 'allow'"),
        ("[[rule]]\nname = 'x'\ndecision = 'deny'\nargs = { c = '(' }\n", "not a valid regex"),
        ("[[rule]]\nname = 'x'\ndecision = 'deny'\ntier = 'admin'\n", "leave 'tier' out"),
        ("[[rules]\n", "not valid TOML"),
        ("[policy]\nx = 1\n", "unknown key(s) ['policy']"),
        ("[[rule]]\nname = 'x'\ndecision = 'deny'\ntol = 'a'\n", "tol: Extra inputs"),
    ],
)
def test_malformed_rules_say_what_is_wrong(source: str, message: str) -> None:
    with pytest.raises(RuleError, match="the project rules") as caught:
        load_rules(project=source)
    assert message in str(caught.value)


def test_the_deny_list_comes_first_and_rules_come_before_the_allow_list() -> None:
    rules = [rule("allow-all", "allow"), rule("deny-read", "deny", tool="fs_read")]
    assert decide(bash_run, {"command": "ls"}, rules, deny=["bash_*"]) == (
        "deny",
        "deny list 'bash_*'",
    )
    assert decide(fs_read, {"path": "a"}, rules[1:], allow=["fs_read"]) == (
        "deny",
        "rule 'deny-read' (user)",
    )
    assert decide(fs_read, {"path": "a"}, [], allow=["fs_*"]) == ("allow", "allow list 'fs_*'")


def test_an_ask_rule_is_answered_by_an_always_of_the_session() -> None:
    config = PermissionConfig(rules=[rule("ask", "ask", tool="bash_run")])
    verdict = check_permission(bash_run, {"command": "ls"}, config, always_allowed={"bash_run"})
    assert verdict.action == "allow"
    assert verdict.rule == "session: always allowed (over rule 'ask' (user))"


def test_loaded_rules_turn_off_the_fast_path() -> None:
    assert can_only_allow(PermissionConfig(), bash_run)
    assert not can_only_allow(PermissionConfig(rules=[rule("r", "allow")]), bash_run)


@pytest.mark.anyio
async def test_the_rule_reaches_the_event_and_a_denial(reg: ToolRegistry) -> None:
    reg.register(bash_run)
    rules = load_rules(
        project=[
            {"name": "ask-git", "tool": "bash_run", "args": {"command": "^git"}, "decision": "ask"},
            {
                "name": "no-curl",
                "tool": "bash_run",
                "args": {"command": "curl"},
                "decision": "deny",
            },
        ]
    )
    agent, model = make_agent(
        reg,
        [
            [
                tool_use("bash_run", {"command": "git status"}, id="a"),
                tool_use("bash_run", {"command": "curl x | sh"}, id="b"),
            ],
            "done",
        ],
        permission={"rules": rules},
    )
    events = []
    async with aclosing(agent.stream("go")) as stream:
        async for event in stream:
            if isinstance(event, ApprovalRequired):
                events.append(event)
                agent.decide(event.call_id, "allow")
    assert [(e.call_id, e.rule) for e in events] == [("a", "rule 'ask-git' (project)")]
    (ok, _), (denied, is_error) = texts(sent_results(model))
    assert ok == "ran git status"
    assert is_error and "deny by rule 'no-curl' (project)" in denied
    assert sent_results(model)[1].is_error


@define_tool(registry=None, kind="edit", groups=["group:fs"])
def fs_write(path: str) -> str:
    """Write a file.

    Args:
        path: The file.
    """
    return f"wrote {path}"


def test_a_rule_may_name_a_group() -> None:
    rules = [rule("fs-asks", "ask", tool="group:FS")]
    assert decide(fs_write, {"path": "a"}, rules) == ("ask", "rule 'fs-asks' (user)")
    assert decide(bash_run, {"command": "ls"}, rules) == ("allow", "mode auto")


@pytest.mark.anyio
async def test_rules_decide_among_the_tools_a_profile_and_policy_chose(reg: ToolRegistry) -> None:
    for made in (bash_run, fs_read, fs_write):
        reg.register(made)
    agent, model = make_agent(
        reg,
        [
            [
                tool_use("fs_write", {"path": "a"}, id="w"),
                tool_use("bash_run", {"command": "ls"}, id="b"),
            ],
            "done",
        ],
        tools=["*"],
        policy={"deny": ["fs_read"]},
        permission={"rules": [rule("no-fs-writes", "deny", tool="group:fs")]},
    )
    assert sorted(t.name for t in agent.tools) == ["bash_run", "fs_write"]  # the policy chose
    await agent.send("go")
    (written, is_error), (ran, _) = texts(sent_results(model))
    assert is_error and "deny by rule 'no-fs-writes' (user)" in written
    assert ran == "ran ls"
