"""The two states a session is restored from: a saved `AgentState` and a store's `SessionState`.

`data/stored_states.json` holds both, as kode wrote them before the two restores shared one
path (an agent that paid with an approval that changed the input and allowed the tool for the
session, echoed twice, kept a todo, and stopped with a client call waiting): each still loads,
dumps to the same JSON, and restores the same history.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kode import define_tool
from kode.agent import Agent, AgentState, AgentTemplate
from kode.agent.session import Session
from kode.models import ScriptedModel, ToolResultContent
from kode.registries import ToolRegistry
from kode.sessions import SessionState
from kode.tools.declared import declare_tool

pytestmark = pytest.mark.anyio

STORED = json.loads((Path(__file__).parent / "data" / "stored_states.json").read_text("utf-8"))


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def tools(reg: ToolRegistry) -> ToolRegistry:
    @define_tool(registry=reg, kind="execute", requires_approval=True)
    def pay(amount: int) -> str:
        """Pay an amount.

        Args:
            amount: How much.
        """
        return f"paid {amount}"

    @define_tool(registry=reg, kind="read")
    def echo(text: str) -> str:
        """Echo a text.

        Args:
            text: The text.
        """
        return text

    reg.register(declare_tool("ask_user", input_schema={"type": "object"}), source="client")
    return reg


def history(session: Session) -> dict[str, Any]:
    """What a restore puts in a session, as plain data (calls by id)."""
    return {
        "messages": [m.model_dump(mode="json") for m in session.messages],
        "calls": {
            r.id: {
                "name": r.name,
                "input": r.input,
                "requested_input": r.requested_input,
                "status": r.status,
                "result": None if r.result is None else r.result.model_dump(mode="json"),
                "client": r.client,
            }
            for r in session.records
        },
        "usage": session.usage.model_dump(mode="json"),
        "todos": session.todos,
        "always_allowed": sorted(session.always_allowed),
        "status": session.status,
        "client_waiting": session.client_calls.waiting,
        "compaction": session.compaction,
    }


def test_stored_json_of_each_state_loads_and_dumps_as_it_was() -> None:
    agent_state = AgentState.model_validate_json(json.dumps(STORED["agent_state"]))
    session_state = SessionState.model_validate_json(json.dumps(STORED["session_state"]))
    assert json.loads(agent_state.model_dump_json()) == STORED["agent_state"]
    assert json.loads(session_state.model_dump_json()) == STORED["session_state"]


def test_both_restores_leave_the_same_history() -> None:
    from_agent_state = Session("s1", template_id="kept")
    from_agent_state.restore_agent_state(AgentState.model_validate(STORED["agent_state"]))
    from_session_state = Session("s1", template_id="kept")
    from_session_state.restore(SessionState.model_validate(STORED["session_state"]))
    restored = history(from_agent_state)
    assert restored == history(from_session_state)
    assert restored["calls"]["p1"]["input"] == {"amount": 10}
    assert restored["calls"]["p1"]["requested_input"] == {"amount": 1000}
    assert restored["status"] == "awaiting_client"
    assert restored["client_waiting"] == ["a1"]
    assert restored["todos"] == [{"content": "ship it", "status": "in_progress"}]
    assert restored["always_allowed"] == ["pay"]


async def test_an_agent_rebuilt_from_the_stored_state_goes_on(tools: ToolRegistry) -> None:
    state = AgentState.model_validate(STORED["agent_state"])
    agent = Agent.from_state(
        state,
        model=ScriptedModel(["all done"]),
        template=AgentTemplate.model_validate(STORED["agent_state"]["template"]),
        registry=tools,
    )
    assert agent.status == "awaiting_client"
    agent.submit_tool_result(
        "a1", ToolResultContent(tool_use_id="a1", content=[{"type": "text", "text": "yes"}])
    )
    reply = await agent.send()
    assert reply.text == "all done"
    assert [r.status for r in agent.records] == ["done", "done", "done", "done"]
