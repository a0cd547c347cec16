"""The README's example and `examples/` run and print what they promise."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from kode import ToolRegistry

ROOT = Path(__file__).resolve().parent.parent


def test_quickstart_runs_and_shows_schemas_and_results() -> None:
    out = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "quickstart.py")],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    assert "Registered tools: ['convert_temperature', 'search_notes']" in out
    for dialect in ("anthropic", "openai", "gemini"):
        assert f"=== search_notes as {dialect} sees it" in out
    assert '"strict": true' in out
    assert out.count('"type": "tool_result"') == 5
    assert out.count('"is_error": true') == 2
    assert "'limit' should be less than or equal to 20, got 99" in out
    assert "'unit' should be 'C' or 'F', got \\\"K\\\"" in out
    assert "21.5 °C is 70.7 °F" in out
    # The session kept in SQLite, continued by a second process with its history.
    saved = re.search(r"=== process (\d+) saved session (\S+): You wrote about coffee twice.", out)
    resumed = re.search(r"=== process (\d+) resumed it with 4 messages: Yes: one note", out)
    assert saved and resumed and saved[1] != resumed[1], out


def test_readme_example_runs(isolated_registry: ToolRegistry) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", readme, flags=re.S)
    assert blocks, "the README has a Python example"
    namespace: dict[str, object] = {"__name__": "readme_example"}
    for block in blocks:
        exec(compile(block, "README.md", "exec"), namespace)
    assert "search_notes" in isolated_registry


def test_agent_demo_runs_offline_and_prints_events() -> None:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL")
    }
    out = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "agent_demo.py")],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        env=env,
    ).stdout
    assert out.startswith("Model: scripted; tools: fs_write, read_file, search_files")
    assert "… searched README.md (100%)" in out
    assert "✓ search_files" in out and '["redis.conf","app.toml"]' in out
    assert "✓ read_file" in out and "✗ read_file" in out
    assert "x does not exist; use search_files first." in out
    assert "? approval for fs_write" in out and "✓ fs_write" in out
    assert out.rstrip().endswith("Done in 4 turns.")


def test_deps_and_progress_example() -> None:
    out = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "deps_and_progress.py")],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout.splitlines()
    assert out[:3] == [
        "  … customer_orders: scanned order 1 (33%)",
        "  … customer_orders: scanned order 2 (67%)",
        "  … customer_orders: scanned order 3 (100%)",
    ]
    assert "  * customer_orders says rows_scanned: {'rows': 3, 'matches': 2}" in out
    assert "  ✓ mark_shipped: Order 3 is now shipped." in out
    assert out[-1] == "Order 3 is now: shipped"
