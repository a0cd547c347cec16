"""Anthropic's server-side context editing on the wire, through the real ``anthropic`` client:
the request's ``context_management`` and beta header, and the ``applied_edits`` read back."""

from __future__ import annotations

from typing import Any

import pytest
from anthropic.types.beta.beta_clear_tool_uses_20250919_edit_param import (
    BetaClearToolUses20250919EditParam,
)
from anthropic.types.beta.beta_context_management_response import BetaContextManagementResponse
from pydantic import TypeAdapter

from kode import Agent, AgentTemplate
from kode.agent import ContextPolicy, TurnEnd
from kode.models import AnthropicModel, ContextEdit, Message, ModelRequest, ModelResponse
from kode.models.anthropic_context import CONTEXT_MANAGEMENT_BETA, ContextEditing
from kode.testing.providers import FakeProviderServer, RawEvents, Reply

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings(
        r"ignore:Exception ignored in. <async_generator object "
        r"(Response\.aiter_bytes|SSEDecoder\.aiter_bytes|AsyncStream\._iter_events"
        r"|BoundAsyncStream\.__aiter__|PoolByteStream\.__aiter__"
        r"|HttpResponse\._aiter_response_stream|_aiter_sse_lines) "
        ":pytest.PytestUnraisableExceptionWarning"
    ),
]

EDITING = ContextEditing(
    trigger_tokens=30_000,
    keep_tool_uses=2,
    clear_at_least_tokens=5_000,
    exclude_tools=("memory_read",),
    clear_tool_inputs=True,
)


def edited_reply(text: str, *edits: dict[str, Any]) -> RawEvents:
    """A streamed reply whose message_delta reports `edits` as applied."""
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 40_000, "output_tokens": 0},
    }
    delta = {"type": "text_delta", "text": text}
    return RawEvents(
        events=[
            {"type": "message_start", "message": message},
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
            {"type": "content_block_delta", "index": 0, "delta": delta},
            {"type": "content_block_stop", "index": 0},
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": 3},
                "context_management": {"applied_edits": list(edits)},
            },
            {"type": "message_stop"},
        ]
    )


async def answer(model: AnthropicModel) -> ModelResponse:
    request = ModelRequest(system="Be brief.", messages=[Message.user("Hi.")], tools=[])
    async with model:
        events = [event async for event in model.stream(request)]
    response = events[-1]
    assert isinstance(response, ModelResponse)
    return response


async def test_the_request_asks_for_clearing_with_the_beta_header(
    server: FakeProviderServer,
) -> None:
    server.reply(Reply(content=["ok"]))
    model = AnthropicModel(
        "claude-sonnet-4-5", base_url=server.url, api_key="k", context_editing=EDITING
    )
    await answer(model)
    sent = server.requests[-1]
    assert sent.headers["anthropic-beta"] == CONTEXT_MANAGEMENT_BETA
    edits = sent.body["context_management"]["edits"]
    assert edits == [
        {
            "type": "clear_tool_uses_20250919",
            "trigger": {"type": "input_tokens", "value": 30_000},
            "keep": {"type": "tool_uses", "value": 2},
            "clear_at_least": {"type": "input_tokens", "value": 5_000},
            "exclude_tools": ["memory_read"],
            "clear_tool_inputs": True,
        }
    ]
    # What the SDK's own (beta) parameter type accepts.
    TypeAdapter(BetaClearToolUses20250919EditParam).validate_python(edits[0], strict=True)


async def test_a_settings_edit_is_kept_beside_it(server: FakeProviderServer) -> None:
    server.reply(Reply(content=["ok"]))
    thinking = {"type": "clear_thinking_20251015", "keep": {"type": "thinking_turns", "value": 1}}
    model = AnthropicModel(
        "claude-sonnet-4-5",
        base_url=server.url,
        api_key="k",
        context_editing=ContextEditing(),
        context_management={"edits": [thinking]},
    )
    await answer(model)
    edits = server.requests[-1].body["context_management"]["edits"]
    assert [e["type"] for e in edits] == ["clear_thinking_20251015", "clear_tool_uses_20250919"]
    assert edits[1]["trigger"] == {"type": "input_tokens", "value": 100_000}


