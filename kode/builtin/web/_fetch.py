"""Fetching one URL for ``web_fetch``: checked hops, pinned connections, bounded reading.

This module owns the HTTP side of ``web_fetch``. Every hop (the URL and each redirect) is
checked by `kode.builtin._shared._ssrf.check_target`, and the request then goes to one of the very
addresses that were checked: the URL's host is replaced by the address, the ``Host`` header
keeps the name, and for https the TLS server name (SNI) and certificate check use the name
through httpx's ``sni_hostname`` request extension. So a DNS answer that changes between the check
and the connection (DNS rebinding) cannot move the request elsewhere. Redirects are followed here,
never by httpx; the body is streamed raw and decoded by `kode.builtin.web._content_encoding`, and
reading stops at the size limit (on the wire and after every layer of decoding); the whole fetch
runs under one time limit. It does not cache or cut the text to the character
limit (``kode.builtin.web`` does).

Needs httpx, BeautifulSoup and markdownify (``kode-sdk[web]``).
"""

from __future__ import annotations

import dataclasses
import functools
import ssl
from dataclasses import dataclass

import anyio
import httpx

from kode.builtin._shared._ssrf import URLTarget, check_target
from kode.builtin._shared._web_config import WebConfig
from kode.builtin.web._content_encoding import (
    ACCEPT_ENCODING,
    BodyDecoder,
    EncodingError,
    content_encodings,
)
from kode.builtin.web._html_to_text import TextFormat, convert, media_type_of
from kode.tools.errors import ToolError, ToolErrorType

__all__ = ["IMAGE_TYPES", "Page", "fetch_page", "parse_url"]

IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
"""Image types ``web_fetch`` returns as image blocks."""

_REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
_ACCEPT = (
    "text/html, application/xhtml+xml, text/markdown;q=0.9, text/plain;q=0.9, "
    "application/json;q=0.8, */*;q=0.5"
)


@dataclass(kw_only=True, frozen=True, slots=True)
class Page:
    """What one fetch found, before the character limit is applied."""

    url: str
    """The URL that was asked for."""
    final_url: str
    """The URL the content came from, after redirects."""
    status: int
    """The final HTTP status."""
    media_type: str
    """The content's media type (``text/html``), empty when the server sent none."""
    text: str | None = None
    """The content as text (markdown, plain text or raw), or `None` for an image."""
    title: str | None = None
    """The HTML page's title."""
    image: bytes | None = None
    """The image, when the content is one."""
    bytes_read: int = 0
    """How many bytes of the body were read."""
    truncated: bool = False
    """Whether the body was larger than `WebConfig.max_response_bytes` and was cut."""
    redirects: tuple[str, ...] = ()
    """Each URL redirected to, in order."""
    cacheable: bool = True
    """Whether the server allows keeping it (no ``Cache-Control: no-store``)."""


@dataclass(kw_only=True, frozen=True, slots=True)
class _Hop:
    status: int
    location: str | None
    content_type: str | None
    charset: str | None
    cache_control: str
    body: bytes
    truncated: bool


def parse_url(url: str) -> httpx.URL:
    """`url` parsed by httpx.

    Raises:
        ToolError: ``invalid_tool_params`` when it is not a URL.
    """
    try:
        return httpx.URL(url.strip())
    except (httpx.InvalidURL, TypeError, ValueError) as exc:
        raise ToolError(
            f"{url!r} is not a valid URL: {exc}.",
            type=ToolErrorType.INVALID_TOOL_PARAMS,
            details={"url": url, "reason": "invalid_url"},
        ) from None


@functools.cache
def _default_ssl_context() -> ssl.SSLContext:
    # Building a context loads the CA bundle (tens of ms): once per process, not per fetch.
    return httpx.create_ssl_context()


async def _check(url: httpx.URL, config: WebConfig, *, shown: str) -> URLTarget:
    scheme = url.scheme
    port = url.port or (443 if scheme == "https" else 80)
    return await check_target(
        shown,
        scheme=scheme,
        host=url.raw_host.decode("ascii"),
        port=port,
        allowed_domains=config.allowed_domains,
        denied_domains=config.denied_domains,
        allow_private=config.allow_private_networks,
        resolve=config.resolver,
    )


