"""fs_read_many: paths and globs in one call, caps, binary files named, ignore files obeyed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kode.builtin.fs import fs_edit, fs_read_many
from kode.builtin.fs._ignore import IgnoreRules
from kode.builtin.fs.read_many import MAX_MANY_FILE_CHARS, MAX_MANY_TOTAL_CHARS
from kode.tools.context import ToolContext
from kode.tools.errors import ToolErrorType
from kode.tools.results import ToolResult
from kode.tools.workspace import FilePool, Workspace

pytestmark = pytest.mark.anyio


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return tmp_path


@pytest.fixture
def ctx(ws: Path) -> ToolContext:
    return ToolContext(workspace=Workspace(root=ws), files=FilePool())


def make(ws: Path, files: dict[str, str | bytes]) -> None:
    for name, content in files.items():
        f = ws / name
        f.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            f.write_bytes(content)
        else:
            f.write_text(content)


async def read_many(ctx: ToolContext, *paths: str, **args: Any) -> ToolResult:
    return await fs_read_many.run({"paths": list(paths), **args}, ctx)


async def test_paths_and_globs_in_one_call(ctx: ToolContext, ws: Path) -> None:
    make(
        ws,
        {
            "README.md": "# Title\n",
            "src/a.py": "a = 1\n",
            "src/pkg/b.py": "b = 2\n",
            "src/pkg/c.txt": "not python\n",
            "node_modules/x/y.py": "skipped\n",
        },
    )
    result = await read_many(ctx, "README.md", "src/**/*.py", "src/a.py")
    assert not result.is_error, result.text
    assert result.text == (
        "--- README.md ---\n# Title\n--- src/a.py ---\na = 1\n--- src/pkg/b.py ---\nb = 2"
    )
    assert result.details is not None
    assert [f["path"] for f in result.details["files"]] == ["README.md", "src/a.py", "src/pkg/b.py"]
    # What was read may be edited right away, as after fs_read.
    edited = await fs_edit.run(
        {"path": "src/pkg/b.py", "old_string": "b = 2", "new_string": "b = 3"}, ctx
    )
    assert not edited.is_error, edited.text


async def test_a_directory_is_read_below_it(ctx: ToolContext, ws: Path) -> None:
    make(ws, {"docs/a.md": "A\n", "docs/sub/b.md": "B\n", "other.md": "no\n"})
    result = await read_many(ctx, "docs")
    assert result.text == "--- docs/a.md ---\nA\n--- docs/sub/b.md ---\nB"


async def test_binary_files_and_images_are_skipped_and_named(ctx: ToolContext, ws: Path) -> None:
    make(
        ws,
        {
            "a.txt": "text\n",
            "blob.bin": b"\x00\x01\x02binary",
            "logo.png": b"\x89PNG\r\n\x1a\n" + b"\x00" * 20,
        },
    )
    result = await read_many(ctx, "*")
    assert not result.is_error, result.text
    assert result.text.splitlines() == [
        "--- a.txt ---",
        "text",
        "(Skipped: blob.bin (binary); logo.png (image (read it with fs_read)).)",
    ]
    assert result.details is not None
    assert result.details["skipped"] == [
        {"path": "blob.bin", "reason": "binary"},
        {"path": "logo.png", "reason": "image (read it with fs_read)"},
    ]


async def test_per_file_and_total_caps(ctx: ToolContext, ws: Path) -> None:
    line = "x" * 99 + "\n"  # 100 characters a line
    big = line * (MAX_MANY_FILE_CHARS // 100 + 50)
    make(ws, {f"big{i}.txt": big for i in range(7)})
    result = await read_many(ctx, "big*.txt")
    assert not result.is_error, result.text
    shown = MAX_MANY_FILE_CHARS // 100
    assert result.text.startswith(
        f"--- big0.txt (first {shown:,} lines shown; read on with fs_read offset={shown + 1}) ---\n"
    )
    assert result.details is not None
    files = result.details["files"]
    assert len(files) == MAX_MANY_TOTAL_CHARS // MAX_MANY_FILE_CHARS
    assert all(f["truncated"] for f in files)
    assert result.details["characters"] <= MAX_MANY_TOTAL_CHARS
    assert result.details["not_read"] == ["big5.txt", "big6.txt"]
    assert (
        "(Not read, the 250,000-character total was reached: big5.txt, big6.txt. Read them in "
        "another call.)"
    ) in result.text


async def test_ignore_files_are_respected(ctx: ToolContext, ws: Path) -> None:
    make(
        ws,
        {
            ".gitignore": "build/\n*.log\n!keep.log\n/top.txt\n",
            "src/.ignore": "generated_*.py\n",
            ".git/info/exclude": "secret.txt\n",
            "app.py": "app\n",
            "build/out.py": "built\n",
            "debug.log": "log\n",
            "keep.log": "kept\n",
            "top.txt": "top\n",
            "sub/top.txt": "not anchored here\n",
            "src/generated_a.py": "gen\n",
            "src/real.py": "real\n",
            "secret.txt": "s\n",
        },
    )
    result = await read_many(ctx, "**/*.py", "**/*.log", "**/*.txt")
    assert result.details is not None
    assert [f["path"] for f in result.details["files"]] == [
        "app.py",
        "src/real.py",
        "keep.log",
        "sub/top.txt",
    ]
    assert result.details["ignored"] == 5
    assert "(5 files left out by ignore files; set respect_ignore to false" in result.text
    everything = await read_many(ctx, "**/*.py", respect_ignore=False)
    assert everything.details is not None
    assert len(everything.details["files"]) == 4
    # A file named without a glob is read even when ignored.
    named = await read_many(ctx, "debug.log")
    assert named.text == "--- debug.log ---\nlog"


def test_gitignore_rules_as_git_reads_them(tmp_path: Path) -> None:
    (tmp_path / ".gitignore").write_text(
        "# comment\n\n**/cache/**\ndocs/*.html\na/**/z.txt\n\\!bang\n[ab]?.c\nlogs/\n"
    )
    (tmp_path / "deep").mkdir()
    (tmp_path / "deep" / ".gitignore").write_text("*.tmp\n!important.tmp\n")
    rules = IgnoreRules(tmp_path)
    ignored = [
        "x/cache/y.py",
        "docs/a.html",
        "a/z.txt",
        "a/b/c/z.txt",
        "!bang",
        "a1.c",
        "logs/today.txt",
        "deep/x.tmp",
        "deep/more/y.tmp",
    ]
    kept = [
        "docs/sub/a.html",
        "b/z.txt",
        "c1.c",
        "ab1.c",
        "logs",  # a file named logs: "logs/" matches directories only
        "deep/important.tmp",
        "x.tmp",  # the rule lives in deep/
    ]
    assert [p for p in ignored if not rules.ignored(p)] == []
    assert [p for p in kept if rules.ignored(p)] == []


async def test_exclude_and_what_cannot_be_read(
    ctx: ToolContext, ws: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    make(ws, {"a.py": "a\n", "test_a.py": "t\n"})
    outside = tmp_path_factory.mktemp("outside") / "x.txt"
    outside.write_text("secret\n")
    result = await read_many(
        ctx, "*.py", "missing.py", str(outside), "nothing/*.md", exclude=["test_*.py"]
    )
    assert not result.is_error, result.text
    lines = result.text.splitlines()
    assert lines[:2] == ["--- a.py ---", "a"]
    assert "(Skipped: missing.py (File 'missing.py' does not exist.)" in result.text
    assert "(1 file left out by exclude.)" in lines
    assert any("is outside the workspace" in line for line in lines)
    assert "(No files match 'nothing/*.md'.)" in lines
    assert "secret" not in result.text


async def test_nothing_read_is_an_error(ctx: ToolContext) -> None:
    result = await read_many(ctx, "missing.py", "*.nope")
    assert result.is_error
    assert result.error_type is ToolErrorType.FILE_NOT_FOUND
    assert result.text.startswith("No file was read.")
    bad = await read_many(ctx, "../*.py")
    assert bad.error_type is ToolErrorType.INVALID_TOOL_PARAMS
