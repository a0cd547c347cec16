"""The workspace sandbox of the file tools, attacked: `..`, absolute paths, symlinks, hard
links, and a directory swapped for a symlink while each tool runs (10,000 swaps per tool)."""

from __future__ import annotations

import ctypes
import os
import shutil
import threading
import time
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kode.agent import Agent, AgentTemplate, ApprovalDecision, ApprovalRequest
from kode.builtin._shared._workspace_files import GIT_WRITE_REASON
from kode.builtin.fs import (
    fs_edit,
    fs_glob,
    fs_grep,
    fs_ls,
    fs_multi_edit,
    fs_read,
    fs_write,
)
from kode.builtin.fs._grep import GrepFile, GrepOutcome, GrepQuery, python_grep
from kode.builtin.fs._grep_files import confirm, line_digest
from kode.models import ScriptedModel, ToolResultContent, tool_use
from kode.registries import ToolRegistry
from kode.testing.programs import missing_program
from kode.tools.context import ToolContext
from kode.tools.core import Tool
from kode.tools.errors import ToolErrorType
from kode.tools.results import ToolResult
from kode.tools.workspace import FilePool, Workspace

pytestmark = pytest.mark.anyio

SECRET = "SECRET-7f3a"
SECRET_PATTERN = "SECRET-7f3."  # matches it, but an echo of the pattern is no leak
ONLY_OUTSIDE = "only-outside.txt"
ALL_TOOLS: list[Tool[..., Any]] = [
    fs_read,
    fs_write,
    fs_edit,
    fs_multi_edit,
    fs_glob,
    fs_grep,
    fs_ls,
]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    other = tmp_path / "outside"
    other.mkdir()
    (other / "a.txt").write_text(f"{SECRET} A B\n")
    (other / ONLY_OUTSIDE).write_text(f"{SECRET}\n")
    return other


@pytest.fixture
def ctx(ws: Path) -> ToolContext:
    return ToolContext(workspace=Workspace(root=ws), files=FilePool())


@pytest.fixture(params=["ripgrep", "python"])
def engine(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "python":
        monkeypatch.setenv("KODE_RG", "off")
    else:
        from kode.builtin.fs._grep import find_ripgrep

        monkeypatch.delenv("KODE_RG", raising=False)
        if find_ripgrep() is None:
            pytest.skip(
                missing_program("rg", package="ripgrep", needed_for="fs_grep's ripgrep path")
            )
    return str(request.param)


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def leaked(result: ToolResult) -> bool:
    text = result.text + repr(result.details)
    return SECRET in text or ONLY_OUTSIDE in text


def every_call(target: str) -> list[tuple[Tool[..., Any], dict[str, Any]]]:
    return [
        (fs_read, {"path": f"{target}/a.txt"}),
        (fs_write, {"path": f"{target}/a.txt", "content": "x"}),
        (fs_write, {"path": f"{target}/new/deeper.txt", "content": "x"}),
        (fs_edit, {"path": f"{target}/a.txt", "old_string": "A", "new_string": "Z"}),
        (
            fs_multi_edit,
            {"path": f"{target}/a.txt", "edits": [{"old_string": "B", "new_string": "Y"}]},
        ),
        (fs_glob, {"pattern": "**/*", "path": target}),
        (fs_grep, {"pattern": SECRET_PATTERN, "path": target}),
        (fs_grep, {"pattern": SECRET_PATTERN, "path": f"{target}/a.txt"}),
        (fs_ls, {"path": target}),
    ]


# --- static escapes -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "target",
    ["../outside", "sub/../../outside", "{outside}", "./../ws/../outside"],
    ids=["dotdot", "nested-dotdot", "absolute", "roundabout"],
)
async def test_paths_that_leave_the_workspace_are_refused(
    target: str, ctx: ToolContext, ws: Path, outside: Path
) -> None:
    (ws / "sub").mkdir()
    before = snapshot(outside)
    for tool, args in every_call(target.format(outside=outside)):
        result = await tool.run(args, ctx)
        assert result.is_error, (tool.name, args, result.text)
        assert result.error_type is ToolErrorType.PATH_NOT_IN_WORKSPACE, result.text
        assert not leaked(result)
    assert snapshot(outside) == before


