"""fs_grep and fs_glob stay responsive on hostile patterns: linear-time globs, bounded work,
and a Python regex search that can always be stopped."""

from __future__ import annotations

import fnmatch
import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kode.builtin.fs import fs_glob, fs_grep
from kode.builtin.fs._globs import (
    MAX_BRACE_DEPTH,
    MAX_GLOB_ALTERNATIVES,
    MAX_GLOB_CHARS,
    MAX_GLOB_EXPANSION,
    GlobError,
    file_filter,
    glob_regex,
)
from kode.builtin.fs._grep import (
    MAX_REGEX_CHARS,
    PYTHON_GREP_SECONDS,
    GrepQuery,
    find_ripgrep,
    python_search,
    ripgrep,
)
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
CATASTROPHIC = "(a+)+$"
"""Exponential in Python's backtracking `re` on a line of a's followed by another letter."""


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


def text(result: ToolResult) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


# --- fs_grep: a catastrophic regex ----------------------------------------------------------

# Run in a child process with a hard limit, so a search that freezes the interpreter fails the
# test instead of hanging it. The child stops fs_grep after 2 s (as the tool's timeout would)
# while a ticker counts how often the event loop got to run meanwhile.
_CHILD = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    import anyio
    from kode.builtin.fs import fs_grep
    from kode.tools.context import ToolContext
    from kode.tools.workspace import FilePool, Workspace

    async def main() -> None:
        root = Path(sys.argv[1])
        ctx = ToolContext(workspace=Workspace(root=root), files=FilePool())
        ticks = 0
        outcome = "finished"

        async def ticker() -> None:
            nonlocal ticks
            while True:
                await anyio.sleep(0.01)
                ticks += 1

        start = time.monotonic()
        async with anyio.create_task_group() as tg:
            tg.start_soon(ticker)
            try:
                with anyio.fail_after(2):
                    result = await fs_grep.run({"pattern": sys.argv[2]}, ctx)
                outcome = "error" if result.is_error else "finished"
            except TimeoutError:
                outcome = "stopped"
            tg.cancel_scope.cancel()
        print(outcome, round(time.monotonic() - start, 2), ticks)

    anyio.run(main)
    """
)


@pytest.mark.parametrize("engine", ["ripgrep", "python"])
def test_catastrophic_regex_never_freezes_the_event_loop(ws: Path, engine: str) -> None:
    if engine == "ripgrep" and RG is None:
        pytest.skip(NO_RG)
    (ws / "a.txt").write_text("a" * 40 + "b\n")
    env = {**os.environ, "KODE_RG": RG if engine == "ripgrep" and RG else "off"}
    try:
        child = subprocess.run(
            [sys.executable, "-c", _CHILD, str(ws), CATASTROPHIC],
            env=env,
            capture_output=True,
            text=True,
            timeout=90,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"fs_grep /{CATASTROPHIC}/ froze the process: not stopped within 90 s")
    assert child.returncode == 0, child.stderr
    outcome, elapsed, ticks = child.stdout.split()
    if engine == "ripgrep":
        assert outcome == "finished"  # a linear-time engine: no match, quickly
    else:
        # The Python search is stopped by the timeout, and the loop kept running meanwhile
        # (about 200 ticks in 2 s; a frozen loop gets none).
        assert outcome == "stopped"
        assert float(elapsed) < 30
        assert int(ticks) >= 20


async def test_python_search_is_killed_at_its_deadline(ws: Path) -> None:
    (ws / "a.txt").write_text("a" * 40 + "b\n")
    query = GrepQuery(
        pattern=CATASTROPHIC,
        ignore_case=False,
        base=ws,
        file=None,
        glob=None,
        prune=frozenset(),
        mode="content",
        context=0,
        limit=10,
    )
    start = time.monotonic()
    with pytest.raises(ToolError, match=r"did not finish within 1 s.*\(a\+\)\+"):
        await python_search(query, deadline=1)
    assert time.monotonic() - start < 30


async def test_python_search_runs_in_a_worker_and_finds(ws: Path) -> None:
    (ws / "src").mkdir()
    (ws / "src" / "m.py").write_text("x = 1\nfoo = 2\n")
    query = GrepQuery(
        pattern=r"(?<=f)oo",  # look-behind: ripgrep's default engine refuses it
        ignore_case=False,
        base=ws,
        file=None,
        glob="*.py",
        prune=frozenset(),
        mode="content",
        context=0,
        limit=10,
    )
    outcome = await python_search(query)
    assert outcome.engine == "python"
    assert [(f.path, f.lines) for f in outcome.files] == [("src/m.py", [(2, "foo = 2", True)])]


async def test_grep_refuses_an_overlong_regex(ctx: ToolContext) -> None:
    result = await call(fs_grep, ctx, pattern="a" * (MAX_REGEX_CHARS + 1))
    assert result.error_type is ToolErrorType.INVALID_TOOL_PARAMS
    assert f"at most {MAX_REGEX_CHARS:,}" in text(result)


@pytest.mark.parametrize("engine", ["ripgrep", "python"])
async def test_grep_glob_with_nested_braces_works_on_both_paths(
    ctx: ToolContext, ws: Path, engine: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if engine == "ripgrep" and RG is None:
        pytest.skip(NO_RG)
    monkeypatch.setenv("KODE_RG", RG if engine == "ripgrep" and RG else "off")
    for name in ["a.txt", "b.txt", "c.txt", "d.txt"]:
        (ws / name).write_text("hit\n")
    # ripgrep's glob parser refuses nested braces: the Python search takes the glob instead.
    result = await call(fs_grep, ctx, pattern="hit", glob="{a,{b,c}}.txt", output_mode="files")
    assert not result.is_error, text(result)
    assert text(result).splitlines() == ["a.txt", "b.txt", "c.txt"]


@pytest.mark.skipif(RG is None, reason=NO_RG)
async def test_ripgrep_reads_a_huge_line_in_linear_time(ws: Path) -> None:
    (ws / "big.txt").write_text("x" * (19 * 1024 * 1024) + "needle\n")
    query = GrepQuery(
        pattern="needle",
        ignore_case=False,
        base=ws,
        file=None,
        glob=None,
        prune=frozenset(),
        mode="files",
        context=0,
        limit=10,
    )
    assert RG is not None
    start = time.monotonic()
    outcome = await ripgrep(RG, query)
    # Re-joining the pending bytes per chunk copied the line ~300 times (4 s here).
    assert time.monotonic() - start < 2
    assert outcome is not None and [f.path for f in outcome.files] == ["big.txt"]


# --- fs_glob: limits and clear errors -------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "says"),
    [
        ("[" * 20_000, f"at most {MAX_GLOB_CHARS:,}"),
        ("{a," * MAX_BRACE_DEPTH + "{a,b" + "}" * (MAX_BRACE_DEPTH + 1), "more than 10 deep"),
        ("{a,b}" * 30, f"more than {MAX_GLOB_ALTERNATIVES} patterns"),
        ("{a,b}{a,b}{a,b}{a,b}{a,b}" + "x" * 200, f"more than {MAX_GLOB_EXPANSION:,} characters"),
        ("[z-a].py", "runs backwards; write 'a-z'"),
    ],
)
async def test_glob_refuses_what_it_cannot_bound(ctx: ToolContext, pattern: str, says: str) -> None:
    for result in [
        await call(fs_glob, ctx, pattern=pattern),
        await call(fs_grep, ctx, pattern="x", glob=pattern),
    ]:
        assert result.error_type is ToolErrorType.INVALID_TOOL_PARAMS, text(result)
        assert says in text(result)


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("pattern", "path"),
    [
        ("[" * 1000, "a"),  # unclosed brackets: each scanned once
        ("[!" * 500, "a"),
        ("{a," * 300, "a"),  # unclosed braces: each a literal, not retried
        ("{" * 1000, "a"),
        ("*a" * 12 + "b", "a" * 60),  # many stars: no retrying of every split
        ("**/" * 12 + "x", "d/" * 40 + "y"),
        ("**/a*/" * 8 + "x", "a/" * 40 + "y"),
    ],
)
def test_glob_compiles_and_matches_in_bounded_time(pattern: str, path: str) -> None:
    start = time.monotonic()
    regex = glob_regex(pattern)
    assert not regex.match(path)
    assert time.monotonic() - start < 5  # was from 10 s to hours


def test_glob_semantics_kept() -> None:
    assert glob_regex("a/**/b/**/c").match("a/x/b/y/z/c")
    assert glob_regex("a/**/b/**/c").match("a/b/c")
    assert not glob_regex("a/**/b/**/c").match("a/x/c")
    assert glob_regex("**/**/x").match("x") and glob_regex("**/**/x").match("p/q/x")
    assert glob_regex("*a*b*c").match("xaabcc") and not glob_regex("*a*b*c").match("xacb")
    assert glob_regex("{src,lib/{a,b}}/*.py").match("lib/b/m.py")
    assert glob_regex("[a-b--]x").match("-x")  # no "possible set difference" warning
    assert glob_regex("[+--]x").match(",x") and glob_regex("[&&~~]").match("~")
    assert not glob_regex("[+-0]").match("/")  # a class never matches the separator
    assert glob_regex(r"\{a,b\}").match("{a,b}")
    assert file_filter("!{a,b}")("c/x.py") and not file_filter("!{a,b}")("b/x.py")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    pattern=st.text(alphabet="ab*?", max_size=12),
    name=st.text(alphabet="ab", max_size=12),
)
def test_segment_matching_agrees_with_fnmatch(pattern: str, name: str) -> None:
    assert bool(glob_regex(pattern).match(name)) is fnmatch.fnmatchcase(name, pattern)


def _reference(pattern: str) -> re.Pattern[str]:
    """A plain backtracking translation of a brace-free glob made of "**", "*", "a", "/"."""
    parts = pattern.split("/")
    out = ""
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if part == "**":
            out += ".*" if last else "(?:[^/]*/)*"
        else:
            out += part.replace("*", "[^/]*") + ("" if last else "/")
    return re.compile(out + r"\Z", re.S)


@settings(max_examples=300, deadline=None)
@given(
    segments=st.lists(st.sampled_from(["**", "*", "a", "a*", "*a", "b"]), min_size=1, max_size=6),
    path=st.lists(st.sampled_from(["a", "b", "ab", "ba"]), min_size=1, max_size=6),
)
def test_globstar_matching_agrees_with_backtracking(segments: list[str], path: list[str]) -> None:
    pattern, rel = "/".join(segments), "/".join(path)
    assert bool(glob_regex(pattern).match(rel)) is bool(_reference(pattern).match(rel))


_JUNK = st.text(alphabet="{},[]!^*?/\\a-.", max_size=MAX_GLOB_CHARS)
_NESTED = st.recursive(
    st.sampled_from(["a", "*", "**", "?", "[a-", "]", "/", ","]),
    lambda inner: (
        st.lists(inner, min_size=1, max_size=4).map(lambda xs: "{" + ",".join(xs) + "}")
        | st.lists(inner, min_size=1, max_size=4).map("".join)
    ),
    max_leaves=200,
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pattern=_JUNK | _NESTED)
def test_junk_globs_are_compiled_or_refused_with_bounded_work(pattern: str) -> None:
    start = time.monotonic()
    try:
        regex = glob_regex(pattern)
    except GlobError as exc:
        assert str(exc)  # refused, with a reason
        return
    # The work is bounded by the limits: the regex's size by the expansion limit, and a
    # match has no nested backtracking (a generous time bound, not a benchmark).
    assert len(regex.pattern) <= 20 * MAX_GLOB_EXPANSION
    for path in ["a" * 200, "a/" * 60 + "b", "{a,b}" * 20, "-" * 100 + "/x"]:
        regex.match(path)
    assert time.monotonic() - start < 5


def test_the_limits_are_named_in_the_tool_descriptions() -> None:
    glob_doc, grep_doc = fs_glob.description, fs_grep.description
    for number in [MAX_GLOB_CHARS, MAX_GLOB_ALTERNATIVES, MAX_GLOB_EXPANSION]:
        assert f"{number:,}" in glob_doc
    assert f"nested over {MAX_BRACE_DEPTH} deep" in glob_doc
    assert f"{MAX_REGEX_CHARS:,} characters" in grep_doc
    assert f"stopped after {PYTHON_GREP_SECONDS:g} s" in grep_doc
