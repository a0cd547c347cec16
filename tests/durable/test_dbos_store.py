"""A durable run also written to a session store: once it ends, `Agent.resume` and the store
see it as a session whose id is the workflow's, written once even when the step runs again."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("dbos")

from kode_workers import in_dbos

from kode import Agent, AgentTemplate, ToolRegistry, define_tool
from kode.durable import DurableAgent
from kode.models import ScriptedModel, tool_use
from kode.models.messages import Message, TextContent, ToolResultContent
from kode.sessions import MessageAdded, SQLiteStore

registry = ToolRegistry()


@define_tool(kind="read", registry=registry)
def word_count(text: str) -> int:
    """Count the words of a text."""
    return len(text.split())


def test_a_finished_run_is_a_session_agent_resume_continues(tmp_path: Path) -> None:
    from dbos import DBOS

    url = f"sqlite:///{tmp_path / 'sessions.db'}"
    template = AgentTemplate(id="stored-counter", tools=["word_count"])
    script = ScriptedModel([[tool_use("word_count", {"text": "a b c"}, id="w1")], "Three."])
    durable = DurableAgent(template, model=script, options={"registry": registry}, store=url)
    found: dict[str, object] = {}

    async def work() -> None:
        found["answer"] = await durable.run("Count 'a b c'.", workflow_id="run-s")
        steps = await DBOS.list_workflow_steps_async("run-s")
        found["steps"] = [step["function_name"] for step in steps]
        agent = await Agent.resume(
            "run-s",
            store=url,
            model=ScriptedModel(["Still three."]),
            template=template,
            registry=registry,
        )
        async with agent:
            found["before"] = [m.role for m in agent.messages]
            found["result"] = [
                block.text
                for m in agent.messages
                for block in m.content
                if isinstance(block, ToolResultContent)
            ]
            found["next"] = (await agent.send("And now?")).text

    in_dbos(tmp_path, work, name="kode-store-test")

    assert found["answer"] == "Three."
    assert found["steps"] == [
        "kode.model_turn",
        "kode.tool_call.word_count",
        "kode.model_turn",
        "kode.session_save",
    ]
    assert found["before"] == ["user", "assistant", "user", "assistant"]
    assert found["result"] == ["3"]
    assert found["next"] == "Still three."


def test_a_session_an_earlier_attempt_wrote_is_not_written_again(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'sessions.db'}"
    template = AgentTemplate(id="stored-again", tools=[])
    durable = DurableAgent(
        template, model=ScriptedModel(["Hello."]), options={"registry": registry}, store=url
    )
    counts: list[int] = []

    async def work() -> None:
        store = SQLiteStore(tmp_path / "sessions.db")
        try:
            # As if the step had written the session and its worker died before its checkpoint.
            await store.create(template="stored-again", session_id="run-t")
            first = MessageAdded(message=Message(role="user", content=[TextContent(text="hi")]))
            await store.append("run-t", [first])
            assert await durable.run("Say hello.", workflow_id="run-t") == "Hello."
            counts.append(len((await store.load("run-t")).entries))
        finally:
            await store.aclose()

    in_dbos(tmp_path, work, name="kode-store-test")
    assert counts == [1]
