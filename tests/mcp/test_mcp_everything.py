"""The official ``server-everything`` (npm, run with node) through `kode.mcp` and an agent.

It registers the tools that need a client capability only when the client declares it:
roots (``get-roots-list``), sampling (``trigger-sampling-request``), elicitation in form and
URL modes (``trigger-elicitation-request``, ``trigger-url-elicitation``), MCP Tasks in both
directions (``simulate-research-query`` must be called as a task and asks for clarification
from inside it; ``trigger-*-request-async`` ask kode to run the sampling or elicitation as a
task it polls). Each is listed and called here, first directly, then by an agent whose model
answers the server's sampling with the user's approval. Then what else such a server sends:
annotated content, images, binary resources, resources and prompts, subscription updates.
"""

from __future__ import annotations

import base64
import gzip
import json
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from npm_servers import npm_server

from kode import Agent, AgentTemplate, Kind, ToolContext, ToolRegistry
from kode.agent.permissions import ApprovalDecision, ApprovalRequest
from kode.mcp import MCPConnection, connect
from kode.mcp.elicitation import ElicitationReply, ElicitationRequest
from kode.mcp.resources import MCPEvent
from kode.mcp.sampling import SamplingReply, SamplingRequest
from kode.models import ScriptedModel, tool_use
from kode.models.messages import ToolResultContent
from kode.tools.results import ImageBlock, ToolResult

pytestmark = pytest.mark.anyio

CAPABILITY_TOOLS = {
    "get-roots-list": "roots",
    "trigger-sampling-request": "sampling",
    "trigger-elicitation-request": "elicitation (form)",
    "trigger-url-elicitation": "elicitation (URL)",
    "simulate-research-query": "tasks (the tool requires it), elicitation inside the task",
    "trigger-sampling-request-async": "sampling run as a client task",
    "trigger-elicitation-request-async": "elicitation run as a client task",
}
P = "mcp__ev__"


# One backend is enough where the agent is not involved (the connection has its own loop);
# the agent test runs on both.
on_asyncio = pytest.mark.parametrize("anyio_backend", ["asyncio"])


@pytest.fixture
def everything() -> list[str]:
    return [npm_server("mcp-server-everything"), "stdio"]


@asynccontextmanager
async def started(**options: Any) -> AsyncIterator[MCPConnection]:
    """`connect`, closed no sooner than the server's start-up timer has run.

    The server asks for the roots 350 ms after it starts; until then node does not end when its
    stdin closes, and the SDK waits two seconds before it stops the process.
    """
    async with connect("ev", **options) as server:
        began = time.monotonic()
        yield server
        await anyio.sleep(max(0.0, 0.5 - (time.monotonic() - began)))


class Answers:
    """The user side: records each request and answers it."""

    def __init__(self, *, accept: bool = True) -> None:
        self.accept = accept
        self.sampled: list[SamplingRequest] = []
        self.elicited: list[ElicitationRequest] = []

    async def sample(self, request: SamplingRequest) -> SamplingReply:
        self.sampled.append(request)
        return SamplingReply(text=f"echo of {request.messages[-1].text!r}", model="test-model")

    async def elicit(self, request: ElicitationRequest) -> ElicitationReply:
        self.elicited.append(request)
        if not self.accept:
            return ElicitationReply(action="decline")
        if request.mode == "url":
            return ElicitationReply(action="accept")
        assert request.schema is not None
        fields = request.schema["properties"]
        if "interpretation" in fields:  # the research task's question
            return ElicitationReply(
                action="accept",
                content={"interpretation": fields["interpretation"]["oneOf"][1]["const"]},
            )
        return ElicitationReply(action="accept", content={"name": "Ada Lovelace", "integer": 7})


async def _run(
    reg: ToolRegistry, name: str, args: dict[str, Any], ctx: ToolContext[Any]
) -> ToolResult:
    tool = reg.get(P + name)
    return await tool.run(args, ctx.for_call(tool_name=tool.name, tool_call_id=f"call-{name}"))


