"""Find and kill every process a command started, on Linux; also the command's supervisor.

This module owns the Linux process tracking of the runtime tools: reading the process table
from ``/proc``, the descendants of a process, the processes carrying a tag in their
environment, and `freeze_and_kill` (SIGSTOP every process of a set until no new one appears,
then SIGKILL them all, so a process cannot fork its way out between the listing and the kill).
It does not decide when to kill (`kode.builtin._shared._processes`).

Run as a script (``python -I -S _supervisor.py [--parent=PID] bash -c COMMAND``) it is the
*supervisor* of one command: it makes itself a child subreaper
(``prctl(PR_SET_CHILD_SUBREAPER)``), so every process the command leaves behind, even after
double forks, ``setsid`` or ``disown``, is re-parented to it rather than to init and stays its
descendant; it reaps them all; it writes ``exit <code>`` to its stderr when the command's shell
exits; it exits, with the shell's status, once it has no child left; and it kills everything
left if its parent (``--parent``, else the one it started with) dies. A sandboxed one is given
``--lifeline=FD`` instead: a pipe's reading end, which reaches end-of-file when the kode process
has ended; it is the first process of the sandbox's PID namespace then, and exits, which makes
the kernel kill every other process of the namespace. The command's
stdout and stderr are the supervisor's stdout. The script uses the standard library only, since
it runs in an isolated interpreter.
"""

from __future__ import annotations

import _thread
import os
import select
import sys
import time

# What the script imports is what every command waits for: an interpreter's start is most of
# a short command's cost. The C modules alone then (``_signal``, ``_thread``, ``_ctypes``):
# ``signal``, ``threading``, ``contextlib`` and ``ctypes`` would bring ``enum``,
# ``functools``, ``collections`` and ``struct``, which doubles the start; ``typing`` too.
TYPE_CHECKING = False  # what mypy reads as typing's
if TYPE_CHECKING:
    import signal as _signal
    from collections.abc import Callable, Iterable
else:
    import _signal

__all__ = [
    "LIFELINE_OPTION",
    "PARENT_OPTION",
    "descendants",
    "freeze_and_kill",
    "live",
    "process_table",
    "tagged",
]

_PR_SET_CHILD_SUBREAPER = 36
_PR_SET_DUMPABLE = 4
_PASSES = 50
"""How many listing passes `freeze_and_kill` makes at most, per round and in rounds."""
_PARENT_POLL = 0.5
"""Seconds between the supervisor's checks that its parent is still alive."""

ProcessTable = dict[int, tuple[int, str]]
"""pid → (parent pid, state letter) of every process visible in ``/proc``."""


def process_table() -> ProcessTable:
    """Every process in ``/proc``: its parent and its state (``R``, ``S``, ``T``, ``Z``, ...)."""
    table: ProcessTable = {}
    with os.scandir("/proc") as entries:
        for entry in entries:
            if not entry.name.isdigit():
                continue
            try:
                with open(f"/proc/{entry.name}/stat", "rb") as stat:
                    raw = stat.read()
            except OSError:
                continue  # ended while we looked
            fields = raw[raw.rfind(b")") + 2 :].split()
            table[int(entry.name)] = (int(fields[1]), fields[0].decode())
    return table


def descendants(roots: Iterable[int], table: ProcessTable) -> set[int]:
    """The processes below `roots` in `table` (following parent pids), roots excluded."""
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    found: set[int] = set()
    todo = list(roots)
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def live(pids: Iterable[int], table: ProcessTable) -> set[int]:
    """The processes of `pids` that still run (zombies and vanished ones left out)."""
    return {pid for pid in pids if pid in table and table[pid][1] not in ("Z", "X", "x")}


def tagged(name: str, value: str) -> set[int]:
    """The processes whose environment has ``name=value`` (those this user may read)."""
    needle = f"{name}={value}".encode()
    found: set[int] = set()
    with os.scandir("/proc") as entries:
        for entry in entries:
            if not entry.name.isdigit():
                continue
            try:
                with open(f"/proc/{entry.name}/environ", "rb") as environ:
                    if needle in environ.read().split(b"\0"):
                        found.add(int(entry.name))
            except OSError:
                continue
    return found


