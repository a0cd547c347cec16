"""Start a command so that everything it starts can be found, and kill all of it.

This module owns how a runtime command is launched (`launch`, `prepare`) and killed (`kill`,
`kill_now`). On Linux a command runs under a supervisor (`kode.builtin._shared._supervisor`) that is
a child subreaper, and carries a tag variable in its environment; killing it means SIGTERM to every
descendant of the supervisor and every tagged process, then, after a grace period, a freeze-and-kill
(SIGSTOP until the set is closed, then SIGKILL). A sandboxed command
(`kode.trust.sandbox`) runs with its supervisor inside a PID namespace of its own, under
bubblewrap, as the namespace's first process (its init): killing it means SIGTERM to every process
below the supervisor, then SIGKILL to the supervisor, which takes every process of the namespace
with it (the kernel's guarantee, whatever they did). A sandboxed supervisor dies with the kode
process through its *lifeline* (`lifeline`): a pipe whose only writing end kode holds, so the
kernel closes it when kode ends, however it ends, and the supervisor, reading its end, exits.
Elsewhere a command runs in a new session and killing it means signalling its process group. It
does not capture output or keep shells (`kode.builtin._shared._processes`).

What is guaranteed on Linux: every process that stays a descendant of the supervisor
(``setsid``, ``setpgid``, ``set -m``, ``nohup``, ``disown``, double forks: orphans are
re-parented to the supervisor) and every process whose environment still carries the tag (even
when the command killed its supervisor) is killed. A process that both leaves the tree (its
supervisor killed) and clears its environment (``env -i``), or that another service starts on
the command's behalf (``systemd-run``, ``at``, a daemon over a socket), is not. Elsewhere only
the command's process group is killed: a process that calls ``setsid`` or ``setpgid`` escapes.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import sys
import threading
import time
from collections.abc import Callable, Generator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import anyio

from kode.builtin._shared import _supervisor
from kode.trust import executables
from kode.trust.sandbox import Sandbox, seccomp_fd

__all__ = [
    "KILL_GRACE",
    "TAG",
    "TRACKING",
    "Launch",
    "Target",
    "group_alive",
    "kill",
    "kill_now",
    "launch",
    "lifeline",
    "prepare",
]

KILL_GRACE = 2.0
"""Seconds between SIGTERM and SIGKILL."""
TAG = "KODE_COMMAND_ID"
"""The environment variable marking every process of one command (its value is per command)."""
TRACKING = sys.platform.startswith("linux") and os.path.isdir("/proc/self") and bool(sys.executable)
"""Whether commands run under a supervisor that tracks every process they start."""
_POLL = 0.02
_SUPERVISOR = Path(_supervisor.__file__).resolve()
# The supervisor is imported, not run as a script: a script is compiled at every start (a few
# milliseconds, each command), a module's bytecode is read from its cache. -I leaves the
# working directory off sys.path (and ignores PYTHON* variables); only kode's own folder is added.
_BOOT = (
    f"import sys; sys.path.insert(0, {str(_SUPERVISOR.parent)!r}); "
    "import _supervisor; _supervisor.supervise(sys.argv[1:])"
)


def supervisor_argv(python: str) -> list[str]:
    """How `python` starts the supervisor; what follows are its arguments."""
    return [python, "-I", "-S", "-c", _BOOT]


Signal = Literal["SIGTERM", "SIGKILL"]
ReapFunc = Callable[[], object]


@dataclass(kw_only=True, frozen=True, slots=True)
class Target:
    """The processes of one command."""

    pid: int
    """The supervisor's pid when `tag` is set, else the shell's (its process group's id)."""
    tag: str | None
    """The value of `TAG` in the command's environment; `None` when it is not tracked."""
    sandboxed: bool = False
    """Whether it runs in a PID namespace of its own: then `pid` is bubblewrap's, and the
    supervisor is its child and the namespace's first process."""

    def roots(self) -> set[int]:
        """The supervisor and every process carrying the tag (read from ``/proc``)."""
        if self.tag is None:
            return {self.pid}
        return {self.pid} | _supervisor.tagged(TAG, self.tag)

    def find(self, roots: set[int]) -> tuple[set[int], _supervisor.ProcessTable]:
        """The live processes at or below `roots`, without the supervisor and this process."""
        table = _supervisor.process_table()
        if self.sandboxed:  # below the supervisor, bubblewrap's child
            supervisors = _children({self.pid}, table)
            found = _supervisor.live(_supervisor.descendants(supervisors, table), table)
            return found - {os.getpid()}, table
        found = _supervisor.live(_supervisor.descendants(roots, table) | roots, table)
        return found - {self.pid, os.getpid()}, table

    def alive(self, *, ended: bool = False) -> bool:
        """Whether a process of the command (the supervisor apart) still runs.

        Args:
            ended: The supervisor is known to have ended (its exit status collected). Its
                orphans were re-parented when it died, so nothing is below it any more: only
                the processes carrying the tag, and those below them, can be left, and the
                process table is read only when one is found. In a sandbox nothing can be
                left: the namespace ended with its first process, the supervisor.
        """
        if self.tag is None and not self.sandboxed:
            return group_alive(self.pid)
        if ended:
            if self.sandboxed or self.tag is None:
                return False
            tagged = _supervisor.tagged(TAG, self.tag)
            return bool(tagged) and bool(self.find(tagged)[0])
        return bool(self.find(self.roots())[0])


def _children(pids: set[int], table: _supervisor.ProcessTable) -> set[int]:
    return {pid for pid, (ppid, _) in table.items() if ppid in pids}


@dataclass(kw_only=True, frozen=True, slots=True)
class Launch:
    """How to start one command: what `prepare` made."""

    argv: list[str]
    """The program and its arguments."""
    env: dict[str, str]
    """Its environment."""
    tag: str | None
    """The value of `TAG` in its environment (`None`: not tagged)."""
    sandboxed: bool = False
    """Whether it runs in a sandbox (see `Target.sandboxed`)."""
    pass_fds: tuple[int, ...] = ()
    """Descriptors the child must inherit (the sandbox's system-call filter, the lifeline)."""
    owned_fds: tuple[int, ...] = ()
    """Those of `pass_fds` made for this launch alone, which `close` closes (not the lifeline,
    which every sandboxed command shares)."""

    def target(self, pid: int) -> Target:
        """The `Target` of the process started with `pid`."""
        return Target(pid=pid, tag=self.tag, sandboxed=self.sandboxed)

    def close(self) -> None:
        """Close the descriptors made for this launch (once the child started, or failed to)."""
        for fd in self.owned_fds:
            with contextlib.suppress(OSError):
                os.close(fd)


def _program(found: executables.Executable) -> str:
    """The path of a program kode runs for every command (the shell, the supervisor's Python).

    Both come from trusted places only (`kode.trust.executables`): a ``bash`` or ``python``
    the model planted in a workspace directory on ``PATH`` (an activated ``.venv/bin``) would
    otherwise run every command, the approved ones outside the sandbox.
    """
    if found.path is None:
        raise OSError(f"kode found no trusted program to run commands with: {found.describe()}")
    return found.path


def launch(command: str, env: dict[str, str]) -> tuple[list[str], dict[str, str], str | None]:
    """The argv and environment that run `command`, and the tag (`None` when untracked)."""
    shell = _program(executables.shell())
    if not TRACKING:
        return [shell, "-c", command], env, None
    tag = secrets.token_hex(8)
    parent = f"{_supervisor.PARENT_OPTION}{os.getpid()}"
    python = _program(executables.python())
    argv = [*supervisor_argv(python), parent, shell, "-c", command]
    return argv, {**env, TAG: tag}, tag


_lifeline_lock = threading.Lock()
_lifeline: tuple[int, int, int] | None = None  # (pid that made it, read end, write end)


def _forget_lifeline() -> None:
    """In a child forked without exec: drop the parent's lifeline (it makes its own).

    Kept, it would keep the parent's sandboxes alive after the parent ended.
    """
    global _lifeline
    if _lifeline is not None:
        for fd in _lifeline[1:]:
            with contextlib.suppress(OSError):
                os.close(fd)
        _lifeline = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_lifeline)


