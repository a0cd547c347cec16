"""Typed final output through each provider's real SDK client, against the loopback server.

Every provider takes the output tool (the default), and the provider's own structured output
with ``output_mode="native"``: OpenAI's ``response_format``, the Responses API's
``text.format``, Anthropic's ``output_config.format`` and Gemini's ``responseJsonSchema`` (when
no tools are sent; with tools, Gemini gets the output tool).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel, Field

from kode import Agent, AgentTemplate, define_tool
from kode.agent import PartialOutput
from kode.models import AnthropicModel, OpenAIModel, ToolUseContent
from kode.models.gemini import GeminiModel
from kode.models.openai_responses import OpenAIResponsesModel
from kode.registries import ToolRegistry
from kode.testing.providers import FakeProviderServer, Reply

PROVIDERS = ["anthropic", "openai", "openai-responses", "gemini"]

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

REG = ToolRegistry(name="output-wire")


@define_tool(registry=REG, kind="read")
def population(city: str) -> int:
    """How many people live in a city.

    Args:
        city: The city.
    """
    return 2_100_000


class City(BaseModel):
    """A city and how many live there."""

    name: str
    population: int = Field(description="People living there.")
    nickname: str | None = None


def model_for(provider: str, server: FakeProviderServer) -> Any:
    if provider == "anthropic":
        return AnthropicModel("claude-test", base_url=server.url, api_key="k")
    if provider == "openai":
        return OpenAIModel("gpt-test", base_url=server.openai_base_url, api_key="k")
    if provider == "openai-responses":
        return OpenAIResponsesModel("gpt-test", base_url=server.openai_base_url, api_key="k")
    return GeminiModel("gemini-test", base_url=server.url, api_key="k")


def agent_for(provider: str, server: FakeProviderServer, **template: Any) -> Agent:
    tpl = AgentTemplate(id="out", output_type=City, **template)
    return Agent.create(tpl, model=model_for(provider, server), registry=REG)


def declared_tools(provider: str, body: dict[str, Any]) -> dict[str, Any]:
    """The tools a request declared, by name, in the provider's form."""
    if provider == "gemini":
        return {
            d["name"]: d for t in body.get("tools", ()) for d in t.get("functionDeclarations", ())
        }
    if provider == "openai":
        return {t["function"]["name"]: t["function"] for t in body.get("tools", ())}
    return {t["name"]: t for t in body.get("tools", ())}


STRICT_CITY = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "population": {"type": "integer", "description": "People living there."},
        "nickname": {"anyOf": [{"type": "string"}, {"type": "null"}]},
    },
    "required": ["name", "population", "nickname"],
    "additionalProperties": False,
}


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_the_output_tool_with_other_tools(provider: str, server: FakeProviderServer) -> None:
    server.reply(
        Reply(content=[ToolUseContent(id="c1", name="population", input={"city": "Paris"})]),
        Reply(
            content=[
                ToolUseContent(
                    id="c2",
                    name="final_result",
                    input={"name": "Paris", "population": 2_100_000, "nickname": None},
                )
            ]
        ),
    )
    reply = await agent_for(provider, server, tools=["population"]).send("Biggest city?")
    assert reply.output == City(name="Paris", population=2_100_000)
    tools = declared_tools(provider, server.bodies[0])
    assert set(tools) == {"population", "final_result"}
    if provider in ("openai", "openai-responses"):
        assert tools["final_result"]["strict"] is True
        assert tools["final_result"]["parameters"] == STRICT_CITY
    for body in server.bodies:  # no native format beside the tool
        assert not {"response_format", "text", "output_config"} & set(body)
        assert "responseJsonSchema" not in body.get("generationConfig", {})


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_native_structured_output(provider: str, server: FakeProviderServer) -> None:
    answer = json.dumps({"name": "Paris", "population": 2_100_000, "nickname": "Lutetia"})
    server.reply(Reply(content=[answer], chunk_size=7))
    events: list[Any] = []
    agent = agent_for(provider, server, output_mode="native")
    reply = await agent.send("Biggest city?", on_event=events.append)
    assert reply.output == City(name="Paris", population=2_100_000, nickname="Lutetia")
    [body] = server.bodies
    assert declared_tools(provider, body) == {}
    if provider == "openai":
        assert body["response_format"] == {
            "type": "json_schema",
            "json_schema": {
                "name": "final_result",
                "schema": STRICT_CITY,
                "strict": True,
                "description": "A city and how many live there.",
            },
        }
    elif provider == "openai-responses":
        assert body["text"] == {
            "format": {
                "type": "json_schema",
                "name": "final_result",
                "schema": STRICT_CITY,
                "strict": True,
                "description": "A city and how many live there.",
            }
        }
    elif provider == "anthropic":
        output = body["output_config"]["format"]
        assert output["type"] == "json_schema"
        assert output["schema"]["additionalProperties"] is False
        assert set(output["schema"]["properties"]) == {"name", "population", "nickname"}
    else:
        config = body["generationConfig"]
        assert config["responseMimeType"] == "application/json"
        assert config["responseJsonSchema"]["required"] == ["name", "population"]
    # The output as it streamed: JSON read so far, growing to the whole answer.
    partial = [e.output for e in events if isinstance(e, PartialOutput)]
    assert len(partial) > 3
    assert partial[-1] == json.loads(answer)
    assert all(isinstance(p, dict) for p in partial)


