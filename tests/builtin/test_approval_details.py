"""What the built-ins tell a person: the descriptions, paths and diffs of calls waiting for
approval (fs_write, fs_edit, fs_multi_edit, bash_run), and the displays of their results."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kode.agent import Agent, AgentTemplate, ApprovalDecision, ApprovalRequest, ToolEnd
from kode.builtin.fs import fs_edit, fs_multi_edit, fs_read, fs_write
from kode.builtin.runtime import bash_run
from kode.builtin.todo import todo_write
from kode.models import ScriptedModel, tool_use
from kode.registries import ToolRegistry
from kode.tools import CallDetails, Display
from kode.tools.context import ToolContext
from kode.tools.workspace import FilePool, Workspace

pytestmark = pytest.mark.anyio

APP = "import os\n\nprint('one')\nprint('two')\n"


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text(APP)
    return ToolContext(workspace=Workspace(root=tmp_path), files=FilePool())


def details(tool: Any, ctx: ToolContext, **args: Any) -> CallDetails:
    assert tool.describer is not None
    return tool.describer(args, ctx)


def test_fs_write_says_how_many_lines_where_and_diffs_the_current_file(ctx: ToolContext) -> None:
    content = "".join(f"line {i}\n" for i in range(120))
    got = details(fs_write, ctx, path="src/app.py", content=content)
    assert got.description == "Write 120 lines to src/app.py"
    assert got.locations == ("src/app.py",)
    diff = got.diff.splitlines()
    assert diff[:2] == ["--- a/src/app.py", "+++ b/src/app.py"]
    assert "-import os" in diff and "+line 119" in diff
    assert got.pattern is None


def test_fs_write_of_a_new_file_diffs_against_nothing(ctx: ToolContext) -> None:
    got = details(fs_write, ctx, path="notes.txt", content="a\nb")
    assert got.description == "Write 2 lines to notes.txt (a new file)"
    assert got.diff.splitlines() == [
        "--- /dev/null",
        "+++ b/notes.txt",
        "@@ -0,0 +1,2 @@",
        "+a",
        "+b",
    ]


def test_fs_edit_and_multi_edit_show_the_diff_they_would_make(ctx: ToolContext) -> None:
    got = details(fs_edit, ctx, path="src/app.py", old_string="'one'", new_string="'uno'")
    assert got.description == "Edit src/app.py (1 replacement)"
    assert "-print('one')" in got.diff.splitlines() and "+print('uno')" in got.diff.splitlines()
    multi = details(
        fs_multi_edit,
        ctx,
        path="src/app.py",
        edits=[
            {"old_string": "'one'", "new_string": "'uno'"},
            {"old_string": "'two'", "new_string": "'dos'"},
        ],
    )
    assert multi.description == "Edit src/app.py (2 replacements)"
    assert "+print('dos')" in multi.diff.splitlines()
    failing = details(fs_edit, ctx, path="src/app.py", old_string="nowhere", new_string="x")
    assert failing.description.startswith("Edit src/app.py (1 edit; it will fail: ")
    assert failing.diff == ""
    outside = details(fs_write, ctx, path="../escape.txt", content="x")
    assert outside.description == "Write 1 line to ../escape.txt" and outside.diff == ""


def test_bash_run_shows_the_command_and_where_it_runs() -> None:
    got = bash_run.describer({"command": " git status -s ", "cwd": "src"}, None)  # type: ignore[misc]
    assert got == CallDetails(
        description="Run `git status -s` in src", locations=("src",), pattern="git status -s"
    )


async def test_results_carry_displays_for_people(ctx: ToolContext, tmp_path: Path) -> None:
    await fs_read.run({"path": "src/app.py"}, ctx)
    written = await fs_write.run({"path": "src/app.py", "content": "import os\n"}, ctx)
    assert written.display is not None and written.display.kind == "diff"
    assert "-print('one')" in written.display.text.splitlines()
    assert "print('one')" not in written.text  # the model gets the summary only
    await fs_read.run({"path": "src/app.py"}, ctx)
    edited = await fs_edit.run(
        {"path": "src/app.py", "old_string": "import os", "new_string": "import sys"}, ctx
    )
    assert edited.display is not None
    assert edited.display.text.splitlines()[-2:] == ["-import os", "+import sys"]
    todos = await todo_write.run({"todos": [{"id": "1", "title": "Ship it"}]}, ctx)
    assert todos.display == Display(
        kind="todos",
        text="[ ] 1: Ship it\n(0 of 1 completed)",
        data=[{"id": "1", "title": "Ship it", "status": "pending", "notes": ""}],
    )


async def test_an_agent_asks_with_the_diff_and_shows_the_terminal_output(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text("x = 1\n")
    reg = ToolRegistry("test")
    for made in (fs_read, fs_write, bash_run):
        reg.register(made, source="core")
    asked: list[ApprovalRequest] = []

    async def approver(request: ApprovalRequest) -> ApprovalDecision:
        asked.append(request)
        return ApprovalDecision(decision="allow")

    agent = Agent.create(
        AgentTemplate(
            id="t", tools=["fs_read", "fs_write", "bash_run"], permission={"mode": "approval"}
        ),
        model=ScriptedModel(
            [
                [tool_use("fs_read", {"path": "app.py"})],
                [tool_use("fs_write", {"path": "app.py", "content": "x = 2\n"})],
                [tool_use("bash_run", {"command": "cat app.py"})],
                "done",
            ]
        ),
        registry=reg,
        approver=approver,
        workspace=tmp_path,
    )
    ends: list[ToolEnd] = []
    async with agent:
        await agent.send(
            "go", on_event=lambda e: ends.append(e) if isinstance(e, ToolEnd) else None
        )
    # bash_run's own check lets `cat` run without asking
    assert [r.description for r in asked] == ["Write 1 line to app.py"]
    assert asked[0].diff.splitlines()[-2:] == ["-x = 1", "+x = 2"]
    assert asked[0].locations == ("app.py",) and asked[0].rule == "mode approval"
    shown = [e.display for e in ends]
    assert shown[2] == Display(kind="terminal", text="$ cat app.py\nx = 2\n\n[exit code 0]")
