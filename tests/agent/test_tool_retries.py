"""ToolRetry: a tool asks the model to call it again; define_tool(retries=...) bounds how often
one run allows it, and a run past the budget ends with every call answered."""

from __future__ import annotations

import pytest

from kode import Agent, AgentError, AgentTemplate, ToolDefinitionError, ToolRetry, define_tool
from kode.models import ScriptedModel, tool_use
from kode.tools import ToolErrorType

BOOKED: list[str] = []


def make_book(retries: int) -> None:
    BOOKED.clear()

    @define_tool(retries=retries)
    def book(day: str) -> str:
        """Book the room for a day.

        Args:
            day: The day, as YYYY-MM-DD.
        """
        if len(day) != 10:
            raise ToolRetry(f"{day!r} is not a date: write it as YYYY-MM-DD.")
        BOOKED.append(day)
        return f"Booked {day}."

    @define_tool(retries=retries)
    async def cancel(day: str) -> str:
        """Cancel the room for a day.

        Args:
            day: The day, as YYYY-MM-DD.
        """
        raise ToolRetry(f"Nothing is booked on {day}: list the bookings first.")


def test_the_model_reads_the_retry_and_calls_again(isolated_registry: object) -> None:
    make_book(retries=1)
    model = ScriptedModel(
        [
            [tool_use("book", {"day": "tuesday"})],
            [tool_use("book", {"day": "2026-12-08"})],
            "Booked for Tuesday.",
        ]
    )
    agent = Agent.create(AgentTemplate(id="t", tools=["book"]), model=model)
    assert agent.send_sync("Book Tuesday.").text == "Booked for Tuesday."
    first, second = agent.state.tool_calls
    assert (first.status, first.error_type) == ("failed", ToolErrorType.RETRY.value)
    assert first.result is not None
    assert first.result.content[0].text == "'tuesday' is not a date: write it as YYYY-MM-DD."  # type: ignore[union-attr]
    assert second.status == "done"
    assert BOOKED == ["2026-12-08"]


def test_a_tool_past_its_budget_ends_the_run_and_the_session_goes_on(
    isolated_registry: object,
) -> None:
    make_book(retries=1)
    model = ScriptedModel(
        [
            [tool_use("book", {"day": "tue"})],
            [tool_use("book", {"day": "wed"})],
            [tool_use("book", {"day": "2026-12-09"})],
            "Booked.",
        ]
    )
    agent = Agent.create(AgentTemplate(id="t", tools=["book"]), model=model)
    with pytest.raises(AgentError) as caught:
        agent.send_sync("Book a day.")
    message = str(caught.value)
    assert "tool 'book' asked for a retry 2 times in this run, more than its retries=1" in message
    assert "'wed' is not a date" in message
    assert agent.state.status == "failed"
    last = agent.messages[-1]
    assert last.role == "user" and last.content[0].tool_use_id == agent.state.tool_calls[-1].id  # type: ignore[union-attr]
    # The next send is a new run with a new budget: the model's good call runs.
    assert agent.send_sync("Try again.").text == "Booked."
    assert BOOKED == ["2026-12-09"]


def test_budgets_are_per_tool_and_zero_allows_none(isolated_registry: object) -> None:
    make_book(retries=0)
    model = ScriptedModel(
        [[tool_use("book", {"day": "2026-12-08"}), tool_use("cancel", {"day": "x"})], "never"]
    )
    agent = Agent.create(AgentTemplate(id="t", tools=["book", "cancel"]), model=model)
    with pytest.raises(AgentError, match=r"tool 'cancel' asked for a retry 1 times .*retries=0"):
        agent.send_sync("Move the booking.")
    assert BOOKED == ["2026-12-08"]  # the other call of the turn ran and kept its result
    assert [c.status for c in agent.state.tool_calls] == ["done", "failed"]


@pytest.mark.parametrize("bad", [-1, "2", True, 1.5])
def test_retries_must_be_a_count(bad: object, isolated_registry: object) -> None:
    with pytest.raises(ToolDefinitionError, match=r"retries=.* is not a count"):

        @define_tool(retries=bad)  # type: ignore[arg-type]
        def f(x: int) -> int:
            """F.

            Args:
                x: X.
            """
            return x


def test_tool_retry_alone_is_an_error_result(isolated_registry: object) -> None:
    make_book(retries=3)
    from kode import registry

    result = registry.get("book").run_sync({"day": "soon"})
    assert result.is_error and result.error_type == "retry"
    assert result.text == "'soon' is not a date: write it as YYYY-MM-DD."
