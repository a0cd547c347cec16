"""A provider's own tool search, on the wire with the real SDK clients and the fake server.

``AnthropicModel(tool_search="bm25")`` sends every deferred tool with ``defer_loading: true``
and Anthropic's search server tool instead of kode's ``tool_search``; the reply's
``server_tool_use`` and ``tool_search_tool_result`` blocks are kept and sent back unchanged.
``OpenAIResponsesModel(tool_search="hosted")`` does the same with the Responses API's hosted
``tool_search`` and its ``tool_search_call`` / ``tool_search_output`` items.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest

from kode import Agent, AgentTemplate, ToolRegistry, define_tool
from kode.models import (
    AnthropicModel,
    Message,
    ModelRequest,
    OpenAIResponsesModel,
    ProviderContent,
    ScriptedModel,
    TextContent,
    ToolUseContent,
)
from kode.models.anthropic import to_anthropic_messages
from kode.models.responses_input import to_responses_input
from kode.models.translate import to_openai_messages
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

ISSUES: list[tuple[str, str]] = []


@pytest.fixture
def registry() -> ToolRegistry:
    reg = ToolRegistry()

    @define_tool(kind="read", registry=reg)
    def word_count(text: str) -> int:
        """Count the words of a text."""
        return len(text.split())

    @define_tool(defer_loading=True, registry=reg)
    def create_issue(repo: str, title: str) -> str:
        """Create an issue in a GitHub repository."""
        ISSUES.append((repo, title))
        return f"Created '{title}' in {repo}."

    @define_tool(defer_loading=True, registry=reg)
    def send_sms(to: str, text: str) -> str:
        """Send an SMS text message to a phone number."""
        return "sent"

    return reg


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as fake:
        yield fake


SERVER_USE = {
    "type": "server_tool_use",
    "id": "srvtoolu_01",
    "name": "tool_search_tool_bm25",
    "input": {"query": "github issue"},
}
SEARCH_RESULT = {
    "type": "tool_search_tool_result",
    "tool_use_id": "srvtoolu_01",
    "content": {
        "type": "tool_search_tool_search_result",
        "tool_references": [{"type": "tool_reference", "tool_name": "create_issue"}],
    },
}
CALL = ToolUseContent(
    id="toolu_02", name="create_issue", input={"repo": "acme/app", "title": "Crash"}
)


async def test_anthropic_searches_natively(
    server: FakeProviderServer, registry: ToolRegistry
) -> None:
    ISSUES.clear()
    server.reply(
        Reply(
            content=[
                "Let me look for a tool.",
                ProviderContent(provider="anthropic", data=SERVER_USE),
                ProviderContent(provider="anthropic", data=SEARCH_RESULT),
                CALL,
            ],
            chunk_size=7,
        ),
        Reply(content=["Filed."]),
    )
    model = AnthropicModel("claude-test", base_url=server.url, api_key="k", tool_search="bm25")
    template = AgentTemplate(id="native", tools=["word_count", "create_issue", "send_sms"])
    agent = Agent.create(template, model=model, registry=registry)
    assert agent.searches_natively
    reply = await agent.send("File a bug: the app crashes.")
    assert reply.text == "Filed."
    assert ISSUES == [("acme/app", "Crash")]

    first, second = server.bodies
    # All allowed tools: the deferred ones flagged, Anthropic's search in place of kode's.
    assert [(t.get("name"), t.get("defer_loading")) for t in first["tools"]] == [
        ("word_count", None),
        ("create_issue", True),
        ("send_sms", True),
        ("tool_search_tool_bm25", None),
    ]
    assert first["tools"][-1] == {
        "type": "tool_search_tool_bm25_20251119",
        "name": "tool_search_tool_bm25",
    }
    assert first["tools"][1]["input_schema"]["required"] == ["repo", "title"]

    # The history sent back: the server blocks unchanged, in their place, then the call.
    assistant = second["messages"][1]
    assert assistant["role"] == "assistant"
    assert assistant["content"] == [
        {"type": "text", "text": "Let me look for a tool."},
        SERVER_USE,
        SEARCH_RESULT,
        {"type": "tool_use", **CALL.model_dump(exclude={"type"})},
    ]
    anthropic.types.ServerToolUseBlock.model_validate(assistant["content"][1])
    anthropic.types.ToolSearchToolResultBlock.model_validate(assistant["content"][2])
    results = second["messages"][2]["content"]
    assert [(r["type"], r["tool_use_id"]) for r in results] == [("tool_result", "toolu_02")]
    # create_issue was found: it is sent whole from now on; send_sms still waits.
    assert [(t.get("name"), t.get("defer_loading")) for t in second["tools"]] == [
        ("word_count", None),
        ("create_issue", None),
        ("send_sms", True),
        ("tool_search_tool_bm25", None),
    ]
    # The session keeps the blocks, and a model of another provider leaves them out.
    blocks = agent.session.messages[1].content
    assert [b.type for b in blocks] == ["text", "provider", "provider", "tool_use"]
    assert to_openai_messages(agent.session.messages[1:2]) == [
        {
            "role": "assistant",
            "content": "Let me look for a tool.",
            "tool_calls": [
                {
                    "id": "toolu_02",
                    "type": "function",
                    "function": {
                        "name": "create_issue",
                        "arguments": '{"repo":"acme/app","title":"Crash"}',
                    },
                }
            ],
        }
    ]
    assert [i.get("type") for i in to_responses_input(agent.session.messages[1:2])] == [
        None,
        "function_call",
    ]


async def test_anthropic_local_search_stays_the_default(
    server: FakeProviderServer, registry: ToolRegistry
) -> None:
    server.reply(Reply(content=["Hi."]))
    model = AnthropicModel("claude-test", base_url=server.url, api_key="k")
    template = AgentTemplate(id="local", tools=["word_count", "create_issue", "send_sms"])
    agent = Agent.create(template, model=model, registry=registry)
    assert not agent.searches_natively
    await agent.send("Hello.")
    tools = server.bodies[0]["tools"]
    assert [t["name"] for t in tools] == ["word_count", "tool_search"]
    assert not any("defer_loading" in t for t in tools)


async def test_anthropic_without_deferred_tools_sends_no_search(
    server: FakeProviderServer, registry: ToolRegistry
) -> None:
    server.reply(Reply(content=["Hi."]))
    model = AnthropicModel("claude-test", base_url=server.url, api_key="k", tool_search="regex")
    agent = Agent.create(
        AgentTemplate(id="few", tools=["word_count"]), model=model, registry=registry
    )
    await agent.send("Hello.")
    assert [t["name"] for t in server.bodies[0]["tools"]] == ["word_count"]


def test_history_with_server_blocks_declares_the_search_tool() -> None:
    """A request whose history holds server-tool blocks declares the search tool even when
    every deferred tool is loaded (the API refuses blocks of an undeclared server tool)."""
    model = AnthropicModel("claude-test", api_key="k", tool_search="regex")
    messages = [
        Message.user("Find it."),
        Message(
            role="assistant",
            content=[
                ProviderContent(
                    provider="anthropic", data={**SERVER_USE, "name": "tool_search_tool_regex"}
                ),
                ProviderContent(provider="anthropic", data=SEARCH_RESULT),
                TextContent(text="Found."),
            ],
        ),
        Message.user("Thanks."),
    ]
    params = model.request_params(ModelRequest(system="", messages=messages, tools=[]))
    assert params["tools"] == [
        {"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"}
    ]
    assert to_anthropic_messages(messages)[1]["content"][0]["name"] == "tool_search_tool_regex"


def test_a_wrong_tool_search_is_refused() -> None:
    with pytest.raises(ValueError, match="'bm25' \\(words\\), 'regex', or None"):
        AnthropicModel("claude-test", api_key="k", tool_search="hosted")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="use 'hosted', or None"):
        OpenAIResponsesModel("gpt-test", api_key="k", tool_search="bm25")  # type: ignore[arg-type]


SEARCH_CALL = {
    "type": "tool_search_call",
    "id": "tsc_01",
    "call_id": None,
    "execution": "server",
    "status": "completed",
    "arguments": {"query": "github issue"},
}


async def test_responses_searches_natively(
    server: FakeProviderServer, registry: ToolRegistry
) -> None:
    ISSUES.clear()
    found = {
        "type": "function",
        "name": "create_issue",
        "description": "Create an issue in a GitHub repository.",
        "parameters": {
            "type": "object",
            "properties": {"repo": {"type": "string"}, "title": {"type": "string"}},
            "required": ["repo", "title"],
            "additionalProperties": False,
        },
        "strict": True,
        "defer_loading": True,
    }
    search_output = {
        "type": "tool_search_output",
        "id": "tso_01",
        "call_id": None,
        "execution": "server",
        "status": "completed",
        "tools": [found],
    }
    server.reply(
        Reply(
            content=[
                ProviderContent(provider="openai", data=SEARCH_CALL),
                ProviderContent(provider="openai", data=search_output),
                CALL,
            ]
        ),
        Reply(content=["Filed."]),
    )
    model = OpenAIResponsesModel(
        "gpt-test", base_url=server.openai_base_url, api_key="k", tool_search="hosted"
    )
    template = AgentTemplate(id="native", tools=["word_count", "create_issue", "send_sms"])
    agent = Agent.create(template, model=model, registry=registry)
    reply = await agent.send("File a bug: the app crashes.")
    assert reply.text == "Filed."
    assert ISSUES == [("acme/app", "Crash")]

    first, second = server.bodies
    assert [(t.get("name"), t.get("defer_loading"), t["type"]) for t in first["tools"]] == [
        ("word_count", None, "function"),
        ("create_issue", True, "function"),
        ("send_sms", True, "function"),
        (None, None, "tool_search"),
    ]
    # The items go back in their place, without their ids (nothing is stored server-side).
    items = second["input"]
    assert [i.get("type") for i in items] == [
        None,
        "tool_search_call",
        "tool_search_output",
        "function_call",
        "function_call_output",
    ]
    assert items[1] == {k: v for k, v in SEARCH_CALL.items() if k != "id"}
    assert items[2]["tools"] == [found]
    assert "id" not in items[2]
    openai.types.responses.ResponseToolSearchCall.model_validate({**items[1], "id": "x"})
    assert [(t.get("name"), t.get("defer_loading")) for t in second["tools"]] == [
        ("word_count", None),
        ("create_issue", None),
        ("send_sms", True),
        (None, None),
    ]
    blocks = agent.session.messages[1].content
    assert [b.type for b in blocks] == ["provider", "provider", "tool_use"]
    # Anthropic's model leaves the Responses items out.
    assert to_anthropic_messages(agent.session.messages[1:2])[0]["content"][0]["type"] == (
        "tool_use"
    )


async def test_a_stored_session_keeps_the_blocks_and_what_they_found(
    server: FakeProviderServer, registry: ToolRegistry, tmp_path: Any
) -> None:
    """The blocks survive a SQLite store; resumed with a model of kode's search, the tool
    the provider found is loaded, and the blocks go back to Anthropic on the next turn."""
    url = f"sqlite:///{tmp_path / 'agent.db'}"
    blocks = [ProviderContent(provider="anthropic", data=d) for d in (SERVER_USE, SEARCH_RESULT)]
    server.reply(Reply(content=[*blocks, CALL]), Reply(content=["Filed."]))
    model = AnthropicModel("claude-test", base_url=server.url, api_key="k", tool_search="bm25")
    template = AgentTemplate(id="native", tools=["word_count", "create_issue", "send_sms"])
    first = Agent.create(template, model=model, registry=registry, store=url)
    await first.send("File a bug.")
    await first.aclose()

    local = ScriptedModel(["Done."])
    again = await Agent.resume(
        first.session_id, store=url, model=local, template=template, registry=registry
    )
    await again.send("Thanks.")
    await again.aclose()
    assert again.session.messages[1].content[:2] == blocks
    assert [t.name for t in local.requests[0].tools] == [
        "word_count",
        "tool_search",
        "create_issue",
    ]

    server.reply(Reply(content=["Welcome."]))
    native = await Agent.resume(
        first.session_id, store=url, model=model, template=template, registry=registry
    )
    await native.send("Bye.")
    await native.aclose()
    assert server.bodies[-1]["messages"][1]["content"][:2] == [SERVER_USE, SEARCH_RESULT]
