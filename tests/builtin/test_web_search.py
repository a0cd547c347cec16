"""web_search with Brave Search, against a local server speaking the Brave API's format."""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from loopback_http import import_threads

from kode import ToolContext
from kode.builtin.web import (
    BraveSearch,
    Freshness,
    SearchProvider,
    SearchResult,
    WebConfig,
    web_search,
)
from kode.tools.errors import ToolErrorType

pytestmark = pytest.mark.anyio

BRAVE_PATH = "/res/v1/web/search"
BRAVE_ANSWER = {
    "type": "search",
    "query": {"original": "kode agents"},
    "web": {
        "type": "search",
        "results": [
            {
                "title": "&quot;kode&quot; <strong>agents</strong> made simple",
                "url": "https://kode.example/",
                "description": "Define a <strong>tool</strong> &amp; it is registered.",
                "age": "2 days ago",
            },
            {
                "title": "Tools",
                "url": "https://kode.example/tools",
                "description": "",
            },
            {"title": "no url, skipped"},
        ],
    },
}


@dataclass
class Request:
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]


@dataclass
class FakeBrave:
    status: int = 200
    answer: Any = field(default_factory=lambda: BRAVE_ANSWER)
    requests: list[Request] = field(default_factory=list)
    port: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}{BRAVE_PATH}"


@contextmanager
def brave_server(fake: FakeBrave) -> Iterator[FakeBrave]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            fake.requests.append(
                Request(parts.path, parse_qs(parts.query), dict(self.headers.items()))
            )
            body = json.dumps(fake.answer).encode()
            self.send_response(fake.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    fake.port = httpd.server_address[1]
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield fake
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


def context(provider: SearchProvider | None, **options: Any) -> ToolContext[None]:
    return ToolContext(services={"web": WebConfig(search=provider, **options)})


def brave(fake: FakeBrave, **options: Any) -> BraveSearch:
    options.setdefault("api_key", "test-key")
    return BraveSearch(base_url=fake.url, trust_env=False, **options)


async def test_brave_request_and_results() -> None:
    with brave_server(FakeBrave()) as fake:
        result = await web_search.run({"query": "kode agents", "count": 3}, context(brave(fake)))
    assert not result.is_error, result.text
    [request] = fake.requests
    assert request.path == BRAVE_PATH
    assert request.query == {"q": ["kode agents"], "count": ["3"]}
    assert request.headers["X-Subscription-Token"] == "test-key"
    assert request.headers["Accept"] == "application/json"
    assert result.text == (
        "Results for 'kode agents' (brave):\n"
        "\n"
        '1. "kode" agents made simple\n'
        "   https://kode.example/\n"
        "   Define a tool & it is registered. (2 days ago)\n"
        "\n"
        "2. Tools\n"
        "   https://kode.example/tools"
    )
    assert result.details["results"][0] == {
        "title": '"kode" agents made simple',
        "url": "https://kode.example/",
        "snippet": "Define a tool & it is registered.",
        "age": "2 days ago",
    }
    assert result.details["provider"] == "brave"


async def test_freshness_and_extra_params_are_sent() -> None:
    with brave_server(FakeBrave()) as fake:
        provider = brave(fake, extra_params={"country": "DE", "safesearch": "strict"})
        await web_search.run({"query": "news", "freshness": "week"}, context(provider))
    assert fake.requests[0].query == {
        "q": ["news"],
        "count": ["5"],
        "freshness": ["pw"],
        "country": ["DE"],
        "safesearch": ["strict"],
    }


async def test_the_key_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BRAVE_API_KEY", "from-env")
    with brave_server(FakeBrave()) as fake:
        result = await web_search.run({"query": "q"}, context(brave(fake, api_key=None)))
    assert not result.is_error
    assert fake.requests[0].headers["X-Subscription-Token"] == "from-env"


async def test_without_a_key_it_says_how_to_configure_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("BRAVE_API_KEY", raising=False)
    with brave_server(FakeBrave()) as fake:
        configured = await web_search.run({"query": "q"}, context(brave(fake, api_key=None)))
    default = await web_search.run({"query": "q"}, ToolContext())
    for result in (configured, default):
        assert result.is_error
        assert result.text.startswith(
            "web_search is not configured: it needs a Brave Search API key. Set the "
            "BRAVE_API_KEY environment variable"
        )
        assert "BraveSearch(api_key=...)" in result.text
        assert result.details == {"reason": "not_configured", "provider": "brave"}
    assert fake.requests == []


@pytest.mark.parametrize(
    ("status", "error_type", "message"),
    [
        (401, ToolErrorType.PERMISSION_DENIED, "Brave Search refused the API key (HTTP 401)"),
        (429, ToolErrorType.TOOL_ERROR, "Brave Search's rate limit was reached (HTTP 429)"),
        (500, ToolErrorType.TOOL_ERROR, "Brave Search failed with HTTP 500"),
    ],
)
async def test_api_errors_are_clear(status: int, error_type: ToolErrorType, message: str) -> None:
    with brave_server(FakeBrave(status=status, answer={"error": "no"})) as fake:
        result = await web_search.run({"query": "q"}, context(brave(fake)))
    assert result.is_error and result.error_type is error_type
    assert result.text.startswith(message)


async def test_no_results() -> None:
    with brave_server(FakeBrave(answer={"type": "search", "query": {}})) as fake:
        result = await web_search.run({"query": "zzzz"}, context(brave(fake)))
    assert not result.is_error
    assert result.text == "No results for 'zzzz'."


async def test_results_are_cached_per_config() -> None:
    with brave_server(FakeBrave()) as fake:
        ctx = context(brave(fake))
        first = await web_search.run({"query": "kode"}, ctx)
        again = await web_search.run({"query": "kode"}, ctx)
        other = await web_search.run({"query": "kode", "count": 2}, ctx)
    assert first.text == again.text
    assert (first.details["cached"], again.details["cached"]) == (False, True)
    assert len(fake.requests) == 2
    assert len(other.details["results"]) == 2


async def test_an_unreachable_provider_is_an_error() -> None:
    with brave_server(FakeBrave()) as fake:
        provider = brave(fake)
    result = await web_search.run({"query": "q"}, context(provider))  # the server is gone
    assert result.is_error
    assert result.text.startswith("Brave Search could not be reached: ConnectError")


async def test_any_search_provider_can_be_plugged_in() -> None:
    @dataclass
    class Catalog:
        asked: list[tuple[str, int, Freshness | None]] = field(default_factory=list)

        @property
        def name(self) -> str:
            return "catalog"

        async def search(
            self, query: str, *, count: int, freshness: Freshness | None = None
        ) -> list[SearchResult]:
            self.asked.append((query, count, freshness))
            return [SearchResult(title="Manual", url="https://docs.example/manual")]

    catalog = Catalog()
    assert isinstance(catalog, SearchProvider)
    result = await web_search.run({"query": "manual", "count": 1}, context(catalog))
    assert result.text == (
        "Results for 'manual' (catalog):\n\n1. Manual\n   https://docs.example/manual"
    )
    assert catalog.asked == [("manual", 1, None)]


async def test_invalid_arguments_are_refused_before_searching() -> None:
    result = await web_search.run({"query": "q", "count": 50}, ToolContext())
    assert result.is_error and result.error_type is ToolErrorType.INVALID_TOOL_PARAMS


async def test_without_httpx_the_result_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "httpx", None)
    result = await web_search.run(
        {"query": "q"}, context(BraveSearch(api_key="k", base_url="http://127.0.0.1:9/"))
    )
    assert result.is_error
    assert result.text.startswith("web_search needs the optional dependencies httpx")