@on_asyncio
async def test_every_capability_tool_is_listed_and_works(
    everything: list[str], tmp_path: Path
) -> None:
    reg = ToolRegistry("everything")
    user = Answers()
    async with started(
        command=everything,
        registry=reg,
        sampling=user.sample,
        elicitation=user.elicit,
        roots=[tmp_path],
    ) as server:
        assert set(CAPABILITY_TOOLS) <= set(server.tools.values()), server.skipped
        research = server.remote_tools["simulate-research-query"]
        assert research.execution is not None and research.execution.task_support == "required"
        # untrusted and not read-only: each asks for approval inside an agent
        assert reg.get(P + "trigger-sampling-request").requires_approval is True
        assert reg.get(P + "get-roots-list").kind is Kind.READ

        ctx: ToolContext[Any] = ToolContext()
        roots = await _run(reg, "get-roots-list", {}, ctx)
        assert tmp_path.as_uri() in roots.text and "1 total" in roots.text

        sampled = await _run(
            reg, "trigger-sampling-request", {"prompt": "six times seven", "maxTokens": 50}, ctx
        )
        assert not sampled.is_error
        asked = user.sampled[-1]
        assert asked.system == "You are a helpful test server."
        assert asked.max_tokens == 50 and asked.temperature == 0.7
        assert asked.ctx is not None and asked.ctx.tool_call_id == "call-trigger-sampling-request"
        payload = json.loads(sampled.text.split("\n", 1)[1])
        assert (
            payload["content"]["text"]
            == "echo of 'Resource trigger-sampling-request context: six times seven'"
        )
        assert payload["model"] == "test-model"

        form = await _run(reg, "trigger-elicitation-request", {}, ctx)
        assert "- Name: Ada Lovelace" in form.text and "- Favorite Integer: 7" in form.text
        assert user.elicited[-1].mode == "form" and user.elicited[-1].schema is not None

        url = await _run(
            reg, "trigger-url-elicitation", {"url": "https://example.com/sign-in"}, ctx
        )
        assert "User completed the URL elicitation flow" in url.text
        assert (
            user.elicited[-1].mode == "url"
            and user.elicited[-1].url == "https://example.com/sign-in"
        )
        assert user.elicited[-1].elicitation_id

        # error -32042: kode answers the prerequisite URL elicitation, then calls again
        before = len(user.elicited)
        retried = await _run(
            reg,
            "trigger-url-elicitation",
            {"url": "https://example.com/pay", "errorPath": True},
            ctx,
        )
        assert not retried.is_error and "URL: https://example.com/pay" in retried.text
        assert [e.url for e in user.elicited[before:]] == [
            "https://modelcontextprotocol.io",
            "https://example.com/pay",
        ]

        # the slow ones (the server polls every second) side by side, as one caller's calls
        results: dict[str, ToolResult] = {}
        contexts: dict[str, ToolContext[Any]] = {}

        async def call(name: str, args: dict[str, Any]) -> None:
            contexts[name] = ctx.for_call(tool_name=P + name, tool_call_id=f"call-{name}")
            results[name] = await reg.get(P + name).run(args, contexts[name])

        async with anyio.create_task_group() as tg:
            tg.start_soon(call, "simulate-research-query", {"topic": "python", "ambiguous": True})
            tg.start_soon(call, "trigger-sampling-request-async", {"prompt": "in the background"})
            tg.start_soon(call, "trigger-elicitation-request-async", {})

        report = results["simulate-research-query"]
        assert not report.is_error and "# Research Report: python (snake)" in report.text
        statuses = [e.data["message"] for e in contexts["simulate-research-query"].events]
        assert "Gathering sources..." in statuses and "Generating report..." in statuses
        assert any("Requesting clarification" in s for s in statuses)  # input_required
        assert any(e.schema and "interpretation" in e.schema["properties"] for e in user.elicited)

        async_sampling = results["trigger-sampling-request-async"].text
        assert async_sampling.startswith("[COMPLETED]") and "Task created:" in async_sampling
        assert (
            "echo of 'Resource trigger-sampling-request-async context: in the background'"
            in async_sampling
        )
        async_form = results["trigger-elicitation-request-async"].text
        assert async_form.startswith("[COMPLETED]") and "Ada Lovelace" in async_form


