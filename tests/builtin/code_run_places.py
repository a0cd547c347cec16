"""What the code_run tests that start a kode program of their own share.

Their folders live under the home directory's cache, not /tmp: the sandbox gives a script a
private /tmp, and a workspace under it would not be the one the test looks at.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

BASE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kode-code-run-tests"


def new_place() -> Iterator[Path]:
    """A fresh folder with a ``ws`` workspace in it, removed afterwards (a fixture's body)."""
    root = BASE / secrets.token_hex(6)
    (root / "ws").mkdir(parents=True)
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def start_kode(
    place: Path, name: str, program: str, *args: str, flag: Path, waiting_for: str
) -> subprocess.Popen[bytes]:
    """Write `program` to `place`/`name`, run it with `args`, and return once it wrote `flag`.

    Fails the test, naming `waiting_for`, if the program ends first or takes 30 s.
    """
    path = place / name
    path.write_text(program)
    kode = subprocess.Popen([sys.executable, str(path), *args], cwd=place, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while not flag.exists():
        if kode.poll() is not None:
            raise AssertionError(kode.stderr.read() if kode.stderr else b"")
        if time.monotonic() >= deadline:
            kode.kill()
            kode.wait(10)
            raise AssertionError(f"{waiting_for} never happened")
        time.sleep(0.02)
    return kode


def stop(kode: subprocess.Popen[bytes]) -> None:
    """Kill `kode` if it still runs, and close its stderr."""
    if kode.poll() is None:
        kode.kill()
        kode.wait(10)
    if kode.stderr is not None:
        kode.stderr.close()
