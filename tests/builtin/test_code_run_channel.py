"""Hostile code_run scripts against their channel to kode, in the real sandbox.

A script can find the harness's channel (its descriptors are in the script's process) and
write to it directly, close it, or flood it. Each test makes a real agent run such a script in
real bubblewrap and checks that the script gets a clear error or only fools itself, and that
kode loses nothing: its event loop keeps its deadlines, the calls that ran are the ones
recorded, and the agent goes on to its next turn.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kode import Agent, AgentTemplate, ToolRegistry, define_tool
from kode.builtin.code import code_run
from kode.models import ScriptedModel, ToolResultContent, tool_use
from kode.testing.programs import requires_sandbox

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the sandbox is Linux's"),
    requires_sandbox(),
]

BASE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kode-code-run-tests"

CHANNEL = (
    "import gc, json, os\n"
    "channel = next(o for o in gc.get_objects() if type(o).__name__ == '_Channel')\n"
)
"""The start of a hostile script: the harness's channel object, found as a script can."""


@pytest.fixture
def workspace() -> Iterator[Path]:
    root = BASE / secrets.token_hex(6)
    root.mkdir(parents=True)
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


class Run:
    """An agent with `echo` and code_run whose model sends the scripts given, one per turn."""

    def __init__(self, workspace: Path, *turns: list[dict[str, Any]]) -> None:
        self.echoed: list[str] = []
        reg = ToolRegistry("channel")
        echoed = self.echoed

        @define_tool(registry=reg)
        def echo(text: str) -> str:
            """Echo text.

            Args:
                text: The text.
            """
            echoed.append(text)
            return text

        reg.register(code_run, source="core")
        scripts = [[tool_use("code_run", call) for call in turn] for turn in turns]
        self.model = ScriptedModel([*scripts, "done"])
        self.agent = Agent.create(
            AgentTemplate(id="channel", tools=["echo", "code_run"]),
            model=self.model,
            registry=reg,
            workspace=workspace,
        )

    async def go(self) -> list[list[ToolResultContent]]:
        """Run the agent; the results each turn's scripts got."""
        async with self.agent:
            reply = await self.agent.send("go")
        assert reply.text == "done"  # the agent went on to its end
        return [
            [b for b in request.messages[-1].content if isinstance(b, ToolResultContent)]
            for request in self.model.requests[1:]
        ]


def inner_records(agent: Agent) -> list[Any]:
    return [r for r in agent.records if r.parent_call_id is not None]


FDS = """
import json, os

own = {}
for fd in os.listdir('/proc/self/fd'):
    try:
        own[fd] = os.readlink(f'/proc/self/fd/{fd}')
    except OSError:
        pass  # the descriptor listdir used, closed meanwhile
# the supervisor's: the channel, the output, its status pipe and the lifeline every sandbox of
# this kode shares (a byte written into it would make each supervisor started later take it
# for kode's end); each opened for writing and written to, as an attack would
supervisor = {}
for fd in os.listdir('/proc/1/fd'):
    try:
        end = os.open(f'/proc/1/fd/{fd}', os.O_WRONLY | os.O_NONBLOCK)
        supervisor[fd] = os.write(end, b'x' * 4096)
    except OSError as exc:
        supervisor[fd] = type(exc).__name__
pids = {p: open(f'/proc/{p}/cmdline', 'rb').read().split(b'\\0')[:5]
        for p in os.listdir('/proc') if p.isdigit()}
print(json.dumps({'own': own, 'supervisor': supervisor,
                  'pids': {p: [a.decode() for a in c] for p, c in pids.items()},
                  'kode_seen': os.path.exists('/proc/%d')}))
"""


async def test_a_script_reaches_no_descriptor_but_its_own(workspace: Path) -> None:
    script = FDS % os.getpid()
    run = Run(workspace, [{"script": script}], [{"script": "print(echo(text='next'))"}])
    [[probe], [after]] = await run.go()
    report = json.loads(probe.text)
    assert not report["kode_seen"]  # kode's process is outside its PID namespace
    # only the sandbox's supervisor and the harness (the script) are in it
    assert sorted(report["pids"]) == ["1", "2"]
    assert report["pids"]["2"][1:4] == ["-I", "-S", "-c"]
    own = report["own"]
    # stdin /dev/null; stdout and stderr the output pipe; the channel, both ways
    assert sorted(own) == ["0", "1", "2", "3", "4"]
    assert own["0"] == "/dev/null" and own["1"] == own["2"]
    assert all(own[fd].startswith("pipe:[") for fd in ("1", "3", "4"))
    # the supervisor's descriptors exist, and none can be reached
    assert report["supervisor"]
    assert set(report["supervisor"].values()) == {"PermissionError"}, report["supervisor"]
    # so the sandboxes started later still start
    assert not after.is_error and after.text == "next"


