"""File tools on hostile files and names: sparse holes, oversized files, over-long names."""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

import pytest

from kode.builtin.fs import (
    _text_edits,
    fs_edit,
    fs_glob,
    fs_grep,
    fs_ls,
    fs_multi_edit,
    fs_read,
    fs_write,
)
from kode.builtin.fs._grep import find_ripgrep
from kode.builtin.fs._text_edits import read_numbered
from kode.testing.programs import missing_program
from kode.tools.context import ToolContext
from kode.tools.core import Tool
from kode.tools.errors import ToolError, ToolErrorType
from kode.tools.results import ToolResult
from kode.tools.workspace import FilePool, Workspace

pytestmark = pytest.mark.anyio

# kode's own lookup (KODE_RG, else PATH), as fs_grep makes it.
RG = find_ripgrep()
NO_RG = missing_program("rg", package="ripgrep", needed_for="fs_grep's ripgrep path")
GIB = 1024**3


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def ctx(ws: Path) -> ToolContext:
    return ToolContext(workspace=Workspace(root=ws), files=FilePool())


async def call(tool: Tool[..., Any], ctx: ToolContext, **args: Any) -> ToolResult:
    return await tool.run(args, ctx)


def sparse(path: Path, head: bytes, size: int, tail: bytes = b"") -> None:
    """`head`, then a hole up to `size` bytes (made with truncate), then `tail`."""
    path.write_bytes(head)
    os.truncate(path, size)
    with path.open("ab") as fh:
        fh.write(tail)
    if os.stat(path).st_blocks * 512 > 64 * 1024 * 1024:
        pytest.skip("this file system does not keep holes: the file would really be written")


# --- fs_read: sparse holes, the scan limit, cancellation --------------------------------------


def bytes_read() -> int:
    """Bytes this process has read through read() calls so far (Linux's /proc/self/io)."""
    try:
        text = Path("/proc/self/io").read_text()
    except OSError:
        pytest.skip("/proc/self/io is not available: bytes read cannot be counted")
    return int(next(line for line in text.splitlines() if line.startswith("rchar:")).split()[1])


TEXT_HEAD = b"".join(b"line number %d of text\n" % n for n in range(1, 1001))  # > 8 KB of text


async def test_reading_across_a_4_gib_hole_steps_over_it(ctx: ToolContext, ws: Path) -> None:
    sparse(ws / "sparse.log", TEXT_HEAD, 4 * GIB, b"after the hole\n")
    # Line 1001 starts in the hole and runs to the end: 4 GiB of zeros, then the last words.
    before = bytes_read()
    result = await call(fs_read, ctx, path="sparse.log", offset=999, limit=5)
    assert bytes_read() - before < 16 * 1024 * 1024  # not the 4 GiB of zeros
    assert not result.is_error, result.text
    lines = result.text.splitlines()
    assert lines[0] == "   999\tline number 999 of text"
    assert lines[1] == "  1000\tline number 1000 of text"
    hidden = 4 * GIB - len(TEXT_HEAD) + len(b"after the hole") - _text_edits.MAX_LINE_CHARS
    assert lines[2].endswith(f" … [line truncated: {hidden} more characters]")
    assert result.details["total_lines"] == 1001
    # Past the end: the whole file was "scanned", holes included, without reading them.
    before = bytes_read()
    past = await call(fs_read, ctx, path="sparse.log", offset=1002, limit=1)
    assert bytes_read() - before < 16 * 1024 * 1024
    assert past.is_error
    assert past.text == (
        "File 'sparse.log' has 1001 lines; offset 1002 is past its end. Use a smaller offset."
    )


async def test_a_hole_to_the_end_of_the_file_is_stepped_over(ctx: ToolContext, ws: Path) -> None:
    sparse(ws / "tail.log", TEXT_HEAD, 4 * GIB)
    before = bytes_read()
    result = await call(fs_read, ctx, path="tail.log", offset=1001, limit=1)
    assert bytes_read() - before < 16 * 1024 * 1024
    assert not result.is_error, result.text
    hidden = 4 * GIB - len(TEXT_HEAD) - _text_edits.MAX_LINE_CHARS
    assert result.text.endswith(f" … [line truncated: {hidden} more characters]")


