"""The spans and metrics of an instrumented agent: names, kinds, parents and attributes."""

from __future__ import annotations

import json
import threading
from typing import Any

import anyio
import pytest
from opentelemetry import trace
from opentelemetry.trace import SpanKind, StatusCode
from otel_support import Telemetry

from kode import define_tool
from kode.agent import (
    Agent,
    AgentError,
    AgentHooks,
    AgentTemplate,
    ApprovalDecision,
    ApprovalRequest,
    Deny,
)
from kode.models import ScriptedModel, Usage, tool_use
from kode.models.anthropic import AnthropicModel
from kode.models.gemini import GeminiModel
from kode.models.openai import OpenAIModel
from kode.models.openai_responses import OpenAIResponsesModel
from kode.registries import ToolRegistry
from kode.testing.providers import FakeProviderServer, Reply

pytestmark = pytest.mark.anyio


def _tools(reg: ToolRegistry, threads: list[tuple[int, Any]]) -> None:
    @define_tool(registry=reg, kind="read")
    def add(a: int, b: int) -> int:
        """Add two numbers.

        Args:
            a: The first.
            b: The second.
        """
        # A sync tool runs in a worker thread: the trace must follow it there.
        threads.append((threading.get_ident(), trace.get_current_span().get_span_context()))
        return a + b

    @define_tool(registry=reg, kind="read", timeout=0.05)
    async def slow() -> str:
        """Take too long."""
        await anyio.sleep(5)
        return "late"

    @define_tool(registry=reg, kind="edit", requires_approval=True)
    def write(path: str) -> str:
        """Write a file.

        Args:
            path: The file.
        """
        return f"wrote {path}"

    @define_tool(registry=reg, kind="delete")
    def wipe() -> str:
        """Remove everything."""
        return "wiped"


def _agent(
    reg: ToolRegistry, telemetry: Telemetry, *, capture: bool | None = None
) -> tuple[Agent, ScriptedModel]:
    model = ScriptedModel(
        [
            [
                tool_use("add", {"a": 1, "b": 2}, id="c_add1"),
                tool_use("add", {"a": 3, "b": 4}, id="c_add2"),
                tool_use("add", {"a": "x"}, id="c_bad"),
                tool_use("slow", {}, id="c_slow"),
                tool_use("write", {"path": "/etc/x"}, id="c_write"),
                tool_use("wipe", {}, id="c_wipe"),
            ],
            "All done.",
        ]
    )

    async def approver(request: ApprovalRequest) -> ApprovalDecision:
        return ApprovalDecision(decision="deny", note="not there")

    hooks = AgentHooks(
        tools={"wipe": AgentHooks(pre_tool_use=[lambda call, ctx: Deny(reason="wiping is off")])}
    )
    agent = Agent.create(
        AgentTemplate(id="worker", tools=["*"], system_prompt="Be brief."),
        model=model,
        registry=reg,
        approver=approver,
        hooks=hooks,
        instrument=telemetry.settings(capture_content=capture),
    )
    return agent, model


