"""Provider models across event loops: ``send_sync`` starts a new loop for every call."""

from __future__ import annotations

import asyncio
import gc
from typing import Any

import anthropic
import anyio
import openai
import pytest

from kode import Agent, AgentTemplate
from kode.models import AnthropicModel, Message, ModelRequest, ModelResponse, OpenAIModel
from kode.testing.providers import FakeProviderServer, Reply

PROVIDERS = ["anthropic", "openai"]

# On trio only, the openai SDK leaves its stream's async generators to the garbage collector
# after ``data: [DONE]`` (see test_openai.py); here more of them are collected within the test.
pytestmark = pytest.mark.filterwarnings(
    r"ignore:Exception ignored in. <async_generator object "
    r"(Response\.aiter_bytes|SSEDecoder\.aiter_bytes|AsyncStream\._iter_events"
    r"|BoundAsyncStream\.__aiter__|PoolByteStream\.__aiter__) "
    ":pytest.PytestUnraisableExceptionWarning"
)


def model_for(provider: str, server: FakeProviderServer) -> AnthropicModel | OpenAIModel:
    if provider == "anthropic":
        return AnthropicModel("claude-test", base_url=server.url, api_key="k")
    return OpenAIModel("gpt-test", base_url=server.openai_base_url, api_key="k")


def three_sends(provider: str, server: FakeProviderServer) -> list[str]:
    server.reply(*(Reply(content=[f"reply {n}"]) for n in range(3)))
    agent = Agent.create(AgentTemplate(id="loops", tools=[]), model=model_for(provider, server))
    return [agent.send_sync(f"question {n}").text for n in range(3)]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_send_sync_three_times_in_a_script(provider: str, server: FakeProviderServer) -> None:
    assert three_sends(provider, server) == ["reply 0", "reply 1", "reply 2"]
    assert len(server.requests) == 3
    # Each request is sent once: the last message of request n is question n.
    asked = [str(body["messages"][-1]["content"]) for body in server.bodies]
    assert all(f"question {n}" in text for n, text in enumerate(asked))
    gc.collect()  # an unclosed connection would be reported here (warnings are errors)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_send_sync_three_times_under_a_running_loop(
    provider: str, server: FakeProviderServer
) -> None:
    async def notebook_cell() -> list[str]:
        return three_sends(provider, server)  # blocks this loop, as a notebook cell does

    assert asyncio.run(notebook_cell()) == ["reply 0", "reply 1", "reply 2"]
    assert len(server.requests) == 3
    gc.collect()


REQUEST = ModelRequest(system="", messages=[Message.user("Hi")], tools=[])


async def ask(model: AnthropicModel | OpenAIModel) -> tuple[str, Any]:
    events = [event async for event in model.stream(REQUEST)]
    assert isinstance(events[-1], ModelResponse)
    return events[-1].message.text, model.client


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@pytest.mark.parametrize("provider", PROVIDERS)
def test_each_loop_gets_its_own_client_closed_when_the_loop_ends(
    provider: str, backend: str, server: FakeProviderServer
) -> None:
    server.reply(Reply(content=["one"]), Reply(content=["two"]))
    model = model_for(provider, server)
    first_text, first = anyio.run(ask, model, backend=backend)
    second_text, second = anyio.run(ask, model, backend=backend)
    assert (first_text, second_text) == ("one", "two")
    assert first is not second
    assert first.is_closed() and second.is_closed()
    assert len(server.requests) == 2


@pytest.mark.anyio
@pytest.mark.parametrize("provider", PROVIDERS)
async def test_one_loop_keeps_one_client(provider: str, server: FakeProviderServer) -> None:
    server.reply(Reply(content=["one"]), Reply(content=["two"]))
    async with model_for(provider, server) as model:
        _, first = await ask(model)
        _, second = await ask(model)
        assert first is second and not first.is_closed()
    assert first.is_closed()


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_client_passed_in_is_used_as_is_and_left_open(
    provider: str, server: FakeProviderServer
) -> None:
    server.reply(Reply(content=["one"]))
    given: anthropic.AsyncAnthropic | openai.AsyncOpenAI
    model: AnthropicModel | OpenAIModel
    if provider == "anthropic":
        given = anthropic.AsyncAnthropic(base_url=server.url, api_key="k")
        model = AnthropicModel("claude-test", client=given)
    else:
        given = openai.AsyncOpenAI(base_url=server.openai_base_url, api_key="k")
        model = OpenAIModel("gpt-test", client=given)

    async def use_and_close() -> Any:
        text, client = await ask(model)
        assert text == "one"
        await model.aclose()
        assert not given.is_closed()
        await given.close()
        return client

    assert anyio.run(use_and_close) is given
