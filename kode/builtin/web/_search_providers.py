"""Web search providers for ``web_search``: `SearchProvider`, `BraveSearch`, `PerplexitySearch`.

This module owns the seam a search backend fills and the Brave and Perplexity clients. It does not
format results for the model (``kode.builtin.web`` does). httpx is imported when a search runs,
so this module imports without the optional ``kode-sdk[web]`` dependencies.

A provider's URL is set by the application, never by the model, so provider requests are not
subject to `web_fetch`'s address rules.
"""

from __future__ import annotations

import functools
import html
import os
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kode.builtin._shared._web_config import Freshness, SearchProvider, SearchResult
from kode.tools.errors import ToolError, ToolErrorType

if TYPE_CHECKING:  # ssl and httpx are loaded by the first search
    import ssl

    import httpx

__all__ = [
    "BRAVE_SEARCH_URL",
    "PERPLEXITY_SEARCH_URL",
    "BraveSearch",
    "Freshness",
    "PerplexitySearch",
    "SearchProvider",
    "SearchResult",
]

BRAVE_SEARCH_URL = "https://api.search.brave.com/res/v1/web/search"
"""The Brave Search web search endpoint."""

_BRAVE_FRESHNESS: dict[str, str] = {"day": "pd", "week": "pw", "month": "pm", "year": "py"}
_TAG = re.compile(r"<[^>]{0,200}>")


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    # Loading the CA bundle takes tens of milliseconds: once per process, not per search.
    import httpx

    return httpx.create_ssl_context()


def _client(http_timeout: float, trust_env: bool) -> httpx.AsyncClient:
    import httpx

    return httpx.AsyncClient(timeout=http_timeout, trust_env=trust_env, verify=_ssl_context())


def _plain(text: Any) -> str:
    """Provider text (may hold ``<strong>`` and entities) as plain text."""
    if not isinstance(text, str):
        return ""
    return " ".join(html.unescape(_TAG.sub("", text)).split())


async def _fetch_json(
    send: Callable[[httpx.AsyncClient], Awaitable[httpx.Response]],
    *,
    name: str,
    provider: str,
    key_hint: str,
    http_timeout: float,
    trust_env: bool,
) -> Any:
    """One request to a search API: its JSON, or a `ToolError` saying what went wrong.

    `send` makes the request with the client it is given; `name` is how the errors name the
    service, `provider` goes into their details, `key_hint` says where the API key comes from.
    """
    import anyio

    # The first search imports httpx and loads the CA bundle (a tenth of a second or more):
    # in a worker thread, so the event loop's other tasks do not wait for it.
    client = await anyio.to_thread.run_sync(_client, http_timeout, trust_env)
    import httpx

    try:
        async with client:
            response = await send(client)
    except httpx.TimeoutException:
        raise ToolError(
            f"{name} did not answer within {http_timeout:g} s; try again later.",
            type=ToolErrorType.TIMEOUT,
        ) from None
    except httpx.HTTPError as exc:
        raise ToolError(
            f"{name} could not be reached: {type(exc).__name__}: {exc}",
            type=ToolErrorType.TOOL_ERROR,
        ) from None
    status = response.status_code
    if status in (401, 403):
        raise ToolError(
            f"{name} refused the API key (HTTP {status}); check {key_hint}.",
            type=ToolErrorType.PERMISSION_DENIED,
            details={"status": status, "provider": provider},
        )
    if status == 429:
        raise ToolError(
            f"{name}'s rate limit was reached (HTTP 429); wait before searching again.",
            type=ToolErrorType.TOOL_ERROR,
            details={"status": 429, "provider": provider},
        )
    if status != 200:
        raise ToolError(
            f"{name} failed with HTTP {status}: {_plain(response.text)[:300]}",
            type=ToolErrorType.TOOL_ERROR,
            details={"status": status, "provider": provider},
        )
    try:
        return response.json()
    except ValueError:
        raise ToolError(
            f"{name} answered with something that is not JSON.",
            type=ToolErrorType.TOOL_ERROR,
        ) from None


