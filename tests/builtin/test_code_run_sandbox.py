"""Hostile code_run scripts in the real sandbox: none of their attempts may succeed.

Each script runs through a real agent, in real bubblewrap, and is judged from outside: a
file outside (or inside) the workspace, a connection to a listener of the test, a process
left running (found in /proc by a marker in its command line), kode's own process alive and
well after a memory bomb or an output flood. The workspace and the outside file live under
the user's cache directory, not /tmp: the sandbox gives the script a private /tmp.
"""

from __future__ import annotations

import os
import secrets
import signal
import socket
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from code_run_places import new_place, start_kode, stop

from kode import Agent, AgentTemplate, ToolRegistry, define_tool
from kode.builtin.code import CODE_POLICY, CodePolicy, code_run
from kode.models import ScriptedModel, ToolResultContent, tool_use
from kode.testing.programs import requires_sandbox

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the sandbox is Linux's"),
    requires_sandbox(),
]


@pytest.fixture
def place() -> Iterator[Path]:
    yield from new_place()


def make_agent(
    workspace: Path, script: str, policy: CodePolicy | None = None, **call: Any
) -> tuple[Agent, ScriptedModel]:
    reg = ToolRegistry("hostile")

    @define_tool(registry=reg)
    def echo(text: str) -> str:
        """Echo text.

        Args:
            text: The text.
        """
        return text

    reg.register(code_run, source="core")
    model = ScriptedModel([[tool_use("code_run", {"script": script, **call})], "done"])
    agent = Agent.create(
        AgentTemplate(id="hostile", tools=["echo", "code_run"]),
        model=model,
        registry=reg,
        workspace=workspace,
    )
    if policy is not None:
        CODE_POLICY.set(agent.services, policy)
    return agent, model


async def run(
    workspace: Path, script: str, policy: CodePolicy | None = None, **call: Any
) -> ToolResultContent:
    agent, model = make_agent(workspace, script, policy, **call)
    async with agent:
        await agent.send("go")
    last = model.requests[1].messages[-1]
    found = [b for b in last.content if isinstance(b, ToolResultContent)]
    assert len(found) == 1
    return found[0]


def processes_with(marker: str) -> list[int]:
    """The live processes whose command line holds `marker` (zombies do not count)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        if marker.encode() in cmdline and stat[stat.rfind(")") + 2 :].split()[0] not in "ZX":
            found.append(int(entry))
    return found


async def test_writes_outside_and_inside_the_workspace_fail(place: Path) -> None:
    outside, inside = place / "outside.txt", place / "ws" / "inside.txt"
    script = textwrap.dedent(f"""
        for path in ({str(outside)!r}, {str(inside)!r}, '/etc/kode-code-run'):
            try:
                open(path, 'w').write('x')
                print('wrote', path)
            except OSError as exc:
                print('refused', type(exc).__name__)
        open('/tmp/scratch', 'w').write('private tmp works')
        print(open('/tmp/scratch').read())
    """)
    got = await run(place / "ws", script)
    # the workspace and the system are read-only; the home directory (where `place` is) is
    # an empty scratch directory in the sandbox, so the write there lands nowhere real
    assert got.text.count("refused") == 2, got.text
    assert "private tmp works" in got.text
    for path in (outside, inside, Path("/etc/kode-code-run"), Path("/tmp/scratch")):
        assert not path.exists(), path


async def test_a_policy_may_let_the_script_write_the_workspace(place: Path) -> None:
    """The control of the test above: the same write succeeds where the policy allows it."""
    inside = place / "ws" / "inside.txt"
    script = f"open({str(inside)!r}, 'w').write('x'); print('wrote')"
    got = await run(place / "ws", script, CodePolicy(workspace="workspace-write"))
    assert got.text == "wrote"
    assert inside.read_text() == "x"


async def test_the_network_cannot_be_reached(place: Path) -> None:
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(5)
    server.settimeout(0.2)
    port = server.getsockname()[1]
    hits: list[str] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            hits.append("hit")
            conn.close()

    watcher = threading.Thread(target=accept, daemon=True)
    watcher.start()
    script = textwrap.dedent(f"""
        import socket
        for family, address in ((socket.AF_INET, ('127.0.0.1', {port})),
                                (socket.AF_UNIX, '/run/kode-nowhere')):
            try:
                s = socket.socket(family, socket.SOCK_STREAM)
                s.settimeout(2)
                s.connect(address)
                print('connected', family)
            except OSError as exc:
                print('refused', type(exc).__name__)
    """)
    try:
        got = await run(place / "ws", script)
        # the control: the listener does take connections from outside the sandbox
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            pass
        await anyio.sleep(0.3)
    finally:
        stop.set()
        watcher.join(2)
        server.close()
    assert got.text.count("refused") == 2, got.text
    assert hits == ["hit"]


async def test_no_process_outlives_the_script(place: Path) -> None:
    marker = f"{secrets.randbelow(10**6) + 10**6}.{secrets.randbelow(10**6)}"
    script = textwrap.dedent(f"""
        import os, subprocess
        subprocess.Popen(['sleep', {marker!r}], start_new_session=True)
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                os.execv('/bin/sleep', ['sleep', {marker!r}])
            os._exit(0)
        print('left two sleepers')
    """)
    got = await run(place / "ws", script)
    assert "left two sleepers" in got.text
    assert "[the script left processes running; they were killed]" in got.text
    assert processes_with(marker) == []


async def test_a_memory_bomb_fails_inside_the_script(place: Path) -> None:
    script = textwrap.dedent("""
        try:
            hog = bytearray(2 * 1024 ** 3)
            print('allocated', len(hog))
        except MemoryError:
            print('MemoryError')
    """)
    got = await run(place / "ws", script, CodePolicy(memory_mb=256))
    assert got.text == "MemoryError"


async def test_an_output_flood_is_cut_and_a_long_loop_times_out(place: Path) -> None:
    flood = "import sys\nfor _ in range(2000):\n    sys.stdout.write('x' * 10_000)\nprint('end')"
    got = await run(place / "ws", flood, CodePolicy(max_output_chars=1000))
    assert got.text.startswith("x" * 500)
    assert "output truncated: 19,999,004 characters left out" in got.text
    assert got.text.rstrip().endswith("end")
    assert len(got.text) < 2000

    started = time.monotonic()
    got = await run(place / "ws", "print('spinning', flush=True)\nwhile True: pass", timeout=1)
    assert got.is_error
    assert "spinning" in got.text and "[the script timed out after 1 s" in got.text
    assert time.monotonic() - started < 10


KILLED_KODE = """
import anyio, sys
from pathlib import Path
from kode import Agent, AgentTemplate, ToolRegistry, define_tool
from kode.builtin.code import code_run
from kode.models import ScriptedModel, tool_use

