"""Real peers for the MCP tests: kode tool modules, an official-SDK server, helpers.

Nothing here is a mock: `kode mcp serve` runs as a subprocess of ``python -m kode.cli``, the
SDK server is a script using ``MCPServer``, and the clients are the official SDK's. The
fixtures that write and start them are in ``conftest.py``.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mcp import ClientSession

KODE_TOOLS = '''
"""Tools served by `kode mcp serve` in the tests."""
import os
import sys
import time
from pathlib import Path

import anyio
from pydantic import BaseModel

from kode import ToolContext, ToolError, define_tool

MARKS = Path(os.environ["KODE_TEST_MARKS"])


class Weather(BaseModel):
    city: str
    celsius: float


@define_tool(kind="read")
def weather(city: str) -> Weather:
    """Get the weather in a city.

    Args:
        city: The city's name.
    """
    return Weather(city=city, celsius=21.5)


@define_tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@define_tool(kind="delete")
def remove(path: str) -> str:
    """Remove a file."""
    raise ToolError(f"{path} is protected; remove something else.")


@define_tool(kind="fetch")
def boom() -> str:
    """Fail unexpectedly."""
    raise ValueError("the flux capacitor is empty")


@define_tool
def chatty() -> str:
    """Print to stdout, which must not reach the protocol."""
    print("hello from a tool")
    return "said hello"


@define_tool
async def count(n: int, ctx: ToolContext) -> str:
    """Count to n, reporting progress and logging."""
    for i in range(n):
        ctx.progress(f"at {i}", fraction=i / n)
        ctx.logger.info("counted %d", i)
        await anyio.sleep(0.01)
    ctx.emit("finished", {"n": n})
    return f"counted to {n}"


@define_tool
def wait_in_thread(ctx: ToolContext) -> str:
    """Wait (in a worker thread) until cancelled."""
    (MARKS / "thread.started").touch()
    while not ctx.cancelled:
        time.sleep(0.01)
    (MARKS / "thread.cancelled").touch()
    return "stopped"


@define_tool
async def wait_async() -> str:
    """Wait (async) until cancelled."""
    (MARKS / "async.started").touch()
    try:
        await anyio.sleep(60)
    finally:
        (MARKS / "async.cancelled").touch()
    return "slept"


@define_tool(timeout=0.2)
async def too_slow() -> str:
    """Take longer than its timeout."""
    await anyio.sleep(5)
    return "never"


@define_tool
def define_more() -> str:
    """Define one more tool, while the server runs."""

    @define_tool
    def later(word: str) -> str:
        """A tool defined after the server started."""
        return word.upper()

    return "defined"
'''

SDK_SERVER = '''
"""An MCP server built with the official SDK's MCPServer, for kode to import."""
import os
import sys
from pathlib import Path

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel

MARKS = Path(os.environ["KODE_TEST_MARKS"])
server = MCPServer("sdk-test")


class Point(BaseModel):
    x: float
    y: float


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def echo(text: str) -> str:
    """Echo the text back."""
    return text


@server.tool(annotations=ToolAnnotations(read_only_hint=True, open_world_hint=True))
def lookup(query: str) -> str:
    """Look something up on the web."""
    return f"found {query}"


@server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True))
def wipe(target: str) -> str:
    """Wipe a target."""
    return f"wiped {target}"


@server.tool()
def midpoint(a: Point, b: Point | None = None) -> Point:
    """The point halfway between a and b (or the origin)."""
    b = b or Point(x=0, y=0)
    return Point(x=(a.x + b.x) / 2, y=(a.y + b.y) / 2)


@server.tool()
def fail(reason: str) -> str:
    """Fail on purpose."""
    raise ToolError(f"failed because {reason}")


@server.tool()
async def count(n: int, ctx: Context) -> str:
    """Count to n with progress."""
    for i in range(n):
        await ctx.report_progress(i + 1, n, f"counted {i + 1}")
    return f"counted to {n}"


@server.tool()
async def linger(seconds: float) -> str:
    """Sleep, noting when a cancellation arrives."""
    (MARKS / "linger.started").touch()
    try:
        await anyio.sleep(seconds)
    except BaseException:
        (MARKS / "linger.cancelled").touch()
        raise
    return "done"


@server.tool()
def pid() -> int:
    """The server's process id."""
    return os.getpid()


@server.tool()
def crash() -> str:
    """End the server process in the middle of the call."""
    print("the server is going down", file=sys.stderr, flush=True)
    os._exit(3)