async def _read(response: httpx.Response, limit: int) -> _Hop:
    status = response.status_code
    content_type = response.headers.get("content-type")
    cache_control = response.headers.get("cache-control", "").lower()
    location = response.headers.get("location")
    if status in _REDIRECT_STATUSES and location:
        return _Hop(
            status=status,
            location=location,
            content_type=content_type,
            charset=None,
            cache_control=cache_control,
            body=b"",
            truncated=False,
        )
    encodings = content_encodings(response.headers.get_list("content-encoding"))
    # The raw bytes, decoded here with every layer bounded: httpx would decode each chunk
    # whole, and a few hundred bytes of gzip inside gzip make hundreds of megabytes.
    decoder = BodyDecoder(encodings, limit=limit)
    # Stop at the limit by cancelling the read rather than leaving the loop: the cancellation
    # unwinds httpx's nested async generators, where `break` would leave them to the garbage
    # collector (and trio warns about each).
    corrupt: EncodingError | None = None
    with anyio.CancelScope() as scope:
        async for chunk in response.aiter_raw():
            if corrupt is not None:
                continue  # until the cancellation reaches a read
            try:
                more = decoder.feed(chunk)
            except EncodingError as exc:  # raised after the scope: the stream closes first
                corrupt, more = exc, False
            if not more:
                scope.cancel()
    if corrupt is not None:
        raise corrupt
    return _Hop(
        status=status,
        location=None,
        content_type=content_type,
        charset=response.charset_encoding,
        cache_control=cache_control,
        body=bytes(decoder.body),
        truncated=decoder.truncated,
    )


async def _get(
    client: httpx.AsyncClient, url: httpx.URL, target: URLTarget, config: WebConfig
) -> _Hop:
    """GET `url` from one of `target`'s checked addresses (the next one if it refuses)."""
    extensions: dict[str, str] = {}
    if url.scheme == "https" and not target.is_ip:
        extensions["sni_hostname"] = target.host
    headers = {"Host": url.netloc.decode("ascii")}
    failure: httpx.ConnectError | None = None
    for address in target.addresses:
        pinned = url if target.is_ip else url.copy_with(host=address)
        client.cookies.clear()  # cookies would be keyed by the address, not the site
        try:
            async with client.stream(
                "GET", pinned, headers=headers, extensions=extensions
            ) as response:
                return await _read(response, config.max_response_bytes)
        except httpx.ConnectError as exc:
            failure = exc
        except EncodingError as exc:
            raise ToolError(
                f"web_fetch cannot read the response from {url}: {exc}.",
                type=ToolErrorType.TOOL_ERROR,
                details={"url": str(url), "reason": "content_encoding"},
            ) from None
    raise ToolError(
        f"web_fetch could not connect to {url.host} ({', '.join(target.addresses)}): "
        f"{_reason(failure)}.",
        type=ToolErrorType.TOOL_ERROR,
        details={"url": str(url), "reason": "connect"},
    )


def _reason(exc: BaseException | None) -> str:
    """The most telling message in an exception's chain (trio hides TLS errors deep in it)."""
    seen: list[BaseException] = []
    while exc is not None and exc not in seen and len(seen) < 10:
        seen.append(exc)
        exc = exc.__cause__ or exc.__context__
    for candidate in seen:
        if isinstance(candidate, ssl.SSLError):
            return f"TLS error: {candidate.reason or candidate}"
    return next((str(e) for e in seen if str(e)), type(seen[0]).__name__ if seen else "unknown")


def _error_excerpt(hop: _Hop, url: str) -> str:
    try:
        converted = convert(
            hop.body[:20_000],
            media_type=media_type_of(hop.content_type),
            charset=hop.charset,
            base_url=url,
            format="text",
        )
    except Exception:  # an error page we cannot read is still an error page
        return ""
    text = " ".join(converted.text.split()) if converted is not None else ""
    return f" The page says: {text[:500]}" if text else ""


