"""``kode`` as a new user meets it: ``--version``, ``--deps``, ``tools list``, and ``kode run``
at the end of its input and under Ctrl-C, each run as a real ``python -m kode`` subprocess.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

import kode
from kode.cli import main

TOOLS = '''
"""Tools for the command-line tests."""
import os
from dataclasses import dataclass
from pathlib import Path

import anyio

from kode import ToolContext, define_tool

MARKS = Path(os.environ["KODE_TEST_MARKS"])


@dataclass
class Settings:
    greeting: str
    made: int


MADE = 0


def make_settings() -> Settings:
    global MADE
    MADE += 1
    return Settings(greeting="bonjour", made=MADE)


def needs_an_argument(name: str) -> Settings:
    return Settings(greeting=name, made=0)


NOT_A_FUNCTION = 42


@define_tool
def greet(name: str, ctx: ToolContext[Settings]) -> str:
    """Greet someone with the configured greeting.

    Args:
        name: Who to greet.
    """
    return f"{ctx.deps.greeting} {name} (deps made {ctx.deps.made} time(s))"


@define_tool(kind="delete")
def erase(name: str) -> str:
    """Erase a note; this is the second line of the description.

    Args:
        name: The note.
    """
    (MARKS / f"erased-{name}").touch()
    return f"erased {name}"


@define_tool
async def wait_forever() -> str:
    """Wait until cancelled."""
    (MARKS / "waiting").touch()
    try:
        await anyio.sleep(600)
    finally:
        (MARKS / "cancelled").touch()
    return "woke"
'''


@pytest.fixture
def marks(tmp_path: Path) -> Path:
    path = tmp_path / "marks"
    path.mkdir()
    return path


@pytest.fixture
def tools(tmp_path: Path, marks: Path) -> Path:
    path = tmp_path / "app_tools.py"
    path.write_text(textwrap.dedent(TOOLS).lstrip(), encoding="utf-8")
    return path


def env(marks: Path | None = None, **extra: str) -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    for key in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL", "KODE_MODEL"):
        out.pop(key, None)
    if marks is not None:
        out["KODE_TEST_MARKS"] = str(marks)
    out.update(extra)
    return out


def kode_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "kode", *args]


def kode_run(
    *args: str, cwd: Path, marks: Path | None = None, stdin: int | None = None, **extra: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        kode_cmd(*args),
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env=env(marks, **extra),
        stdin=subprocess.DEVNULL if stdin is None else stdin,
        check=False,
    )


def template(tmp_path: Path, tools: list[str], mode: str = "auto") -> Path:
    path = tmp_path / "agent.json"
    path.write_text(
        json.dumps({"id": "cli-test", "tools": tools, "permission": {"mode": mode}}),
        encoding="utf-8",
    )
    return path


def turns(tmp_path: Path, *items: object) -> str:
    path = tmp_path / "turns.json"
    path.write_text(json.dumps(list(items)), encoding="utf-8")
    return f"scripted:{path}"


def wait_until(check: object, timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return True
        time.sleep(0.02)
    return False


# --- kode --version ------------------------------------------------------------------------


def test_version(tmp_path: Path) -> None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        expected = version("kode-sdk")
    except PackageNotFoundError:
        expected = kode.__version__
    out = kode_run("--version", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"kode {expected}"


def test_version_without_any_metadata(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import importlib.metadata

    def missing(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", missing)
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out.strip() == f"kode {kode.__version__}"
    monkeypatch.setattr("kode.version.__version__", "9.9.9")  # the number's one home
    with pytest.raises(SystemExit):
        main(["--version"])
    assert capsys.readouterr().out.strip() == "kode 9.9.9"


# --- kode tools list ----------------------------------------------------------------------


def test_tools_list_shows_each_first_description_line_cut_to_the_width(
    tools: Path, tmp_path: Path, marks: Path
) -> None:
    out = kode_run("tools", "list", str(tools), cwd=tmp_path, marks=marks)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "erase         user       delete   -  Erase a note; this is the second line of t…",
        "greet         user       other    -  Greet someone with the configured greeting.",
        "wait_forever  user       other    -  Wait until cancelled.",
    ]
    assert all(len(line) <= 80 for line in out.stdout.splitlines())  # no terminal: 80
    narrow = kode_run("tools", "list", str(tools), cwd=tmp_path, marks=marks, COLUMNS="50")
    assert narrow.stdout.splitlines()[0] == "erase         user       delete   -  Erase a note…"
    assert all(len(line) <= 50 for line in narrow.stdout.splitlines())
    data = json.loads(
        kode_run("tools", "list", str(tools), "--json", cwd=tmp_path, marks=marks).stdout
    )
    assert data[1]["description"] == "Greet someone with the configured greeting."


def test_tools_list_without_tools_says_so_once(tmp_path: Path) -> None:
    out = kode_run("tools", "list", cwd=tmp_path)
    assert out.returncode == 0
    assert out.stdout == (
        "No tools are registered: name the module that defines them (-m MODULE), or add "
        "--builtin for kode's built-in tools.\n"
    )


# --- --deps --------------------------------------------------------------------------------


def test_tools_call_with_deps(tools: Path, tmp_path: Path, marks: Path) -> None:
    for spec in ("app_tools:make_settings", f"{tools}:make_settings"):
        out = kode_run(
            "tools", "call", "greet", '{"name": "Ada"}', "-m", str(tools), "--deps", spec,
            cwd=tmp_path, marks=marks,
        )  # fmt: skip
        assert out.returncode == 0, out.stderr
        block = json.loads(out.stdout)
        assert block["content"][0]["text"] == "bonjour Ada (deps made 1 time(s))"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("app_tools", "deps spec 'app_tools' is not MODULE:FACTORY: write it as MODULE:FACTORY"),
        ("app_tools:", "deps spec 'app_tools:' is not MODULE:FACTORY"),
        (":make_settings", "deps spec ':make_settings' is not MODULE:FACTORY"),
        (
            "no_such_app:make",
            "deps spec 'no_such_app:make': cannot import module 'no_such_app': "
            "ModuleNotFoundError: No module named 'no_such_app'",
        ),
        ("app_tools:nothing", "deps spec 'app_tools:nothing': 'app_tools' has no attribute "),
        (
            "app_tools:NOT_A_FUNCTION",
            "deps spec 'app_tools:NOT_A_FUNCTION': 'NOT_A_FUNCTION' is a int, not a callable",
        ),
        (
            "app_tools:needs_an_argument",
            "'needs_an_argument' requires arguments (name); the factory is called with none",
        ),
    ],
)
def test_bad_deps_specs_are_clear_errors(
    tools: Path, tmp_path: Path, marks: Path, spec: str, message: str
) -> None:
    out = kode_run(
        "tools", "call", "greet", '{"name": "Ada"}', "-m", str(tools), "--deps", spec,
        cwd=tmp_path, marks=marks,
    )  # fmt: skip
    assert out.returncode == 2
    assert out.stderr.startswith("kode: --deps: "), out.stderr
    assert message in out.stderr
    assert "Traceback" not in out.stderr


def test_run_with_deps(tools: Path, tmp_path: Path, marks: Path) -> None:
    model = turns(tmp_path, [{"name": "greet", "input": {"name": "Ada"}}], "Greeted.")
    out = kode_run(
        "run", str(template(tmp_path, ["greet"])), "Greet Ada", "--model", model,
        "-m", "app_tools", "--deps", "app_tools:make_settings", cwd=tmp_path, marks=marks,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "✓ greet" in out.stdout and "bonjour Ada (deps made 1 time(s))" in out.stdout


def test_run_without_the_deps_a_tool_needs_stops_before_the_model_is_asked(
    tools: Path, tmp_path: Path, marks: Path
) -> None:
    model = turns(tmp_path, [{"name": "greet", "input": {"name": "Ada"}}], "Greeted.")
    out = kode_run(
        "run", str(template(tmp_path, ["greet"])), "Greet Ada", "--model", model,
        "-m", "app_tools", cwd=tmp_path, marks=marks,
    )  # fmt: skip
    assert out.returncode == 2, out.stderr
    assert "→ greet" not in out.stdout
    assert "tool 'greet' needs deps of type Settings" in out.stderr
    assert "--deps module:factory" in out.stderr


# --- kode run: templates, the end of input, Ctrl-C ----------------------------------------


@pytest.mark.parametrize("entry", ["group:fs", "fs_read", "todo_*"])
def test_a_builtin_name_without_builtin_says_to_add_it(
    tools: Path, tmp_path: Path, marks: Path, entry: str
) -> None:
    model = turns(tmp_path, "Hello.")
    out = kode_run(
        "run", str(template(tmp_path, ["erase", entry])), "hi", "--model", model,
        "-m", str(tools), cwd=tmp_path, marks=marks,
    )  # fmt: skip
    assert out.returncode == 2
    assert out.stderr.rstrip().endswith(f"'{entry}' is built into kode: add --builtin."), out.stderr
    fixed = kode_run(
        "run", str(template(tmp_path, ["erase", entry])), "hi", "--model", model,
        "-m", str(tools), "--builtin", cwd=tmp_path, marks=marks,
    )  # fmt: skip
    assert fixed.returncode == 0, fixed.stderr


def test_a_name_that_is_nowhere_gets_no_builtin_hint(
    tools: Path, tmp_path: Path, marks: Path
) -> None:
    out = kode_run(
        "run", str(template(tmp_path, ["gret"])), "hi", "--model", turns(tmp_path, "Hello."),
        "-m", str(tools), cwd=tmp_path, marks=marks,
    )  # fmt: skip
    assert out.returncode == 2
    assert "did you mean 'greet'" in out.stderr and "--builtin" not in out.stderr


def test_end_of_input_at_an_approval_prompt_denies(
    tools: Path, tmp_path: Path, marks: Path
) -> None:
    model = turns(tmp_path, [{"name": "erase", "input": {"name": "n1"}}], "It was not erased.")
    out = kode_run(
        "run", str(template(tmp_path, ["erase"], mode="approval")), "Erase n1", "--model", model,
        "-m", str(tools), cwd=tmp_path, marks=marks,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr
    assert 'erase {"name": "n1"}\nAllow? [y]es once, [a]lways for erase, [e]dit' in out.stdout
    assert "(end of input: denied)" in out.stdout
    assert "✗ erase" in out.stdout
    assert out.stdout.rstrip().endswith("It was not erased.")
    assert not (marks / "erased-n1").exists()


def start(args: list[str], tmp_path: Path, marks: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        kode_cmd(*args),
        cwd=tmp_path,
        env=env(marks),
        stdin=subprocess.PIPE,  # kept open: nobody answers
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def finish(proc: subprocess.Popen[bytes], out: bytearray) -> tuple[int, str, str]:
    try:
        code = proc.wait(60)
    finally:
        if proc.poll() is None:  # pragma: no cover - the test failed: do not leave it running
            proc.kill()
            proc.wait()
    assert proc.stderr is not None and proc.stdin is not None
    err = proc.stderr.read().decode()
    proc.stdin.close()
    proc.stderr.close()
    return code, bytes(out).decode(), err


def collect(proc: subprocess.Popen[bytes]) -> bytearray:
    """Everything the process writes to stdout, read as it comes (prompts have no newline)."""
    out = bytearray()
    assert proc.stdout is not None
    stdout = proc.stdout

    def read() -> None:
        with stdout:
            while chunk := stdout.read1(4096):
                out.extend(chunk)

    threading.Thread(target=read, daemon=True).start()
    return out


def test_ctrl_c_interrupts_a_running_tool_cleanly(tools: Path, tmp_path: Path, marks: Path) -> None:
    model = turns(tmp_path, [{"name": "wait_forever", "input": {}}], "never said")
    proc = start(
        ["run", str(template(tmp_path, ["wait_forever"])), "Wait", "--model", model,
         "-m", str(tools)],
        tmp_path, marks,
    )  # fmt: skip
    out = collect(proc)
    assert wait_until((marks / "waiting").exists), "the tool never started"
    proc.send_signal(signal.SIGINT)
    code, stdout, stderr = finish(proc, out)
    assert code == 130, stderr
    assert stderr == "kode: interrupted\n"
    assert (marks / "cancelled").exists()  # the agent cancelled the tool: not a killed process
    assert "never said" not in stdout


def test_ctrl_c_at_an_approval_prompt(tools: Path, tmp_path: Path, marks: Path) -> None:
    model = turns(tmp_path, [{"name": "erase", "input": {"name": "n2"}}], "never said")
    proc = start(
        ["run", str(template(tmp_path, ["erase"], mode="approval")), "Erase n2",
         "--model", model, "-m", str(tools)],
        tmp_path, marks,
    )  # fmt: skip
    out = collect(proc)
    assert wait_until(lambda: b"[n]o (n NOTE: say why): " in out), bytes(out)
    proc.send_signal(signal.SIGINT)
    code, stdout, stderr = finish(proc, out)
    assert code == 130, stderr
    assert stderr == "kode: interrupted\n"
    assert not (marks / "erased-n2").exists()
    assert "never said" not in stdout


SLEEPY = '''
import os
import time
from pathlib import Path

from kode import define_tool

MARKS = Path(os.environ["KODE_TEST_MARKS"])


@define_tool
def sleepy() -> str:
    """Sleep in a worker thread (a sync tool), then say so."""
    (MARKS / "sleeping").touch()
    time.sleep(30)
    (MARKS / "woke").touch()
    return "woke"
'''


@pytest.mark.parametrize("presses", [1, 2])
def test_ctrl_c_ends_the_run_while_a_sync_tool_sleeps(
    presses: int, tmp_path: Path, marks: Path
) -> None:
    # A thread cannot be stopped: the process ends without waiting for it, and says so. A
    # second Ctrl-C while it ends prints no traceback.
    tools = tmp_path / "sleepy_tools.py"
    tools.write_text(SLEEPY, encoding="utf-8")
    model = turns(tmp_path, [{"name": "sleepy", "input": {}}], "never said")
    proc = start(
        ["run", str(template(tmp_path, ["sleepy"])), "Sleep", "--model", model,
         "-m", str(tools)],
        tmp_path, marks,
    )  # fmt: skip
    out = collect(proc)
    assert wait_until((marks / "sleeping").exists), "the tool never started"
    for _ in range(presses):
        proc.send_signal(signal.SIGINT)
        time.sleep(0.1)
    code, stdout, stderr = finish(proc, out)
    assert not (marks / "woke").exists()  # ended before the tool's thread did
    assert code == 130, stderr
    assert stderr == (
        "kode: interrupted (1 thread of a tool still running, abandoned: what it had done "
        "stays done)\n"
    )
    assert "never said" not in stdout


def test_a_missing_template_and_workspace_are_clear_errors(tmp_path: Path) -> None:
    missing = kode_run("run", "nothere.toml", "Hi", cwd=tmp_path)
    assert missing.returncode == 2
    assert missing.stderr == (
        "kode: the template nothere.toml does not exist: give the path of a .toml or .json "
        "agent template\n"
    )
    agent = template(tmp_path, [])
    for given, what in (("/nonexistent", "no such directory"), (str(agent), "not a directory")):
        bad = kode_run("run", str(agent), "Hi", "--workspace", given, cwd=tmp_path)
        assert bad.returncode == 2
        assert bad.stderr == (
            f"kode: --workspace {given}: {what}; give an existing directory for the tools to "
            "work in\n"
        )
