"""`kode mcp serve` as a real subprocess, driven by the official MCP client (stdio and HTTP)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import anyio.to_thread
import mcp.types as types
import pytest
from mcp import Client, ClientSession, StdioServerParameters, stdio_client
from mcp.client.session import IncomingMessage
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_peers import serve_command, subprocess_env, wait_until

pytestmark = pytest.mark.anyio

# The SDK's streamable HTTP client leaves httpx2 response generators unfinished; trio reports
# each one as a ResourceWarning when it is garbage collected, possibly during a later test.
# The client works on trio otherwise; these tests run it on asyncio only.
http_client_on_asyncio = pytest.mark.parametrize("anyio_backend", ["asyncio"])


class Inbox:
    """What the server sent besides results: log messages and other notifications."""

    def __init__(self) -> None:
        self.logs: list[types.LoggingMessageNotificationParams] = []
        self.messages: list[IncomingMessage] = []
        self.list_changed = anyio.Event()

    async def on_log(self, params: types.LoggingMessageNotificationParams) -> None:
        self.logs.append(params)

    async def on_message(self, message: IncomingMessage) -> None:
        self.messages.append(message)
        if isinstance(message, types.ToolListChangedNotification):
            self.list_changed.set()


@asynccontextmanager
async def stdio_session(module: Path, inbox: Inbox, *extra: str) -> AsyncIterator[ClientSession]:
    command = serve_command(module, *extra)
    params = StdioServerParameters(
        command=command[0], args=command[1:], cwd=str(module.parent), env=subprocess_env()
    )
    async with (
        stdio_client(params) as (read, write),
        ClientSession(
            read, write, logging_callback=inbox.on_log, message_handler=inbox.on_message
        ) as session,
    ):
        await session.initialize()
        yield session


@asynccontextmanager
async def http_session(url: str, inbox: Inbox) -> AsyncIterator[ClientSession]:
    async with (
        streamable_http_client(url) as (read, write),
        ClientSession(
            read, write, logging_callback=inbox.on_log, message_handler=inbox.on_message
        ) as session,
    ):
        await session.initialize()
        yield session


def text(result: types.CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))


async def appears(path: Path) -> bool:
    """Whether `path` exists within 10 seconds (a server touches it)."""
    return await anyio.to_thread.run_sync(wait_until, path.exists)


# --- what a client sees ------------------------------------------------------------------------


async def check_listing(session: ClientSession) -> None:
    capabilities = session.server_capabilities
    assert capabilities is not None and capabilities.tools is not None
    assert capabilities.tools.list_changed is True
    assert capabilities.logging is not None
    listed = {t.name: t for t in (await session.list_tools()).tools}
    assert {"weather", "add", "remove", "boom", "count", "define_more"} <= set(listed)
    weather = listed["weather"]
    assert weather.description == "Get the weather in a city."
    assert weather.input_schema == {
        "type": "object",
        "properties": {"city": {"type": "string", "description": "The city's name."}},
        "required": ["city"],
        "additionalProperties": False,
    }
    assert weather.output_schema == {
        "type": "object",
        "properties": {"city": {"type": "string"}, "celsius": {"type": "number"}},
        "required": ["city", "celsius"],
    }
    assert weather.annotations == types.ToolAnnotations(read_only_hint=True)
    # a return type that is not an object: wrapped, as MCP wants an object schema
    assert listed["add"].output_schema == {
        "type": "object",
        "properties": {"result": {"type": "integer"}},
        "required": ["result"],
    }
    assert listed["add"].annotations is None  # kind "other": no claims either way
    assert listed["remove"].annotations == types.ToolAnnotations(
        read_only_hint=False, destructive_hint=True
    )
    assert listed["remove"].output_schema is None  # returns str
    assert listed["boom"].annotations == types.ToolAnnotations(
        read_only_hint=True, open_world_hint=True
    )


async def check_calls(session: ClientSession) -> None:
    result = await session.call_tool("weather", {"city": "Oslo"})
    assert not result.is_error
    assert result.structured_content == {"city": "Oslo", "celsius": 21.5}
    assert text(result) == '{"city":"Oslo","celsius":21.5}'

    added = await session.call_tool("add", {"a": 2, "b": 3})
    assert added.structured_content == {"result": 5} and text(added) == "5"

    # every failure is an isError result with the text kode gives a model
    invalid = await session.call_tool("add", {"a": "two"})
    assert invalid.is_error and invalid.structured_content is None
    assert text(invalid) == (
        "Invalid arguments for tool 'add': 'a' should be a valid integer, unable to parse "
        "string as an integer, got \"two\"; 'b' is required but missing. Fix the arguments and "
        "call the tool again."
    )
    refused = await session.call_tool("remove", {"path": "/etc"})
    assert refused.is_error and text(refused) == "/etc is protected; remove something else."
    crashed = await session.call_tool("boom", {})
    assert crashed.is_error
    assert text(crashed) == "Tool 'boom' failed: ValueError: the flux capacitor is empty"
    slow = await session.call_tool("too_slow", {})
    assert slow.is_error and text(slow) == "Tool 'too_slow' timed out after 0.2 s."

    # an unknown tool is a protocol error (as MCP requires), with kode's message
    with pytest.raises(MCPError) as caught:
        await session.call_tool("ad", {})
    assert caught.value.code == types.INVALID_PARAMS
    assert caught.value.message.startswith("Tool 'ad' is not available. Did you mean 'add'?")

    # what a tool prints goes to stderr, not into the protocol
    assert text(await session.call_tool("chatty", {})) == "said hello"
    assert text(await session.call_tool("add", {"a": 1, "b": 1})) == "2"


async def check_progress_and_logs(session: ClientSession, inbox: Inbox) -> None:
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress_value: float, total: float | None, message: str | None) -> None:
        progress.append((progress_value, total, message))

    result = await session.call_tool("count", {"n": 3}, progress_callback=on_progress)
    assert text(result) == "counted to 3"
    assert progress == [(0.0, 1.0, "at 0"), (1 / 3, 1.0, "at 1"), (2 / 3, 1.0, "at 2")]
    mine = [(log.level, log.logger, log.data) for log in inbox.logs if log.logger == "count"]
    assert mine == [
        ("info", "count", "counted 0"),
        ("info", "count", "counted 1"),
        ("info", "count", "counted 2"),
        ("info", "count", {"event": "finished", "data": {"n": 3}}),
    ]
    # a client that asks for warnings and worse gets no info messages
    await session.send_request(
        types.SetLevelRequest(params=types.SetLevelRequestParams(level="warning")),
        types.EmptyResult,
    )
    before = len(inbox.logs)
    assert text(await session.call_tool("count", {"n": 2})) == "counted to 2"
    assert len(inbox.logs) == before


async def test_stdio_list_call_errors_progress_and_logs(kode_tools: Path) -> None:
    inbox = Inbox()
    async with stdio_session(kode_tools, inbox) as session:
        await check_listing(session)
        await check_calls(session)
        await check_progress_and_logs(session, inbox)


@http_client_on_asyncio
async def test_http_list_call_errors_progress_and_logs(http_server: str) -> None:
    inbox = Inbox()
    async with http_session(http_server, inbox) as session:
        await check_listing(session)
        await check_calls(session)
        await check_progress_and_logs(session, inbox)


async def test_serving_only_some_tools(kode_tools: Path) -> None:
    inbox = Inbox()
    async with stdio_session(kode_tools, inbox, "--tools", "wea*", "add") as session:
        names = [t.name for t in (await session.list_tools()).tools]
        assert names == ["add", "weather"]
        with pytest.raises(MCPError, match="Tool 'remove' is not available"):
            await session.call_tool("remove", {"path": "x"})


# --- cancellation ----------------------------------------------------------------------------


async def check_cancellation(session: ClientSession, marks: Path) -> None:
    # The client gives up (a cancelled scope): the SDK sends notifications/cancelled.
    with anyio.move_on_after(0.5):
        await session.call_tool("wait_in_thread", {})
    assert await appears(marks / "thread.started")
    assert await appears(marks / "thread.cancelled"), "the sync tool never saw ctx.cancelled"
    with anyio.move_on_after(0.5):
        await session.call_tool("wait_async", {})
    assert await appears(marks / "async.started")
    assert await appears(marks / "async.cancelled"), "the async tool was not cancelled"
    # the connection is still fine
    assert text(await session.call_tool("add", {"a": 1, "b": 2})) == "3"


async def test_stdio_cancellation_reaches_the_tool(kode_tools: Path, marks: Path) -> None:
    async with stdio_session(kode_tools, Inbox()) as session:
        await check_cancellation(session, marks)


@http_client_on_asyncio
async def test_http_cancellation_reaches_the_tool(http_server: str, marks: Path) -> None:
    async with http_session(http_server, Inbox()) as session:
        await check_cancellation(session, marks)


# --- tools defined later -----------------------------------------------------------------------


async def check_list_changed(session: ClientSession, inbox: Inbox) -> None:
    before = [t.name for t in (await session.list_tools()).tools]
    assert "later" not in before
    assert text(await session.call_tool("define_more", {})) == "defined"
    with anyio.fail_after(10):
        await inbox.list_changed.wait()
    after = [t.name for t in (await session.list_tools()).tools]
    assert set(after) - set(before) == {"later"}
    assert text(await session.call_tool("later", {"word": "hi"})) == "HI"


async def test_stdio_tools_defined_later_are_announced(kode_tools: Path) -> None:
    inbox = Inbox()
    async with stdio_session(kode_tools, inbox) as session:
        await check_list_changed(session, inbox)


@http_client_on_asyncio
async def test_http_tools_defined_later_are_announced(http_server: str) -> None:
    inbox = Inbox()
    async with http_session(http_server, inbox) as session:
        await check_list_changed(session, inbox)


@http_client_on_asyncio
async def test_http_2026_client_lists_calls_and_listens(http_server: str) -> None:
    # The SDK's Client negotiates the 2026-07-28 protocol: no handshake, list changes arrive
    # on a subscriptions/listen stream.
    async with Client(http_server) as client:
        assert client.protocol_version == "2026-07-28"
        names = [t.name for t in (await client.list_tools()).tools]
        assert "weather" in names and "later" not in names
        result = await client.call_tool("weather", {"city": "Rome"})
        assert result.structured_content == {"city": "Rome", "celsius": 21.5}
        async with client.listen(tools_list_changed=True) as subscription:
            await client.call_tool("define_more", {})
            with anyio.fail_after(10):
                async for _event in subscription:
                    break
        names = [t.name for t in (await client.list_tools(cache_mode="refresh")).tools]
        assert "later" in names
