"""`kode mcp serve --http` as a real subprocess: Host/Origin checks for every bind address,
bearer tokens, refusing an open non-loopback bind, and cancelling a call whose client hangs up."""

from __future__ import annotations

import json
import re
import secrets
import socket
import subprocess
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import httpx
import httpx2
import mcp.types as types
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_peers import HttpServer, free_port, serve_command, wait_until

from kode import define_tool
from kode.cli import main
from kode.mcp import HTTPAccess, StaticTokenVerifier, ToolServer
from kode.mcp.http import transport_security
from kode.registries import ToolRegistry

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    # The servers are subprocesses on asyncio whatever the test runs on; the SDK's HTTP
    # client is tested on asyncio (see test_mcp_server.py), and so is everything here.
    return "asyncio"


PROTOCOL = "2025-06-18"
TOKEN = secrets.token_urlsafe(24)
HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": PROTOCOL,
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    },
}


def loopback_alias_works() -> bool:
    try:
        with socket.socket() as s:
            s.bind(("127.0.0.2", 0))
    except OSError:
        return False
    return True


@pytest.fixture
def start(kode_tools: Path) -> Iterator[Any]:
    """Start `kode mcp serve --http` with options; every server is stopped at the end."""
    servers: list[HttpServer] = []

    def started(*extra: str, address: str = "127.0.0.1") -> HttpServer:
        server = HttpServer(kode_tools, free_port(), *extra, address=address)
        servers.append(server)
        server.start()
        return server

    yield started
    for server in servers:
        server.stop()


def post(
    server: HttpServer, body: dict[str, Any], **headers: str
) -> tuple[int, httpx.Headers, str]:
    """One POST to the server's endpoint, with the usual headers unless overridden."""
    with httpx.Client(timeout=10) as client:
        response = client.post(server.url, content=json.dumps(body), headers=HEADERS | headers)
        return response.status_code, response.headers, response.text


async def apost(
    server: HttpServer, body: dict[str, Any], **headers: str
) -> tuple[int, httpx.Headers, str]:
    return await anyio.to_thread.run_sync(lambda: post(server, body, **headers))


# --- Host and Origin ---------------------------------------------------------------------------


@pytest.mark.parametrize("bind", ["0.0.0.0", "127.0.0.2"])
async def test_forged_host_and_origin_are_refused_on_any_bind(
    start: Any, monkeypatch: pytest.MonkeyPatch, bind: str
) -> None:
    if bind == "127.0.0.2" and not loopback_alias_works():
        pytest.skip("127.0.0.2 cannot be bound here")
    monkeypatch.setenv("KODE_TEST_TOKEN", TOKEN)
    extra = ["--token-env", "KODE_TEST_TOKEN"] if bind == "0.0.0.0" else []
    server = start("--host", bind, *extra, address="127.0.0.1" if bind == "0.0.0.0" else bind)
    auth = {"Authorization": f"Bearer {TOKEN}"} if extra else {}
    port = server.port
    # A DNS rebinding page makes the browser send its own name as Host.
    status, _, text = await apost(server, INITIALIZE, Host=f"evil.example:{port}", **auth)
    assert (status, text) == (421, "Invalid Host header")
    # A page of another origin calling in.
    status, _, text = await apost(server, INITIALIZE, Origin="http://evil.example", **auth)
    assert (status, text) == (403, "Invalid Origin header")
    status, _, _ = await apost(
        server, INITIALIZE, Origin=f"http://127.0.0.1.evil.example:{port}", **auth
    )
    assert status == 403
    # The address it is reached at, and local pages, are fine.
    status, headers, text = await apost(server, INITIALIZE, **auth)
    assert status == 200, text
    assert headers.get("mcp-session-id")
    status, _, _ = await apost(
        server, INITIALIZE, Host=f"localhost:{port}", Origin="http://localhost:6274", **auth
    )
    assert status == 200


