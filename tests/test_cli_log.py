"""A tool that raises, seen from the command line: one line on stderr by default (where in the
application it was raised), the traceback with ``--verbose`` or in ``--log-file``. For
``kode tools call``, ``kode run`` and ``kode mcp serve`` (with a real MCP client), each a real
subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

BAD_TOOLS = '''
from kode import define_tool


@define_tool
def lookup(key: str) -> str:
    """Look a key up.

    Args:
        key: The key.
    """
    return find(key)


def find(key: str) -> str:
    table = {"a": "alpha"}
    return table[key]
'''
RAISING_LINE = 16  # `return table[key]`, in `find`


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "bad_tools.py").write_text(textwrap.dedent(BAD_TOOLS).lstrip(), encoding="utf-8")
    assert (tmp_path / "bad_tools.py").read_text().splitlines()[
        RAISING_LINE - 1
    ].strip() == "return table[key]"
    return tmp_path


def kode(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC", "OPENAI"))}
    return subprocess.run(
        [sys.executable, "-m", "kode", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        check=False,
    )


ONE_LINE = (
    f"kode: warning: Tool 'lookup' raised KeyError: 'zz' (at bad_tools.py:{RAISING_LINE} in find) "
    "[--verbose shows the traceback]"
)


def test_tools_call_prints_one_line_for_a_tool_that_raised(project: Path) -> None:
    out = kode("tools", "call", "lookup", '{"key": "zz"}', "-m", "bad_tools.py", cwd=project)
    assert out.returncode == 1
    assert json.loads(out.stdout)["is_error"] is True
    assert out.stderr.splitlines() == [ONE_LINE]


def test_verbose_shows_the_traceback(project: Path) -> None:
    out = kode(
        "tools", "call", "lookup", '{"key": "zz"}', "-m", "bad_tools.py", "--verbose", cwd=project
    )
    assert out.returncode == 1
    assert "WARNING kode.tools: Tool 'lookup' raised KeyError: 'zz'" in out.stderr
    assert "DEBUG kode.tools: Tool 'lookup' raised KeyError" in out.stderr
    assert "Traceback (most recent call last):" in out.stderr
    assert f'bad_tools.py", line {RAISING_LINE}, in find' in out.stderr


def test_the_log_file_gets_the_traceback_and_stderr_one_line(project: Path) -> None:
    log = project / "kode.log"
    out = kode(
        "tools", "call", "lookup", '{"key": "zz"}', "-m", "bad_tools.py", "--log-file", str(log),
        cwd=project,
    )  # fmt: skip
    assert out.stderr.splitlines() == [ONE_LINE]
    written = log.read_text(encoding="utf-8")
    assert "Traceback (most recent call last):" in written
    assert f'bad_tools.py", line {RAISING_LINE}, in find' in written
    bad = kode("tools", "list", "--log-file", str(project / "no" / "such" / "dir.log"), cwd=project)
    assert bad.returncode == 2
    assert bad.stderr.startswith("kode: --log-file: cannot open ")


def test_kode_run_shows_one_line_beside_its_display(project: Path) -> None:
    (project / "agent.json").write_text(
        json.dumps({"id": "t", "tools": ["lookup"], "permission": {"mode": "auto"}}),
        encoding="utf-8",
    )
    (project / "turns.json").write_text(
        json.dumps([[{"name": "lookup", "input": {"key": "zz"}}], "No such key."]),
        encoding="utf-8",
    )
    out = kode(
        "run", "agent.json", "Look zz up", "-m", "bad_tools.py", "--model", "scripted:turns.json",
        cwd=project,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "✗ lookup" in out.stdout
    assert out.stderr.splitlines() == [ONE_LINE]


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_kode_mcp_serve_logs_one_line(project: Path) -> None:
    from mcp import ClientSession, StdioServerParameters, stdio_client

    keep = ("PYTHONPATH", "VIRTUAL_ENV", "TZ", "PATH")
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "kode", "mcp", "serve", "bad_tools.py"],
        cwd=str(project),
        env={k: os.environ[k] for k in keep if k in os.environ},
    )
    errors = project / "stderr.txt"
    with errors.open("w", encoding="utf-8") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            result = await session.call_tool("lookup", {"key": "zz"})
            assert result.is_error
    # The record was written before the result was sent, and the server has ended.
    written = errors.read_text(encoding="utf-8")
    assert ONE_LINE in written.splitlines()
    assert "Traceback" not in written
    assert written.count("lookup") == 1