@pytest.mark.parametrize("link", ["file", "dir", "chain", "dangling-dir"])
async def test_symlinks_leading_out_are_refused(
    link: str, ctx: ToolContext, ws: Path, outside: Path
) -> None:
    if link == "file":
        (ws / "sub").mkdir()
        (ws / "sub" / "a.txt").symlink_to(outside / "a.txt")
    elif link == "dir":
        (ws / "sub").symlink_to(outside)
    elif link == "chain":  # inside -> inside -> outside
        (ws / "hop2").symlink_to(outside)
        (ws / "hop1").symlink_to("hop2")
        (ws / "sub").symlink_to(ws / "hop1")
    else:
        (ws / "sub").symlink_to(outside / "later")
    before = snapshot(outside)
    for tool, args in every_call("sub"):
        if link == "file" and "a.txt" not in args["path"]:
            result = await tool.run(args, ctx)  # the directory is inside: using it is fine
        else:
            result = await tool.run(args, ctx)
            assert result.is_error, (tool.name, args, result.text)
            assert result.error_type is ToolErrorType.PATH_NOT_IN_WORKSPACE, result.text
        assert not leaked(result), (tool.name, result.text)
    assert snapshot(outside) == before
    assert not (outside / "later").exists()


async def test_searches_from_the_root_do_not_follow_links_out(
    ctx: ToolContext, ws: Path, outside: Path, engine: str
) -> None:
    (ws / "in.txt").write_text(f"inside {SECRET[:3]}\n")
    (ws / "dirlink").symlink_to(outside)
    (ws / "filelink.txt").symlink_to(outside / "a.txt")
    for tool, args in [
        (fs_grep, {"pattern": "SEC"}),
        (fs_glob, {"pattern": "**/*"}),
        (fs_ls, {"path": "."}),
    ]:
        result = await tool.run(args, ctx)
        assert not result.is_error, result.text
        assert SECRET not in result.text and ONLY_OUTSIDE not in result.text


# --- hard links -----------------------------------------------------------------------------


@pytest.fixture
def linked(ws: Path, outside: Path) -> Path:
    (ws / "plain.txt").write_text("plain SEC\n")
    os.link(outside / "a.txt", ws / "linked.txt")
    return ws / "linked.txt"


async def test_hard_linked_files_are_neither_read_nor_written(
    ctx: ToolContext, ws: Path, outside: Path, linked: Path
) -> None:
    before = snapshot(outside)
    read = await fs_read.run({"path": "linked.txt"}, ctx)
    assert read.is_error and read.error_type is ToolErrorType.PERMISSION_DENIED
    assert "has 2 hard links; kode does not read or write files with more than one link" in (
        read.text
    )
    assert "outside the workspace" in read.text and not leaked(read)
    ctx.files.record_read(linked)  # type: ignore[union-attr]  # as if read before the link
    for tool, args in [
        (fs_write, {"path": "linked.txt", "content": "overwritten"}),
        (fs_edit, {"path": "linked.txt", "old_string": "A", "new_string": "Z"}),
        (fs_multi_edit, {"path": "linked.txt", "edits": [{"old_string": "B", "new_string": "Y"}]}),
        (fs_grep, {"pattern": "A", "path": "linked.txt"}),
    ]:
        result = await tool.run(args, ctx)
        assert result.is_error, (tool.name, result.text)
        assert "hard links" in result.text and not leaked(result)
    assert snapshot(outside) == before
    assert os.stat(linked).st_nlink == 2


