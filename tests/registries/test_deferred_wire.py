"""Deferred tools on the wire: 1,000 registered tools, Anthropic's and OpenAI's real clients.

The first request carries only the tools not deferred and ``tool_search``; after a search, the
next request also carries the tools it found, and they stay for the session.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from search_corpus import corpus

from kode import Agent, AgentTemplate, Tool, ToolRegistry
from kode.models import AnthropicModel, OpenAIModel, ToolUseContent
from kode.testing.providers import FakeProviderServer, Reply

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


@pytest.fixture(scope="module")
def thousand() -> ToolRegistry:
    """The retrieval test set's 305 tools and generated ones: 1,000 tools in all."""
    reg = corpus()
    resources = ["invoice", "report", "widget", "ticket", "order", "shipment", "coupon"]
    verbs = ["create", "get", "list", "update", "delete", "archive", "export"]
    i = 0
    while len(reg) < 1000:
        verb, resource = verbs[i % len(verbs)], resources[(i // len(verbs)) % len(resources)]
        reg.register(
            Tool.from_schema(
                f"gen{i // 49}_{verb}_{resource}",
                description=f"{verb.capitalize()} a {resource} in back office {i // 49}.",
                input_schema={"type": "object", "properties": {"id": {"type": "string"}}},
            )
        )
        i += 1
    return reg


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as fake:
        yield fake


def _model(provider: str, server: FakeProviderServer) -> Any:
    if provider == "anthropic":
        return AnthropicModel("claude-test", base_url=server.url, api_key="k")
    return OpenAIModel("gpt-test", base_url=server.openai_base_url, api_key="k")


def _sent(provider: str, body: dict[str, Any]) -> list[str]:
    if provider == "anthropic":
        return [t["name"] for t in body.get("tools", ())]
    return [t["function"]["name"] for t in body.get("tools", ())]


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
async def test_only_what_was_found_is_sent(
    provider: str, server: FakeProviderServer, thousand: ToolRegistry
) -> None:
    assert len(thousand) == 1000
    search = ToolUseContent(id="s1", name="tool_search", input={"query": "open a github issue"})
    server.reply(Reply(content=[search]), Reply(content=["Found it."]), Reply(content=["Again."]))
    template = AgentTemplate(id="many", tools=["fs_read", "fs_ls"], deferred=["mcp__*", "gen*"])
    agent = Agent.create(template, model=_model(provider, server), registry=thousand)
    assert len(agent.tools) == 1 + len(agent.resolution.deferred) + 2 > 900
    await agent.send("File a bug about the crash.")
    first, second = (_sent(provider, body) for body in server.bodies[:2])
    assert first == ["fs_ls", "fs_read", "tool_search"]
    assert agent.tool_search is not None
    found = [agent.tool_search.deferred[key].name for key in agent.tool_search.loaded]
    assert "mcp__github__create_issue" in found and len(found) == 5
    assert second == [*first, *found]
    await agent.send("And again.")
    assert _sent(provider, server.bodies[2]) == second  # loaded for the session
