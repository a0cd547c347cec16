"""The worker process that runs `python_grep`, so a runaway regex can always be killed.

Run as ``python -m kode.builtin._grep_worker``: it reads one pickled `GrepQuery` on stdin and
writes one pickled ``("ok", GrepOutcome)`` or ``("error", message)`` on stdout. Both ends are
kode's own, so pickle carries nothing foreign. The parent side is `python_search`.
"""

from __future__ import annotations

import pickle
import re
import sys

from kode.builtin._grep import GrepQuery, python_grep


def main() -> None:
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
