"""A worker of a pool on one queue, for the multi-worker tests (SQLite or PostgreSQL).

``python pool_worker.py <system-db-url> <dir> <executor-id> <role> [<lease-timeout>]`` takes
the `WorkerLease` of its executor id, launches DBOS with it (which recovers that executor's own
pending runs), listens to queue ``kode-pool`` (4 runs at once, all workers together) and
recovers dead workers' runs every 0.2 s (``WorkerLease.watch``, by prefix ``pool-``, or by
executor ids when ``POOL_RECOVER=ids``), until ``<dir>/stop`` exists.

A run's prompt is its tag, which the model passes to the tools: in a worker of role
``victim``, the model turn or tool named by the tag waits once started, for the test to kill
the worker there (a tag ``<x>-<what>`` too); a ``victim-direct`` also starts run ``direct``
without a queue. Every model turn and every tool that starts is logged to ``<dir>`` files as
``<tag>:<what> <executor-id>``, and every run the worker recovers to ``recovered.log``.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
from dbos import DBOS

from kode import AgentTemplate, ToolRegistry, define_tool
from kode.durable import DurableAgent
from kode.durable.workers import WorkerLease
from kode.models import Message, ModelRequest, ModelResponse, TextContent, ToolResultContent
from kode.models.base import ModelEvent
from kode.models.scripted import tool_use

url, folder, executor, role = sys.argv[1], Path(sys.argv[2]), sys.argv[3], sys.argv[4]
lease_timeout = float(sys.argv[5]) if len(sys.argv) > 5 else 60.0


def sessions_url(url: str, folder: Path) -> str:
    """The session store of the pool: the PostgreSQL database itself, or a SQLite file."""
    return url if url.startswith("postgresql") else f"sqlite:///{folder / 'sessions.db'}"


def log(name: str, line: str) -> None:
    with (folder / name).open("a") as out:
        out.write(f"{line} {executor}\n")


async def hold(tag: str, what: str) -> None:
    if role.startswith("victim") and tag.rsplit("-", 1)[-1] == what:
        await anyio.sleep(120)  # the test kills this worker here


registry = ToolRegistry()


@define_tool(kind="read", registry=registry)
async def note_read(tag: str) -> str:
    """Read the note."""
    log("tools.log", f"{tag}:note_read")
    await hold(tag, "note_read")
    return "the note says 3"


@define_tool(kind="edit", registry=registry)
async def ledger_add(amount: int, tag: str) -> str:
    """Add an amount to the ledger."""
    log("tools.log", f"{tag}:ledger_add")
    await hold(tag, "ledger_add")
    log("ledger.log", f"{tag}:+{amount}")
    return f"added {amount}"


@define_tool(kind="edit", requires_approval=True, registry=registry)
async def vault_open(tag: str) -> str:
    """Open the vault (needs approval)."""
    log("tools.log", f"{tag}:vault_open")
    return "vault opened"


def texts(request: ModelRequest) -> tuple[str, list[str]]:
    """The run's tag (its prompt) and the texts of the tool results so far."""
    first = request.messages[0].content[0]
    results = [
        "".join(getattr(part, "text", "") for part in block.content)
        for message in request.messages
        for block in message.content
        if isinstance(block, ToolResultContent)
    ]
    return getattr(first, "text", ""), results


class LedgerModel:
    """Turn 1 reads the note, turn 2 adds to the ledger, turn 3 answers with the results."""

    name = "ledger"

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        tag, results = texts(request)
        turn = sum(message.role == "assistant" for message in request.messages) + 1
        log("model.log", f"{tag}:turn{turn}")
        await hold(tag, f"turn{turn}")
        content: list[object]
        if turn == 1:
            content = [tool_use("note_read", {"tag": tag}, id="c1")]
        elif turn == 2:
            content = [tool_use("ledger_add", {"amount": 3, "tag": tag}, id="c2")]
        else:
            content = [TextContent(text="final: " + " | ".join(results))]
        yield ModelResponse(
            message=Message(role="assistant", content=content),  # type: ignore[arg-type]
            stop_reason="tool_use" if turn < 3 else "end_turn",
        )


class VaultModel:
    """Calls vault_open (which needs approval), then answers with its result."""

    name = "vault"

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        tag, results = texts(request)
        log("model.log", f"{tag}:turn{len(results) + 1}")
        content: list[object] = (
            [TextContent(text=f"final: {results[0]}")]
            if results
            else [tool_use("vault_open", {"tag": tag}, id="v1")]
        )
        yield ModelResponse(
            message=Message(role="assistant", content=content),  # type: ignore[arg-type]
            stop_reason="end_turn" if results else "tool_use",
        )


ledger = DurableAgent(
    AgentTemplate(id="pool-ledger", tools=["note_read", "ledger_add"]),
    model=LedgerModel(),
    options={"registry": registry},
    store=sessions_url(url, folder),  # each finished run is also a session there
)
DurableAgent(
    AgentTemplate(id="pool-vault", tools=["vault_open"]),
    model=VaultModel(),
    options={"registry": registry},
    durable_approvals=True,
)


class Recovered(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        if record.msg.startswith("recovered"):
            for workflow_id in record.args[2]:  # type: ignore[index]
                log("recovered.log", f"{workflow_id}<-{record.args[1]}")  # type: ignore[index]


async def main() -> None:
    logging.getLogger("kode.durable").addHandler(Recovered())
    logging.getLogger("kode.durable").setLevel(logging.INFO)
    try:
        lease = WorkerLease.acquire(url, executor, timeout=lease_timeout)
    except Exception as exc:
        print(exc, file=sys.stderr)
        sys.exit(3)
    DBOS(
        config={
            "name": "kode-pool-test",
            "system_database_url": url,
            "application_version": "test",
            "executor_id": lease.executor_id,
        }
    )
    DBOS.launch()
    await DBOS.register_queue_async("kode-pool", global_concurrency=4, polling_interval_sec=0.1)
    if role == "victim-direct":  # also a run started without a queue, held in note_read
        await ledger.start("direct-note_read", workflow_id="direct")
    log("ready.log", "ready")
    try:
        async with anyio.create_task_group() as group:
            if os.environ.get("POOL_RECOVER") == "ids":
                ids = ["pool-a", "pool-b"]
                group.start_soon(lambda: lease.watch(interval=0.2, executor_ids=ids))
            else:
                group.start_soon(lambda: lease.watch(interval=0.2, prefix="pool-"))
            while not (folder / "stop").exists():  # noqa: ASYNC110 (another process makes it)
                await anyio.sleep(0.05)
            group.cancel_scope.cancel()
    finally:
        DBOS.destroy()
        lease.release()


anyio.run(main)