async def _page(
    url: str, final: httpx.URL, hop: _Hop, redirects: list[str], fmt: TextFormat
) -> Page:
    final_url = str(final)
    if not 200 <= hop.status < 300:
        phrase = httpx.codes.get_reason_phrase(hop.status)
        raise ToolError(
            f"web_fetch got HTTP {hop.status}{f' {phrase}' if phrase else ''} from {final_url}."
            + _error_excerpt(hop, final_url),
            type=ToolErrorType.TOOL_ERROR,
            details={"url": url, "final_url": final_url, "status": hop.status},
        )
    media_type = media_type_of(hop.content_type)
    page = Page(
        url=url,
        final_url=final_url,
        status=hop.status,
        media_type=media_type,
        bytes_read=len(hop.body),
        truncated=hop.truncated,
        redirects=tuple(redirects),
        cacheable="no-store" not in hop.cache_control,
    )
    if media_type in IMAGE_TYPES and not hop.truncated:
        return dataclasses.replace(page, image=hop.body)
    # Parsing megabytes of HTML takes a while: not in the event loop.
    converted = await anyio.to_thread.run_sync(
        functools.partial(
            convert,
            hop.body,
            media_type=media_type,
            charset=hop.charset,
            base_url=final_url,
            format=fmt,
        ),
        abandon_on_cancel=True,
    )
    if converted is None:
        raise ToolError(
            f"web_fetch cannot show {media_type or 'binary'} content ({len(hop.body)} bytes "
            f"read) from {final_url}: it reads HTML, text, JSON, XML and PNG/JPEG/GIF/WebP "
            "images.",
            type=ToolErrorType.TOOL_ERROR,
            details={"url": url, "final_url": final_url, "media_type": media_type},
        )
    return dataclasses.replace(page, text=converted.text, title=converted.title)


async def _follow(client: httpx.AsyncClient, url: str, config: WebConfig, fmt: TextFormat) -> Page:
    current = parse_url(url)
    redirects: list[str] = []
    while True:
        if not redirects:
            target = await _check(current, config, shown=url)
        else:
            try:
                target = await _check(current, config, shown=redirects[-1])
            except ToolError as exc:
                came_from = redirects[-2] if len(redirects) > 1 else url
                details = exc.details if isinstance(exc.details, dict) else {}
                raise ToolError(
                    f"{exc.message} {came_from} redirected there.",
                    type=exc.type,
                    details={**details, "redirected_from": came_from},
                ) from None
        hop = await _get(client, current, target, config)
        if hop.location is None:
            return await _page(url, current, hop, redirects, fmt)
        if len(redirects) >= config.max_redirects:
            raise ToolError(
                f"web_fetch stopped after {config.max_redirects} redirects from {url} "
                f"(the next was to {hop.location}).",
                type=ToolErrorType.TOOL_ERROR,
                details={"url": url, "redirects": redirects, "reason": "too_many_redirects"},
            )
        try:
            current = current.join(hop.location)
        except (httpx.InvalidURL, ValueError) as exc:
            raise ToolError(
                f"{current} redirected to {hop.location!r}, which is not a valid URL: {exc}.",
                type=ToolErrorType.TOOL_ERROR,
                details={"url": url, "reason": "invalid_redirect"},
            ) from None
        redirects.append(str(current))


def _client(config: WebConfig) -> httpx.AsyncClient:
    verify = _default_ssl_context() if config.verify is True else config.verify
    return httpx.AsyncClient(
        follow_redirects=False,
        trust_env=False,  # a proxy would resolve names itself, past the checks
        verify=verify,
        timeout=httpx.Timeout(config.timeout),
        limits=httpx.Limits(max_keepalive_connections=0),
        headers={
            "User-Agent": config.user_agent,
            "Accept": _ACCEPT,
            "Accept-Encoding": ACCEPT_ENCODING,
        },
    )


async def fetch_page(url: str, *, config: WebConfig, format: TextFormat = "markdown") -> Page:
    """Fetch `url` under `config`'s rules and limits; return its content as text or an image.

    Raises:
        ToolError: for a refused or invalid URL or redirect, a network error, an HTTP error
            status, content that is not text or an image, or the time limit.
    """
    try:
        with anyio.fail_after(config.timeout):
            # Loading the CA bundle and making the client take a tenth of a second the first
            # time: not in the event loop.
            client = await anyio.to_thread.run_sync(_client, config)
            async with client:
                return await _follow(client, url, config, format)
    except (TimeoutError, httpx.TimeoutException):
        raise ToolError(
            f"web_fetch gave up on {url} after {config.timeout:g} s (WebConfig.timeout).",
            type=ToolErrorType.TIMEOUT,
            details={"url": url, "reason": "timeout"},
        ) from None
    except httpx.HTTPError as exc:
        raise ToolError(
            f"web_fetch could not fetch {url}: {type(exc).__name__}: {exc}",
            type=ToolErrorType.TOOL_ERROR,
            details={"url": url, "reason": "http"},
        ) from None