@on_asyncio
async def test_without_the_capabilities_the_server_hides_those_tools(everything: list[str]) -> None:
    reg = ToolRegistry("everything-bare")
    async with started(
        command=everything, registry=reg, sampling=None, elicitation=None, roots=None, tasks=False
    ) as server:
        listed = set(server.tools.values()) | set(server.skipped)
        assert "echo" in listed
        # the server did not offer them at all, except the task tool, which kode skips
        assert not (set(CAPABILITY_TOOLS) - {"simulate-research-query"}) & listed
        assert "MCP task" in server.skipped["simulate-research-query"]


@on_asyncio
async def test_a_model_given_to_connect_samples_and_declining_is_passed_on(
    everything: list[str],
) -> None:
    reg = ToolRegistry("everything-decline")
    user = Answers(accept=False)
    model = ScriptedModel(["Paris."])
    async with started(
        command=everything, registry=reg, elicitation=user.elicit, sampling=model
    ) as server:
        assert server.alive
        result = await _run(reg, "trigger-elicitation-request", {}, ToolContext())
        assert "User declined to provide the requested information" in result.text
        # outside an agent: the model given to connect answers, asked by nobody's approver
        sampled = await _run(reg, "trigger-sampling-request", {"prompt": "capital?"}, ToolContext())
        payload = json.loads(sampled.text.split("\n", 1)[1])
        assert payload["content"]["text"] == "Paris." and payload["model"] == "scripted"
        assert model.requests[0].settings.max_tokens == 100
        assert model.requests[0].settings.temperature == 0.7


async def test_an_agent_uses_them_and_its_model_samples_with_approval(
    everything: list[str], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="kode.mcp.ev")
    reg = ToolRegistry("everything-agent")
    user = Answers()
    asked: list[ApprovalRequest] = []

    async def approver(request: ApprovalRequest) -> ApprovalDecision:
        asked.append(request)
        if request.tool_name == P + "sampling" and "refuse me" in request.input["messages"]:
            return ApprovalDecision(decision="deny", note="not this one")
        return ApprovalDecision(decision="allow")

    model = ScriptedModel(
        [
            [tool_use(P + "trigger-sampling-request", {"prompt": "What is six times seven?"})],
            "Forty-two.",  # the server's sampling request, answered by the agent's model
            [
                tool_use(P + "get-roots-list", {}),
                tool_use(P + "trigger-elicitation-request", {}),
                tool_use(P + "trigger-sampling-request", {"prompt": "refuse me"}),
            ],
            "All done.",
        ]
    )
    # sampling and elicitation are left to the calling agent (connect's defaults)
    async with started(command=everything, registry=reg) as server:
        # the server asks for the roots once started, outside any call: it is told the
        # current directory, and told again (roots/list_changed) when the agent calls
        with anyio.fail_after(10):
            while "Roots updated" not in caplog.text:  # noqa: ASYNC110 (a log line)
                await anyio.sleep(0.02)
        agent = Agent.create(
            AgentTemplate(id="everything", tools=[server.pattern], permission={"mode": "approval"}),
            model=model,
            registry=reg,
            approver=approver,
            elicitation=user.elicit,  # the agent's user answers the server's questions
            workspace=tmp_path,
        )
        async with agent:
            reply = await agent.send("Try the server's features.")
        assert reply.text == "All done."

        # the sampling request reached the agent's own model, without tools
        sampling = model.requests[1]
        assert sampling.system == "You are a helpful test server." and sampling.tools == []
        assert (
            sampling.messages[-1].text
            == "Resource trigger-sampling-request context: What is six times seven?"
        )
        # it was approved like a tool call of the pseudo-tool mcp__ev__sampling
        names = [r.tool_name for r in asked]
        assert names.count(P + "sampling") == 2 and names.count(P + "trigger-sampling-request") == 2
        first = next(r for r in asked if r.tool_name == P + "sampling")
        assert (
            first.call_id.endswith("/sampling-1") and "six times seven" in first.input["messages"]
        )

        results = [
            b
            for m in agent.messages
            if m.role == "user" and not isinstance(m.content, str)
            for b in m.content
            if isinstance(b, ToolResultContent)
        ]
        texts = [r.text for r in results]
        assert '"text": "Forty-two."' in texts[0] and '"model": "scripted"' in texts[0]
        assert tmp_path.as_uri() in texts[1]  # roots: the agent's workspace
        assert "Ada Lovelace" in texts[2]
        assert user.elicited[0].server == "ev"
        # stdio does not say which of the turn's calls in flight asked (docs/limits.md)
        assert user.elicited[0].tool_name in {
            P + "trigger-elicitation-request",
            P + "get-roots-list",
        }
        assert results[3].is_error and "the user denied it: not this one" in texts[3]