def lifeline() -> int:
    """The reading end of this process's lifeline, made on first use, for a sandbox's supervisor.

    Nothing is ever written to the pipe, and this process alone holds its writing end (not
    inherited across exec, dropped in children forked without exec): the supervisor's read
    returns end-of-file exactly when this process has ended, however it ended (SIGKILL
    included). Unlike bubblewrap's ``--die-with-parent`` (a parent-death signal, sent when the
    *thread* that started the process ends), it does not depend on which thread started the
    command: trio starts processes in worker threads, which end when idle.
    """
    global _lifeline
    with _lifeline_lock:
        if _lifeline is None or _lifeline[0] != os.getpid():
            read, write = os.pipe()
            _lifeline = (os.getpid(), read, write)
        return _lifeline[1]


def prepare(
    command: str, env: dict[str, str], *, sandbox: Sandbox | None = None, cwd: Path
) -> Launch:
    """How to run `command` in `cwd`: under the supervisor, in `sandbox` when one is given.

    A sandboxed command's supervisor runs inside the sandbox as the first process of its PID
    namespace, so the namespace holds every process of the command and ends with the
    supervisor; it gets the `lifeline` (it exits when kode has ended) and ``TMPDIR=/tmp`` (its
    private one).
    """
    if sandbox is None:
        argv, env, tag = launch(command, env)
        return Launch(argv=argv, env=env, tag=tag)
    line = lifeline()
    watch = f"{_supervisor.LIFELINE_OPTION}{line}"
    shell, python = _program(executables.shell()), _program(executables.python())
    inner = [*supervisor_argv(python), watch, shell, "-c", command]
    fd = seccomp_fd()
    try:
        argv = sandbox.argv(inner, cwd=cwd, seccomp=fd)
    except BaseException:
        if fd is not None:
            os.close(fd)
        raise
    private = {**env, "TMPDIR": "/tmp"}
    for name in ("TMP", "TEMP"):
        if name in private:
            private[name] = "/tmp"
    owned = () if fd is None else (fd,)
    return Launch(
        argv=argv, env=private, tag=None, sandboxed=True, pass_fds=(*owned, line), owned_fds=owned
    )


