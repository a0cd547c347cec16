"""code_run served over MCP: a script calls the served tools that change nothing."""

from __future__ import annotations

import sys

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.shared.memory import create_client_server_memory_streams

from kode import define_tool
from kode.builtin.code import code_run
from kode.mcp.server import ToolServer
from kode.registries import ToolRegistry
from kode.testing.programs import requires_sandbox

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the sandbox is Linux's"),
    requires_sandbox(),
]


async def test_a_served_script_calls_read_tools_and_never_mutating_ones() -> None:
    registry = ToolRegistry()
    wiped: list[str] = []

    @define_tool(registry=registry, kind="read")
    def lookup(key: str) -> int:
        """Look up a number.

        Args:
            key: The key.
        """
        return len(key)

    @define_tool(registry=registry, kind="delete")
    def wipe(target: str) -> str:
        """Wipe something.

        Args:
            target: What to wipe.
        """
        wiped.append(target)
        return "wiped"

    registry.register(code_run, source="core")
    server = ToolServer(["lookup", "wipe", "code_run"], registry=registry)
    script = (
        "print(sum(int(lookup(key=k)) for k in ['a', 'bb']))\n"
        "try:\n"
        "    call_tool('wipe', {'target': 'db'})\n"
        "except ToolCallError as exc:\n"
        "    print(exc.error_type)\n"
    )
    async with create_client_server_memory_streams() as (client_streams, server_streams):
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.run, *server_streams)
            async with ClientSession(*client_streams) as session:
                await session.initialize()
                listed = {t.name: t for t in (await session.list_tools()).tools}
                shown = listed["code_run"].description or ""
                assert "def lookup(*, key: str) -> str:" in shown
                assert "def wipe" not in shown
                result = await session.call_tool("code_run", {"script": script})
            tg.cancel_scope.cancel()
    assert not result.is_error
    said = result.content[0]
    assert getattr(said, "text", "") == "3\npermission_denied"
    assert wiped == []
