"""``kode run`` asks the user at the terminal when a tool (or an MCP server) asks a question."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

TOOLS = '''
from kode import ToolContext, define_tool


@define_tool(kind="read")
async def book_table(ctx: ToolContext) -> str:
    """Book a table, asking the user for the details."""
    reply = await ctx.elicit("Booking details?", {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "your name"},
            "guests": {"type": "integer", "description": "how many"},
            "terrace": {"type": "boolean", "default": False},
        },
        "required": ["name", "guests"],
    })
    return f"{reply.action}: {reply.content}"


@define_tool(kind="read")
async def sign_in(ctx: ToolContext) -> str:
    """Ask the user to sign in."""
    reply = await ctx.elicit("Sign in first.", url="https://example.com/login")
    return f"sign-in {reply.action}"
'''


def run(tmp_path: Path, tool: str, stdin: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "booking_tools.py").write_text(textwrap.dedent(TOOLS).lstrip(), encoding="utf-8")
    (tmp_path / "agent.json").write_text(json.dumps({"id": "host", "tools": [tool]}))
    (tmp_path / "turns.json").write_text(json.dumps([[{"name": tool, "input": {}}], "Done."]))
    env = {k: v for k, v in os.environ.items() if k not in ("KODE_MODEL", "OPENAI_BASE_URL")}
    return subprocess.run(
        [sys.executable, "-m", "kode", "run", "agent.json", "Go.", "--model", "scripted:turns.json",
         "-m", "booking_tools.py"],
        input=stdin, capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env,
        check=False,
    )  # fmt: skip


def test_a_form_is_asked_field_by_field(tmp_path: Path) -> None:
    out = run(tmp_path, "book_table", "Ada\nmany\n4\n\n")
    assert out.returncode == 0, out.stderr
    assert "? tool book_table asks: Booking details?" in out.stdout
    assert "  name (your name): " in out.stdout and "  terrace (boolean) [False]: " in out.stdout
    assert "  (a whole number)\n" in out.stdout  # 'many' was not, and was asked again
    assert "accept: {'name': 'Ada', 'guests': 4, 'terrace': False}" in out.stdout


def test_a_blank_required_field_cancels_and_a_page_is_confirmed(tmp_path: Path) -> None:
    out = run(tmp_path, "book_table", "\n")
    assert "(no answer: the form is cancelled)" in out.stdout and "cancel: None" in out.stdout
    page = run(tmp_path, "sign_in", "y\n")
    assert "Open https://example.com/login and come back here. Done? [y/N] " in page.stdout
    assert "sign-in accept" in page.stdout
