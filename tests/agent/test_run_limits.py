"""Run limits (AgentTemplate.limits): tool calls, tokens and a cost budget end a run with a
RunLimitError, the calls a limit keeps from running are answered, and the session goes on."""

from __future__ import annotations

from pathlib import Path

import pytest

from kode import Agent, AgentTemplate, RunLimitError, RunLimits, TemplateError, define_tool
from kode.agent import ErrorEvent
from kode.agent.limits import TokenPrices
from kode.models import ScriptedModel, tool_use
from kode.sessions import SQLiteStore

RAN: list[int] = []


@pytest.fixture
def ping(isolated_registry: object) -> None:
    RAN.clear()

    @define_tool
    def ping(n: int) -> str:
        """Answer a ping.

        Args:
            n: Which ping.
        """
        RAN.append(n)
        return f"pong {n}"


def assistant_turns(agent: Agent) -> int:
    return sum(m.role == "assistant" for m in agent.messages)


def answered(agent: Agent) -> bool:
    """Every tool_use of the history has its tool_result (a provider accepts the history)."""
    uses = {b.id for m in agent.messages if m.role == "assistant" for b in m.tool_uses}
    results = {
        b.tool_use_id
        for m in agent.messages
        if m.role == "user"
        for b in m.content
        if getattr(b, "type", "") == "tool_result"
    }
    return uses == results


def test_a_turn_past_the_tool_call_limit_runs_none_of_its_calls(ping: None) -> None:
    model = ScriptedModel(
        [
            [tool_use("ping", {"n": 1}), tool_use("ping", {"n": 2})],
            [tool_use("ping", {"n": 3}), tool_use("ping", {"n": 4})],
            "never reached",
        ]
    )
    template = AgentTemplate(id="t", tools=["ping"], limits=RunLimits(tool_calls=3))
    agent = Agent.create(template, model=model)
    with pytest.raises(RunLimitError) as caught:
        agent.send_sync("go")
    assert sorted(RAN) == [1, 2]  # one turn's calls run concurrently, in either order
    error = caught.value
    assert (error.limit, error.allowed, error.used) == ("tool_calls", 3, 4)
    assert "limit of 3 tool calls: it ran 2 and the model asked for 2 more" in str(error)
    statuses = [(c.input["n"], c.status) for c in agent.state.tool_calls]  # type: ignore[index]
    assert statuses == [(1, "done"), (2, "done"), (3, "cancelled"), (4, "cancelled")]
    last = agent.messages[-1]
    assert last.role == "user"
    texts = [b.content[0].text for b in last.content]  # type: ignore[union-attr]
    assert all(t.startswith("Not run: the run reached its limit of 3 tool calls") for t in texts)
    assert answered(agent)
    assert agent.state.status == "failed"


def test_the_next_send_is_a_new_run_with_new_counts(ping: None) -> None:
    model = ScriptedModel(
        [
            [tool_use("ping", {"n": 1})],
            [tool_use("ping", {"n": 2})],
            [tool_use("ping", {"n": 3})],
            "All pinged.",
        ]
    )
    template = AgentTemplate(id="t", tools=["ping"], limits=RunLimits(tool_calls=1))
    agent = Agent.create(template, model=model)
    with pytest.raises(RunLimitError):
        agent.send_sync("go")
    assert RAN == [1]
    # The new run may run one call: ping 3 (ping 2 was answered, never run).
    assert agent.send_sync("go on").text == "All pinged."
    assert RAN == [1, 3]
    assert answered(agent)