from kode.sessions import SQLiteStore

reg = ToolRegistry("killed")
calls = []

@define_tool(registry=reg)
def ready() -> str:
    '''Say the script is up (the second call: the first one has ended, and is recorded).'''
    calls.append(1)
    if len(calls) == 2:
        Path(sys.argv[2]).write_text("up")
    return "ok"

reg.register(code_run, source="core")
script = (
    "import subprocess, time\\n"
    "subprocess.Popen(['sleep', %r], start_new_session=True)\\n"
    "ready()\\n"
    "ready()\\n"
    "time.sleep(300)\\n"
) % sys.argv[3]
model = ScriptedModel([[tool_use("code_run", {"script": script, "timeout": 300})], "done"])
agent = Agent.create(AgentTemplate(id="k", tools=["ready", "code_run"]), model=model,
                     registry=reg, workspace=sys.argv[1], session_id="killed",
                     store=SQLiteStore(sys.argv[4]))
anyio.run(agent.send, "go")
"""


def test_kill_9_of_kode_leaves_nothing_running(place: Path) -> None:
    marker = f"{secrets.randbelow(10**6) + 10**6}.{secrets.randbelow(10**6)}"
    flag = place / "ready"
    args = (str(place / "ws"), str(flag), marker, str(place / "s.db"))
    kode = start_kode(
        place, "killed_kode.py", KILLED_KODE, *args, flag=flag, waiting_for="the script's ready()"
    )
    try:
        assert processes_with(marker), "the sleeper should run while kode does"
        os.kill(kode.pid, signal.SIGKILL)
        kode.wait(10)
        deadline = time.monotonic() + 10
        while processes_with(marker) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert processes_with(marker) == []
        anyio.run(resumed, place)
    finally:
        stop(kode)


async def resumed(place: Path) -> None:
    """The killed session, resumed: the inner call that ended kept its record; the rest did not
    run again (code_run is of kind execute, its script is gone)."""
    from kode.sessions import SQLiteStore

    reg = ToolRegistry("resumed")

    @define_tool(registry=reg)
    def ready() -> str:
        """Say the script is up."""
        raise AssertionError("an inner call must not run again after a restart")

    reg.register(code_run, source="core")
    model = ScriptedModel(["resumed"])
    again = await Agent.resume(
        "killed",
        store=SQLiteStore(place / "s.db"),
        model=model,
        registry=reg,
        template=AgentTemplate(id="k", tools=["ready", "code_run"]),
        workspace=place / "ws",
    )
    async with again:
        outer = next(r for r in again.records if r.name == "code_run")
        first, second = again.records.get(f"{outer.id}.1"), again.records.get(f"{outer.id}.2")
        assert first is not None and first.status == "done"
        # (the second may have ended and been written before the kill, or not)
        assert second is not None and second.status in ("running", "done")
        assert outer.status == "running"
        assert (await again.send()).text == "resumed"
        assert outer.id in {r.id for r in again.records}
        settled = again.records.get(outer.id)
        assert settled is not None and settled.status == "failed"
        assert settled.result is not None and "restart" in settled.result.text
        assert second.status in ("done", "failed")  # settled too (tests/.../code_run_resume)