@on_asyncio
async def test_annotations_images_and_binary_resources(
    everything: list[str], tmp_path: Path
) -> None:
    reg = ToolRegistry("everything-content")
    files = tmp_path / "files"
    async with started(command=everything, registry=reg, files_dir=str(files)) as server:
        ctx: ToolContext[Any] = ToolContext()
        noted = await _run(
            reg, "get-annotated-message", {"messageType": "error", "includeImage": True}, ctx
        )
        assert noted.metadata["mcp_annotations"][0] == {
            "index": 0,
            "audience": ["user", "assistant"],
            "priority": 1.0,
        }
        assert isinstance(noted.content[1], ImageBlock)
        assert noted.content[1].data.startswith(b"\x89PNG")

        text = b"hello, compressed world\n" * 20
        data = "data:text/plain;base64," + base64.b64encode(text).decode()
        inline = await _run(
            reg,
            "gzip-file-as-resource",
            {"name": "hello.txt.gz", "data": data, "outputType": "resource"},
            ctx,
        )
        saved = next(files.iterdir())
        assert f"saved as {saved}" in inline.text and "application/gzip" in inline.text
        assert gzip.decompress(saved.read_bytes()) == text

        # the default output is a link; reading the linked resource saves the file too
        linked = await _run(
            reg, "gzip-file-as-resource", {"name": "again.txt.gz", "data": data}, ctx
        )
        assert "[resource link demo://resource/session/again.txt.gz" in linked.text
        read = await server.read_resource("demo://resource/session/again.txt.gz")
        again = files / "again.txt.gz"
        assert f"saved as {again}" in read.text and gzip.decompress(again.read_bytes()) == text
    assert files.exists()  # a directory that was given is left alone


@on_asyncio
async def test_resources_prompts_and_subscriptions(everything: list[str]) -> None:
    reg = ToolRegistry("everything-resources")
    events: list[MCPEvent] = []
    async with started(
        command=everything,
        registry=reg,
        resource_tools=True,
        prompt_tools=True,
        on_event=events.append,
    ) as server:
        resources = await server.list_resources()
        uris = [r.uri for r in resources]
        assert "demo://resource/static/document/features.md" in uris
        templates = {t.uri_template for t in await server.list_resource_templates()}
        assert "demo://resource/dynamic/blob/{resourceId}" in templates

        text = await server.read_resource("demo://resource/dynamic/text/3")
        assert text.text.startswith("[resource demo://resource/dynamic/text/3]\nResource 3:")
        blob = await server.read_resource("demo://resource/dynamic/blob/4")  # text/plain, base64
        assert "Resource 4: This is a base64 blob" in blob.text
        assert blob.details[0]["mimeType"] == "text/plain" and "blob" in blob.details[0]

        prompts = {p.name: p for p in await server.list_prompts()}
        assert {"simple-prompt", "args-prompt", "resource-prompt"} <= set(prompts)
        messages = await server.get_prompt("args-prompt", {"city": "Oslo", "state": "Viken"})
        assert messages[0].role == "user" and "Oslo" in messages[0].text
        embedded = await server.get_prompt(
            "resource-prompt", {"resourceType": "Text", "resourceId": "2"}
        )
        assert any("demo://resource/dynamic/text/2" in m.text for m in embedded)

        # the two tools an agent can be allowed: their descriptions list what there is
        reader = reg.get(P + "read_resource")
        assert (
            reader.kind is Kind.READ
            and "demo://resource/static/document/features.md" in reader.description
        )
        getter = reg.get(P + "get_prompt")
        assert "args-prompt(city, state?)" in getter.description
        read = await reader.run({"uri": "demo://resource/dynamic/text/1"})
        assert "Resource 1:" in read.text
        got = await getter.run({"name": "args-prompt", "arguments": {"city": "Bergen"}})
        assert got.text.startswith("[user]\n") and "Bergen" in got.text
        unknown = await reader.run({"uri": "demo://nothing/here"})
        assert unknown.is_error

        # subscription updates arrive as events
        await server.subscribe("demo://resource/dynamic/text/1")
        toggled = await _run(reg, "toggle-subscriber-updates", {}, ToolContext())
        assert not toggled.is_error
        with anyio.fail_after(10):
            while not any(e.kind == "resource_updated" for e in events):  # noqa: ASYNC110
                await anyio.sleep(0.05)
        assert (
            MCPEvent(server="ev", kind="resource_updated", uri="demo://resource/dynamic/text/1")
            in events
        )
        await server.unsubscribe("demo://resource/dynamic/text/1")
        stopped = await _run(reg, "toggle-subscriber-updates", {}, ToolContext())
        assert "Stopped" in stopped.text, stopped.text  # (its timer would keep node running)


