"""A served kode tool that asks: ``ctx.elicit`` and ``ctx.sample`` become requests to the client.

`kode mcp serve` runs as a subprocess; the official SDK's ``ClientSession`` over stdio answers
its ``elicitation/create`` and ``sampling/createMessage`` with its own callbacks, as any MCP
client (a desktop app, an IDE) would.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import mcp.types as types
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.session import ClientRequestContext
from mcp_peers import serve_command, subprocess_env, write

# the client runs on one backend: the server is a subprocess either way
pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("anyio_backend", ["asyncio"])]

ASKING_TOOLS = '''
"""Tools that ask their caller."""
from pydantic import BaseModel

from kode import ToolContext, define_tool


class Trip(BaseModel):
    city: str
    nights: int


@define_tool
async def plan_trip(ctx: ToolContext) -> str:
    """Plan a trip: ask the user where to, then ask a model for a tip."""
    reply = await ctx.elicit("Where are you going, and for how long?", Trip)
    if reply.action != "accept":
        return f"No trip: the user chose {reply.action}."
    trip = reply.value
    tip = await ctx.sample(
        [("user", f"One tip for {trip.nights} nights in {trip.city}?")],
        system="You are a travel guide.",
        max_tokens=60,
    )
    return f"{trip.nights} nights in {trip.city}. Tip: {tip}"


@define_tool
async def sign_in(ctx: ToolContext) -> str:
    """Ask the user to sign in on a page."""
    reply = await ctx.elicit("Sign in to continue.", url="https://example.com/login")
    return f"sign-in: {reply.action}"
'''


class Client:
    """The client's side: answers the server's questions, records them."""

    def __init__(self, *, answer: dict[str, Any] | None) -> None:
        self.answer = answer
        self.elicited: list[types.ElicitRequestParams] = []
        self.sampled: list[types.CreateMessageRequestParams] = []

    async def elicit(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult:
        self.elicited.append(params)
        if isinstance(params, types.ElicitRequestURLParams):
            return types.ElicitResult(action="accept")
        if self.answer is None:
            return types.ElicitResult(action="decline")
        return types.ElicitResult(action="accept", content=self.answer)

    async def sample(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        self.sampled.append(params)
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(text="Walk the harbour at dawn."),
            model="client-model",
        )


@asynccontextmanager
async def session_with(
    module: Path, client: Client, *, sampling: bool = True, elicitation: bool = True
) -> AsyncIterator[ClientSession]:
    command = serve_command(module)
    params = StdioServerParameters(
        command=command[0], args=command[1:], cwd=str(module.parent), env=subprocess_env()
    )
    async with (
        stdio_client(params) as (read, write),
        ClientSession(
            read,
            write,
            sampling_callback=client.sample if sampling else None,
            elicitation_callback=client.elicit if elicitation else None,
        ) as session,
    ):
        await session.initialize()
        yield session


def text(result: types.CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))


async def test_a_served_tool_elicits_and_samples_through_the_client(tmp_path: Path) -> None:
    module = write(tmp_path / "asking_tools.py", ASKING_TOOLS)
    client = Client(answer={"city": "Bergen", "nights": 3})
    async with session_with(module, client) as session:
        result = await session.call_tool("plan_trip", {})
        assert not result.is_error, text(result)
        assert text(result) == "3 nights in Bergen. Tip: Walk the harbour at dawn."

        (form,) = client.elicited
        assert isinstance(form, types.ElicitRequestFormParams)
        assert form.message == "Where are you going, and for how long?"
        assert form.requested_schema["properties"] == {
            "city": {"type": "string"},
            "nights": {"type": "integer"},
        }
        (sampling,) = client.sampled
        assert sampling.system_prompt == "You are a travel guide." and sampling.max_tokens == 60
        assert sampling.messages[0].role == "user"
        assert sampling.messages[0].content == types.TextContent(
            text="One tip for 3 nights in Bergen?"
        )

        signed = await session.call_tool("sign_in", {})
        assert text(signed) == "sign-in: accept"
        url = client.elicited[-1]
        assert isinstance(url, types.ElicitRequestURLParams)
        assert url.url == "https://example.com/login" and url.elicitation_id

        # an answer that does not fit the form is the tool's error, for the model to read
        client.answer = {"city": "Bergen", "nights": "many"}
        wrong = await session.call_tool("plan_trip", {})
        assert wrong.is_error
        assert "The user's answer to tool 'plan_trip' does not fit its form: nights:" in text(wrong)

        client.answer = None
        declined = await session.call_tool("plan_trip", {})
        assert text(declined) == "No trip: the user chose decline."


async def test_a_client_without_the_capabilities_gets_the_tools_error(tmp_path: Path) -> None:
    module = write(tmp_path / "asking_tools.py", ASKING_TOOLS)
    client = Client(answer={"city": "Oslo", "nights": 1})
    async with session_with(module, client, sampling=False, elicitation=False) as session:
        result = await session.call_tool("plan_trip", {})
        assert result.is_error
        assert (
            text(result) == "The MCP client does not answer elicitations (it did not declare it)."
        )
    async with session_with(module, client, sampling=False) as session:
        result = await session.call_tool("plan_trip", {})
        assert (
            result.is_error
            and text(result) == "The MCP client does not sample (it did not declare it)."
        )


PROXY = '''
"""A published server's tools, served again by kode."""
import os

import kode.mcp

everything = kode.mcp.connect("ev", command=[os.environ["EVERYTHING_SERVER"], "stdio"])
everything.open_sync()
'''


async def test_a_proxied_servers_questions_reach_the_first_client(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """kode serves server-everything's tools again: its sampling and elicitation go through."""
    from npm_servers import npm_server

    monkeypatch.setenv("EVERYTHING_SERVER", npm_server("mcp-server-everything"))
    module = write(tmp_path / "proxy.py", PROXY)
    client = Client(answer={"name": "Grace Hopper"})
    command = serve_command(module, "--tools", "mcp__ev__trigger-*")
    params = StdioServerParameters(
        command=command[0],
        args=command[1:],
        cwd=str(tmp_path),
        env={**subprocess_env(), "EVERYTHING_SERVER": os.environ["EVERYTHING_SERVER"]},
    )
    async with (
        stdio_client(params) as (read, write_stream),
        ClientSession(
            read, write_stream, sampling_callback=client.sample, elicitation_callback=client.elicit
        ) as session,
    ):
        await session.initialize()
        sampled = await session.call_tool("mcp__ev__trigger-sampling-request", {"prompt": "hi"})
        assert '"text": "Walk the harbour at dawn."' in text(sampled), text(sampled)
        (asked,) = client.sampled
        assert asked.system_prompt == "You are a helpful test server."
        assert asked.messages[0].content == types.TextContent(
            text="Resource trigger-sampling-request context: hi"
        )
        form = await session.call_tool("mcp__ev__trigger-elicitation-request", {})
        assert "- Name: Grace Hopper" in text(form), text(form)
