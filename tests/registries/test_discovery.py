"""Discovered tools, with real subprocesses: one command lists them, another runs them."""

from __future__ import annotations

import json
import os
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from kode import ToolErrorType, ToolRegistry, define_tool
from kode.registries import Diagnostic, ToolSource
from kode.registries.discovery import DiscoveryError, discover_tools

DECLARATIONS: list[dict[str, Any]] = [
    {
        "name": "add",
        "description": "Add two integers.",
        "parameters": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
            "additionalProperties": False,
        },
    },
    {"name": "echo", "description": "Echo the arguments.", "parameters": {"type": "object"}},
    {"name": "fail"},
    {"name": "warn"},
    {"name": "sleepy"},
    {"name": "deaf", "parameters": {"type": "object", "properties": {"blob": {"type": "string"}}}},
]

CALL = """
    import json, os, subprocess, sys, time

    name = sys.argv[-1]
    with open("calls.log", "a") as log:
        log.write(" ".join(sys.argv[1:]) + "\\n")
    if name == "deaf":  # closes stdin without reading its arguments
        os.close(0)
        print("did not listen")
        sys.exit(0)
    args = json.load(sys.stdin)
    if name == "add":
        print(args["a"] + args["b"])
    elif name == "echo":
        print(json.dumps({"args": args, "env": os.environ.get("KODE_TEST_FLAG")}))
    elif name == "fail":
        print("partial output")
        print("boom: disk full", file=sys.stderr)
        sys.exit(3)
    elif name == "warn":
        print("done")
        print("DeprecationWarning: old flag", file=sys.stderr)
    elif name == "sleepy":
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        with open("pids.json", "w") as f:
            json.dump({"parent": os.getpid(), "child": child.pid}, f)
        time.sleep(60)
"""


def _write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text))
    return path


@pytest.fixture
def commands(tmp_path: Path) -> tuple[list[str], list[str]]:
    """A discovery command printing DECLARATIONS and a call command, both Python scripts."""
    (tmp_path / "declarations.json").write_text(json.dumps(DECLARATIONS))
    discover = _write(
        tmp_path / "discover.py",
        """
        import sys
        with open(sys.argv[1]) as f:
            sys.stdout.write(f.read())
        """,
    )
    call = _write(tmp_path / "call.py", CALL)
    return (
        [sys.executable, str(discover), str(tmp_path / "declarations.json")],
        [sys.executable, str(call), "--verbose"],
    )


@pytest.fixture
def tools(tmp_path: Path, commands: tuple[list[str], list[str]]) -> ToolRegistry:
    reg = ToolRegistry()
    names = discover_tools(
        *commands,
        registry=reg,
        cwd=tmp_path,
        timeout=1.0,
        env={**os.environ, "KODE_TEST_FLAG": "on"},
    )
    assert names == ["add", "echo", "fail", "warn", "sleepy", "deaf"]
    return reg


def _calls(tmp_path: Path) -> list[str]:
    log = tmp_path / "calls.log"
    return log.read_text().splitlines() if log.exists() else []


def test_discovered_tools_are_registered_with_their_source(tools: ToolRegistry) -> None:
    meta = tools.meta("add")
    assert (meta.source, meta.groups, meta.plugin_id) == (
        ToolSource.DISCOVERED,
        ("group:discovered",),
        None,
    )
    add = tools.get("add")
    assert add.description == "Add two integers."
    assert add.input_schema["required"] == ["a", "b"]
    assert add.timeout == 1.0
    assert tools.get("fail").input_schema == {"type": "object", "properties": {}}
    assert tools.resolve(["group:discovered"]).names == [
        "add",
        "deaf",
        "echo",
        "fail",
        "sleepy",
        "warn",
    ]
    assert tools.diagnostics == []


@pytest.mark.anyio
async def test_a_call_runs_the_call_command_with_the_name_and_json_on_stdin(
    tools: ToolRegistry, tmp_path: Path
) -> None:
    result = await tools.get("add").run({"a": 2, "b": "40"})
    # "40" is not an integer for a JSON schema: nothing ran
    assert result.is_error and result.error_type is ToolErrorType.INVALID_TOOL_PARAMS
    assert _calls(tmp_path) == []

    result = await tools.get("add").run({"a": 2, "b": 40})
    assert (result.is_error, result.text) == (False, "42\n")
    assert _calls(tmp_path) == ["--verbose add"]

    result = await tools.get("echo").run('{"nested": {"x": [1, 2]}}')
    assert json.loads(result.text) == {"args": {"nested": {"x": [1, 2]}}, "env": "on"}


