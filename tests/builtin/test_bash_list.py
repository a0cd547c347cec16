"""bash_list: the background shells an agent started, with command, age and status."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from kode import Agent, AgentTemplate, ToolContext, ToolRegistry
from kode.builtin.runtime import (
    ProcessManager,
    RuntimePolicy,
    bash_kill,
    bash_list,
    bash_logs,
    bash_run,
    set_default_runtime_policy,
)
from kode.models import ScriptedModel, ToolResultContent, tool_use
from kode.testing.programs import runnable
from kode.tools.workspace import Workspace

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="background shells"),
]


@pytest.fixture(autouse=True)
def trusted_default() -> Iterator[None]:
    # Sandboxed where kode can make a sandbox, else unconfined: these test the listing.
    previous = set_default_runtime_policy(runnable(RuntimePolicy(security="full", ask="off")))
    try:
        yield
    finally:
        set_default_runtime_policy(previous)


@pytest.fixture
async def ctx(tmp_path: Path) -> AsyncIterator[ToolContext[None]]:
    made: ToolContext[None] = ToolContext(workspace=Workspace(root=tmp_path))
    try:
        yield made
    finally:
        manager = made.services.get("processes")
        if manager is not None:
            await manager.aclose()


async def wait_for(predicate: Callable[[], Any], limit: float = 10.0) -> None:
    with anyio.fail_after(limit):
        while True:
            if predicate():
                return
            await anyio.sleep(0.02)


async def test_no_shells(ctx: ToolContext[None]) -> None:
    result = await bash_list.run({}, ctx)
    assert result.text == "No background shells. Start one with bash_run(background=true)."
    assert result.details == {"shells": []}
    assert "processes" not in ctx.services  # listing makes no manager


async def test_running_exited_and_killed_shells(ctx: ToolContext[None]) -> None:
    run = bash_run.run
    await run({"command": "sleep 30", "background": True}, ctx)
    await run({"command": "echo done; exit 3", "background": True}, ctx)
    await run({"command": "sleep 40", "background": True}, ctx)
    manager = ctx.services["processes"]
    assert isinstance(manager, ProcessManager)
    await wait_for(lambda: manager.get("shell_2").exit_code is not None)
    await wait_for(lambda: manager.get("shell_2").log.stat().st_size > 0)
    await bash_kill.run({"shell_id": "shell_3"}, ctx)
    result = await bash_list.run({}, ctx)
    lines = result.text.splitlines()
    assert lines[0] == "3 background shells (1 running):"
    assert lines[1].startswith("shell_1  running  started ") and lines[2] == "    $ sleep 30"
    assert lines[3].startswith("shell_2  exited 3  started ")
    assert lines[3].endswith("5 bytes of output not read yet")  # "done\n"
    assert lines[4] == "    $ echo done; exit 3"
    assert lines[5].startswith("shell_3  killed (SIGTERM)  started ")
    assert result.details is not None
    shells = result.details["shells"]
    assert [(s["shell_id"], s["running"], s["exit_code"]) for s in shells] == [
        ("shell_1", True, None),
        ("shell_2", False, 3),
        ("shell_3", False, -15),
    ]
    assert all(s["age_seconds"] >= 0 and s["pid"] > 0 for s in shells)
    # Reading the output clears the note; running_only lists what still runs.
    await bash_logs.run({"shell_id": "shell_2"}, ctx)
    again = await bash_list.run({"running_only": True}, ctx)
    assert again.text.splitlines() == [
        "1 background shell running:",
        again.text.splitlines()[1],
        "    $ sleep 30",
    ]
    assert "not read yet" not in again.text


async def test_an_agent_lists_its_shells(tmp_path: Path) -> None:
    reg = ToolRegistry("test")
    for made in (bash_run, bash_logs, bash_kill, bash_list):
        reg.register(made, source="core")
    model = ScriptedModel(
        [
            [tool_use("bash_run", {"command": "sleep 30", "background": True})],
            [tool_use("bash_list", {})],
            "ok",
        ]
    )
    async with Agent.create(
        AgentTemplate(id="runner", tools=["group:runtime"]),
        model=model,
        registry=reg,
        workspace=tmp_path,
    ) as agent:
        assert "bash_list" in [t.name for t in agent.tools]
        await agent.send("start and list")
    last = model.requests[2].messages[-1]
    listed = next(b for b in last.content if isinstance(b, ToolResultContent))
    text = " ".join(getattr(part, "text", "") for part in listed.content)
    assert "1 background shell (1 running):" in text and "$ sleep 30" in text
