"""The pytest plugin (entry point ``pytest11: kode``): fixtures for testing tools and agents.

- `isolated_registry`: the global registry, emptied for one test and restored after it, so
  ``@define_tool`` inside a test never leaks into another;
- `isolated_templates`: the same for the global agent template registry;
- `scripted_model`: a factory of `ScriptedModel` that also checks, after the test, that every
  scripted turn was used (a script longer than the conversation is usually a wrong test);
- `tool_context`: a standalone `ToolContext` with a workspace in the test's ``tmp_path``
  and no deps (set ``tool_context.deps``);
- `postgres_server`: a throwaway PostgreSQL cluster for the whole test session
  (`kode.testing.postgres.PostgresServer`; the test is skipped where PostgreSQL's server
  binaries are not installed), and `postgres_url`: a fresh, empty database in it per test.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from kode.registries import ToolRegistry, registry
from kode.testing.helpers import call_tool
from kode.testing.postgres import PostgresServer, PostgresUnavailable
from kode.tools.context import ToolContext
from kode.tools.workspace import FilePool, Workspace

__all__ = [
    "call_tool",
    "isolated_registry",
    "isolated_templates",
    "postgres_server",
    "postgres_url",
    "scripted_model",
    "tool_context",
]


@pytest.fixture
def isolated_registry() -> Iterator[ToolRegistry]:
    """The global registry, emptied for this test and restored after it."""
    with registry.isolated():
        yield registry


@pytest.fixture
def isolated_templates() -> Iterator[Any]:
    """The global agent template registry, emptied for this test and restored after it."""
    from kode.agent import templates

    with templates.isolated():
        yield templates


@pytest.fixture
def scripted_model() -> Iterator[Callable[..., Any]]:
    """Make `ScriptedModel`s: ``scripted_model(["hi"], strict=True)``.

    With ``strict=True`` (the default) the test fails if a model still has turns left at the
    end of the test.
    """
    from kode.models import ScriptedModel

    made: list[tuple[ScriptedModel, bool]] = []

    def make(turns: Sequence[Any], *, name: str = "scripted", strict: bool = True) -> Any:
        model = ScriptedModel(turns, name=name)
        made.append((model, strict))
        return model

    yield make
    for model, strict in made:
        if strict and model.turns:
            pytest.fail(
                f"ScriptedModel {model.name!r} has {len(model.turns)} unused turn(s): the agent "
                "stopped earlier than the script expected",
                pytrace=False,
            )


@pytest.fixture
def tool_context(tmp_path: Path) -> ToolContext[Any]:
    """A standalone `ToolContext` whose workspace is the test's ``tmp_path``.

    It has no deps: set ``tool_context.deps`` for a tool whose context is
    ``ToolContext[Deps]``.
    """
    return ToolContext(
        tool_call_id="toolu_test",
        workspace=Workspace(root=tmp_path),
        files=FilePool(),
    )


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A PostgreSQL cluster for the test session, on a free loopback port (trust auth).

    Skips the test, saying why, where PostgreSQL's server binaries are not installed.
    """
    try:
        server = PostgresServer().start()
    except PostgresUnavailable as exc:
        pytest.skip(str(exc))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> Iterator[str]:
    """The URL of a fresh, empty database in `postgres_server`, dropped after the test."""
    url = postgres_server.create_database()
    try:
        yield url
    finally:
        postgres_server.drop_database(url.rsplit("/", 1)[1])
