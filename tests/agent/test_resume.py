"""Agent.resume: a session continues in another agent (another process) by the resume rules.

The logs a stopped process leaves are written here record by record, as a run writes them, so
each test knows exactly where the process stopped; tests/sessions/test_kill9.py kills real
processes at random points.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from support import assert_history_valid

from kode import define_tool
from kode.agent import Agent, AgentError, AgentTemplate, ApprovalRequired, Done
from kode.models import FunctionModel, Message, ModelRequest, ToolResultContent, tool_use
from kode.models.messages import ToolUseContent
from kode.registries import ToolRegistry
from kode.sessions import (
    ApprovalRequested,
    CallUpdated,
    ClientCallsWaiting,
    MessageAdded,
    SessionLeaseError,
    SQLiteStore,
    StatusChanged,
    Store,
    store_from,
)

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def finish_when_answered(request: ModelRequest) -> Any:
    """A model that ends the conversation once its calls are answered."""
    last = request.messages[-1]
    assert any(isinstance(b, ToolResultContent) for b in last.content), last
    return "All settled."


Ran = dict[str, int]


def tools(reg: ToolRegistry, ran: Ran) -> None:
    def count(name: str) -> str:
        ran[name] = ran.get(name, 0) + 1
        return f"{name} ran"

    @define_tool(kind="read", registry=reg)
    def look(key: str) -> str:
        """Read something."""
        return count(f"look:{key}")

    @define_tool(kind="edit", requires_approval=False, registry=reg)
    def change(key: str) -> str:
        """Change something."""
        return count(f"change:{key}")

    @define_tool(kind="edit", requires_approval=False, idempotent=True, registry=reg)
    def put(key: str) -> str:
        """Set something (idempotent)."""
        return count(f"put:{key}")

    @define_tool(kind="edit", requires_approval=True, registry=reg)
    def guarded(key: str) -> str:
        """Change something, with approval."""
        return count(f"guarded:{key}")


TEMPLATE = AgentTemplate(id="resumable", tools=["look", "change", "put", "guarded"])


async def stopped_session(store: Store, records: list[Any], session_id: str = "s1") -> None:
    """A session as a process left it when it stopped: its records, no lease."""
    await store.create(template=TEMPLATE.id, session_id=session_id)
    await store.append(session_id, records)


def turn(*calls: ToolUseContent) -> list[Any]:
    return [
        MessageAdded(message=Message.user("go")),
        StatusChanged(status="running"),
        MessageAdded(message=Message(role="assistant", content=list(calls))),
    ]


def use(call_id: str, name: str, key: str) -> ToolUseContent:
    made = tool_use(name, {"key": key})
    made.id = call_id
    return made


async def resume(
    url: str, reg: ToolRegistry, model: Callable[[ModelRequest], Any], **options: Any
) -> Agent:
    return await Agent.resume(
        "s1",
        store=url,
        model=FunctionModel(model),
        template=TEMPLATE,
        registry=reg,
        **options,
    )


async def test_each_call_is_settled_by_the_resume_rules(url: str, reg: ToolRegistry) -> None:
    ran: Ran = {}
    tools(reg, ran)
    done = ToolResultContent(tool_use_id="c1", content=[])
    calls = [
        use("c1", "change", "done"),  # ended before the stop: keeps its result
        use("c2", "look", "reading"),  # running, read-only: runs again
        use("c3", "change", "writing"),  # running, not idempotent: interrupted error
        use("c4", "put", "setting"),  # running, idempotent: runs again
        use("c5", "change", "new"),  # not started: runs
    ]
    store = store_from(url)
    await stopped_session(
        store,
        [
            *turn(*calls),
            CallUpdated(call_id="c1", name="change", status="running"),
            CallUpdated(call_id="c1", name="change", status="done", result=done),
            CallUpdated(call_id="c2", name="look", status="running", read_only=True),
            CallUpdated(call_id="c3", name="change", status="running", read_only=False),
            CallUpdated(call_id="c4", name="put", status="running", idempotent=True),
        ],
    )
    agent = await resume(url, reg, finish_when_answered)
    assert agent.status == "running"
    reply = await agent.send()
    assert reply.text == "All settled."
    assert ran == {"look:reading": 1, "put:setting": 1, "change:new": 1}
    answers = {
        b.tool_use_id: b for b in agent.messages[2].content if isinstance(b, ToolResultContent)
    }
    assert list(answers) == ["c1", "c2", "c3", "c4", "c5"]
    assert answers["c1"] == done
    assert answers["c3"].is_error and "interrupted by a restart" in answers["c3"].text
    assert "may have partly run" in answers["c3"].text
    assert not answers["c5"].is_error and answers["c5"].text == "change:new ran"
    assert_history_valid(agent.messages)
    state = (await store.load("s1")).state()  # the store agrees, and folds
    assert state.messages == agent.messages and state.status == "idle"
    assert {c.id: c.attempts for c in state.calls.values()} == {
        "c1": 1,
        "c2": 2,
        "c3": 1,
        "c4": 2,
        "c5": 1,
    }
    await agent.aclose()
    await store.aclose()


async def test_a_stop_while_the_model_streamed_asks_the_model_again(
    url: str, reg: ToolRegistry
) -> None:
    tools(reg, {})
    store = store_from(url)
    await stopped_session(store, turn()[:2])  # the prompt is in, the reply never was
    agent = await resume(url, reg, lambda request: f"{len(request.messages)} message(s) seen")
    reply = await agent.send()
    assert reply.text == "1 message(s) seen"
    assert [m.role for m in agent.messages] == ["user", "assistant"]
    await agent.aclose()
    await store.aclose()


async def test_two_processes_resuming_at_once_one_wins(url: str, reg: ToolRegistry) -> None:
    tools(reg, {})
    store = store_from(url)
    await stopped_session(store, turn()[:2])
    first = await resume(url, reg, finish_when_answered)
    with pytest.raises(SessionLeaseError, match="session 's1' is leased by"):
        await resume(url, reg, finish_when_answered)
    await first.aclose()  # gives the lease up: now another may take the session
    second = await resume(url, reg, lambda request: "mine now")
    assert (await second.send()).text == "mine now"
    await second.aclose()
    await store.aclose()


async def test_a_decision_made_while_the_process_was_down_is_used(
    url: str, reg: ToolRegistry
) -> None:
    ran: Ran = {}
    tools(reg, ran)
    store = store_from(url)
    await stopped_session(
        store,
        [
            *turn(use("c1", "guarded", "x")),
            CallUpdated(call_id="c1", name="guarded", status="awaiting_approval"),
            ApprovalRequested(call_id="c1", tool_name="guarded", input={"key": "x"}),
            StatusChanged(status="awaiting_approval"),
        ],
    )
    other = store_from(url)  # someone else's process
    await Agent.decide_in_store(other, "s1", "c1", "allow")
    with pytest.raises(AgentError, match="was decided already"):
        await Agent.decide_in_store(other, "s1", "c1", "deny")
    with pytest.raises(AgentError, match=r"'nope' .* is not waiting for approval; waiting: none"):
        await Agent.decide_in_store(other, "s1", "nope", "deny")
    await other.aclose()
    agent = await resume(url, reg, finish_when_answered)
    reply = await agent.send()  # nobody listens: the stored decision answers
    assert reply.text == "All settled." and ran == {"guarded:x": 1}
    await agent.aclose()
    await store.aclose()


async def test_an_approval_still_waits_and_another_process_decides(
    url: str, reg: ToolRegistry
) -> None:
    ran: Ran = {}
    tools(reg, ran)
    store = store_from(url)
    await stopped_session(
        store,
        [
            *turn(use("c1", "guarded", "x")),
            CallUpdated(call_id="c1", name="guarded", status="awaiting_approval"),
            ApprovalRequested(call_id="c1", tool_name="guarded", input={"key": "x"}),
        ],
    )
    agent = await resume(url, reg, finish_when_answered)
    events: list[Any] = []
    async with agent.stream() as stream:
        async for event in stream:
            events.append(event)
            if isinstance(event, ApprovalRequired):
                other = store_from(url)
                await Agent.decide_in_store(other, "s1", event.call_id, "deny", "not now")
                await other.aclose()
    assert isinstance(events[-1], Done) and events[-1].text == "All settled."
    assert ran == {}
    answer = agent.messages[2].content[0]
    assert isinstance(answer, ToolResultContent) and "not now" in answer.text
    state = (await store.load("s1")).state()
    assert state.calls["c1"].status == "denied" and not state.approvals
    await agent.aclose()
    await store.aclose()


async def test_client_calls_still_wait_after_a_resume(url: str, reg: ToolRegistry) -> None:
    tools(reg, {})
    store = store_from(url)
    await stopped_session(
        store,
        [
            *turn(use("c1", "look", "x")),
            CallUpdated(call_id="c1", name="look", status="running"),
            CallUpdated(call_id="c1", name="look", status="pending", client=True),
            ClientCallsWaiting(call_ids=["c1"]),
            StatusChanged(status="awaiting_client"),
        ],
    )
    agent = await resume(url, reg, finish_when_answered)
    assert agent.status == "awaiting_client" and agent.client_calls.waiting == ["c1"]
    agent.submit_tool_result("c1", "from the client")
    reply = await agent.send()
    assert reply.text == "All settled."
    assert agent.messages[2].content[0].text == "from the client"  # type: ignore[union-attr]
    await agent.aclose()
    assert (await store.load("s1")).state().calls["c1"].status == "done"
    await store.aclose()


async def test_resume_of_an_unknown_session_or_template(tmp_path: Path, reg: ToolRegistry) -> None:
    from kode.agent import TemplateError
    from kode.sessions import SessionNotFoundError

    store = SQLiteStore(tmp_path / "s.db")
    with pytest.raises(SessionNotFoundError):
        await Agent.resume("missing", store=store, model=FunctionModel(finish_when_answered))
    await store.create(template="unregistered-template", session_id="s2")
    with pytest.raises(TemplateError):
        await Agent.resume("s2", store=store, model=FunctionModel(finish_when_answered))
    await store.aclose()


async def test_a_run_that_lost_its_lease_stops_with_the_store_error(
    tmp_path: Path, reg: ToolRegistry
) -> None:
    ran: Ran = {}
    tools(reg, ran)
    url = f"sqlite:///{tmp_path / 's.db'}"
    agent = Agent.create(
        TEMPLATE,
        model=FunctionModel(lambda r: [tool_use("look", {"key": "k"})]),
        registry=reg,
        store=url,
        session_id="s1",
        lease_ttl=0.05,
    )
    await agent.session.open(resume=False)
    await anyio.sleep(0.1)  # the lease runs out, and another process takes the session
    thief = store_from(url)
    await thief.acquire("s1", owner="another process")
    with pytest.raises(SessionLeaseError):
        await agent.send("go")
    assert ran == {}  # nothing ran without the lease
    await thief.aclose()


async def test_the_lease_is_renewed_while_a_long_call_runs(
    tmp_path: Path, reg: ToolRegistry
) -> None:
    @define_tool(kind="read", registry=reg)
    async def slow(key: str) -> str:
        """Take a while."""
        await anyio.sleep(1.0)  # more than three times the lease
        return "slow done"

    def model(request: ModelRequest) -> Any:
        return [tool_use("slow", {"key": "k"})] if len(request.messages) == 1 else "ok"

    url = f"sqlite:///{tmp_path / 's.db'}"
    agent = Agent.create(
        AgentTemplate(id="slow", tools=["slow"]),
        model=FunctionModel(model),
        registry=reg,
        store=url,
        session_id="s1",
        lease_ttl=0.3,
    )
    taken: list[bool] = []

    async def another_process() -> None:
        await anyio.sleep(0.7)  # the lease, unless renewed, ran out 0.4 s ago
        other = store_from(url)
        try:
            await other.acquire("s1", owner="another process")
            taken.append(True)
        except SessionLeaseError:
            taken.append(False)
        finally:
            await other.aclose()

    async with anyio.create_task_group() as tg:
        tg.start_soon(another_process)
        reply = await agent.send("go")
    assert taken == [False] and reply.text == "ok"
    await agent.aclose()
