"""Serving MCP over HTTP safely: accepted Host and Origin headers, bearer tokens, hang-ups.

This module owns what `kode.mcp.server.ToolServer` adds to the SDK's streamable HTTP app:

- the ``Host`` and ``Origin`` checks (the SDK's DNS rebinding protection) are on for every
  bind address, not only for ``127.0.0.1``/``localhost``/``::1``: the loopback names, the
  address bound to (unless it is a wildcard such as ``0.0.0.0``) and the hosts and origins the
  application names are accepted, nothing else (`transport_security`);
- a server reachable beyond this machine (a bind address that is not loopback) must
  authenticate its clients, or be told explicitly that something else does
  (`check_exposure`); `StaticTokenVerifier` is the SDK ``TokenVerifier`` for fixed bearer
  tokens;
- a client that disconnects while its request runs cancels the request, on the
  handshake-era protocols too (`DisconnectWatch`; the SDK does it itself for 2026-07-28);
- a connection that does not send a request's headers in time is closed
  (`header_timeout_protocol`, `HEADER_TIMEOUT`), so idle and half-open connections cannot
  pile up.

It does not run a server (see `kode.mcp.server`).
"""

from __future__ import annotations

import hmac
import ipaddress
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
from mcp.server.auth.provider import AccessToken, TokenVerifier
from mcp.server.auth.settings import AuthSettings
from mcp.server.lowlevel.server import Server
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import AnyHttpUrl
from starlette.applications import Starlette
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = [
    "DISCONNECTED_KEY",
    "HEADER_TIMEOUT",
    "MIN_TOKEN_CHARS",
    "DisconnectWatch",
    "HTTPAccess",
    "StaticTokenVerifier",
    "check_exposure",
    "disconnected",
    "header_timeout_protocol",
    "http_app",
    "is_loopback",
    "transport_security",
]

DISCONNECTED_KEY = "kode.disconnected"
"""The ASGI scope key of the event `DisconnectWatch` sets when the client hangs up."""

MIN_TOKEN_CHARS = 16
"""The shortest bearer token `StaticTokenVerifier` accepts."""

HEADER_TIMEOUT = 10.0
"""Seconds a client has to send a request's headers, counted from when it connects or from the
end of the previous response; a connection that has not sent them by then is closed."""

_LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")
_WILDCARD_BINDS = frozenset({"0.0.0.0", "::", "[::]", ""})
_HOST = re.compile(r"^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+)(?::(?:\d{1,5}|\*))?$")
_ORIGIN = re.compile(r"^https?://(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+)(?::(?:\d{1,5}|\*))?$")


def is_loopback(host: str) -> bool:
    """Whether `host` (a bind address or name) is this machine's loopback interface only."""
    name = host.strip().removeprefix("[").removesuffix("]")
    if name.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _bracketed(host: str) -> str:
    """`host` as it appears in a ``Host`` header: an IPv6 address in brackets."""
    name = host.strip()
    if ":" in name and not name.startswith("["):
        return f"[{name}]"
    return name


def _with_any_port(host: str) -> list[str]:
    """The header values `host` stands for: itself, and itself with any port when it has none."""
    if re.search(r":(?:\d+|\*)$", host) and not host.endswith("]"):
        return [host]
    return [host, f"{host}:*"]


def _check_hosts(hosts: Iterable[str]) -> list[str]:
    checked = []
    for host in hosts:
        value = host.strip()
        if ":" in value and not value.startswith("[") and value.count(":") > 1:
            value = _bracketed(value)  # a bare IPv6 address
        if not _HOST.match(value):
            raise ValueError(
                f"allowed host {host!r} is not a host name or address with an optional :port "
                "or :* (e.g. 'mcp.example.com', 'mcp.example.com:8443', '10.0.0.5:*'); give "
                "origins (with http:// or https://) as allowed origins instead"
            )
        checked.append(value)
    return checked


def _check_origins(origins: Iterable[str]) -> list[str]:
    checked = []
    for origin in origins:
        value = origin.strip().rstrip("/")
        if not _ORIGIN.match(value):
            raise ValueError(
                f"allowed origin {origin!r} is not an origin: a scheme, a host and an optional "
                ":port or :*, without a path (e.g. 'https://app.example.com', "
                "'http://localhost:*')"
            )
        checked.append(value)
    return checked


