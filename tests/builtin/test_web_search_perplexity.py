"""web_search with Perplexity, against a local server speaking the Perplexity Search API."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from kode import ToolContext
from kode.builtin.web import PerplexitySearch, WebConfig, web_search
from kode.tools.errors import ToolErrorType

pytest.importorskip("httpx")

pytestmark = pytest.mark.anyio

ANSWER = {
    "id": "s-1",
    "results": [
        {
            "title": "kode &amp; agents",
            "url": "https://kode.example/",
            "snippet": "Define a <b>tool</b>.",
            "date": "2026-11-01",
        },
        {"title": "Tools", "url": "https://kode.example/tools", "snippet": ""},
        {"title": "no url"},
    ],
}


@dataclass
class FakePerplexity:
    status: int = 200
    requests: list[tuple[str, dict[str, str], Any]] = field(default_factory=list)
    port: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/search"


@contextmanager
def perplexity_server(fake: FakePerplexity) -> Iterator[FakePerplexity]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            fake.requests.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body))
            raw = json.dumps(ANSWER if fake.status == 200 else {"error": "no"}).encode()
            self.send_response(fake.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

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


def context(provider: PerplexitySearch) -> ToolContext[None]:
    return ToolContext(services={"web": WebConfig(search=provider)})


async def test_perplexity_request_and_results() -> None:
    with perplexity_server(FakePerplexity()) as fake:
        provider = PerplexitySearch(api_key="pk", base_url=fake.url, trust_env=False)
        result = await web_search.run(
            {
                "query": "kode",
                "count": 3,
                "freshness": "week",
                "country": "de",
                "search_lang": "pt-BR",
            },
            context(provider),
        )
        everywhere = await web_search.run({"query": "kode", "country": "ALL"}, context(provider))
    assert not result.is_error and not everywhere.is_error, result.text
    path, headers, body = fake.requests[0]
    assert path == "/search"
    assert headers["authorization"] == "Bearer pk"
    assert body == {
        "query": "kode",
        "max_results": 3,
        "search_recency_filter": "week",
        "country": "DE",
        "search_language_filter": ["pt"],
    }
    assert fake.requests[1][2] == {"query": "kode", "max_results": 5}
    assert result.text == (
        "Results for 'kode' (perplexity):\n"
        "\n"
        "1. kode & agents\n"
        "   https://kode.example/\n"
        "   Define a tool. (2026-11-01)\n"
        "\n"
        "2. Tools\n"
        "   https://kode.example/tools"
    )


async def test_perplexity_errors_say_what_to_do(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PERPLEXITY_API_KEY", raising=False)
    missing = await web_search.run({"query": "q"}, context(PerplexitySearch()))
    assert missing.is_error and "PERPLEXITY_API_KEY" in missing.text
    with perplexity_server(FakePerplexity(status=401)) as fake:
        monkeypatch.setenv("PERPLEXITY_API_KEY", "from-env")
        provider = PerplexitySearch(base_url=fake.url, trust_env=False)
        refused = await web_search.run({"query": "q"}, context(provider))
    assert fake.requests[0][1]["authorization"] == "Bearer from-env"
    assert refused.error_type is ToolErrorType.PERMISSION_DENIED
    assert refused.text.startswith("Perplexity refused the API key (HTTP 401)")