async def test_country_and_search_lang_reach_brave() -> None:
    with brave_server(FakeBrave()) as fake:
        provider = brave(fake, extra_params={"country": "DE", "search_lang": "de"})
        result = await web_search.run(
            {"query": "news", "country": "jp", "search_lang": "JA"}, context(provider)
        )
        again = await web_search.run({"query": "news"}, context(provider))
    assert not result.is_error and not again.is_error, result.text
    # the model's choice replaces the configured one; without it the configured one is sent
    assert fake.requests[0].query == {
        "q": ["news"],
        "count": ["5"],
        "country": ["JP"],
        "search_lang": ["ja"],
    }
    assert fake.requests[1].query["country"] == ["DE"]
    assert fake.requests[1].query["search_lang"] == ["de"]  # not the cached answer for JP


async def test_country_and_search_lang_are_checked() -> None:
    bad_country = await web_search.run({"query": "q", "country": "Germany"}, ToolContext())
    assert bad_country.error_type is ToolErrorType.INVALID_TOOL_PARAMS
    assert "country" in bad_country.text
    bad_lang = await web_search.run({"query": "q", "search_lang": "english!"}, ToolContext())
    assert bad_lang.error_type is ToolErrorType.INVALID_TOOL_PARAMS

    class Plain:
        name = "plain"

        async def search(
            self, query: str, *, count: int, freshness: Freshness | None = None
        ) -> list[SearchResult]:
            return [SearchResult(title="T", url="https://t.example/")]

    refused = await web_search.run({"query": "q", "country": "DE"}, context(Plain()))
    assert refused.error_type is ToolErrorType.INVALID_TOOL_PARAMS
    assert refused.text == (
        "The search provider 'plain' does not take country; search again without it."
    )
    plain = await web_search.run({"query": "q"}, context(Plain()))
    assert not plain.is_error


def test_the_first_search_imports_httpx_outside_the_event_loop() -> None:
    """httpx is imported and its client made on the first search in a worker thread, so the
    loop's other tasks do not wait for it: a fresh process records which thread imports it."""
    script = """
from kode import ToolContext
from kode.builtin.web import BraveSearch, WebConfig, web_search
assert "httpx" not in sys.modules

class H(BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({"web": {"results": [{"title": "t", "url": "https://a.example/"}]}})
        self.send_response(200); self.send_header("Content-Length", str(len(body)))
        self.end_headers(); self.wfile.write(body.encode())
    def log_message(self, *a): pass

httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
threading.Thread(target=httpd.serve_forever, daemon=True).start()
url = f"http://127.0.0.1:{httpd.server_address[1]}/res/v1/web/search"
provider = BraveSearch(base_url=url, api_key="k", trust_env=False)
ctx = ToolContext(services={"web": WebConfig(search=provider)})
result = anyio.run(web_search.run, {"query": "q"}, ctx)
assert not result.is_error, result.text
print(importers)
"""
    assert import_threads("httpx", script) == "[False]"