@pytest.mark.parametrize(
    ("limits", "name"),
    [
        (RunLimits(output_tokens=8), "output_tokens"),
        (RunLimits(total_tokens=30), "total_tokens"),
        (RunLimits(input_tokens=12), "input_tokens"),
        (RunLimits(cost=8, prices=TokenPrices(input=0, output=1_000_000)), "cost"),
    ],
)
def test_token_and_cost_limits_stop_before_the_next_request(
    ping: None, limits: RunLimits, name: str
) -> None:
    # Each response writes five words (five output tokens to the scripted model).
    model = ScriptedModel(
        [[f"Ping number {n} goes now.", tool_use("ping", {"n": n})] for n in range(1, 9)] + ["done"]
    )
    agent = Agent.create(AgentTemplate(id="t", tools=["ping"], limits=limits), model=model)
    with pytest.raises(RunLimitError) as caught:
        agent.send_sync("go")
    error = caught.value
    assert error.limit == name
    assert error.used >= error.allowed
    assert f"raise limits.{name} in the template" in str(error)
    turns = assistant_turns(agent)
    assert 1 <= turns < 8
    assert RAN == list(range(1, turns + 1))  # every response's calls ran; no request after
    assert answered(agent)


def test_the_output_token_limit_counts_what_the_provider_reported(ping: None) -> None:
    model = ScriptedModel(
        [[f"Ping number {n} goes now.", tool_use("ping", {"n": n})] for n in range(1, 9)]
    )
    agent = Agent.create(
        AgentTemplate(id="t", tools=["ping"], limits=RunLimits(output_tokens=8)), model=model
    )
    with pytest.raises(RunLimitError) as caught:
        agent.send_sync("go")
    # 5 tokens after the first response, 10 after the second: the third is never asked for.
    assert assistant_turns(agent) == 2
    assert caught.value.used == 10
    assert "limit of 8 output tokens (10 used) before its next model request" in str(caught.value)


@pytest.mark.anyio
async def test_a_stream_ends_with_the_limit_as_its_error_event(ping: None) -> None:
    model = ScriptedModel([[tool_use("ping", {"n": 1}), tool_use("ping", {"n": 2})], "done"])
    agent = Agent.create(
        AgentTemplate(id="t", tools=["ping"], limits=RunLimits(tool_calls=0)), model=model
    )
    events = [event async for event in agent.stream("go")]
    last = events[-1]
    assert isinstance(last, ErrorEvent) and isinstance(last.error, RunLimitError)
    assert last.message == str(last.error)
    assert RAN == []
    assert answered(agent)


def test_a_cost_budget_needs_prices() -> None:
    with pytest.raises(ValueError, match="a cost budget needs the model's prices"):
        RunLimits(cost=1.0)
    with pytest.raises(TemplateError, match="cost budget needs the model's prices"):
        AgentTemplate.from_toml('[template]\nid = "t"\n[template.limits]\ncost = 2.5\n')
    template = AgentTemplate.from_toml(
        '[template]\nid = "t"\n[template.limits]\ntool_calls = 5\ncost = 2.5\n'
        "prices = { input = 3.0, output = 15.0 }\n"
    )
    assert template.limits == RunLimits(
        tool_calls=5, cost=2.5, prices=TokenPrices(input=3.0, output=15.0)
    )
    with pytest.raises(TemplateError, match="tool_calls"):
        AgentTemplate.from_dict({"id": "t", "limits": {"tool_calls": -1}})


@pytest.mark.anyio
async def test_a_stored_session_a_limit_stopped_resumes(ping: None, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'sessions.sqlite'}"
    template = AgentTemplate(id="t", tools=["ping"], limits=RunLimits(tool_calls=1))
    turns: list[object] = [
        [tool_use("ping", {"n": 1}, id="toolu_first")],
        [tool_use("ping", {"n": 2}, id="toolu_second")],
        [tool_use("ping", {"n": 2}, id="toolu_again")],
        "Both pinged.",
    ]
    agent = Agent.create(template, model=ScriptedModel(turns[:2]), store=url)
    with pytest.raises(RunLimitError):
        await agent.send("go")
    session_id = agent.session_id
    await agent.aclose()
    async with SQLiteStore(tmp_path / "sessions.sqlite") as store:
        resumed = await Agent.resume(
            session_id, store=store, model=ScriptedModel(turns[2:]), template=template
        )
        try:
            reply = await resumed.send("go on")
            assert reply.text == "Both pinged."
            assert RAN == [1, 2]
            assert answered(resumed)
        finally:
            await resumed.aclose()
