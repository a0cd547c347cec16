"""Processes for the runtime tools: run one to completion, or keep it in the background.

This module owns `run_command` (a foreground ``bash -c``, output captured and capped, a timeout that
kills every process the command started), `ProcessManager` (background shells whose output goes to a
log file, read incrementally, killed with everything they started; closing the manager kills them
all) and `OutputBuffer` (head and tail of a long output, with a marker in between). How a command is
launched and killed, and what that guarantees on each platform, is
`kode.builtin._shared._launch_and_kill`; the environment it gets is
`kode.builtin._shared._environment`. It does not decide what may run
(`kode.builtin._shared._policy`).

Background shells are `subprocess.Popen` processes writing to files rather than anyio
processes writing to pipes: they outlive the tool call (and, with ``send_sync``, the event loop)
that started them, and nobody has to keep reading a pipe for them to make progress. Their
files live in a temporary directory ``kode-shells-<pid>-*`` whose ``owner`` file names the
kode process; a process killed without closing its managers leaves it behind, and the next
kode process to start a shell (or make an agent with ``bash_run``) removes the directories
whose owner is gone (`kode.builtin._shared._shell_dirs`).
"""

from __future__ import annotations

import atexit
import codecs
import contextlib
import functools
import os
import shutil
import subprocess
import time
import weakref
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import anyio.abc
import anyio.to_thread

from kode.builtin._shared import _launch_and_kill
from kode.builtin._shared._environment import command_environment
from kode.builtin._shared._launch_and_kill import Signal, Target
from kode.builtin._shared._shell_dirs import shells_dir
from kode.tools.errors import ToolError, ToolErrorType
from kode.trust.sandbox import Sandbox

__all__ = [
    "BackgroundShell",
    "CommandOutcome",
    "LogRead",
    "OutputBuffer",
    "ProcessManager",
    "run_command",
]

_DRAIN = 0.5
_SETTLE = 0.05
"""Seconds a command's supervisor has, once the shell exited and the output ended, to end too
before the leftover check looks for what it still waits for."""


# --- output ---------------------------------------------------------------------------------------


class OutputBuffer:
    """Keeps the first and last characters of a stream of text, counting what falls between."""

    def __init__(self, max_chars: int) -> None:
        self.max_chars = max_chars
        """How many characters `render` shows at most (marker apart)."""
        self._head_limit = max_chars // 2
        self._tail_limit = max_chars - self._head_limit
        self._head: list[str] = []
        self._head_len = 0
        self._tail = ""
        self.total = 0
        """Characters fed so far."""
        self.skipped_bytes = 0
        """Bytes left out before decoding (a log too long to read whole)."""

    def feed(self, text: str) -> None:
        """Add `text` to the stream."""
        if not text:
            return
        self.total += len(text)
        room = self._head_limit - self._head_len
        if room > 0:
            self._head.append(text[:room])
            self._head_len += min(room, len(text))
            text = text[room:]
        if text:
            self._tail += text
            if len(self._tail) > 2 * self._tail_limit:
                self._tail = self._tail[-self._tail_limit :]

    @property
    def omitted(self) -> int:
        """Characters of the stream that `render` leaves out."""
        return self.total - self._head_len - min(len(self._tail), self._tail_limit)

    @property
    def truncated(self) -> bool:
        """Whether `render` leaves anything out."""
        return self.omitted > 0 or self.skipped_bytes > 0

    def render(self) -> str:
        """The text, or its head and tail around a marker saying what was left out."""
        head = "".join(self._head)
        tail = self._tail[-self._tail_limit :] if self._tail else ""
        if not self.truncated:
            return head + tail
        parts = []
        if self.omitted:
            parts.append(f"{self.omitted:,} characters")
        if self.skipped_bytes:
            parts.append(f"{self.skipped_bytes:,} bytes")
        marker = (
            f"\n[... output truncated: {' and '.join(parts)} left out here; showing the first "
            f"{len(head):,} and the last {len(tail):,} characters. Redirect the output to a "
            "file and read parts of it, or filter it (grep, head, tail), to see more ...]\n"
        )
        return head + marker + tail


