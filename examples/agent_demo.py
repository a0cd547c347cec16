"""An agent with two user tools and one built-in-style tool, printing events as they arrive.

Offline by default (a scripted model plays the model's part). With ``ANTHROPIC_API_KEY`` set it
talks to Anthropic; with ``OPENAI_API_KEY`` (and optionally ``OPENAI_BASE_URL`` for any
OpenAI-compatible server) it talks to OpenAI. ``KODE_DEMO_MODEL`` picks the model name.

Run it with:  python examples/agent_demo.py
"""

from __future__ import annotations

import os
from typing import Annotated, Any

import anyio
from pydantic import Field

from kode import Agent, AgentTemplate, ToolContext, ToolRegistry, define_tool
from kode.agent import ApprovalDecision, ApprovalRequest
from kode.models import Model, ScriptedModel, tool_use

tools = ToolRegistry("demo")

NOTES = {
    "redis.conf": "# redis server\nmaxmemory 2gb\nbind 127.0.0.1",
    "app.toml": "[cache]\nbackend = 'redis'\nurl = 'redis://localhost:6379'",
    "README.md": "A small app.",
}


@define_tool(registry=tools, kind="search", groups=["group:files"])
def search_files(
    word: str, limit: Annotated[int, Field(ge=1, le=20)] = 5, *, ctx: ToolContext
) -> list[str]:
    """Find files whose text mentions a word.

    Args:
        word: The word to look for, case-insensitive.
        limit: At most this many files.
    """
    hits = []
    for index, (name, text) in enumerate(NOTES.items(), start=1):
        ctx.progress(f"searched {name}", fraction=index / len(NOTES))
        if word.lower() in text.lower():
            hits.append(name)
    return hits[:limit]


@define_tool(registry=tools, kind="read", groups=["group:files"])
def read_file(path: str) -> str:
    """Read a whole file.

    Args:
        path: The file's name, as search_files returns it.
    """
    if path not in NOTES:
        from kode import ToolError, ToolErrorType

        raise ToolError(
            f"{path} does not exist; use search_files first.", type=ToolErrorType.FILE_NOT_FOUND
        )
    return NOTES[path]


@define_tool(registry=tools, kind="edit", aliases=["write"])
def fs_write(path: str, content: str) -> str:
    """Write a file (built-in style: mutating, so it asks for approval).

    Args:
        path: The file to write.
        content: Its new content.
    """
    NOTES[path] = content
    return f"wrote {len(content)} characters to {path}"


TEMPLATE = AgentTemplate(
    id="config-researcher",
    system_prompt="You find config files and summarise them. Use the tools.",
    tools=["group:files", "fs_write"],
    permission={"mode": "approval"},
)


def pick_model() -> Model:
    name = os.environ.get("KODE_DEMO_MODEL")
    if os.environ.get("ANTHROPIC_API_KEY"):
        from kode.models import AnthropicModel

        return AnthropicModel(name or "claude-sonnet-4-6")
    if os.environ.get("OPENAI_API_KEY") or os.environ.get("OPENAI_BASE_URL"):
        from kode.models import OpenAIModel

        return OpenAIModel(name or "gpt-4o-mini", base_url=os.environ.get("OPENAI_BASE_URL"))
    return ScriptedModel(
        [
            ["Let me look.", tool_use("search_files", {"word": "redis", "limit": "5"})],
            [tool_use(" Read_File ", {"path": "app.toml"}), tool_use("read_file", {"path": "x"})],
            [tool_use("write", {"path": "SUMMARY.md", "content": "redis: app.toml, redis.conf"})],
            "redis is configured in app.toml (redis://localhost:6379) and redis.conf "
            "(maxmemory 2gb). I saved a summary to SUMMARY.md.",
        ]
    )


async def approve(request: ApprovalRequest) -> ApprovalDecision:
    print(f"  ? approval for {request.tool_name}({request.input}) — {request.reason}: allowed")
    return ApprovalDecision(decision="allow")


def show(event: Any) -> None:
    kind = event.type
    if kind == "text_delta":
        print(event.text, end="", flush=True)
    elif kind == "tool_start":
        print(f"\n  → {event.name}({event.input})")
    elif kind == "tool_progress":
        print(f"    … {event.message} ({event.fraction:.0%})")
    elif kind == "tool_end":
        mark = "✗" if event.is_error else "✓"
        first = event.result.text.splitlines()[0] if event.result.text else ""
        print(f"  {mark} {event.name} [{event.duration * 1000:.1f} ms]: {first[:90]}")
    elif kind == "turn_end":
        print(
            f"\n  [turn {event.turn}: {event.stop_reason}, {event.usage.output_tokens} tokens out]"
        )
    elif kind == "done":
        print(f"\nDone in {event.turns} turns.")
    elif kind == "error":
        print(f"\nError: {event.message}")


async def main() -> None:
    agent = Agent.create(TEMPLATE, model=pick_model(), registry=tools, approver=approve)
    print(f"Model: {agent.model.name}; tools: {', '.join(t.name for t in agent.tools)}\n")
    async for event in agent.stream("Which config files mention redis?"):
        show(event)


if __name__ == "__main__":
    anyio.run(main)
