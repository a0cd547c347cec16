"""The checking proxy every request of the ``browser`` tool's Chromium goes through.

This module owns `CheckingProxy`, a small HTTP proxy on 127.0.0.1 that Chromium is launched
with (loopback included): each connection Chromium opens (a plain ``GET http://...`` or a
``CONNECT host:443`` tunnel) is checked by `kode.builtin._shared._ssrf.check_target` under the
agent's `WebConfig` before anything is sent, and then goes to one of the very addresses that
were checked. So the first navigation, every redirect (Chromium follows those itself, out of
reach of Playwright's request interception), every sub-request and every new host meet the
same rules as ``web_fetch``, and a DNS answer that changes after the check cannot move a
request elsewhere. A refused request gets a 403 answer (a ``CONNECT`` cannot be answered with
a page, so Chromium reports a tunnel failure) and is recorded in `CheckingProxy.refusals`.

Plain HTTP is relayed one request per connection (``Connection: close`` upstream), so every
request is checked; a tunnel carries whatever Chromium sends to the host it was opened for.
It does not read or change the traffic inside a tunnel.
"""

from __future__ import annotations

import ipaddress
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import anyio
import anyio.abc
from anyio.streams.buffered import BufferedByteReceiveStream

from kode.builtin._shared._ssrf import URLTarget, check_target
from kode.builtin._shared._web_config import WebConfig
from kode.tools.errors import ToolError, ToolErrorType

__all__ = ["MAX_KEPT", "REFUSED_HEADER", "CheckingProxy", "Refusal"]

REFUSED_HEADER = "X-Kode-Refused"
"""The header of the proxy's 403 answer to a refused plain-HTTP request: why it was refused."""

MAX_KEPT = 1000
"""How many of the latest refusals a proxy keeps (a long session must not grow without end)."""

_MAX_HEAD = 64 * 1024
_REFUSING = frozenset({ToolErrorType.PERMISSION_DENIED, ToolErrorType.INVALID_TOOL_PARAMS})
_HOP_HEADERS = frozenset(
    {b"connection", b"proxy-connection", b"keep-alive", b"proxy-authorization"}
)


@dataclass(kw_only=True, frozen=True, slots=True)
class Refusal:
    """A request the proxy refused."""

    url: str
    """The URL (for a tunnel: ``https://host:port``)."""
    message: str
    """Why, as the check said it."""


@dataclass(kw_only=True, frozen=True, slots=True)
class _Denied:
    message: str
    refused: bool  # by the rules (403); else the host could not be reached (502)


class _Bad(Exception):
    """A request the proxy cannot read."""


def _split_authority(authority: str, default_port: int) -> tuple[str, int]:
    """``host:port`` (or ``[v6]:port``) into the host (no brackets) and the port."""
    host, _, port = (
        authority.rpartition(":") if not authority.endswith("]") else (authority, "", "")
    )
    if not host:
        host, port = authority, ""
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    try:
        return host, int(port) if port else default_port
    except ValueError:
        raise _Bad(f"bad port in {authority!r}") from None


def _shown(scheme: str, host: str, port: int) -> str:
    try:
        literal = ipaddress.ip_address(host)
        host = f"[{host}]" if literal.version == 6 else host
    except ValueError:
        pass
    default = 443 if scheme == "https" else 80
    return f"{scheme}://{host}" + ("" if port == default else f":{port}")


async def _pipe(source: anyio.abc.ByteReceiveStream, sink: anyio.abc.ByteSendStream) -> None:
    try:
        async for chunk in source:
            await sink.send(chunk)
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        pass