# --- process groups (untracked) -------------------------------------------------------------------


def _in_group(pid: str, pgid: int) -> bool:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    fields = raw[raw.rfind(")") + 2 :].split()
    return int(fields[2]) == pgid and fields[0] not in ("Z", "X")


def group_alive(pgid: int) -> bool:
    """Whether a process of group `pgid` is still running (zombies do not count).

    On Linux this reads ``/proc``, since an orphaned zombie may wait forever for a parent that
    never reaps it (a container's init); elsewhere it asks the kernel with signal 0.
    """
    if sys.platform.startswith("linux") and os.path.isdir("/proc/self"):
        with os.scandir("/proc") as entries:
            for entry in entries:
                if entry.name.isdigit() and _in_group(entry.name, pgid):
                    return True
        return False
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _kill_namespace(target: Target) -> None:
    """SIGKILL a sandbox's supervisor, its namespace's first process: the kernel kills the rest."""
    inits = _children({target.pid}, _supervisor.process_table()) or {target.pid}
    for pid in inits:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def _top_down(pids: set[int], table: _supervisor.ProcessTable) -> list[int]:
    """`pids`, each after its ancestors in `table` (pids wrap, so a child's may be lower).

    A shell must get its SIGTERM before the child it waits for: the other way round, the shell
    may see the child end and exit 0 before its own signal arrives, and a killed shell would
    report a clean exit.
    """

    def depth(pid: int) -> int:
        seen: set[int] = set()
        while pid in table and pid not in seen:
            seen.add(pid)
            pid = table[pid][0]
        return len(seen)

    return sorted(pids, key=depth)


