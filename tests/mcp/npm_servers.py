"""Published MCP servers from npm, run with node: where the tests find them.

``tests/mcp/npm/package.json`` pins them and ``.ci/run`` installs them with
``npm ci --prefix tests/mcp/npm``. Without them a test is skipped on a developer's machine,
with the command that installs them, and fails under CI (where ``.ci/run`` installed them).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from kode.testing.programs import missing_program

NPM_DIR = Path(__file__).resolve().parent / "npm"
INSTALL = "npm ci --prefix tests/mcp/npm"


def npm_server(name: str) -> str:
    """The path of the installed server's executable (``node_modules/.bin/<name>``)."""
    path = NPM_DIR / "node_modules" / ".bin" / name
    if not shutil.which("node"):
        pytest.skip(missing_program("node", package="nodejs", needed_for=f"the MCP server {name}"))
    if path.exists():
        return str(path)
    why = f"{name} is not installed ({INSTALL})"
    if os.environ.get("CI"):  # .ci/run installs them wherever node is
        pytest.fail(why)
    pytest.skip(why)
