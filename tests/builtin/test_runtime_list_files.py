"""Options that read the names of the files to open from a file: the policy cannot see them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kode import Agent, AgentTemplate, ToolRegistry
from kode.agent import ApprovalDecision, ApprovalRequest
from kode.builtin.runtime import (
    RuntimePolicy,
    bash_run,
    check_command,
    set_default_runtime_policy,
)
from kode.models import ScriptedModel, ToolResultContent, tool_use

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def default_policy() -> Iterator[None]:
    previous = set_default_runtime_policy(RuntimePolicy())
    try:
        yield
    finally:
        set_default_runtime_policy(previous)


@pytest.mark.parametrize(
    "command",
    [
        "file -f names",
        "file --files-from names",
        "file --files-from=names",
        "file --files=names",  # an abbreviation
        "file -bf names",  # inside a cluster
        "file -f - < names",
        "du --files0-from=names",
        "du -s --files0-from names",
        "wc --files0-from=names",
        "wc -l --files0-from=-",
    ],
)
def test_a_list_of_names_read_from_a_file_is_a_miss(command: str) -> None:
    check = check_command(RuntimePolicy(), command)
    assert check.action == "ask", check
    assert "an option that can write files" in check.reason


@pytest.mark.parametrize("command", ["file names", "file -b -L src/a.py", "du -sh .", "wc -l a"])
def test_the_same_commands_naming_their_files_still_run(command: str) -> None:
    assert check_command(RuntimePolicy(), command).action == "run"


async def test_file_dash_f_does_not_reveal_files_outside_without_approval(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text("#!/usr/bin/env python3\nprint('private')\n")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "names").write_text(f"{outside / 'secret.py'}\n")

    asked: list[ApprovalRequest] = []

    async def deny(request: ApprovalRequest) -> ApprovalDecision:
        asked.append(request)
        return ApprovalDecision(decision="deny")

    reg = ToolRegistry("test")
    reg.register(bash_run, source="core")
    model = ScriptedModel([[tool_use("bash_run", {"command": "file -f names"})], "done"])
    agent = Agent.create(
        AgentTemplate(id="runner", tools=["bash_run"]),
        model=model,
        registry=reg,
        approver=deny,
        workspace=workspace,
    )
    async with agent:
        await agent.send("go")
    assert [r.input["command"] for r in asked] == ["file -f names"]
    (result,) = [
        b for b in model.requests[1].messages[-1].content if isinstance(b, ToolResultContent)
    ]
    assert result.is_error and "denied by the user" in result.text
    assert "secret.py" not in result.text and "script" not in result.text
