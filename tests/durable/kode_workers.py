"""What the durable tests share: `kode worker` subprocesses, `kode` commands, DBOS in process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path

import anyio


class KodeWorker:
    """A ``kode worker`` subprocess running the agents of `agents` (a module file), started and
    waited for until it has launched DBOS; its stderr is kept in a file of `folder`."""

    def __init__(
        self,
        folder: Path,
        agents: Path,
        db: str,
        *extra: str,
        env: Mapping[str, str] = {},
    ) -> None:
        self.err = folder / f"worker-{time.monotonic_ns()}.err"
        with self.err.open("w") as err:  # the child keeps its own copy of the descriptor
            self.process = subprocess.Popen(
                [
                    *(sys.executable, "-m", "kode", "worker", "-m", str(agents), "--db", db),
                    *("--scheduler-poll", "0.5", *extra),
                ],
                stdout=subprocess.DEVNULL,
                stderr=err,
                env={**os.environ, **env},
                text=True,
            )
        self.pid = self.process.pid
        deadline = time.monotonic() + 180  # importing and launching DBOS is load-bound
        while "Ctrl-C stops" not in self.stderr():
            assert self.process.poll() is None, self.stderr()[-3000:]
            assert time.monotonic() < deadline, "the worker never launched:\n" + self.stderr()
            time.sleep(0.05)

    def stderr(self) -> str:
        return self.err.read_text() if self.err.exists() else ""

    def kill(self) -> None:
        """SIGKILL the worker (if it still runs) and reap it."""
        if self.process.poll() is None:
            os.kill(self.pid, signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self) -> str:
        """SIGTERM the worker, check it ended cleanly; its stderr."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        assert self.process.wait(timeout=60) == 0, self.stderr()[-3000:]
        return self.stderr()


def kode(*args: str, db: str) -> subprocess.CompletedProcess[str]:
    """Run ``kode ARGS --db DB`` in a new process."""
    return subprocess.run(
        [sys.executable, "-m", "kode", *args, "--db", db],
        capture_output=True,
        text=True,
        timeout=120,
    )


def in_dbos(
    folder: Path, work: Callable[[], Awaitable[None]], *, name: str, log_level: str = "WARNING"
) -> None:
    """Run `work` with DBOS launched in this process on a SQLite system database in `folder`."""
    from dbos import DBOS

    async def main() -> None:
        DBOS(
            config={
                "name": name,
                "system_database_url": f"sqlite:///{folder / 'dbos.sqlite'}",
                "log_level": log_level,
            }
        )
        DBOS.launch()
        try:
            await work()
        finally:
            DBOS.destroy()

    anyio.run(main)
