"""``kode run`` shows something before the model's first reply, and starts its SDK early.

The status line (``--status``, or by default when stderr is a terminal) says what was loaded;
the provider SDK's import starts in a thread as soon as ``--model`` is read, while the tools
and the template load. Each check runs a real ``python -m kode`` subprocess; the provider is a
loopback fake (`FakeProviderServer`).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from test_cli_run import env, kode_cmd, kode_run, template, turns

from kode.testing.providers import FakeProviderServer, Reply

STATUS = "kode: agent 'cli-test' with {count}; asking {model}\n"


def test_status_says_what_was_loaded_before_the_reply(tmp_path: Path) -> None:
    agent = template(tmp_path, ["fs_read", "fs_write"])
    model = turns(tmp_path, "Hello.")
    shown = kode_run(
        "run", str(agent), "Hi", "--builtin", "--status", "--model", model, cwd=tmp_path
    )
    assert shown.returncode == 0, shown.stderr
    assert shown.stderr == STATUS.format(count="2 tools", model=model)
    assert shown.stdout == "Hello.\n"


def test_status_is_off_by_default_when_stderr_is_not_a_terminal(tmp_path: Path) -> None:
    agent = template(tmp_path, [])
    model = turns(tmp_path, "Hello.")
    for flags in ((), ("--no-status",)):
        quiet = kode_run("run", str(agent), "Hi", *flags, "--model", model, cwd=tmp_path)
        assert quiet.returncode == 0, quiet.stderr
        assert (quiet.stdout, quiet.stderr) == ("Hello.\n", "")


def test_status_is_on_by_default_when_stderr_is_a_terminal(tmp_path: Path) -> None:
    agent = template(tmp_path, [])
    model = turns(tmp_path, "Hello.")
    controller, terminal = os.openpty()
    try:
        with os.fdopen(controller, "rb", buffering=0) as screen:
            for flags, expected in (((), True), (("--no-status",), False)):
                done = subprocess.run(
                    kode_cmd("run", str(agent), "Hi", *flags, "--model", model),
                    stdout=subprocess.PIPE,
                    stderr=terminal,
                    stdin=subprocess.DEVNULL,
                    cwd=tmp_path,
                    env=env(),
                    timeout=120,
                    check=False,
                )
                assert done.returncode == 0
                assert done.stdout == b"Hello.\n"
                shown = _read_available(screen).decode().replace("\r\n", "\n")
                line = STATUS.format(count="0 tools", model=model)
                assert shown == (line if expected else "")
    finally:
        os.close(terminal)


def _read_available(screen: object) -> bytes:
    import select

    out = b""
    while select.select([screen], [], [], 0.2)[0]:
        chunk = screen.read(4096)  # type: ignore[attr-defined]
        if not chunk:
            break
        out += chunk
    return out


WAITS_FOR_THE_SDK = """
import os, sys, time
from pathlib import Path

from kode import define_tool

# Loaded after --model was read: the provider's SDK is being imported meanwhile, in a thread.
deadline = time.monotonic() + 20
while "{sdk}" not in sys.modules and time.monotonic() < deadline:
    time.sleep(0.01)
Path(os.environ["KODE_TEST_MARKS"], "sdk-seen-while-loading").write_text(
    str("{sdk}" in sys.modules)
)


@define_tool
def nothing() -> str:
    \"\"\"Do nothing.\"\"\"
    return ""
"""


@pytest.mark.parametrize(
    ("provider", "sdk"),
    [
        ("anthropic", "anthropic"),
        ("openai", "openai"),
        ("openai-responses", "openai"),
        ("google", "google.genai"),
    ],
)
def test_the_sdk_import_starts_while_the_tools_load(
    tmp_path: Path, provider: str, sdk: str
) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    module = tmp_path / "slow_tools.py"
    module.write_text(textwrap.dedent(WAITS_FOR_THE_SDK.format(sdk=sdk)), encoding="utf-8")
    agent = template(tmp_path, ["nothing"])
    with FakeProviderServer([Reply(content=["Hello from the provider."])]) as server:
        done = kode_run(
            "run",
            str(agent),
            "Hi",
            "-m",
            str(module),
            "--status",
            "--model",
            f"{provider}:bench-model",
            cwd=tmp_path,
            marks=marks,
            ANTHROPIC_BASE_URL=server.url,
            ANTHROPIC_API_KEY="-",
            OPENAI_BASE_URL=server.openai_base_url,
            OPENAI_API_KEY="-",
            GOOGLE_GEMINI_BASE_URL=server.url,
            GEMINI_API_KEY="-",
        )
    assert done.returncode == 0, done.stderr
    assert (marks / "sdk-seen-while-loading").read_text() == "True"
    assert done.stderr == STATUS.format(count="1 tool", model=f"{provider}:bench-model")
    assert done.stdout == "Hello from the provider.\n"


def test_a_wrong_model_is_still_reported_after_a_missing_template(tmp_path: Path) -> None:
    # The model is read first now (to start its SDK early); its error keeps its place.
    missing = kode_run("run", "nothere.toml", "Hi", "--model", "nope:x", cwd=tmp_path)
    assert missing.returncode == 2
    assert missing.stderr.startswith("kode: the template nothere.toml does not exist")
    agent = template(tmp_path, [])
    wrong = kode_run("run", str(agent), "Hi", "--model", "scripted:", cwd=tmp_path)
    assert wrong.returncode == 2
    assert wrong.stderr.startswith("kode: --model: ")


def test_import_soon_starts_each_sdk_once_in_its_own_thread() -> None:
    code = """
        import json, sys, threading
        from kode.models import model_from
        from kode.models._sdk_import import import_soon

        class Watch:
            thread = None
            def find_spec(self, name, path=None, target=None):
                if name.startswith("anthropic.") and Watch.thread is None:
                    Watch.thread = threading.current_thread().name
                return None

        sys.meta_path.insert(0, Watch())
        model = model_from("anthropic:claude-x")
        first, again = import_soon(model), import_soon(model_from("anthropic:claude-y"))
        for thread in threading.enumerate():
            if thread.name == "kode-sdk-import":
                thread.join(120)
        scripted = import_soon(object())
        print(json.dumps([first, again, scripted, Watch.thread, "anthropic" in sys.modules]))
    """
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    assert result.stdout.strip() == '[true, false, false, "kode-sdk-import", true]'
