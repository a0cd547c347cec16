"""The worker process that runs `python_grep`, so a runaway regex can always be killed.

Run as ``python -m kode.builtin.fs._grep_worker PARENT_PID``: it reads one pickled `GrepQuery` on
stdin and writes one pickled ``("ok", GrepOutcome)`` or ``("error", message)`` on stdout. Both
ends are kode's own, so pickle carries nothing foreign. The parent side is `python_search`.

The worker dies with the kode process that started it, even when that one is killed with
SIGKILL and cannot kill it: on Linux the kernel sends it SIGKILL (``PR_SET_PDEATHSIG``);
everywhere, a thread checks every half second that its parent is still the one it was started
by, and ends the worker when it is not.
"""

from __future__ import annotations

import ctypes
import os
import pickle
import re
import signal
import sys
import threading
import time

from kode.builtin.fs._grep import GrepQuery, python_grep

_PR_SET_PDEATHSIG = 1
_PARENT_POLL = 0.5


def die_with_parent(parent: int) -> None:
    """End this process when `parent` (the process that started it) ends."""
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        except (OSError, AttributeError):
            pass  # the thread below still watches

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(_PARENT_POLL)
        os._exit(1)

    if os.getppid() != parent:  # it ended before the death signal was armed
        os._exit(1)
    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def main() -> None:
    """Answer one query from stdin on stdout; end with the parent whose pid is argv[1]."""
    if len(sys.argv) > 1 and sys.argv[1].isdigit():
        die_with_parent(int(sys.argv[1]))
    query = pickle.loads(sys.stdin.buffer.read())
    if not isinstance(query, GrepQuery):
        raise TypeError(f"expected a GrepQuery, got {type(query).__name__}")
    try:
        reply: tuple[str, object] = ("ok", python_grep(query, lambda: False))
    except re.error as exc:
        reply = ("error", f"Invalid regular expression {query.pattern!r}: {exc}.")
    sys.stdout.buffer.write(pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL))
    sys.stdout.buffer.flush()


if __name__ == "__main__":
    main()
