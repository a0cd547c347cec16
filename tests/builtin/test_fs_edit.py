"""fs_edit and fs_multi_edit: exact replacements, clear refusals, all or none, diffs."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

import anyio
import pytest

from kode.builtin.fs import fs_edit, fs_multi_edit, fs_read
from kode.tools.context import ToolContext
from kode.tools.core import Tool
from kode.tools.errors import ToolErrorType
from kode.tools.results import ToolResult
from kode.tools.workspace import FilePool, Workspace

pytestmark = pytest.mark.anyio

SOURCE = """def greet(name):
    print("hello", name)


def part(name):
    print("bye", name)
"""


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return tmp_path


@pytest.fixture
def ctx(ws: Path) -> ToolContext:
    return ToolContext(workspace=Workspace(root=ws), files=FilePool())


async def call(tool: Tool[..., Any], ctx: ToolContext, **args: Any) -> ToolResult:
    return await tool.run(args, ctx)


async def seen(ctx: ToolContext, ws: Path, name: str, content: str | bytes) -> Path:
    """A file with `content` that the agent has read."""
    f = ws / name
    if isinstance(content, bytes):
        f.write_bytes(content)
    else:
        f.write_text(content)
    await call(fs_read, ctx, path=name)
    return f


def refused(result: ToolResult, kind: ToolErrorType = ToolErrorType.TOOL_ERROR) -> str:
    assert result.is_error, result.text
    assert result.error_type is kind, (result.error_type, result.text)
    assert "The file was not changed." in result.text
    return result.text


async def test_edit_replaces_and_returns_a_diff(ctx: ToolContext, ws: Path) -> None:
    f = await seen(ctx, ws, "app.py", SOURCE)
    result = await call(
        fs_edit, ctx, path="app.py", old_string='"hello", name', new_string='"hi", name'
    )
    assert not result.is_error, result.text
    assert f.read_text() == SOURCE.replace('"hello"', '"hi"')
    lines = result.text.splitlines()
    assert lines[0] == "Edited 'app.py' (1 replacement)."
    assert lines[1:3] == ["--- a/app.py", "+++ b/app.py"]
    assert '-    print("hello", name)' in lines and '+    print("hi", name)' in lines
    assert len(lines) < 12  # two lines of context, not the whole file
    assert result.details == {"path": "app.py", "replacements": 1, "edits": 1}


async def test_edit_not_found_changes_nothing(ctx: ToolContext, ws: Path) -> None:
    f = await seen(ctx, ws, "app.py", SOURCE)
    text = refused(await call(fs_edit, ctx, path="app.py", old_string="nope", new_string="x"))
    assert "old_string was not found" in text and "exactly" in text
    assert f.read_text() == SOURCE


async def test_edit_not_found_points_at_a_whitespace_near_miss(ctx: ToolContext, ws: Path) -> None:
    await seen(ctx, ws, "app.py", SOURCE)
    text = refused(
        await call(
            fs_edit,
            ctx,
            path="app.py",
            old_string='def part(name):\n  print("bye", name)',
            new_string="x",
        )
    )
    assert "different indentation or spacing are at line 5" in text


async def test_edit_not_found_spots_line_number_prefixes(ctx: ToolContext, ws: Path) -> None:
    await seen(ctx, ws, "app.py", SOURCE)
    old = '     1\tdef greet(name):\n     2\t    print("hello", name)'
    text = refused(await call(fs_edit, ctx, path="app.py", old_string=old, new_string="x"))
    assert "line-number prefixes" in text


async def test_edit_twice_is_refused_unless_replace_all(ctx: ToolContext, ws: Path) -> None:
    f = await seen(ctx, ws, "app.py", SOURCE)
    text = refused(await call(fs_edit, ctx, path="app.py", old_string="name)", new_string="who)"))
    assert "occurs 4 times (at lines 1, 2, 5, 6)" in text and "replace_all" in text
    assert f.read_text() == SOURCE
    result = await call(
        fs_edit, ctx, path="app.py", old_string="name", new_string="who", replace_all=True
    )
    assert result.text.startswith("Edited 'app.py' (4 replacements).")
    assert f.read_text() == SOURCE.replace("name", "who")


async def test_edit_refuses_no_op_and_empty(ctx: ToolContext, ws: Path) -> None:
    f = await seen(ctx, ws, "app.py", SOURCE)
    same = await call(fs_edit, ctx, path="app.py", old_string="greet", new_string="greet")
    assert "the same" in refused(same, ToolErrorType.INVALID_TOOL_PARAMS)
    empty = await call(fs_edit, ctx, path="app.py", old_string="", new_string="x")
    assert "empty" in refused(empty, ToolErrorType.INVALID_TOOL_PARAMS)
    assert f.read_text() == SOURCE


async def test_edit_missing_file(ctx: ToolContext) -> None:
    result = await call(fs_edit, ctx, path="nope.py", old_string="a", new_string="b")
    assert "does not exist" in refused(result, ToolErrorType.FILE_NOT_FOUND)


async def test_edit_refuses_non_utf8_and_binary(ctx: ToolContext, ws: Path) -> None:
    latin = await seen(ctx, ws, "latin.txt", "café au lait\n".encode("latin-1"))
    text = refused(await call(fs_edit, ctx, path="latin.txt", old_string="au", new_string="o"))
    assert "not valid UTF-8" in text
    assert latin.read_bytes() == "café au lait\n".encode("latin-1")
    blob = ws / "blob.bin"
    blob.write_bytes(b"abc\x00def")
    ctx.files.record_read(blob)  # type: ignore[union-attr]  # fs_read refuses binary files
    text = refused(await call(fs_edit, ctx, path="blob.bin", old_string="abc", new_string="x"))
    assert "binary" in text
    assert blob.read_bytes() == b"abc\x00def"


async def test_edit_keeps_crlf_line_ends(ctx: ToolContext, ws: Path) -> None:
    f = await seen(ctx, ws, "win.txt", b"one\r\ntwo\r\nthree\r\n")
    result = await call(fs_edit, ctx, path="win.txt", old_string="one\ntwo", new_string="1\n2")
    assert not result.is_error, result.text
    assert f.read_bytes() == b"1\r\n2\r\nthree\r\n"


async def test_edit_keeps_the_mode(ctx: ToolContext, ws: Path) -> None:
    f = await seen(ctx, ws, "run.sh", "echo hi\n")
    f.chmod(0o755)
    await call(fs_edit, ctx, path="run.sh", old_string="hi", new_string="ho")
    assert f.read_text() == "echo ho\n"
    assert stat.S_IMODE(f.stat().st_mode) == 0o755


async def test_parallel_edits_of_one_file_both_land(ctx: ToolContext, ws: Path) -> None:
    f = await seen(ctx, ws, "many.txt", "".join(f"item {i}\n" for i in range(20)))
    results: list[ToolResult] = []

    async def edit(i: int) -> None:
        results.append(
            await call(
                fs_edit, ctx, path="many.txt", old_string=f"item {i}\n", new_string=f"done {i}\n"
            )
        )

    async with anyio.create_task_group() as tg:
        for i in range(20):
            tg.start_soon(edit, i)
    assert [r.text for r in results if r.is_error] == []
    assert f.read_text() == "".join(f"done {i}\n" for i in range(20))


async def test_multi_edit_applies_in_order(ctx: ToolContext, ws: Path) -> None:
    f = await seen(ctx, ws, "app.py", SOURCE)
    result = await call(
        fs_multi_edit,
        ctx,
        path="app.py",
        edits=[
            {"old_string": "def greet(name):", "new_string": "def welcome(name):"},
            {"old_string": "welcome(name)", "new_string": "welcome(person)"},  # sees edit 1
            {"old_string": "name)", "new_string": "person)", "replace_all": True},
        ],
    )
    assert not result.is_error, result.text
    assert result.text.startswith("Edited 'app.py' (3 edits, 5 replacements).")
    assert f.read_text() == (
        'def welcome(person):\n    print("hello", person)\n\n\n'
        'def part(person):\n    print("bye", person)\n'
    )


async def test_multi_edit_is_all_or_none(ctx: ToolContext, ws: Path) -> None:
    f = await seen(ctx, ws, "app.py", SOURCE)
    result = await call(
        fs_multi_edit,
        ctx,
        path="app.py",
        edits=[
            {"old_string": "greet", "new_string": "welcome"},
            {"old_string": "print", "new_string": "log"},
            {"old_string": "missing", "new_string": "x"},
        ],
    )
    text = refused(result)
    assert text.startswith("Edit 2 of 3: old_string occurs 2 times")
    assert f.read_text() == SOURCE
    result = await call(
        fs_multi_edit,
        ctx,
        path="app.py",
        edits=[
            {"old_string": "greet", "new_string": "welcome"},
            {"old_string": "greet", "new_string": "again"},  # gone after edit 1
        ],
    )
    assert refused(result).startswith("Edit 2 of 2: old_string was not found")
    assert f.read_text() == SOURCE


async def test_multi_edit_needs_edits(ctx: ToolContext, ws: Path) -> None:
    await seen(ctx, ws, "app.py", SOURCE)
    result = await call(fs_multi_edit, ctx, path="app.py", edits=[])
    assert result.is_error and result.error_type is ToolErrorType.INVALID_TOOL_PARAMS
    result = await call(fs_multi_edit, ctx, path="app.py", edits=[{"old": "a", "new": "b"}])
    assert result.is_error and result.error_type is ToolErrorType.INVALID_TOOL_PARAMS