async def test_a_run_is_one_trace_of_agent_chat_and_tool_spans(
    reg: ToolRegistry, telemetry: Telemetry
) -> None:
    threads: list[tuple[int, Any]] = []
    _tools(reg, threads)
    agent, _ = _agent(reg, telemetry)
    reply = await agent.send("Go.")
    assert reply.text == "All done."

    run = telemetry.one("invoke_agent worker")
    assert run.kind is SpanKind.INTERNAL and run.parent is None
    assert dict(run.attributes or {}) == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.provider.name": "kode.scripted",
        "gen_ai.agent.name": "worker",
        "gen_ai.agent.id": agent.agent_id,
        "gen_ai.conversation.id": agent.session_id,
        "gen_ai.request.model": "scripted",
        "gen_ai.usage.input_tokens": reply.usage.input_tokens,
        "gen_ai.usage.output_tokens": reply.usage.output_tokens,
        "kode.agent.turns": 2,
    }
    trace_id = run.context.trace_id
    assert {s.context.trace_id for s in telemetry.spans()} == {trace_id}

    chats = telemetry.named("chat scripted")
    assert len(chats) == 2
    for chat, reason in zip(chats, ["tool_use", "end_turn"], strict=True):
        assert chat.kind is SpanKind.CLIENT
        assert chat.parent is not None and chat.parent.span_id == run.context.span_id
        attrs = dict(chat.attributes or {})
        assert attrs["gen_ai.operation.name"] == "chat"
        assert attrs["gen_ai.provider.name"] == "kode.scripted"
        assert attrs["gen_ai.request.model"] == "scripted"
        assert attrs["gen_ai.response.model"] == "scripted"
        assert attrs["gen_ai.response.finish_reasons"] == (reason,)
        assert attrs["gen_ai.request.max_tokens"] == 4096
        assert attrs["gen_ai.usage.input_tokens"] >= 0
        assert attrs["gen_ai.usage.output_tokens"] >= 0
        assert "gen_ai.input.messages" not in attrs and "gen_ai.output.messages" not in attrs

    tools = {
        s.attributes["gen_ai.tool.call.id"]: s
        for s in telemetry.spans()
        if s.name.startswith("execute_tool")
    }  # type: ignore[index]
    assert set(tools) == {"c_add1", "c_add2", "c_bad", "c_slow", "c_write", "c_wipe"}
    for span in tools.values():
        assert span.kind is SpanKind.INTERNAL
        assert span.parent is not None and span.parent.span_id == run.context.span_id
        attrs = dict(span.attributes or {})
        assert attrs["gen_ai.operation.name"] == "execute_tool"
        assert span.name == f"execute_tool {attrs['gen_ai.tool.name']}"
        assert attrs["gen_ai.tool.type"] == "function"
        assert "gen_ai.tool.call.arguments" not in attrs and "gen_ai.tool.call.result" not in attrs
    add1 = dict(tools["c_add1"].attributes or {})
    assert add1["gen_ai.tool.description"] == "Add two numbers."
    assert add1["kode.tool.outcome"] == "done" and "error.type" not in add1
    assert tools["c_add1"].status.status_code is StatusCode.UNSET

    expected = {
        "c_bad": ("invalid_tool_params", "failed"),
        "c_slow": ("timeout", "failed"),
        "c_write": ("permission_denied", "denied"),
        "c_wipe": ("permission_denied", "denied"),
    }
    for call_id, (error, outcome) in expected.items():
        attrs = dict(tools[call_id].attributes or {})
        assert (attrs["error.type"], attrs["kode.tool.outcome"]) == (error, outcome), call_id
        assert tools[call_id].status.status_code is StatusCode.ERROR
    approval = [e for e in tools["c_write"].events if e.name == "kode.approval"]
    assert len(approval) == 1
    assert dict(approval[0].attributes or {})["kode.approval.decision"] == "deny"
    assert dict(approval[0].attributes or {})["kode.reason"]
    hook = [dict(e.attributes or {}) for e in tools["c_wipe"].events if e.name == "kode.hook"]
    assert hook == [{"kode.hook.kind": "pre", "kode.hook.outcome": "deny"}]

    # The two sync calls ran in worker threads, inside their own execute_tool spans.
    assert len(threads) == 2
    assert all(t != threading.get_ident() for t, _ in threads)
    seen = {ctx.span_id for _, ctx in threads}
    assert seen == {tools["c_add1"].context.span_id, tools["c_add2"].context.span_id}


