"""`WebConfig`, the settings of the web tools, and `WebCache`, their short in-memory cache.

This module owns the settings an application gives ``web_fetch`` and ``web_search`` (through
``ctx.services["web"]``) and the cache each config keeps. It imports no HTTP library, so
configuring the tools never needs the optional ``kode-sdk[web]`` dependencies; the fetching itself
lives in `kode.builtin.web._fetch`.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from kode.builtin._shared._ssrf import ResolveFunc, normalize_domain
from kode.tools.errors import ToolError, ToolErrorType
from kode.tools.services import ServiceKey

if TYPE_CHECKING:
    import ssl  # loaded with httpx, by the first fetch

    from kode.tools.context import ToolContext

__all__ = [
    "DEFAULT_USER_AGENT",
    "WEB",
    "Freshness",
    "SearchProvider",
    "SearchResult",
    "WebCache",
    "WebConfig",
    "config_of",
    "default_config",
]

DEFAULT_USER_AGENT = "kode-web-fetch/0.1 (an LLM agent tool; +https://pypi.org/project/kode/)"
"""The ``User-Agent`` sent by ``web_fetch`` unless `WebConfig.user_agent` says otherwise."""

Freshness = Literal["day", "week", "month", "year"]
"""How recent results must be."""


# The search provider's protocol lives with the settings that name it (`WebConfig.search`);
# the providers themselves are in `kode.builtin.web._search_providers`.
@dataclass(kw_only=True, frozen=True, slots=True)
class SearchResult:
    """One web search hit."""

    title: str
    """The page's title."""
    url: str
    """The page's address."""
    snippet: str = ""
    """A short extract of the page, as plain text."""
    age: str | None = None
    """How old the page is, as the provider words it (``"2 days ago"``), when known."""


@runtime_checkable
class SearchProvider(Protocol):
    """A web search backend for ``web_search``.

    Implement `search` and put an instance in ``WebConfig(search=...)``. Raise `ToolError`
    with a message the model can act on (or that tells the developer how to configure it)
    when the search cannot run.
    """

    @property
    def name(self) -> str:
        """A short name shown with the results, e.g. ``"brave"``."""
        ...

    async def search(
        self, query: str, *, count: int, freshness: Freshness | None = None
    ) -> list[SearchResult]:
        """The best `count` results for `query`, best first.

        A provider that also takes the keywords ``country`` (an upper-case ISO 3166 code such
        as ``"DE"``, or ``"ALL"``) and ``search_lang`` (a lower-case language code such as
        ``"en"`` or ``"pt-br"``) gets them when the model gives them; ``web_search`` refuses
        them for a provider whose `search` does not take them.
        """
        ...


