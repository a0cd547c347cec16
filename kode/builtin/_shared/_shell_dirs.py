"""The directories that hold background shells' output, and cleaning up after a crash.

This module owns `shells_dir` (a new ``kode-shells-<pid>-*`` temporary directory whose
``owner`` file names this process and its start time) and `sweep_stale_shell_dirs` (removing
those of processes that are gone). A kode process that closes its `ProcessManager` removes its
own; one killed with SIGKILL cannot, so the next kode process to need a directory, or to make
an agent with ``bash_run``, sweeps (once). It does not start processes
(`kode.builtin._shared._processes`).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from pathlib import Path

__all__ = ["shells_dir", "swept", "sweep_once", "sweep_stale_shell_dirs"]

_SHELLS_PREFIX = "kode-shells-"
_OWNER = "owner"


def _identity(pid: int) -> str | None:
    """Who `pid` is: its start time where ``/proc`` tells it, ``""`` where it does not.

    A later process given the same pid has another start time. `None`: no such process runs.
    """
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass  # it runs, as another user
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return ""
    fields = raw[raw.rfind(b")") + 2 :].split()
    if fields[:1] in ([b"Z"], [b"X"]):  # ended; only its parent has not collected it
        return None
    return fields[19].decode() if len(fields) > 19 else ""


def _stale(directory: str) -> bool:
    try:
        with open(os.path.join(directory, _OWNER)) as owner:
            pid_text, _, started = owner.read().strip().partition(" ")
        pid = int(pid_text)
    except (OSError, ValueError):
        return False  # not written yet, or not ours to judge
    now = _identity(pid)
    return now is None or bool(started and now and now != started)


def sweep_stale_shell_dirs(base: str | None = None) -> list[str]:
    """Remove the shells' directories of kode processes that are gone; return their paths.

    Only directories of this user named ``kode-shells-*`` whose ``owner`` file names a
    process that no longer runs (or whose pid now belongs to another process) are removed.

    Args:
        base: Where to look (default: `tempfile.gettempdir`).
    """
    base = tempfile.gettempdir() if base is None else base
    removed: list[str] = []
    try:
        entries = list(os.scandir(base))
    except OSError:
        return removed
    for entry in entries:
        try:
            if not entry.name.startswith(_SHELLS_PREFIX) or not entry.is_dir(follow_symlinks=False):
                continue
            if entry.stat(follow_symlinks=False).st_uid != os.getuid():
                continue
        except OSError:
            continue
        if _stale(entry.path):
            shutil.rmtree(entry.path, ignore_errors=True)
            removed.append(entry.path)
    return removed


_swept = False
_sweep_lock = threading.Lock()


def sweep_once() -> None:
    """`sweep_stale_shell_dirs`, the first time this process calls it.

    Any thread may call it: a second caller waits until the first one's sweep is done.
    """
    global _swept
    if _swept:
        return
    with _sweep_lock:
        if not _swept:
            try:
                sweep_stale_shell_dirs()
            finally:
                _swept = True


def swept() -> bool:
    """Whether `sweep_once` has swept already (then it costs nothing)."""
    return _swept


def shells_dir() -> Path:
    """A new directory for one manager's shells, marked with this process as its owner."""
    sweep_once()
    made = Path(tempfile.mkdtemp(prefix=f"{_SHELLS_PREFIX}{os.getpid()}-"))
    (made / _OWNER).write_text(f"{os.getpid()} {_identity(os.getpid()) or ''}\n")
    return made