@server.tool(name="files.read-all/v2")
def odd_name(path: str = ".") -> str:
    """A tool whose name no provider accepts as is."""
    return f"read {path}"


if __name__ == "__main__":
    if "--fail-at-start" in sys.argv:
        print("missing configuration: set SDK_TEST_TOKEN", file=sys.stderr)
        sys.exit(2)
    server.run()
'''


def write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


def serve_command(module: Path, *extra: str) -> list[str]:
    """``python -m kode.cli mcp serve <module> ...`` as an argument list."""
    return [sys.executable, "-m", "kode.cli", "mcp", "serve", str(module), *extra]


@contextlib.asynccontextmanager
async def served_over_stdio(
    module: Path, *extra: str, cwd: Path | None = None
) -> AsyncIterator[ClientSession]:
    """`kode mcp serve MODULE EXTRA...` over stdio, and the official client's session with it,
    initialized. The server runs in `cwd` (default: the module's folder)."""
    from mcp import ClientSession, StdioServerParameters, stdio_client

    command = serve_command(module, *extra)
    params = StdioServerParameters(
        command=command[0],
        args=command[1:],
        cwd=str(cwd or module.parent),
        env=subprocess_env(),
    )
    async with stdio_client(params) as (read, write_), ClientSession(read, write_) as session:
        await session.initialize()
        yield session


def subprocess_env() -> dict[str, str]:
    """The environment for servers the SDK's stdio client starts (it passes on only a few)."""
    keep = ("KODE_TEST_MARKS", "PYTHONPATH", "VIRTUAL_ENV", "TZ")
    return {k: os.environ[k] for k in keep if k in os.environ}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def wait_until(check: object, timeout: float = 10.0) -> bool:
    """Poll `check()` until it is true or `timeout` seconds passed."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return True
        time.sleep(0.02)
    return False


class HttpServer:
    """`kode mcp serve --http PORT` for `module`: a subprocess to stop and start again."""

    def __init__(
        self,
        module: Path,
        port: int,
        *extra: str,
        address: str = "127.0.0.1",
        command: list[str] | None = None,
    ) -> None:
        self.module = module
        self.command = command  # another server's command line (it listens on `port`)
        self.port = port
        self.extra = extra
        self.address = address  # where it can be reached
        self.url = f"http://{address}:{port}/mcp"
        self.log = module.parent / f"http-server-{port}.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> str:
        with self.log.open("a") as log:
            proc = subprocess.Popen(
                self.command or serve_command(self.module, "--http", str(self.port), *self.extra),
                cwd=self.module.parent,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        self.proc = proc

        def listening() -> bool:
            try:
                socket.create_connection((self.address, self.port), timeout=0.2).close()
            except OSError:
                return proc.poll() is not None  # stop waiting if it died
            return True

        assert wait_until(listening, 30), "the HTTP server did not start"
        assert proc.poll() is None, self.log.read_text()
        return self.url

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:  # pragma: no cover
            proc.kill()
            proc.wait()


ASKING_TOOLS = '''
"""Tools that ask their caller (ctx.elicit, ctx.sample), for the MCP tests."""
import os
import random
from pathlib import Path

import anyio
from pydantic import BaseModel

from kode import ToolContext, define_tool

RUNS = Path(os.environ["KODE_TEST_MARKS"])


class Trip(BaseModel):
    city: str
    nights: int


@define_tool
async def plan_trip(ctx: ToolContext) -> str:
    """Plan a trip: ask the user where to, then ask a model for a tip."""
    with (RUNS / "plan_trip.runs").open("a") as runs:
        runs.write("run\\n")
    ctx.progress("asking where to", fraction=0.1)
    reply = await ctx.elicit("Where are you going, and for how long?", Trip)
    if reply.action != "accept":
        return f"No trip: the user chose {reply.action}."
    trip = reply.value
    ctx.progress("asking for a tip", fraction=0.5)
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


@define_tool
async def fickle(ctx: ToolContext) -> str:
    """Ask a question that changes from one run to the next."""
    reply = await ctx.elicit(f"Pick a number ({random.random()})", Trip)
    return reply.action


@define_tool
async def ask_then_wait(ctx: ToolContext) -> str:
    """Ask, then wait until cancelled."""
    reply = await ctx.elicit("Go?", Trip)
    (RUNS / "ask_then_wait.started").touch()
    try:
        await anyio.sleep(60)
    finally:
        (RUNS / "ask_then_wait.cancelled").touch()
    return reply.action
