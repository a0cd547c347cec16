"""What a turn's hot path builds without pydantic's validation is what validation would build.

The call records are slotted dataclasses that `AgentState` validates and serialises, the
``tool_result`` blocks are built from values already of the right types, and a model's message
is checked for text that cannot be encoded in one pass: each gives what the slower way gave.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from pydantic import ValidationError
from support import make_agent

from kode import ToolContext, define_tool
from kode.agent import AgentState, ToolCallRecord, ToolEnd, ToolStart
from kode.agent import blocks as blocks_module
from kode.agent.blocks import result_block, results_message
from kode.agent.hooks import AgentHooks
from kode.agent.text import CUT_MARK, clean_message
from kode.models import (
    ImageContent,
    Message,
    ProviderContent,
    TextContent,
    ThinkingContent,
    ToolResultContent,
    ToolUseContent,
    tool_use,
)
from kode.registries import ToolRegistry
from kode.sessions import MemoryStore
from kode.tools.results import ImageBlock, TextBlock, ToolResult, error_result, text_result
from kode.tools.validation import MAX_INPUT_DEPTH

pytestmark = pytest.mark.anyio


# A state written before call records were dataclasses (they were pydantic models then).
OLD_STATE = {
    "version": 1,
    "template_id": "t",
    "agent_id": "agent_1",
    "session_id": "session_1",
    "messages": [
        {"role": "user", "content": [{"type": "text", "text": "go"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "a", "name": "echo", "input": {"text": "hi"}},
                {"type": "tool_use", "id": "b", "name": "nope", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "a",
                    "content": [{"type": "text", "text": "hi"}],
                    "is_error": False,
                },
                {
                    "type": "tool_result",
                    "tool_use_id": "b",
                    "content": [{"type": "text", "text": "Tool 'nope' is not available."}],
                    "is_error": True,
                },
            ],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
    ],
    "tool_calls": [
        {
            "id": "a",
            "name": "echo",
            "input": {"text": "hi"},
            "status": "done",
            "result": {
                "type": "tool_result",
                "tool_use_id": "a",
                "content": [{"type": "text", "text": "hi"}],
                "is_error": False,
            },
            "error_type": None,
            "started_at": 1.0,
            "ended_at": 2.0,
            "client": False,
        },
        {
            "id": "b",
            "name": "nope",
            "input": {},
            "status": "failed",
            "result": {
                "type": "tool_result",
                "tool_use_id": "b",
                "content": [{"type": "text", "text": "Tool 'nope' is not available."}],
                "is_error": True,
            },
            "error_type": "tool_not_registered",
            "started_at": None,
            "ended_at": 2.0,
            "client": False,
        },
    ],
    "todos": [],
    "usage": {"input_tokens": 0, "output_tokens": 0},
    "status": "idle",
    "always_allowed": [],
    "template": None,
}


@pytest.fixture
def reg() -> ToolRegistry:
    registry = ToolRegistry()

    @define_tool(registry=registry, kind="read")
    def echo(text: str) -> str:
        """Echo a text."""
        return text

    @define_tool(registry=registry, kind="read")
    def where(path: str, ctx: ToolContext) -> str:
        """Say which call this is."""
        return f"{ctx.tool_call_id}: {path}"

    return registry


# --- call records ---------------------------------------------------------------------------


def test_a_state_saved_by_the_earlier_format_reads_and_writes_the_same_json() -> None:
    state = AgentState.model_validate_json(json.dumps(OLD_STATE))
    first, second = state.tool_calls
    assert isinstance(first, ToolCallRecord)
    assert (first.id, first.status, first.started_at, first.result and first.result.text) == (
        "a",
        "done",
        1.0,
        "hi",
    )
    assert second.error_type == "tool_not_registered" and second.result is not None
    assert json.loads(state.model_dump_json()) == OLD_STATE


def test_a_record_with_an_unknown_key_or_a_bad_status_is_refused() -> None:
    bad_key = json.loads(json.dumps(OLD_STATE))
    bad_key["tool_calls"][0]["colour"] = "red"
    with pytest.raises(ValidationError, match=r"tool_calls\.0\.colour"):
        AgentState.model_validate(bad_key)
    bad_status = json.loads(json.dumps(OLD_STATE))
    bad_status["tool_calls"][1]["status"] = "finished"
    with pytest.raises(ValidationError, match=r"tool_calls\.1\.status"):
        AgentState.model_validate(bad_status)


async def test_the_state_of_a_run_holds_copies_of_its_records(reg: ToolRegistry) -> None:
    agent, _ = make_agent(reg, [[tool_use("echo", {"text": "hi"}, id="a")], "done"])
    await agent.send("go")
    live = agent.records.get("a")
    assert live is not None and live.status == "done" and live.started_at is not None
    saved = agent.state.tool_calls[0]
    assert saved == live and saved is not live
    assert isinstance(saved.input, dict) and saved.input is not live.input
    assert saved.result is not None and saved.result is not live.result
    saved.input["text"] = "changed"
    assert live.input == {"text": "hi"}
    again = AgentState.model_validate_json(agent.state.model_dump_json())
    assert again.tool_calls == [live]


# --- tool_result blocks ---------------------------------------------------------------------


def validated(call_id: str, result: ToolResult) -> ToolResultContent:
    """The block as pydantic's validation builds it."""
    content: list[TextContent | ImageContent] = [
        TextContent(text=b.text)
        if isinstance(b, TextBlock)
        else ImageContent.model_validate(b.to_dict())
        for b in result.content
    ]
    return ToolResultContent(tool_use_id=call_id, content=content, is_error=result.is_error)