def transport_security(
    host: str,
    *,
    allowed_hosts: Sequence[str] = (),
    allowed_origins: Sequence[str] = (),
) -> TransportSecuritySettings:
    """The ``Host``/``Origin`` checks for a server bound to `host`; always enabled.

    Accepted ``Host`` values: the loopback names (``127.0.0.1``, ``localhost``, ``[::1]``), the
    bind address unless it is a wildcard (``0.0.0.0``, ``::``), and `allowed_hosts`; each with
    any port unless it names one. Accepted ``Origin`` values (a request without one, as
    non-browser clients send, passes): ``http://`` and ``https://`` with each of those hosts,
    and `allowed_origins`. ``Host: evil.example`` from a DNS rebinding page, or a page of
    another origin calling in, gets HTTP 421 or 403.

    Raises:
        ValueError: an allowed host or origin that is not one.
    """
    extra_hosts = _check_hosts(allowed_hosts)
    origins = _check_origins(allowed_origins)
    names = list(_LOOPBACK_HOSTS)
    bind = host.strip()
    if bind not in _WILDCARD_BINDS:
        names.append(_bracketed(bind))
    hosts: list[str] = []
    for name in [*names, *extra_hosts]:
        for value in _with_any_port(name):
            if value not in hosts:
                hosts.append(value)
    bare = [h for h in hosts if not re.search(r":(?:\d+|\*)$", h) or h.endswith("]")]
    for name in bare:
        for scheme in ("http", "https"):
            for value in (f"{scheme}://{name}", f"{scheme}://{name}:*"):
                if value not in origins:
                    origins.append(value)
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
    )


def check_exposure(host: str, *, authenticated: bool, allow_unauthenticated: bool) -> None:
    """Refuse to serve tools beyond this machine to anyone who asks.

    Raises:
        ValueError: `host` is not a loopback address, the server has no authentication, and
            `allow_unauthenticated` is not set.
    """
    if authenticated or allow_unauthenticated or is_loopback(host):
        return
    raise ValueError(
        f"serving MCP over HTTP on {host!r} reaches beyond this machine, and without "
        "authentication anyone who can reach the port can run the tools; require a bearer "
        "token (token_verifier=StaticTokenVerifier(...), or --token-env/--token-file on the "
        "command line), bind to 127.0.0.1, or pass allow_unauthenticated=True "
        "(--allow-unauthenticated) when something in front of the server authenticates"
    )


class StaticTokenVerifier:
    """The SDK's ``TokenVerifier`` for fixed bearer tokens (``Authorization: Bearer <token>``).

    Each request's token is compared with every accepted one in constant time. For tokens an
    OAuth authorization server issues, give `ToolServer` your own ``TokenVerifier`` (and the
    SDK's ``AuthSettings``) instead.

    Args:
        tokens: The accepted token, or several (to rotate one without downtime); each at
            least `MIN_TOKEN_CHARS` characters.
        client_id: The client id the SDK records for a request with a valid token.
        scopes: The scopes a valid token carries (checked against ``AuthSettings``'
            ``required_scopes``).

    Example:
        ```python
        import secrets

        from kode.mcp import StaticTokenVerifier

        token = secrets.token_urlsafe(32)  # give it to the client, keep it out of the code
        verifier = StaticTokenVerifier(token)
        ```
    """

    def __init__(
        self,
        tokens: str | Sequence[str],
        *,
        client_id: str = "kode-client",
        scopes: Sequence[str] = (),
    ) -> None:
        accepted = [tokens] if isinstance(tokens, str) else list(tokens)
        if not accepted:
            raise ValueError("StaticTokenVerifier needs at least one token")
        for token in accepted:
            if not isinstance(token, str) or len(token.strip()) < MIN_TOKEN_CHARS:
                raise ValueError(
                    f"a bearer token must be a string of at least {MIN_TOKEN_CHARS} characters "
                    "(make one with secrets.token_urlsafe(32))"
                )
            if token != token.strip() or any(c.isspace() for c in token):
                raise ValueError("a bearer token cannot contain spaces or line breaks")
        self._tokens = [t.encode() for t in accepted]
        self.client_id = client_id
        """The client id of a request with a valid token."""
        self.scopes = list(scopes)
        """The scopes of a valid token."""

    async def verify_token(self, token: str) -> AccessToken | None:
        """An ``AccessToken`` when `token` is one of the accepted tokens, else `None`."""
        given = token.strip().encode()
        # Compare with every token, whatever matches, so timing says nothing about which.
        found = False
        for accepted in self._tokens:
            found |= hmac.compare_digest(given, accepted)
        if not found:
            return None
        return AccessToken(token=token, client_id=self.client_id, scopes=list(self.scopes))


class DisconnectWatch:
    """ASGI middleware: an `anyio.Event` in each HTTP request's scope, set on hang-up.

    It watches the ``http.disconnect`` message as the application receives it (the SDK's
    event-stream response listens for it while a request runs), under `DISCONNECTED_KEY`.
    """

    def __init__(self, app: ASGIApp) -> None:
        """Wrap `app`."""
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one request, noting when its client disconnects."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        gone = anyio.Event()
        scope[DISCONNECTED_KEY] = gone

        async def watched() -> Message:
            message = await receive()
            if message["type"] == "http.disconnect":
                gone.set()
            return message

        await self.app(scope, watched, send)


