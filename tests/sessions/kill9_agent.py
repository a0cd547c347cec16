"""The agent the kill -9 suite (test_kill9.py) runs in a subprocess and kills.

Usage: ``python kill9_agent.py STORE_URL SESSION_ID WORK_FILE STATE_FILE start|resume``

Its model streams a fixed conversation chosen by the history (so a resumed process's model
answers where the history stands); its tools append ``start``/``end`` lines to WORK_FILE
(with the call id and the time) around a short sleep, so that a kill can land inside them.
It prints a marker line on stdout at each point the suite may kill it at, and at the end
prints ``FINAL <text>`` and writes the agent's state as JSON to STATE_FILE. A call that needs
approval is announced as ``approval <call id>``; the suite decides it from its own process
(``Agent.decide_in_store``).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import AsyncIterator
from typing import Any

import anyio

from kode import define_tool
from kode.agent import Agent, AgentTemplate, ApprovalRequired, Done, ErrorEvent, ToolEnd
from kode.models import Message, ModelRequest, TextContent, tool_use
from kode.models.base import ModelEvent, ModelResponse, TextDelta
from kode.models.messages import Usage
from kode.registries import ToolRegistry
from kode.sessions import SessionLeaseError, SessionNotFoundError
from kode.tools import ToolContext

URL, SESSION, WORK, STATE, MODE = sys.argv[1:6]
LEASE_TTL = 0.2

# The conversation: turn k answers a history holding k assistant messages.
SCRIPT: list[list[tuple[str, int]] | str] = [
    [("look", 1), ("look", 2), ("write", 3)],
    [("setv", 4), ("write", 5)],
    [("guarded", 6)],
    [("look", 7), ("write", 8), ("write", 9)],
    "Final answer.",
]
MUTATING = {"write", "guarded"}  # neither read-only nor idempotent: never run twice


def mark(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def line(text: str) -> None:
    # One write of one short line in append mode: whole, even when the process is killed.
    fd = os.open(WORK, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{text} {time.time():.6f}\n".encode())
    finally:
        os.close(fd)


async def effect(kind: str, ctx: ToolContext[Any]) -> str:
    line(f"start {kind} {ctx.tool_call_id}")
    mark(f"tool {kind}")
    await anyio.sleep(0.03)
    line(f"end {kind} {ctx.tool_call_id}")
    return f"ran {ctx.tool_call_id}"


registry = ToolRegistry(name="kill9")


@define_tool(kind="read", registry=registry)
async def look(n: int, ctx: ToolContext[Any]) -> str:
    """Read item n."""
    return await effect("look", ctx)


@define_tool(kind="edit", requires_approval=False, registry=registry)
async def write(n: int, ctx: ToolContext[Any]) -> str:
    """Append item n."""
    return await effect("write", ctx)


@define_tool(kind="edit", requires_approval=False, idempotent=True, registry=registry)
async def setv(n: int, ctx: ToolContext[Any]) -> str:
    """Set item n (idempotent)."""
    return await effect("setv", ctx)


@define_tool(kind="edit", requires_approval=True, registry=registry)
async def guarded(n: int, ctx: ToolContext[Any]) -> str:
    """Change item n, with approval."""
    return await effect("guarded", ctx)


class StreamingModel:
    """Streams the scripted turn the history has reached, a word at a time."""

    name = "kill9"

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        turn = sum(1 for m in request.messages if m.role == "assistant")
        step = SCRIPT[turn]
        words = ["Working", "on", "step", str(turn)] if not isinstance(step, str) else step.split()
        for word in words:
            mark("model")
            await anyio.sleep(0.005)
            yield TextDelta(text=word + " ")
        text = TextContent(text=" ".join(words))
        if isinstance(step, str):
            message = Message(role="assistant", content=[text])
        else:
            calls = []
            for index, (name, n) in enumerate(step):
                call = tool_use(name, {"n": n})
                call.id = f"t{turn}_{index}_{name}"
                calls.append(call)
            message = Message(role="assistant", content=[text, *calls])
        yield ModelResponse(
            message=message,
            stop_reason="end_turn" if isinstance(step, str) else "tool_use",
            usage=Usage(input_tokens=1, output_tokens=len(words)),
            model=self.name,
        )


TEMPLATE = AgentTemplate(id="kill9", tools=["look", "write", "setv", "guarded"], max_turns=20)


async def open_agent() -> Agent:
    if MODE == "start":
        return create()
    while True:  # the killed process's lease runs out within LEASE_TTL
        try:
            return await Agent.resume(
                SESSION,
                store=URL,
                model=StreamingModel(),
                template=TEMPLATE,
                registry=registry,
                lease_ttl=LEASE_TTL,
            )
        except SessionLeaseError:
            await anyio.sleep(0.05)
        except SessionNotFoundError:  # killed before its first run wrote anything
            return create()


def create() -> Agent:
    return Agent.create(
        TEMPLATE,
        model=StreamingModel(),
        registry=registry,
        store=URL,
        session_id=SESSION,
        lease_ttl=LEASE_TTL,
    )


async def main() -> None:
    agent = await open_agent()
    mark("ready")
    final = None
    last = agent.messages[-1] if agent.messages else None
    if MODE == "resume" and agent.status == "idle" and last is not None and not last.tool_uses:
        final = last.text  # killed after the final answer was written: nothing to continue
    else:
        final = await run(agent)
    await anyio.Path(STATE).write_text(agent.state.model_dump_json(), encoding="utf-8")
    await agent.aclose()
    mark(f"FINAL {final}")


async def run(agent: Agent) -> str | None:
    final = None
    async with agent.stream(None if agent.messages else "Do the work.") as events:
        async for event in events:
            if isinstance(event, ApprovalRequired):
                mark(f"approval {event.call_id}")
            elif isinstance(event, ToolEnd):
                mark("between")
            elif isinstance(event, Done):
                final = event.text
            elif isinstance(event, ErrorEvent):
                mark(f"ERROR {event.message}")
    return final


if __name__ == "__main__":
    anyio.run(main)