@on_asyncio
async def test_a_task_call_that_times_out_is_cancelled_on_the_server(everything: list[str]) -> None:
    reg = ToolRegistry("everything-cancel")
    async with started(command=everything, registry=reg, timeout=1.5) as server:
        ctx: ToolContext[Any] = ToolContext()
        result = await _run(reg, "simulate-research-query", {"topic": "tides"}, ctx)
        assert result.is_error and "timed out after 1.5 s" in result.text

        async def status() -> str:
            listed = await server.remote.request(
                lambda s: s.send_request(types.ListTasksRequest(), types.ListTasksResult)
            )
            (task,) = listed.tasks
            return task.status

        # kode sends tasks/cancel when the call is cancelled (the call does not wait for it)
        with anyio.fail_after(5):
            while await status() != "cancelled":  # noqa: ASYNC110 (the server's state)
                await anyio.sleep(0.05)


async def test_without_an_approver_sampling_waits_for_decide(everything: list[str]) -> None:
    from kode.agent.events import ApprovalRequired

    reg = ToolRegistry("everything-decide")
    model = ScriptedModel(
        [[tool_use(P + "trigger-sampling-request", {"prompt": "hello"})], "Hi!", "Said hi."]
    )
    async with started(command=everything, registry=reg) as server:
        agent = Agent.create(
            AgentTemplate(id="decider", tools=[server.pattern + "sampling-request"]),
            model=model,
            registry=reg,
        )
        asked: list[str] = []

        def on_event(event: object) -> None:
            if isinstance(event, ApprovalRequired):
                asked.append(event.name)
                agent.decide(event.call_id, "allow_always")

        async with agent:
            reply = await agent.send("Say hi through the server.", on_event=on_event)
        assert reply.text == "Said hi."
        # the call itself, then the server's sampling request, as ApprovalRequired events
        assert asked == [P + "trigger-sampling-request", P + "sampling"]
        assert P + "sampling" in agent.always_allowed


@on_asyncio
async def test_the_resource_tool_describes_resources_added_later(everything: list[str]) -> None:
    reg = ToolRegistry("everything-relist")
    async with started(command=everything, registry=reg, resource_tools=True):
        assert (
            "demo://resource/session/notes.txt.gz" not in reg.get(P + "read_resource").description
        )
        data = "data:text/plain;base64," + base64.b64encode(b"notes").decode()
        await _run(
            reg, "gzip-file-as-resource", {"name": "notes.txt.gz", "data": data}, ToolContext()
        )
        # the server says its resources changed; the tool's description follows
        with anyio.fail_after(10):
            while "session/notes.txt.gz" not in reg.get(P + "read_resource").description:  # noqa: ASYNC110
                await anyio.sleep(0.02)
