"""The hostile-command catalogue against the default runtime policy, checked and end to end.

Each hostile command must need approval (or be refused) under the default policy, with and
without the optional bashlex parser; run through an agent with nobody to approve, none may
leave a marker file. The catalogue itself is checked too: each command marked as creating a
marker really does when it runs unrestricted, so a missing marker proves the policy stopped it.
"""

from __future__ import annotations

import os
import shutil
import string
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from bash_catalogue import BENIGN, HOSTILE, MARKER, Hostile, markers, prepare_workspace

from kode import Agent, AgentTemplate, ToolRegistry
from kode.builtin._shared import _shell_parse
from kode.builtin.runtime import RuntimePolicy, bash_run, check_command, set_default_runtime_policy
from kode.models import ScriptedModel, ToolResultContent, tool_use
from kode.testing.programs import missing_program

CREATORS = [h for h in HOSTILE if h.creates]
PLAIN = set(" \t\n|;&*?[]~.-_/,+=%@^:" + string.ascii_letters + string.digits)


def _id(hostile: Hostile) -> str:
    return hostile.command.replace("\n", "\\n")[:60]


@pytest.fixture
def without_bashlex(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_shell_parse, "BASHLEX", None)


@pytest.fixture
def default_policy() -> Iterator[None]:
    previous = set_default_runtime_policy(RuntimePolicy())
    try:
        yield
    finally:
        set_default_runtime_policy(previous)


def test_the_catalogue_is_large_and_has_no_duplicates() -> None:
    assert len(HOSTILE) >= 165
    assert len(CREATORS) >= 165
    assert len({h.command for h in HOSTILE}) == len(HOSTILE)
    assert all(
        "@M@" in h.command or "hook.sh" in h.command or "PATH=" in h.command for h in CREATORS
    )


# --- the decision --------------------------------------------------------------------------------


@pytest.mark.parametrize("hostile", HOSTILE, ids=_id)
def test_hostile_commands_need_approval(hostile: Hostile) -> None:
    command = hostile.line()
    assert check_command(RuntimePolicy(), command).action in ("ask", "refuse")
    assert check_command(RuntimePolicy(ask="off"), command).action == "refuse"


@pytest.mark.usefixtures("without_bashlex")
@pytest.mark.parametrize("hostile", HOSTILE, ids=_id)
def test_hostile_commands_need_approval_without_bashlex(hostile: Hostile) -> None:
    assert check_command(RuntimePolicy(), hostile.line()).action in ("ask", "refuse")


@pytest.mark.parametrize("command", BENIGN)
def test_benign_commands_run_without_approval(command: str) -> None:
    check = check_command(RuntimePolicy(), command)
    assert (check.action, check.misses) == ("run", ()), check.reason


@pytest.mark.usefixtures("without_bashlex")
@pytest.mark.parametrize("command", BENIGN)
def test_without_bashlex_only_plain_words_run(command: str) -> None:
    expected = "run" if set(command) <= PLAIN and "&" not in command.replace("&&", "") else "ask"
    assert check_command(RuntimePolicy(), command).action == expected


# --- the catalogue is real: unrestricted, each creator leaves a marker ---------------------------


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("catalogue")
    prepare_workspace(root)
    return root


def _clear(root: Path) -> None:
    for found in markers(root):
        if found.is_dir() and not found.is_symlink():
            shutil.rmtree(found)
        else:
            found.unlink()


# The Debian package of each program a creator may need (where its name differs).
PACKAGES = {
    "node": "nodejs",
    "php": "php-cli",
    "rg": "ripgrep",
    "script": "bsdutils",
    "tclsh": "tcl",
}


@pytest.mark.parametrize("hostile", CREATORS, ids=_id)
def test_each_creator_really_creates_a_marker(hostile: Hostile, workspace: Path) -> None:
    missing = [n for n in hostile.needs if shutil.which(n) is None]
    if missing:
        pytest.skip("; ".join(missing_program(n, package=PACKAGES.get(n, n)) for n in missing))
    _clear(workspace)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(workspace),
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        "LC_ALL": "C",
    }
    subprocess.run(
        ["bash", "-c", hostile.line(f"{MARKER}_1")],
        cwd=workspace,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=60,
        check=False,
    )
    try:
        assert markers(workspace), "the command left no marker: the catalogue entry is wrong"
    finally:
        _clear(workspace)


# --- end to end: through an agent with nobody to approve -----------------------------------------


def _agent(root: Path, commands: list[str]) -> tuple[Agent, ScriptedModel]:
    reg = ToolRegistry("test")
    reg.register(bash_run, source="core")
    model = ScriptedModel([[tool_use("bash_run", {"command": c}) for c in commands], "done"])
    agent = Agent.create(
        AgentTemplate(id="runner", tools=["bash_run"]), model=model, registry=reg, workspace=root
    )
    return agent, model


def _results(model: ScriptedModel) -> list[ToolResultContent]:
    last = model.requests[1].messages[-1]
    return [b for b in last.content if isinstance(b, ToolResultContent)]


@pytest.mark.anyio
@pytest.mark.usefixtures("default_policy")
@pytest.mark.parametrize("bashlex", ["with bashlex", "without bashlex"])
async def test_no_hostile_command_runs_through_an_agent_without_approver(
    tmp_path: Path, bashlex: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if bashlex == "without bashlex":
        monkeypatch.setattr(_shell_parse, "BASHLEX", None)
    prepare_workspace(tmp_path)
    commands = [h.line(f"{MARKER}_{i}") for i, h in enumerate(CREATORS)]
    agent, model = _agent(tmp_path, commands)
    async with agent:
        await agent.send("go")
    assert markers(tmp_path) == []
    results = _results(model)
    assert len(results) == len(commands)
    ran = [c for c, r in zip(commands, results, strict=True) if not r.is_error]
    assert ran == []


@pytest.mark.anyio
@pytest.mark.usefixtures("default_policy")
async def test_benign_commands_run_through_an_agent_without_approver(tmp_path: Path) -> None:
    prepare_workspace(tmp_path)
    agent, model = _agent(tmp_path, BENIGN)
    async with agent:
        await agent.send("go")
    refused = [
        (command, r.text)
        for command, r in zip(BENIGN, _results(model), strict=True)
        if "was not run" in r.text or "refused" in r.text
    ]
    assert refused == []
