"""The FastMCP tasks peer's virtual environment: made once, by the tests, beside the checkout.

``fastmcp-tasks`` (FastMCP's implementation of the 2026-07-28 tasks extension) pins
``fastmcp-slim`` 4.1.4, which cannot sit beside the test extra's FastMCP 4.2; its server and
client run as subprocesses anyway, so they get a virtual environment of their own, made by
`peer_python` from ``fastmcp_tasks_peer.txt`` with pip (as the README's test command installs
everything else) and made again when that file changes.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

REQUIREMENTS = Path(__file__).with_name("fastmcp_tasks_peer.txt")
VENV = Path(os.environ.get("KODE_MCP_PEER_VENV") or Path(__file__).parents[2] / ".venv-mcp-peer")
_STAMP = "kode-peer.stamp"
_INSTALL_TIMEOUT = 600


class PeerUnavailable(Exception):
    """The peer's environment could not be made (the reason is the message)."""


def _python(venv: Path) -> Path:
    return venv / "bin" / "python"


def peer_python() -> Path:
    """The peer environment's Python, made first if it is missing or out of date.

    Raises:
        PeerUnavailable: the environment could not be made; the message says why.
    """
    wanted = hashlib.sha256(REQUIREMENTS.read_bytes()).hexdigest()
    stamp = VENV / _STAMP
    VENV.parent.mkdir(parents=True, exist_ok=True)
    with open(VENV.parent / f"{VENV.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one maker at a time (parallel test processes)
        if stamp.is_file() and stamp.read_text() == wanted and _python(VENV).exists():
            return _python(VENV)
        building = VENV.with_name(f"{VENV.name}.new")
        shutil.rmtree(building, ignore_errors=True)
        steps = [
            [sys.executable, "-m", "venv", str(building)],
            [str(_python(building)), "-m", "pip", "install", "-q", "-r", str(REQUIREMENTS)],
        ]
        for step in steps:
            try:
                done = subprocess.run(
                    step, capture_output=True, text=True, timeout=_INSTALL_TIMEOUT, check=False
                )
            except (OSError, subprocess.TimeoutExpired) as exc:
                raise PeerUnavailable(f"{' '.join(step[:4])} failed: {exc}") from None
            if done.returncode != 0:
                said = [
                    line
                    for line in (done.stderr or done.stdout).splitlines()
                    if line.strip() and not line.startswith("WARNING: Location")
                ]
                raise PeerUnavailable(
                    f"{' '.join(step[:4])} ... exited with {done.returncode}: "
                    + " | ".join(said[-5:])
                )
        # Made aside, then moved in whole: an interrupted install leaves no half environment.
        # (Its console scripts name the folder it was made in; only `python -m` is used.)
        shutil.rmtree(VENV, ignore_errors=True)
        building.rename(VENV)
        (VENV / _STAMP).write_text(wanted)
        return _python(VENV)
