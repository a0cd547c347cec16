"""Deps reach served tools: ``ToolServer(deps=...)``, ``kode mcp serve --deps module:factory``."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import mcp.types as types
import pytest
from mcp import ClientSession
from mcp.shared.memory import create_client_server_memory_streams
from mcp_peers import served_over_stdio, write

from kode import ToolContext, define_tool
from kode.cli import main
from kode.mcp import ToolServer
from kode.registries.tool_registry import ToolRegistry

pytestmark = pytest.mark.anyio

APP = '''
"""An application whose tools need its settings."""
from dataclasses import dataclass

from kode import ToolContext, define_tool


@dataclass
class Settings:
    greeting: str
    made: int


MADE = 0


def make_settings() -> Settings:
    global MADE
    MADE += 1
    print("making the settings")  # over stdio this must not reach the protocol
    return Settings(greeting="hej", made=MADE)


@define_tool
def greet(name: str, ctx: ToolContext[Settings]) -> str:
    """Greet someone with the configured greeting."""
    return f"{ctx.deps.greeting} {name} (made {ctx.deps.made} time(s))"
'''


def text(result: types.CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))


@dataclass
class Counter:
    calls: list[str] = field(default_factory=list)


async def test_tool_server_gives_its_deps_to_every_call() -> None:
    registry = ToolRegistry()

    @define_tool(registry=registry)
    def record(word: str, ctx: ToolContext[Counter]) -> str:
        """Record a word in the shared counter."""
        ctx.deps.calls.append(word)
        return ",".join(ctx.deps.calls)

    counter = Counter()
    server = ToolServer(registry=registry, deps=counter)
    assert server.deps is counter
    async with create_client_server_memory_streams() as (client_streams, server_streams):
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.run, *server_streams)
            async with ClientSession(*client_streams) as session:
                await session.initialize()
                assert text(await session.call_tool("record", {"word": "a"})) == "a"
                assert text(await session.call_tool("record", {"word": "b"})) == "a,b"
            tg.cancel_scope.cancel()
    assert counter.calls == ["a", "b"]


async def test_kode_mcp_serve_makes_deps_once(tmp_path: Path) -> None:
    module = write(tmp_path / "greeting_app.py", APP)
    async with served_over_stdio(module, "--deps", "greeting_app:make_settings") as session:
        for name in ("Ada", "Bo"):
            result = await session.call_tool("greet", {"name": name})
            assert not result.is_error, text(result)
            assert text(result) == f"hej {name} (made 1 time(s))"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("greeting_app.make_settings", "is not MODULE:FACTORY: write it as MODULE:FACTORY"),
        ("no_such_app:make", "cannot import module 'no_such_app': ModuleNotFoundError"),
        ("greeting_app:Settings.greeting", "'greeting_app.Settings' has no attribute 'greeting'"),
        ("greeting_app:MADE", "'MADE' is a int, not a callable"),
    ],
)
def test_a_bad_deps_spec_stops_kode_mcp_serve(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    isolated_registry: ToolRegistry,
    spec: str,
    message: str,
) -> None:
    write(tmp_path / "greeting_app.py", APP)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        assert main(["mcp", "serve", "greeting_app.py", "--deps", spec]) == 2
    finally:
        sys.modules.pop("greeting_app", None)
    err = capsys.readouterr().err
    assert f"kode mcp serve: --deps: deps spec {spec!r}" in err
    assert message in err