'''


FASTMCP_SERVER = '''
"""A FastMCP 4 server over streamable HTTP (port: the first argument), for the MCP tests."""
import json
import os
import sys
from pathlib import Path

import anyio
import mcp_types as types
from fastmcp import Context, FastMCP
from pydantic import BaseModel

MARKS = Path(os.environ["KODE_TEST_MARKS"])
TRIP_SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "nights": {"type": "integer"}},
    "required": ["city", "nights"],
}
mcp = FastMCP("fastmcp-peer")


class Trip(BaseModel):
    city: str
    nights: int


def modern(ctx: Context) -> bool:
    return ctx.session.protocol_version == "2026-07-28"


@mcp.tool
def echo(text: str) -> str:
    \"\"\"Say the text back.\"\"\"
    return text


@mcp.tool
async def count(n: int, ctx: Context) -> str:
    \"\"\"Count to n, reporting progress.\"\"\"
    await ctx.info(f"counting to {n}")
    for i in range(n):
        await ctx.report_progress(i + 1, n, f"at {i + 1}")
        await anyio.sleep(0.01)
    return f"counted to {n}"


@mcp.tool
async def plan_trip(ctx: Context) -> str | types.InputRequiredResult:
    \"\"\"Ask the user where to, then ask a model for a tip.\"\"\"
    question = "Where are you going, and for how long?"
    if not modern(ctx):  # the handshake era: requests to the client, mid-call
        reply = await ctx.elicit(question, response_type=Trip)
        if reply.action != "accept":
            return f"No trip: the user chose {reply.action}."
        trip = reply.data.model_dump()
        ask = f"One tip for {trip['nights']} nights in {trip['city']}?"
        sampled = await ctx.session.create_message(
            [types.SamplingMessage(role="user", content=types.TextContent(text=ask))],
            max_tokens=60,
            related_request_id=ctx.request_id,
        )
        tip = sampled.content.text
        return f"{trip['nights']} nights in {trip['city']}. Tip: {tip}"
    answers = ctx.input_responses or {}
    if ctx.request_state:  # the last round: the trip is in the state, the tip in the answers
        trip = json.loads(ctx.request_state)
        return f"{trip['nights']} nights in {trip['city']}. Tip: {answers['tip'].content.text}"
    trip_answer = answers.get("trip")
    if trip_answer is None:
        return types.InputRequiredResult(
            input_requests={
                "trip": types.ElicitRequest(
                    params=types.ElicitRequestFormParams(
                        message=question, requested_schema=TRIP_SCHEMA
                    )
                )
            }
        )
    if trip_answer.action != "accept":
        return f"No trip: the user chose {trip_answer.action}."
    trip = trip_answer.content
    ask = f"One tip for {trip['nights']} nights in {trip['city']}?"
    message = types.SamplingMessage(role="user", content=types.TextContent(text=ask))
    return types.InputRequiredResult(
        input_requests={
            "tip": types.CreateMessageRequest(
                params=types.CreateMessageRequestParams(messages=[message], max_tokens=60)
            )
        },
        request_state=json.dumps(trip),
    )


@mcp.tool
async def roots(ctx: Context) -> str | types.InputRequiredResult:
    \"\"\"Say which directories the client lets the server work in.\"\"\"
    if not modern(ctx):
        found = await ctx.session.list_roots()
    else:
        found = (ctx.input_responses or {}).get("roots")
        if found is None:
            return types.InputRequiredResult(input_requests={"roots": types.ListRootsRequest()})
    return " ".join(str(root.uri) for root in found.roots)


@mcp.tool
async def patient(ctx: Context) -> str | types.InputRequiredResult:
    \"\"\"Ask for time, not answers: a round that only carries its state (2026-07-28).\"\"\"
    if modern(ctx) and ctx.request_state is None:
        return types.InputRequiredResult(request_state="waited once")
    return ctx.request_state or "no wait"


@mcp.tool
async def linger(seconds: float) -> str:
    \"\"\"Sleep, noting when it starts and when it is cancelled.\"\"\"
    (MARKS / "linger.started").touch()
    try:
        await anyio.sleep(seconds)
    finally:
        (MARKS / "linger.ended").touch()
    return "lingered"


if __name__ == "__main__":
    mcp.run(transport="http", host="127.0.0.1", port=int(sys.argv[1]), show_banner=False)
'''
