"""bash_run does its blocking work in worker threads, not in the event loop's thread.

Every step of ``bash_run`` that may take milliseconds or more (the one-time sweep of crashed
processes' shell directories, bashlex's import, the bubblewrap probe, the command's checks,
which read the file system, the launch's preparation, a background shell's directory and
fork, the scan of ``/proc`` for leftovers) is watched: each records the thread it ran in, and
none may be the loop's. The once-per-process state is reset first, so the first-call work is
done again in each test. Nothing here is timed: a loaded machine cannot make it fail.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import kode.builtin.runtime as runtime
from kode import Agent, AgentTemplate, ToolContext, ToolRegistry
from kode.builtin._shared import _launch_and_kill, _processes, _shell_dirs, _shell_parse
from kode.builtin.runtime import (
    ProcessManager,
    RuntimePolicy,
    bash_run,
    sandbox_support,
    set_default_runtime_policy,
)
from kode.models import ScriptedModel
from kode.tools.workspace import Workspace
from kode.trust import sandbox as _sandbox

pytestmark = pytest.mark.anyio

# What is watched: (owner, attribute) -> what it does. Each is looked up through its owner
# where it is called, so replacing the attribute watches every call.
WATCHED: dict[tuple[Any, str], str] = {
    (_shell_dirs, "sweep_stale_shell_dirs"): "sweep",
    (_processes, "shells_dir"): "shells_dir",
    (_shell_parse, "_load_bashlex"): "bashlex",
    (_sandbox, "_probe"): "probe",
    (runtime, "check_command"): "checks",
    (_launch_and_kill, "prepare"): "prepare",
    (ProcessManager, "_spawn"): "spawn",
    (_launch_and_kill.Target, "alive"): "alive",
}


class Threads:
    """The threads each watched step ran in."""

    def __init__(self) -> None:
        self.seen: dict[str, set[int]] = {}

    def wrap(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def watched(*args: Any, **kwargs: Any) -> Any:
            self.seen.setdefault(name, set()).add(threading.get_ident())
            return fn(*args, **kwargs)

        return watched

    def in_thread(self, ident: int) -> list[str]:
        return sorted(name for name, idents in self.seen.items() if ident in idents)


@pytest.fixture
def threads(monkeypatch: pytest.MonkeyPatch) -> Threads:
    """Every watched step wrapped; the once-per-process work (sweep, bashlex's import, the
    probe) made to happen again."""
    made = Threads()
    for (owner, attribute), name in WATCHED.items():
        monkeypatch.setattr(owner, attribute, made.wrap(name, getattr(owner, attribute)))
    monkeypatch.setattr(_shell_dirs, "_swept", False)
    monkeypatch.setattr(_shell_parse, "BASHLEX", _shell_parse._NOT_LOADED)
    monkeypatch.setattr(_sandbox, "_support", {})
    return made


@pytest.fixture
async def ctx(tmp_path: Path) -> AsyncIterator[ToolContext[None]]:
    made: ToolContext[None] = ToolContext(workspace=Workspace(root=tmp_path))
    try:
        yield made
    finally:
        manager = made.services.get("processes")
        if manager is not None:
            await manager.aclose()


SUPPORT = sandbox_support()  # probed here, before any test resets what the process knows


@pytest.fixture
def policy(request: pytest.FixtureRequest) -> Iterator[RuntimePolicy]:
    mode = request.param
    if mode != "off" and not SUPPORT.available:
        pytest.skip(f"no OS sandbox here: {SUPPORT.reason}")
    made = RuntimePolicy(security="full", ask="off", sandbox=mode)
    previous = set_default_runtime_policy(made)
    try:
        yield made
    finally:
        set_default_runtime_policy(previous)


EVERY_CALL = {"sweep", "bashlex", "checks", "prepare"}


@pytest.mark.parametrize("policy", ["workspace-write", "off"], indirect=True)
async def test_a_command_does_no_blocking_work_in_the_loops_thread(
    threads: Threads, ctx: ToolContext[None], policy: RuntimePolicy
) -> None:
    loop = threading.get_ident()
    result = await bash_run.run({"command": "echo hi > made.txt && cat made.txt"}, ctx)
    assert result.text.startswith("hi"), result.text
    assert result.details["sandboxed"] is (policy.sandbox != "off")
    expected = EVERY_CALL | {"alive"} | ({"probe"} if policy.sandbox != "off" else set())
    assert expected <= set(threads.seen), threads.seen
    assert threads.in_thread(loop) == []


@pytest.mark.parametrize("policy", ["workspace-write", "off"], indirect=True)
async def test_a_background_shell_starts_outside_the_loops_thread(
    threads: Threads, ctx: ToolContext[None], policy: RuntimePolicy
) -> None:
    """All but the fork itself, which stays in the loop's thread with the shell's bookkeeping.

    (Which thread starts a sandboxed command does not matter: tests/builtin/
    test_process_lifetime.py.)"""
    loop = threading.get_ident()
    result = await bash_run.run({"command": "echo started", "background": True}, ctx)
    assert not result.is_error, result.text
    assert result.details["sandboxed"] is (policy.sandbox != "off")
    expected = EVERY_CALL | {"spawn", "shells_dir"}
    expected |= {"probe"} if policy.sandbox != "off" else set()
    assert expected <= set(threads.seen), threads.seen
    assert threads.in_thread(loop) == ["spawn"]
    assert threads.seen["spawn"] == {loop}


@pytest.mark.parametrize("policy", ["off"], indirect=True)
async def test_a_refused_command_is_refused_from_the_worker_thread(
    threads: Threads, ctx: ToolContext[None], policy: RuntimePolicy
) -> None:
    """The checks' refusal crosses the thread as the same error the model gets."""
    loop = threading.get_ident()
    result = await bash_run.run({"command": "rm -rf /"}, ctx)
    assert result.is_error and "Command refused" in result.text, result.text
    assert "checks" in threads.seen and threads.in_thread(loop) == []
    assert "prepare" not in threads.seen  # nothing was launched


async def test_making_an_agent_sweeps_and_imports_the_parser_in_a_thread(
    threads: Threads, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """So that its first approval check (in the loop's thread) finds bashlex imported."""
    monkeypatch.setattr(runtime, "_warming", [])
    loop = threading.get_ident()
    reg = ToolRegistry("test")
    reg.register(bash_run, source="core")
    agent = Agent.create(
        AgentTemplate(id="runner", tools=["bash_run"]),
        model=ScriptedModel(["done"]),
        registry=reg,
        workspace=tmp_path,
    )
    (warming,) = runtime._warming
    warming.join(60)
    assert not warming.is_alive()
    assert {"sweep", "bashlex"} <= set(threads.seen), threads.seen
    assert threads.in_thread(loop) == [] or threads.in_thread(loop) == ["probe"]
    assert _shell_parse.parser_loaded() and _shell_dirs.swept()
    await agent.aclose()
