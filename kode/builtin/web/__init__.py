"""Built-in web tools (``group:web``): ``web_fetch`` reads a page, ``web_search`` searches.

Both read their settings from the `WEB` service (``WEB.set(agent.services, WebConfig(...))``),
a `WebConfig` (defaults when absent): allowed and denied domains, whether private networks may
be reached, size, time and character limits, the resolver, TLS verification and the search
provider. ``web_fetch`` refuses what could reach inside the network it runs in (see
`kode.builtin._shared._ssrf` for every rule), connects only to addresses it checked, checks every
redirect itself, and turns HTML into markdown. Given a ``prompt``, it has a model (the agent's
own, through ``ctx.sample``) read the page and returns only the answer, so a long page does not
fill the conversation; with no model to ask, that is an error result.
``web_search`` asks a `SearchProvider` (default: `BraveSearch`, with ``BRAVE_API_KEY``; or
`PerplexitySearch`, with ``PERPLEXITY_API_KEY``).

The HTTP side needs the optional ``kode-sdk[web]`` dependencies (httpx, markdownify); this module
imports without them, and the tools answer with an error result saying how to install them.
"""

from __future__ import annotations

import importlib
import inspect
from typing import TYPE_CHECKING, Annotated, Any, Literal

import anyio
from pydantic import Field

from kode.builtin._shared._ssrf import ResolveFunc, system_resolve
from kode.builtin._shared._web_config import (
    WEB as WEB,
)
from kode.builtin._shared._web_config import (
    Freshness,
    SearchProvider,
    SearchResult,
    WebCache,
    WebConfig,
    default_config,
)
from kode.builtin._shared._web_config import config_of as _config_of
from kode.builtin.web._search_providers import BraveSearch, PerplexitySearch
from kode.extras import install_hint
from kode.tools.context import ToolContext
from kode.tools.define import define_tool
from kode.tools.errors import ToolError, ToolErrorType
from kode.tools.results import ToolResult, image_result, text_result

if TYPE_CHECKING:
    from kode.builtin.web._fetch import Page

__all__ = [
    "BraveSearch",
    "Freshness",
    "PerplexitySearch",
    "ResolveFunc",
    "SearchProvider",
    "SearchResult",
    "WebCache",
    "WebConfig",
    "default_config",
    "system_resolve",
    "web_fetch",
    "web_search",
]

_DEPENDENCIES = frozenset({"httpx", "httpcore", "markdownify", "bs4"})
_FETCH_MODULE = "kode.builtin.web._fetch"


def _missing(exc: ImportError, tool: str) -> ToolError:
    if (exc.name or "").split(".")[0] not in _DEPENDENCIES:
        raise exc
    return ToolError(
        f"{tool} needs the optional dependencies httpx and markdownify, which are not "
        f"installed ({exc.name} is missing): {install_hint('web')}.",
        type=ToolErrorType.EXECUTION_FAILED,
        details={"missing": exc.name},
    )


def _size(n: int) -> str:
    if n >= 1024 * 1024:
        return f"{n / (1024 * 1024):g} MB"
    if n >= 1024:
        return f"{n / 1024:g} KB"
    return f"{n} bytes"


