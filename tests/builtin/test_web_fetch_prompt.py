"""web_fetch with a prompt, in a real agent: the agent's own model reads the page, and only its
answer reaches the conversation. Pages come from a real HTTP server on 127.0.0.1."""

from __future__ import annotations

from typing import Any

import pytest
from loopback_http import PNG, respond, serve

from kode import Agent, AgentTemplate, ToolContext
from kode.builtin.web import WEB, WebConfig, web_fetch
from kode.builtin.web._prompt import PROMPT_SYSTEM
from kode.models import ScriptedModel, tool_use
from kode.models.messages import ToolResultContent

pytestmark = pytest.mark.anyio

PAGE = (
    b"<html><head><title>Plans</title></head><body><h1>Pricing</h1>"
    b"<p>The Team plan costs 12 euros a month per seat.</p>"
    + b"".join(b"<p>Filler paragraph number %d about nothing much.</p>" % i for i in range(400))
    + b"<p>The last line: support answers within 4 hours.</p></body></html>"
)


def _agent(model: ScriptedModel, **config: Any) -> Agent:
    agent = Agent.create(AgentTemplate(id="reader", tools=["web_fetch"]), model=model)
    config.setdefault("allow_private_networks", True)
    config.setdefault("timeout", 10)
    WEB.set(agent.services, WebConfig(**config))
    return agent


def _results(agent: Agent) -> list[ToolResultContent]:
    return [
        b
        for m in agent.messages
        if m.role == "user" and not isinstance(m.content, str)
        for b in m.content
        if isinstance(b, ToolResultContent)
    ]


async def test_the_agents_model_answers_and_only_the_answer_comes_back() -> None:
    with serve({"/pricing": respond(200, "text/html; charset=utf-8", PAGE)}) as srv:
        url = srv.url("/pricing")
        question = "How much is the Team plan?"
        model = ScriptedModel(
            [
                [tool_use("web_fetch", {"url": url, "prompt": question})],
                "12 euros a month per seat.",
                "The Team plan is 12 euros a month per seat.",
            ]
        )
        agent = _agent(model)
        reply = await agent.send("What does the Team plan cost?")
    assert reply.text == "The Team plan is 12 euros a month per seat."
    # the second model request is the question about the page: the page, the prompt, no tools
    asked = model.requests[1]
    assert asked.system == PROMPT_SYSTEM and asked.tools == []
    (message,) = asked.messages
    assert message.role == "user"
    assert f"URL: {url}\nTitle: Plans\n<page>\n# Pricing" in message.text
    assert "The Team plan costs 12 euros a month per seat." in message.text
    assert "support answers within 4 hours" in message.text
    assert message.text.endswith("</page>\n\nQuestion: How much is the Team plan?")
    assert asked.settings.max_tokens == 2048
    # the conversation gets the URL and the answer, never the page
    (result,) = _results(agent)
    assert not result.is_error
    assert result.text == f"URL: {url}\n\n12 euros a month per seat."
    conversation = " ".join(m.text for m in agent.messages)
    assert "Filler paragraph" not in conversation
    # the third request (the agent's next turn) carries the answer, not the page
    assert "Filler paragraph" not in " ".join(m.text for m in model.requests[2].messages)


async def test_the_page_text_sent_to_the_model_is_bounded_and_read_on_with_start() -> None:
    with serve({"/pricing": respond(200, "text/html", PAGE)}) as srv:
        url = srv.url("/pricing")
        model = ScriptedModel(
            [
                [tool_use("web_fetch", {"url": url, "prompt": "Support hours?"})],
                "The page shown does not say.",
                [tool_use("web_fetch", {"url": url, "prompt": "Support hours?", "start": 1000})],
                "Within 4 hours.",
                "Support answers within 4 hours.",
            ]
        )
        agent = _agent(model, max_prompt_chars=1000, prompt_max_tokens=300)
        await agent.send("When does support answer?")
    first, second = _results(agent)
    total = first.text.rsplit(" of ", 1)[1].split(".")[0]
    assert first.text == (
        f"URL: {url}\n\nThe page shown does not say.\n\n[The model read characters 0-1000 of "
        f"{total}. Call web_fetch again with start=1000 and a prompt to ask about the rest.]"
    )
    asked = model.requests[1].messages[0].text
    assert f"Characters 0-1000 of the page's {total} (the rest is not shown)." in asked
    page_part = asked.split("<page>\n", 1)[1].split("\n</page>", 1)[0]
    assert len(page_part) == 1000 and "support answers" not in page_part
    assert model.requests[1].settings.max_tokens == 300
    # reading on: the next 1,000 characters go to the model
    assert f"Characters 1000-2000 of the page's {total}" in model.requests[3].messages[0].text
    assert second.text.startswith(f"URL: {url}\n\nWithin 4 hours.\n\n[The model read characters")


