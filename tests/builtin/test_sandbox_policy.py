"""Which policy a command obeys, and what happens where no OS sandbox can be had.

Where bubblewrap is missing (here: a `RuntimePolicy` naming a program that does not exist),
an agent with ``bash_run`` says so once when it is made, and every command off the safe list
asks, whatever ``ask`` says; ``sandbox="off"`` is the way to run unconfined on purpose. An
agent's own policy (``POLICY.set(agent.services, policy)``) decides both whether a command
asks and how it then runs.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import pytest

from kode import Agent, AgentTemplate, ToolRegistry
from kode.agent import ApprovalDecision, ApprovalRequest
from kode.builtin.runtime import (
    POLICY,
    RuntimePolicy,
    bash_run,
    set_default_runtime_policy,
    using_runtime_policy,
)
from kode.cli.log import OneLineFormatter
from kode.models import ScriptedModel, ToolResultContent, tool_use
from kode.testing.programs import requires_sandbox

pytestmark = pytest.mark.anyio

NO_SANDBOX = "no OS sandbox for shell commands"


@pytest.fixture(autouse=True)
def default_policy() -> Iterator[None]:
    previous = set_default_runtime_policy(RuntimePolicy())
    try:
        yield
    finally:
        set_default_runtime_policy(previous)


class Approver:
    def __init__(self, decision: Literal["allow", "deny"] = "allow") -> None:
        self.decision = decision
        self.asked: list[ApprovalRequest] = []

    async def __call__(self, request: ApprovalRequest) -> ApprovalDecision:
        self.asked.append(request)
        return ApprovalDecision(decision=self.decision)

    @property
    def commands(self) -> list[str]:
        return [r.input["command"] for r in self.asked]


def make_agent(
    ws: Path, turns: list[Any], approver: Approver | None = None
) -> tuple[Agent, ScriptedModel]:
    reg = ToolRegistry("test")
    reg.register(bash_run, source="core")
    model = ScriptedModel(turns)
    agent = Agent.create(
        AgentTemplate(id="runner", tools=["bash_run"]),
        model=model,
        registry=reg,
        approver=approver,
        workspace=ws,
    )
    return agent, model


def commands(*lines: str) -> list[Any]:
    return [tool_use("bash_run", {"command": line}) for line in lines]


def results(model: ScriptedModel, request: int = 1) -> list[ToolResultContent]:
    last = model.requests[request].messages[-1]
    return [b for b in last.content if isinstance(b, ToolResultContent)]


def warnings_about_the_sandbox(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING and NO_SANDBOX in r.getMessage()
    ]


async def test_without_a_sandbox_agent_creation_says_so_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    missing = tmp_path / "no-such-bwrap"  # a program of its own: said once per program
    set_default_runtime_policy(RuntimePolicy(security="full", ask="off", bwrap=str(missing)))
    with caplog.at_level(logging.WARNING, logger="kode.builtin.runtime"):
        make_agent(tmp_path, ["."])
        said = warnings_about_the_sandbox(caplog)
        make_agent(tmp_path, ["."])
        make_agent(tmp_path, ["."])
    assert len(said) == 1, said
    (message,) = warnings_about_the_sandbox(caplog)
    assert str(missing) in message and "not installed" in message
    assert "will ask for approval" in message and "sandbox='off'" in message
    # The logger's name says kode; the command line adds its own "kode: " once.
    assert message.startswith("no OS sandbox for shell commands: ")
    [record] = [r for r in caplog.records if NO_SANDBOX in r.getMessage()]
    assert (
        OneLineFormatter()
        .format(record)
        .startswith("kode: warning: no OS sandbox for shell commands: ")
    )


async def test_without_a_sandbox_commands_off_the_safe_list_ask_whatever_ask_says(
    tmp_path: Path,
) -> None:
    missing = tmp_path / "no-such-bwrap"
    set_default_runtime_policy(RuntimePolicy(security="full", ask="off", bwrap=str(missing)))
    (tmp_path / "notes.txt").write_text("read me\n")
    approver = Approver("deny")
    agent, model = make_agent(
        tmp_path, [commands("cat notes.txt", "touch made", "echo $HOME > made"), "."], approver
    )
    async with agent:
        await agent.send("go")
    assert approver.commands == ["touch made", "echo $HOME > made"]
    assert all("no OS sandbox can confine it" in r.reason for r in approver.asked)
    read, *denied = results(model)
    assert not read.is_error and "read me" in read.text  # the safe list still runs, unconfined
    assert all(r.is_error for r in denied)
    assert not (tmp_path / "made").exists()


async def test_without_a_sandbox_sandbox_off_runs_unconfined_on_purpose(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    missing = tmp_path / "no-such-bwrap"
    set_default_runtime_policy(
        RuntimePolicy(security="full", ask="off", sandbox="off", bwrap=str(missing))
    )
    approver = Approver("deny")
    with caplog.at_level(logging.WARNING, logger="kode.builtin.runtime"):
        agent, model = make_agent(tmp_path, [commands("touch made"), "."], approver)
        async with agent:
            await agent.send("go")
    assert approver.commands == []
    (result,) = results(model)
    assert not result.is_error, result.text
    assert (tmp_path / "made").exists()
    assert warnings_about_the_sandbox(caplog) == []


async def test_an_agents_own_policy_decides_approval_and_how_the_call_runs(
    tmp_path: Path,
) -> None:
    """The ambient policy would ask for the command and give it another environment: the
    agent's own says run it without asking, with its variable, and that is what happens."""
    set_default_runtime_policy(RuntimePolicy(ask="always", env={"WHOSE": "the default's"}))
    approver = Approver("allow")
    line = 'echo "policy: $WHOSE" > whose.txt'
    agent, model = make_agent(tmp_path, [commands(line), "."], approver)
    POLICY.set(
        agent.services,
        RuntimePolicy(security="full", ask="off", sandbox="off", env={"WHOSE": "the agent's"}),
    )
    scoped = RuntimePolicy(security="deny", env={"WHOSE": "the block's"})
    with using_runtime_policy(scoped):  # the agent's own wins over a block's too
        async with agent:
            await agent.send("go")
    assert approver.commands == []
    (result,) = results(model)
    assert not result.is_error, result.text
    assert (tmp_path / "whose.txt").read_text() == "policy: the agent's\n"


@requires_sandbox()
async def test_an_agents_own_sandbox_mode_confines_its_commands(tmp_path: Path) -> None:
    """The default would run the command unconfined; the agent's read-only sandbox stops it."""
    set_default_runtime_policy(RuntimePolicy(security="full", ask="off", sandbox="off"))
    agent, model = make_agent(tmp_path, [commands("touch made"), "."])
    POLICY.set(agent.services, RuntimePolicy(security="full", ask="off", sandbox="read-only"))
    async with agent:
        await agent.send("go")
    (result,) = results(model)
    assert "Read-only file system" in result.text
    assert not (tmp_path / "made").exists()
