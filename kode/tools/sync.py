"""`run_sync`: call kode's async API from sync code, including inside a running event loop.

A script has no event loop, so `anyio.run` is enough. A notebook already runs one in the main
thread, where `anyio.run` refuses to start; there the coroutine runs in a fresh event loop on a
short-lived worker thread, and this thread waits for it.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio

__all__ = ["run_sync"]

T = TypeVar("T")


def _loop_running() -> bool:
    """Whether this thread is inside a running asyncio or trio event loop."""
    # Neither runs unless imported: asking sys.modules keeps `import kode` from loading
    # asyncio (about a tenth of importing kode.builtin).
    asyncio = sys.modules.get("asyncio")
    if asyncio is not None:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            return True
    trio = sys.modules.get("trio")
    if trio is None:
        return False
    try:
        trio.lowlevel.current_trio_token()
    except RuntimeError:
        return False
    return True


def run_sync(func: Callable[..., Awaitable[T]], /, *args: Any, backend: str = "asyncio") -> T:
    """Run `await func(*args)` to completion from sync code and return its result.

    Works in a plain script and inside a running event loop (Jupyter, IPython), where the
    call runs in a new event loop on a worker thread. Exceptions propagate unchanged.

    Args:
        func: An async function.
        *args: Positional arguments for `func`.
        backend: The anyio backend for a new event loop, ``"asyncio"`` or ``"trio"``.
    """

    async def call() -> T:
        return await func(*args)

    if not _loop_running():
        return anyio.run(call, backend=backend)
    box: dict[str, Any] = {}

    def worker() -> None:
        try:
            box["value"] = anyio.run(call, backend=backend)
        except BaseException as exc:  # handed back to the caller below
            box["error"] = exc

    thread = threading.Thread(target=worker, name="kode-run-sync", daemon=True)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    value: T = box["value"]
    return value