async def test_content_is_captured_only_when_switched_on(
    reg: ToolRegistry, telemetry: Telemetry
) -> None:
    _tools(reg, [])
    agent, _ = _agent(reg, telemetry, capture=True)
    await agent.send("Go.")
    add = next(
        s for s in telemetry.spans() if (s.attributes or {}).get("gen_ai.tool.call.id") == "c_add1"
    )
    assert json.loads(add.attributes["gen_ai.tool.call.arguments"]) == {"a": 1, "b": 2}  # type: ignore[index,arg-type]
    assert add.attributes["gen_ai.tool.call.result"] == "3"  # type: ignore[index]
    first, last = telemetry.named("chat scripted")
    messages = json.loads(first.attributes["gen_ai.input.messages"])  # type: ignore[index,arg-type]
    assert messages == [{"role": "user", "parts": [{"type": "text", "content": "Go."}]}]
    assert json.loads(first.attributes["gen_ai.system_instructions"]) == [  # type: ignore[index,arg-type]
        {"type": "text", "content": "Be brief."}
    ]
    out = json.loads(last.attributes["gen_ai.output.messages"])  # type: ignore[index,arg-type]
    assert out == [
        {"role": "assistant", "parts": [{"type": "text", "content": "All done."}],
         "finish_reason": "end_turn"}
    ]  # fmt: skip
    calls = json.loads(first.attributes["gen_ai.output.messages"])[0]["parts"]  # type: ignore[index,arg-type]
    assert {
        "type": "tool_call",
        "id": "c_add1",
        "name": "add",
        "arguments": {"a": 1, "b": 2},
    } in calls


async def test_content_follows_the_environment_by_default(
    reg: ToolRegistry, telemetry: Telemetry, monkeypatch: pytest.MonkeyPatch
) -> None:
    _tools(reg, [])
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    agent, _ = _agent(reg, telemetry)
    await agent.send("Go.")
    assert all(
        "gen_ai.input.messages" in (s.attributes or {}) for s in telemetry.named("chat scripted")
    )


async def test_metrics_durations_and_tokens(reg: ToolRegistry, telemetry: Telemetry) -> None:
    _tools(reg, [])
    agent, _ = _agent(reg, telemetry)
    reply = await agent.send("Go.")
    chat = telemetry.points("gen_ai.client.operation.duration")
    assert [(a, n) for a, n, _ in chat] == [
        (
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": "kode.scripted",
                "gen_ai.request.model": "scripted",
                "gen_ai.response.model": "scripted",
            },
            2,
        )
    ]
    tokens = {
        a["gen_ai.token.type"]: (n, s) for a, n, s in telemetry.points("gen_ai.client.token.usage")
    }
    assert tokens == {
        "input": (2, reply.usage.input_tokens),
        "output": (2, reply.usage.output_tokens),
    }
    tools = {
        (a["gen_ai.tool.name"], a["kode.tool.outcome"], a.get("error.type")): n
        for a, n, _ in telemetry.points("gen_ai.execute_tool.duration")
    }
    assert tools == {
        ("add", "done", None): 2,
        ("add", "failed", "invalid_tool_params"): 1,
        ("slow", "failed", "timeout"): 1,
        ("write", "denied", "permission_denied"): 1,
        ("wipe", "denied", "permission_denied"): 1,
    }
    runs = telemetry.points("gen_ai.invoke_agent.duration")
    assert [(a["gen_ai.agent.name"], n) for a, n, _ in runs] == [("worker", 1)]


async def test_an_agent_not_instrumented_records_nothing(
    reg: ToolRegistry, telemetry: Telemetry
) -> None:
    _tools(reg, [])
    agent, _ = _agent(reg, telemetry)
    off = Agent.create(agent.template, model=ScriptedModel(["hi"]), registry=reg, instrument=False)
    assert off.tracing is None
    await off.send("Go.")
    assert telemetry.spans() == []


class FlakyModel:
    """Fails its first request once (a retry), then answers; or always fails."""

    name = "flaky-1"
    provider_name = "acme"

    def __init__(self, *, fail: bool = False) -> None:
        self.fail = fail

    async def stream(self, request: Any) -> Any:
        from kode.models import (
            Message,
            ModelError,
            ModelResponse,
            ModelRetry,
            TextContent,
            Usage,
        )

        error = ModelError("overloaded", provider="acme", status_code=529, retryable=True)
        if self.fail:
            raise error
        yield ModelRetry(attempt=1, max_retries=2, delay=0.0, error=error)
        yield ModelResponse(
            message=Message(role="assistant", content=[TextContent(text="Fine.")]),
            stop_reason="end_turn",
            usage=Usage(input_tokens=12, output_tokens=3),
            model="flaky-1-2026",
        )


