"""The longest message kode reads from an MCP server (``max_message_bytes``).

A real stdio server (the official SDK's ``MCPServer``) answers a resource read with more than
the bound: the call fails at once with an error naming the bound, the rest of the line is
read without being kept, and the same connection then answers the next call. `BoundedLines`
itself is fed a real byte stream, for the other JSON-RPC encoders' order (the id last) and
for messages that answer nothing.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import pytest
from mcp.shared.exceptions import MCPError

from kode.mcp import connect
from kode.mcp._limits import BoundedLines, reading_with, too_long

pytestmark = pytest.mark.anyio

SERVER = '''
import os
from mcp.server.mcpserver import MCPServer

server = MCPServer("big")


@server.resource("big://text/{size}")
def big(size: str) -> str:
    """A text of `size` characters."""
    return "x" * int(size)


if __name__ == "__main__":
    server.run()
'''


@pytest.fixture
def big_server(tmp_path: Path) -> list[str]:
    path = tmp_path / "big_server.py"
    path.write_text(SERVER)
    return [sys.executable, str(path)]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the connection runs in a loop of its own either way


async def test_an_answer_over_the_bound_fails_its_call_and_the_connection_goes_on(
    big_server: list[str],
) -> None:
    async with connect("big", command=big_server, max_message_bytes=2**20) as server:
        with pytest.raises(MCPError) as caught:
            await server.read_resource("big://text/8000000")
        assert "longer than max_message_bytes (1,048,576)" in str(caught.value)
        assert "pass a larger max_message_bytes to connect()" in str(caught.value)
        small = await server.read_resource("big://text/1000")
        assert small.text.endswith("x" * 1000)


async def test_an_answer_under_the_bound_is_read_whole(big_server: list[str]) -> None:
    async with connect("big", command=big_server, max_message_bytes=4 * 2**20) as server:
        result = await server.read_resource("big://text/3000000")
    assert result.text.endswith("\n" + "x" * 3_000_000)


def test_the_bound_must_be_a_positive_whole_number(big_server: list[str]) -> None:
    with pytest.raises(ValueError, match="max_message_bytes must be a whole number"):
        connect("big", command=big_server, max_message_bytes=0)


async def lines_read(data: bytes, limit: int) -> str:
    """What the SDK's stdio reader gets from `data` through `BoundedLines`."""
    send, receive = anyio.create_memory_object_stream[bytes](len(data) // 1000 + 1)
    token = reading_with(limit)
    try:
        stream = BoundedLines(receive)
    finally:
        from kode.mcp._limits import done_reading

        done_reading(token)
    async with send:
        for start in range(0, len(data), 1000):
            await send.send(data[start : start + 1000])
    async with stream:
        return "".join([chunk async for chunk in stream])


async def test_the_id_is_found_first_or_last_and_other_lines_pass() -> None:
    first = json.dumps({"jsonrpc": "2.0", "id": 7, "result": {"text": "y" * 50_000}})
    last = json.dumps({"result": {"text": "y" * 50_000}, "jsonrpc": "2.0", "id": "req-8"})
    note = json.dumps({"jsonrpc": "2.0", "method": "notifications/message", "p": "z" * 50_000})
    fine = json.dumps({"jsonrpc": "2.0", "id": 9, "result": {}})
    data = "\n".join([first, fine, last, note, fine, ""]).encode()
    lines = (await lines_read(data, 10_000)).splitlines()
    answers = [json.loads(line) for line in lines]
    assert [a.get("id") for a in answers] == [7, 9, "req-8", 9]
    assert answers[0]["error"]["message"] == too_long(10_000)
    assert answers[2]["error"]["message"] == too_long(10_000)
    assert answers[1] == answers[3] == json.loads(fine)


async def test_without_a_bound_the_stream_is_the_sdk_s() -> None:
    send, receive = anyio.create_memory_object_stream[bytes](10)
    stream = BoundedLines(receive)
    async with send:
        await send.send(b"abc")
    async with stream:
        assert [chunk async for chunk in stream] == ["abc"]