class WebCache:
    """A small time-bounded, size-bounded, least-recently-used cache, safe across threads.

    An entry lives `ttl` seconds; when the entries' sizes add up to more than `max_size`, the
    least recently used go first. An entry larger than `max_size` is not kept.
    """

    def __init__(
        self,
        *,
        ttl: float,
        max_size: int,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ttl = ttl
        """Seconds an entry stays valid (0 disables the cache)."""
        self.max_size = max_size
        """The most the entries' sizes may add up to."""
        self._clock = clock
        self._entries: OrderedDict[Hashable, tuple[float, int, Any]] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: Hashable) -> Any:
        """The value stored under `key`, or `None` when there is none or it expired."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            expires, size, value = entry
            if expires <= self._clock():
                del self._entries[key]
                self._size -= size
                return None
            self._entries.move_to_end(key)
            return value

    def put(self, key: Hashable, value: Any, *, size: int = 1) -> None:
        """Store `value` under `key`, counting `size` towards `max_size`."""
        if self.ttl <= 0 or size > self.max_size:
            return
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._size -= old[1]
            self._entries[key] = (self._clock() + self.ttl, size, value)
            self._size += size
            while self._size > self.max_size:
                _, (_, dropped, _) = self._entries.popitem(last=False)
                self._size -= dropped

    def clear(self) -> None:
        """Forget every entry."""
        with self._lock:
            self._entries.clear()
            self._size = 0


@dataclass(kw_only=True, frozen=True, slots=True)
class WebConfig:
    """How ``web_fetch`` and ``web_search`` behave for one agent.

    Put one in an agent's services with ``kode.builtin.web.WEB.set(agent.services, config)``
    (an agent shares its services with every tool call);
    without one, the tools use `WebConfig()`'s defaults: public addresses only, 2 MB, 30 s,
    50,000 characters (100,000 read by the model answering a ``prompt``), 5 redirects, a
    15-minute cache and Brave Search with ``BRAVE_API_KEY``.

    Each config has its own cache (`dataclasses.replace` gives the copy a fresh one), so a page
    fetched under lax rules is never served under strict ones.

    Example:
        ```python
        from kode.builtin.web import WebConfig

        services = {
            "web": WebConfig(
                allow_private_networks=True,  # an intranet wiki
                allowed_domains=["wiki.corp.example", "docs.python.org"],
                max_chars=20_000,
            )
        }
        ```
    """

    allow_private_networks: bool = False
    """Allow local names (``localhost``, ``*.internal``, ...) and non-public addresses
    (loopback, private, CGNAT, unique-local IPv6): for tests and intranet use. Cloud metadata
    hosts and addresses, link-local addresses (``169.254.0.0/16``, ``fe80::/10``), unspecified
    and multicast addresses, and IPv6 addresses standing for an IPv4 one (IPv4-mapped,
    -translated or -compatible) stay refused."""
    allowed_domains: Sequence[str] = ()
    """When not empty, only these domains and their subdomains may be fetched (every
    redirect hop included). ``"example.com"`` and ``"*.example.com"`` both cover
    ``docs.example.com``."""
    denied_domains: Sequence[str] = ()
    """These domains and their subdomains are never fetched; wins over `allowed_domains`."""
    max_response_bytes: int = 2 * 1024 * 1024
    """The most of a response body that is read: neither the bytes received nor the bytes
    decoded from them (at every layer of ``Content-Encoding``, gzip or deflate) go past it,
    while streaming. The rest is dropped and the result says so."""
    max_chars: int = 50_000
    """The most characters one ``web_fetch`` result shows (the model may ask for fewer, and
    read on with ``start``)."""
    max_prompt_chars: int = 100_000
    """The most characters of a page a model reads to answer ``web_fetch``'s ``prompt`` (from
    ``start``); the answer says when the page went on, and ``start`` asks about the rest."""
    prompt_max_tokens: int = 2048
    """The most tokens the model's answer to ``web_fetch``'s ``prompt`` may have."""
    timeout: float = 30.0
    """Seconds one ``web_fetch`` may take: name resolution, redirects, reading and turning
    HTML into text included."""
    max_redirects: int = 5
    """How many redirects ``web_fetch`` follows (each hop checked like the first URL)."""
    cache_ttl: float = 900.0
    """Seconds a fetched page or search stays cached (0: no cache)."""
    cache_max_chars: int = 8_000_000
    """The most characters of text the cache keeps; the least recently used goes first."""
    resolver: ResolveFunc | None = None
    """Resolves a host name to addresses (default: the system resolver); tests and custom
    DNS set it. Every address it returns is checked, and the connection goes to one of them."""
    verify: ssl.SSLContext | bool = True
    """How ``web_fetch`` verifies TLS certificates: `True` (the system's CA bundle through
    httpx), an `ssl.SSLContext` (e.g. trusting a private CA), or `False` (never in production)."""
    user_agent: str = DEFAULT_USER_AGENT
    """The ``User-Agent`` header of ``web_fetch``."""
    search: SearchProvider | None = None
    """The ``web_search`` provider (default: `BraveSearch` with ``BRAVE_API_KEY``)."""
    cache: WebCache = field(init=False, repr=False, compare=False)
    """This config's cache of pages and searches (made from `cache_ttl`/`cache_max_chars`)."""

    def __post_init__(self) -> None:
        problems = []
        for name in (
            "max_response_bytes",
            "max_chars",
            "max_prompt_chars",
            "prompt_max_tokens",
            "timeout",
            "cache_max_chars",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                problems.append(f"{name} must be a positive number, got {value!r}")
        if not isinstance(self.max_redirects, int) or self.max_redirects < 0:
            problems.append(f"max_redirects must be 0 or more, got {self.max_redirects!r}")
        for name in ("allowed_domains", "denied_domains"):
            if isinstance(getattr(self, name), str):
                problems.append(f"{name} must be a list of domains, not a string")
        if problems:
            raise ValueError("WebConfig: " + "; ".join(problems))
        for name in ("allowed_domains", "denied_domains"):
            domains = tuple(d for d in map(normalize_domain, getattr(self, name)) if d)
            object.__setattr__(self, name, domains)
        object.__setattr__(
            self, "cache", WebCache(ttl=self.cache_ttl, max_size=self.cache_max_chars)
        )


_DEFAULT_CONFIG: WebConfig | None = None


def default_config() -> WebConfig:
    """The `WebConfig` used when ``ctx.services`` has no ``"web"`` entry (one per process)."""
    global _DEFAULT_CONFIG
    if _DEFAULT_CONFIG is None:
        _DEFAULT_CONFIG = WebConfig()
    return _DEFAULT_CONFIG


WEB: ServiceKey[WebConfig] = ServiceKey(
    "web", WebConfig, doc="kode.builtin.web.WebConfig", passed_on=True
)
"""An agent's web settings: ``WEB.set(agent.services, WebConfig(...))`` (its sub-agents get
them too)."""


def config_of(ctx: ToolContext[Any]) -> WebConfig:
    """The web settings of a call: its agent's `WEB` service, else `default_config()`.

    A value of the wrong type under the key is the call's error.
    """
    try:
        config = WEB.get(ctx.services)
    except TypeError as exc:
        raise ToolError(f"{exc}.", type=ToolErrorType.EXECUTION_FAILED) from None
    return config if config is not None else default_config()
