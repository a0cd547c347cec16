"""memory: facts saved per workspace or per user, listed, forgotten, and loaded into a prompt."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kode import Agent, AgentTemplate, ToolRegistry
from kode.builtin.memory import (
    MAX_FACT_CHARS,
    MAX_MEMORY_BYTES,
    memory,
    memory_prompt,
    user_memory_path,
    with_memory,
)
from kode.models import ScriptedModel, tool_use
from kode.tools.context import ToolContext
from kode.tools.errors import ToolErrorType
from kode.tools.results import ToolResult
from kode.tools.workspace import FilePool, Workspace

pytestmark = pytest.mark.anyio


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user's kode directory, in the test's tmp dir (never the real one)."""
    where = tmp_path / "home" / ".kode"
    monkeypatch.setenv("KODE_HOME", str(where))
    return where


@pytest.fixture
def ws(tmp_path: Path, home: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    return project


@pytest.fixture
def ctx(ws: Path) -> ToolContext:
    return ToolContext(workspace=Workspace(root=ws), files=FilePool())


async def mem(ctx: ToolContext, **args: Any) -> ToolResult:
    return await memory.run(args, ctx)


async def test_save_list_and_forget_in_the_workspace(ctx: ToolContext, ws: Path) -> None:
    saved = await mem(ctx, action="save", fact="Tests run with `make check`.")
    assert saved.text == (
        "Remembered in the workspace memory (.kode/memory.md): Tests run with `make check`."
    )
    await mem(ctx, fact="The user prefers\n  tabs over spaces.")  # save is the default action
    again = await mem(ctx, fact="- Tests run with `make check`.")
    assert again.text.startswith("Already remembered") and again.details is not None
    assert again.details["saved"] is False
    text = (ws / ".kode" / "memory.md").read_text()
    assert text.startswith("# kode memory\n")
    assert text.endswith("\n- Tests run with `make check`.\n- The user prefers tabs over spaces.\n")
    listed = await mem(ctx, action="list", scope="workspace")
    assert listed.text.splitlines() == [
        "Workspace memory (.kode/memory.md):",
        "- Tests run with `make check`.",
        "- The user prefers tabs over spaces.",
    ]
    forgot = await mem(ctx, action="forget", fact="TABS")
    assert forgot.text == (
        "Forgot from the workspace memory (.kode/memory.md): The user prefers tabs over spaces."
    )
    assert "tabs" not in (ws / ".kode" / "memory.md").read_text()


async def test_user_scope_and_hand_edits_are_kept(ctx: ToolContext, home: Path) -> None:
    await mem(ctx, fact="Answer in British English.", scope="user")
    path = home / "memory.md"
    assert user_memory_path() == path.resolve()
    # A person edits the file: a note and a fact of their own stay through later changes.
    path.write_text(path.read_text() + "\nA note, not a fact.\n- Written by hand.\n")
    await mem(ctx, fact="Use pnpm, not npm.", scope="user")
    await mem(ctx, action="forget", fact="British", scope="user")
    assert path.read_text().endswith(
        "\nA note, not a fact.\n- Written by hand.\n- Use pnpm, not npm.\n"
    )
    both = await mem(ctx, action="list")
    assert both.text.splitlines() == [
        "Workspace memory (.kode/memory.md): no facts.",
        f"User memory ({path.resolve()}):",
        "- Written by hand.",
        "- Use pnpm, not npm.",
    ]


async def test_refusals_say_what_to_do(ctx: ToolContext, ws: Path) -> None:
    empty = await mem(ctx, fact="   ")
    assert empty.error_type is ToolErrorType.INVALID_TOOL_PARAMS and "empty" in empty.text
    long = await mem(ctx, fact="x" * (MAX_FACT_CHARS + 1))
    assert long.error_type is ToolErrorType.INVALID_TOOL_PARAMS
    assert f"a fact is at most {MAX_FACT_CHARS:,}" in long.text
    await mem(ctx, fact="Deploy with fly deploy.")
    await mem(ctx, fact="Deploy previews with fly deploy --app preview.", scope="user")
    ambiguous = await mem(ctx, action="forget", fact="deploy")
    assert ambiguous.error_type is ToolErrorType.INVALID_TOOL_PARAMS
    assert "2 facts contain 'deploy'" in ambiguous.text
    exact = await mem(ctx, action="forget", fact="Deploy with fly deploy.")
    assert not exact.is_error, exact.text  # the whole text picks one of them
    missing = await mem(ctx, action="forget", fact="nothing like it")
    assert "No remembered fact contains" in missing.text
    # A full file takes no more.
    (ws / ".kode" / "memory.md").write_text("- x\n" * (MAX_MEMORY_BYTES // 4))
    full = await mem(ctx, fact="one more")
    assert full.is_error and "is full" in full.text and 'action="forget"' in full.text


async def test_a_kode_directory_leading_outside_the_workspace_is_refused(
    ctx: ToolContext, ws: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (ws / ".kode").symlink_to(outside)
    result = await mem(ctx, fact="escape")
    assert result.error_type is ToolErrorType.PATH_NOT_IN_WORKSPACE
    assert list(outside.iterdir()) == []
    assert memory_prompt(ws, user=False) == ""


async def test_listing_needs_no_approval_saving_is_decided_by_kind() -> None:
    approval = memory.requires_approval
    assert callable(approval)
    assert approval({"action": "list"}) is False
    assert approval({"action": "save", "fact": "x"}) is None
    assert approval({"action": "forget", "fact": "x"}) is None
    assert memory.kind.is_mutating


async def test_a_template_loads_the_facts_into_its_system_prompt(
    ctx: ToolContext, ws: Path
) -> None:
    template = AgentTemplate(id="coder", system_prompt="You write code.", tools=["memory"])
    assert with_memory(template, ws) is template  # nothing remembered: unchanged
    await mem(ctx, fact="The project uses Python 3.11.")
    await mem(ctx, fact="Call the user Sam.", scope="user")
    assert memory_prompt(ws) == (
        "## Memory\n\n"
        "Facts saved in earlier sessions (the memory tool lists, saves and forgets them):\n\n"
        "This workspace:\n- The project uses Python 3.11.\n\n"
        "The user, in every project:\n- Call the user Sam."
    )
    loaded = with_memory(template, ws)
    assert loaded.system_prompt == "You write code.\n\n" + memory_prompt(ws)
    assert template.system_prompt == "You write code."
    # An agent made from it sends the facts; a fact it saves is there for the next agent.
    reg = ToolRegistry("test")
    reg.register(memory, source="core")
    model = ScriptedModel([[tool_use("memory", {"fact": "Tests live in tests/."})], "Saved."])
    agent = Agent.create(loaded, model=model, registry=reg, workspace=ws)
    await agent.send("Remember where the tests are.")
    assert "- The project uses Python 3.11." in model.requests[0].system
    assert "- Tests live in tests/." in with_memory(template, ws, user=False).system_prompt