def _signal(target: Target, pids: set[int], sig: signal.Signals) -> None:
    if target.tag is None and not target.sandboxed:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(target.pid, sig)
        return
    for pid in _top_down(pids, _supervisor.process_table()):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


# --- killing --------------------------------------------------------------------------------------


def _steps(target: Target, reap: ReapFunc, grace: float) -> Generator[float, None, Signal | None]:
    """The kill, as a generator of pauses (so it runs with and without an event loop)."""
    reap()
    roots = target.roots()

    tracked = target.tag is not None or target.sandboxed

    def members() -> set[int]:
        if not tracked:
            return {target.pid} if group_alive(target.pid) else set()
        return target.find(roots)[0]

    found = members()
    if tracked and not found:
        # A supervisor without children is starting its shell, or about to exit: wait for
        # one or the other (it exits at once once it has no child).
        deadline = time.monotonic() + grace
        while not found and reap() is None and time.monotonic() < deadline:
            yield _POLL
            found = members()
        if not found and reap() is None:  # hung before starting the shell
            if target.sandboxed:
                _kill_namespace(target)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(target.pid, signal.SIGKILL)
            roots = target.roots()  # a shell it forked meanwhile carries the tag
            found = members()
    if not found:
        return None
    sent: Signal = "SIGTERM"
    termed = set(found)
    _signal(target, found, signal.SIGTERM)
    _signal(target, found, signal.SIGCONT)  # a stopped process only sees SIGTERM once resumed
    deadline = time.monotonic() + grace
    while True:
        yield _POLL
        reap()
        found = members()
        if not found:
            break
        if time.monotonic() >= deadline:
            if sent == "SIGKILL":
                break  # unkillable (uninterruptible sleep): nothing more to do
            sent = "SIGKILL"
            if target.sandboxed:
                _kill_namespace(target)
            elif target.tag is None:
                _signal(target, found, signal.SIGKILL)
            else:
                _supervisor.freeze_and_kill(lambda: target.find(roots))
            deadline = time.monotonic() + grace
        elif found - termed:  # started after the SIGTERM: it gets one too
            _signal(target, found - termed, signal.SIGTERM)
            termed |= found
    if target.tag is not None or target.sandboxed:  # the supervisor ends after its last child
        deadline = time.monotonic() + grace
        while reap() is None and time.monotonic() < deadline:
            yield _POLL
        if target.sandboxed and reap() is None:  # a stopped or hung supervisor: end it all
            _kill_namespace(target)
            deadline = time.monotonic() + grace
            while reap() is None and time.monotonic() < deadline:
                yield _POLL
    return sent


async def kill(target: Target, reap: ReapFunc, *, grace: float | None = None) -> Signal | None:
    """Kill every process of `target`: SIGTERM, then SIGKILL after `grace` seconds.

    Args:
        target: The command's processes.
        reap: Called while waiting, to collect the supervisor's (or shell's) exit status and
            return it (`None` while it runs).
        grace: Seconds the processes have to end after SIGTERM (default `KILL_GRACE`).

    Returns:
        The last signal that was needed, or `None` when nothing was left to kill.
    """
    steps = _steps(target, reap, KILL_GRACE if grace is None else grace)
    try:
        while True:
            pause = next(steps)
            await anyio.sleep(pause)
    except StopIteration as stop:
        result: Signal | None = stop.value
        return result


def kill_now(target: Target, reap: ReapFunc) -> Signal | None:
    """`kill` for code without an event loop (``close``, interpreter exit)."""
    steps = _steps(target, reap, KILL_GRACE)
    try:
        while True:
            time.sleep(next(steps))
    except StopIteration as stop:
        result: Signal | None = stop.value
        return result
