"""Capture the tools/list of the published MCP servers the tests pin (tests/mcp/npm).

Run ``.venv/bin/python tests/registries/data/capture_mcp.py`` after ``npm ci --prefix
tests/mcp/npm``; it writes ``mcp_everything.json`` and ``mcp_filesystem.json`` beside itself,
each the server's tools as its ``tools/list`` answer gave them (name, description,
inputSchema). The retrieval test set (``tests/registries/test_search_recall.py``) reads them,
so the test runs without node.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

HERE = Path(__file__).resolve().parent
BIN = HERE.parent.parent / "mcp" / "npm" / "node_modules" / ".bin"


async def capture(command: list[str]) -> list[dict[str, object]]:
    params = StdioServerParameters(command=command[0], args=command[1:])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        listing = await session.list_tools()
    return [
        {"name": t.name, "description": t.description or "", "inputSchema": t.input_schema}
        for t in listing.tools
    ]


async def main() -> None:
    with tempfile.TemporaryDirectory() as root:
        servers = {
            "everything": [str(BIN / "mcp-server-everything"), "stdio"],
            "filesystem": [str(BIN / "mcp-server-filesystem"), root],
        }
        for name, command in servers.items():
            tools = await capture(command)
            out = HERE / f"mcp_{name}.json"
            out.write_text(json.dumps(tools, indent=1, ensure_ascii=False) + "\n")
            print(f"{out.name}: {len(tools)} tools")


if __name__ == "__main__":
    anyio.run(main)