def _send(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def freeze_and_kill(find: Callable[[], tuple[set[int], ProcessTable]]) -> bool:
    """SIGSTOP every process `find` lists until no new one appears, then SIGKILL them all.

    A stopped process cannot fork, so once every listed process is stopped the set is closed
    and the SIGKILLs leave nothing behind; pids of stopped processes cannot be reused either.

    Args:
        find: Lists the live processes to kill, with the process table it read.

    Returns:
        Whether none was left running (a process in uninterruptible sleep may outlast it).
    """
    for _ in range(_PASSES):
        stopped: set[int] = set()
        for attempt in range(_PASSES):
            found, table = find()
            new = found - stopped
            for pid in new:
                _send(pid, _signal.SIGSTOP)
            stopped |= found
            if not new and all(table[pid][1] in ("T", "t") for pid in found):
                break
            if attempt:
                time.sleep(0.001 * attempt)  # let the stop reach a process in a system call
        for pid in stopped:
            _send(pid, _signal.SIGKILL)
        if not stopped:
            return True
        time.sleep(0.001)
        if not find()[0] - stopped:
            return True
    return not find()[0]


# --- the supervisor -------------------------------------------------------------------------------


def _set_subreaper() -> bool:
    try:
        return _prctl(_PR_SET_CHILD_SUBREAPER, 1) == 0
    except (OSError, AttributeError, ImportError):
        return False


def _set_undumpable() -> None:
    try:
        _prctl(_PR_SET_DUMPABLE, 0)
    except (OSError, AttributeError, ImportError):
        pass


def _prctl(option: int, value: int) -> int:
    """``prctl(option, value, 0, 0, 0)`` through ``_ctypes`` (``ctypes`` costs its imports)."""
    import _ctypes

    class _Int(_ctypes._SimpleCData):  # type: ignore[type-arg]  # the stub's generic
        _type_ = "i"

    class _Call(_ctypes.CFuncPtr):
        _flags_ = _ctypes.FUNCFLAG_CDECL
        _restype_ = _Int

    class _Library:  # what a foreign function's constructor needs of a library
        _handle = _ctypes.dlopen(None, os.RTLD_NOW)  # type: ignore[arg-type]  # None: this program

    call = _Call(("prctl", _Library()))  # type: ignore[arg-type]  # a CDLL in the stub
    return int(call(option, value, 0, 0, 0))


def _watch_parent(parent: int) -> None:
    """Kill everything below the supervisor once its parent is gone (even by SIGKILL)."""
    me = os.getpid()
    while os.getppid() == parent:
        time.sleep(_PARENT_POLL)
    _kill_below(me)


def _kill_below(me: int) -> None:
    def find() -> tuple[set[int], ProcessTable]:
        table = process_table()
        return live(descendants([me], table), table), table

    freeze_and_kill(find)


def _ended(fd: int) -> bool:
    """Whether the lifeline `fd` is at its end (nothing is written to it: readable means that)."""
    try:
        return bool(select.select([fd], [], [], 0)[0])
    except (OSError, ValueError):
        return True  # not a descriptor we can watch: as if kode were gone


def _watch_lifeline(fd: int) -> None:
    """Once kode has ended (the lifeline's end): end the namespace, or kill what is below."""
    while True:
        try:
            if not os.read(fd, 1):
                break
        except InterruptedError:  # pragma: no cover - retried by Python already
            continue
        except OSError:
            break
    if os.getpid() == 1:  # the namespace's first process: the kernel kills all the rest
        os._exit(1)
    _kill_below(os.getpid())


def _exit_like(code: int) -> None:
    if code < 0:  # killed by a signal: end the same way, so the parent sees the same status
        try:
            _signal.signal(-code, _signal.SIG_DFL)
            os.kill(os.getpid(), -code)
        except (OSError, ValueError):
            pass
        os._exit(128 - code)
    os._exit(code)


PARENT_OPTION = "--parent="
"""``--parent=PID`` before the command: the process the supervisor must die with. Without it,
its parent when it starts; but that one may already be gone by then (killed while the
supervisor's interpreter was starting), leaving the supervisor waiting for a change that
already happened."""


LIFELINE_OPTION = "--lifeline="
"""``--lifeline=FD`` before the command: a descriptor that reaches end-of-file when the kode
process has ended (nothing is ever written to it), watched instead of the parent. A sandboxed
supervisor's parent is bubblewrap, which does not die with kode by itself."""


def supervise(argv: list[str]) -> None:
    """Run `argv` under this process as a child subreaper; exit like it once all are gone."""
    parent = os.getppid()
    line: int | None = None
    if argv and argv[0].startswith(PARENT_OPTION):
        parent = int(argv[0][len(PARENT_OPTION) :])
        argv = argv[1:]
        if os.getppid() != parent:  # gone before anything started: start nothing
            os._exit(1)
    elif argv and argv[0].startswith(LIFELINE_OPTION):
        line = int(argv[0][len(LIFELINE_OPTION) :])
        argv = argv[1:]
        # Not dumpable: the command, of the same user, cannot open /proc/1/fd/* (the lifeline
        # every sandbox of this kode shares, which a byte written into would make every
        # supervisor started later take for kode's end; the status pipe). The command's own
        # exec makes it dumpable again.
        _set_undumpable()
        if _ended(line):  # kode ended before anything started: start nothing
            os._exit(1)
    _set_subreaper()
    shell = os.fork()
    if shell == 0:  # pragma: no cover - the child execs at once
        try:
            if line is not None:
                os.close(line)  # the command has no use for it
            for sig in (_signal.SIGPIPE, _signal.SIGXFSZ):  # Python ignores these; a shell must not
                _signal.signal(sig, _signal.SIG_DFL)
            os.dup2(1, 2)  # the command's stderr joins its stdout; ours carries the status
            os.execvp(argv[0], argv)
        finally:
            os._exit(127)
    # A command may signal its own process group (kill 0): the supervisor stays to reap.
    for sig in (_signal.SIGTERM, _signal.SIGINT, _signal.SIGHUP, _signal.SIGQUIT, _signal.SIGPIPE):
        _signal.signal(sig, _signal.SIG_IGN)
    if line is None:
        _thread.start_new_thread(_watch_parent, (parent,))
    else:
        _thread.start_new_thread(_watch_lifeline, (line,))
    code = 127
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            break
        except InterruptedError:  # pragma: no cover - retried by Python already
            continue
        if pid == shell:
            code = os.waitstatus_to_exitcode(status)
            try:
                os.write(2, f"exit {code}\n".encode())
            except OSError:
                pass
    _exit_like(code)


if __name__ == "__main__":  # pragma: no cover - run in a subprocess
    supervise(sys.argv[1:])
