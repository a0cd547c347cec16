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

    def __init__(self, module: Path, port: int, *extra: str, address: str = "127.0.0.1") -> None:
        self.module = module
        self.port = port
        self.extra = extra
        self.address = address  # where it can be reached
        self.url = f"http://{address}:{port}/mcp"
        self.log = module.parent / f"http-server-{port}.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> str:
        with self.log.open("a") as log:
            proc = subprocess.Popen(
                serve_command(self.module, "--http", str(self.port), *self.extra),
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
