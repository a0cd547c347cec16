"""The worker process that runs `python_grep`, so a runaway regex can always be killed.

Run as ``python -m kode.builtin.fs._grep_worker [PARENT_PID]`` (kode starts it as an isolated
interpreter, see `kode.trust.processes`): it reads one pickled `GrepQuery` on stdin, after its
length (8 bytes, big-endian), and writes one JSON ``["ok", outcome]`` (`outcome_to_json`) or
``["error", message]`` on stdout. The query comes from kode, so pickle carries nothing foreign
into the worker; the answer goes the other way as data only, which kode reads without running
anything. The parent side is `python_search`, which keeps the worker's stdin open until the
worker has ended.

The worker dies with the kode process that started it, even when that one is killed with
SIGKILL and cannot kill it: on Linux, once the query is read, stdin is set to raise SIGIO
(whose default action ends the process, whatever it is doing, a regex holding the interpreter
lock included) when its writing end, which kode alone holds, is closed, as the kernel does when
kode ends (in the sandbox the worker is the first process of its PID namespace, which ignores a
signal it has no handler for: there a handler ends it, when the regex engine next checks for
signals); outside the sandbox, everywhere, a thread checks every half second that its parent is
still the one it was started by, and ends the worker when it is not. (A parent-death signal,
``PR_SET_PDEATHSIG``, is not used: it fires when the *thread* that started the worker ends, and
trio starts processes in worker threads that end after 10 s idle.)
"""

from __future__ import annotations

import json
import os
import pickle
import re
import select
import signal
import sys
import threading
import time

from kode.builtin.fs._grep import outcome_to_json, python_grep
from kode.builtin.fs._grep_types import WORKER_HEADER, GrepQuery

_PARENT_POLL = 0.5


def read_query(fd: int = 0) -> bytes:
    """The query's bytes from `fd`: its length, then that many bytes."""
    header = _read_exactly(fd, WORKER_HEADER.size)
    return _read_exactly(fd, WORKER_HEADER.unpack(header)[0])


def _read_exactly(fd: int, size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        chunk = os.read(fd, size - len(data))
        if not chunk:
            raise EOFError(f"stdin ended after {len(data)} of {size} bytes")
        data += chunk
    return bytes(data)


def die_with_writer(fd: int = 0) -> None:
    """On Linux, end this process (SIGIO's default action) once `fd`'s writers are all gone.

    Call it once everything meant to be read from the pipe `fd` has been read: any further
    data would end the process too.
    """
    if not sys.platform.startswith("linux"):
        return
    import fcntl

    try:
        if os.getpid() == 1:  # a PID namespace's first process: no default action applies
            signal.signal(signal.SIGIO, lambda *_: os._exit(1))
        else:
            signal.signal(signal.SIGIO, signal.SIG_DFL)
        fcntl.fcntl(fd, fcntl.F_SETOWN, os.getpid())
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_ASYNC)
        ended = bool(select.select([fd], [], [], 0)[0])  # closed before it was armed?
    except (OSError, ValueError):
        return  # the parent watch still works
    if ended:
        os._exit(1)


def die_with_parent(parent: int) -> None:
    """End this process when `parent` (the process that started it) ends."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(_PARENT_POLL)
        os._exit(1)

    if os.getppid() != parent:  # it ended before the death signal was armed
        os._exit(1)
    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def main() -> None:
    """Answer one query from stdin on stdout; end with the parent whose pid is argv[1], if any."""
    if len(sys.argv) > 1 and sys.argv[1].isdigit():
        die_with_parent(int(sys.argv[1]))
    query = pickle.loads(read_query())
    die_with_writer()
    if not isinstance(query, GrepQuery):
        raise TypeError(f"expected a GrepQuery, got {type(query).__name__}")
    try:
        found = outcome_to_json(python_grep(query, lambda: False))
        reply = b'["ok", ' + found + b"]"
    except re.error as exc:
        problem = f"Invalid regular expression {query.pattern!r}: {exc}."
        reply = json.dumps(["error", problem]).encode()
    sys.stdout.buffer.write(reply)
    sys.stdout.buffer.flush()


if __name__ == "__main__":
    main()