@define_tool(kind="fetch", groups=["group:web"], aliases=["WebFetch"])
async def web_fetch(
    url: Annotated[str, Field(min_length=1, max_length=8000)],
    ctx: ToolContext,
    format: Literal["markdown", "text", "raw"] = "markdown",
    max_chars: Annotated[int, Field(ge=100)] | None = None,
    start: Annotated[int, Field(ge=0)] = 0,
    prompt: Annotated[str, Field(min_length=1, max_length=4000)] | None = None,
) -> ToolResult:
    """Fetch a public web page (http or https) and return its content as readable text.

    HTML is turned into markdown (or plain text), with links made absolute; text, JSON and
    XML are returned as they are; PNG, JPEG, GIF and WebP images as images. Redirects are
    followed. Long pages are cut: the result says where, and calling again with `start`
    reads on. Addresses inside private networks are refused. Results are cached briefly.
    With `prompt`, a model reads the page and only its answer is returned, not the page:
    use it to pick facts out of a long page.

    Args:
        url: The absolute http:// or https:// URL to fetch.
        format: For HTML pages: "markdown" (default), "text" (no markup) or "raw" (the HTML).
        max_chars: The most characters to return (default and upper bound: the configured
            limit, 50,000 unless configured otherwise). Not used with `prompt`.
        start: The character to start from, to read on in a long page.
        prompt: A question or instruction about the page ("What does it say about pricing?").
            A model reads the page (up to 100,000 characters from `start`, unless configured
            otherwise) and the result is its answer alone.
        ctx: Injected by kode (not shown to the model).
    """
    config = _config_of(ctx)
    try:
        # The first import loads httpx (a tenth of a second or more): not in the event loop.
        fetching = await anyio.to_thread.run_sync(importlib.import_module, _FETCH_MODULE)
    except ImportError as exc:
        raise _missing(exc, "web_fetch") from None
    fetch_page, parse_url = fetching.fetch_page, fetching.parse_url
    if prompt is not None:
        from kode.builtin.web._prompt import check_answerable

        check_answerable(ctx, url)  # before fetching: nobody could read the page
    key = ("fetch", str(parse_url(url)), format)
    page = config.cache.get(key)
    cached = page is not None
    if page is None:
        page = await fetch_page(url, config=config, format=format)
        if page.cacheable:
            size = len(page.image) if page.image is not None else len(page.text or "")
            config.cache.put(key, page, size=max(size, 1))
    details: dict[str, Any] = {
        "url": page.url,
        "final_url": page.final_url,
        "status": page.status,
        "media_type": page.media_type,
        "title": page.title,
        "redirects": list(page.redirects),
        "bytes_read": page.bytes_read,
        "truncated_bytes": page.truncated,
        "cached": cached,
    }
    if page.image is not None:
        if prompt is not None:
            raise ToolError(
                f"{page.final_url} is an image ({page.media_type}), and a prompt is answered "
                "about a page's text: call web_fetch without prompt to see the image.",
                type=ToolErrorType.TOOL_ERROR,
                details={**details, "reason": "image"},
            )
        result = image_result(page.image, media_type=page.media_type, caption=page.final_url)
        return ToolResult(content=result.content, details={**details, **(result.details or {})})
    text = page.text or ""
    limit = min(max_chars or config.max_chars, config.max_chars)
    if start and start >= len(text):
        raise ToolError(
            f"start={start} is past the end of {page.final_url}, which has {len(text)} characters.",
            type=ToolErrorType.INVALID_TOOL_PARAMS,
        )
    if prompt is not None:
        return await _answer(ctx, config, page, text, start, prompt, details)
    end = min(start + limit, len(text))
    lines = [f"URL: {page.final_url}"]
    if page.redirects:
        lines.append(f"Redirected from: {page.url}")
    if page.title:
        lines.append(f"Title: {page.title}")
    if page.media_type and page.media_type != "text/html":
        lines.append(f"Content-Type: {page.media_type}")
    lines += ["", text[start:end] if text else "(the page has no readable text)"]
    if start or end < len(text):
        more = f" Call web_fetch again with start={end} to read on." if end < len(text) else ""
        lines += ["", f"[Showing characters {start}-{end} of {len(text)}.{more}]"]
    if page.truncated:
        limit_bytes = _size(config.max_response_bytes)
        lines += ["", f"[The response was larger than {limit_bytes}; only that much was read.]"]
    details.update(total_chars=len(text), start=start, end=end)
    return text_result("\n".join(lines), details=details)