class CheckingProxy:
    """An HTTP proxy that lets through only what `WebConfig` allows, to checked addresses.

    Args:
        config: The rules (domain lists, private networks, the resolver) and the time limit.
        tool: The tool named in refusal messages.
        on_refusal: Called with each `Refusal` (in the proxy's event loop).
    """

    def __init__(
        self,
        config: WebConfig,
        *,
        tool: str = "browser",
        on_refusal: Callable[[Refusal], Any] | None = None,
    ) -> None:
        self.config = config
        """The rules."""
        self.tool = tool
        """The tool named in messages."""
        self.refusals: deque[Refusal] = deque(maxlen=MAX_KEPT)
        """The latest requests refused by the rules, in order (at most `MAX_KEPT`)."""
        self.refused_total = 0
        """How many requests were refused so far."""
        self._on_refusal = on_refusal
        self.port = 0
        """The port it listens on (127.0.0.1), once serving."""

    async def serve(
        self, *, task_status: anyio.abc.TaskStatus[int] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Listen on 127.0.0.1 until cancelled; `task_status` gets the port."""
        listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
        async with listener:
            self.port = int(listener.extra(anyio.abc.SocketAttribute.local_port))
            task_status.started(self.port)
            await listener.serve(self._handle)

    async def _check(self, scheme: str, host: str, port: int, url: str) -> URLTarget | _Denied:
        try:
            return await check_target(
                url,
                scheme=scheme,
                host=host,
                port=port,
                allowed_domains=self.config.allowed_domains,
                denied_domains=self.config.denied_domains,
                allow_private=self.config.allow_private_networks,
                resolve=self.config.resolver,
                tool=self.tool,
            )
        except ToolError as exc:
            if exc.type not in _REFUSING:  # a name that does not resolve: no page either
                return _Denied(message=exc.message, refused=False)
            refusal = Refusal(url=url, message=exc.message)
            self.refusals.append(refusal)
            self.refused_total += 1
            if self._on_refusal is not None:
                self._on_refusal(refusal)
            return _Denied(message=exc.message, refused=True)

    async def _connect(self, target: URLTarget) -> anyio.abc.SocketStream | None:
        for address in target.addresses:
            try:
                with anyio.fail_after(self.config.timeout):
                    return await anyio.connect_tcp(address, target.port)
            except (OSError, TimeoutError):
                continue
        return None

    async def _handle(self, client: anyio.abc.SocketStream) -> None:
        async with client:
            reader = BufferedByteReceiveStream(client)
            try:
                with anyio.fail_after(self.config.timeout):
                    head = await reader.receive_until(b"\r\n\r\n", _MAX_HEAD)
            except (anyio.IncompleteRead, anyio.DelimiterNotFound, TimeoutError, OSError):
                return
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, anyio.EndOfStream):
                return
            try:
                await self._relay(client, reader, head)
            except _Bad as exc:
                await _answer(client, 400, "Bad Request", str(exc))

    async def _relay(
        self, client: anyio.abc.SocketStream, reader: BufferedByteReceiveStream, head: bytes
    ) -> None:
        request_line, *header_lines = head.split(b"\r\n")
        parts = request_line.split(b" ")
        if len(parts) != 3:
            raise _Bad("not an HTTP request line")
        method, target, version = parts
        text = target.decode("latin-1")
        if method == b"CONNECT":
            host, port = _split_authority(text, 443)
            scheme = "https"
        else:
            split = urlsplit(text)
            if split.scheme not in ("http", "https") or not split.hostname:
                raise _Bad(f"not an absolute http URL: {text!r}")
            scheme, host = split.scheme, split.hostname
            port = split.port or (443 if scheme == "https" else 80)
        shown = _shown(scheme, host, port) if method == b"CONNECT" else text
        checked = await self._check(scheme, host, port, shown)
        if isinstance(checked, _Denied):
            if checked.refused:
                await _answer(client, 403, "Forbidden", checked.message)
            else:
                await _answer(client, 502, "Bad Gateway", checked.message)
            return
        upstream = await self._connect(checked)
        if upstream is None:
            await _answer(client, 502, "Bad Gateway", f"{self.tool} could not connect to {shown}.")
            return
        async with upstream:
            if method == b"CONNECT":
                await client.send(b"HTTP/1.1 200 Connection established\r\n\r\n")
            else:
                path = split.path or "/"
                if split.query:
                    path += "?" + split.query
                kept = [
                    line
                    for line in header_lines
                    if line and line.split(b":", 1)[0].strip().lower() not in _HOP_HEADERS
                ]
                lines = [b" ".join((method, path.encode("latin-1"), version)), *kept]
                await upstream.send(b"\r\n".join([*lines, b"Connection: close", b"", b""]))
            await _both_ways(reader, client, upstream)


async def _both_ways(
    reader: BufferedByteReceiveStream,
    client: anyio.abc.SocketStream,
    upstream: anyio.abc.SocketStream,
) -> None:
    """Relay both ways until either side is done (Chromium never half-closes a request)."""
    async with anyio.create_task_group() as tg:

        async def one_way(
            source: anyio.abc.ByteReceiveStream, sink: anyio.abc.ByteSendStream
        ) -> None:
            await _pipe(source, sink)
            tg.cancel_scope.cancel()

        tg.start_soon(one_way, reader, upstream)
        tg.start_soon(one_way, upstream, client)


async def _answer(client: anyio.abc.SocketStream, status: int, phrase: str, message: str) -> None:
    body = message.encode()
    head = (
        f"HTTP/1.1 {status} {phrase}\r\nContent-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n"
    ).encode()
    if status == 403:
        safe = message.encode("ascii", "replace").replace(b"\r", b" ").replace(b"\n", b" ")
        head += REFUSED_HEADER.encode() + b": " + safe + b"\r\n"
    head += b"\r\n"
    try:
        await client.send(head + body)
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        pass
