"""A durable agent that continues stored sessions, imported by ``kode worker -m`` in the tests.

``session-chat`` keeps its sessions in ``$KODE_SESSION_STORE``. Its model answers from the
conversation alone: ``answer N: <prompt>``, N the number of prompts it sees (so an answer
shows how much of the session the run was given). Each turn is logged to
``$KODE_SESSION_DIR/turns.log`` as ``begin|end <prompt> <pid> <time>`` and lasts
``$KODE_SESSION_TURN`` seconds; the first prompt starting with ``Hold`` waits instead (for the
test to kill the worker). While the file ``die-after-append`` exists, the first append to a
session store that writes a ``Hold`` prompt kills this process right after its transaction
committed, before DBOS can record that the step ended.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import anyio

from kode import AgentTemplate
from kode.durable import DurableAgent
from kode.models import Message, ModelRequest, ModelResponse, TextContent
from kode.models.base import ModelEvent
from kode.sessions import MessageAdded, PostgresStore, SQLiteStore

folder = Path(os.environ["KODE_SESSION_DIR"])


def log(line: str) -> None:
    with (folder / "turns.log").open("a") as out:
        out.write(f"{line} {os.getpid()} {time.time():.6f}\n")
        out.flush()
        os.fsync(out.fileno())


class SessionModel:
    """Answers ``answer N: <prompt>``; logs each turn's begin and end."""

    name = "session-test"

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        prompts = [
            "".join(getattr(block, "text", "") for block in message.content)
            for message in request.messages
            if message.role == "user"
        ]
        prompt = prompts[-1]
        log(f"begin {prompt}")
        if prompt.startswith("Hold") and not (folder / "held").exists():
            (folder / "held").touch()
            log(f"holding {prompt}")
            await anyio.sleep(120)  # the test kills this worker here
        await anyio.sleep(float(os.environ.get("KODE_SESSION_TURN", "0")))
        log(f"end {prompt}")
        yield ModelResponse(
            message=Message(
                role="assistant", content=[TextContent(text=f"answer {len(prompts)}: {prompt}")]
            ),
            stop_reason="end_turn",
        )


def _dying(original: Any) -> Any:
    async def append(self: Any, session_id: str, records: Sequence[Any], **kwargs: Any) -> int:
        last: int = await original(self, session_id, records, **kwargs)
        trigger = folder / "die-after-append"
        holds = any(
            isinstance(r, MessageAdded)
            and r.message.role == "user"
            and "".join(getattr(b, "text", "") for b in r.message.content).startswith("Hold")
            for r in records
        )
        if holds and trigger.exists():
            trigger.unlink()
            log("killed after append")
            os.kill(os.getpid(), signal.SIGKILL)
        return last

    return append


SQLiteStore.append = _dying(SQLiteStore.append)  # type: ignore[method-assign]
PostgresStore.append = _dying(PostgresStore.append)  # type: ignore[method-assign]

chat = DurableAgent(
    AgentTemplate(id="session-chat"),
    model=SessionModel(),
    store=os.environ["KODE_SESSION_STORE"],
)
