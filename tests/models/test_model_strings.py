"""Model strings: one reading for Agent.create (model_from) and the kode command (--model)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kode import Agent, AgentTemplate
from kode.models import (
    AnthropicModel,
    OpenAIModel,
    ScriptedModel,
    model_from,
    model_from_environment,
)
from kode.models.scripted import ScriptError
from kode.testing.providers import FakeProviderServer, Reply


@pytest.fixture
def turns(tmp_path: Path) -> Path:
    path = tmp_path / "turns.json"
    path.write_text(json.dumps(["Hello from a file."]))
    return path


# --- model_from: what Agent.create accepts ----------------------------------------------------


def test_provider_strings(turns: Path) -> None:
    anthropic = model_from("anthropic:claude-sonnet-4-6")
    assert isinstance(anthropic, AnthropicModel) and anthropic.name == "claude-sonnet-4-6"
    openai = model_from("openai:qwen3:8b")  # the provider is the text before the first colon
    assert isinstance(openai, OpenAIModel) and openai.name == "qwen3:8b"
    scripted = model_from(f"scripted:{turns}")
    assert isinstance(scripted, ScriptedModel)
    model = ScriptedModel([])
    assert model_from(model) is model


def test_agent_create_takes_a_scripted_file_as_the_command_line_does(turns: Path) -> None:
    agent = Agent.create(AgentTemplate(id="t", tools=[]), model=f"scripted:{turns}")
    assert agent.send_sync("hi").text == "Hello from a file."


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("gpt-4o", "model 'gpt-4o' names no provider: use 'anthropic:<model>', 'openai:<model>'"),
        ("mistral:large", "model 'mistral:large' names no provider"),
        ("openai:", "model 'openai:' names no model after 'openai:'"),
        ("anthropic: ", "names no model after 'anthropic:'"),
        ("", "model '' names no provider"),
    ],
)
def test_strings_that_name_no_model_are_refused(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        model_from(text)


def test_a_scripted_file_that_is_wrong_is_refused_at_once(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"turns": ["hi"]}))
    with pytest.raises(ScriptError):
        model_from(f"scripted:{bad}")
    with pytest.raises(ValueError, match="names no model after 'scripted:'"):
        model_from("scripted:")


@pytest.mark.parametrize("value", [42, None, object()])
def test_what_is_not_a_model_or_a_string_is_a_type_error(value: Any) -> None:
    with pytest.raises(TypeError, match="model must be a Model"):
        model_from(value)


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # the SDK on trio: see test_openai.py
async def test_an_openai_string_talks_to_openai_base_url(monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeProviderServer([Reply(content=["Hi from the server."])]) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # a local server needs none
        agent = Agent.create(AgentTemplate(id="t", tools=[]), model="openai:qwen3:8b")
        assert (await agent.send("hi")).text == "Hi from the server."
        await agent.model.aclose()  # type: ignore[attr-defined]
    assert server.bodies[0]["model"] == "qwen3:8b"


# --- model_from_environment: what --model means ------------------------------------------------

ANTHROPIC = {"ANTHROPIC_API_KEY": "sk-test"}
OPENAI_URL = {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}


@pytest.mark.parametrize(
    ("name", "environ", "kind", "model_name"),
    [
        # a provider prefix wins over the environment
        ("anthropic:claude-x", OPENAI_URL, AnthropicModel, "claude-x"),
        ("openai:gpt-x", ANTHROPIC, OpenAIModel, "gpt-x"),
        # a bare name, or a colon that is no provider, goes to the configured provider
        ("claude-x", ANTHROPIC, AnthropicModel, "claude-x"),
        ("qwen3:8b", OPENAI_URL, OpenAIModel, "qwen3:8b"),
        ("gpt-x", {**ANTHROPIC, **OPENAI_URL}, AnthropicModel, "gpt-x"),  # Anthropic first
        # no name: KODE_MODEL, else the provider's default
        (None, {**OPENAI_URL, "KODE_MODEL": "llama3"}, OpenAIModel, "llama3"),
        (None, {**OPENAI_URL, "KODE_MODEL": "anthropic:claude-y"}, AnthropicModel, "claude-y"),
        (None, ANTHROPIC, AnthropicModel, "claude-sonnet-4-6"),
        (None, {"OPENAI_API_KEY": "sk-test"}, OpenAIModel, "gpt-4o-mini"),
    ],
)
def test_what_the_command_line_model_means(
    name: str | None, environ: dict[str, str], kind: type, model_name: str
) -> None:
    model = model_from_environment(name, environ=environ)
    assert isinstance(model, kind)
    assert model.name == model_name  # type: ignore[attr-defined]


def test_without_a_provider_the_command_line_says_what_to_set() -> None:
    with pytest.raises(ValueError, match=r"^no model: set ANTHROPIC_API_KEY, or OPENAI_API_KEY"):
        model_from_environment(None, environ={})
    with pytest.raises(
        ValueError, match="model 'gpt-4o' names no provider and the environment configures none"
    ):
        model_from_environment("gpt-4o", environ={})


def _kode_run(tmp_path: Path, model: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    template = tmp_path / "t.json"
    template.write_text(json.dumps({"id": "t", "tools": []}))
    return subprocess.run(
        [sys.executable, "-m", "kode", "run", str(template), "hi", "--model", model],
        capture_output=True,
        text=True,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **env},
        timeout=60,
        cwd=tmp_path,
    )


def test_kode_run_sends_an_anthropic_model_to_anthropic_not_to_openai_base_url(
    tmp_path: Path,
) -> None:
    with FakeProviderServer([Reply(content=["from anthropic"]), Reply(content=["local"])]) as fake:
        # only an OpenAI-compatible server is configured, but the prefix names Anthropic:
        # the request goes to Anthropic's address (here the fake, through its own variable)
        env = {"OPENAI_BASE_URL": fake.openai_base_url, "ANTHROPIC_BASE_URL": fake.url}
        out = _kode_run(tmp_path, "anthropic:claude-x", {**env, "ANTHROPIC_API_KEY": "-"})
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == "from anthropic"
        local = _kode_run(tmp_path, "qwen3:8b", {"OPENAI_BASE_URL": fake.openai_base_url})
        assert local.returncode == 0, local.stderr
    paths = [r.path for r in fake.requests]
    assert paths == ["/v1/messages", "/v1/chat/completions"]
    assert fake.bodies[0]["model"] == "claude-x"
    assert fake.bodies[1]["model"] == "qwen3:8b"


def test_the_default_anthropic_model_is_not_one_the_sdk_calls_deprecated() -> None:
    # the SDK warns on every request to a model it lists as deprecated (an error under pytest)
    deprecated = pytest.importorskip("anthropic._data.deprecated_models").DEPRECATED_MODELS
    from kode.models.resolve import DEFAULT_MODELS

    assert DEFAULT_MODELS["anthropic"] not in deprecated