async def _answer(
    ctx: ToolContext[Any],
    config: WebConfig,
    page: Page,
    text: str,
    start: int,
    prompt: str,
    details: dict[str, Any],
) -> ToolResult:
    """The result of ``web_fetch`` with a prompt: the URL and the model's answer, not the page."""
    from kode.builtin.web._prompt import ask_about

    if not text.strip():
        answer, end = "(the page has no readable text, so there is nothing to ask about)", 0
    else:
        answer, end = await ask_about(
            ctx,
            config=config,
            url=page.final_url,
            title=page.title,
            text=text,
            start=start,
            prompt=prompt,
        )
    lines = [f"URL: {page.final_url}", "", answer or "(the model gave no answer)"]
    if start or end < len(text):
        more = (
            f" Call web_fetch again with start={end} and a prompt to ask about the rest."
            if end < len(text)
            else ""
        )
        lines += ["", f"[The model read characters {start}-{end} of {len(text)}.{more}]"]
    if page.truncated:
        limit_bytes = _size(config.max_response_bytes)
        lines += ["", f"[The response was larger than {limit_bytes}; only that much was read.]"]
    details.update(total_chars=len(text), start=start, end=end, prompt=prompt)
    return text_result("\n".join(lines), details=details)


def _format_results(query: str, provider: str, results: list[SearchResult]) -> str:
    if not results:
        return f"No results for {query!r}."
    lines = [f"Results for {query!r} ({provider}):"]
    for i, hit in enumerate(results, 1):
        lines += ["", f"{i}. {hit.title}", f"   {hit.url}"]
        if hit.snippet or hit.age:
            age = f" ({hit.age})" if hit.age else ""
            lines.append(f"   {hit.snippet}{age}".rstrip())
    return "\n".join(lines)


def _check_takes(provider: SearchProvider, keywords: dict[str, str]) -> None:
    """Refuse `keywords` the provider's ``search`` does not take, naming them."""
    if not keywords:
        return
    try:
        parameters = inspect.signature(provider.search).parameters
    except (TypeError, ValueError):
        return  # not introspectable: let the call say
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return
    missing = [name for name in keywords if name not in parameters]
    if missing:
        raise ToolError(
            f"The search provider {provider.name!r} does not take {' or '.join(missing)}; "
            "search again without it.",
            type=ToolErrorType.INVALID_TOOL_PARAMS,
            details={"provider": provider.name, "unsupported": missing},
        )


@define_tool(kind="fetch", groups=["group:web"], aliases=["WebSearch"])
async def web_search(
    query: Annotated[str, Field(min_length=1, max_length=400)],
    ctx: ToolContext,
    count: Annotated[int, Field(ge=1, le=20)] = 5,
    freshness: Freshness | None = None,
    country: Annotated[str, Field(pattern=r"^([A-Za-z]{2}|ALL|all)$")] | None = None,
    search_lang: Annotated[str, Field(pattern=r"^[A-Za-z]{2,3}(-[A-Za-z]{2,4})?$")] | None = None,
) -> ToolResult:
    """Search the web; return the top results' titles, URLs and snippets.

    Use web_fetch on a result's URL to read the page.

    Args:
        query: What to search for, as you would type it into a search engine.
        count: How many results to return (1-20).
        freshness: Only pages from the last "day", "week", "month" or "year".
        country: Results for this country: a two-letter code such as "US", "DE" or "JP"
            ("ALL": no country).
        search_lang: Results in this language: a code such as "en", "de" or "pt-br".
        ctx: Injected by kode (not shown to the model).
    """
    config = _config_of(ctx)
    provider: SearchProvider = config.search if config.search is not None else BraveSearch()
    where: dict[str, str] = {}
    if country is not None:
        where["country"] = country.upper()
    if search_lang is not None:
        where["search_lang"] = search_lang.lower()
    _check_takes(provider, where)
    key = ("search", provider.name, query, count, freshness, tuple(sorted(where.items())))
    results: list[SearchResult] | None = config.cache.get(key)
    cached = results is not None
    if results is None:
        try:
            found = await provider.search(query, count=count, freshness=freshness, **where)
            results = list(found)
        except ImportError as exc:
            raise _missing(exc, "web_search") from None
        size = sum(len(r.title) + len(r.url) + len(r.snippet) for r in results)
        config.cache.put(key, results, size=max(size, 1))
    return text_result(
        _format_results(query, provider.name, results),
        details={
            "query": query,
            "provider": provider.name,
            "cached": cached,
            "results": [
                {"title": r.title, "url": r.url, "snippet": r.snippet, "age": r.age}
                for r in results
            ],
        },
    )
