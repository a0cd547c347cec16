"""A served tool that asks, over streamable HTTP on 2026-07-28 and on 2025-11-25.

`kode mcp serve --http` runs as a subprocess (one for the module); the clients are real: the
official SDK's ``Client`` and FastMCP 4's ``Client``. On 2026-07-28 a tool's ``ctx.elicit``
and ``ctx.sample`` are ``input_required`` results the client answers by calling again, with
the answers so far in a sealed ``requestState``; on 2025-11-25 they are requests to the client.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError
from mcp_peers import (
    ASKING_TOOLS,
    KODE_TOOLS,
    HttpServer,
    free_port,
    serve_command,
    subprocess_env,
    wait_until,
    write,
)

fastmcp = pytest.importorskip("fastmcp", reason="the FastMCP peer tests need fastmcp (test extra)")

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("anyio_backend", ["asyncio"])]

TRIP = {"city": "Bergen", "nights": 3}
TIP = "Walk the harbour at dawn."
DONE = "3 nights in Bergen. Tip: Walk the harbour at dawn."


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """`kode mcp serve --http` of the asking tools; yields its URL and its marks folder."""
    folder = tmp_path_factory.mktemp("rounds")
    marks = folder / "marks"
    marks.mkdir()
    module = write(folder / "asking_tools.py", KODE_TOOLS + ASKING_TOOLS)
    before = os.environ.get("KODE_TEST_MARKS")
    os.environ["KODE_TEST_MARKS"] = str(marks)
    server = HttpServer(module, free_port())
    try:
        yield server.start(), marks
    finally:
        server.stop()
        if before is None:
            del os.environ["KODE_TEST_MARKS"]
        else:
            os.environ["KODE_TEST_MARKS"] = before


class Answers:
    """The client's side: answers the server's questions, records them."""

    def __init__(self) -> None:
        self.elicited: list[types.ElicitRequestParams] = []
        self.sampled: list[types.CreateMessageRequestParams] = []
        self.progress: list[str | None] = []

    async def elicit(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.elicited.append(params)
        if isinstance(params, types.ElicitRequestURLParams):
            return types.ElicitResult(action="accept")
        return types.ElicitResult(action="accept", content=TRIP)

    async def sample(
        self, context: Any, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        self.sampled.append(params)
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(text=TIP), model="client-model"
        )

    async def on_progress(self, progress: float, total: float | None, message: str | None) -> None:
        self.progress.append(message)


async def appears(path: Path) -> bool:
    """Whether `path` exists within 10 seconds (the server touches it)."""
    return await anyio.to_thread.run_sync(wait_until, path.exists)


def text(result: types.CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))


def sdk_client(url: str, answers: Answers) -> Client:
    return Client(url, elicitation_callback=answers.elicit, sampling_callback=answers.sample)


# --- the official SDK's client ---------------------------------------------------------------


async def test_sdk_client_on_2026_answers_a_tool_that_elicits_and_samples(
    served: tuple[str, Path],
) -> None:
    url, marks = served
    runs = marks / "plan_trip.runs"
    runs.unlink(missing_ok=True)
    answers = Answers()
    async with sdk_client(url, answers) as client:
        assert client.protocol_version == "2026-07-28"
        result = await client.call_tool("plan_trip", {}, progress_callback=answers.on_progress)
    assert not result.is_error, text(result)
    assert text(result) == DONE
    [asked] = answers.elicited
    assert isinstance(asked, types.ElicitRequestFormParams)
    assert asked.message == "Where are you going, and for how long?"
    assert asked.requested_schema["required"] == ["city", "nights"]
    [sampled] = answers.sampled
    assert sampled.system_prompt == "You are a travel guide."
    assert sampled.messages[0].content == types.TextContent(text="One tip for 3 nights in Bergen?")
    # one run per answer, each from the start: the question is not asked twice
    assert runs.read_text().count("run") == 3
    assert "asking for a tip" in answers.progress


async def test_over_stdio_too_a_2026_client_answers_a_tool_that_asks(
    served: tuple[str, Path],
) -> None:
    marks = served[1]
    module = marks.parent / "asking_tools.py"
    command = serve_command(module)
    params = StdioServerParameters(
        command=command[0], args=command[1:], cwd=str(module.parent), env=subprocess_env()
    )
    answers = Answers()
    async with Client(
        params, elicitation_callback=answers.elicit, sampling_callback=answers.sample
    ) as client:
        assert client.protocol_version == "2026-07-28"
        result = await client.call_tool("plan_trip", {})
    assert text(result) == DONE
    assert len(answers.elicited) == 1 and len(answers.sampled) == 1


async def test_sdk_client_on_2026_answers_a_url_elicitation(served: tuple[str, Path]) -> None:
    # A URL elicitation gets a fresh id on each run: it is still the same question.
    answers = Answers()
    async with sdk_client(served[0], answers) as client:
        result = await client.call_tool("sign_in", {})
    assert text(result) == "sign-in: accept"
    [asked] = answers.elicited
    assert isinstance(asked, types.ElicitRequestURLParams)
    assert asked.url == "https://example.com/login"


async def first_round(client: Client, name: str) -> types.InputRequiredResult:
    result = await client.session.call_tool(name, {}, allow_input_required=True)
    assert isinstance(result, types.InputRequiredResult)
    assert result.request_state is not None
    return result


async def test_a_forged_or_altered_request_state_is_refused(served: tuple[str, Path]) -> None:
    answers = Answers()
    accepted = {"q0": types.ElicitResult(action="accept", content=TRIP)}
    async with sdk_client(served[0], answers) as client:
        first = await first_round(client, "plan_trip")
        assert first.input_requests is not None and list(first.input_requests) == ["q0"]
        state = first.request_state
        assert state is not None and "Bergen" not in state and "answers" not in state  # sealed
        middle = len(state) // 2
        altered = state[:middle] + ("A" if state[middle] != "A" else "B") + state[middle + 1 :]
        forged_plain = '{"v":1,"answers":[],"asked":{"key":"q0","d":"x"}}'
        for forged in (altered, forged_plain, "v1." + "A" * 80):
            with pytest.raises(MCPError, match="Invalid or expired requestState") as raised:
                await client.session.call_tool(
                    "plan_trip",
                    {},
                    input_responses=dict(accepted),
                    request_state=forged,
                    allow_input_required=True,
                )
            assert raised.value.code == types.INVALID_PARAMS
        # a real state is bound to its tool and arguments
        with pytest.raises(MCPError, match="Invalid or expired requestState"):
            await client.session.call_tool(
                "sign_in",
                {},
                input_responses=dict(accepted),
                request_state=state,
                allow_input_required=True,
            )
        # without the answer it waits for, the retry is told what is missing
        with pytest.raises(MCPError, match=r"has no inputResponses\['q0'\]"):
            await client.session.call_tool(
                "plan_trip", {}, input_responses={}, request_state=state, allow_input_required=True
            )
        # and with it, the call goes on to its next question
        second = await client.session.call_tool(
            "plan_trip",
            {},
            input_responses=dict(accepted),
            request_state=state,
            allow_input_required=True,
        )
        assert isinstance(second, types.InputRequiredResult)
        assert second.input_requests is not None
        assert isinstance(second.input_requests["q1"], types.CreateMessageRequest)


async def test_a_tool_that_asks_something_else_when_run_again_is_told(
    served: tuple[str, Path],
) -> None:
    async with sdk_client(served[0], Answers()) as client:
        result = await client.call_tool("fickle", {})
    assert result.is_error
    assert "asked another question when run again" in text(result)


async def test_a_2026_call_cancelled_after_its_answer_cancels_the_tool(
    served: tuple[str, Path],
) -> None:
    url, marks = served
    async with sdk_client(url, Answers()) as client:
        with anyio.move_on_after(1.0):
            await client.call_tool("ask_then_wait", {})
        assert await appears(marks / "ask_then_wait.cancelled"), "the tool was not cancelled"
        assert (marks / "ask_then_wait.started").exists()
        # the server is still fine
        assert text(await client.call_tool("add", {"a": 1, "b": 2})) == "3"


# --- FastMCP 4's client ------------------------------------------------------------------------


@pytest.mark.parametrize(("mode", "version"), [("auto", "2026-07-28"), ("legacy", "2025-11-25")])
async def test_fastmcp_client_uses_a_tool_that_asks(
    served: tuple[str, Path], mode: str, version: str
) -> None:
    asked: list[str] = []
    sampled: list[str] = []
    progress: list[str | None] = []

    async def elicit(message: str, response_type: Any, params: Any, context: Any) -> Any:
        asked.append(message)
        return dict(TRIP)

    async def sample(messages: list[types.SamplingMessage], params: Any, context: Any) -> str:
        sampled.append(str(messages[0].content.text))  # type: ignore[union-attr]
        return TIP

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(message)

    client = fastmcp.Client(
        served[0], elicitation_handler=elicit, sampling_handler=sample, mode=mode
    )
    async with client:
        assert client.protocol_version == version
        tools = {t.name for t in await client.list_tools()}
        assert {"plan_trip", "weather", "count"} <= tools
        weather = await client.call_tool("weather", {"city": "Rome"})
        assert weather.structured_content == {"city": "Rome", "celsius": 21.5}
        counted = await client.call_tool("count", {"n": 3}, progress_handler=on_progress)
        assert counted.content[0].text == "counted to 3"  # type: ignore[union-attr]
        assert "at 2" in progress
        planned = await client.call_tool("plan_trip", {}, progress_handler=on_progress)
        assert planned.content[0].text == DONE  # type: ignore[union-attr]
        assert asked == ["Where are you going, and for how long?"]
        assert sampled == ["One tip for 3 nights in Bergen?"]
        assert "asking for a tip" in progress


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_fastmcp_client_cancels_a_call(served: tuple[str, Path], mode: str) -> None:
    url, marks = served
    for name in ("async.started", "async.cancelled"):
        (marks / name).unlink(missing_ok=True)
    async with fastmcp.Client(url, mode=mode) as client:
        with anyio.move_on_after(1.0):
            await client.call_tool("wait_async", {})
        assert await appears(marks / "async.cancelled"), "the tool was not cancelled"
        assert (marks / "async.started").exists()
        added = await client.call_tool("add", {"a": 2, "b": 3})
        assert added.content[0].text == "5"  # type: ignore[union-attr]