@pytest.mark.anyio
async def test_arguments_are_validated_against_the_declared_schema(
    tools: ToolRegistry, tmp_path: Path
) -> None:
    add = tools.get("add")
    cases = {
        "missing": ({"a": 1}, "'b' is required but missing"),
        "unknown": (
            {"a": 1, "b": 2, "c": 3},
            "'c' is not a parameter of this tool (parameters: a, b)",
        ),
        "type": ({"a": 1.5, "b": 2}, "'a' should be of type integer, got 1.5"),
    }
    for arguments, problem in cases.values():
        result = await add.run(arguments)
        assert result.is_error
        assert result.text == (
            f"Invalid arguments for tool 'add': {problem}. Fix the arguments and call the tool "
            "again."
        )
    assert _calls(tmp_path) == []


@pytest.mark.anyio
async def test_a_non_zero_exit_is_an_error_with_exit_code_stdout_and_stderr(
    tools: ToolRegistry,
) -> None:
    result = await tools.get("fail").run({})
    assert result.is_error and result.error_type is ToolErrorType.EXECUTION_FAILED
    assert result.text == (
        "Tool 'fail' failed: the call command exited with code 3.\n"
        "stdout:\npartial output\n"
        "stderr:\nboom: disk full"
    )
    assert result.details == {
        "exit_code": 3,
        "stdout": "partial output\n",
        "stderr": "boom: disk full\n",
    }


@pytest.mark.anyio
async def test_stderr_output_on_exit_zero_is_an_error(tools: ToolRegistry) -> None:
    result = await tools.get("warn").run({})
    assert result.is_error and result.error_type is ToolErrorType.EXECUTION_FAILED
    assert result.text == (
        "Tool 'warn' failed: the call command exited with code 0 but wrote to stderr.\n"
        "stdout:\ndone\n"
        "stderr:\nDeprecationWarning: old flag"
    )
    assert result.details["exit_code"] == 0


@pytest.mark.anyio
async def test_a_command_that_does_not_read_its_arguments_still_answers(
    tools: ToolRegistry,
) -> None:
    # 1 MB of arguments cannot fit in the pipe: the write fails once it closes stdin
    result = await tools.get("deaf").run({"blob": "x" * 1_000_000})
    assert (result.is_error, result.text) == (False, "did not listen\n")