@pytest.mark.parametrize(
    "result",
    [
        text_result("plain"),
        error_result("it failed"),
        ToolResult(
            content=(TextBlock(text="one"), ImageBlock(data=b"\x89PNG", media_type="image/png"))
        ),
        ToolResult(content=()),
    ],
    ids=["text", "error", "text-and-image", "empty"],
)
def test_a_result_block_is_the_block_validation_builds(result: ToolResult) -> None:
    assert blocks_module._BUILT  # this pydantic takes the fast way, which is what is tested
    made = result_block("call_1", result)
    valid = validated("call_1", result)
    assert made == valid
    assert made.model_fields_set == valid.model_fields_set
    assert [b.model_fields_set for b in made.content] == [b.model_fields_set for b in valid.content]
    assert made.model_dump_json() == valid.model_dump_json()
    assert repr(made) == repr(valid)
    assert made.model_copy(deep=True) == valid
    assert Message(role="user", content=[made]).content[0] is made
    assert ToolResultContent.model_validate_json(made.model_dump_json()) == valid


def test_the_results_message_is_the_message_validation_builds() -> None:
    blocks: list[Any] = [
        result_block("a", text_result("one")),
        result_block("b", error_result("no")),
    ]
    made = results_message(list(blocks))
    valid = Message(role="user", content=list(blocks))
    assert made == valid and made.model_fields_set == valid.model_fields_set
    assert made.model_dump_json() == valid.model_dump_json()
    assert Message.model_validate_json(made.model_dump_json()) == valid
    # anything but tool_result blocks is validated as in any message
    note: Any = {"type": "text", "text": "and a note"}
    mixed = results_message([*blocks, note])
    assert isinstance(mixed.content[2], TextContent) and mixed.content[2].text == "and a note"
    with pytest.raises(ValidationError):
        bad: Any = {**note, "text": None}
        results_message([*blocks, bad])


def test_a_result_block_cleans_lone_surrogates() -> None:
    made = result_block("c", text_result("bad \ud800 text"))
    assert made.text == "bad \ufffd text"
    made.model_dump_json()  # encodes


def test_a_result_of_odd_types_is_validated_as_before() -> None:
    odd = ToolResult(content=(TextBlock(text="x"),), is_error=1)  # type: ignore[arg-type]
    block = result_block("c", odd)
    assert block.is_error is True and type(block.is_error) is bool


# --- a model's message: encodable, not too deep -------------------------------------------


def nested(depth: int) -> Any:
    """Lists inside one another, `depth` levels in all (under the input object's own level)."""
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


def test_a_clean_message_is_kept_as_it_is() -> None:
    message = Message(
        role="assistant",
        content=[
            TextContent(text="Looking."),
            ThinkingContent(thinking="hmm", signature="sig"),
            ProviderContent(provider="anthropic", data={"type": "server_tool_use", "x": [1]}),
            tool_use("echo", {"text": "hi", "items": [{"a": [1, 2]}, {"b": {"c": 1}}]}, id="a"),
            tool_use("echo", {"deep": nested(MAX_INPUT_DEPTH - 1)}, id="b"),  # at the limit
            ToolUseContent(id="c", name="echo", input="not json"),
        ],
    )
    assert clean_message(message) is message


