"""kode tools over MCP, both ways: serve them to an MCP client, and use an MCP server's tools.

Offline, in three steps:

1. `kode mcp serve examples/mcp_tools.py` runs as a subprocess, exactly as Claude Desktop or an
   IDE would start it, and the official MCP client lists its tools and calls them;
2. `kode.mcp.connect` imports the same server back into kode as ``mcp__notes__*`` tools;
3. a kode agent (a scripted model plays the model's part) uses them, asking for approval where
   the trust rule says so.

Run it with:                python examples/mcp_serve.py
Serve the tools yourself:   python examples/mcp_serve.py --serve          (stdio)
                            python examples/mcp_serve.py --serve --http 8000
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import mcp.types as types
from mcp import ClientSession, StdioServerParameters, stdio_client

import kode.mcp
from kode import Agent, AgentTemplate, ToolRegistry
from kode.agent import AgentEvent, ApprovalDecision, ApprovalRequest, ToolEnd, ToolProgress
from kode.models import ScriptedModel, tool_use

HERE = Path(__file__).resolve().parent
TOOLS = HERE / "mcp_tools.py"
SERVE = [sys.executable, "-m", "kode.cli", "mcp", "serve", str(TOOLS)]


def hints(tool: types.Tool) -> str:
    a = tool.annotations
    if a is None:
        return "no hints"
    if a.read_only_hint:
        return "read-only"
    return "destructive" if a.destructive_hint else "changes things"


async def as_an_mcp_client() -> None:
    print("1. An MCP client starts the server: kode mcp serve examples/mcp_tools.py")
    params = StdioServerParameters(command=SERVE[0], args=SERVE[1:])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        init = await session.initialize()
        print(f"   connected to {init.server_info.name!r}; its tools:")
        for tool in (await session.list_tools()).tools:
            print(f"   - {tool.name} ({hints(tool)}): {tool.description}")

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            print(f"     … {message} ({progress / (total or 1):.0%})")

        print('   search_notes(query="mcp"):')
        found = await session.call_tool("search_notes", {"query": "mcp"}, None, on_progress)
        titles = [note["title"] for note in found.structured_content["result"]]
        print(f"   ✓ structured result: {titles}")
        failed = await session.call_tool("delete_note", {"note_id": 42})
        text = failed.content[0].text if isinstance(failed.content[0], types.TextContent) else ""
        print(f"   ✗ delete_note(42) → isError: {text}")


async def as_a_kode_agent() -> None:
    tools = ToolRegistry("example")
    print("2. kode imports the same server: kode.mcp.connect('notes', command=...)")
    async with kode.mcp.connect("notes", command=SERVE, registry=tools) as server:
        for name, remote in server.tools.items():
            tool = tools.get(name)
            rule = "asks for approval" if tool.requires_approval else "runs freely"
            print(f"   - {name} (remote {remote!r}, kind {tool.kind.value}): {rule}")

        async def approver(request: ApprovalRequest) -> ApprovalDecision:
            print(f"   ? approval for {request.tool_name}{json.dumps(request.input)}: allowed")
            return ApprovalDecision(decision="allow")

        def show(event: AgentEvent) -> None:
            if isinstance(event, ToolProgress):
                print(f"     … {event.message}")
            elif isinstance(event, ToolEnd):
                mark = "✗" if event.is_error else "✓"
                print(f"   {mark} {event.name}: {event.result.text[:70]}")

        model = ScriptedModel(
            [
                [tool_use("mcp__notes__search_notes", {"query": "groceries"})],
                [tool_use("mcp__notes__delete_note", {"note_id": 2})],
                "I deleted your grocery list.",
            ]
        )
        template = AgentTemplate(id="notes", tools=[server.pattern])  # "mcp__notes__*"
        print(f"3. An agent whose template lists {server.pattern!r} tidies up:")
        async with Agent.create(template, model=model, registry=tools, approver=approver) as agent:
            reply = await agent.send("Delete my grocery list.", on_event=show)
        print(f"   Agent: {reply.text}")
    print("Done: the server process has stopped and its tools are unregistered.")


async def main() -> None:
    await as_an_mcp_client()
    await as_a_kode_agent()


if __name__ == "__main__":
    if "--serve" not in sys.argv:
        anyio.run(main)
    else:
        import mcp_tools  # noqa: F401 - defining the tools registers them

        if "--http" in sys.argv:
            port = int(sys.argv[sys.argv.index("--http") + 1])
            print(f"Serving the notes tools at http://127.0.0.1:{port}/mcp", file=sys.stderr)
            kode.mcp.serve(name="notes", transport="http", port=port)
        else:
            kode.mcp.serve(name="notes")  # stdio: stdin and stdout are the protocol
