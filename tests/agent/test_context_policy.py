"""Context policies: old tool results are cleared from what a request sends, never from the
history; a resume makes the same view; what is cleared stays cleared."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from kode import Agent, AgentTemplate, define_tool
from kode.agent.context import ContextPolicy, ContextView
from kode.models import FunctionModel, ModelRequest, tool_use
from kode.models.messages import Message, TextContent, ToolResultContent


@pytest.fixture
def read_page(isolated_registry: object) -> None:
    @define_tool(kind="read")
    def read_page(n: int) -> str:
        """Read a page of the manual.

        Args:
            n: The page.
        """
        return f"page {n}: " + "lorem ipsum " * 50


def results_sent(messages: list[Message]) -> list[str]:
    return [b.text for m in messages for b in m.content if isinstance(b, ToolResultContent)]


def fifty_turns(seen: list[list[Message]]) -> FunctionModel:
    def reply(request: ModelRequest) -> object:
        seen.append(list(request.messages))
        done = sum(isinstance(b, ToolResultContent) for m in request.messages for b in m.content)
        if done >= 50:
            return "I read all fifty pages."
        return [tool_use("read_page", {"n": done + 1}, id=f"toolu_{done + 1}")]

    return FunctionModel(reply)


def test_only_the_last_results_are_sent_whole_and_the_history_keeps_all(read_page: None) -> None:
    seen: list[list[Message]] = []
    template = AgentTemplate(
        id="reader", tools=["read_page"], max_turns=60, context=ContextPolicy(keep_tool_results=3)
    )
    agent = Agent.create(template, model=fifty_turns(seen))
    assert agent.send_sync("Read the manual.").text == "I read all fifty pages."
    last = results_sent(seen[-1])
    assert len(last) == 50
    assert all(t.startswith("[This result of read_page (") for t in last[:47])
    assert "was cleared from the conversation to save context" in last[0]
    assert [t[:8] for t in last[47:]] == ["page 48:", "page 49:", "page 50:"]
    # Every call stays answered: the cleared blocks keep their ids.
    ids = [b.tool_use_id for m in seen[-1] for b in m.content if isinstance(b, ToolResultContent)]
    assert ids == [f"toolu_{n}" for n in range(1, 51)]
    # The history itself is whole.
    kept = results_sent(agent.messages)
    assert all(t.startswith(f"page {n}:") for n, t in enumerate(kept, start=1))
    # Each request cleared what the one before did, and more: never less.
    for before, after in itertools.pairwise(seen):
        cleared_before = sum(t.startswith("[This result") for t in results_sent(before))
        cleared_after = sum(t.startswith("[This result") for t in results_sent(after))
        assert cleared_after >= cleared_before


def test_a_token_budget_keeps_the_recent_results_that_fit(read_page: None) -> None:
    seen: list[list[Message]] = []
    # each page is about 610 characters: about 153 tokens
    template = AgentTemplate(
        id="reader",
        tools=["read_page"],
        max_turns=60,
        context=ContextPolicy(tool_results_tokens=500),
    )
    agent = Agent.create(template, model=fifty_turns(seen))
    agent.send_sync("Read the manual.")
    last = results_sent(seen[-1])
    whole = [t for t in last if t.startswith("page ")]
    assert [t[:8] for t in whole] == ["page 48:", "page 49:", "page 50:"]


def test_small_results_are_never_cleared() -> None:
    view = ContextView(ContextPolicy(keep_tool_results=0, min_chars=100))
    history = [
        Message(
            role="user",
            content=[ToolResultContent(tool_use_id="a", content=[TextContent(text="ok")])],
        ),
        Message(
            role="user",
            content=[ToolResultContent(tool_use_id="b", content=[TextContent(text="x" * 300)])],
        ),
    ]
    sent = results_sent(view.messages(history))
    assert sent[0] == "ok"
    assert sent[1].startswith("[This result of the tool (300 characters) was cleared")


def test_a_replaced_last_message_and_a_new_history_are_seen() -> None:
    view = ContextView(ContextPolicy(keep_tool_results=1, min_chars=0))
    one = Message(
        role="user", content=[ToolResultContent(tool_use_id="a", content=[TextContent(text="A")])]
    )
    two = Message(
        role="user", content=[ToolResultContent(tool_use_id="b", content=[TextContent(text="B")])]
    )
    assert results_sent(view.messages([one])) == ["A"]
    assert results_sent(view.messages([one, two]))[1] == "B"
    replaced = Message(role="user", content=[*two.content, TextContent(text="and more")])
    sent = view.messages([one, replaced])
    assert sent[1] is replaced
    other = Message(
        role="user", content=[ToolResultContent(tool_use_id="z", content=[TextContent(text="Z")])]
    )
    assert results_sent(view.messages([other])) == ["Z"]


def test_a_policy_must_say_something() -> None:
    with pytest.raises(
        ValueError,
        match="keep_tool_results, tool_results_tokens, compact_at_tokens or server_editing",
    ):
        ContextPolicy()


@pytest.mark.anyio
async def test_a_resume_sends_what_the_process_before_sent(read_page: None, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 's.sqlite'}"
    template = AgentTemplate(
        id="reader", tools=["read_page"], max_turns=60, context=ContextPolicy(keep_tool_results=3)
    )
    first: list[list[Message]] = []
    agent = Agent.create(template, model=fifty_turns(first), store=url)
    await agent.send("Read the manual.")
    session_id = agent.session_id
    await agent.aclose()
    again: list[list[Message]] = []

    def reply(request: ModelRequest) -> object:
        again.append(list(request.messages))
        return "Still fifty."

    resumed = await Agent.resume(
        session_id, store=url, model=FunctionModel(reply), template=template
    )
    try:
        await resumed.send("How many pages?")
    finally:
        await resumed.aclose()
    # The resumed request is the last request before, plus the new answer and prompt.
    before = first[-1]
    assert results_sent(again[0]) == results_sent(before)
    assert len(results_sent(resumed.messages)) == 50
    assert all(t.startswith("page ") for t in results_sent(resumed.messages))