async def test_a_retry_is_an_event_of_its_chat_span(telemetry: Telemetry) -> None:
    agent = Agent.create(
        AgentTemplate(id="flaky"), model=FlakyModel(), instrument=telemetry.settings()
    )
    assert (await agent.send("Hi.")).text == "Fine."
    chat = telemetry.one("chat flaky-1")
    attrs = dict(chat.attributes or {})
    assert attrs["gen_ai.provider.name"] == "acme"
    assert attrs["gen_ai.request.model"] == "flaky-1"
    assert attrs["gen_ai.response.model"] == "flaky-1-2026"
    assert (attrs["gen_ai.usage.input_tokens"], attrs["gen_ai.usage.output_tokens"]) == (12, 3)
    assert [(e.name, dict(e.attributes or {})) for e in chat.events] == [
        (
            "kode.model.retry",
            {
                "kode.retry.attempt": 1,
                "kode.retry.max_retries": 2,
                "kode.retry.delay": 0.0,
                "error.type": "ModelError",
            },
        )
    ]


async def test_a_failed_model_request_fails_its_chat_and_agent_spans(
    telemetry: Telemetry,
) -> None:
    agent = Agent.create(
        AgentTemplate(id="flaky"), model=FlakyModel(fail=True), instrument=telemetry.settings()
    )
    with pytest.raises(AgentError, match="overloaded"):
        await agent.send("Hi.")
    chat = telemetry.one("chat flaky-1")
    run = telemetry.one("invoke_agent flaky")
    assert dict(chat.attributes or {})["error.type"] == "ModelError"
    assert chat.status.status_code is StatusCode.ERROR
    assert dict(run.attributes or {})["error.type"] == "ModelError"
    assert run.status.status_code is StatusCode.ERROR
    points = telemetry.points("gen_ai.client.operation.duration")
    assert [a.get("error.type") for a, _, _ in points] == ["ModelError"]


async def test_an_unknown_tool_and_a_post_hook(reg: ToolRegistry, telemetry: Telemetry) -> None:
    @define_tool(registry=reg)
    def echo(text: str) -> str:
        """Echo.

        Args:
            text: The text.
        """
        return text

    hooks = AgentHooks(post_tool_use=[lambda call, result, ctx: "replaced"])
    model = ScriptedModel(
        [[tool_use("nope", {}, id="c_nope"), tool_use("echo", {"text": "x"}, id="c_echo")], "ok"]
    )
    agent = Agent.create(
        AgentTemplate(id="t", tools=["echo"]),
        model=model,
        registry=reg,
        hooks=hooks,
        instrument=telemetry.settings(),
    )
    await agent.send("Go.")
    nope = dict(telemetry.one("execute_tool nope").attributes or {})
    assert (nope["error.type"], nope["kode.tool.outcome"]) == ("tool_not_registered", "failed")
    assert "gen_ai.tool.description" not in nope
    echoed = telemetry.one("execute_tool echo")
    assert [dict(e.attributes or {}) for e in echoed.events if e.name == "kode.hook"] == [
        {"kode.hook.kind": "post", "kode.hook.outcome": "replaced"}
    ]


async def test_a_chat_span_names_the_server_of_a_model_with_a_base_url(
    telemetry: Telemetry,
) -> None:
    with FakeProviderServer([Reply(content=["Hi there."])]) as server:
        port = int(server.url.rsplit(":", 1)[1].strip("/"))
        model = AnthropicModel("claude-test-1", base_url=server.url, api_key="k")
        agent = Agent.create(
            AgentTemplate(id="hello"), model=model, instrument=telemetry.settings()
        )
        assert (await agent.send("Hi.")).text == "Hi there."
        await model.aclose()
    chat = telemetry.one("chat claude-test-1")
    attrs = dict(chat.attributes or {})
    assert (attrs["server.address"], attrs["server.port"]) == ("127.0.0.1", port)
    assert attrs["gen_ai.provider.name"] == "anthropic"
    [(point, _, _)] = telemetry.points("gen_ai.client.operation.duration")
    assert (point["server.address"], point["server.port"]) == ("127.0.0.1", port)
    # A model without a base URL (the SDK's default address, or no server at all) names none.
    scripted = Agent.create(
        AgentTemplate(id="plain"), model=ScriptedModel(["Ok."]), instrument=telemetry.settings()
    )
    await scripted.send("Hi.")
    assert "server.address" not in dict(telemetry.one("chat scripted").attributes or {})


