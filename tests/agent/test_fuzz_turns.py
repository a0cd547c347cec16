"""Property: whatever tool calls a model sends, every one is answered, in order, in one message."""

from __future__ import annotations

from typing import Any

import anyio
from hypothesis import given, settings
from hypothesis import strategies as st
from support import assert_history_valid

from kode import define_tool
from kode.agent import Agent, AgentTemplate
from kode.models import ScriptedModel, ToolResultContent, ToolUseContent
from kode.registries import ToolRegistry

REG = ToolRegistry(name="fuzz")


@define_tool(registry=REG, kind="read")
def add(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: The first.
        b: The second.
    """
    return a + b


@define_tool(registry=REG, kind="edit")
def write(path: str, text: str = "") -> str:
    """Write a file.

    Args:
        path: The file.
        text: The content.
    """
    if path.startswith("/"):
        raise PermissionError(path)
    return text * 50


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3)
    ),
    max_leaves=8,
)
names = st.sampled_from(["add", "write", " ADD ", "Write", "nope", ""]) | st.text(max_size=12)
inputs = st.dictionaries(
    st.sampled_from(["a", "b", "path", "text", "x"]), json_values, max_size=3
) | st.text(max_size=20)
calls = st.lists(st.tuples(names, inputs), min_size=1, max_size=6)


@settings(max_examples=40, deadline=None)
@given(turns=st.lists(calls, min_size=1, max_size=3))
def test_every_call_is_answered(turns: list[list[tuple[str, Any]]]) -> None:
    script: list[Any] = [
        [ToolUseContent(id=f"t{t}c{i}", name=n, input=v) for i, (n, v) in enumerate(turn)]
        for t, turn in enumerate(turns)
    ]
    model = ScriptedModel([*script, "done"])
    agent = Agent.create(
        AgentTemplate(id="fuzz", tools=["*"], max_result_chars=100, max_concurrent_tools=2),
        model=model,
        registry=REG,
    )
    reply = anyio.run(agent.send, "go")
    assert reply.text == "done"
    assert_history_valid(agent.messages)
    for request, turn in zip(model.requests[1:], script, strict=True):
        results = request.messages[-1].content
        assert all(isinstance(r, ToolResultContent) for r in results)
        assert [r.tool_use_id for r in results] == [c.id for c in turn]  # type: ignore[union-attr]
        assert all(len(r.text) <= 220 for r in results)  # type: ignore[union-attr]
    assert len(agent.state.tool_calls) == sum(len(t) for t in turns)
    assert {r.status for r in agent.state.tool_calls} <= {"done", "failed"}


# Text with lone surrogates (hypothesis leaves category Cs out by default) and a handful of ids,
# so calls repeat ids within a turn and across turns, and some have none.
wild_text = st.text(st.characters(categories=["L", "N", "P", "Zs", "Cs"]), max_size=8)
wild_values = st.recursive(
    st.none() | st.integers() | wild_text,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(wild_text, children, max_size=3)
    ),
    max_leaves=6,
)
wild_calls = st.lists(
    st.tuples(
        st.sampled_from(["d", "e", ""]),
        st.sampled_from(["add", "write", "nope"]),
        st.dictionaries(st.sampled_from(["a", "b", "path", "text"]), wild_values, max_size=3),
    ),
    min_size=1,
    max_size=5,
)


@settings(max_examples=40, deadline=None)
@given(turns=st.lists(wild_calls, min_size=1, max_size=3), prompt=wild_text, answer=wild_text)
def test_repeated_ids_and_unencodable_text_still_give_a_valid_saved_history(
    turns: list[list[tuple[str, str, dict[str, Any]]]], prompt: str, answer: str
) -> None:
    from kode.agent import AgentState
    from kode.models import TextContent

    script: list[Any] = [
        [ToolUseContent(id=i, name=n, input=v) for i, n, v in turn] for turn in turns
    ]
    model = ScriptedModel([*script, [TextContent(text=answer or "x")]])
    agent = Agent.create(
        AgentTemplate(id="fuzz", tools=["*"], max_result_chars=100), model=model, registry=REG
    )
    anyio.run(agent.send, prompt or "go")
    assert_history_valid(agent.messages)
    ids = [c.id for m in agent.messages for c in m.tool_uses]
    assert len(ids) == len(set(ids)) == sum(len(t) for t in turns)
    assert all(ids)
    saved = agent.state.model_dump_json()
    assert AgentState.model_validate_json(saved).model_dump_json() == saved