def _decoder() -> codecs.IncrementalDecoder:
    return codecs.getincrementaldecoder("utf-8")(errors="replace")


# --- foreground -----------------------------------------------------------------------------------


@dataclass(kw_only=True, frozen=True, slots=True)
class CommandOutcome:
    """How a foreground command ended."""

    output: str
    """Its stdout and stderr, interleaved, capped (with a marker when cut)."""
    pid: int
    """The pid of its supervisor (Linux) or of its shell (which leads its process group)."""
    exit_code: int | None
    """Its exit status (negative: killed by that signal); `None` if it could not be collected."""
    timed_out: bool
    """Whether the timeout killed it."""
    killed_with: Signal | None
    """The last signal sent to its processes, if one was needed."""
    leftovers_killed: bool
    """Whether processes it left running after it exited were killed."""
    total_chars: int
    """How many characters of output it wrote."""
    truncated: bool
    """Whether `output` was cut."""


async def _pump(
    stream: anyio.abc.ByteReceiveStream, buffer: OutputBuffer, done: anyio.Event
) -> None:
    decoder = _decoder()
    try:
        async for chunk in stream:
            buffer.feed(decoder.decode(chunk))
    except (anyio.ClosedResourceError, anyio.BrokenResourceError):
        pass
    finally:
        buffer.feed(decoder.decode(b"", final=True))
        done.set()


async def _read_status(stream: anyio.abc.ByteReceiveStream, status: _ShellStatus) -> None:
    data = b""
    try:
        async for chunk in stream:
            data += chunk[: _MAX_STATUS - len(data)]
            status.code = _parse_status(data)
            if status.code is not None:
                break
    except (anyio.ClosedResourceError, anyio.BrokenResourceError):
        pass
    finally:
        status.notes = _status_notes(data)
        status.done.set()  # the shell exited, or its supervisor is gone


_MAX_STATUS = 4096


@dataclass(kw_only=True, slots=True)
class _ShellStatus:
    done: anyio.Event = field(default_factory=anyio.Event)
    code: int | None = None
    notes: str = ""  # what else the supervisor's stderr said (bubblewrap's errors)


def _status_notes(data: bytes) -> str:
    lines = data.decode(errors="replace").splitlines()
    return "\n".join(line for line in lines if _parse_status(line.encode()) is None).strip()


def _parse_status(data: bytes) -> int | None:
    for line in data.decode(errors="replace").splitlines():
        if line.startswith("exit ") and line[5:].lstrip("-").isdigit():
            return int(line[5:])
    return None


async def _prepare(
    command: str, env: dict[str, str] | None, sandbox: Sandbox | None, cwd: Path
) -> _launch_and_kill.Launch:
    """`_launch_and_kill.prepare` in a worker thread (`env` defaults to `command_environment()`).

    The sandbox's arguments resolve paths and globs: not in the event loop's thread.
    """
    return await anyio.to_thread.run_sync(
        functools.partial(
            _launch_and_kill.prepare,
            command,
            command_environment() if env is None else env,
            sandbox=sandbox,
            cwd=cwd,
        )
    )


