"""Durable agents for the scheduled-prompt tests, imported by ``kode worker -m``.

``cron-test`` answers a prompt ``Schedule '<cron>': <prompt>`` by calling the ``cron`` tool
(its template allows it, so no approval is asked); any other prompt is logged to
``$KODE_CRON_DIR/fired.log`` with the worker's pid (the test counts the firings there) and
answered; the first prompt starting with ``Hold`` then waits (for the test to kill the worker).
Its model answers from the conversation alone, so a replay needs no script position.
"""

from __future__ import annotations

import os
import re
from collections.abc import AsyncIterator
from pathlib import Path

import anyio

from kode import AgentTemplate
from kode.durable import DurableAgent
from kode.models import Message, ModelRequest, ModelResponse, TextContent, ToolResultContent
from kode.models.base import ModelEvent
from kode.models.scripted import tool_use

folder = Path(os.environ["KODE_CRON_DIR"])
ASK = re.compile(r"Schedule '(?P<cron>[^']*)': (?P<prompt>.*)", re.DOTALL)


def log(line: str) -> None:
    with (folder / "fired.log").open("a") as out:
        out.write(f"{line} {os.getpid()}\n")
        out.flush()
        os.fsync(out.fileno())


class CronModel:
    """Schedules what it is asked to schedule; otherwise logs the prompt as a firing."""

    name = "cron-test"

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        first = request.messages[0]
        prompt = "".join(getattr(block, "text", "") for block in first.content)
        results = [
            "".join(getattr(part, "text", "") for part in block.content)
            for message in request.messages
            for block in message.content
            if isinstance(block, ToolResultContent)
        ]
        asked = ASK.match(prompt)
        content: list[object]
        if asked and not results:
            arguments = {"action": "add", "schedule": asked["cron"], "prompt": asked["prompt"]}
            content = [tool_use("cron", arguments, id="cron1")]
        elif asked:
            content = [TextContent(text=results[0])]
        else:
            hold = prompt.startswith("Hold") and not (folder / "held").exists()
            if hold:
                (folder / "held").touch()  # before the log line the test waits for
            log(prompt)
            if hold:
                await anyio.sleep(120)  # the test kills this worker here
            content = [TextContent(text=f"did {prompt}")]
        yield ModelResponse(
            message=Message(role="assistant", content=content),  # type: ignore[arg-type]
            stop_reason="tool_use" if asked and not results else "end_turn",
        )


scheduler = DurableAgent(
    AgentTemplate(id="cron-test", tools=["cron"], permission={"allow": ["cron"]}),
    model=CronModel(),
)
