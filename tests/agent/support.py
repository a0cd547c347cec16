"""Helpers shared by the agent tests: building agents, reading what the model was sent."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from typing import Any

from kode.agent import Agent, AgentEvent, AgentTemplate
from kode.models import (
    FunctionModel,
    Message,
    ScriptedModel,
    ScriptedTurn,
    TextContent,
    ToolResultContent,
)
from kode.registries import ToolRegistry


def make_agent(
    registry: ToolRegistry,
    turns: Sequence[ScriptedTurn],
    *,
    tools: Sequence[str] = ("*",),
    create: dict[str, Any] | None = None,
    **template: Any,
) -> tuple[Agent, ScriptedModel]:
    """An agent over `registry` (template id ``t``) talking to a `ScriptedModel` of `turns`."""
    model = ScriptedModel(list(turns))
    tpl = AgentTemplate(id=template.pop("id", "t"), tools=list(tools), **template)
    agent = Agent.create(tpl, model=model, registry=registry, **(create or {}))
    return agent, model


def sent_results(
    model: ScriptedModel | FunctionModel, request: int = -1
) -> list[ToolResultContent]:
    """The tool results in the last message of one request (the latest by default)."""
    last = model.requests[request].messages[-1]
    assert last.role == "user"
    blocks = [b for b in last.content if isinstance(b, ToolResultContent)]
    assert len(blocks) == len(last.content), f"not only tool results: {last.content}"
    return blocks


def texts(results: Sequence[ToolResultContent]) -> list[tuple[str, bool]]:
    """Each result's text and is_error."""
    return [(r.text, r.is_error) for r in results]


def assert_history_valid(messages: Sequence[Message]) -> None:
    """Roles alternate, every tool_use is answered in order by the next message, and only then."""
    assert messages[0].role == "user"
    for a, b in pairwise(messages):
        assert a.role != b.role, f"two {a.role} messages in a row"
    for i, message in enumerate(messages):
        results = [b.tool_use_id for b in message.content if isinstance(b, ToolResultContent)]
        if message.role == "assistant":
            assert not results
            calls = [c.id for c in message.tool_uses]
            if calls:
                assert i + 1 < len(messages), "the last tool_use has no tool_result"
                answered = [
                    b.tool_use_id
                    for b in messages[i + 1].content
                    if isinstance(b, ToolResultContent)
                ]
                assert answered == calls
        elif i > 0:
            previous = [c.id for c in messages[i - 1].tool_uses]
            assert results == previous
            # results come first, then any text the user added
            kinds = [isinstance(b, ToolResultContent) for b in message.content]
            assert kinds == sorted(kinds, reverse=True)
        else:
            assert not results


def of_type(events: Sequence[AgentEvent], kind: type[Any]) -> list[Any]:
    """The events of one class, in order."""
    return [e for e in events if isinstance(e, kind)]


def user_text(message: Message) -> list[str]:
    """The text blocks of a message."""
    return [b.text for b in message.content if isinstance(b, TextContent)]