async def run_command(
    command: str,
    *,
    cwd: Path,
    seconds: float,
    max_chars: int,
    env: dict[str, str] | None = None,
    sandbox: Sandbox | None = None,
) -> CommandOutcome:
    """Run `command` with ``bash -c`` in `cwd`, in a new session, for at most `seconds`.

    On timeout, and when the caller is cancelled, every process the command started is killed
    (SIGTERM, then SIGKILL; see `kode.builtin._shared._launch_and_kill` for what that covers).
    Processes the command leaves running after it exits are killed as well, so nothing it started
    outlives the call. `env` defaults to `command_environment()` (scrubbed), not ``os.environ``.
    With a `sandbox`, the command runs in it (`kode.trust.sandbox`).
    """
    with anyio.CancelScope(shield=True):  # the launch holds a descriptor to close
        launch = await _prepare(command, env, sandbox, cwd)
    tracked = launch.tag is not None or launch.sandboxed
    try:
        process = await anyio.open_process(
            launch.argv,
            cwd=cwd,
            env=launch.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE if tracked else subprocess.STDOUT,
            start_new_session=True,
            pass_fds=launch.pass_fds,
        )
    finally:
        launch.close()
    target = launch.target(process.pid)
    buffer = OutputBuffer(max_chars)
    pumped = anyio.Event()
    status = _ShellStatus()
    timed_out = False
    killed: Signal | None = None
    leftovers = False
    done = False

    def reap() -> object:
        return process.returncode

    async def shell_exit() -> None:
        if not tracked:
            await process.wait()
        else:
            await status.done.wait()

    try:
        async with anyio.create_task_group() as tg:
            assert process.stdout is not None
            tg.start_soon(_pump, process.stdout, buffer, pumped)
            if process.stderr is not None:
                tg.start_soon(_read_status, process.stderr, status)
            with anyio.move_on_after(seconds) as scope:
                await shell_exit()
            if scope.cancelled_caught:
                timed_out = True
                killed = await _launch_and_kill.kill(target, reap)
            else:
                with anyio.move_on_after(_DRAIN):
                    await pumped.wait()
                # The supervisor exits once nothing it adopted is left: when it has, the scan
                # needs no process table (see Target.alive).
                if tracked:
                    with anyio.move_on_after(_SETTLE):
                        await process.wait()
                ended = process.returncode is not None
                # it exited, leaving processes behind? (a scan of /proc: in a worker thread)
                if await anyio.to_thread.run_sync(functools.partial(target.alive, ended=ended)):
                    leftovers = True
                    killed = await _launch_and_kill.kill(target, reap)
            with anyio.move_on_after(_DRAIN) as drain:
                await pumped.wait()
            if drain.cancelled_caught:  # someone we cannot see holds the pipe open
                tg.cancel_scope.cancel()
            with anyio.move_on_after(_launch_and_kill.KILL_GRACE):
                await process.wait()  # the supervisor ends once everything is reaped
            tg.cancel_scope.cancel()
        done = True
    finally:
        with anyio.CancelScope(shield=True):
            # cancelled
            if not done and (process.returncode is None or target.alive(ended=True)):
                await _launch_and_kill.kill(target, reap)
            with anyio.move_on_after(_launch_and_kill.KILL_GRACE):
                await process.aclose()
    if status.notes:  # the sandbox could not start, or its supervisor said something else
        buffer.feed(("\n" if buffer.total else "") + status.notes + "\n")
    return CommandOutcome(
        output=buffer.render(),
        pid=target.pid,
        exit_code=status.code if status.code is not None else process.returncode,
        timed_out=timed_out,
        killed_with=killed,
        leftovers_killed=leftovers,
        total_chars=buffer.total,
        truncated=buffer.truncated,
    )


# --- background -----------------------------------------------------------------------------------


@dataclass(kw_only=True, slots=True)
class BackgroundShell:
    """A command running (or finished) in the background."""

    id: str
    """Its shell id, e.g. ``shell_1``."""
    command: str
    """The command line."""
    pid: int
    """The pid of its supervisor (Linux) or of its shell (which leads its process group)."""
    cwd: Path
    """Where it runs."""
    log: Path
    """The file its output goes to."""
    started: float
    """`time.monotonic` when it started."""
    popen: subprocess.Popen[bytes] = field(repr=False)
    target: Target = field(repr=False)
    """Its processes, for `kode.builtin._shared._launch_and_kill`."""
    status: Path | None = field(default=None, repr=False)
    """The file its supervisor writes the shell's exit status to (`None`: untracked)."""
    code: int | None = field(default=None, repr=False)
    offset: int = 0
    """Bytes of the log already read by `ProcessManager.read_new`."""
    killed_with: str | None = None
    """The signal `bash_kill` (or closing) needed, if it was killed."""
    ended: bool = False
    """Whether every process it started is known to be gone (never signal their ids again:
    the kernel may give them to other processes)."""
    decoder: codecs.IncrementalDecoder = field(default_factory=_decoder, repr=False)

    @property
    def exit_code(self) -> int | None:
        """The shell's exit status, or `None` while it runs (negative: killed by that signal).

        Processes the shell started may still run after it exited (see `settled`).
        """
        if self.code is None and self.status is not None:
            with contextlib.suppress(OSError):
                self.code = _parse_status(self.status.read_bytes())
        if self.code is not None:
            return self.code
        return self.popen.poll()  # untracked, or the supervisor ended without a word

    def settled(self) -> bool:
        """Whether the shell and every process it started are gone (checked, then kept)."""
        if not self.ended and self.popen.poll() is not None and not self.target.alive(ended=True):
            self.ended = True
        return self.ended


