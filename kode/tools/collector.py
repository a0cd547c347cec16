"""A pause of Python's cyclic garbage collector while kode builds a large, long-lived tree at once.

Loading a long session allocates millions of objects, every one of which stays alive. Each
collection that the allocation triggers walks the tracked objects made so far, so the load grows
faster than the session: a 5,000-turn `AgentState` took eight times as long to validate with the
collector running as without it, in step with `json.loads` of the same text. This module owns
the one pause kode takes around such loads (`collector_paused`). Pauses nest and may overlap
across threads and tasks: the collector is switched back on when the last one ends, and only if
it was on when the first began. Reference counting goes on meanwhile, so only reference cycles
made during a pause wait for the next collection. It does not decide what to load.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["collector_paused"]

_lock = threading.Lock()
_depth = 0
_was_enabled = False


@contextmanager
def collector_paused() -> Iterator[None]:
    """Keep the cyclic garbage collector off for the block, then restore it.

    Use it around code that allocates many objects that all stay alive (parsing and
    validating a stored session). Nested and concurrent pauses are counted: the collector
    comes back on when the last one ends, if it was on before the first.
    """
    global _depth, _was_enabled
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _was_enabled:
                gc.enable()