async def test_off_by_default(server: FakeProviderServer) -> None:
    server.reply(Reply(content=["ok"]))
    await answer(AnthropicModel("claude-sonnet-4-5", base_url=server.url, api_key="k"))
    sent = server.requests[-1]
    assert "context_management" not in sent.body
    assert "anthropic-beta" not in sent.headers


async def test_the_applied_edits_are_read_back(server: FakeProviderServer) -> None:
    applied = {
        "type": "clear_tool_uses_20250919",
        "cleared_tool_uses": 4,
        "cleared_input_tokens": 12_500,
    }
    # The reply is what the SDK's beta response type describes.
    BetaContextManagementResponse.model_validate({"applied_edits": [applied]})
    server.reply(edited_reply("Done.", applied))
    model = AnthropicModel(
        "claude-sonnet-4-5", base_url=server.url, api_key="k", context_editing=EDITING
    )
    response = await answer(model)
    assert response.message.text == "Done."
    assert response.context_edits == (
        ContextEdit(
            kind="clear_tool_uses_20250919", cleared_tool_uses=4, cleared_input_tokens=12_500
        ),
    )


async def test_an_agent_turn_says_what_was_cleared(server: FakeProviderServer) -> None:
    applied = {
        "type": "clear_tool_uses_20250919",
        "cleared_tool_uses": 2,
        "cleared_input_tokens": 900,
    }
    server.reply(Reply(content=["Short now."], applied_edits=[applied]))
    model = AnthropicModel(
        "claude-sonnet-4-5", base_url=server.url, api_key="k", context_editing=EDITING
    )
    async with model:
        agent = Agent.create(AgentTemplate(id="t"), model=model)
        events: list[object] = []
        reply = await agent.send("Go on.", on_event=events.append)
    assert reply.text == "Short now."
    turns = [e for e in events if isinstance(e, TurnEnd)]
    assert turns[0].context_edits == (
        ContextEdit(kind="clear_tool_uses_20250919", cleared_tool_uses=2, cleared_input_tokens=900),
    )
    assert agent.messages[0].text == "Go on."  # the history kode keeps is whole


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="trigger_tokens must be at least 1"):
        ContextEditing(trigger_tokens=0)
    with pytest.raises(ValueError, match="keep_tool_uses must be 0 or more"):
        ContextEditing(keep_tool_uses=-1)
    with pytest.raises(ValueError, match="exclude_tools must be a tuple"):
        ContextEditing(exclude_tools="memory_read")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="context_editing must be a ContextEditing"):
        AnthropicModel("claude-sonnet-4-5", context_editing={"trigger_tokens": 5})  # type: ignore[arg-type]


async def test_a_template_policy_asks_for_it(server: FakeProviderServer) -> None:
    applied = {
        "type": "clear_tool_uses_20250919",
        "cleared_tool_uses": 1,
        "cleared_input_tokens": 70,
    }
    server.reply(Reply(content=["ok"], applied_edits=[applied]))
    # As a template file would give it: plain data, validated into a ContextEditing.
    policy = ContextPolicy.model_validate(
        {"server_editing": {"trigger_tokens": 60_000, "exclude_tools": ["memory_read"]}}
    )
    assert policy.server_editing == ContextEditing(
        trigger_tokens=60_000, exclude_tools=("memory_read",)
    )
    template = AgentTemplate(id="t", context=policy)
    assert AgentTemplate.model_validate(template.model_dump()) == template
    async with AnthropicModel("claude-sonnet-4-5", base_url=server.url, api_key="k") as model:
        agent = Agent.create(template, model=model)
        events: list[object] = []
        await agent.send("Go on.", on_event=events.append)
    sent = server.requests[-1]
    assert sent.headers["anthropic-beta"] == CONTEXT_MANAGEMENT_BETA
    edit = sent.body["context_management"]["edits"][0]
    assert edit["trigger"] == {"type": "input_tokens", "value": 60_000}
    assert edit["exclude_tools"] == ["memory_read"]
    assert [e.context_edits for e in events if isinstance(e, TurnEnd)] == [
        (
            ContextEdit(
                kind="clear_tool_uses_20250919", cleared_tool_uses=1, cleared_input_tokens=70
            ),
        )
    ]