@dataclass(kw_only=True, frozen=True, slots=True)
class LogRead:
    """Output of a background shell that had not been read yet."""

    shell: BackgroundShell
    """The shell."""
    output: str
    """The new output, capped (with a marker when cut)."""
    new_chars: int
    """Characters of new output (before capping)."""
    truncated: bool
    """Whether `output` was cut."""


_managers: weakref.WeakSet[ProcessManager] = weakref.WeakSet()


@atexit.register
def _close_all() -> None:  # pragma: no cover - runs at interpreter exit
    for manager in list(_managers):
        manager.close()


class ProcessManager:
    """The background shells of one agent; closing it kills them all.

    Kept in ``ctx.services["processes"]`` (made on first use), so `Agent.aclose` (or leaving
    ``async with agent``) kills every process the agent started. At interpreter exit, managers
    that were never closed are closed too.
    """

    def __init__(self, *, max_shells: int = 16) -> None:
        self.max_shells = max_shells
        """How many shells may run at once."""
        self._shells: dict[str, BackgroundShell] = {}
        self._counter = 0
        self._dir: Path | None = None

    def __repr__(self) -> str:
        running = sum(s.exit_code is None for s in self._shells.values())
        return f"ProcessManager(shells={len(self._shells)}, running={running})"

    @property
    def shells(self) -> list[BackgroundShell]:
        """Every shell started and not yet closed, oldest first."""
        return list(self._shells.values())

    def start(
        self,
        command: str,
        *,
        cwd: Path,
        env: dict[str, str] | None = None,
        sandbox: Sandbox | None = None,
    ) -> BackgroundShell:
        """Start `command` with ``bash -c`` in `cwd`, in a new session; return its shell.

        `env` defaults to `command_environment()` (scrubbed), not ``os.environ``. With a
        `sandbox`, the command runs in it (`kode.trust.sandbox`). It blocks: the
        first call makes the shells' directory, and the sandbox's arguments read the file
        system; `astart` does both in a worker thread.

        Raises:
            ToolError: too many shells are running.
        """
        self._check_room()
        if self._dir is None:
            self._dir = shells_dir()
        launch = _launch_and_kill.prepare(
            command, command_environment() if env is None else env, sandbox=sandbox, cwd=cwd
        )
        return self._spawn(command, cwd, launch)

    async def astart(
        self,
        command: str,
        *,
        cwd: Path,
        env: dict[str, str] | None = None,
        sandbox: Sandbox | None = None,
    ) -> BackgroundShell:
        """`start` for async code: what blocks is done in a worker thread.

        The process itself is started in the calling thread (the event loop's), after the
        worker is done (a fork and exec of a few milliseconds, kept with the shell's
        bookkeeping).

        Raises:
            ToolError: too many shells are running.
        """
        self._check_room()
        with anyio.CancelScope(shield=True):  # what the thread makes must not be dropped
            if self._dir is None:
                made = await anyio.to_thread.run_sync(shells_dir)
                if self._dir is None:
                    self._dir = made
                else:  # another call made one meanwhile
                    shutil.rmtree(made, ignore_errors=True)
            launch = await _prepare(command, env, sandbox, cwd)
        return self._spawn(command, cwd, launch)

    def _check_room(self) -> None:
        running = [s for s in self._shells.values() if s.exit_code is None]
        if len(running) >= self.max_shells:
            raise ToolError(
                f"{len(running)} background shells are already running (the limit is "
                f"{self.max_shells}); stop one with bash_kill first: "
                f"{', '.join(s.id for s in running)}.",
                type=ToolErrorType.EXECUTION_FAILED,
            )

    def _spawn(self, command: str, cwd: Path, launch: _launch_and_kill.Launch) -> BackgroundShell:
        try:
            self._check_room()  # again: another call may have started one meanwhile
            assert self._dir is not None
            self._counter += 1
            shell_id = f"shell_{self._counter}"
            log = self._dir / f"{shell_id}.log"
            tracked = launch.tag is not None or launch.sandboxed
            status = self._dir / f"{shell_id}.status" if tracked else None
            with log.open("wb") as out, open(status or os.devnull, "wb") as err:
                popen = subprocess.Popen(
                    launch.argv,
                    cwd=cwd,
                    env=launch.env,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT if status is None else err,
                    start_new_session=True,
                    pass_fds=launch.pass_fds,
                )
        finally:
            launch.close()
        shell = BackgroundShell(
            id=shell_id,
            command=command,
            pid=popen.pid,
            cwd=cwd,
            log=log,
            started=time.monotonic(),
            popen=popen,
            target=launch.target(popen.pid),
            status=status,
        )
        self._shells[shell_id] = shell
        _managers.add(self)
        return shell

    def get(self, shell_id: str) -> BackgroundShell:
        """The shell with this id.

        Raises:
            ToolError: there is no such shell.
        """
        shell = self._shells.get(shell_id.strip())
        if shell is None:
            known = ", ".join(self._shells) or "none"
            raise ToolError(
                f"There is no background shell '{shell_id}'; known shells: {known}. Start one "
                "with bash_run(background=true).",
                type=ToolErrorType.INVALID_TOOL_PARAMS,
            )
        return shell

    def read_new(self, shell_id: str, *, max_chars: int) -> LogRead:
        """The output the shell wrote since the last read, capped to `max_chars`."""
        shell = self.get(shell_id)
        shell.settled()  # notice an ended group while its id cannot have been reused yet
        buffer = OutputBuffer(max_chars)
        window = 4 * max_chars  # bytes: older output past this is skipped, not decoded
        try:
            with shell.log.open("rb") as log:
                end = log.seek(0, os.SEEK_END)
                if end - shell.offset > window:
                    buffer.skipped_bytes = end - window - shell.offset
                    shell.offset = end - window
                    shell.decoder = _decoder()
                log.seek(shell.offset)
                data = log.read(end - shell.offset)
        except FileNotFoundError:
            data = b""
        shell.offset += len(data)
        buffer.feed(shell.decoder.decode(data, final=shell.exit_code is not None))
        return LogRead(
            shell=shell, output=buffer.render(), new_chars=buffer.total, truncated=buffer.truncated
        )

    async def kill(self, shell_id: str) -> Signal | None:
        """Kill the shell and every process it started; return the last signal needed."""
        shell = self.get(shell_id)
        if shell.settled():
            return None
        sent = await _launch_and_kill.kill(shell.target, shell.popen.poll)
        if sent is not None:
            shell.killed_with = sent
        shell.popen.poll()  # all gone: the supervisor (or shell) is at most a zombie, reaped here
        shell.settled()
        return sent

    async def aclose(self) -> None:
        """Kill every shell and what it started; forget the shells (the manager stays usable)."""
        with anyio.CancelScope(shield=True):
            async with anyio.create_task_group() as tg:
                for shell in self._shells.values():
                    if not shell.settled():
                        tg.start_soon(_launch_and_kill.kill, shell.target, shell.popen.poll)
        self._cleanup()

    def close(self) -> None:
        """`aclose` for code without an event loop (it blocks while processes end)."""
        for shell in self._shells.values():
            if not shell.settled():
                _launch_and_kill.kill_now(shell.target, shell.popen.poll)
        self._cleanup()

    def _cleanup(self) -> None:
        for shell in self._shells.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                shell.popen.wait(timeout=_launch_and_kill.KILL_GRACE)
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None
        self._shells.clear()
        _managers.discard(self)