@pytest.mark.parametrize(
    "block",
    [
        TextContent(text="a \ud800"),
        ThinkingContent(thinking="a \ud800"),
        ProviderContent(provider="anthropic", data={"text": "a \ud800"}),
        ToolUseContent(id="a\ud800", name="echo", input={}),
        ToolUseContent(id="a", name="echo\ud800", input={}),
        ToolUseContent(id="a", name="echo", input={"k\ud800": 1}),
        ToolUseContent(id="a", name="echo", input={"items": [{"deep": ["a \ud800"]}]}),
        ToolUseContent(id="a", name="echo", input="text \ud800"),
    ],
    ids=["text", "thinking", "provider", "id", "name", "key", "nested-value", "string-input"],
)
def test_a_lone_surrogate_anywhere_makes_a_clean_copy(block: Any) -> None:
    message = Message(role="assistant", content=[TextContent(text="ok"), block])
    cleaned = clean_message(message)
    assert cleaned is not message
    assert "\ufffd" in cleaned.model_dump_json()
    assert clean_message(cleaned) is cleaned


def test_input_too_deep_behind_a_shallow_one_is_cut() -> None:
    message = Message(
        role="assistant",
        content=[
            tool_use("echo", {"items": [{"a": 1}]}, id="a"),
            tool_use("echo", {"deep": nested(MAX_INPUT_DEPTH + 3)}, id="b"),
        ],
    )
    cleaned = clean_message(message)
    assert cleaned is not message
    assert cleaned.content[0] == message.content[0]
    assert CUT_MARK in cleaned.model_dump_json()
    one_more = Message(role="assistant", content=[tool_use("echo", {"d": nested(MAX_INPUT_DEPTH)})])
    assert clean_message(one_more) is not one_more  # deeper than the limit: checked, copied


# --- the pipeline ---------------------------------------------------------------------------


async def test_tool_start_shows_the_arguments_without_the_context(reg: ToolRegistry) -> None:
    events: list[Any] = []
    agent, _ = make_agent(
        reg,
        [
            [tool_use("echo", {"text": "hi"}, id="a"), tool_use("where", {"path": "x"}, id="b")],
            "ok",
        ],
    )
    await agent.send("go", on_event=events.append)
    starts = {e.call_id: e.input for e in events if isinstance(e, ToolStart)}
    assert starts == {"a": {"text": "hi"}, "b": {"path": "x"}}
    assert agent.messages[2].content[1].text == "b: x"  # type: ignore[union-attr]


def test_hooks_for_a_tool_without_any_are_empty_and_with_some_are_in_order() -> None:
    def first(call: Any, ctx: Any) -> None:
        return None

    def second(call: Any, ctx: Any) -> None:
        return None

    assert AgentHooks().for_tool("echo") == ((), ())
    hooks = AgentHooks(pre_tool_use=[first], tools={"echo": AgentHooks(pre_tool_use=[second])})
    assert hooks.for_tool("echo") == ([first, second], [])
    assert hooks.for_tool("other") == ([first], [])


async def test_a_parallel_call_without_a_store_is_one_task_running_its_pipeline(
    reg: ToolRegistry,
) -> None:
    """Each call of a parallel turn runs in a task of its own, its pipeline as the task's
    coroutine (no wrapper around it): the plain pipeline without hooks, a store or a
    permission check, the whole one with hooks; with a store, a wrapper writes the call's
    end."""

    @define_tool(registry=reg, kind="read")
    async def task_name() -> str:
        """Say which task runs the call."""
        return anyio.get_current_task().name

    turn = [tool_use("task_name", {}, id="a"), tool_use("task_name", {}, id="b")]
    agent, _ = make_agent(reg, [turn, "ok"])
    await agent.send("go")
    names = [block.content[0].text for block in agent.messages[2].content]  # type: ignore[union-attr]
    assert names == ["kode.agent.pipeline._plain_call"] * 2
    hooked, _ = make_agent(
        reg, [turn, "ok"], create={"hooks": AgentHooks(pre_tool_use=[lambda call, ctx: None])}
    )
    await hooked.send("go")
    names = [block.content[0].text for block in hooked.messages[2].content]  # type: ignore[union-attr]
    assert names == ["kode.agent.pipeline._Call.run"] * 2
    checked, _ = make_agent(reg, [turn, "ok"], permission={"mode": "approval"})
    await checked.send("go")  # (the permission step lets read calls run: not plain)
    names = [block.content[0].text for block in checked.messages[2].content]  # type: ignore[union-attr]
    assert names == ["kode.agent.pipeline._Call.run"] * 2
    stored, _ = make_agent(reg, [turn, "ok"], create={"store": MemoryStore()})
    await stored.send("go")
    names = [block.content[0].text for block in stored.messages[2].content]  # type: ignore[union-attr]
    assert names == ["kode.agent.pipeline._run_into"] * 2
    await stored.aclose()


