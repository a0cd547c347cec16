"""What ``kode run`` shows of a result: its first line, cut between words, with an ellipsis
whenever something was left out. A real ``python -m kode`` subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

TOOLS = '''
from kode import define_tool


@define_tool
def essay() -> str:
    """Write a long line."""
    return " ".join(f"sentence{i} of the essay" for i in range(20))


@define_tool
def report() -> str:
    """Write several lines."""
    return "summary: all good\\ndetail one\\ndetail two"


@define_tool
def blob() -> str:
    """Write one long word."""
    return "x" * 150
'''


def test_result_lines_are_cut_between_words_with_an_ellipsis(tmp_path: Path) -> None:
    (tmp_path / "long_tools.py").write_text(TOOLS, encoding="utf-8")
    (tmp_path / "agent.json").write_text(
        json.dumps({"id": "t", "tools": ["essay", "report", "blob"]}), encoding="utf-8"
    )
    calls = [{"name": name, "input": {}} for name in ("essay", "report", "blob")]
    (tmp_path / "turns.json").write_text(json.dumps([calls, "Done."]), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC", "OPENAI"))}
    out = subprocess.run(
        [sys.executable, "-m", "kode", "run", "agent.json", "Write", "-m", "long_tools.py",
         "--model", "scripted:turns.json"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env,
        stdin=subprocess.DEVNULL, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    shown = {
        line.split()[1]: line.split(" s) ", 1)[1]
        for line in out.stdout.splitlines()
        if line.startswith("  ✓ ")
    }
    essay = " ".join(f"sentence{i} of the essay" for i in range(20))
    assert shown["essay"].endswith("…")
    kept = shown["essay"].removesuffix("…")
    assert essay.startswith(kept)
    assert essay[len(kept)] == " "  # whole words, then the ellipsis
    assert 50 < len(shown["essay"]) <= 100
    assert shown["report"] == "summary: all good …"  # more lines follow
    assert shown["blob"] == "x" * 99 + "…"  # one word: cut where it must be


def test_a_compaction_is_shown(tmp_path: Path) -> None:
    (tmp_path / "pages.py").write_text(
        "from kode import define_tool\n\n\n@define_tool\ndef page(n: int) -> str:\n"
        '    """Read a page."""\n    return f"page {n}: " + "lorem ipsum " * 50\n',
        encoding="utf-8",
    )
    policy = {
        "compact_at_tokens": 1000,
        "compact_keep_tokens": 300,
        "compact_model": "scripted:summary.json",
    }
    (tmp_path / "agent.json").write_text(
        json.dumps({"id": "t", "tools": ["page"], "context": policy}), encoding="utf-8"
    )
    turns = [[{"name": "page", "input": {"n": n}}] for n in range(1, 8)]
    (tmp_path / "turns.json").write_text(json.dumps([*turns, "Done."]), encoding="utf-8")
    (tmp_path / "summary.json").write_text(json.dumps(["Pages were read."]), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC", "OPENAI"))}
    out = subprocess.run(
        [sys.executable, "-m", "kode", "run", "agent.json", "Read", "-m", "pages.py",
         "--model", "scripted:turns.json"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env,
        stdin=subprocess.DEVNULL, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    shown = [line for line in out.stdout.splitlines() if line.startswith("⋯ compacted: ")]
    assert len(shown) == 1, out.stdout
    assert " messages summarised (" in shown[0] and " tokens)" in shown[0]
    assert "not compacted" not in out.stderr
