"""A session's stored usage keeps the prompt-cache counts a provider reported.

A model that reports cache reads and writes (Anthropic's prompt caching) runs through an agent
with a real SQLite store; the store's records, the state they fold to and the agent that
resumes the session all hold the same counts as the agent that ran. Records of usage without
cache counts are written exactly as before the counts were kept.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from kode.agent import Agent, AgentTemplate
from kode.models import Message, ModelRequest, ModelResponse, TextContent, Usage
from kode.models.base import ModelEvent
from kode.sessions import SQLiteStore, UsageAdded, record_adapter

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class CachingModel:
    """Answers every request with the same usage, cache counts included."""

    name = "caching"

    def __init__(self, usage: Usage) -> None:
        self.usage = usage

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        yield ModelResponse(
            message=Message(role="assistant", content=[TextContent(text="cached")]),
            stop_reason="end_turn",
            usage=self.usage,
        )


USAGE = Usage(
    input_tokens=3000,
    output_tokens=12,
    cache_read_input_tokens=2048,
    cache_creation_input_tokens=900,
)


async def test_cache_counts_survive_the_store_and_a_resume(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    try:
        template = AgentTemplate(id="t")
        agent = Agent.create(template, model=CachingModel(USAGE), store=store, session_id="s1")
        async with agent:
            await agent.send("one")
            await agent.send("two")
        twice = USAGE + USAGE
        assert agent.usage == twice
        log = await store.load("s1")
        stored = [e.record for e in log.entries if isinstance(e.record, UsageAdded)]
        assert [(r.cache_read_input_tokens, r.cache_creation_input_tokens) for r in stored] == [
            (2048, 900),
            (2048, 900),
        ]
        assert log.state().usage == twice
        resumed = await Agent.resume(
            "s1", store=store, model=CachingModel(Usage()), template=template
        )
        async with resumed:
            assert resumed.usage == twice
            assert resumed.state.usage == twice
    finally:
        await store.aclose()


def test_usage_without_cache_counts_is_stored_as_before() -> None:
    plain = UsageAdded(input_tokens=3, output_tokens=4)
    assert json.loads(plain.model_dump_json()) == {
        "type": "usage",
        "input_tokens": 3,
        "output_tokens": 4,
    }
    cached = UsageAdded(input_tokens=3, output_tokens=4, cache_read_input_tokens=2)
    assert json.loads(cached.model_dump_json()) == {
        "type": "usage",
        "input_tokens": 3,
        "output_tokens": 4,
        "cache_read_input_tokens": 2,
    }
    # A record written before the counts were kept reads as none.
    old = record_adapter.validate_json('{"type": "usage", "input_tokens": 3, "output_tokens": 4}')
    assert old == plain and old.cache_creation_input_tokens == 0
