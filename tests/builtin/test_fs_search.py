"""fs_glob, fs_grep (with ripgrep and in pure Python, which must agree) and fs_ls."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from kode.builtin.fs import fs_glob, fs_grep, fs_ls
from kode.builtin.fs._globs import file_filter, glob_regex
from kode.builtin.fs._grep import GrepQuery, find_ripgrep, ripgrep
from kode.testing.programs import missing_program
from kode.tools.context import ToolContext
from kode.tools.core import Tool
from kode.tools.errors import ToolErrorType
from kode.tools.results import ToolResult
from kode.tools.workspace import FilePool, Workspace

pytestmark = pytest.mark.anyio

# kode's own lookup (KODE_RG, else PATH), as fs_grep makes it.
RG = find_ripgrep()
NO_RG = missing_program("rg", package="ripgrep", needed_for="fs_grep's ripgrep path")


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


def put(root: Path, files: dict[str, str | bytes]) -> None:
    for name, content in files.items():
        f = root / name
        f.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            f.write_bytes(content)
        else:
            f.write_text(content)


TREE: dict[str, str | bytes] = {
    "README.md": "# Demo\nTODO: write docs\n",
    "setup.py": "from setuptools import setup\nsetup(name='demo')\n",
    "src/app.py": "import os\n\n\ndef main():\n    # TODO: parse args\n    return os.getcwd()\n",
    "src/util.py": "def helper(x):\n    return x * 2\n\n\ndef other():\n    pass\n",
    "src/deep/nested/mod.py": "VALUE = 1  # todo lower case\n",
    "src/web/app.ts": "const todo = 'TODO: types';\n",
    ".github/ci.yml": "# TODO hidden file\n",
    ".git/config": "TODO in git\n",
    "node_modules/pkg/index.js": "// TODO in deps\n",
    "data/blob.bin": b"TODO\x00\x01\x02binary",
    "data/latin.txt": b"TODO caf\xe9\n",
}


# --- fs_glob --------------------------------------------------------------------------------


async def test_glob_recursive_sorted_by_mtime_and_name(ctx: ToolContext, ws: Path) -> None:
    put(ws, TREE)
    for i, name in enumerate(["src/util.py", "setup.py", "src/app.py", "src/deep/nested/mod.py"]):
        os.utime(ws / name, (1_000_000 + i, 1_000_000 + i))
    newest = await call(fs_glob, ctx, pattern="**/*.py")
    assert newest.text.splitlines() == [
        "src/deep/nested/mod.py",
        "src/app.py",
        "setup.py",
        "src/util.py",
    ]
    by_name = await call(fs_glob, ctx, pattern="**/*.py", sort="name")
    assert by_name.text.splitlines() == sorted(newest.text.splitlines())
    assert by_name.details["total"] == 4 and by_name.details["complete"] is True


async def test_glob_in_a_subdirectory_shows_workspace_paths(ctx: ToolContext, ws: Path) -> None:
    put(ws, TREE)
    result = await call(fs_glob, ctx, pattern="*.{py,ts}", path="src", sort="name")
    assert result.text.splitlines() == ["src/app.py", "src/util.py"]
    result = await call(fs_glob, ctx, pattern="**/app.*", path="src", sort="name")
    assert result.text.splitlines() == ["src/app.py", "src/web/app.ts"]


async def test_glob_without_slash_is_top_level_and_says_so(ctx: ToolContext, ws: Path) -> None:
    put(ws, {"src/a.py": "", "src/b.py": ""})
    result = await call(fs_glob, ctx, pattern="*.py")
    assert not result.is_error
    assert "No files match '*.py'" in result.text and "'**/*.py'" in result.text


async def test_glob_cap(ctx: ToolContext, ws: Path) -> None:
    put(ws, {f"f{i:02}.txt": "" for i in range(12)})
    result = await call(fs_glob, ctx, pattern="*.txt", sort="name", limit=5)
    lines = result.text.splitlines()
    assert lines[:5] == [f"f{i:02}.txt" for i in range(5)]
    assert lines[5].startswith("(Showing 5 of 12 files, by name;")


async def test_glob_skips_noise_unless_named(ctx: ToolContext, ws: Path) -> None:
    put(ws, TREE)
    everything = (await call(fs_glob, ctx, pattern="**/*", sort="name")).text.splitlines()
    assert ".github/ci.yml" in everything
    assert not any(p.startswith((".git/", "node_modules/")) for p in everything)
    deps = await call(fs_glob, ctx, pattern="node_modules/**/*.js")
    assert deps.text == "node_modules/pkg/index.js"


async def test_glob_symlinks(ctx: ToolContext, ws: Path, tmp_path: Path) -> None:
    put(ws, {"real.txt": "x"})
    (tmp_path / "secret.txt").write_text("s")
    (ws / "inside.txt").symlink_to(ws / "real.txt")
    (ws / "outside.txt").symlink_to(tmp_path / "secret.txt")
    (ws / "loop").symlink_to(ws)
    result = await call(fs_glob, ctx, pattern="**/*.txt", sort="name")
    assert result.text.splitlines() == ["inside.txt", "real.txt"]


async def test_deep_trees_do_not_exhaust_the_stack(
    ctx: ToolContext, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    levels = [ws]
    for _ in range(1100):  # deeper than Python's recursion limit
        levels.append(levels[-1] / "d")
        levels[-1].mkdir()  # one by one: mkdir(parents=True) itself recurses
    (levels[-1] / "deep.txt").write_text("needle\n")
    try:
        found = await call(fs_glob, ctx, pattern="**/deep.txt")
        assert found.text.endswith("d/d/deep.txt")
        monkeypatch.setenv("KODE_RG", "off")
        grepped = await call(fs_grep, ctx, pattern="needle", output_mode="files")
        assert grepped.text == found.text
    finally:  # shutil.rmtree recurses too: take the tree down from the bottom
        (levels[-1] / "deep.txt").unlink()
        for level in reversed(levels[1:]):
            level.rmdir()


async def test_glob_refuses_escaping_patterns(ctx: ToolContext) -> None:
    for pattern in ["/etc/*", "../*", "a/../../b"]:
        result = await call(fs_glob, ctx, pattern=pattern)
        assert result.error_type is ToolErrorType.INVALID_TOOL_PARAMS, pattern
    missing = await call(fs_glob, ctx, pattern="*", path="nope")
    assert missing.error_type is ToolErrorType.FILE_NOT_FOUND


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("*.py", "a.py", True),
        ("*.py", "s/a.py", False),
        ("**/*.py", "a.py", True),
        ("**/*.py", "s/t/a.py", True),
        ("src/**", "src/a/b", True),
        ("src/**/*.py", "src/a.py", True),
        ("*.{py,md}", "x.md", True),
        ("{src,lib}/**/*.py", "lib/q/x.py", True),
        ("[!a]*.py", "b.py", True),
        ("[!a]*.py", "a.py", False),
        ("a?c", "a/c", False),
        ("[ab", "[ab", True),
        ("{a,b", "{a,b", True),
        ("a/**/b", "a/b", True),
        ("a/**/b", "a/x/y/b", True),
        ("x**y", "xa/y", False),
    ],
)
def test_glob_translation(pattern: str, path: str, matches: bool) -> None:
    assert bool(glob_regex(pattern).match(path)) is matches


def test_file_filter_follows_ripgrep_rules() -> None:
    assert file_filter("*.py")("deep/down/a.py")
    assert file_filter("/src/*.py")("src/a.py") and not file_filter("src/*.py")("src/b/a.py")
    assert not file_filter("!src")("src/a.py") and file_filter("!src")("lib/a.py")
    assert not file_filter("!*.md")("docs/x.md")


# --- fs_grep --------------------------------------------------------------------------------


@pytest.fixture(params=["ripgrep", "python"])
def engine(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    if request.param == "ripgrep":
        if RG is None:
            pytest.skip(NO_RG)
        monkeypatch.setenv("KODE_RG", RG)
    else:
        monkeypatch.setenv("KODE_RG", "off")
    yield str(request.param)


async def grep(ctx: ToolContext, engine: str, **args: Any) -> ToolResult:
    result = await call(fs_grep, ctx, **args)
    if not result.is_error and result.details["files"]:
        assert result.details["engine"] == engine
    return result


async def test_grep_content(ctx: ToolContext, ws: Path, engine: str) -> None:
    put(ws, TREE)
    result = await grep(ctx, engine, pattern="TODO")
    assert result.text.splitlines() == [
        ".github/ci.yml:1:# TODO hidden file",
        "README.md:2:TODO: write docs",
        "data/latin.txt:1:TODO caf\ufffd",
        "src/app.py:5:    # TODO: parse args",
        "src/web/app.ts:1:const todo = 'TODO: types';",
    ]
    assert result.details["matches"] == 5 and result.details["truncated"] is False


async def test_grep_context_lines(ctx: ToolContext, ws: Path, engine: str) -> None:
    put(ws, TREE)
    result = await grep(ctx, engine, pattern=r"^def ", path="src", context=1)
    assert result.text.splitlines() == [
        "src/app.py-3-",
        "src/app.py:4:def main():",
        "src/app.py-5-    # TODO: parse args",
        "--",
        "src/util.py:1:def helper(x):",
        "src/util.py-2-    return x * 2",
        "--",
        "src/util.py-4-",
        "src/util.py:5:def other():",
        "src/util.py-6-    pass",
    ]


async def test_grep_glob_and_case(ctx: ToolContext, ws: Path, engine: str) -> None:
    put(ws, TREE)
    py = await grep(ctx, engine, pattern="todo", glob="*.py", ignore_case=True, output_mode="files")
    assert py.text.splitlines() == ["src/app.py", "src/deep/nested/mod.py"]
    src = await grep(ctx, engine, pattern="TODO", glob="src/**/*.ts", output_mode="files")
    assert src.text == "src/web/app.ts"
    not_md = await grep(ctx, engine, pattern="TODO", glob="!*.md", output_mode="files")
    assert "README.md" not in not_md.text and "src/app.py" in not_md.text
    deps = await grep(ctx, engine, pattern="TODO", glob="node_modules/**", output_mode="files")
    assert deps.text == "node_modules/pkg/index.js"


async def test_grep_count_mode(ctx: ToolContext, ws: Path, engine: str) -> None:
    put(ws, TREE)
    result = await grep(ctx, engine, pattern=r"\bx\b|def", path="src", output_mode="count")
    assert result.text.splitlines() == [
        "src/app.py:1",
        "src/util.py:3",
        "(4 matching lines in 2 files)",
    ]


async def test_grep_caps_results(ctx: ToolContext, ws: Path, engine: str) -> None:
    put(ws, {f"f{i}.txt": "hit\nmiss\nhit\n" for i in range(5)})
    lines = await grep(ctx, engine, pattern="hit", limit=3)
    assert lines.text.splitlines() == [
        "f0.txt:1:hit",
        "f0.txt:3:hit",
        "f1.txt:1:hit",
        "(Stopped after 3 matching lines; there are more. Narrow the pattern, path or glob, "
        "or raise limit.)",
    ]
    assert lines.details["truncated"] is True
    with_context = await grep(ctx, engine, pattern="hit", limit=1, context=1)
    assert with_context.text.splitlines()[:3] == [
        "f0.txt:1:hit",
        "f0.txt-2-miss",
        "(Stopped after 1 matching lines; there are more. Narrow the pattern, path or glob, "
        "or raise limit.)",
    ]
    files = await grep(ctx, engine, pattern="hit", output_mode="files", limit=2)
    assert files.text.splitlines()[:2] == ["f0.txt", "f1.txt"]
    assert "Stopped after 2 files" in files.text
    exact = await grep(ctx, engine, pattern="hit", output_mode="files", limit=5)
    assert "Stopped" not in exact.text and exact.details["truncated"] is False


async def test_grep_skips_binary_symlinks_and_noise(
    ctx: ToolContext, ws: Path, tmp_path: Path, engine: str
) -> None:
    put(ws, TREE)
    (tmp_path / "outside.txt").write_text("TODO outside\n")
    (ws / "link.txt").symlink_to(tmp_path / "outside.txt")
    (ws / "inlink.py").symlink_to(ws / "src/app.py")
    files = (await grep(ctx, engine, pattern="TODO", output_mode="files")).text.splitlines()
    assert "data/blob.bin" not in files
    assert not any(f.startswith((".git/", "node_modules/")) or "link" in f for f in files)
    assert ".github/ci.yml" in files


async def test_grep_one_file(ctx: ToolContext, ws: Path, engine: str) -> None:
    put(ws, TREE)
    result = await grep(ctx, engine, pattern="return", path="src/util.py")
    assert result.text == "src/util.py:2:    return x * 2"
    binary = await grep(ctx, engine, pattern="TODO", path="data/blob.bin")
    assert binary.is_error and "binary" in binary.text


async def test_grep_crlf_and_none_found(ctx: ToolContext, ws: Path, engine: str) -> None:
    put(ws, {"win.txt": b"alpha\r\nbeta\r\n"})
    assert (await grep(ctx, engine, pattern="beta")).text == "win.txt:2:beta"
    none = await grep(ctx, engine, pattern="gamma", glob="*.txt")
    assert none.text == "No matches for /gamma/ in '.' (files matching '*.txt')."
    assert not none.is_error


async def test_grep_look_around_works_everywhere(ctx: ToolContext, ws: Path, engine: str) -> None:
    put(ws, TREE)
    result = await call(fs_grep, ctx, pattern=r"(?<=# )TODO", output_mode="files")
    assert result.text.splitlines() == [".github/ci.yml", "src/app.py"]
    assert result.details["engine"] == "python"  # ripgrep refuses look-around: Python searches


async def test_grep_errors(ctx: ToolContext, ws: Path, engine: str) -> None:
    bad = await call(fs_grep, ctx, pattern="foo(")
    assert bad.error_type is ToolErrorType.INVALID_TOOL_PARAMS
    assert "Invalid regular expression" in bad.text
    missing = await call(fs_grep, ctx, pattern="x", path="nope")
    assert missing.error_type is ToolErrorType.FILE_NOT_FOUND
    outside = await call(fs_grep, ctx, pattern="x", path="/")
    assert outside.error_type is ToolErrorType.PATH_NOT_IN_WORKSPACE


def _processes_with(marker: str) -> list[str]:
    found = []
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                if marker.encode() in fh.read():
                    found.append(pid)
        except OSError:
            continue
    return found


@pytest.mark.skipif(RG is None, reason=NO_RG)
@pytest.mark.skipif(not os.path.isdir("/proc"), reason="needs /proc to list processes")
async def test_cancelling_a_search_kills_ripgrep(ws: Path) -> None:
    assert RG is not None
    os.mkfifo(ws / "never-written-fifo")  # ripgrep blocks reading it until it is killed
    query = GrepQuery(
        pattern="x",
        ignore_case=False,
        base=ws,
        file="never-written-fifo",
        glob=None,
        prune=frozenset(),
        mode="content",
        context=0,
        limit=10,
    )
    with anyio.move_on_after(0.5) as scope:
        await ripgrep(RG, query)
    assert scope.cancelled_caught
    # killed and reaped before ripgrep() returned; on a loaded machine /proc can lag a moment
    for _ in range(100):
        if not _processes_with("never-written-fifo"):
            break
        await anyio.sleep(0.02)
    assert _processes_with("never-written-fifo") == []


@pytest.mark.skipif(RG is None, reason=NO_RG)
@pytest.mark.parametrize(
    "args",
    [
        {"pattern": "TODO"},
        {"pattern": "todo", "ignore_case": True, "context": 2},
        {"pattern": "e", "limit": 7, "context": 1},
        {"pattern": "e", "limit": 3, "output_mode": "files"},
        {"pattern": "[a-z]+", "output_mode": "count", "glob": "*.{py,md}"},
        {"pattern": "def|return", "path": "src", "context": 3},
        {"pattern": "^$", "path": "src", "output_mode": "count"},
    ],
)
async def test_both_engines_give_the_same_answer(
    ctx: ToolContext, ws: Path, monkeypatch: pytest.MonkeyPatch, args: dict[str, Any]
) -> None:
    put(ws, TREE)
    assert RG is not None
    monkeypatch.setenv("KODE_RG", RG)
    fast = await call(fs_grep, ctx, **args)
    monkeypatch.setenv("KODE_RG", "off")
    slow = await call(fs_grep, ctx, **args)
    assert (fast.details["engine"], slow.details["engine"]) == ("ripgrep", "python")
    assert fast.text == slow.text
    assert fast.details["files"] == slow.details["files"]


# --- fs_ls ----------------------------------------------------------------------------------


async def test_ls_lists_types_and_sizes(ctx: ToolContext, ws: Path) -> None:
    put(ws, {"b.txt": "x" * 10, "a.bin": b"\x00" * 2048, ".env": "SECRET=1", "src/x.py": ""})
    (ws / "link").symlink_to("b.txt")
    result = await call(fs_ls, ctx)
    assert result.text.splitlines() == [
        "Directory '.' (4 entries):",
        "dir   src/",
        "file  a.bin  (2.0 KB)",
        "file  b.txt  (10 bytes)",
        "link  link -> b.txt",
        "(1 hidden entry not shown; set include_hidden to list them.)",
    ]
    assert result.details["entries"][2] == {"name": "b.txt", "type": "file", "size": 10}
    hidden = await call(fs_ls, ctx, include_hidden=True)
    assert "file  .env  (8 bytes)" in hidden.text and "hidden" not in hidden.text


async def test_ls_cap_and_subdirectory(ctx: ToolContext, ws: Path) -> None:
    put(ws, {f"d/f{i:02}": "" for i in range(30)})
    result = await call(fs_ls, ctx, path="d", limit=10)
    lines = result.text.splitlines()
    assert lines[0] == "Directory 'd' (30 entries):"
    assert lines[1] == "file  f00  (0 bytes)" and len(lines) == 12
    assert lines[-1] == "(20 more entries not shown; raise limit to see them.)"
    (ws / "empty").mkdir()
    assert (await call(fs_ls, ctx, path="empty")).text == "Directory 'empty' is empty."


async def test_ls_errors(ctx: ToolContext, ws: Path) -> None:
    put(ws, {"file.txt": "x"})
    assert "use fs_read" in (await call(fs_ls, ctx, path="file.txt")).text
    missing = await call(fs_ls, ctx, path="nope")
    assert missing.error_type is ToolErrorType.FILE_NOT_FOUND
    assert "Directory 'nope' does not exist" in missing.text
