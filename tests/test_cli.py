"""The ``kode`` command, run as a real subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
QUICKSTART = str(ROOT / "examples" / "quickstart.py")


def kode(
    *args: str, cwd: Path | None = None, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kode.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        input=stdin,
        env={k: v for k, v in os.environ.items() if k != "COLUMNS"},  # the width: 80
    )


def test_help_lists_the_commands() -> None:
    out = kode("--help")
    assert out.returncode == 0
    for command in ("tools", "run"):
        assert command in out.stdout
    tools_help = kode("tools", "--help").stdout
    for command in ("list", "show", "call", "check"):
        assert command in tools_help


def test_tools_list_table_and_json() -> None:
    out = kode("tools", "list", QUICKSTART)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines == [
        "convert_temperature  user       other    -  Convert a temperature between Celsi…",
        "search_notes         user       search   -  Search the notebook for notes that…",
    ]
    data = json.loads(kode("tools", "list", QUICKSTART, "--json").stdout)
    assert [d["name"] for d in data] == ["convert_temperature", "search_notes"]
    assert data[1]["kind"] == "search" and data[1]["source"] == "user"


def test_tools_list_builtin() -> None:
    data = json.loads(kode("tools", "list", "--builtin", "--json").stdout)
    names = {d["name"]: d for d in data}
    assert names["todo_write"]["source"] == "core"
    assert "group:think" in names["todo_write"]["groups"]


@pytest.mark.parametrize("dialect", ["anthropic", "openai", "gemini"])
def test_tools_show(dialect: str) -> None:
    out = kode("tools", "show", "search_notes", "--dialect", dialect, "-m", QUICKSTART)
    assert out.returncode == 0, out.stderr
    declaration = json.loads(out.stdout)
    if dialect == "openai":
        assert declaration["function"]["name"] == "search_notes"
        assert declaration["function"]["strict"] is True
    elif dialect == "anthropic":
        assert declaration["input_schema"]["required"] == ["query"]
    else:
        assert "additionalProperties" not in json.dumps(declaration)


def test_tools_show_anthropic_strict() -> None:
    out = kode("tools", "show", "search_notes", "--strict", "-m", QUICKSTART)
    assert out.returncode == 0, out.stderr
    declaration = json.loads(out.stdout)
    assert declaration["strict"] is True
    schema = declaration["input_schema"]
    assert schema["additionalProperties"] is False
    assert schema["required"] == ["query"]  # optional stays optional for Anthropic
    limit = schema["properties"]["limit"]
    assert "minimum" not in limit and "(minimum: 1) (maximum: 20)" in limit["description"]


def test_tools_call_ok_error_and_stdin() -> None:
    ok = kode(
        "tools", "call", "search_notes", '{"query": "coffee", "limit": "1"}', "-m", QUICKSTART
    )
    assert ok.returncode == 0, ok.stderr
    block = json.loads(ok.stdout)
    assert block["is_error"] is False and block["tool_use_id"] == "toolu_cli"
    assert json.loads(block["content"][0]["text"])[0]["title"] == "Groceries"
    bad = kode("tools", "call", "search_notes", '{"limit": 99}', "-m", QUICKSTART)
    assert bad.returncode == 1
    assert "'query' is required but missing" in json.loads(bad.stdout)["content"][0]["text"]
    piped = kode("tools", "call", "search_notes", "-", "-m", QUICKSTART, stdin='{"query": "eggs"}')
    assert piped.returncode == 0 and "Groceries" in piped.stdout


def test_unknown_tool_and_broken_module_are_clear_errors(tmp_path: Path) -> None:
    missing = kode("tools", "show", "search_note", "-m", QUICKSTART)
    assert missing.returncode == 2
    assert "No tool named 'search_note' is registered. Did you mean 'search_notes'?" in (
        missing.stderr
    )
    broken = tmp_path / "broken_tools.py"
    broken.write_text("import not_a_module_anywhere\n")
    out = kode("tools", "list", str(broken))
    assert out.returncode == 2
    assert (
        "could not import module" in out.stderr
        and "ModuleNotFoundError: No module named 'not_a_module_anywhere'" in out.stderr
    )
    assert kode("tools", "list", "no_such_module_xyz").returncode == 2


def test_tools_check_flags_problems_and_passes_clean_modules(tmp_path: Path) -> None:
    assert kode("tools", "check", QUICKSTART).returncode == 0
    sloppy = tmp_path / "sloppy_tools.py"
    sloppy.write_text(
        textwrap.dedent(
            """
            from kode import define_tool

            @define_tool
            def undocumented(x: int, options: dict) -> int:
                return x
            """
        )
    )
    out = kode("tools", "check", str(sloppy))
    assert out.returncode == 1
    assert "undocumented: has no description" in out.stdout
    assert "undocumented: parameter 'x' has no description" in out.stdout
    assert "OpenAI strict mode is off" in out.stdout


def test_run_an_agent_from_a_template_file_offline(tmp_path: Path) -> None:
    template = tmp_path / "notes.toml"
    template.write_text(
        textwrap.dedent(
            """
            [template]
            id = "notes"
            system_prompt = "You search notes."
            tools = ["search_notes"]
            """
        )
    )
    turns = tmp_path / "turns.json"
    turns.write_text(
        json.dumps(
            [
                [{"name": "search_notes", "input": {"query": "coffee"}}],
                "Two notes mention coffee.",
            ]
        )
    )
    out = kode(
        "run",
        str(template),
        "Which notes mention coffee?",
        "--model",
        f"scripted:{turns}",
        "-m",
        QUICKSTART,
    )
    assert out.returncode == 0, out.stderr
    assert '→ search_notes {"query": "coffee", "limit": 5, "tags": null}' in out.stdout
    assert "✓ search_notes" in out.stdout
    assert out.stdout.rstrip().endswith("Two notes mention coffee.")


def test_run_without_a_model_says_how_to_get_one(tmp_path: Path) -> None:
    template = tmp_path / "t.json"
    template.write_text(json.dumps({"id": "t", "tools": []}))
    out = subprocess.run(
        [sys.executable, "-m", "kode.cli", "run", str(template), "hi"],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin"},
        timeout=60,
    )
    assert out.returncode == 2
    assert "no model: set ANTHROPIC_API_KEY" in out.stderr
