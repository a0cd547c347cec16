"""``kode tools search``: find tools by words or a regex from the command line."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

from kode.registries.search_dense import DENSE_ENV


def kode(*args: str, words_only: bool = False) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", DENSE_ENV)}
    if words_only:
        env[DENSE_ENV] = "0"
    return subprocess.run(
        [sys.executable, "-m", "kode.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def test_search_by_words_says_why_each_tool_matched() -> None:
    out = kode("tools", "search", "--builtin", "stop", "a", "background", "shell")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    # the name column is as wide as the longest name listed
    assert re.match(r"bash_kill +Stop a background shell", lines[0]), lines[0]
    assert lines[1].strip().startswith("matched ") and "kill (for stop) in name" in lines[1]


def test_search_by_meaning_finds_what_shares_no_word_and_says_so() -> None:
    query = ("halt", "the", "job", "running", "behind", "the", "scenes", "--json")
    out = kode("tools", "search", "--builtin", *query)
    assert out.returncode == 0, out.stderr
    hits = json.loads(out.stdout)
    assert "bash_kill" in [hit["name"] for hit in hits]
    assert all(re.search(r"meaning -?[01]\.\d\d$", hit["why"]) for hit in hits)
    words = kode("tools", "search", "--builtin", *query, words_only=True)
    assert words.returncode == 0, words.stderr
    hits = json.loads(words.stdout)
    assert "bash_kill" not in [hit["name"] for hit in hits]  # it shares "running" alone
    assert all("meaning" not in hit["why"] for hit in hits)


def test_search_by_regex_as_json_and_clear_errors() -> None:
    out = kode("tools", "search", "--builtin", "--regex", "^todo_", "--json")
    assert out.returncode == 0, out.stderr
    assert sorted(hit["name"] for hit in json.loads(out.stdout)) == ["todo_read", "todo_write"]
    nothing = kode("tools", "search", "--builtin", "zzyzx", words_only=True)
    assert nothing.returncode == 1 and nothing.stdout.strip() == "No tool matched 'zzyzx'."
    empty = kode("tools", "search", "--builtin")
    assert empty.returncode != 0 and "give words to search for" in empty.stderr
    bad = kode("tools", "search", "--builtin", "--regex", "(")
    assert bad.returncode != 0 and "not a valid regular expression" in bad.stderr


def test_list_says_which_tools_are_deferred(tmp_path: Path) -> None:
    module = tmp_path / "many_tools.py"
    module.write_text(
        textwrap.dedent(
            '''
            from kode import define_tool, registry

            @define_tool
            def word_count(text: str) -> int:
                """Count the words of a text."""
                return len(text.split())

            @define_tool(defer_loading=True)
            def create_issue(repo: str, title: str) -> str:
                """Create an issue in a GitHub repository."""
                return "created"

            @define_tool
            def mail_send(to: str) -> str:
                """Send an email."""
                return "sent"

            registry.defer(["mail_*"])
            '''
        )
    )
    out = kode("tools", "list", str(module), "--json")
    assert out.returncode == 0, out.stderr
    rows = {row["name"]: row["defer_loading"] for row in json.loads(out.stdout)}
    assert rows == {"create_issue": True, "mail_send": True, "word_count": False}