async def test_gemini_with_tools_gets_the_output_tool(server: FakeProviderServer) -> None:
    call = ToolUseContent(id="c1", name="final_result", input={"name": "Paris", "population": 1})
    server.reply(Reply(content=[call]))
    agent = agent_for("gemini", server, output_mode="native", tools=["population"])
    reply = await agent.send("Biggest city?")
    assert reply.output == City(name="Paris", population=1)
    [body] = server.bodies
    assert set(declared_tools("gemini", body)) == {"population", "final_result"}
    assert "responseJsonSchema" not in body["generationConfig"]


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_native_output_with_tools(provider: str, server: FakeProviderServer) -> None:
    server.reply(
        Reply(content=[ToolUseContent(id="c1", name="population", input={"city": "Paris"})]),
        Reply(content=['{"name": "Paris", "population": 2100000, "nickname": null}']),
    )
    agent = agent_for(provider, server, output_mode="native", tools=["population"])
    reply = await agent.send("Biggest city?")
    assert reply.output == City(name="Paris", population=2_100_000)
    for body in server.bodies:
        assert set(declared_tools(provider, body)) == {"population"}
        assert ("response_format" if provider == "openai" else "output_config") in body


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_invalid_native_output_is_asked_again(
    provider: str, server: FakeProviderServer
) -> None:
    server.reply(
        Reply(content=['{"name": "Paris"}']),
        Reply(content=['{"name": "Paris", "population": 3}']),
    )
    reply = await agent_for(provider, server, output_mode="native").send("Biggest city?")
    assert reply.output == City(name="Paris", population=3)
    second = json.dumps(server.bodies[1])
    assert "'population' is required but missing" in second


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_the_output_tool_streams_partial_output(
    provider: str, server: FakeProviderServer
) -> None:
    """Where the provider streams a call's arguments; Gemini sends calls whole."""
    arguments = {"name": "Paris", "population": 2_100_000, "nickname": "Lutetia"}
    call = ToolUseContent(id="c1", name="final_result", input=arguments)
    server.reply(Reply(content=[call], chunk_size=9))
    events: list[Any] = []
    reply = await agent_for(provider, server).send("Biggest city?", on_event=events.append)
    assert reply.output == City(**arguments)
    partial = [e.output for e in events if isinstance(e, PartialOutput)]
    if provider == "gemini":
        assert partial == []
        return
    assert partial[:2] == [{"name": ""}, {"name": "Paris"}]  # pieces of 9 characters
    assert partial[-1] == arguments
    assert len(partial) >= 5
