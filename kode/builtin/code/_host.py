"""Run one ``code_run`` script in the sandbox and answer its tool calls: kode's side.

This module owns `run_script`: it starts the harness (`kode.builtin.code._harness`, an
isolated ``python -I -S -c``) under the runtime tools' supervisor inside the bubblewrap
sandbox (`kode.trust.sandbox`: the supervisor is the first process of the sandbox's PID
namespace, watches kode's *lifeline* and ends with kode, however kode ends), sends it the
script, answers its calls one at a time through the caller it is given (the agent's pipeline),
collects what it prints (capped, head and tail) and its result, and kills whatever is left
when it ends, times out, or the call is cancelled (`kode.builtin._shared._launch_and_kill`).
The channel is JSON lines on the harness's stdin and stdout (`kode.builtin.code._channel`:
pipes kode reads and writes without the event loop's streams, each inner call being a round
trip); its output comes through a pipe of its own.
"""

from __future__ import annotations

import codecs
import contextlib
import json
import os
import subprocess
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import anyio.to_thread

from kode.builtin._shared import _launch_and_kill, _supervisor
from kode.builtin._shared._processes import OutputBuffer, _read_status, _ShellStatus
from kode.builtin.code._channel import Channel, MessageTooLong, channel_pipes
from kode.tools.services import InnerAnswer
from kode.trust import executables
from kode.trust.sandbox import Sandbox, seccomp_fd

__all__ = ["MAX_MESSAGE_BYTES", "HARNESS", "ScriptOutcome", "run_script"]

HARNESS = (Path(__file__).with_name("_harness.py")).read_text(encoding="utf-8")
"""The harness's code, read once from kode's install (never from the workspace)."""
MAX_MESSAGE_BYTES = 4_000_000
"""The longest line the script may send kode (one call's arguments, its result)."""

_READ = 1 << 16
_LAST_WORDS = 0.5  # seconds to read the harness's last message once it has exited

CallFunc = Callable[[str, dict[str, Any]], Awaitable[InnerAnswer]]


@dataclass(kw_only=True, frozen=True, slots=True)
class ScriptOutcome:
    """How a script ended."""

    output: str
    """What it printed (stdout and stderr), cut to its head and tail."""
    exit_code: int | None
    """Its exit status (1: it raised; negative: killed by that signal)."""
    result: Any = None
    """The value of its variable ``result`` as JSON data (`None`: unset, or not JSON data)."""
    result_repr: str | None = None
    """``repr(result)`` when it is not JSON data."""
    calls: int = 0
    """How many tool calls it made (those refused for the limit included)."""
    timed_out: bool = False
    """Whether the time limit killed it."""
    leftovers_killed: bool = False
    """Whether processes it left running were killed."""
    total_chars: int = 0
    """How many characters it printed."""
    truncated: bool = False
    """Whether `output` was cut."""
    broken: str | None = None
    """What went wrong with the channel (a message too long, not JSON), if anything."""


def _program(found: executables.Executable) -> str:
    if found.path is None:
        raise OSError(f"kode found no trusted Python interpreter for scripts: {found.describe()}")
    return found.path


@dataclass(kw_only=True, frozen=True, slots=True)
class _Launch:
    argv: list[str]
    output: tuple[int, int]  # the output pipe: kode reads the first, the script writes the second
    to_harness: tuple[int, int]  # its stdin, kode's end
    from_harness: tuple[int, int]  # kode's end, its stdout
    seccomp: int | None
    lifeline: int

    def close_child_ends(self) -> None:
        for fd in (self.output[1], self.seccomp, self.to_harness[0], self.from_harness[1]):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)

    def close_own_ends(self) -> None:
        for fd in (self.output[0], self.to_harness[1], self.from_harness[0]):
            with contextlib.suppress(OSError):
                os.close(fd)