def _gone(pid: int) -> bool:
    """Whether `pid` is dead: no such process, or a zombie waiting for its new parent."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def _wait_until_gone(pid: int, seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while not _gone(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    return _gone(pid)


@pytest.mark.anyio
async def test_a_call_past_its_timeout_is_killed_with_its_children(
    tools: ToolRegistry, tmp_path: Path
) -> None:
    started = time.monotonic()
    result = await tools.get("sleepy").run({})
    elapsed = time.monotonic() - started
    assert result.is_error and result.error_type is ToolErrorType.TIMEOUT
    assert result.text == "Tool 'sleepy' timed out after 1 s."
    assert elapsed < 5
    pids = json.loads((tmp_path / "pids.json").read_text())
    # the call command was waited for: it is gone at once
    with pytest.raises(ProcessLookupError):
        os.kill(pids["parent"], 0)
    # its child was killed with the process group; its new parent reaps it
    assert _wait_until_gone(pids["child"])


# --- discovery problems -----------------------------------------------------------------------


def _discover(tmp_path: Path, body: str, **options: Any) -> list[str]:
    script = _write(tmp_path / "d.py", body)
    return discover_tools([sys.executable, str(script)], ["true"], **options)


def test_a_failing_discovery_command_is_a_discovery_error(tmp_path: Path) -> None:
    reg = ToolRegistry()
    with pytest.raises(DiscoveryError) as info:
        _discover(
            tmp_path, "import sys\nprint('no config', file=sys.stderr)\nsys.exit(2)", registry=reg
        )
    assert "exited with code 2: no config" in str(info.value)
    assert reg.names() == []


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        (
            "not json",
            "did not print JSON (Expecting value: line 1 column 1 (char 0)); first "
            "bytes: b'not json",
        ),
        ('{"name": "x"}', "the discovery command must print a JSON array, got dict"),
        ("", "did not print JSON"),
    ],
)
def test_a_discovery_command_printing_no_json_array_is_a_discovery_error(
    tmp_path: Path, output: str, expected: str
) -> None:
    reg = ToolRegistry()
    with pytest.raises(DiscoveryError, match="^.*" + __import__("re").escape(expected)):
        _discover(tmp_path, f"print({output!r})", registry=reg)
    assert reg.names() == []


def test_a_discovery_command_that_cannot_run_or_hangs(tmp_path: Path) -> None:
    with pytest.raises(DiscoveryError, match="could not run"):
        discover_tools([str(tmp_path / "missing")], ["true"], registry=ToolRegistry())
    with pytest.raises(DiscoveryError, match=r"could not run: .*timed out after 0.3 seconds"):
        _discover(
            tmp_path, "import time\ntime.sleep(10)", discovery_timeout=0.3, registry=ToolRegistry()
        )


def test_invalid_declarations_are_skipped_with_diagnostics(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    reg = ToolRegistry()

    @define_tool(registry=reg)
    def taken() -> str:
        """Already here."""
        return ""

    declarations = [
        {
            "name": "good",
            "parameters": {"type": "OBJECT", "properties": {"n": {"type": "INTEGER"}}},
        },
        {"name": "bad name!"},
        {"description": "no name at all"},
        {"name": "scalar", "parameters": {"type": "string"}},
        {"name": "listy", "parameters": ["a"]},
        {"name": "taken"},
        {"functionDeclarations": [{"name": "nested"}]},
        "not a declaration",
    ]
    names = _discover(tmp_path, f"import json\nprint(json.dumps({declarations!r}))", registry=reg)
    assert names == ["good", "nested"]
    assert reg.get("good").input_schema == {
        "type": "object",
        "properties": {"n": {"type": "integer"}},
    }
    assert [(d.level, d.source, d.message) for d in reg.diagnostics] == [
        (
            "warning",
            ToolSource.DISCOVERED,
            "discovered tool 'bad name!' skipped: bad name!: tool name 'bad name!' is invalid: "
            "use 1-64 letters, digits, '_' or '-'",
        ),
        (
            "warning",
            ToolSource.DISCOVERED,
            "discovered declaration skipped: it has no string 'name' (got null): "
            '{"description": "no name at all"}',
        ),
        (
            "warning",
            ToolSource.DISCOVERED,
            "discovered tool 'scalar' skipped: scalar: input_schema must describe an object, "
            "got type 'string'",
        ),
        (
            "warning",
            ToolSource.DISCOVERED,
            "discovered tool 'listy' skipped: listy: input_schema must be a JSON schema object "
            "(a dict), got list",
        ),
        (
            "warning",
            ToolSource.DISCOVERED,
            "discovered tool 'taken' skipped: the name is taken by "
            f"{__name__}.test_invalid_declarations_are_skipped_with_diagnostics.<locals>.taken "
            "(the tool registered first is kept)",
        ),
    ]
    assert caplog.messages == [str(d) for d in reg.diagnostics]
    assert all(isinstance(d, Diagnostic) for d in reg.diagnostics)


def test_discovering_again_refreshes_and_another_command_is_a_conflict(tmp_path: Path) -> None:
    reg = ToolRegistry()
    body = "import json\nprint(json.dumps([{'name': 'lint', 'description': %r}]))"
    assert _discover(tmp_path, body % "v1", registry=reg) == ["lint"]
    assert _discover(tmp_path, body % "v2", registry=reg) == ["lint"]  # same call command
    assert reg.get("lint").description == "v2"
    assert reg.diagnostics == []
    script = _write(tmp_path / "other.py", body % "other")
    assert discover_tools([sys.executable, str(script)], ["false"], registry=reg) == []
    assert reg.get("lint").description == "v2"
    assert [d.message for d in reg.diagnostics] == [
        "discovered tool 'lint' skipped: the name is taken by a discovered tool "
        "(the tool registered first is kept)"
    ]
