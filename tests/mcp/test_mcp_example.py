"""``examples/mcp_serve.py`` runs offline and prints both directions step by step."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "mcp_serve.py"


def test_example_serves_imports_and_runs_an_agent() -> None:
    out = subprocess.run(
        [sys.executable, str(EXAMPLE)], capture_output=True, text=True, check=True, timeout=180
    ).stdout
    assert "1. An MCP client starts the server: kode mcp serve examples/mcp_tools.py" in out
    assert "- delete_note (destructive): Delete a note for good." in out
    assert "- search_notes (read-only): Find notes whose title or text mention a word." in out
    assert "… read note 3 (100%)" in out
    assert "✓ structured result: ['MCP', 'kode']" in out
    assert "✗ delete_note(42) → isError: Note 42 does not exist; use search_notes" in out
    assert "- mcp__notes__delete_note (remote 'delete_note', kind edit): asks for approval" in out
    assert "- mcp__notes__search_notes (remote 'search_notes', kind read): runs freely" in out
    assert "? approval for mcp__notes__delete_note" in out
    assert "✓ mcp__notes__delete_note: Deleted note 2." in out
    assert "Agent: I deleted your grocery list." in out
    assert out.rstrip().endswith("its tools are unregistered.")


def test_example_serves_over_stdio_when_asked() -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), "--serve"],
        stdin=subprocess.DEVNULL,  # a client that leaves at once
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