async def test_searches_skip_hard_linked_files_and_say_so(
    ctx: ToolContext, linked: Path, engine: str
) -> None:
    grep = await fs_grep.run({"pattern": "SEC"}, ctx)
    assert grep.text.splitlines()[0] == "plain.txt:1:plain SEC"
    assert "1 file with more than one hard link skipped" in grep.text
    assert not leaked(grep) and grep.details["skipped_linked"] == 1  # type: ignore[index]
    files = await fs_grep.run({"pattern": "SEC", "output_mode": "count"}, ctx)
    assert files.text.splitlines()[0] == "plain.txt:1" and not leaked(files)
    glob = await fs_glob.run({"pattern": "*.txt", "sort": "name"}, ctx)
    assert glob.text == "plain.txt"


# --- ripgrep's answer is checked against the workspace's own files ---------------------------


def test_ripgrep_lines_not_in_the_workspace_file_are_dropped(ws: Path) -> None:
    (ws / "a.txt").write_text("one\ntwo\n")
    (ws / "b.txt").write_text("one\n")
    reported = GrepOutcome(
        files=[
            GrepFile(path="a.txt", lines=[(2, "two", True)], count=1),
            GrepFile(path="b.txt", lines=[(1, SECRET, True)], count=1),  # read elsewhere
            GrepFile(path="gone/c.txt", lines=[(1, "one", True)], count=1),
            GrepFile(path="b.txt", count=1, checks=[(1, line_digest("one"))]),
            GrepFile(path="b.txt", count=1, checks=[(3, line_digest("one"))]),
        ],
        truncated=False,
        engine="ripgrep",
    )
    kept, changed = confirm(reported, ws)
    assert [(f.path, f.lines) for f in kept.files] == [
        ("a.txt", [(2, "two", True)]),
        ("b.txt", []),
    ]
    assert changed == 3


def test_line_digests_match_both_engines_long_lines_and_line_ends(ws: Path) -> None:
    long = "é" * 200_000 + "x"  # longer than one read window, split inside a character
    (ws / "a.txt").write_bytes(b"a\r\n" + long.encode() + b"\r\nb\xff\rc\r")
    reported = GrepOutcome(
        files=[
            GrepFile(
                path="a.txt",
                lines=[(1, "a", True), (2, long, True), (3, "b\ufffd\rc", True)],
                count=3,
            )
        ],
        truncated=False,
        engine="ripgrep",
    )
    kept, changed = confirm(reported, ws)
    assert changed == 0 and len(kept.files) == 1


# --- bounded memory -------------------------------------------------------------------------


def _peak(func: Any) -> tuple[Any, int]:
    tracemalloc.start()
    try:
        result = func()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_reading_one_line_of_a_50_mb_line_is_streamed(ws: Path, ctx: ToolContext) -> None:
    (ws / "big.txt").write_bytes(b"x" * 50_000_000 + b"\n")
    result, peak = _peak(lambda: fs_read.run_sync({"path": "big.txt", "limit": 1}, ctx))
    assert not result.is_error and "[line truncated:" in result.text
    assert peak < 10_000_000, peak


def _query(ws: Path, pattern: str, **fields: Any) -> GrepQuery:
    defaults: dict[str, Any] = {
        "ignore_case": False,
        "file": None,
        "glob": None,
        "prune": frozenset(),
        "mode": "content",
        "context": 0,
        "limit": 100,
    }
    return GrepQuery(pattern=pattern, base=ws, **{**defaults, **fields})


@pytest.mark.parametrize("file", ["big.txt", None], ids=["one-file", "directory"])
def test_the_python_search_of_a_50_mb_line_is_streamed(ws: Path, file: str | None) -> None:
    # 19 MB, under the size directory searches skip, for the directory case.
    size = 50_000_000 if file else 19_000_000
    (ws / "big.txt").write_bytes(b"x" * (size - 10_000_000) + b"needle" + b"x" * 10_000_000)
    found, peak = _peak(lambda: python_grep(_query(ws, "needle", file=file), lambda: False))
    assert [(f.path, f.count) for f in found.files] == [("big.txt", 1)]
    assert found.files[0].lines[0][1].startswith("xxx")
    assert peak < 10_000_000, peak
    found, _ = _peak(lambda: python_grep(_query(ws, "nothere", file=file), lambda: False))
    assert found.files == []