def disconnected(request: Any) -> anyio.Event | None:
    """The hang-up event of the HTTP request a handler serves, or `None` (stdio, no watch)."""
    scope = getattr(request, "scope", None)
    if not isinstance(scope, dict):
        return None
    event = scope.get(DISCONNECTED_KEY)
    return event if isinstance(event, anyio.Event) else None


@dataclass(kw_only=True, frozen=True, slots=True)
class HTTPAccess:
    """Who may call an MCP server over HTTP: accepted hosts and origins, and authentication.

    Example:
        ```python
        from kode.mcp import HTTPAccess, StaticTokenVerifier

        access = HTTPAccess(
            allowed_hosts=["mcp.example.com"],  # the name clients use, through a proxy
            token_verifier=StaticTokenVerifier("a-long-random-token-from-a-secret-store"),
        )
        ```
    """

    allowed_hosts: Sequence[str] = ()
    """``Host`` header values accepted besides the loopback names and the bind address
    (``"mcp.example.com"``, ``"mcp.example.com:8443"``, ``"10.0.0.5:*"``); a bare host
    accepts any port."""
    allowed_origins: Sequence[str] = ()
    """``Origin`` values accepted besides ``http(s)://`` and each accepted host
    (``"https://app.example.com"``, ``"http://localhost:*"``). A request without ``Origin``
    (not from a browser) passes."""
    token_verifier: TokenVerifier | None = None
    """Checks each request's bearer token (the SDK's ``TokenVerifier``, e.g.
    `StaticTokenVerifier`); a request without a valid one gets HTTP 401."""
    auth: AuthSettings | None = None
    """The SDK's ``AuthSettings`` for `token_verifier` (required scopes, the resource
    server's URL for OAuth metadata); by default no scope is required."""
    allow_unauthenticated: bool = False
    """Serve on a non-loopback address without `token_verifier`, when something in front of
    the server (a proxy, a private network's gateway) authenticates the clients."""


def http_app(server: Server[Any], *, host: str, path: str, access: HTTPAccess) -> Starlette:
    """The SDK's streamable HTTP app for `server` bound to `host`, with `access` enforced.

    Raises:
        ValueError: a non-loopback `host` without authentication, unless allowed; `auth`
            without `token_verifier`; an allowed host or origin that is not one.
    """
    if access.auth is not None and access.token_verifier is None:
        raise ValueError("HTTPAccess.auth needs a token_verifier to check the tokens")
    check_exposure(
        host,
        authenticated=access.token_verifier is not None,
        allow_unauthenticated=access.allow_unauthenticated,
    )
    auth = access.auth
    if access.token_verifier is not None and auth is None:
        # The SDK's settings need an issuer; it is only served by an authorization server's
        # own routes, which are not mounted here.
        auth = AuthSettings(issuer_url=AnyHttpUrl("http://localhost"), resource_server_url=None)
    app = server.streamable_http_app(
        streamable_http_path=path,
        host=host,
        transport_security=transport_security(
            host, allowed_hosts=access.allowed_hosts, allowed_origins=access.allowed_origins
        ),
        auth=auth,
        token_verifier=access.token_verifier,
    )
    app.add_middleware(DisconnectWatch)
    return app


def header_timeout_protocol(seconds: float = HEADER_TIMEOUT) -> type[Any]:
    """The HTTP/1.1 protocol of uvicorn (h11), closing a connection whose headers take too long.

    uvicorn times out only the wait between two requests on a kept-alive connection: a
    connection that sends nothing, or headers a byte at a time, would be held for ever, and
    enough of them exhaust the server's descriptors. This one gives each request `seconds` to
    send its headers, from the connection's start or the previous response's end; then the
    connection is closed without an answer. A request's body and a response's stream (a
    long-lived SSE stream) are not timed.

    Args:
        seconds: The time allowed; more than 0.

    Raises:
        ValueError: `seconds` is not a positive number.
    """
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not seconds > 0:
        raise ValueError(f"header timeout must be a number of seconds above 0, not {seconds!r}")
    import asyncio

    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class HeaderTimeoutProtocol(H11Protocol):
        _header_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._start_header_timer()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self.conn.their_state is not h11.IDLE:  # the request's headers are in
                self._stop_header_timer()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing() and self.conn.their_state is h11.IDLE:
                self._start_header_timer()  # the next request's headers, on a kept connection

        def connection_lost(self, exc: Exception | None) -> None:
            self._stop_header_timer()
            super().connection_lost(exc)

        def _start_header_timer(self) -> None:
            self._stop_header_timer()
            self._header_timer = self.loop.call_later(seconds, self._headers_timed_out)

        def _stop_header_timer(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _headers_timed_out(self) -> None:
            self._header_timer = None
            if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
                self.transport.close()

    return HeaderTimeoutProtocol