async def test_one_call_reads_a_bounded_number_of_bytes(
    ctx: ToolContext, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The limit is 256 MB; a smaller one shows the same behaviour on a small real file.
    monkeypatch.setattr(_text_edits, "MAX_SCAN_BYTES", 200_000)
    (ws / "big.txt").write_bytes(b"".join(b"row %06d\n" % n for n in range(1, 60_001)))
    result = await call(fs_read, ctx, path="big.txt", offset=50_000, limit=10)
    assert result.is_error and result.error_type is ToolErrorType.TOOL_ERROR
    assert result.text == (
        "fs_read read 200,000 bytes of 'big.txt' (its first 18,181 lines) without reaching "
        "line 50,000, and reads no more in one call. Search the file with fs_grep, or show "
        "the lines with a command (e.g. sed -n or tail)."
    )
    assert result.details["reason"] == "scan_limit"
    # Lines found before the limit are shown, with a note on why reading stopped.
    shown = await call(fs_read, ctx, path="big.txt", offset=18_000, limit=2000)
    assert not shown.is_error, shown.text
    assert shown.text.splitlines()[0] == " 18000\trow 018000"
    assert shown.text.splitlines()[-1] == (
        "(Showing lines 18000-18181. fs_read stopped there, after reading 200,000 bytes of "
        "the file, the most it reads in one call: show later lines with a command (e.g. sed "
        "-n or tail), or search with fs_grep.)"
    )
    assert shown.details["truncated"] is True


def test_a_cancelled_read_stops() -> None:
    fh = io.BytesIO(b"a\n" * 1000)
    with pytest.raises(ToolError) as caught:
        read_numbered(fh, "f", offset=None, limit=None, count_lines=True, cancelled=lambda: True)
    assert caught.value.type is ToolErrorType.CANCELLED


def test_fs_read_has_a_timeout() -> None:
    assert fs_read.timeout == 60


# --- fs_grep: a single file over the size limit ----------------------------------------------


@pytest.fixture(params=["ripgrep", "python"])
def engine(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "ripgrep":
        if RG is None:
            pytest.skip(NO_RG)
        monkeypatch.setenv("KODE_RG", RG)
    else:
        monkeypatch.setenv("KODE_RG", "off")
    return str(request.param)


async def test_grep_refuses_a_named_file_over_the_limit(
    ctx: ToolContext, ws: Path, engine: str
) -> None:
    sparse(ws / "huge.txt", b"needle\n", 21 * 1024 * 1024, b"needle\n")
    (ws / "small.txt").write_text("needle\n")
    result = await call(fs_grep, ctx, pattern="needle", path="huge.txt")
    assert result.is_error
    assert result.text == (
        "File 'huge.txt' is 21.0 MB; fs_grep searches files up to 20 MB. Read it in parts "
        "with fs_read (offset and limit), or search it with a command."
    )
    assert result.details["reason"] == "too_large"
    # In a directory search it is skipped, as before; the small file is still found.
    found = await call(fs_grep, ctx, pattern="needle", output_mode="files")
    assert found.details["files"] == ["small.txt"]


# --- names over the system's limits ----------------------------------------------------------

LONG = "n" * 300


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        (fs_read, {"path": LONG}),
        (fs_read, {"path": f"{LONG}/inner.txt"}),
        (fs_write, {"path": LONG, "content": "x"}),
        (fs_write, {"path": f"dir/{LONG}", "content": "x"}),
        (fs_edit, {"path": LONG, "old_string": "a", "new_string": "b"}),
        (fs_multi_edit, {"path": LONG, "edits": [{"old_string": "a", "new_string": "b"}]}),
        (fs_ls, {"path": LONG}),
        (fs_glob, {"pattern": "*", "path": LONG}),
        (fs_grep, {"pattern": "x", "path": LONG}),
    ],
)
async def test_a_name_over_255_bytes_is_a_clear_error(
    ctx: ToolContext, ws: Path, tool: Tool[..., Any], args: dict[str, Any]
) -> None:
    result = await call(tool, ctx, **args)
    assert result.is_error and result.error_type is ToolErrorType.INVALID_TOOL_PARAMS
    assert "is 300 bytes long; a file or directory name may be at most 255 bytes." in result.text
    assert "n" * 41 not in result.text  # the name is abridged
    assert result.details["reason"] == "name_too_long"
    assert os.listdir(ws) == []


async def test_multibyte_names_count_bytes(ctx: ToolContext, ws: Path) -> None:
    fits = "é" * 127  # 254 bytes
    assert not (await call(fs_write, ctx, path=fits, content="ok")).is_error
    over = await call(fs_write, ctx, path="é" * 128, content="no")  # 256 bytes
    assert over.is_error and "is 256 bytes long" in over.text


async def test_a_path_over_4096_bytes_is_a_clear_error(ctx: ToolContext) -> None:
    result = await call(fs_write, ctx, path="d/" * 2100 + "f", content="x")
    assert result.is_error and result.error_type is ToolErrorType.INVALID_TOOL_PARAMS
    assert "a path may be at most 4096 bytes" in result.text
    assert result.details["reason"] == "path_too_long"