async def test_allowed_hosts_and_origins_are_added(start: Any) -> None:
    # Explicitly open on every interface: nothing in front of it authenticates in this test.
    server = start(
        "--host",
        "0.0.0.0",
        "--allow-unauthenticated",
        "--allowed-host",
        "mcp.example.test",
        "--allowed-origin",
        "https://app.example.test",
    )
    status, _, text = await apost(server, INITIALIZE)
    assert status == 200, text
    status, _, text = await apost(
        server,
        INITIALIZE,
        Host="mcp.example.test",
        Origin="https://app.example.test",
    )
    assert status == 200, text
    status, _, _ = await apost(server, INITIALIZE, Host="other.example.test")
    assert status == 421
    status, _, _ = await apost(server, INITIALIZE, Origin="https://other.example.test")
    assert status == 403


# --- bearer tokens -----------------------------------------------------------------------------


@asynccontextmanager
async def session_with(url: str, headers: dict[str, str]) -> AsyncIterator[ClientSession]:
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300)) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


async def test_the_official_client_needs_the_token(
    start: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("KODE_TEST_TOKEN", TOKEN)
    current, following = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
    tokens = tmp_path / "tokens"
    tokens.write_text(f"# current and next\n{current}\n\n{following}\n")
    server = start(
        "--host", "0.0.0.0", "--token-env", "KODE_TEST_TOKEN", "--token-file", str(tokens)
    )
    async with session_with(server.url, {"Authorization": f"Bearer {TOKEN}"}) as session:
        result = await session.call_tool("add", {"a": 2, "b": 3})
        assert [c.text for c in result.content if isinstance(c, types.TextContent)] == ["5"]
    for headers in ({}, {"Authorization": "Bearer not-the-token-at-all-no"}):
        # The SDK's client reports the HTTP 401 as an error response, in a task group.
        with pytest.raises(BaseException) as caught:
            with anyio.fail_after(30):
                async with session_with(server.url, headers):
                    pass
        assert caught.group_contains(MCPError, match="Server returned an error response", depth=2)
    # Raw requests: without a token, 401 naming the bearer scheme; the file's tokens work.
    status, answered, text = await apost(server, INITIALIZE)
    assert status == 401
    assert answered["www-authenticate"].startswith("Bearer ")
    assert "Authentication required" in text
    for token in (current, following):
        status, _, text = await apost(server, INITIALIZE, Authorization=f"Bearer {token}")
        assert status == 200, text
    status, _, _ = await apost(server, INITIALIZE, Authorization=f"Bearer {current}x")
    assert status == 401


# --- connections that never send their headers --------------------------------------------------


def closed_by_server(sock: socket.socket) -> bool:
    """Whether the server closed `sock` (end of file, or a reset), without blocking."""
    try:
        return sock.recv(4096, socket.MSG_DONTWAIT) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


async def test_connections_that_do_not_send_their_headers_are_closed(start: Any) -> None:
    """Silent and half-sent connections are closed after --header-timeout; requests still work."""
    server = start("--header-timeout", "1")
    held: list[socket.socket] = []
    try:
        for index in range(120):
            sock = socket.create_connection(("127.0.0.1", server.port), timeout=5)
            if index % 3 == 1:  # a request line and part of the headers, never finished
                sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: app")
            elif index % 3 == 2:  # a complete request, then a kept connection that half-asks
                sock.sendall(b"GET /nothing HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                assert sock.recv(4096).startswith(b"HTTP/1.1 ")
                sock.sendall(b"GET /nothing HTTP/1.1\r\nHo")
            held.append(sock)
        status, _, text = await apost(server, INITIALIZE)  # served meanwhile
        assert status == 200, text
        deadline = anyio.current_time() + 10
        while not all(closed_by_server(s) for s in held):
            assert anyio.current_time() < deadline, "held connections were not closed"
            await anyio.sleep(0.1)
    finally:
        for sock in held:
            sock.close()


def test_a_bad_header_timeout_is_a_clear_error(
    kode_tools: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["mcp", "serve", str(kode_tools), "--http", str(free_port()), "--header-timeout", "0"]
    assert main(argv) == 2
    assert "--header-timeout 0.0: give a number of seconds above 0" in capsys.readouterr().err
    assert main(["mcp", "serve", str(kode_tools), "--header-timeout", "5"]) == 2
    assert "--header-timeout only apply with --http PORT" in capsys.readouterr().err


# --- refusing an open server beyond this machine -----------------------------------------------


def test_a_non_loopback_bind_without_authentication_is_refused(
    kode_tools: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    port = str(free_port())
    assert main(["mcp", "serve", str(kode_tools), "--http", port, "--host", "0.0.0.0"]) == 2
    err = capsys.readouterr().err
    assert "kode mcp serve: --host 0.0.0.0 listens beyond this machine" in err
    assert "--token-env NAME or --token-file PATH, or pass --allow-unauthenticated" in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--token-env", "KODE_TEST_NO_SUCH_VARIABLE"], "the environment variable is not set"),
        (["--allowed-host", "http://x.example"], "is not a host name or address"),
        (["--allowed-origin", "app.example"], "is not an origin"),
    ],
)
def test_bad_access_options_are_clear_errors(
    kode_tools: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    assert main(["mcp", "serve", str(kode_tools), "--http", str(free_port()), *argv]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "   # the token of the staging proxy, rotated monthly\n",
            "line 1 is a '#' comment after spaces: start a comment at the beginning of its line",
        ),
        (
            f"# fine\n{TOKEN}\n\t# rotated monthly, the next one below\n",
            "line 3 is a '#' comment after spaces",
        ),
        (f"{TOKEN} # the current one\n", "line 1 has spaces inside: write one token per line"),
        ("# only a comment\n\n", "the file holds no token (one per line)"),
    ],
    ids=["indented-comment", "tab-comment-after-a-token", "trailing-comment", "no-token"],
)
def test_a_token_file_takes_tokens_only(
    kode_tools: Path,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    text: str,
    message: str,
) -> None:
    """A comment line is never a token, indented or not, however long it is."""
    tokens = tmp_path / "tokens"
    tokens.write_text(text)
    argv = ["--token-file", str(tokens)]
    assert main(["mcp", "serve", str(kode_tools), "--http", str(free_port()), *argv]) == 2
    assert f"--token-file {tokens}: {message}" in capsys.readouterr().err


def test_http_options_need_http(kode_tools: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["mcp", "serve", str(kode_tools), "--allow-unauthenticated"]) == 2
    assert "--allow-unauthenticated only apply with --http PORT" in capsys.readouterr().err


def test_tool_server_refuses_an_open_non_loopback_app() -> None:
    reg = ToolRegistry("http")

    @define_tool(registry=reg)
    def ping() -> str:
        """Answer pong."""
        return "pong"

    server = ToolServer(registry=reg)
    with pytest.raises(ValueError, match="reaches beyond this machine"):
        server.streamable_http_app(host="0.0.0.0")
    server.streamable_http_app(host="0.0.0.0", access=HTTPAccess(allow_unauthenticated=True))
    server.streamable_http_app(
        host="10.1.2.3", access=HTTPAccess(token_verifier=StaticTokenVerifier(TOKEN))
    )
    server.streamable_http_app(host="127.0.0.5")  # loopback: no token needed
    with pytest.raises(ValueError, match="needs a token_verifier"):
        from mcp.server.auth.settings import AuthSettings
        from pydantic import AnyHttpUrl

        server.streamable_http_app(
            access=HTTPAccess(
                auth=AuthSettings(
                    issuer_url=AnyHttpUrl("https://id.example"), resource_server_url=None
                )
            )
        )


def test_which_hosts_and_origins_are_accepted() -> None:
    wildcard = transport_security("0.0.0.0")
    assert wildcard.enable_dns_rebinding_protection
    assert "0.0.0.0:*" not in wildcard.allowed_hosts
    assert {"127.0.0.1:*", "localhost:*", "[::1]:*"} <= set(wildcard.allowed_hosts)
    named = transport_security(
        "10.0.0.5", allowed_hosts=["mcp.example.com", "::1", "api.example.com:8443"]
    )
    assert {"10.0.0.5", "10.0.0.5:*", "mcp.example.com:*", "api.example.com:8443"} <= set(
        named.allowed_hosts
    )
    assert "https://mcp.example.com" in named.allowed_origins
    assert "http://10.0.0.5:*" in named.allowed_origins
    ipv6 = transport_security("fd00::5")
    assert "[fd00::5]:*" in ipv6.allowed_hosts


@pytest.mark.parametrize("tokens", ["short", "", [], ["x" * 20, "with space inside it"]])
def test_static_tokens_are_checked(tokens: Any) -> None:
    with pytest.raises(ValueError, match="token"):
        StaticTokenVerifier(tokens)


async def test_static_token_verifier() -> None:
    verifier = StaticTokenVerifier([TOKEN, "b" * 32], client_id="me", scopes=["tools"])
    found = await verifier.verify_token("b" * 32)
    assert found is not None and found.client_id == "me" and found.scopes == ["tools"]
    assert await verifier.verify_token("b" * 31) is None
    assert await verifier.verify_token("") is None


# --- a client that hangs up --------------------------------------------------------------------


def handshake(server: HttpServer) -> str:
    status, headers, text = post(server, INITIALIZE)
    assert status == 200, text
    session = headers["mcp-session-id"]
    status, _, text = post(
        server,
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        **{"mcp-session-id": session, "mcp-protocol-version": PROTOCOL},
    )
    assert status == 202, text
    return session


def call_and_hang_up(server: HttpServer, session: str, tool: str, started: Path) -> None:
    """Call `tool` on a raw connection; close it once the tool has started."""
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {"name": tool, "arguments": {}},
        }
    ).encode()
    request = (
        f"POST /mcp HTTP/1.1\r\nHost: {server.address}:{server.port}\r\n"
        "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
        f"mcp-session-id: {session}\r\nmcp-protocol-version: {PROTOCOL}\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body
    with socket.create_connection((server.address, server.port), timeout=10) as sock:
        sock.sendall(request)
        head = b""
        while b"\r\n\r\n" not in head:
            head += sock.recv(4096)
        assert head.startswith(b"HTTP/1.1 200"), head
        assert wait_until(started.exists), f"{tool} did not start"
    # The connection is closed here, mid-call, without a notifications/cancelled.


async def test_a_client_that_hangs_up_cancels_its_call(start: Any, marks: Path) -> None:
    server = start()
    for tool, mark in (("wait_async", "async"), ("wait_in_thread", "thread")):
        session = await anyio.to_thread.run_sync(handshake, server)
        await anyio.to_thread.run_sync(
            call_and_hang_up, server, session, tool, marks / f"{mark}.started"
        )
        cancelled = marks / f"{mark}.cancelled"
        assert await anyio.to_thread.run_sync(wait_until, cancelled.exists), f"{tool} ran on"
    # The server is still fine for the next client.
    status, _, text = await apost(server, INITIALIZE)
    assert status == 200, text


def test_port_0_announces_the_port_it_got(kode_tools: Path) -> None:
    proc = subprocess.Popen(
        serve_command(kode_tools, "--http", "0"),
        cwd=kode_tools.parent,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        found = re.search(r" tools at http://127\.0\.0\.1:(\d+)/mcp \(no authentication\)$", line)
        assert found is not None, line
        port = int(found.group(1))
        assert port != 0
        socket.create_connection(("127.0.0.1", port), timeout=5).close()  # listening there
    finally:
        proc.terminate()
        proc.wait(10)
        if proc.stderr is not None:
            proc.stderr.close()


def test_a_port_in_use_is_a_clear_error(kode_tools: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            serve_command(kode_tools, "--http", str(port)),
            cwd=kode_tools.parent,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert done.returncode == 2
    assert f"kode mcp serve: cannot listen on 127.0.0.1:{port}: " in done.stderr
    assert "Traceback" not in done.stderr