def _prepare(sandbox: Sandbox, cwd: Path, memory: int) -> _Launch:
    """The command line of the harness in the sandbox, and the descriptors it inherits."""
    python = _program(executables.python(sandbox.roots))
    line = _launch_and_kill.lifeline()
    read, write = os.pipe()
    inner = [
        *_launch_and_kill.supervisor_argv(python),
        f"{_supervisor.LIFELINE_OPTION}{line}",
        python,
        "-I",
        "-S",
        "-c",
        HARNESS,
        str(memory),
        str(write),
    ]
    fd = seccomp_fd()
    pipes: tuple[tuple[int, int], tuple[int, int]] | None = None
    try:
        pipes = channel_pipes()
        argv = sandbox.argv(inner, cwd=cwd, seccomp=fd)
    except BaseException:
        for opened in (read, write, fd, *(pipes[0] + pipes[1] if pipes else ())):
            if opened is not None:
                os.close(opened)
        raise
    return _Launch(
        argv=argv,
        output=(read, write),
        to_harness=pipes[0],
        from_harness=pipes[1],
        seccomp=fd,
        lifeline=line,
    )


def _drain(fd: int, buffer: OutputBuffer) -> None:
    """Read the script's output until every writer has closed it (in a worker thread)."""
    text = codecs.getincrementaldecoder("utf-8")(errors="replace")
    try:
        while True:
            chunk = os.read(fd, _READ)
            if not chunk:
                break
            buffer.feed(text.decode(chunk))
        buffer.feed(text.decode(b"", final=True))
    finally:
        os.close(fd)


_encode = json.JSONEncoder(ensure_ascii=False).encode


def _line(message: dict[str, Any]) -> bytes:
    return (_encode(message) + "\n").encode()


