"""MCP tasks on the 2026-07-28 protocol (the tasks extension), both ways, with a real peer.

The peer is FastMCP's own implementation of the extension, ``fastmcp-tasks`` 4.1.4, in a
virtual environment of its own (`task_peer`): its server (task tools with ``mode="required"``,
so a call that is not run as a task is refused) consumed by ``kode.mcp.connect``, and its
client driving ``kode mcp serve --http``. The hostile cases (another client's task id, a
guessed or altered one, a task whose client left) run against a `ToolServer` in this process.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.server.auth.provider import AccessToken
from mcp.shared.exceptions import MCPError
from mcp_peers import HttpServer, free_port, serve_command, subprocess_env, wait_until, write
from pydantic import BaseModel
from task_peer import PeerUnavailable, peer_python

from kode import ToolContext, ToolRegistry, define_tool
from kode.mcp import HTTPAccess, ToolServer, connect
from kode.mcp.elicitation import ElicitationReply, ElicitationRequest
from kode.mcp.modern import negotiate
from kode.mcp.task_extension import (
    TASKS_EXTENSION,
    CancelTaskRequest,
    CreatedTask,
    GetTaskRequest,
    TaskAck,
    TaskParams,
    TaskState,
    UpdateParams,
    UpdateTaskRequest,
    task_claim,
)

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # uvicorn (the HTTP server in this process) runs on asyncio


CITY_SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}

PEER_SERVER = '''
"""A FastMCP 4.1 server whose tools run only as tasks (fastmcp-tasks, memory:// backend)."""
import asyncio
import sys
from pathlib import Path

import mcp_types
from fastmcp import Context, FastMCP
from fastmcp.utilities.tasks import TaskConfig
from fastmcp_tasks import TasksExtension

MARKS = Path(sys.argv[2])
mcp = FastMCP("fastmcp-tasks-peer")
mcp.add_extension(TasksExtension(url="memory://"))
REQUIRED = TaskConfig(mode="required")


@mcp.tool(task=REQUIRED)
async def slow_add(a: int, b: int, ctx: Context) -> int:
    """Add two numbers, slowly."""
    await ctx.report_progress(1, 2, "half way")
    await asyncio.sleep(0.3)
    return a + b


@mcp.tool(task=REQUIRED)
async def linger(seconds: float) -> str:
    """Wait, noting when it starts and ends."""
    (MARKS / "linger.started").touch()
    try:
        await asyncio.sleep(seconds)
    finally:
        (MARKS / "linger.ended").touch()
    return "waited"


@mcp.tool(task=REQUIRED)
async def where(ctx: Context):
    """Ask where the user goes (the guard pattern: a task asks by returning its question)."""
    answers = ctx.input_responses
    if not answers:
        return mcp_types.InputRequiredResult(
            input_requests={
                "city": mcp_types.ElicitRequest(
                    params=mcp_types.ElicitRequestFormParams(
                        message="Which city?", requested_schema=__SCHEMA__
                    )
                )
            }
        )
    return "going to " + answers["city"].content["city"]


if __name__ == "__main__":
    mcp.run(transport="http", host="127.0.0.1", port=int(sys.argv[1]), show_banner=False,
            log_level="warning")
'''.replace("__SCHEMA__", repr(CITY_SCHEMA))

KODE_TASK_TOOLS = '''
"""Tools `kode mcp serve` runs as 2026-07-28 tasks in the tests."""
import os
from pathlib import Path

import anyio

from kode import ToolContext, define_tool

MARKS = Path(os.environ["KODE_TEST_MARKS"])


@define_tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@define_tool
async def slow_add(a: int, b: int, ctx: ToolContext) -> int:
    """Add two numbers, slowly."""
    ctx.progress("half way", 0.5)
    await anyio.sleep(0.4)
    return a + b


@define_tool
async def linger(seconds: float) -> str:
    """Wait, noting when it starts and ends."""
    (MARKS / "linger.started").touch()
    try:
        await anyio.sleep(seconds)
    finally:
        (MARKS / "linger.ended").touch()
    return "waited"


@define_tool
async def where(ctx: ToolContext) -> str:
    """Ask where the user goes."""
    with (MARKS / "where.runs").open("a") as runs:
        runs.write("run\\n")
    reply = await ctx.elicit("Which city?", schema=__SCHEMA__)
    return "going to " + reply.content["city"]
'''.replace("__SCHEMA__", repr(CITY_SCHEMA))

PEER_CLIENT = '''
"""fastmcp-tasks' client driving `kode mcp serve`; prints what it saw as JSON."""
import asyncio
import json
import sys
from pathlib import Path

from fastmcp import Client
from fastmcp.exceptions import ToolError
from fastmcp_tasks import call_tool_task
from fastmcp_tasks.client import _send_get
from mcp.shared.exceptions import MCPError

MARKS = Path(sys.argv[2])
seen = {}


async def answer(message, response_type, params, context):
    seen["asked"] = message
    return {"city": "Bergen"}


async def main():
    async with Client(sys.argv[1], elicitation_handler=answer) as client:
        seen["protocol"] = client.session.protocol_version
        # a call that ends at once is answered at once, not as a task
        try:
            await call_tool_task(client, "add", {"a": 1, "b": 2})
            seen["add"] = "task"
        except ToolError:
            seen["add"] = (await client.call_tool("add", {"a": 1, "b": 2})).structured_content

        task = await call_tool_task(client, "slow_add", {"a": 2, "b": 3})
        seen["task_id"] = task.task_id
        status = await task.wait(state="working", timeout=5)
        for _ in range(100):
            if status.status_message:
                break
            await asyncio.sleep(0.02)
            status = await task.status()
        seen["status_message"] = status.status_message
        seen["slow_add"] = (await task.result()).structured_content

        task = await call_tool_task(client, "linger", {"seconds": 30})
        for _ in range(250):
            if (MARKS / "linger.started").exists():
                break
            await asyncio.sleep(0.02)
        await task.cancel()
        seen["after_cancel"] = (await task.status()).status

        seen["where"] = (await client.call_tool("where", {})).content[0].text

        try:
            await _send_get(client.session, "not-a-task-of-anyone")
        except MCPError as exc:
            seen["forged"] = [exc.error.code, exc.error.message]
    print(json.dumps(seen))


asyncio.run(main())
'''


@pytest.fixture(scope="module")
def peer() -> Path:
    """The peer environment's Python (made the first time; skipped only if it cannot be)."""
    try:
        return peer_python()
    except PeerUnavailable as exc:
        pytest.skip(f"the fastmcp-tasks peer's environment could not be made: {exc}")


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A folder for the scripts, with ``marks/`` that the tools touch (KODE_TEST_MARKS)."""
    found = tmp_path_factory.mktemp("task-extension")
    (found / "marks").mkdir()
    before = os.environ.get("KODE_TEST_MARKS")
    os.environ["KODE_TEST_MARKS"] = str(found / "marks")
    yield found
    if before is None:
        del os.environ["KODE_TEST_MARKS"]
    else:
        os.environ["KODE_TEST_MARKS"] = before


class User:
    """Answers the peer's questions; records them."""

    def __init__(self) -> None:
        self.asked: list[ElicitationRequest] = []

    async def elicit(self, request: ElicitationRequest) -> ElicitationReply:
        self.asked.append(request)
        return ElicitationReply(action="accept", content={"city": "Bergen"})


async def test_kode_uses_a_fastmcp_servers_tasks(peer: Path, folder: Path) -> None:
    marks = folder / "marks"
    script = write(folder / "peer_server.py", PEER_SERVER)
    port = free_port()
    server = HttpServer(script, port, command=[str(peer), str(script), str(port), str(marks)])
    server.start()
    try:
        reg = ToolRegistry("task-extension-client")
        user = User()
        async with connect("ft", url=server.url, registry=reg, elicitation=user.elicit) as conn:
            assert conn.remote.protocol_version == "2026-07-28"
            # required-mode tools: the peer refuses a call that does not opt in to tasks
            ctx: ToolContext[Any] = ToolContext(tool_name="mcp__ft__slow_add")
            added = await reg.get("mcp__ft__slow_add").run({"a": 2, "b": 3}, ctx)
            assert not added.is_error, added.text
            assert added.text == "5"
            # the task's statusMessage is the call's progress
            assert "half way" in [e.data["message"] for e in ctx.events if e.event == "progress"]

            # a task that asks: its inputRequests answered with the elicitation function
            went = await reg.get("mcp__ft__where").run({})
            assert went.text == "going to Bergen", went.text
            [asked] = user.asked
            assert asked.message == "Which city?"

            # a kode call that is cancelled cancels the task on the server
            with anyio.move_on_after(1.0):
                await reg.get("mcp__ft__linger").run({"seconds": 30})
            assert await anyio.to_thread.run_sync(wait_until, (marks / "linger.ended").exists)
            assert (marks / "linger.started").exists()
    finally:
        server.stop()


def test_fastmcps_task_client_drives_kode_mcp_serve(peer: Path, folder: Path) -> None:
    marks = folder / "marks"
    for name in ("linger.started", "linger.ended", "where.runs"):
        (marks / name).unlink(missing_ok=True)
    module = write(folder / "task_tools.py", KODE_TASK_TOOLS)
    client = write(folder / "peer_client.py", PEER_CLIENT)
    server = HttpServer(module, free_port())
    url = server.start()
    try:
        done = subprocess.run(
            [str(peer), str(client), url, str(marks)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    finally:
        server.stop()
    assert done.returncode == 0, done.stderr[-3000:] + server.log.read_text()[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["protocol"] == "2026-07-28"
    assert seen["add"] == {"result": 3}  # it ended at once: a plain result, not a task
    assert len(seen["task_id"]) >= 40  # 32 random bytes, URL-safe
    assert seen["status_message"] == "half way"
    assert seen["slow_add"] == {"result": 5}
    assert seen["after_cancel"] == "cancelled"
    assert wait_until((marks / "linger.ended").exists)  # the tool itself was cancelled
    assert seen["asked"] == "Which city?"
    assert seen["where"] == "going to Bergen"
    # the tool waited for the answer: it ran once, not once per answer
    assert (marks / "where.runs").read_text() == "run\n"
    code, message = seen["forged"]
    assert code == types.INVALID_PARAMS
    assert "There is no task 'not-a-task-of-anyone' for this client" in message


@pytest.mark.parametrize(
    ("protocol", "version"), [("newest", "2026-07-28"), ("handshake", "2025-11-25")]
)
async def test_kode_to_kode_over_stdio_on_both_revisions(
    folder: Path, protocol: str, version: str
) -> None:
    # on 2026-07-28 a tool that asks runs as a task (waiting for its answer: it runs once, where
    # input_required rounds would run it again); on 2025-11-25 it asks with a request
    marks = folder / "marks"
    (marks / "where.runs").unlink(missing_ok=True)
    module = write(folder / "task_tools.py", KODE_TASK_TOOLS)
    reg = ToolRegistry(f"task-extension-stdio-{protocol}")
    user = User()
    async with connect(
        "k",
        command=serve_command(module),
        env=subprocess_env(),
        protocol=protocol,  # type: ignore[arg-type]
        registry=reg,
        elicitation=user.elicit,
    ) as conn:
        assert conn.remote.protocol_version == version
        went = await reg.get("mcp__k__where").run({})
        assert went.text == "going to Bergen", went.text
        ctx: ToolContext[Any] = ToolContext(tool_name="mcp__k__slow_add")
        added = await reg.get("mcp__k__slow_add").run({"a": 2, "b": 3}, ctx)
        assert added.text == "5"
        assert "half way" in [e.data["message"] for e in ctx.events if e.event == "progress"]
    assert (marks / "where.runs").read_text() == "run\n"


# --- hostile: a ToolServer in this process, two clients with tokens of their own ------------


class Picked(BaseModel):
    n: int


class TwoClients:
    """Bearer tokens of two clients (principals): whose a token is, is its client id."""

    def __init__(self) -> None:
        self.tokens = {secrets.token_urlsafe(24): "alice", secrets.token_urlsafe(24): "bob"}

    def token_of(self, who: str) -> str:
        return next(t for t, name in self.tokens.items() if name == who)

    async def verify_token(self, token: str) -> AccessToken | None:
        who = self.tokens.get(token)
        return None if who is None else AccessToken(token=token, client_id=who, scopes=[])


@asynccontextmanager
async def served(idle: float) -> AsyncIterator[tuple[str, TwoClients, dict[str, Any]]]:
    """A ToolServer over HTTP on a free port; yields its URL, its tokens and what tools saw."""
    reg = ToolRegistry("task-extension-hostile")
    saw: dict[str, Any] = {"lingering": anyio.Event(), "cancelled": anyio.Event()}

    @define_tool(registry=reg)
    async def slow_add(a: int, b: int) -> int:
        """Add two numbers, slowly."""
        await anyio.sleep(0.5)
        return a + b

    @define_tool(registry=reg)
    async def linger() -> str:
        """Wait a minute."""
        saw["lingering"].set()
        try:
            await anyio.sleep(60)
        except anyio.get_cancelled_exc_class():
            saw["cancelled"].set()
            raise
        return "waited"

    @define_tool(registry=reg)
    async def pick(ctx: ToolContext[Any]) -> str:
        """Ask for a number."""
        reply = await ctx.elicit("Which number?", schema=Picked)
        return f"picked {reply.value.n}" if reply.value is not None else reply.action

    clients = TwoClients()
    server = ToolServer(registry=reg, task_idle_timeout=idle)
    ports: list[int] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(
            lambda: server.run_http(
                port=0, access=HTTPAccess(token_verifier=clients), on_listening=ports.append
            )
        )
        await anyio.to_thread.run_sync(wait_until, lambda: bool(ports))
        yield f"http://127.0.0.1:{ports[0]}/mcp", clients, saw
        tg.cancel_scope.cancel()


@asynccontextmanager
async def session_as(url: str, token: str, *, asks: bool = False) -> AsyncIterator[ClientSession]:
    """The official SDK's client on 2026-07-28, opted in to tasks, with `token`.

    `asks`: it declares elicitation (answered with ``tasks/update`` by the test itself).
    """

    async def never(*args: Any) -> types.ElicitResult:
        raise AssertionError("a task's question is answered with tasks/update")

    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(
            read,
            write,
            extensions={TASKS_EXTENSION: {}},
            result_claims={TASKS_EXTENSION: [task_claim()]},
            elicitation_callback=never if asks else None,
        ) as session,
    ):
        await negotiate(session)
        assert session.protocol_version == "2026-07-28"
        yield session


async def create(session: ClientSession, name: str, arguments: dict[str, Any]) -> CreatedTask:
    made = await session.call_tool(name, arguments, allow_claimed=True)
    assert isinstance(made, CreatedTask), made
    return made


async def refused(session: ClientSession, request: Any) -> str:
    with pytest.raises(MCPError) as caught:
        await session.send_request(request, TaskState)
    assert caught.value.error.code == types.INVALID_PARAMS
    return caught.value.error.message


async def test_another_clients_or_a_guessed_task_id_gets_an_error_and_nothing_else() -> None:
    async with (
        served(idle=30) as (url, clients, _),
        session_as(url, clients.token_of("alice")) as alice,
        session_as(url, clients.token_of("bob")) as bob,
    ):
        made = await create(alice, "slow_add", {"a": 2, "b": 3})
        mine = made.task_id
        assert len(mine) >= 40
        altered = mine[:-1] + ("A" if mine[-1] != "A" else "B")
        guessed = secrets.token_urlsafe(32)
        said = []
        for who, task_id in ((bob, mine), (alice, altered), (alice, guessed), (bob, guessed)):
            said.append(await refused(who, GetTaskRequest(params=TaskParams(task_id=task_id))))
            said.append(await refused(who, CancelTaskRequest(params=TaskParams(task_id=task_id))))
            update = UpdateParams(task_id=task_id, input_responses={"q0": {"action": "accept"}})
            said.append(await refused(who, UpdateTaskRequest(params=update)))
        # one sentence for each: nothing tells "someone else's" from "none"
        assert {re.sub(r"'[^']*'", "ID", m) for m in said} == {
            "There is no task ID for this client: it never existed, it expired, or another "
            "client made it. Call the tool again to start a new task."
        }
        # bob's cancel did nothing: alice's task ends with its result
        for _ in range(200):
            state = await alice.send_request(
                GetTaskRequest(params=TaskParams(task_id=mine)), TaskState
            )
            if state.status != "working":
                break
            await anyio.sleep(0.05)
        assert state.status == "completed", state
        assert state.result is not None and state.result["structuredContent"] == {"result": 5}


async def test_a_task_whose_client_left_is_cancelled_after_the_idle_timeout() -> None:
    async with served(idle=0.5) as (url, clients, saw):
        async with session_as(url, clients.token_of("alice")) as alice:
            left = await create(alice, "linger", {})
            await saw["lingering"].wait()
        # alice is gone, and nobody asks about the task: it is cancelled, not left for a minute
        with anyio.fail_after(10):
            await saw["cancelled"].wait()
        async with session_as(url, clients.token_of("alice")) as back:
            asked = GetTaskRequest(params=TaskParams(task_id=left.task_id))
            state = await back.send_request(asked, TaskState)
        assert state.status == "cancelled"
        assert state.status_message == "cancelled: no client asked about it for 0.5 seconds"


def test_a_bad_task_idle_timeout_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from kode.cli import main

    module = write(tmp_path / "tools.py", "from kode import define_tool\n")
    assert main(["mcp", "serve", str(module), "--task-idle-timeout", "0"]) == 2
    said = capsys.readouterr().err
    assert "--task-idle-timeout 0.0: give a number of seconds above 0" in said
    with pytest.raises(ValueError, match="more than 0 seconds"):
        ToolServer(registry=ToolRegistry("idle"), task_idle_timeout=-1)


async def test_the_number_of_tasks_kept_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    import kode.mcp.served_task_extension as extension

    monkeypatch.setattr(extension, "MAX_TASKS", 2)
    async with (
        served(idle=30) as (url, clients, _),
        session_as(url, clients.token_of("alice")) as alice,
    ):
        first = await create(alice, "linger", {})
        await create(alice, "linger", {})
        with pytest.raises(MCPError) as caught:
            await alice.call_tool("linger", {}, allow_claimed=True)
        assert caught.value.error.message == (
            "This server already runs 2 tasks; cancel one or wait for one to end, then call "
            "the tool again."
        )
        # a finished task makes room (the oldest finished one is forgotten)
        cancel = CancelTaskRequest(params=TaskParams(task_id=first.task_id))
        await alice.send_request(cancel, TaskAck)
        third = await create(alice, "linger", {})
        assert third.task_id != first.task_id
        assert "There is no task" in await refused(
            alice, GetTaskRequest(params=TaskParams(task_id=first.task_id))
        )


async def test_a_task_that_breaks_tells_the_client_no_more_than_a_broken_request_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a bug under a call (not the tool's own error, which is a result): its text can hold
    # paths and secrets, and a plain request that raises gets "Internal server error" alone
    async def broken(*args: Any, **kwargs: Any) -> Any:
        await anyio.sleep(0.3)  # long enough to be a task
        raise RuntimeError("secret token sk-123 in /home/me/.env")

    monkeypatch.setattr(ToolServer, "_run_call", broken)
    async with (
        served(idle=30) as (url, clients, _),
        session_as(url, clients.token_of("alice")) as alice,
    ):
        made = await create(alice, "slow_add", {"a": 2, "b": 3})
        with anyio.fail_after(10):
            while True:
                asked = GetTaskRequest(params=TaskParams(task_id=made.task_id))
                state = await alice.send_request(asked, TaskState)
                if state.status != "working":
                    break
                await anyio.sleep(0.05)
    assert state.status == "failed", state
    assert state.error == {"code": types.INTERNAL_ERROR, "message": "Internal server error"}


async def test_one_client_cannot_take_every_task_slot(monkeypatch: pytest.MonkeyPatch) -> None:
    import kode.mcp.served_task_extension as extension

    monkeypatch.setattr(extension, "MAX_TASKS", 4)
    monkeypatch.setattr(extension, "MAX_TASKS_PER_CLIENT", 2)
    async with (
        served(idle=30) as (url, clients, _),
        session_as(url, clients.token_of("alice")) as alice,
        session_as(url, clients.token_of("bob")) as bob,
    ):
        first = await create(alice, "linger", {})
        await create(alice, "linger", {})
        with pytest.raises(MCPError) as caught:
            await alice.call_tool("linger", {}, allow_claimed=True)
        assert caught.value.error.message == (
            "This client already runs 2 tasks on this server; cancel one or wait for one to "
            "end, then call the tool again."
        )
        # bob still gets his tasks
        await create(bob, "linger", {})
        bobs = await create(bob, "linger", {})
        # alice's own finished task makes room for her, and bob's tasks stay
        cancel = CancelTaskRequest(params=TaskParams(task_id=first.task_id))
        await alice.send_request(cancel, TaskAck)
        await create(alice, "linger", {})
        state = await bob.send_request(
            GetTaskRequest(params=TaskParams(task_id=bobs.task_id)), TaskState
        )
        assert state.status == "working"


async def test_answers_never_asked_or_of_the_wrong_shape_do_not_pass_as_the_answer() -> None:
    async with (
        served(idle=30) as (url, clients, _),
        session_as(url, clients.token_of("alice"), asks=True) as alice,
    ):
        made = await create(alice, "pick", {})
        asked = GetTaskRequest(params=TaskParams(task_id=made.task_id))

        async def state() -> TaskState:
            return await alice.send_request(asked, TaskState)

        async def send(responses: dict[str, Any]) -> None:
            update = UpdateParams(task_id=made.task_id, input_responses=responses)
            await alice.send_request(UpdateTaskRequest(params=update), TaskAck)

        now = await state()
        assert now.status == "input_required" and list(now.input_requests or {}) == ["q0"]
        deep: Any = {"action": "accept"}
        for _ in range(200):
            deep = {"content": deep}
        # never asked, not an object, nested deep: ignored, the question still stands
        await send({"q1": {"action": "accept"}, "nope": deep, "q0": ["accept"]})
        now = await state()
        assert now.status == "input_required" and list(now.input_requests or {}) == ["q0"]
        # the answer's content does not fit the form: the tool's call fails as it would
        # for an ordinary elicitation answer, the tool never sees it
        await send({"q0": {"action": "accept", "content": {"n": "not a number"}}})
        with anyio.fail_after(10):
            while (now := await state()).status in ("working", "input_required"):  # noqa: ASYNC110
                await anyio.sleep(0.02)
        assert now.status == "completed" and now.result is not None
        assert now.result["isError"] is True
        assert now.result["content"][0]["text"].startswith(
            "The user's answer to tool 'pick' does not fit its form: n: "
        )
        # a task that ended takes no more answers
        await send({"q0": {"action": "accept", "content": {"n": 1}}})
        assert (await state()).status == "completed"


async def test_a_cancel_racing_the_end_of_a_task_never_turns_completed_into_cancelled() -> None:
    async with (
        served(idle=30) as (url, clients, _),
        session_as(url, clients.token_of("alice")) as alice,
    ):
        ends: dict[str, str] = {}

        async def race(offset: float) -> None:
            made = await create(alice, "slow_add", {"a": 2, "b": 3})  # ends 0.5 s after
            asked = GetTaskRequest(params=TaskParams(task_id=made.task_id))
            cancel = CancelTaskRequest(params=TaskParams(task_id=made.task_id))
            await anyio.sleep(offset)
            seen = (await alice.send_request(asked, TaskState)).status
            await alice.send_request(cancel, TaskAck)
            with anyio.fail_after(10):
                while (state := await alice.send_request(asked, TaskState)).status == "working":  # noqa: ASYNC110
                    await anyio.sleep(0.02)
            if seen == "completed":
                assert state.status == "completed"
            if state.status == "completed":
                assert state.result is not None and state.result["structuredContent"] == {
                    "result": 5
                }
            else:
                assert state.status == "cancelled" and state.result is None
            await alice.send_request(cancel, TaskAck)  # again: an ended task stays as it ended
            assert (await alice.send_request(asked, TaskState)).status == state.status
            ends[made.task_id] = state.status

        async with anyio.create_task_group() as tg:
            for i in range(24):
                tg.start_soon(race, i * 0.05)  # from at once to well after its end
        assert set(ends.values()) == {"completed", "cancelled"}  # both sides were reached