async def test_a_call_ends_timed_from_its_own_start(reg: ToolRegistry) -> None:
    """`ToolEnd.duration` counts from the call's pipeline starting, also for a call answered
    without running (a repeated id) and for calls started as tasks of a parallel turn."""

    @define_tool(registry=reg, kind="read")
    async def nap() -> str:
        """Sleep a little."""
        await anyio.sleep(0.05)
        return "rested"

    events: list[Any] = []
    agent, _ = make_agent(
        reg,
        [
            [
                tool_use("nap", {}, id="a"),
                tool_use("nap", {}, id="a"),  # a repeated id: answered, not run
                tool_use("echo", {"text": "x"}, id="c"),
            ],
            "ok",
        ],
    )
    await agent.send("go", on_event=events.append)
    ends = [e for e in events if isinstance(e, ToolEnd)]
    assert len(ends) == 3
    durations = {e.call_id: e.duration for e in ends}
    assert 0.04 < durations["a"] < 5
    assert all(0 <= d < 5 for d in durations.values()), durations


def test_the_slot_setters_blocks_are_built_with_set_the_slots() -> None:
    """`_built` sets BaseModel's slots through their own setters; a name BaseModel has no slot
    for falls back to object.__setattr__ (`_builds_as_validation` would then say no)."""
    model = object.__new__(TextContent)
    blocks_module._slot_setter("__dict__")(model, {"type": "text", "text": "x"})
    blocks_module._slot_setter("__pydantic_fields_set__")(model, {"text"})
    blocks_module._slot_setter("__pydantic_extra__")(model, None)
    blocks_module._slot_setter("__pydantic_private__")(model, None)
    assert model == TextContent(text="x")
    assert model.model_fields_set == {"text"}
    fallback = blocks_module._slot_setter("__pydantic_no_such_slot__")
    fallback(model, 1)
    assert model.__dict__["__pydantic_no_such_slot__"] == 1
    assert blocks_module._builds_as_validation()


async def test_a_calls_events_outcome_and_record_are_what_their_classes_make(
    reg: ToolRegistry,
) -> None:
    """The pipeline makes ToolStart, ToolEnd, CallOutcome and ToolCallRecord by calling their
    __init__ directly: the objects are the ones the classes make, every field set."""
    from dataclasses import fields

    from kode.agent.state import CallOutcome

    for cls in (ToolStart, ToolEnd, CallOutcome, ToolCallRecord):
        assert cls.__new__ is object.__new__, cls  # (else calling __init__ alone differs)
    events: list[Any] = []
    agent, _ = make_agent(reg, [[tool_use("echo", {"text": "hi"}, id="a")], "ok"])
    await agent.send("go", on_event=events.append)
    (start,) = [e for e in events if isinstance(e, ToolStart)]
    (end,) = [e for e in events if isinstance(e, ToolEnd)]
    assert start == ToolStart(call_id="a", name="echo", input={"text": "hi"})
    assert repr(start) == "ToolStart(call_id='a', name='echo', input={'text': 'hi'})"
    made = ToolEnd(
        call_id="a",
        name="echo",
        duration=end.duration,
        is_error=False,
        result=result_block("a", text_result("hi")),
        status="done",
    )
    assert end == made and repr(end) == repr(made)
    assert [getattr(end, f.name) for f in fields(ToolEnd)] == [
        getattr(made, f.name) for f in fields(ToolEnd)
    ]
    (record,) = agent.state.tool_calls
    again = ToolCallRecord(id="a", name="echo", input={"text": "hi"})
    for f in fields(ToolCallRecord):
        if f.name not in ("status", "result", "started_at", "ended_at"):
            assert getattr(record, f.name) == getattr(again, f.name), f.name
    assert record.status == "done" and record.result == made.result