async def run_script(
    script: str,
    *,
    functions: dict[str, str],
    sandbox: Sandbox,
    cwd: Path,
    env: dict[str, str],
    seconds: float,
    memory: int,
    max_chars: int,
    max_calls: int,
    call: CallFunc,
) -> ScriptOutcome:
    """Run `script` in `sandbox` from `cwd`, its calls answered by `call`, for at most `seconds`.

    Args:
        script: The model's Python code.
        functions: Function name → tool name, for the functions the script gets.
        sandbox: The sandbox it runs in.
        cwd: Where it starts (in the workspace).
        env: Its environment (scrubbed).
        seconds: The time limit, tool calls included.
        memory: Its address-space limit in bytes (``RLIMIT_AS``; 0: none).
        max_chars: How much of its output is kept (head and tail).
        max_calls: How many tool calls it may make; the next ones raise in the script.
        call: Runs one call (tool name, arguments) and gives its answer.
    """
    with anyio.CancelScope(shield=True):  # the launch holds descriptors to close
        launch = await anyio.to_thread.run_sync(_prepare, sandbox, cwd, memory)
    fds = (launch.output[1], launch.lifeline) + (
        () if launch.seccomp is None else (launch.seccomp,)
    )
    try:
        process = await anyio.open_process(
            launch.argv,
            cwd=cwd,
            env={**env, "TMPDIR": "/tmp"},
            stdin=launch.to_harness[0],
            stdout=launch.from_harness[1],
            stderr=subprocess.PIPE,
            start_new_session=True,
            pass_fds=fds,
        )
    except BaseException:
        launch.close_own_ends()
        raise
    finally:
        launch.close_child_ends()
    channel = Channel(launch.from_harness[0], launch.to_harness[1])
    target = _launch_and_kill.Target(pid=process.pid, tag=None, sandboxed=True)
    buffer = OutputBuffer(max_chars)
    status = _ShellStatus()
    state: dict[str, Any] = {"calls": 0, "result": None, "result_repr": None, "broken": None}
    timed_out = leftovers = done = False

    def reap() -> object:
        return process.returncode

    drained = anyio.Event()
    conversed = anyio.Event()

    async def drain() -> None:
        try:
            await anyio.to_thread.run_sync(_drain, launch.output[0], buffer, abandon_on_cancel=True)
        finally:
            drained.set()

    async def converse() -> None:
        await channel.send(_line({"script": script, "tools": functions}))
        while True:
            try:
                line = await channel.receive_line(MAX_MESSAGE_BYTES)
            except MessageTooLong:
                state["broken"] = f"the script sent kode a message over {MAX_MESSAGE_BYTES:,} bytes"
                return
            if line is None:
                return
            try:
                message = json.loads(line)
            except ValueError:  # what the interpreter said before the harness took over
                buffer.feed(line.decode(errors="replace") + "\n")
                continue
            if not isinstance(message, dict):
                buffer.feed(line.decode(errors="replace") + "\n")
                continue
            if message.get("end"):
                state["result"] = message.get("result")
                state["result_repr"] = message.get("result_repr")
                return
            answer = await _answer(message, state, max_calls, call)
            if not await channel.send(_line(answer)):
                return

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(drain)
            if process.stderr is not None:
                tg.start_soon(_read_status, process.stderr, status)
            with anyio.move_on_after(seconds) as scope:
                async with anyio.create_task_group() as talking:

                    async def talk() -> None:
                        await converse()
                        conversed.set()
                        if state["broken"] is not None:
                            talking.cancel_scope.cancel()

                    talking.start_soon(talk)
                    # The harness has exited (the supervisor says so; it stays while
                    # processes the script left run, holding the channel open): its last
                    # message is in the pipe already.
                    await status.done.wait()
                    with anyio.move_on_after(_LAST_WORDS):
                        await conversed.wait()
                    talking.cancel_scope.cancel()
            if scope.cancelled_caught or state["broken"] is not None:
                timed_out = scope.cancelled_caught
                await _launch_and_kill.kill(target, reap)
            elif await anyio.to_thread.run_sync(target.alive):
                leftovers = True
                await _launch_and_kill.kill(target, reap)
            with anyio.move_on_after(_launch_and_kill.KILL_GRACE):
                await process.wait()
            with anyio.move_on_after(0.5):  # what it printed last, unless someone holds the pipe
                await drained.wait()
            tg.cancel_scope.cancel()
        done = True
    finally:
        with anyio.CancelScope(shield=True):
            if not done and (process.returncode is None or target.alive()):  # cancelled
                await _launch_and_kill.kill(target, reap)
            with anyio.move_on_after(_launch_and_kill.KILL_GRACE):
                await process.aclose()
        channel.close()  # (its tasks have ended: none waits on it)
    if status.notes:  # the sandbox could not start, or its supervisor said something else
        buffer.feed(("\n" if buffer.total else "") + status.notes + "\n")
    return ScriptOutcome(
        output=buffer.render(),
        exit_code=status.code if status.code is not None else process.returncode,
        result=state["result"],
        result_repr=state["result_repr"],
        calls=state["calls"],
        timed_out=timed_out,
        leftovers_killed=leftovers,
        total_chars=buffer.total,
        truncated=buffer.truncated,
        broken=state["broken"],
    )


async def _answer(
    message: dict[str, Any], state: dict[str, Any], max_calls: int, call: CallFunc
) -> dict[str, Any]:
    """The answer to one message of the script: a call run, or refused."""
    serial = message.get("id")
    name, arguments = message.get("call"), message.get("arguments")
    if not isinstance(name, str) or not isinstance(arguments, dict):
        return {
            "id": serial,
            "ok": False,
            "text": "A tool call needs a tool name and a dict of arguments; nothing was run.",
            "error_type": "invalid_tool_params",
        }
    state["calls"] += 1
    if state["calls"] > max_calls:
        return {
            "id": serial,
            "ok": False,
            "text": f"Tool '{name}' was not run: a script may make at most {max_calls} tool "
            "calls, and this one would be over; do the rest in another code_run, or with "
            "fewer calls.",
            "error_type": "policy_violation",
        }
    answer = await call(name, arguments)
    return {
        "id": serial,
        "ok": not answer.is_error,
        "text": answer.text,
        "error_type": answer.error_type,
    }
