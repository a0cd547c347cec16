"""The browser's checking proxy on its own, spoken to over real sockets as Chromium would
(``GET http://...`` and ``CONNECT host:port``), with a real HTTP server behind it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import pytest
from loopback_http import respond, serve, table_resolver

from kode.builtin.browser import _proxy
from kode.builtin.browser._proxy import CheckingProxy
from kode.builtin.web import WebConfig

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def running(proxy: CheckingProxy) -> AsyncIterator[int]:
    async with anyio.create_task_group() as tg:
        port = await tg.start(proxy.serve)
        yield port
        tg.cancel_scope.cancel()


async def exchange(port: int, request: bytes) -> bytes:
    async with await anyio.connect_tcp("127.0.0.1", port) as stream:
        await stream.send(request)
        answer = b""
        with anyio.fail_after(10):
            try:
                while True:
                    answer += await stream.receive()
            except (anyio.EndOfStream, anyio.BrokenResourceError):
                pass
    return answer


async def test_an_allowed_request_goes_to_the_checked_address_one_per_connection() -> None:
    config = WebConfig(
        allow_private_networks=True, resolver=table_resolver({"site.test": ["127.0.0.1"]})
    )
    with serve({"/hello": respond(200, "text/plain", b"hi there")}) as srv:
        async with running(CheckingProxy(config)) as port:
            answer = await exchange(
                port,
                f"GET http://site.test:{srv.port}/hello?x=1 HTTP/1.1\r\n"
                f"Host: site.test:{srv.port}\r\nProxy-Connection: keep-alive\r\n\r\n".encode(),
            )
    assert answer.startswith(b"HTTP/1.0 200") and answer.endswith(b"hi there")
    (seen,) = srv.seen
    assert seen.path == "/hello?x=1"  # origin-form, as a server expects it
    assert seen.headers["Host"] == f"site.test:{srv.port}"
    assert seen.headers["Connection"] == "close" and "Proxy-Connection" not in seen.headers


async def test_refused_requests_are_answered_403_and_the_latest_are_kept(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_proxy, "MAX_KEPT", 3)
    proxy = CheckingProxy(WebConfig(denied_domains=["denied.test"]))
    async with running(proxy) as port:
        plain = await exchange(port, b"GET http://169.254.169.254/x HTTP/1.1\r\n\r\n")
        tunnel = await exchange(port, b"CONNECT denied.test:443 HTTP/1.1\r\n\r\n")
        for i in range(3):
            await exchange(port, f"GET http://127.0.0.{i + 1}/ HTTP/1.1\r\n\r\n".encode())
        bad = await exchange(port, b"GET /relative HTTP/1.1\r\n\r\n")
    head, _, body = plain.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 403 Forbidden")
    message = (
        "browser refused http://169.254.169.254/x: 169.254.169.254 is a cloud metadata "
        "address. It does not fetch from private, local or cloud metadata addresses."
    )
    assert body.decode() == message
    assert f"X-Kode-Refused: {message}".encode() in head
    assert tunnel.startswith(b"HTTP/1.1 403 Forbidden")
    assert tunnel.endswith(
        b"browser refused https://denied.test: denied.test is on the denied domain list."
    )
    assert bad.startswith(b"HTTP/1.1 400 Bad Request")
    assert proxy.refused_total == 5
    assert [r.url for r in proxy.refusals] == [f"http://127.0.0.{i}/" for i in (1, 2, 3)]