def _provider_model(kind: str, server: FakeProviderServer) -> Any:
    if kind == "anthropic":
        return AnthropicModel("claude-test-1", base_url=server.url, api_key="k")
    if kind == "openai":
        return OpenAIModel("gpt-test-1", base_url=server.openai_base_url, api_key="k")
    if kind == "responses":
        return OpenAIResponsesModel("gpt-test-1", base_url=server.openai_base_url, api_key="k")
    return GeminiModel("gemini-test-1", base_url=server.url, api_key="k")


# On trio the openai SDK leaves its finished stream's async generators to the garbage collector,
# which trio reports (see tests/models/test_openai.py); the stream itself is complete.
@pytest.mark.filterwarnings(
    r"ignore:Exception ignored in. <async_generator object "
    r"(Response\.aiter_bytes|SSEDecoder\.aiter_bytes|AsyncStream\._iter_events) "
    ":pytest.PytestUnraisableExceptionWarning"
)
@pytest.mark.parametrize(
    ("kind", "response_id"),
    [
        ("anthropic", "msg_fake_0001"),
        ("openai", "chatcmpl-fake0001"),
        ("responses", "resp_fake_0001"),
        ("gemini", "resp_fake_0001"),
    ],
)
async def test_a_chat_span_has_the_response_id_streaming_and_time_to_first_chunk(
    kind: str, response_id: str, telemetry: Telemetry
) -> None:
    with FakeProviderServer([Reply(content=["Hi there, in a few pieces."])]) as server:
        model = _provider_model(kind, server)
        agent = Agent.create(
            AgentTemplate(id="hello"), model=model, instrument=telemetry.settings()
        )
        assert (await agent.send("Hi.")).text == "Hi there, in a few pieces."
        await model.aclose()
    [chat] = [s for s in telemetry.spans() if (s.name or "").startswith("chat ")]
    attrs = dict(chat.attributes or {})
    assert attrs["gen_ai.response.id"] == response_id
    assert attrs["gen_ai.request.stream"] is True
    first = attrs["gen_ai.response.time_to_first_chunk"]
    assert isinstance(first, float)
    assert chat.end_time is not None and chat.start_time is not None
    assert 0 < first <= (chat.end_time - chat.start_time) / 1e9


async def test_time_to_first_chunk_leaves_out_nothing_but_is_measured_after_retries(
    telemetry: Telemetry,
) -> None:
    # A model that sends no deltas: its whole response is the first chunk. No id: no attribute.
    agent = Agent.create(
        AgentTemplate(id="flaky"), model=FlakyModel(), instrument=telemetry.settings()
    )
    await agent.send("Hi.")
    attrs = dict(telemetry.one("chat flaky-1").attributes or {})
    assert attrs["gen_ai.request.stream"] is True
    assert attrs["gen_ai.response.time_to_first_chunk"] > 0
    assert "gen_ai.response.id" not in attrs


async def test_prompt_cache_counts_are_span_attributes(telemetry: Telemetry) -> None:
    usage = Usage(
        input_tokens=1200, output_tokens=7, cache_read_input_tokens=1000,
        cache_creation_input_tokens=150,
    )  # fmt: skip
    with FakeProviderServer([Reply(content=["Hi there."], usage=usage)]) as server:
        model = AnthropicModel("claude-test-1", base_url=server.url, api_key="k")
        agent = Agent.create(
            AgentTemplate(id="hello"), model=model, instrument=telemetry.settings()
        )
        done = await agent.send("Hi.")
        await model.aclose()
    assert done.usage == usage  # read back from Anthropic's counts through the real client
    for span in (telemetry.one("chat claude-test-1"), telemetry.one("invoke_agent hello")):
        attrs = dict(span.attributes or {})
        assert attrs["gen_ai.usage.input_tokens"] == 1200
        assert attrs["gen_ai.usage.cache_read.input_tokens"] == 1000
        assert attrs["gen_ai.usage.cache_creation.input_tokens"] == 150
