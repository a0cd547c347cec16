"""fs_read, fs_write, the workspace sandbox, the file pool, names and aliases, and an agent."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest

import kode.builtin._shared._safe_open as beneath_module
import kode.builtin._shared._workspace_files as files_module
from kode.agent import Agent, AgentTemplate
from kode.builtin.fs import (
    fs_edit,
    fs_glob,
    fs_grep,
    fs_ls,
    fs_multi_edit,
    fs_read,
    fs_write,
)
from kode.models import ScriptedModel, ToolResultContent, tool_use
from kode.registries import ToolRegistry, ToolSource, registry
from kode.tools.context import ToolContext
from kode.tools.core import Tool
from kode.tools.errors import ToolErrorType
from kode.tools.results import ImageBlock, ToolResult
from kode.tools.workspace import FilePool, Workspace

pytestmark = pytest.mark.anyio

FS_TOOLS: list[Tool[..., Any]] = [
    fs_read,
    fs_write,
    fs_edit,
    fs_multi_edit,
    fs_glob,
    fs_grep,
    fs_ls,
]
PNG = (
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00"
    b"\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N\x00\x00"
    b"\x00\x00IEND\xaeB`\x82"
)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    other = tmp_path / "outside"
    other.mkdir()
    (other / "secret.txt").write_text("top secret\n")
    return other


@pytest.fixture
def ctx(ws: Path) -> ToolContext:
    return ToolContext(workspace=Workspace(root=ws), files=FilePool())


async def call(tool: Tool[..., Any], ctx: ToolContext, **args: Any) -> ToolResult:
    return await tool.run(args, ctx)


def error(result: ToolResult, kind: ToolErrorType = ToolErrorType.TOOL_ERROR) -> str:
    assert result.is_error, result.text
    assert result.error_type is kind, (result.error_type, result.text)
    return result.text


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


# --- the workspace sandbox -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        (fs_read, {"path": "../outside/secret.txt"}),
        (fs_write, {"path": "../outside/new.txt", "content": "x"}),
        (fs_edit, {"path": "../outside/secret.txt", "old_string": "top", "new_string": "t"}),
        (
            fs_multi_edit,
            {"path": "../outside/secret.txt", "edits": [{"old_string": "a", "new_string": "b"}]},
        ),
        (fs_glob, {"pattern": "*", "path": "../outside"}),
        (fs_grep, {"pattern": "secret", "path": "../outside"}),
        (fs_ls, {"path": "../outside"}),
        (fs_ls, {"path": "sub/../../outside"}),
    ],
)
async def test_dotdot_escape_is_refused_by_every_tool(
    tool: Tool[..., Any], args: dict[str, Any], ctx: ToolContext, outside: Path
) -> None:
    before = snapshot(outside)
    text = error(await tool.run(args, ctx), ToolErrorType.PATH_NOT_IN_WORKSPACE)
    assert "outside the workspace" in text
    assert snapshot(outside) == before


async def test_absolute_paths_outside_are_refused_inside_allowed(
    ctx: ToolContext, ws: Path, outside: Path
) -> None:
    error(
        await call(fs_read, ctx, path=str(outside / "secret.txt")),
        ToolErrorType.PATH_NOT_IN_WORKSPACE,
    )
    error(
        await call(fs_write, ctx, path=str(outside / "x.txt"), content="x"),
        ToolErrorType.PATH_NOT_IN_WORKSPACE,
    )
    assert not (outside / "x.txt").exists()
    (ws / "in.txt").write_text("inside\n")
    result = await call(fs_read, ctx, path=str(ws / "in.txt"))
    assert not result.is_error and "inside" in result.text


async def test_symlinks_pointing_out_are_refused(ctx: ToolContext, ws: Path, outside: Path) -> None:
    (ws / "link.txt").symlink_to(outside / "secret.txt")
    (ws / "linkdir").symlink_to(outside)
    (ws / "dangling.txt").symlink_to(outside / "not-yet.txt")
    before = snapshot(outside)
    for result in [
        await call(fs_read, ctx, path="link.txt"),
        await call(fs_read, ctx, path="linkdir/secret.txt"),
        await call(fs_ls, ctx, path="linkdir"),
        await call(fs_grep, ctx, pattern="secret", path="linkdir"),
        await call(fs_write, ctx, path="link.txt", content="pwned"),
        await call(fs_write, ctx, path="dangling.txt", content="pwned"),
        await call(fs_write, ctx, path="linkdir/new.txt", content="pwned"),
        await call(fs_edit, ctx, path="link.txt", old_string="top", new_string="no"),
    ]:
        error(result, ToolErrorType.PATH_NOT_IN_WORKSPACE)
    assert snapshot(outside) == before
    assert not (outside / "not-yet.txt").exists()


async def test_symlink_inside_the_workspace_is_followed(ctx: ToolContext, ws: Path) -> None:
    (ws / "real.txt").write_text("one\n")
    (ws / "alias.txt").symlink_to(ws / "real.txt")
    assert "one" in (await call(fs_read, ctx, path="alias.txt")).text
    result = await call(fs_write, ctx, path="alias.txt", content="two\n")
    assert not result.is_error, result.text
    assert (ws / "alias.txt").is_symlink()
    assert (ws / "real.txt").read_text() == "two\n"


async def test_extra_allowed_paths(ws: Path, outside: Path) -> None:
    ctx = ToolContext(workspace=Workspace(root=ws, extra_paths=(outside,)), files=FilePool())
    secret = str(outside / "secret.txt")
    assert "top secret" in (await call(fs_read, ctx, path=secret)).text
    assert "top secret" in (await call(fs_read, ctx, path="../outside/secret.txt")).text
    result = await call(fs_edit, ctx, path=secret, old_string="top", new_string="no")
    assert not result.is_error, result.text
    assert (outside / "secret.txt").read_text() == "no secret\n"
    (ws.parent / "elsewhere.txt").write_text("x")
    error(await call(fs_read, ctx, path="../elsewhere.txt"), ToolErrorType.PATH_NOT_IN_WORKSPACE)


async def test_no_workspace_means_the_current_directory(
    ws: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ws)
    (ws / "here.txt").write_text("here\n")
    ctx = ToolContext(files=FilePool())
    assert "here" in (await call(fs_read, ctx, path="here.txt")).text
    error(
        await call(fs_read, ctx, path="../outside/secret.txt"), ToolErrorType.PATH_NOT_IN_WORKSPACE
    )
    listing = await call(fs_ls, ctx)
    assert "here.txt" in listing.text


async def test_symlink_loops_and_nul_characters(ctx: ToolContext, ws: Path) -> None:
    (ws / "a").symlink_to(ws / "b")
    (ws / "b").symlink_to(ws / "a")
    for tool, args in [(fs_read, {"path": "a"}), (fs_write, {"path": "a/x", "content": "x"})]:
        result = await tool.run(args, ctx)
        assert result.is_error and "cannot be resolved" in result.text, result.text
    nul = await call(fs_read, ctx, path="a\x00b")
    assert "NUL" in error(nul, ToolErrorType.INVALID_TOOL_PARAMS)


async def test_empty_path_is_refused(ctx: ToolContext) -> None:
    assert "empty" in error(await call(fs_read, ctx, path="  "), ToolErrorType.INVALID_TOOL_PARAMS)


# --- the file pool --------------------------------------------------------------------------


async def test_write_over_a_file_never_read_is_refused(ctx: ToolContext, ws: Path) -> None:
    (ws / "user.txt").write_text("the user's work\n")
    text = error(
        await call(fs_write, ctx, path="user.txt", content="clobbered"),
        ToolErrorType.PERMISSION_DENIED,
    )
    assert "read it first" in text and "not changed" in text
    assert (ws / "user.txt").read_text() == "the user's work\n"
    edit = await call(fs_edit, ctx, path="user.txt", old_string="work", new_string="play")
    assert "read it first" in error(edit, ToolErrorType.PERMISSION_DENIED)
    assert (ws / "user.txt").read_text() == "the user's work\n"


async def test_write_over_a_file_changed_since_read_is_refused(ctx: ToolContext, ws: Path) -> None:
    f = ws / "notes.txt"
    f.write_text("v1\n")
    await call(fs_read, ctx, path="notes.txt")
    f.write_text("v2 by the user\n")
    for result in [
        await call(fs_write, ctx, path="notes.txt", content="agent\n"),
        await call(fs_edit, ctx, path="notes.txt", old_string="v2", new_string="v3"),
        await call(
            fs_multi_edit, ctx, path="notes.txt", edits=[{"old_string": "v2", "new_string": "x"}]
        ),
    ]:
        text = error(result, ToolErrorType.PERMISSION_DENIED)
        assert "changed on disk" in text and "read it again" in text
    assert f.read_text() == "v2 by the user\n"
    await call(fs_read, ctx, path="notes.txt")
    assert not (await call(fs_write, ctx, path="notes.txt", content="agent\n")).is_error
    assert f.read_text() == "agent\n"


async def test_a_change_during_the_read_counts_as_unseen(ctx: ToolContext, ws: Path) -> None:
    f = ws / "racy.txt"
    f.write_text("before\n")
    stamp = f.stat()  # what fs_read stamps: the file as it was before reading it
    f.write_text("changed while being read\n")
    assert ctx.files is not None
    ctx.files.record_read(f, stat_result=stamp)
    result = await call(fs_write, ctx, path="racy.txt", content="x")
    assert "changed on disk" in error(result, ToolErrorType.PERMISSION_DENIED)


async def test_own_writes_count_as_seen(ctx: ToolContext, ws: Path) -> None:
    assert not (await call(fs_write, ctx, path="new.txt", content="a\n")).is_error
    assert not (await call(fs_edit, ctx, path="new.txt", old_string="a", new_string="b")).is_error
    assert not (await call(fs_write, ctx, path="new.txt", content="c\n")).is_error
    assert (ws / "new.txt").read_text() == "c\n"
    assert ctx.files is not None and ws / "new.txt" in ctx.files.known()


async def test_without_a_file_pool_writes_are_not_checked(ws: Path) -> None:
    (ws / "a.txt").write_text("a\n")
    ctx = ToolContext(workspace=Workspace(root=ws))
    assert not (await call(fs_write, ctx, path="a.txt", content="b\n")).is_error
    assert (ws / "a.txt").read_text() == "b\n"


# --- fs_read --------------------------------------------------------------------------------


async def test_read_numbers_lines_like_cat_n(ctx: ToolContext, ws: Path) -> None:
    (ws / "a.py").write_text("import os\n\n    indented\n")
    result = await call(fs_read, ctx, path="a.py")
    assert result.text == "     1\timport os\n     2\t\n     3\t    indented"
    assert result.details["total_lines"] == 3 and not result.details["truncated"]


async def test_read_offset_and_limit(ctx: ToolContext, ws: Path) -> None:
    (ws / "n.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    result = await call(fs_read, ctx, path="n.txt", offset=4, limit=3)
    lines = result.text.splitlines()
    assert lines[:3] == ["     4\tline 4", "     5\tline 5", "     6\tline 6"]
    assert "lines 4-6 of 10" in lines[3] and "offset=7" in lines[3]
    tail = await call(fs_read, ctx, path="n.txt", offset=9)
    assert tail.text == "     9\tline 9\n    10\tline 10"
    past = error(await call(fs_read, ctx, path="n.txt", offset=11))
    assert "has 10 lines" in past and "past its end" in past
    bad = await call(fs_read, ctx, path="n.txt", offset=0)
    assert "offset" in error(bad, ToolErrorType.INVALID_TOOL_PARAMS)


async def test_read_default_limit_is_2000_lines(ctx: ToolContext, ws: Path) -> None:
    (ws / "long.txt").write_text("x\n" * 2500)
    result = await call(fs_read, ctx, path="long.txt")
    assert result.text.count("\tx") == 2000
    assert "lines 1-2000 of 2500" in result.text and "offset=2001" in result.text


async def test_read_truncates_long_lines(ctx: ToolContext, ws: Path) -> None:
    (ws / "wide.txt").write_text("a" * 5000 + "\nshort\n")
    result = await call(fs_read, ctx, path="wide.txt")
    first, second = result.text.splitlines()
    assert first == f"     1\t{'a' * 2000} … [line truncated: 3000 more characters]"
    assert second == "     2\tshort"


async def test_read_a_single_enormous_line_is_bounded(ctx: ToolContext, ws: Path) -> None:
    (ws / "one.txt").write_bytes(b"b" * (3 * 1024 * 1024) + b"\nafter\n")
    result = await call(fs_read, ctx, path="one.txt")
    assert len(result.text) < 3000
    assert "line truncated" in result.text and "     2\tafter" in result.text


async def test_read_caps_the_output(ctx: ToolContext, ws: Path) -> None:
    (ws / "big.txt").write_text(("y" * 1500 + "\n") * 200)
    result = await call(fs_read, ctx, path="big.txt")
    assert len(result.text) <= 100_300
    assert "capped at 100,000 characters" in result.text
    last = result.details["last_line"]
    assert f"offset={last + 1}" in result.text and last < 200


async def test_read_binary_file_is_refused(ctx: ToolContext, ws: Path) -> None:
    (ws / "prog.bin").write_bytes(b"\x7fELF\x02\x01\x00\x00" + bytes(range(256)))
    text = error(await call(fs_read, ctx, path="prog.bin"))
    assert "binary" in text and "prog.bin" in text


async def test_read_image_returns_an_image_block(ctx: ToolContext, ws: Path) -> None:
    (ws / "dot.png").write_bytes(PNG)
    result = await call(fs_read, ctx, path="dot.png")
    assert not result.is_error
    image = result.content[0]
    assert isinstance(image, ImageBlock)
    assert image.media_type == "image/png" and image.data == PNG
    assert "dot.png" in result.text and "image/png" in result.text
    assert ctx.files is not None and ws / "dot.png" in ctx.files.known()


async def test_read_image_too_large(
    ctx: ToolContext, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("kode.builtin.fs.MAX_IMAGE_BYTES", 20)
    (ws / "dot.png").write_bytes(PNG)
    assert "larger than" in error(await call(fs_read, ctx, path="dot.png"))


async def test_read_huge_file_needs_offset_or_limit(ctx: ToolContext, ws: Path) -> None:
    line = b"0123456789" * 10 + b"\n"
    count = files_module.HUGE_FILE_BYTES // len(line) + 10
    (ws / "huge.log").write_bytes(line * count)
    text = error(await call(fs_read, ctx, path="huge.log"))
    assert "too large to read whole" in text and "offset" in text and "limit" in text
    part = await call(fs_read, ctx, path="huge.log", offset=5, limit=3)
    assert not part.is_error
    assert part.text.splitlines()[0] == f"     5\t{line.decode().strip()}"
    assert "lines 5-7." in part.text and "offset=8" in part.text
    assert part.details["total_lines"] is None


async def test_read_non_utf8_is_decoded_with_replacement(ctx: ToolContext, ws: Path) -> None:
    (ws / "latin.txt").write_bytes("café\n".encode("latin-1"))
    result = await call(fs_read, ctx, path="latin.txt")
    assert not result.is_error
    assert "not valid UTF-8" in result.text and "caf\ufffd" in result.text
    assert result.details["lossy"] is True


async def test_read_crlf_and_bom(ctx: ToolContext, ws: Path) -> None:
    (ws / "win.txt").write_bytes(b"\xef\xbb\xbffirst\r\nsecond\r\n")
    assert (await call(fs_read, ctx, path="win.txt")).text == "     1\tfirst\n     2\tsecond"


async def test_read_refuses_a_fifo_without_blocking(ctx: ToolContext, ws: Path) -> None:
    os.mkfifo(ws / "pipe")
    assert "not a regular file" in error(await call(fs_read, ctx, path="pipe"))


async def test_read_empty_missing_and_directory(ctx: ToolContext, ws: Path) -> None:
    (ws / "empty.txt").write_bytes(b"")
    assert "is empty" in (await call(fs_read, ctx, path="empty.txt")).text
    (ws / "config.toml").write_text("x")
    missing = error(await call(fs_read, ctx, path="confg.toml"), ToolErrorType.FILE_NOT_FOUND)
    assert "does not exist" in missing and "'config.toml'" in missing
    deep = error(await call(fs_read, ctx, path="no/such/dir.txt"), ToolErrorType.FILE_NOT_FOUND)
    assert "'no/such' does not exist either" in deep
    (ws / "src").mkdir()
    assert "fs_ls" in error(await call(fs_read, ctx, path="src"))


# --- fs_write -------------------------------------------------------------------------------


async def test_write_creates_parents(ctx: ToolContext, ws: Path) -> None:
    result = await call(fs_write, ctx, path="a/b/c.txt", content="one\ntwo\n")
    assert not result.is_error
    assert (ws / "a/b/c.txt").read_text() == "one\ntwo\n"
    assert result.text == "Wrote 2 lines (8 bytes) to 'a/b/c.txt' (new file)."
    assert result.details["created"] is True


async def test_write_is_atomic_and_keeps_the_mode(ctx: ToolContext, ws: Path) -> None:
    f = ws / "script.sh"
    f.write_text("#!/bin/sh\necho old\n")
    f.chmod(0o750)
    inode = f.stat().st_ino
    await call(fs_read, ctx, path="script.sh")
    result = await call(fs_write, ctx, path="script.sh", content="#!/bin/sh\necho new\n")
    assert "replaced its previous content" in result.text
    assert f.read_text() == "#!/bin/sh\necho new\n"
    assert stat.S_IMODE(f.stat().st_mode) == 0o750
    assert f.stat().st_ino != inode  # a new file was renamed over the old one
    assert sorted(os.listdir(ws)) == ["script.sh"]  # no temporary file left


async def test_new_file_gets_the_umask_mode(ctx: ToolContext, ws: Path) -> None:
    umask = os.umask(0o022)
    os.umask(umask)
    await call(fs_write, ctx, path="new.txt", content="x")
    assert stat.S_IMODE((ws / "new.txt").stat().st_mode) == 0o666 & ~umask


async def test_failed_write_leaves_the_file_and_no_temporary(
    ctx: ToolContext, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    f = ws / "keep.txt"
    f.write_text("original\n")
    await call(fs_read, ctx, path="keep.txt")

    def broken_replace(src: object, dst: object, **dir_fds: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(beneath_module.os, "rename", broken_replace)
    text = error(await call(fs_write, ctx, path="keep.txt", content="new\n"))
    assert "Could not write 'keep.txt'" in text and "No space left" in text
    assert f.read_text() == "original\n"
    assert sorted(os.listdir(ws)) == ["keep.txt"]


async def test_write_refuses_directories_and_files_as_parents(ctx: ToolContext, ws: Path) -> None:
    (ws / "dir").mkdir()
    assert "is a directory" in error(await call(fs_write, ctx, path="dir", content="x"))
    (ws / "plain").write_text("x")
    assert "Could not write" in error(await call(fs_write, ctx, path="plain/x.txt", content="x"))


# --- names, aliases, groups -----------------------------------------------------------------


def test_tools_are_registered_as_core_in_group_fs() -> None:
    kinds = {
        "fs_read": "read",
        "fs_write": "edit",
        "fs_edit": "edit",
        "fs_multi_edit": "edit",
        "fs_glob": "search",
        "fs_grep": "search",
        "fs_ls": "read",
    }
    for tool in FS_TOOLS:
        meta = registry.meta(tool.name)
        assert meta.source is ToolSource.CORE
        assert "group:fs" in meta.groups
        assert tool.kind == kinds[tool.name]
        assert "Limits and errors:" in tool.description


@pytest.mark.parametrize(
    ("alias", "name"),
    [
        ("read", "fs_read"),
        ("Read", "fs_read"),
        ("read_file", "fs_read"),
        ("Write", "fs_write"),
        ("Edit", "fs_edit"),
        ("MultiEdit", "fs_multi_edit"),
        ("Glob", "fs_glob"),
        ("Grep", "fs_grep"),
        ("LS", "fs_ls"),
    ],
)
def test_aliases(alias: str, name: str) -> None:
    assert registry.get(alias).name == name


async def test_file_path_is_accepted_for_path(ctx: ToolContext, ws: Path) -> None:
    assert "file_path" not in fs_read.input_schema["properties"]
    written = await fs_write.run({"file_path": "f.txt", "content": "hello\n"}, ctx)
    assert not written.is_error, written.text
    read = await fs_read.run({"file_path": "f.txt"}, ctx)
    assert read.text == "     1\thello"
    edited = await fs_edit.run(
        {"file_path": "f.txt", "old_string": "hello", "new_string": "bye"}, ctx
    )
    assert not edited.is_error, edited.text
    multi = await fs_multi_edit.run(
        {"file_path": "f.txt", "edits": [{"old_string": "bye", "new_string": "ciao"}]}, ctx
    )
    assert not multi.is_error, multi.text
    assert (ws / "f.txt").read_text() == "ciao\n"


# --- through an agent -----------------------------------------------------------------------


async def test_an_agent_reads_edits_and_is_kept_in_its_workspace(tmp_path: Path) -> None:
    ws = tmp_path / "project"
    ws.mkdir()
    (ws / "notes.md").write_text("# Notes\n\nstatus: draft\n")
    (ws / "user.md").write_text("the user's own file\n")
    tools = ToolRegistry()
    for tool in FS_TOOLS:
        tools.register(tool, source="core")
    model = ScriptedModel(
        [
            [tool_use("Read", {"file_path": "notes.md"}, id="t1")],
            [
                tool_use(
                    "fs_edit",
                    {"path": "notes.md", "old_string": "draft", "new_string": "final"},
                    id="t2",
                ),
                tool_use("fs_write", {"path": "user.md", "content": "overwritten"}, id="t3"),
                tool_use("write", {"path": "../escape.txt", "content": "x"}, id="t4"),
            ],
            [tool_use("grep", {"pattern": "status"}, id="t5")],
            "Done: notes.md is final.",
        ]
    )
    agent = Agent.create(
        AgentTemplate(id="fs-agent", tools=["group:fs"]),
        model=model,
        registry=tools,
        workspace=ws,
    )
    try:
        reply = await agent.send("Mark the notes final.")
    finally:
        await agent.aclose()
    assert reply.text == "Done: notes.md is final."
    assert (ws / "notes.md").read_text() == "# Notes\n\nstatus: final\n"
    assert (ws / "user.md").read_text() == "the user's own file\n"
    assert not (tmp_path / "escape.txt").exists()

    def results(request: int) -> dict[str, ToolResultContent]:
        last = model.requests[request].messages[-1]
        return {b.tool_use_id: b for b in last.content if isinstance(b, ToolResultContent)}

    first = results(1)
    assert not first["t1"].is_error and "     3\tstatus: draft" in first["t1"].text
    second = results(2)
    assert not second["t2"].is_error and "+status: final" in second["t2"].text
    assert second["t3"].is_error and "read it first" in second["t3"].text
    assert second["t4"].is_error and "outside the workspace" in second["t4"].text
    third = results(3)
    assert third["t5"].text == "notes.md:3:status: final"
    names = {tool.name for tool in model.requests[0].tools}
    assert names == {t.name for t in FS_TOOLS}
