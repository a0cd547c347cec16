"""``kode mcp ...`` on the command line, and what importing kode does not import."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from mcp_peers import serve_command, write

from kode.cli import main


def test_kode_mcp_without_a_command_shows_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["mcp"]) == 2
    assert "serve" in capsys.readouterr().out


def test_a_module_that_cannot_be_imported(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["mcp", "serve", "no_such_module_for_kode"]) == 2
    err = capsys.readouterr().err
    assert "kode mcp serve: cannot import 'no_such_module_for_kode'" in err
    assert main(["mcp", "serve", "missing_file.py"]) == 2
    assert "no such file: missing_file.py" in capsys.readouterr().err


def test_warnings_go_to_stderr_and_stdout_stays_clean(tmp_path: Path) -> None:
    module = write(
        tmp_path / "loud_tools.py",
        '''
        from kode import define_tool

        print("importing loud_tools")

        @define_tool
        def ping() -> str:
            """Answer pong."""
            return "pong"
        ''',
    )
    done = subprocess.run(
        serve_command(module, "--tools", "pong*", "nothing_here"),
        stdin=subprocess.DEVNULL,  # the client leaves at once
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""  # stdout is the protocol: not a byte of anything else
    assert "importing loud_tools" in done.stderr
    assert "kode mcp serve: --tools 'pong*' matches no tool (yet)" in done.stderr
    assert "kode mcp serve: no tools to serve (yet)" in done.stderr


def test_importing_kode_does_not_import_the_mcp_sdk() -> None:
    code = (
        "import sys, kode, kode.mcp, kode.cli.mcp, kode.cli\n"
        "kode.cli.build_parser()\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'mcp_types'))\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
