"""``kode tools search``: find tools by words or a regex from the command line."""

from __future__ import annotations

import json
import os
import subprocess
import sys


def kode(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kode.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={k: v for k, v in os.environ.items() if k != "COLUMNS"},
    )


def test_search_by_words_says_why_each_tool_matched() -> None:
    out = kode("tools", "search", "--builtin", "stop", "a", "background", "shell")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("bash_kill  Stop a background shell")
    assert lines[1].strip().startswith("matched ") and "kill (for stop) in name" in lines[1]


def test_search_by_regex_as_json_and_clear_errors() -> None:
    out = kode("tools", "search", "--builtin", "--regex", "^todo_", "--json")
    assert out.returncode == 0, out.stderr
    assert sorted(hit["name"] for hit in json.loads(out.stdout)) == ["todo_read", "todo_write"]
    nothing = kode("tools", "search", "--builtin", "zzyzx")
    assert nothing.returncode == 1 and nothing.stdout.strip() == "No tool matched 'zzyzx'."
    empty = kode("tools", "search", "--builtin")
    assert empty.returncode != 0 and "give words to search for" in empty.stderr
    bad = kode("tools", "search", "--builtin", "--regex", "(")
    assert bad.returncode != 0 and "not a valid regular expression" in bad.stderr
