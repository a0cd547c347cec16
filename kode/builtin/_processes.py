"""Processes for the runtime tools: run one to completion, or keep it in the background.

This module owns `run_command` (a foreground ``bash -c`` in its own process group, output
captured and capped, a timeout that kills the whole group), `ProcessManager` (background shells
whose output goes to a log file, read incrementally, killed by group; closing the manager kills
them all), `OutputBuffer` (head and tail of a long output, with a marker in between) and
`kill_group`. It does not decide what may run (`kode.builtin._runtime_policy`).

Background shells are `subprocess.Popen` processes writing to files rather than anyio
processes writing to pipes: they outlive the tool call (and, with ``send_sync``, the event loop)
that started them, and nobody has to keep reading a pipe for them to make progress.
"""

from __future__ import annotations

import atexit
import codecs
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import anyio
import anyio.abc

from kode.tools.errors import ToolError, ToolErrorType

__all__ = [
    "BackgroundShell",
    "CommandOutcome",
    "LogRead",
    "OutputBuffer",
    "ProcessManager",
    "group_alive",
    "kill_group",
    "run_command",
]

KILL_GRACE = 2.0
"""Seconds between SIGTERM and SIGKILL."""
_DRAIN = 0.5
_POLL = 0.02
_SHELL = "bash"


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


# --- process groups -------------------------------------------------------------------------------


def _proc_stat(pid: int) -> tuple[str, int] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = raw[raw.rfind(")") + 2 :].split()
    return fields[0], int(fields[2])  # state, process group


def group_alive(pgid: int) -> bool:
    """Whether a process of group `pgid` is still running (zombies do not count).

    On Linux this reads ``/proc``, since an orphaned zombie may wait forever for a parent that
    never reaps it (a container's init); elsewhere it asks the kernel with signal 0.
    """
    if sys.platform.startswith("linux") and os.path.isdir("/proc/self"):
        with os.scandir("/proc") as entries:
            for entry in entries:
                if not entry.name.isdigit():
                    continue
                stat = _proc_stat(int(entry.name))
                if stat is not None and stat[1] == pgid and stat[0] not in ("Z", "X"):
                    return True
        return False
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


async def kill_group(
    pgid: int, reap: Callable[[], object] | None = None, *, grace: float | None = None
) -> Literal["SIGTERM", "SIGKILL"] | None:
    """Kill every process of group `pgid`: SIGTERM, then SIGKILL after `grace` seconds.

    Args:
        pgid: The process group (the leader's pid, for a process started in a new session).
        reap: Called while waiting, to collect the leader's exit status (``popen.poll``).
        grace: Seconds the group has to end after SIGTERM (default `KILL_GRACE`).

    Returns:
        The last signal that was needed, or `None` when the group was already gone.
    """
    grace = KILL_GRACE if grace is None else grace
    if reap is not None:
        reap()
    if not group_alive(pgid):
        return None
    sent: Literal["SIGTERM", "SIGKILL"] = "SIGTERM"
    _signal_group(pgid, signal.SIGTERM)
    _signal_group(pgid, signal.SIGCONT)  # a stopped process only sees SIGTERM once resumed
    deadline = time.monotonic() + grace
    while True:
        if reap is not None:
            reap()
        if not group_alive(pgid):
            return sent
        if time.monotonic() >= deadline:
            if sent == "SIGKILL":
                return sent  # unkillable (uninterruptible sleep): nothing more to do
            sent = "SIGKILL"
            _signal_group(pgid, signal.SIGKILL)
            deadline = time.monotonic() + grace
        await anyio.sleep(_POLL)


def _kill_group_now(pgid: int, reap: Callable[[], object]) -> None:
    """`kill_group` for code without an event loop (``close``, interpreter exit)."""
    grace = KILL_GRACE
    reap()
    if not group_alive(pgid):
        return
    _signal_group(pgid, signal.SIGTERM)
    _signal_group(pgid, signal.SIGCONT)
    deadline = time.monotonic() + grace
    while group_alive(pgid) and time.monotonic() < deadline:
        time.sleep(_POLL)
        reap()
    if group_alive(pgid):
        _signal_group(pgid, signal.SIGKILL)
        deadline = time.monotonic() + grace
        while group_alive(pgid) and time.monotonic() < deadline:
            time.sleep(_POLL)
            reap()
    reap()


# --- foreground -----------------------------------------------------------------------------------


@dataclass(kw_only=True, frozen=True, slots=True)
class CommandOutcome:
    """How a foreground command ended."""

    output: str
    """Its stdout and stderr, interleaved, capped (with a marker when cut)."""
    pid: int
    """The shell's pid, which was also its process group's id."""
    exit_code: int | None
    """Its exit status (negative: killed by that signal); `None` if it could not be collected."""
    timed_out: bool
    """Whether the timeout killed it."""
    killed_with: Literal["SIGTERM", "SIGKILL"] | None
    """The last signal sent to its process group, if one was needed."""
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