async def test_garbage_and_forged_lines_on_the_channel_fool_no_one(workspace: Path) -> None:
    script = (
        CHANNEL + "os.write(channel._out, b'not json\\n[1, 2]\\n{\"call\": 5}\\n')\n"
        # an answer forged into its own stdin, for a call it never made
        "forged = os.open(f'/proc/self/fd/{channel._in}', os.O_WRONLY)\n"
        'os.write(forged, b\'{"id": 99, "ok": true, "text": "forged"}\\n\')\n'
        "print(echo(text='real'))\n"
    )
    run = Run(workspace, [{"script": script}])
    [[got]] = await run.go()
    assert not got.is_error
    lines = got.text.splitlines()
    assert lines[-1] == "real"  # its call got kode's answer, not a stray one
    assert "not json" in lines and "[1, 2]" in lines  # shown, as what the script printed
    assert run.echoed == ["real"]
    assert [r.input for r in inner_records(run.agent)] == [{"text": "real"}]


async def test_a_message_over_the_limit_kills_only_the_script(workspace: Path) -> None:
    big = "print('before', flush=True)\necho(text='x' * 4_100_000)\nprint('after')"
    run = Run(workspace, [{"script": big}], [{"script": "print(echo(text='next'))"}])
    [[killed], [after]] = await run.go()
    assert killed.is_error
    assert "before" in killed.text and "after" not in killed.text
    assert "[the script was killed: the script sent kode a message over 4,000,000 bytes]" in (
        killed.text
    )
    assert not after.is_error and after.text == "next"  # the next script runs as usual
    assert run.echoed == ["next"]


async def test_thousands_of_calls_at_once_run_up_to_the_limit(workspace: Path) -> None:
    script = (
        CHANNEL + 'lines = b\'\'.join(b\'{"call": "echo", "arguments": {"text": "%d"}, '
        '"id": "f%d"}\\n\' % (i, i) for i in range(3000))\n'
        "view = memoryview(lines)\n"
        "while view:\n"
        "    view = view[os.write(channel._out, view):]\n"
        "try:\n"
        "    echo(text='mine')\n"
        "except ToolCallError as exc:\n"
        "    print('mine:', exc.error_type)\n"
    )
    run = Run(workspace, [{"script": script}])
    [[got]] = await run.go()
    assert "mine: policy_violation" in got.text
    assert "[2901 tool calls were refused: at most 100 per script]" in got.text
    assert run.echoed == [str(i) for i in range(100)]  # one at a time, in order
    assert len(inner_records(run.agent)) == 100  # what ran is what is recorded


async def test_an_endless_flood_of_lines_cannot_hold_kode(workspace: Path) -> None:
    script = CHANNEL + "data = b'x\\n' * 50_000\nwhile True:\n    os.write(channel._out, data)\n"
    run = Run(workspace, [{"script": script, "timeout": 1.5}])
    [[got]] = await run.go()
    # kode read lines as fast as it could and still kept the deadline
    assert got.is_error and "[the script timed out after 1.5 s" in got.text


@pytest.mark.parametrize(
    ("closed", "ran"), [("_out", []), ("_in", ["a"])], ids=["to-kode", "from-kode"]
)
async def test_a_script_that_closes_its_channel_gets_a_clear_error(
    workspace: Path, closed: str, ran: list[str]
) -> None:
    script = (
        CHANNEL + f"os.close(channel.{closed})\n"
        "try:\n"
        "    echo(text='a')\n"
        "except ToolCallError as exc:\n"
        "    print(exc.error_type, exc)\n"
        "print('end')\n"
    )
    run = Run(workspace, [{"script": script}])
    [[got]] = await run.go()
    lines = got.text.splitlines()
    assert lines[0].startswith("execution_failed Tool 'echo' was not run, or its answer was lost")
    assert "the channel to kode is closed or broken" in lines[0]
    assert lines[1] == "end" and not got.is_error
    assert run.echoed == ran  # kode ran the call it was sent, and recorded it
    assert [r.input for r in inner_records(run.agent)] == [{"text": t} for t in ran]
