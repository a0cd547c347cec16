"""An input a person changed at approval: the record keeps what ran and what was asked, the
model reads what ran, and a session in a store (resumed elsewhere) says the same."""

from __future__ import annotations

from typing import Any

import pytest
from support import assert_history_valid, make_agent

from kode import define_tool
from kode.agent import Agent, AgentState, AgentTemplate, ApprovalDecision, ApprovalRequest
from kode.models import FunctionModel, Message, ModelRequest, ToolResultContent, tool_use
from kode.registries import ToolRegistry
from kode.sessions import (
    ApprovalDecided,
    ApprovalRequested,
    CallUpdated,
    MessageAdded,
    StatusChanged,
    store_from,
)

pytestmark = pytest.mark.anyio

EDITED = "The user changed the input of this call before approving it, so it ran with"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def pay_tool(reg: ToolRegistry, paid: list[int]) -> None:
    @define_tool(registry=reg, kind="execute", requires_approval=True)
    def pay(amount: int) -> str:
        """Pay an amount.

        Args:
            amount: How much.
        """
        paid.append(amount)
        return f"paid {amount}"


async def edit_to_ten(request: ApprovalRequest) -> ApprovalDecision:
    return ApprovalDecision(decision="allow", input={"amount": 10})


def the_answer(request: ModelRequest) -> ToolResultContent:
    last = request.messages[-1]
    results = [b for b in last.content if isinstance(b, ToolResultContent)]
    assert len(results) == 1, last
    return results[0]


async def test_the_record_keeps_what_ran_and_the_model_is_told(reg: ToolRegistry) -> None:
    paid: list[int] = []
    pay_tool(reg, paid)
    agent, model = make_agent(
        reg,
        [[tool_use("pay", {"amount": 1000}, id="p1")], "done"],
        create={"approver": edit_to_ten},
    )
    await agent.send("pay the invoice")
    assert paid == [10]
    record = agent.records.get("p1")
    assert record is not None
    assert record.input == {"amount": 10} and record.requested_input == {"amount": 1000}
    saved = AgentState.model_validate_json(agent.state.model_dump_json())
    assert saved.tool_calls[0].input == {"amount": 10}
    assert saved.tool_calls[0].requested_input == {"amount": 1000}
    # The model's own call stays as it wrote it; the result it reads next says what ran.
    assert agent.messages[1].tool_uses[0].input == {"amount": 1000}
    answer = the_answer(model.requests[-1])
    assert answer.text.startswith(f'{EDITED} {{"amount": 10}} instead of the input you sent.')
    assert answer.text.endswith("paid 10") and not answer.is_error
    assert_history_valid(agent.messages)


async def test_an_unchanged_call_has_no_requested_input(reg: ToolRegistry) -> None:
    paid: list[int] = []
    pay_tool(reg, paid)

    async def allow(request: ApprovalRequest) -> ApprovalDecision:
        return ApprovalDecision(decision="allow")

    agent, model = make_agent(
        reg, [[tool_use("pay", {"amount": 5}, id="p1")], "done"], create={"approver": allow}
    )
    await agent.send("pay")
    record = agent.records.get("p1")
    assert record is not None and record.input == {"amount": 5}
    assert record.requested_input is None
    assert the_answer(model.requests[-1]).text == "paid 5"


async def test_a_stored_session_keeps_the_edit_and_a_resume_sees_it(
    url: str, reg: ToolRegistry
) -> None:
    paid: list[int] = []
    pay_tool(reg, paid)
    template = AgentTemplate(id="payer", tools=["pay"])
    first = Agent.create(
        template,
        model=FunctionModel(
            lambda r: [tool_use("pay", {"amount": 1000}, id="p1")] if len(r.messages) == 1 else "ok"
        ),
        registry=reg,
        store=url,
        session_id="s1",
        approver=edit_to_ten,
    )
    await first.send("pay")
    await first.aclose()
    store = store_from(url)
    state = (await store.load("s1")).state()
    assert state.calls["p1"].input == {"amount": 10}
    again = await Agent.resume(
        "s1", store=url, model=FunctionModel(lambda r: "fine"), template=template, registry=reg
    )
    record = again.records.get("p1")
    assert record is not None
    assert record.input == {"amount": 10} and record.requested_input == {"amount": 1000}
    assert again.messages[1].tool_uses[0].input == {"amount": 1000}
    answer = again.messages[2].content[0]
    assert isinstance(answer, ToolResultContent) and answer.text.startswith(EDITED)
    await again.aclose()
    await store.aclose()
    assert paid == [10]


@pytest.mark.parametrize("decided", ["in-the-store", "before-the-stop"])
async def test_an_edit_approved_while_stopped_runs_with_the_edit_after_a_resume(
    url: str, reg: ToolRegistry, decided: str
) -> None:
    """A call waited for approval when its process stopped; the edit was decided in the store
    by another process, or recorded (with the call approved) just before the stop."""
    paid: list[int] = []
    pay_tool(reg, paid)
    template = AgentTemplate(id="payer", tools=["pay"])
    call = tool_use("pay", {"amount": 1000}, id="p1")
    records: list[Any] = [
        MessageAdded(message=Message.user("pay")),
        StatusChanged(status="running"),
        MessageAdded(message=Message(role="assistant", content=[call])),
        CallUpdated(call_id="p1", name="pay", status="awaiting_approval"),
        ApprovalRequested(call_id="p1", tool_name="pay", input={"amount": 1000}),
    ]
    if decided == "in-the-store":
        records.append(StatusChanged(status="awaiting_approval"))
    else:  # the process stopped after recording the approval, before the call started
        records += [
            ApprovalDecided(call_id="p1", decision="allow", input={"amount": 10}),
            CallUpdated(call_id="p1", name="pay", status="approved", input={"amount": 10}),
        ]
    store = store_from(url)
    await store.create(template="payer", session_id="s1")
    await store.append("s1", records)
    if decided == "in-the-store":
        await Agent.decide_in_store(store, "s1", "p1", "allow", input={"amount": 10})
    seen: list[Any] = []

    def model(request: ModelRequest) -> str:
        seen.append(the_answer(request))
        return "fine"

    agent = await Agent.resume(
        "s1", store=url, model=FunctionModel(model), template=template, registry=reg
    )
    await agent.send()
    assert paid == [10]
    assert seen[0].text.startswith(EDITED) and seen[0].text.endswith("paid 10")
    answer = agent.messages[2].content[0]
    assert isinstance(answer, ToolResultContent) and answer.text.startswith(EDITED)
    record = agent.records.get("p1")
    assert record is not None
    assert record.input == {"amount": 10} and record.requested_input == {"amount": 1000}
    await agent.aclose()
    calls = (await store.load("s1")).state().calls
    assert calls["p1"].input == {"amount": 10} and calls["p1"].status == "done"
    await store.aclose()