# --- writes inside .git need approval -------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "asks"),
    [
        (".git/config", True),
        (".git/hooks/pre-commit", True),
        ("sub/.GIT/config", True),
        (".git", True),
        ("gitlink/config", True),  # a symlink into .git
        ("src/app.py", False),
        (".github/workflows/ci.yml", False),
        ("notes.git", False),
    ],
)
def test_writes_inside_git_ask_for_approval(
    path: str, asks: bool, ctx: ToolContext, ws: Path
) -> None:
    (ws / ".git").mkdir()
    (ws / "gitlink").symlink_to(ws / ".git")
    for tool in (fs_write, fs_edit, fs_multi_edit):
        check = tool.requires_approval
        assert callable(check)
        assert check({"path": path}, ctx) == (GIT_WRITE_REASON if asks else None), tool.name
    assert fs_read.requires_approval is None


@pytest.mark.parametrize(
    ("path", "asks"),
    [
        (".kode/memory.md", True),
        (".kode/rules.toml", True),
        (".KODE/memory.md", True),
        (".kode", True),
        (".venv/lib/python3.11/site-packages/x.pth", True),
        (".venv/bin/python", True),
        ("venv/bin/activate", True),
        (".direnv/python-3.11/bin/python", True),
        ("data/sessions.sqlite", True),  # a store kode opened
        ("data/sessions.sqlite-journal", True),  # SQLite would replay it into the store
        ("state/memory.md", True),  # $KODE_HOME, inside the workspace here
        ("src/kode.md", False),
        ("kode/app.py", False),
        (".kodex", False),
        ("venvs/notes.md", False),
        ("data/other.sqlite", False),
    ],
)
def test_writes_where_kode_trusts_later_ask_for_approval(
    path: str, asks: bool, ctx: ToolContext, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As in the sandbox: .kode/, a virtual environment at the root, kode's own databases."""
    from kode.builtin.fs.patch import apply_patch
    from kode.sessions import SQLiteStore

    (ws / "data").mkdir()
    SQLiteStore(ws / "data" / "sessions.sqlite")  # recorded as kode's when made
    monkeypatch.setenv("KODE_HOME", str(ws / "state"))
    for tool in (fs_write, fs_edit, fs_multi_edit):
        check = tool.requires_approval
        assert callable(check)
        reason = check({"path": path}, ctx)
        assert (reason is not None and "kode later trusts" in reason) == asks, (tool.name, reason)
    patch = f"*** Begin Patch\n*** Add File: {path}\n+x\n*** End Patch\n"
    check = apply_patch.requires_approval
    assert callable(check)
    if path != ".kode":  # a directory cannot be added as a file
        assert (check({"patch": patch}, ctx) is not None) == asks, path


async def test_an_agent_asks_before_writing_git_config(tmp_path: Path) -> None:
    ws = tmp_path / "repo"
    (ws / ".git").mkdir(parents=True)
    (ws / ".git" / "config").write_text("[core]\n")
    tools = ToolRegistry()
    for tool in ALL_TOOLS:
        tools.register(tool, source="core")
    requests: list[ApprovalRequest] = []

    async def deny(request: ApprovalRequest) -> ApprovalDecision:
        requests.append(request)
        return ApprovalDecision(decision="deny")

    model = ScriptedModel(
        [
            [
                tool_use("fs_read", {"path": ".git/config"}, id="r"),
                tool_use(
                    "fs_write",
                    {"path": ".git/config", "content": "[core]\nfsmonitor = touch pwned\n"},
                    id="w",
                ),
                tool_use("fs_write", {"path": "notes.txt", "content": "fine\n"}, id="n"),
            ],
            "done",
        ]
    )
    agent = Agent.create(
        AgentTemplate(id="git-guard", tools=["group:fs"]),
        model=model,
        registry=tools,
        workspace=ws,
        approver=deny,
    )
    await agent.send("configure git")
    assert [(r.call_id, r.reason) for r in requests] == [("w", GIT_WRITE_REASON)]
    results = {
        b.tool_use_id: b
        for b in model.requests[-1].messages[-1].content
        if isinstance(b, ToolResultContent)
    }
    assert results["w"].is_error and not results["n"].is_error
    assert (ws / ".git" / "config").read_text() == "[core]\n"
    assert (ws / "notes.txt").read_text() == "fine\n"


async def test_in_mode_approval_other_writes_still_ask(tmp_path: Path) -> None:
    tools = ToolRegistry()
    tools.register(fs_write, source="core")
    requests: list[ApprovalRequest] = []

    async def deny(request: ApprovalRequest) -> ApprovalDecision:
        requests.append(request)
        return ApprovalDecision(decision="deny")

    model = ScriptedModel([[tool_use("fs_write", {"path": "a.txt", "content": "x"})], "done"])
    agent = Agent.create(
        AgentTemplate(id="asks", tools=["fs_write"], permission={"mode": "approval"}),
        model=model,
        registry=tools,
        workspace=tmp_path,
        approver=deny,
    )
    await agent.send("write")
    assert len(requests) == 1


# --- races: a directory swapped for a symlink while the tool runs ---------------------------

MIN_SWAPS = 10_000
MIN_RUNS = 400  # calls per tool, with the swaps going on all the while
MIN_RUNS_LS = 1500  # fs_ls is quick and its window narrow: more calls to hit it
MAX_SECONDS = 90.0  # a guard against a hung run, not a speed assertion


def _exchange() -> Any:
    """Linux's ``renameat2(RENAME_EXCHANGE)``: swap two names in one step, or `None`."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        func = libc.renameat2
    except (OSError, AttributeError):
        return None
    func.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    return func


class Swapper:
    """Flips ``ws/sub`` between a real directory and a symlink to the outside, in a thread.

    With ``renameat2`` the two names are exchanged in one step, so ``sub`` always exists;
    elsewhere the directory is moved away and the symlink moved in, in two steps.
    """

    def __init__(self, ws: Path, outside: Path) -> None:
        self.sub = ws / "sub"
        self.parked = ws / ".sub-parked"
        self.link = ws / ".sub-link"
        self.outside = outside
        self.swaps = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._exchange = _exchange()

    def _swap_atomically(self) -> None:
        a, b = bytes(self.sub), bytes(self.link)
        while not self._stop.is_set():
            if self._exchange(-100, a, -100, b, 2) != 0:  # AT_FDCWD, RENAME_EXCHANGE
                raise OSError(ctypes.get_errno(), "renameat2")
            self.swaps += 1
        if self.sub.is_symlink():
            self._exchange(-100, a, -100, b, 2)
        self.link.unlink()

    def _swap_in_steps(self) -> None:
        while not self._stop.is_set():
            self.sub.rename(self.parked)
            try:
                self.link.rename(self.sub)  # now a symlink out
            except OSError:  # a tool made `sub` again in the gap: clear it away
                shutil.rmtree(self.sub)
                self.link.rename(self.sub)
            self.swaps += 1
            self.sub.rename(self.link)
            self.parked.rename(self.sub)  # a real directory again
            self.swaps += 1
        self.link.unlink()

    def _run(self) -> None:
        self.link.symlink_to(self.outside)
        if self._exchange is not None:
            self._swap_atomically()
        else:
            self._swap_in_steps()

    def __enter__(self) -> Swapper:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        assert self.sub.is_dir() and not self.sub.is_symlink()


def _race(
    ws: Path, outside: Path, calls: list[Callable[[], str]], *, min_runs: int = MIN_RUNS
) -> Iterator[str]:
    """What each call returned, run in turn while `Swapper` flips ``ws/sub``."""
    sub = ws / "sub"
    sub.mkdir()
    (sub / "a.txt").write_text("inside A B\n")
    (sub / "deeper").mkdir()
    (sub / "deeper" / "b.txt").write_text("inside too\n")
    start = time.monotonic()
    with Swapper(ws, outside) as swapper:
        runs = 0
        while swapper.swaps < MIN_SWAPS or runs < min_runs:
            assert time.monotonic() - start < MAX_SECONDS, (swapper.swaps, runs)
            yield calls[runs % len(calls)]()
            runs += 1
    assert swapper.swaps >= MIN_SWAPS
    print(f"{runs} calls, {swapper.swaps} swaps, {time.monotonic() - start:.1f} s")


def _tool_call(tool: Tool[..., Any], args: dict[str, Any], ctx: ToolContext) -> Callable[[], str]:
    def call() -> str:
        result = tool.run_sync(args, ctx)
        return f"{'error' if result.is_error else 'ok'}: {result.text} {result.details!r}"

    return call


def _python_grep_call(ws: Path, path: str, **fields: Any) -> Callable[[], str]:
    # The Python search in this process (fs_grep runs it in a worker process, one per call:
    # too slow for thousands of calls): the walk and the opening of files are what is raced.
    def call() -> str:
        where = ws / path
        found = python_grep(_query(where, "SECRET|inside", **fields), lambda: False)
        return f"ok: {found!r}"

    return call


RACED = {
    "fs_read": [(fs_read, {"path": "sub/a.txt"}), (fs_read, {"path": "sub/deeper/b.txt"})],
    "fs_write": [
        (fs_write, {"path": "sub/a.txt", "content": "inside A B\n"}),
        (fs_write, {"path": "sub/planted.txt", "content": "planted\n"}),
        (fs_write, {"path": "sub/new/deep.txt", "content": "x\n"}),
    ],
    "fs_edit": [
        (fs_edit, {"path": "sub/a.txt", "old_string": "A", "new_string": "C"}),
        (fs_edit, {"path": "sub/a.txt", "old_string": "C", "new_string": "A"}),
    ],
    "fs_multi_edit": [
        (fs_multi_edit, {"path": "sub/a.txt", "edits": [{"old_string": "B", "new_string": "D"}]}),
        (fs_multi_edit, {"path": "sub/a.txt", "edits": [{"old_string": "D", "new_string": "B"}]}),
    ],
    "fs_ls": [(fs_ls, {"path": "sub"}), (fs_ls, {"path": "sub/deeper"})],
    "fs_glob": [(fs_glob, {"pattern": "**/*"}), (fs_glob, {"pattern": "*", "path": "sub"})],
    "fs_grep": [
        (fs_grep, {"pattern": "SECRET|inside"}),
        (fs_grep, {"pattern": "SECRET|inside", "path": "sub", "output_mode": "count"}),
        (fs_grep, {"pattern": "SECRET|inside", "path": "sub/a.txt", "context": 1}),
        (fs_grep, {"pattern": "SECRET|inside", "output_mode": "files"}),
    ],
}


@pytest.mark.parametrize(
    "name",
    ["fs_read", "fs_write", "fs_edit", "fs_multi_edit", "fs_ls", "fs_glob", "fs_grep"],
)
def test_a_directory_swapped_mid_call_never_leads_outside(
    name: str, ws: Path, outside: Path, engine: str
) -> None:
    if name != "fs_grep" and engine == "ripgrep":
        pytest.skip("ripgrep is fs_grep's only")
    # No file pool: it would refuse many writes before they reach the file system.
    ctx = ToolContext(workspace=Workspace(root=ws))
    calls = [_tool_call(tool, args, ctx) for tool, args in RACED[name]]
    if name == "fs_grep" and engine == "python":
        calls = [
            _python_grep_call(ws, "."),
            _python_grep_call(ws, "sub", mode="count"),
            _python_grep_call(ws, "sub", file="a.txt", context=1),
            _python_grep_call(ws, ".", mode="files"),
        ]
    before = snapshot(outside)
    ok = 0
    runs = MIN_RUNS_LS if name == "fs_ls" else MIN_RUNS
    for text in _race(ws, outside, calls, min_runs=runs):
        assert SECRET not in text and ONLY_OUTSIDE not in text, text
        ok += text.startswith("ok:")
    assert snapshot(outside) == before
    assert sorted(os.listdir(outside)) == ["a.txt", ONLY_OUTSIDE]
    assert ok > 0  # the tool did work between the swaps, not only fail