@dataclass(kw_only=True, frozen=True, slots=True)
class BraveSearch:
    """The Brave Search API (https://brave.com/search/api/).

    Sends ``GET {base_url}?q=...&count=...`` with the ``X-Subscription-Token`` header and reads
    ``{"web": {"results": [{"title", "url", "description"}]}}``.

    Example:
        ```python
        from kode.builtin.web import BraveSearch, WebConfig

        config = WebConfig(search=BraveSearch(api_key="...", extra_params={"country": "DE"}))
        ```
    """

    api_key: str | None = field(default=None, repr=False)
    """The subscription token (default: the ``BRAVE_API_KEY`` environment variable, read at
    each search)."""
    base_url: str = BRAVE_SEARCH_URL
    """The endpoint (change it for a proxy or a test server)."""
    timeout: float = 15.0
    """Seconds one search may take."""
    extra_params: Mapping[str, str] = field(default_factory=dict)
    """More query parameters sent with each search (``country``, ``search_lang``,
    ``safesearch``, ...)."""
    trust_env: bool = True
    """Let httpx read proxy settings from the environment."""

    @property
    def name(self) -> str:
        """``"brave"``."""
        return "brave"

    def _key(self) -> str:
        key = self.api_key or os.environ.get("BRAVE_API_KEY", "").strip()
        if not key:
            raise ToolError(
                "web_search is not configured: it needs a Brave Search API key. Set the "
                "BRAVE_API_KEY environment variable, or give the agent "
                'services={"web": WebConfig(search=BraveSearch(api_key=...))} '
                "(kode.builtin.web). Keys: https://brave.com/search/api/.",
                type=ToolErrorType.TOOL_ERROR,
                details={"reason": "not_configured", "provider": "brave"},
            )
        return key

    async def search(
        self,
        query: str,
        *,
        count: int,
        freshness: Freshness | None = None,
        country: str | None = None,
        search_lang: str | None = None,
    ) -> list[SearchResult]:
        """Search the web with Brave; see `SearchProvider.search`.

        `country` and `search_lang` are sent as Brave's ``country`` and ``search_lang``
        parameters, in place of any in `extra_params`.
        """
        key = self._key()
        params: dict[str, str] = {**self.extra_params, "q": query, "count": str(count)}
        if freshness is not None:
            params["freshness"] = _BRAVE_FRESHNESS[freshness]
        if country is not None:
            params["country"] = country
        if search_lang is not None:
            params["search_lang"] = search_lang
        headers = {"Accept": "application/json", "X-Subscription-Token": key}
        data = await _fetch_json(
            lambda client: client.get(self.base_url, params=params, headers=headers),
            name="Brave Search",
            provider="brave",
            key_hint="BRAVE_API_KEY or BraveSearch(api_key=...)",
            http_timeout=self.timeout,
            trust_env=self.trust_env,
        )
        web = data.get("web") if isinstance(data, dict) else None
        items = web.get("results") if isinstance(web, dict) else None
        results: list[SearchResult] = []
        for item in items if isinstance(items, list) else []:
            if not isinstance(item, dict) or not isinstance(item.get("url"), str):
                continue
            age = item.get("age")
            results.append(
                SearchResult(
                    title=_plain(item.get("title")) or item["url"],
                    url=item["url"],
                    snippet=_plain(item.get("description")),
                    age=age if isinstance(age, str) else None,
                )
            )
        return results[:count]


PERPLEXITY_SEARCH_URL = "https://api.perplexity.ai/search"
"""The Perplexity Search API endpoint."""


@dataclass(kw_only=True, frozen=True, slots=True)
class PerplexitySearch:
    """The Perplexity Search API (https://docs.perplexity.ai/api-reference/search-post).

    Sends ``POST {base_url}`` with ``{"query", "max_results", "country",
    "search_language_filter", "search_recency_filter"}`` and a bearer key, and reads
    ``{"results": [{"title", "url", "snippet", "date"}]}``.

    Example:
        ```python
        from kode.builtin.web import PerplexitySearch, WebConfig

        config = WebConfig(search=PerplexitySearch(api_key="..."))
        ```
    """

    api_key: str | None = field(default=None, repr=False)
    """The API key (default: the ``PERPLEXITY_API_KEY`` environment variable, read at each
    search)."""
    base_url: str = PERPLEXITY_SEARCH_URL
    """The endpoint (change it for a proxy or a test server)."""
    timeout: float = 15.0
    """Seconds one search may take."""
    trust_env: bool = True
    """Let httpx read proxy settings from the environment."""

    @property
    def name(self) -> str:
        """``"perplexity"``."""
        return "perplexity"

    def _key(self) -> str:
        key = self.api_key or os.environ.get("PERPLEXITY_API_KEY", "").strip()
        if not key:
            raise ToolError(
                "web_search is not configured: it needs a Perplexity API key. Set the "
                "PERPLEXITY_API_KEY environment variable, or give the agent "
                'services={"web": WebConfig(search=PerplexitySearch(api_key=...))} '
                "(kode.builtin.web). Keys: https://www.perplexity.ai/settings/api.",
                type=ToolErrorType.TOOL_ERROR,
                details={"reason": "not_configured", "provider": "perplexity"},
            )
        return key

    async def search(
        self,
        query: str,
        *,
        count: int,
        freshness: Freshness | None = None,
        country: str | None = None,
        search_lang: str | None = None,
    ) -> list[SearchResult]:
        """Search the web with Perplexity; see `SearchProvider.search`.

        `search_lang` is sent as its two-letter language (``"pt-br"``: ``["pt"]``), as the API
        takes only those; `country` ``"ALL"`` sends no country.
        """
        key = self._key()
        body: dict[str, Any] = {"query": query, "max_results": count}
        if freshness is not None:
            body["search_recency_filter"] = freshness
        if country is not None and country.upper() != "ALL":
            body["country"] = country.upper()
        if search_lang is not None:
            body["search_language_filter"] = [search_lang.lower()[:2]]
        headers = {"Accept": "application/json", "Authorization": f"Bearer {key}"}
        data = await _fetch_json(
            lambda client: client.post(self.base_url, json=body, headers=headers),
            name="Perplexity",
            provider="perplexity",
            key_hint="PERPLEXITY_API_KEY or PerplexitySearch(api_key=...)",
            http_timeout=self.timeout,
            trust_env=self.trust_env,
        )
        items = data.get("results") if isinstance(data, dict) else None
        results: list[SearchResult] = []
        for item in items if isinstance(items, list) else []:
            if not isinstance(item, dict) or not isinstance(item.get("url"), str):
                continue
            date = item.get("date")
            results.append(
                SearchResult(
                    title=_plain(item.get("title")) or item["url"],
                    url=item["url"],
                    snippet=_plain(item.get("snippet")),
                    age=date if isinstance(date, str) and date else None,
                )
            )
        return results[:count]
