"""A worker process for the DBOS tests: runs or recovers one durable agent run.

``python dbos_worker.py <dir> start <hold>`` starts workflow ``run-1`` and prints its answer;
``python dbos_worker.py <dir> recover`` only launches DBOS (which recovers the pending run) and
prints the run's answer; ``python dbos_worker.py <dir> decide <run> <call>`` denies a call;
``python dbos_worker.py <dir> serve`` listens to queue ``kode-runs``
(one run at a time) until the file ``<dir>/stop`` exists. Every model turn and every tool that
starts is logged to ``<dir>`` files, with the worker's pid, so the test can see what ran
where. ``<hold>`` names the tool that, in the first worker, waits after logging its start
(for the test to kill the worker).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
from dbos import DBOS

from kode import AgentTemplate, ToolRegistry, define_tool
from kode.durable import DurableAgent
from kode.models import Message, ModelRequest, ModelResponse, TextContent, ToolResultContent
from kode.models.base import ModelEvent
from kode.models.scripted import tool_use

folder = Path(sys.argv[1])
mode = sys.argv[2]
hold = sys.argv[3] if len(sys.argv) > 3 else ""
pair = len(sys.argv) > 4 and sys.argv[4] == "pair"  # the first turn asks for two reads at once


def log(name: str, line: str) -> None:
    with (folder / name).open("a") as out:
        out.write(f"{line} {os.getpid()}\n")
        out.flush()
        os.fsync(out.fileno())


def wait_if_held(tool: str) -> None:
    if mode == "start" and hold == tool:
        time.sleep(120)  # the test kills this worker here


registry = ToolRegistry()


@define_tool(kind="read", registry=registry)
def note_read() -> str:
    """Read the note."""
    log("tools.log", "note_read")
    wait_if_held("note_read")
    return "the note says 3"


@define_tool(kind="read", registry=registry)
async def note_peek() -> str:
    """Peek at the note."""
    log("tools.log", "note_peek")
    if mode == "start" and hold == "note_peek":
        await anyio.sleep(120)  # the test kills this worker here
    return "peeked"


@define_tool(kind="edit", registry=registry)
def ledger_add(amount: int) -> str:
    """Add an amount to the ledger."""
    log("tools.log", "ledger_add")
    wait_if_held("ledger_add")
    log("ledger.log", f"+{amount}")
    return f"added {amount}"


@define_tool(kind="edit", idempotent=True, registry=registry)
def flag_set() -> str:
    """Set the flag (twice is once)."""
    log("tools.log", "flag_set")
    wait_if_held("flag_set")
    return "flag set"


class TurnModel:
    """Answers from the number of tool results seen, so a replay needs no script position."""

    name = "turns"

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        results = [
            block
            for message in request.messages
            for block in message.content
            if isinstance(block, ToolResultContent)
        ]
        turn = sum(message.role == "assistant" for message in request.messages) + 1
        log("model.log", f"turn{turn}")
        if mode == "start" and hold == f"turn{turn}":
            await anyio.sleep(120)  # the test kills this worker here
        if turn == 1:
            content: list[object] = [tool_use("note_read", {}, id="c1")]
            if pair:
                content.append(tool_use("note_peek", {}, id="c1b"))
        elif turn == 2:
            content = [tool_use("ledger_add", {"amount": 3}, id="c2")]
        elif turn == 3:
            content = [tool_use("flag_set", {}, id="c3")]
        else:
            seen = " | ".join(
                "".join(getattr(part, "text", "") for part in block.content) for block in results
            )
            content = [TextContent(text=f"final: {seen}")]
        yield ModelResponse(
            message=Message(role="assistant", content=content),  # type: ignore[arg-type]
            stop_reason="tool_use" if turn < 4 else "end_turn",
        )


@define_tool(kind="edit", requires_approval=True, registry=registry)
def vault_open() -> str:
    """Open the vault (needs approval)."""
    log("tools.log", "vault_open")
    return "vault opened"


class ApprovalModel:
    """Calls vault_open, then answers with its result."""

    name = "approval"

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        results = [
            "".join(getattr(part, "text", "") for part in block.content)
            for message in request.messages
            for block in message.content
            if isinstance(block, ToolResultContent)
        ]
        log("model.log", f"approval{len(results) + 1}")
        content: list[object] = (
            [TextContent(text=f"final: {results[0]}")]
            if results
            else [tool_use("vault_open", {}, id="v1")]
        )
        yield ModelResponse(
            message=Message(role="assistant", content=content),  # type: ignore[arg-type]
            stop_reason="end_turn" if results else "tool_use",
        )


guarded = DurableAgent(
    AgentTemplate(id="vault", tools=["vault_open"]),
    model=ApprovalModel(),
    options={"registry": registry},
    durable_approvals=True,
)
template = AgentTemplate(id="ledger", tools=["note_read", "note_peek", "ledger_add", "flag_set"])
durable = DurableAgent(template, model=TurnModel(), options={"registry": registry})


async def main() -> None:
    DBOS(
        config={
            "name": "kode-durable-test",
            "system_database_url": f"sqlite:///{folder / 'dbos.sqlite'}",
            "application_version": "test",
            "executor_id": "decider" if mode == "decide" else "local",
        }
    )
    DBOS.launch()
    await DBOS.register_queue_async("kode-runs", global_concurrency=1, polling_interval_sec=0.1)
    try:
        if mode == "decide":  # a process that runs no agent's work: it only decides
            await DurableAgent.decide(sys.argv[3], sys.argv[4], "deny", note="not today")
            return
        if mode == "serve":
            log("ready.log", "serving")
            while not (folder / "stop").exists():  # noqa: ASYNC110 (another process makes it)
                await anyio.sleep(0.05)
            return
        if mode == "start":
            text = await durable.run("Add the note's amount to the ledger.", workflow_id="run-1")
        else:
            text = await (await durable.retrieve("run-1")).get_result()
        print(text, flush=True)
    finally:
        DBOS.destroy()


anyio.run(main)