async def run_command(
    command: str,
    *,
    cwd: Path,
    seconds: float,
    max_chars: int,
    env: dict[str, str] | None = None,
) -> CommandOutcome:
    """Run `command` with ``bash -c`` in `cwd`, in a new session, for at most `seconds`.

    On timeout, and when the caller is cancelled, the whole process group is killed (SIGTERM,
    then SIGKILL). Processes the command leaves running after it exits are killed as well, so
    nothing it started outlives the call.
    """
    process = await anyio.open_process(
        [_SHELL, "-c", command],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    pgid = process.pid
    buffer = OutputBuffer(max_chars)
    pumped = anyio.Event()
    timed_out = False
    killed: Literal["SIGTERM", "SIGKILL"] | None = None
    leftovers = False

    def reap() -> object:
        return process.returncode

    try:
        async with anyio.create_task_group() as tg:
            assert process.stdout is not None
            tg.start_soon(_pump, process.stdout, buffer, pumped)
            with anyio.move_on_after(seconds) as scope:
                await process.wait()
            if scope.cancelled_caught:
                timed_out = True
                killed = await kill_group(pgid, reap)
            else:
                with anyio.move_on_after(_DRAIN):
                    await pumped.wait()
                if group_alive(pgid):  # it exited, leaving processes behind
                    leftovers = True
                    killed = await kill_group(pgid, reap)
            with anyio.move_on_after(_DRAIN) as drain:
                await pumped.wait()
            if drain.cancelled_caught:  # someone outside the group holds the pipe open
                tg.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            if group_alive(pgid):  # cancelled from outside: kill before giving up
                await kill_group(pgid, reap)
            with anyio.move_on_after(KILL_GRACE):
                await process.aclose()
    return CommandOutcome(
        output=buffer.render(),
        pid=pgid,
        exit_code=process.returncode,
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
    """The shell's pid, which is also its process group's id."""
    cwd: Path
    """Where it runs."""
    log: Path
    """The file its output goes to."""
    started: float
    """`time.monotonic` when it started."""
    popen: subprocess.Popen[bytes] = field(repr=False)
    offset: int = 0
    """Bytes of the log already read by `ProcessManager.read_new`."""
    killed_with: str | None = None
    """The signal `bash_kill` (or closing) needed, if it was killed."""
    ended: bool = False
    """Whether its whole process group is known to be gone (never signal its id again: the
    kernel may give it to another process)."""
    decoder: codecs.IncrementalDecoder = field(default_factory=_decoder, repr=False)

    @property
    def exit_code(self) -> int | None:
        """Its exit status, or `None` while it runs (negative: killed by that signal)."""
        return self.popen.poll()

    def settled(self) -> bool:
        """Whether the shell and every process of its group are gone (checked, then kept)."""
        if not self.ended and self.popen.poll() is not None and not group_alive(self.pid):
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
        self, command: str, *, cwd: Path, env: dict[str, str] | None = None
    ) -> BackgroundShell:
        """Start `command` with ``bash -c`` in `cwd`, in a new session; return its shell.

        Raises:
            ToolError: too many shells are running.
        """
        running = [s for s in self._shells.values() if s.exit_code is None]
        if len(running) >= self.max_shells:
            raise ToolError(
                f"{len(running)} background shells are already running (the limit is "
                f"{self.max_shells}); stop one with bash_kill first: "
                f"{', '.join(s.id for s in running)}.",
                type=ToolErrorType.EXECUTION_FAILED,
            )
        if self._dir is None:
            self._dir = Path(tempfile.mkdtemp(prefix="kode-shells-"))
        self._counter += 1
        shell_id = f"shell_{self._counter}"
        log = self._dir / f"{shell_id}.log"
        with log.open("wb") as out:
            popen = subprocess.Popen(
                [_SHELL, "-c", command],
                cwd=cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        shell = BackgroundShell(
            id=shell_id,
            command=command,
            pid=popen.pid,
            cwd=cwd,
            log=log,
            started=time.monotonic(),
            popen=popen,
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

    async def kill(self, shell_id: str) -> Literal["SIGTERM", "SIGKILL"] | None:
        """Kill the shell's whole process group; return the last signal needed."""
        shell = self.get(shell_id)
        if shell.settled():
            return None
        sent = await kill_group(shell.pid, shell.popen.poll)
        if sent is not None:
            shell.killed_with = sent
        shell.popen.poll()  # the group is gone: the leader is at most a zombie, reaped here
        shell.settled()
        return sent

    async def aclose(self) -> None:
        """Kill every shell's process group and forget the shells (the manager stays usable)."""
        with anyio.CancelScope(shield=True):
            async with anyio.create_task_group() as tg:
                for shell in self._shells.values():
                    if not shell.settled():
                        tg.start_soon(kill_group, shell.pid, shell.popen.poll)
        self._cleanup()

    def close(self) -> None:
        """`aclose` for code without an event loop (it blocks while processes end)."""
        for shell in self._shells.values():
            if not shell.settled():
                _kill_group_now(shell.pid, shell.popen.poll)
        self._cleanup()

    def _cleanup(self) -> None:
        for shell in self._shells.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                shell.popen.wait(timeout=KILL_GRACE)
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None
        self._shells.clear()
        _managers.discard(self)