async def test_without_a_model_the_prompt_is_an_error_and_nothing_is_fetched() -> None:
    with serve({"/pricing": respond(200, "text/html", PAGE)}) as srv:
        url = srv.url("/pricing")
        config = WebConfig(allow_private_networks=True, timeout=10)
        result = await web_fetch.run(
            {"url": url, "prompt": "Price?"}, ToolContext(services={"web": config})
        )
    assert result.is_error
    assert result.text == (
        f"web_fetch was given a prompt about {url}, and no model can answer it here: a prompt "
        "is answered by the model of the agent (or MCP client) running the call, and this call "
        "runs outside both. Call web_fetch without prompt to read the page itself."
    )
    assert srv.seen == []


async def test_a_failing_model_and_an_image_page_are_error_results() -> None:
    class Broken(ScriptedModel):
        async def stream(self, request: Any) -> Any:  # type: ignore[override]
            if not request.tools:
                raise RuntimeError("the provider is down")
            async for event in super().stream(request):
                yield event

    routes = {
        "/pricing": respond(200, "text/html", PAGE),
        "/logo.png": respond(200, "image/png", PNG),
    }
    with serve(routes) as srv:
        model = Broken(
            [
                [tool_use("web_fetch", {"url": srv.url("/pricing"), "prompt": "Price?"})],
                [tool_use("web_fetch", {"url": srv.url("/logo.png"), "prompt": "Colours?"})],
                "Done.",
            ]
        )
        agent = _agent(model)
        await agent.send("Look.")
    failed, image = _results(agent)
    assert failed.is_error
    assert failed.text == (
        "Tool 'web_fetch' asked model 'scripted' for an answer, and it failed: RuntimeError: "
        "the provider is down. Call web_fetch without prompt to read the page itself."
    )
    assert image.is_error
    assert image.text == (
        f"{srv.url('/logo.png')} is an image (image/png), and a prompt is answered about a "
        "page's text: call web_fetch without prompt to see the image."
    )


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_served_by_kode_mcp_the_clients_model_answers() -> None:
    """Served over MCP, the prompt goes to the client's model (``sampling/createMessage``)."""
    pytest.importorskip("mcp")
    import anyio
    import mcp.types as types
    from mcp import ClientSession
    from mcp.client.session import ClientRequestContext
    from mcp.shared.memory import create_client_server_memory_streams

    from kode.mcp import ToolServer

    sampled: list[types.CreateMessageRequestParams] = []

    async def sample(
        context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        sampled.append(params)
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(text="12 euros."), model="client-model"
        )

    server = ToolServer([web_fetch])
    server.services["web"] = WebConfig(allow_private_networks=True, timeout=10)
    with serve({"/pricing": respond(200, "text/html", PAGE)}) as srv:
        url = srv.url("/pricing")
        async with create_client_server_memory_streams() as (client_streams, server_streams):
            async with anyio.create_task_group() as tg:
                tg.start_soon(server.run, *server_streams)
                async with ClientSession(*client_streams, sampling_callback=sample) as session:
                    await session.initialize()
                    result = await session.call_tool(
                        "web_fetch", {"url": url, "prompt": "Team price?"}
                    )
                tg.cancel_scope.cancel()
    assert not result.is_error
    assert [c.text for c in result.content if isinstance(c, types.TextContent)] == [
        f"URL: {url}\n\n12 euros."
    ]
    (asked,) = sampled
    assert asked.system_prompt == PROMPT_SYSTEM and asked.max_tokens == 2048
    (message,) = asked.messages
    assert isinstance(message.content, types.TextContent)
    assert "The Team plan costs 12 euros a month per seat." in message.content.text
    assert message.content.text.endswith("Question: Team price?")
