"""Strict tools and prompt-cache breakpoints on the wire, through the real ``anthropic`` client.

Each test sends a request with `AnthropicModel` to the loopback server and reads the JSON the
SDK client put on the wire.
"""

from __future__ import annotations

import logging
from typing import Annotated, Any

import pytest
from pydantic import Field

from kode.models import AnthropicModel, Message, ModelRequest, TextContent, ToolResultContent
from kode.models.messages import ToolUseContent
from kode.testing.providers import FakeProviderServer, Reply
from kode.tools import Tool, define_tool

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


@define_tool(registry=None)
def book(
    destination: Annotated[str, Field(min_length=2)],
    seats: Annotated[int, Field(ge=1, le=9)] = 1,
    note: str | None = None,
) -> str:
    """Book a train trip.

    Args:
        destination: The city to travel to.
        seats: How many seats.
        note: Anything the conductor should know.
    """
    return "booked"


@define_tool(registry=None)
def tag(labels: dict[str, str]) -> str:
    """Attach labels to files.

    Args:
        labels: File path to label.
    """
    return "tagged"


async def send(
    server: FakeProviderServer, request: ModelRequest, model: str = "claude-sonnet-4-6", **kw: Any
) -> dict[str, Any]:
    server.reply(Reply(content=["ok"]))
    async with AnthropicModel(model, base_url=server.url, api_key="k", **kw) as m:
        _ = [event async for event in m.stream(request)]
    body: dict[str, Any] = server.bodies[-1]
    return body


def ask(*tools: Tool[..., Any], system: str = "Be brief.", turns: int = 1) -> ModelRequest:
    messages = [Message.user("Book me a trip to Lyon.")]
    for n in range(1, turns):
        call = ToolUseContent(id=f"t{n}", name="book", input={"destination": "Lyon"})
        messages.append(Message(role="assistant", content=[call]))
        result = ToolResultContent(tool_use_id=f"t{n}", content=[TextContent(text="booked")])
        messages.append(Message(role="user", content=[result]))
    return ModelRequest(system=system, messages=messages, tools=list(tools))


def cached(body: dict[str, Any]) -> list[str]:
    """Where the request put cache_control: tool names, "system", "message"."""
    places = [t["name"] for t in body.get("tools", ()) if "cache_control" in t]
    system = body.get("system")
    if isinstance(system, list) and any("cache_control" in b for b in system):
        places.append("system")
    for message in body["messages"]:
        places += ["message" for block in message["content"] if "cache_control" in block]
    return places


# --- strict tool use ---------------------------------------------------------------------------


async def test_strict_tools_are_sent_strict_where_the_schema_allows(
    server: FakeProviderServer,
) -> None:
    body = await send(server, ask(book, tag), strict_tools=True)
    tools = {t["name"]: t for t in body["tools"]}
    assert tools["book"]["strict"] is True
    schema = tools["book"]["input_schema"]
    assert schema["additionalProperties"] is False
    assert schema["required"] == ["destination"]  # Anthropic takes optional parameters
    assert schema["properties"]["seats"]["default"] == 1
    seats = schema["properties"]["seats"]
    assert "minimum" not in seats and seats["description"].endswith("(minimum: 1) (maximum: 9)")
    destination = schema["properties"]["destination"]
    assert "minLength" not in destination and "(minLength: 2)" in destination["description"]
    assert "strict" not in tools["tag"]  # a free-form dict: sent plain
    assert tools["tag"]["input_schema"] == tag.input_schema


async def test_strict_tools_are_off_by_default(server: FakeProviderServer) -> None:
    body = await send(server, ask(book))
    assert "strict" not in body["tools"][0]
    assert body["tools"][0]["input_schema"] == book.input_schema


async def test_strict_tools_stay_within_the_request_limits(
    server: FakeProviderServer, caplog: pytest.LogCaptureFixture
) -> None:
    many = [
        Tool.from_schema(
            f"tool_{n}",
            description="A tool.",
            input_schema={
                "type": "object",
                "properties": {"a": {"type": "string"}},
                "required": ["a"],
            },
        )
        for n in range(22)
    ]
    with caplog.at_level(logging.WARNING, logger="kode.models"):
        body = await send(server, ask(*many), strict_tools=True, cache=False)
    strict = [t["name"] for t in body["tools"] if t.get("strict")]
    assert strict == [f"tool_{n}" for n in range(20)]
    warned = [r.getMessage() for r in caplog.records if r.name == "kode.models"]
    assert warned == [
        "2 tools are sent to Anthropic without strict mode ('tool_20', 'tool_21'): the strict "
        "tools before them reach Anthropic's limits for one request (20 tools, 24 optional "
        "parameters, 16 parameters with a union type)"
    ]


# --- prompt-cache breakpoints ------------------------------------------------------------------


async def test_breakpoints_on_the_last_tool_the_system_prompt_and_the_last_message(
    server: FakeProviderServer,
) -> None:
    system = "You book trains. " * 250  # 4,250 characters: past 1,024 tokens estimated
    body = await send(server, ask(tag, book, system=system, turns=3))
    assert cached(body) == ["system", "message"]  # the tools alone are too short
    assert body["system"] == [
        {"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}
    ]
    last = body["messages"][-1]["content"][-1]
    assert last["type"] == "tool_result" and last["cache_control"] == {"type": "ephemeral"}


async def test_long_tool_definitions_get_a_breakpoint_of_their_own(
    server: FakeProviderServer,
) -> None:
    long = [
        Tool.from_schema(f"tool_{n}", description="Does one thing well. " * 20) for n in range(12)
    ]
    body = await send(server, ask(*long))
    assert cached(body) == ["tool_11", "system", "message"]


async def test_a_short_prompt_is_not_marked(server: FakeProviderServer) -> None:
    body = await send(server, ask(book, turns=3))
    assert cached(body) == []
    assert body["system"] == "Be brief."


async def test_the_minimum_depends_on_the_model(server: FakeProviderServer) -> None:
    system = "You book trains. " * 250  # past 1,024 tokens, short of 4,096
    assert cached(await send(server, ask(book, system=system), model="claude-opus-4-6")) == []
    assert cached(await send(server, ask(book, system=system * 4), model="claude-opus-4-6")) == [
        "system",
        "message",
    ]


async def test_cache_false_sends_no_breakpoint(server: FakeProviderServer) -> None:
    body = await send(server, ask(book, system="You book trains. " * 1000, turns=3), cache=False)
    assert cached(body) == []
    assert isinstance(body["system"], str)
