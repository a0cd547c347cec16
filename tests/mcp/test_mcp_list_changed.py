"""Every connected client hears ``tools/list_changed``, whoever saw the change first.

A client that lists (or calls) tools before the server's next look at the registry makes the
server notice the change itself; the other clients must still be told. The servers here poll
once an hour, so only that path can tell them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

import anyio
import mcp.types as types
import pytest
from mcp import Client, ClientSession
from mcp.client.session import IncomingMessage
from mcp.shared.memory import create_client_server_memory_streams
from mcp_peers import HttpServer, free_port

from kode import define_tool
from kode.mcp import ToolServer
from kode.registries.tool_registry import ToolRegistry

pytestmark = pytest.mark.anyio

NEVER = "3600"  # the poll interval: no look at the registry during a test


class Listener:
    """One client's notifications: whether it heard that the tool list changed."""

    def __init__(self) -> None:
        self.changed = anyio.Event()

    async def on_message(self, message: IncomingMessage) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self.changed.set()


@asynccontextmanager
async def connected(server: ToolServer, listener: Listener) -> AsyncIterator[ClientSession]:
    """An official SDK client on its own in-memory connection to `server`."""
    async with create_client_server_memory_streams() as (client_streams, server_streams):
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.run, *server_streams)
            async with ClientSession(*client_streams, message_handler=listener.on_message) as s:
                await s.initialize()
                yield s
            tg.cancel_scope.cancel()


def make_registry() -> ToolRegistry:
    registry = ToolRegistry()

    @define_tool(registry=registry)
    def first(word: str) -> str:
        """Repeat a word."""
        return word

    return registry


def define_later(registry: ToolRegistry) -> None:
    @define_tool(registry=registry)
    def later(word: str) -> str:
        """A tool defined after the clients connected."""
        return word.upper()


@pytest.mark.parametrize("first_look", ["list", "call"])
async def test_every_client_hears_of_a_change_another_client_saw_first(first_look: str) -> None:
    registry = make_registry()
    server = ToolServer(registry=registry, poll_interval=float(NEVER))
    seer, other = Listener(), Listener()
    async with AsyncExitStack() as stack:
        a = await stack.enter_async_context(connected(server, seer))
        b = await stack.enter_async_context(connected(server, other))
        assert [t.name for t in (await b.list_tools()).tools] == ["first"]
        define_later(registry)
        if first_look == "list":
            assert [t.name for t in (await a.list_tools()).tools] == ["first", "later"]
        else:
            result = await a.call_tool("later", {"word": "hi"})
            assert not result.is_error
            assert [c.text for c in result.content if isinstance(c, types.TextContent)] == ["HI"]
        with anyio.fail_after(10):
            await other.changed.wait()
        assert [t.name for t in (await b.list_tools()).tools] == ["first", "later"]


@pytest.fixture
def slow_polling_http_server(kode_tools: Path) -> Iterator[str]:
    server = HttpServer(kode_tools, free_port(), "--poll-interval", NEVER)
    try:
        yield server.start()
    finally:
        server.stop()


@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # see test_mcp_server.py
async def test_a_listening_client_hears_of_a_change_another_client_listed(
    slow_polling_http_server: str,
) -> None:
    url = slow_polling_http_server
    async with Client(url) as seer, Client(url) as listener:
        async with listener.listen(tools_list_changed=True) as subscription:
            await seer.call_tool("define_more", {})
            names = [t.name for t in (await seer.list_tools(cache_mode="refresh")).tools]
            assert "later" in names
            with anyio.fail_after(10):
                async for _event in subscription:
                    break
        names = [t.name for t in (await listener.list_tools(cache_mode="refresh")).tools]
        assert "later" in names
