"""Compaction: past a token budget the model summarises the older turns; requests send the
summary and the recent part, the history (and the store) keeps every message, a resume sends
the same view, and each summary builds on the one before."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kode import Agent, AgentTemplate, RunLimitError, define_tool
from kode.agent import Compaction, ContextPolicy, RunLimits, TurnEnd
from kode.agent.compaction import COMPACT_PROMPT, RESULT_CHARS, transcript
from kode.agent.context import SUMMARY_INTRO, ContextView
from kode.models import FunctionModel, ModelError, ModelRequest, tool_use
from kode.models.messages import Message, TextContent, ToolResultContent, ToolUseContent, Usage
from kode.sessions import HistoryCompacted, SessionRecordError, SQLiteStore
from kode.sessions.records import MessageAdded, SessionEntry
from kode.sessions.state import fold

POLICY = ContextPolicy(compact_at_tokens=3_000, compact_keep_tokens=1_000)


@pytest.fixture
def read_page(isolated_registry: object) -> None:
    @define_tool(kind="read")
    def read_page(n: int) -> str:
        """Read a page of the manual.

        Args:
            n: The page.
        """
        return f"page {n}: " + "lorem ipsum " * 50


def is_summary_request(request: ModelRequest) -> bool:
    return request.system == COMPACT_PROMPT


class Reader:
    """The model of a 50-turn session: reads pages 1 to 50, one a turn; writes summaries."""

    def __init__(self, *, fail_summaries: bool = False) -> None:
        self.chats: list[list[Message]] = []  # what each request of the agent sent
        self.summaries: list[str] = []  # what each summary request read
        self.pages = 0
        self.fail_summaries = fail_summaries

    def __call__(self, request: ModelRequest) -> object:
        if is_summary_request(request):
            assert not request.tools
            text = request.messages[0].text
            self.summaries.append(text)
            if self.fail_summaries:
                raise ModelError("the summary model is overloaded", retryable=True)
            read = [int(p) for p in text.split('read_page({"n": ')[1:] for p in [p[:2].strip("}")]]
            return f"Summary {len(self.summaries)}: pages up to {max(read)} were read."
        self.chats.append(list(request.messages))
        if self.pages >= 50:
            return "I read all fifty pages."
        self.pages += 1
        return [tool_use("read_page", {"n": self.pages}, id=f"toolu_{self.pages}")]


def template(policy: ContextPolicy = POLICY, **options: object) -> AgentTemplate:
    options = {"max_turns": 60, **options}
    return AgentTemplate(id="reader", tools=["read_page"], context=policy, **options)


def whole_history(messages: list[Message]) -> None:
    """The 50-turn history is all there: the prompt, 50 calls, 50 whole results, the answer."""
    assert len(messages) == 102
    results = [b for m in messages for b in m.content if isinstance(b, ToolResultContent)]
    assert [r.text.split(":")[0] for r in results] == [f"page {n}" for n in range(1, 51)]
    assert all(r.text.endswith("lorem ipsum ") for r in results)


def test_a_50_turn_session_is_compacted_and_keeps_its_history(read_page: None) -> None:
    model = Reader()
    agent = Agent.create(template(), model=FunctionModel(model))
    reply = agent.send_sync("Read the manual.")
    assert reply.text == "I read all fifty pages."
    whole_history(agent.messages)
    events = [e for e in reply.events if isinstance(e, Compaction)]
    assert len(events) >= 3
    assert all(e.error is None for e in events)
    # Each compaction stands for more of the history than the one before.
    cuts = [e.messages for e in events]
    assert cuts == sorted(set(cuts))
    # Every request after the first compaction sends its summary, then the history from the
    # cut on, whole and in order: a call is never apart from its result.
    first = events[0]
    after = next(m for m in model.chats if m[0].text.startswith(SUMMARY_INTRO))
    assert after[0].role == "user"
    assert after[0].text == f"{SUMMARY_INTRO}\n\n{first.summary}"
    assert after[1:] == agent.messages[first.messages : first.messages + len(after) - 1]
    assert after[1].role == "assistant"
    for chat in model.chats:
        uses = {b.id for m in chat for b in m.content if isinstance(b, ToolUseContent)}
        answered = {
            b.tool_use_id for m in chat for b in m.content if isinstance(b, ToolResultContent)
        }
        assert answered <= uses
    # The last request is small again: the summary and the recent turns, not 100 messages.
    assert len(model.chats[-1]) < 30
    assert events[-1].summary in model.chats[-1][0].text
    # A second summary read the first (it builds on it) and only the messages after its cut.
    assert "<earlier-summary>\n" + events[0].summary + "\n</earlier-summary>" in model.summaries[1]
    assert 'read_page({"n": 1})' not in model.summaries[1]
    assert events[1].summarised == events[1].messages - events[0].messages
    # The run's usage counts the summaries' tokens too.
    turns = sum((e.usage for e in reply.events if isinstance(e, TurnEnd)), Usage())
    spent = sum((e.usage for e in events), Usage())
    assert spent.input_tokens > 0
    assert reply.usage == turns + spent
    assert agent.usage == reply.usage


@pytest.mark.anyio
async def test_the_store_keeps_every_message_and_a_resume_sends_the_same_view(
    read_page: None, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 's.sqlite'}"
    model = Reader()
    agent = Agent.create(template(), model=FunctionModel(model), store=url)
    reply = await agent.send("Read the manual.")
    session_id = agent.session_id
    await agent.aclose()
    compactions = [e for e in reply.events if isinstance(e, Compaction)]

    async with SQLiteStore(tmp_path / "s.sqlite") as store:
        log = await store.load(session_id)
    records = [e.record for e in log.entries]
    kept = [r for r in records if isinstance(r, HistoryCompacted)]
    assert [(r.summary, r.messages) for r in kept] == [(e.summary, e.messages) for e in compactions]
    state = log.state()
    whole_history(state.messages)  # the store never lost a message
    assert state.compaction == kept[-1]
    assert state.usage == reply.usage  # the summaries' tokens are in the stored usage too

    again: list[list[Message]] = []

    def reply_again(request: ModelRequest) -> object:
        assert not is_summary_request(request)
        again.append(list(request.messages))
        return "Fifty pages."

    resumed = await Agent.resume(
        session_id, store=url, model=FunctionModel(reply_again), template=template()
    )
    try:
        await resumed.send("How many pages?")
    finally:
        await resumed.aclose()
    # The resumed request is the last request before, plus the answer and the new prompt.
    answer, prompt = resumed.messages[-3], resumed.messages[-2]
    assert prompt.text == "How many pages?"
    assert again[0] == [*model.chats[-1], answer, prompt]
    assert again[0][0].text.endswith(compactions[-1].summary)


def test_a_failed_summary_sends_the_whole_history_and_says_so(read_page: None) -> None:
    model = Reader(fail_summaries=True)
    agent = Agent.create(template(), model=FunctionModel(model))
    reply = agent.send_sync("Read the manual.")
    assert reply.text == "I read all fifty pages."
    events = [e for e in reply.events if isinstance(e, Compaction)]
    assert events  # each request past the budget tried, and said it failed
    assert all(e.error is not None and "overloaded" in e.error for e in events)
    assert all(e.summary == "" and e.tokens_after == e.tokens_before for e in events)
    assert agent.session.compaction is None
    # Nothing was lost: the last request sent the whole history.
    assert model.chats[-1] == agent.messages[:-1]
    whole_history(agent.messages)


def test_a_compact_model_that_names_no_model_is_a_failed_summary(read_page: None) -> None:
    policy = ContextPolicy(compact_at_tokens=3_000, compact_model="nowhere")
    model = Reader()
    agent = Agent.create(template(policy), model=FunctionModel(model))
    reply = agent.send_sync("Read the manual.")
    assert reply.text == "I read all fifty pages."
    events = [e for e in reply.events if isinstance(e, Compaction)]
    assert events and all("names no provider" in (e.error or "") for e in events)
    assert model.chats[-1] == agent.messages[:-1]  # sent whole


def test_a_named_model_writes_the_summary(read_page: None, tmp_path: Path) -> None:
    script = tmp_path / "summaries.json"
    script.write_text(json.dumps(["The first pages were read.", "More pages were read."]))
    policy = ContextPolicy(
        compact_at_tokens=3_000, compact_keep_tokens=1_000, compact_model=f"scripted:{script}"
    )
    model = Reader()
    agent = Agent.create(template(policy, max_turns=50), model=FunctionModel(model))
    model.pages = 15  # 35 pages to read: two compactions
    reply = agent.send_sync("Read the manual.")
    assert reply.text == "I read all fifty pages."
    events = [e for e in reply.events if isinstance(e, Compaction)]
    assert [e.summary for e in events] == ["The first pages were read.", "More pages were read."]
    assert not model.summaries  # the agent's own model wrote none


@pytest.mark.anyio
async def test_a_compaction_counts_in_the_run_limits(read_page: None) -> None:
    model = Reader()
    limits = RunLimits(output_tokens=1)  # only the summaries write words
    agent = Agent.create(template(limits=limits), model=FunctionModel(model))
    events: list[object] = []
    with pytest.raises(RunLimitError, match="limit of 1 output tokens"):
        await agent.send("Read the manual.", on_event=events.append)
    assert [type(e).__name__ for e in events][-2:] == ["Compaction", "ErrorEvent"]
    # The run stopped before the request the compaction came before.
    assert len(model.summaries) == 1
    assert model.chats[-1][0].text == "Read the manual."
    assert agent.session.compaction is not None  # kept: the next run starts from it


def test_the_transcript_keeps_calls_results_and_the_earlier_summary() -> None:
    use = ToolUseContent(id="t1", name="grep", input={"pattern": "x"})
    long = ToolResultContent(tool_use_id="t1", content=[TextContent(text="y" * 5_000)])
    text = transcript(
        [
            Message.user("Find x."),
            Message(role="assistant", content=[TextContent(text="Looking."), use]),
            Message(role="user", content=[long]),
        ],
        "Earlier: the user asked for a plan.",
    )
    assert text.startswith("<earlier-summary>\nEarlier: the user asked for a plan.\n")
    assert 'User: Find x.\nAgent: Looking.\nAgent calls grep({"pattern": "x"})' in text
    assert f"Tool result: {'y' * RESULT_CHARS} [... 3,000 more characters]" in text


def test_the_recent_part_starts_with_a_model_turn() -> None:
    view = ContextView(ContextPolicy(compact_at_tokens=1_000, compact_keep_tokens=0))
    history = [Message.user("Go.")]
    for n in range(3):
        use = ToolUseContent(id=f"t{n}", name="read", input={})
        history += [
            Message(role="assistant", content=[use]),
            Message(
                role="user",
                content=[ToolResultContent(tool_use_id=use.id, content=[TextContent(text="r")])],
            ),
        ]
    view.messages(history)
    older = view.older()
    assert older is not None
    cut, part = older
    assert cut == 5  # the latest turn (its call and its result) stays whole
    assert part == history[:5]
    assert view.older() is not None
    only = ContextView(ContextPolicy(compact_at_tokens=1_000))
    only.messages(history[:1])
    assert only.older() is None  # no model turn yet: no recent part to keep


def entry(seq: int, record: object) -> SessionEntry:
    return SessionEntry(seq=seq, at=0.0, record=record)


def test_a_compaction_record_must_end_before_a_model_turn() -> None:
    messages = [
        Message.user("Go."),
        Message(role="assistant", content=[TextContent(text="Yes.")]),
        Message.user("More."),
    ]
    entries = [entry(i + 1, MessageAdded(message=m)) for i, m in enumerate(messages)]
    state = fold([*entries, entry(4, HistoryCompacted(summary="s", messages=1))])
    assert state.compaction is not None and state.compaction.messages == 1
    with pytest.raises(SessionRecordError, match="must end before a model's turn"):
        fold([*entries, entry(4, HistoryCompacted(summary="s", messages=2))])
    with pytest.raises(SessionRecordError, match="more than the 1 compacted before"):
        fold(
            [
                *entries,
                entry(4, HistoryCompacted(summary="s", messages=1)),
                entry(5, HistoryCompacted(summary="t", messages=1)),
            ]
        )


def test_a_compaction_policy_is_checked() -> None:
    with pytest.raises(ValueError, match="must be less than compact_at_tokens"):
        ContextPolicy(compact_at_tokens=2_000, compact_keep_tokens=2_000)
    with pytest.raises(ValueError, match="need compact_at_tokens"):
        ContextPolicy(keep_tool_results=3, compact_model="anthropic:claude-sonnet-4-5")
    assert ContextPolicy(compact_at_tokens=8_000).keep_tokens == 2_000


def test_a_saved_state_keeps_the_compaction(read_page: None) -> None:
    model = Reader()
    agent = Agent.create(template(), model=FunctionModel(model))
    agent.send_sync("Read the manual.")
    saved = agent.state.model_dump_json()
    assert '"compaction":' in saved
    again: list[list[Message]] = []

    def reply(request: ModelRequest) -> object:
        again.append(list(request.messages))
        return "Fifty pages."

    state = type(agent.state).model_validate_json(saved)
    rebuilt = Agent.from_state(state, model=FunctionModel(reply))
    rebuilt.send_sync("How many pages?")
    assert again[0] == [*model.chats[-1], *rebuilt.messages[-3:-1]]
    plain = Agent.create(template(), model=FunctionModel(reply))
    assert '"compaction"' not in plain.state.model_dump_json()  # none: not saved
