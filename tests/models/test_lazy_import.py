"""Provider SDKs are optional and slow to import: kode imports one when a request needs it.

Importing kode.models or kode.cli, and making a model (by class or by model string), imports
no SDK; the first request imports it in a worker thread, not on the event loop. Each check runs
in a fresh interpreter, where nothing has imported an SDK yet.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kode.extras import install_hint

SDKS = ("anthropic", "openai", "google.genai", "httpx2")


def run(code: str) -> str:
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return result.stdout.strip()


def test_importing_kode_models_and_the_cli_imports_no_sdk() -> None:
    code = f"""
        import sys, json, kode.models, kode.models.translate, kode.cli
        print(json.dumps(sorted(m for m in {SDKS!r} if m in sys.modules)))
    """
    assert json.loads(run(code)) == []


@pytest.mark.parametrize(
    "argv", [["--help"], ["--version"], ["schedules", "--help"], ["run", "--help"]]
)
def test_help_imports_no_sdk_and_no_tool_machinery(argv: list[str]) -> None:
    # Every command group adds its parser, nothing more: `kode --help` stays cheap.
    code = f"""
        import contextlib, io, json, sys, kode.cli
        with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
            kode.cli.main({argv!r})
        heavy = (*{SDKS!r}, "pydantic", "kode.registries", "mcp", "dbos")
        print(json.dumps(sorted(m for m in heavy if m in sys.modules)))
    """
    assert json.loads(run(code)) == []


@pytest.mark.parametrize(
    "spec", ["anthropic:claude-x", "openai:gpt-x", "openai-responses:gpt-x", "google:gemini-x"]
)
def test_making_a_model_imports_no_sdk(spec: str) -> None:
    code = f"""
        import sys, json
        from kode.models import model_from, AnthropicModel, OpenAIModel, GeminiModel
        model = model_from({spec!r})
        print(json.dumps([type(model).__name__, sorted(m for m in {SDKS!r} if m in sys.modules)]))
    """
    kind, loaded = json.loads(run(code))
    assert kind.endswith("Model") and loaded == []


@pytest.mark.parametrize(
    ("spec", "sdk"),
    [
        ("anthropic:claude-x", "anthropic"),
        ("openai:gpt-x", "openai"),
        ("openai-responses:gpt-x", "openai"),
        ("google:gemini-x", "google.genai"),
    ],
)
def test_the_first_request_imports_the_sdk_in_a_worker_thread(spec: str, sdk: str) -> None:
    # An import hook records the thread that first imports a module of the SDK (making the
    # model only asks whether the SDK is there: no submodule is looked for); the model talks to a
    # loopback fake of the provider.
    code = f"""
        import json, os, sys, threading

        class Watch:
            thread = None
            def find_spec(self, name, path=None, target=None):
                if name.startswith({sdk!r} + ".") and Watch.thread is None:
                    Watch.thread = threading.current_thread().name
                return None

        sys.meta_path.insert(0, Watch())

        import anyio
        from kode.models import Message, ModelRequest, model_from
        from kode.testing.providers import FakeProviderServer, Reply

        with FakeProviderServer([Reply(content=["hello"])]) as server:
            os.environ.update(
                ANTHROPIC_BASE_URL=server.url, ANTHROPIC_API_KEY="-",
                OPENAI_BASE_URL=server.openai_base_url, OPENAI_API_KEY="-",
                GOOGLE_GEMINI_BASE_URL=server.url, GEMINI_API_KEY="-",
            )
            model = model_from({spec!r})
            made = {sdk!r} in sys.modules
            request = ModelRequest(system="", messages=[Message.user("hi")], tools=[])

            async def main():
                async with model:
                    return [event async for event in model.stream(request)]

            events = anyio.run(main)
        print(json.dumps([made, Watch.thread, events[-1].message.text]))
    """
    made, thread, text = json.loads(run(code))
    assert made is False
    assert thread not in (None, "MainThread")
    assert text == "hello"


@pytest.mark.parametrize(
    ("module", "hidden", "extra"),
    [
        ("anthropic", "anthropic", "anthropic"),
        ("openai", "openai", "openai"),
        ("openai_responses", "openai", "openai"),
        ("gemini", "google.genai", "google"),
    ],
)
def test_a_missing_sdk_says_which_extra_to_install(module: str, hidden: str, extra: str) -> None:
    code = f"""
        import sys; sys.modules[{hidden!r}] = None
        try:
            import kode.models.{module}
        except ImportError as exc:
            print(exc)
    """
    said = run(code)
    assert install_hint(extra) in said and hidden in said


def test_unknown_attribute() -> None:
    import kode.models

    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        kode.models.Nope  # noqa: B018


def test_an_sdk_that_appeared_elsewhere_since_the_model_was_made_is_not_run(
    tmp_path: Path,
) -> None:
    # The SDK is imported later than before (at the first request): a module of its name that
    # appeared meanwhile in a directory ahead of it on sys.path must not run in its place.
    installed, workspace = tmp_path / "installed", tmp_path / "workspace"
    installed.mkdir()
    workspace.mkdir()
    (installed / "kode_fake_sdk.py").write_text("NAME = 'installed'\n")
    code = f"""
        import sys
        from pathlib import Path
        sys.path.insert(0, {str(installed)!r})
        from kode.models._sdk_import import LazySDK
        sdk = LazySDK("kode_fake_sdk", needed_by="FakeModel", extra="fake")
        Path({str(workspace)!r}, "kode_fake_sdk.py").write_text(
            "from pathlib import Path; Path({str(tmp_path / "ran")!r}).touch()\\n"
        )
        sys.path.insert(0, {str(workspace)!r})
        try:
            sdk.NAME
        except ImportError as exc:
            print(exc)
    """
    said = run(code)
    assert "is now found at" in said and str(workspace) in said
    assert not (tmp_path / "ran").exists()
    same = f"""
        import sys
        sys.path.insert(0, {str(installed)!r})
        from kode.models._sdk_import import LazySDK
        print(LazySDK("kode_fake_sdk", needed_by="FakeModel", extra="fake").NAME)
    """
    assert run(same) == "installed"
