"""web_fetch against a real local HTTP(S) server, with private networks explicitly allowed."""

from __future__ import annotations

import json
import sys
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import anyio
import pytest
from loopback_http import (
    PNG,
    import_threads,
    redirect,
    respond,
    serve,
    table_resolver,
    tls_contexts,
)

from kode import ToolContext
from kode.builtin.web import WebConfig, web_fetch
from kode.extras import install_hint
from kode.registries import ToolSource, registry
from kode.tools.errors import ToolErrorType
from kode.tools.results import ImageBlock

pytestmark = pytest.mark.anyio


def context(**options: Any) -> ToolContext[None]:
    options.setdefault("allow_private_networks", True)
    options.setdefault("timeout", 10)
    return ToolContext(services={"web": WebConfig(**options)})


ARTICLE = b"""<!doctype html>
<html><head><title>A  Greeting</title><style>body { color: red }</style>
<script>var secret = "do not show";</script></head>
<body><nav><a href="/">Home</a></nav>
<main><h1>Hello</h1><p>Some <b>bold</b> text and a <a href="next/page">relative link</a>.</p>
<ul><li>one</li><li>two</li></ul><img src="data:image/png;base64,AAAA" alt="inline"></main>
</body></html>"""


async def test_html_becomes_markdown_with_absolute_links() -> None:
    with serve({"/docs/article": respond(200, "text/html; charset=utf-8", ARTICLE)}) as srv:
        result = await web_fetch.run({"url": srv.url("/docs/article")}, context())
    assert not result.is_error, result.text
    text = result.text
    assert text.startswith(f"URL: {srv.url('/docs/article')}\nTitle: A Greeting\n\n")
    assert "# Hello" in text
    assert "Some **bold** text" in text
    assert f"[relative link]({srv.url('/docs/next/page')})" in text
    assert "- one\n- two" in text
    assert "secret" not in text and "color: red" not in text and "base64" not in text
    assert "Home" not in text  # <main> is preferred to the whole body
    assert result.details["status"] == 200
    assert result.details["title"] == "A Greeting"
    assert result.details["media_type"] == "text/html"
    assert srv.seen[0].headers["User-Agent"].startswith("kode-web-fetch/")


async def test_html_as_plain_text_and_raw() -> None:
    with serve({"/a": respond(200, "text/html", ARTICLE)}) as srv:
        plain = await web_fetch.run({"url": srv.url("/a"), "format": "text"}, context())
        raw = await web_fetch.run({"url": srv.url("/a"), "format": "raw"}, context())
    assert "Hello" in plain.text and "#" not in plain.text and "**" not in plain.text
    assert "<h1>Hello</h1>" in raw.text


async def test_plain_text_is_returned_as_is() -> None:
    body = "line one\nline two — with a dash\n".encode()
    with serve({"/notes.txt": respond(200, "text/plain; charset=utf-8", body)}) as srv:
        result = await web_fetch.run({"url": srv.url("/notes.txt")}, context())
    assert result.text.endswith("\n\nline one\nline two — with a dash")
    assert "Content-Type: text/plain" in result.text


async def test_json_is_returned_as_text() -> None:
    body = json.dumps({"name": "kode", "tags": ["a", "b"]}).encode()
    with serve({"/api": respond(200, "application/json", body)}) as srv:
        result = await web_fetch.run({"url": srv.url("/api")}, context())
    assert not result.is_error
    assert "Content-Type: application/json" in result.text
    assert json.loads(result.text.split("\n\n", 1)[1]) == {"name": "kode", "tags": ["a", "b"]}


async def test_charset_from_the_header_and_from_meta() -> None:
    latin = "café crème".encode("latin-1")
    meta = b'<html><head><meta charset="iso-8859-1"></head><body><p>' + latin + b"</p></body>"
    routes = {
        "/header": respond(200, "text/plain; charset=iso-8859-1", latin),
        "/meta": respond(200, "text/html", meta),
    }
    with serve(routes) as srv:
        header = await web_fetch.run({"url": srv.url("/header")}, context())
        in_meta = await web_fetch.run({"url": srv.url("/meta")}, context())
    assert "café crème" in header.text
    assert "café crème" in in_meta.text


async def test_images_become_image_blocks_and_binaries_are_refused() -> None:
    routes = {
        "/logo.png": respond(200, "image/png", PNG),
        "/file.bin": respond(200, "application/octet-stream", b"\x00\x01\x02" * 100),
        "/doc.pdf": respond(200, "application/pdf", b"%PDF-1.7 ..."),
    }
    with serve(routes) as srv:
        image = await web_fetch.run({"url": srv.url("/logo.png")}, context())
        binary = await web_fetch.run({"url": srv.url("/file.bin")}, context())
        pdf = await web_fetch.run({"url": srv.url("/doc.pdf")}, context())
    assert isinstance(image.content[0], ImageBlock) and image.content[0].data == PNG
    assert binary.is_error and "cannot show application/octet-stream" in binary.text
    assert pdf.is_error and "application/pdf" in pdf.text


async def test_http_errors_are_error_results_with_an_excerpt() -> None:
    with serve({}) as srv:
        result = await web_fetch.run({"url": srv.url("/missing")}, context())
    assert result.is_error and result.error_type is ToolErrorType.TOOL_ERROR
    assert result.text.startswith(f"web_fetch got HTTP 404 Not Found from {srv.url('/missing')}.")
    assert "No such page here." in result.text
    assert result.details["status"] == 404


async def test_the_size_limit_stops_reading() -> None:
    big = b"x" * 2_000_000
    with serve({"/big": respond(200, "text/plain", big)}) as srv:
        result = await web_fetch.run(
            {"url": srv.url("/big")}, context(max_response_bytes=10_000, max_chars=50_000)
        )
    assert not result.is_error
    assert result.details["bytes_read"] == 10_000
    assert result.details["truncated_bytes"] is True
    assert result.details["total_chars"] == 10_000
    assert "[The response was larger than 9.76562 KB; only that much was read.]" in result.text


async def test_the_time_limit_ends_a_slow_response() -> None:
    def slow(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "text/plain")
        handler.send_header("Content-Length", "1000")
        handler.end_headers()
        handler.wfile.write(b"a little")
        handler.wfile.flush()
        handler.server.stop.wait(10)  # type: ignore[attr-defined]

    with serve({"/slow": slow}) as srv:
        began = time.monotonic()
        result = await web_fetch.run({"url": srv.url("/slow")}, context(timeout=0.5))
        elapsed = time.monotonic() - began
    assert result.is_error and result.error_type is ToolErrorType.TIMEOUT
    assert (
        result.text == f"web_fetch gave up on {srv.url('/slow')} after 0.5 s (WebConfig.timeout)."
    )
    assert elapsed < 3


async def test_redirects_are_followed_and_reported() -> None:
    routes = {
        "/start": redirect("/middle", 301),
        "/middle": redirect("end?x=1", 307),
        "/end": respond(200, "text/plain", b"arrived"),
    }
    with serve(routes) as srv:
        result = await web_fetch.run({"url": srv.url("/start")}, context())
    assert not result.is_error, result.text
    assert result.text.startswith(
        f"URL: {srv.url('/end?x=1')}\nRedirected from: {srv.url('/start')}\n"
    )
    assert result.text.endswith("arrived")
    assert result.details["redirects"] == [srv.url("/middle"), srv.url("/end?x=1")]
    assert [s.path for s in srv.seen] == ["/start", "/middle", "/end?x=1"]


async def test_redirects_are_bounded() -> None:
    with serve({"/loop": redirect("/loop")}) as srv:
        result = await web_fetch.run({"url": srv.url("/loop")}, context(max_redirects=3))
    assert result.is_error
    assert result.text.startswith(f"web_fetch stopped after 3 redirects from {srv.url('/loop')}")
    assert len(srv.seen) == 4


@pytest.mark.parametrize(
    ("location", "reason"),
    [
        ("http://169.254.169.254/latest/meta-data/", "169.254.169.254 is a cloud metadata address"),
        ("http://metadata.google.internal/computeMetadata/v1/", "is a cloud metadata host"),
        ("http://[::ffff:127.0.0.1]/", "::ffff:127.0.0.1 is an IPv4-mapped IPv6 address"),
        ("http://rebind.test/", "rebind.test resolves to 169.254.169.254"),
        (
            "http://[::a9fe:a9fe]/latest/meta-data/",
            "::a9fe:a9fe is an IPv4-compatible IPv6 address (for 169.254.169.254)",
        ),
        ("http://[fe80::a9fe:a9fe]/", "fe80::a9fe:a9fe is a link-local address"),
        ("http://169.254.170.23/v1/credentials", "169.254.170.23 is a link-local address"),
    ],
)
async def test_a_redirect_hop_into_the_metadata_service_is_refused(
    location: str, reason: str
) -> None:
    calls: list[tuple[str, int]] = []
    resolve = table_resolver({"rebind.test": ["93.184.216.34", "169.254.169.254"]}, calls)
    with serve({"/evil": redirect(location)}) as srv:
        result = await web_fetch.run({"url": srv.url("/evil")}, context(resolver=resolve))
    assert result.is_error and result.error_type is ToolErrorType.PERMISSION_DENIED
    assert result.text.startswith(f"web_fetch refused {location}: ")
    assert reason in result.text
    assert [s.path for s in srv.seen] == ["/evil"]  # the server's own loopback was allowed


async def test_the_ipv4_compatible_form_of_the_server_address_is_refused() -> None:
    # The server listens on 127.0.0.1 and private networks are allowed: "::127.0.0.1" would
    # still be another spelling of a refused kind of address, and nothing is sent to it.
    with serve({"/page": respond(200, "text/plain", b"secret")}) as srv:
        url = srv.url("/page", host="[::127.0.0.1]")
        result = await web_fetch.run({"url": url}, context())
    assert result.is_error and result.error_type is ToolErrorType.PERMISSION_DENIED
    assert result.text.startswith(
        f"web_fetch refused {url}: ::7f00:1 is an IPv4-compatible IPv6 address (for 127.0.0.1)."
    )
    assert srv.seen == []


async def test_a_redirect_to_a_file_url_is_refused() -> None:
    with serve({"/evil": redirect("file:///etc/passwd")}) as srv:
        result = await web_fetch.run({"url": srv.url("/evil")}, context())
    assert result.is_error and result.error_type is ToolErrorType.INVALID_TOOL_PARAMS
    assert "only fetches http:// and https:// URLs, not file://" in result.text


async def test_the_domain_lists_apply_to_every_hop() -> None:
    resolve = table_resolver({"example.test": ["127.0.0.1"], "other.test": ["127.0.0.1"]})
    with serve(
        {"/go": redirect("http://other.test/"), "/ok": respond(200, "text/plain", b"ok")}
    ) as srv:
        allowed = context(resolver=resolve, allowed_domains=["*.example.test"])
        ok = await web_fetch.run({"url": srv.url("/ok", host="example.test")}, allowed)
        hop = await web_fetch.run({"url": srv.url("/go", host="example.test")}, allowed)
        denied = await web_fetch.run(
            {"url": srv.url("/ok", host="example.test")},
            context(resolver=resolve, denied_domains=["example.test"]),
        )
    assert ok.text.endswith("ok")
    assert hop.is_error and "other.test is not on the allowed domain list" in hop.text
    assert denied.is_error and "example.test is on the denied domain list" in denied.text


async def test_the_connection_goes_to_the_checked_address() -> None:
    answers = iter([["127.0.0.1"], ["169.254.169.254"]])  # a second lookup would be rebound
    calls: list[tuple[str, int]] = []

    async def rebinding(host: str, port: int) -> list[str]:
        calls.append((host, port))
        return next(answers)

    with serve({"/who": respond(200, "text/plain", b"hi")}) as srv:
        result = await web_fetch.run(
            {"url": srv.url("/who", host="example.test")}, context(resolver=rebinding)
        )
    assert not result.is_error, result.text
    assert calls == [("example.test", srv.port)]  # resolved once, by the check
    assert srv.seen[0].headers["Host"] == f"example.test:{srv.port}"
    assert result.details["final_url"] == srv.url("/who", host="example.test")


async def test_the_next_checked_address_is_tried_when_one_refuses() -> None:
    resolve = table_resolver({"example.test": ["127.0.0.2", "127.0.0.1"]})
    with serve({"/": respond(200, "text/plain", b"second")}) as srv:
        # nothing listens on 127.0.0.2 at this port (Linux routes all of 127/8 to lo)
        result = await web_fetch.run(
            {"url": srv.url("/", host="example.test")}, context(resolver=resolve)
        )
    assert result.text.endswith("second")


async def test_the_character_limit_and_reading_on() -> None:
    body = "".join(f"{i:05d}\n" for i in range(1000)).encode()  # 6000 characters
    with serve({"/long": respond(200, "text/plain", body)}) as srv:
        ctx = context(max_chars=2000)
        first = await web_fetch.run({"url": srv.url("/long")}, ctx)
        second = await web_fetch.run(
            {"url": srv.url("/long"), "start": 2000, "max_chars": 500}, ctx
        )
        past = await web_fetch.run({"url": srv.url("/long"), "start": 7000}, ctx)
        bigger = await web_fetch.run({"url": srv.url("/long"), "max_chars": 100_000}, ctx)
    content = first.text.split("\n\n")[1]
    assert len(content) == 2000 and content.startswith("00000\n")
    assert first.text.endswith(
        "[Showing characters 0-2000 of 5999. Call web_fetch again with start=2000 to read on.]"
    )
    assert second.text.split("\n\n")[1] == body.decode()[2000:2500]
    assert second.details["cached"] is True
    assert past.is_error and "start=7000 is past the end" in past.text
    assert bigger.details["end"] == 2000  # the configured limit is also the upper bound
    assert len(srv.seen) == 1  # the later calls were served from the cache


async def test_the_cache_belongs_to_one_config_and_expires() -> None:
    with serve({"/page": respond(200, "text/plain", b"cached")}) as srv:
        short = context(cache_ttl=0.2)
        await web_fetch.run({"url": srv.url("/page")}, short)
        await web_fetch.run({"url": srv.url("/page")}, short)
        await web_fetch.run({"url": srv.url("/page")}, context())  # another config
        await anyio.sleep(0.25)
        await web_fetch.run({"url": srv.url("/page")}, short)
        off = context(cache_ttl=0)
        await web_fetch.run({"url": srv.url("/page")}, off)
        await web_fetch.run({"url": srv.url("/page")}, off)
    assert len(srv.seen) == 5


async def test_no_store_responses_are_not_cached() -> None:
    with serve(
        {"/p": respond(200, "text/plain", b"fresh", **{"Cache-Control": "no-store"})}
    ) as srv:
        ctx = context()
        await web_fetch.run({"url": srv.url("/p")}, ctx)
        await web_fetch.run({"url": srv.url("/p")}, ctx)
    assert len(srv.seen) == 2


async def test_https_uses_the_name_for_sni_and_the_certificate(tmp_path: Path) -> None:
    server_tls, client_tls = tls_contexts(tmp_path, "example.test")
    resolve = table_resolver({"example.test": ["127.0.0.1"], "other.test": ["127.0.0.1"]})
    with serve({"/secure": respond(200, "text/plain", b"over tls")}, tls=server_tls) as srv:
        ctx = context(resolver=resolve, verify=client_tls)
        good = await web_fetch.run({"url": srv.url("/secure", host="example.test")}, ctx)
        wrong = await web_fetch.run({"url": srv.url("/secure", host="other.test")}, ctx)
    assert not good.is_error, good.text
    assert good.text.endswith("over tls")
    assert srv.sni[0] == "example.test"
    assert srv.seen[0].headers["Host"] == f"example.test:{srv.port}"
    # the certificate is checked against the name in the URL, not the address connected to
    assert wrong.is_error and "CERTIFICATE_VERIFY_FAILED" in wrong.text
    assert len(srv.seen) == 1


async def test_a_bad_services_entry_is_reported() -> None:
    result = await web_fetch.run(
        {"url": "http://example.com/"}, ToolContext(services={"web": {"timeout": 1}})
    )
    assert result.is_error
    assert result.text == (
        "services['web'] must be a WebConfig (kode.builtin.web.WebConfig), got dict."
    )


async def test_without_httpx_the_result_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delitem(sys.modules, "kode.builtin.web._fetch")
    monkeypatch.setitem(sys.modules, "httpx", None)
    result = await web_fetch.run({"url": "http://example.com/"}, context())
    assert result.is_error
    assert result.text == (
        "web_fetch needs the optional dependencies httpx and markdownify, which are not "
        f"installed (httpx is missing): {install_hint('web')}."
    )


def test_the_web_tools_are_core_tools_in_group_web() -> None:
    for name, alias in (("web_fetch", "webfetch"), ("web_search", "websearch")):
        meta = registry.meta(name)
        assert meta.source is ToolSource.CORE
        assert meta.groups == ("group:web",)
        assert meta.kind == "fetch"
        assert alias in meta.aliases


def test_web_config_checks_its_values() -> None:
    with pytest.raises(ValueError, match="max_chars must be a positive number, got 0"):
        WebConfig(max_chars=0)
    with pytest.raises(ValueError, match="allowed_domains must be a list of domains"):
        WebConfig(allowed_domains="example.com")
    config = WebConfig(allowed_domains=["*.Example.COM.", ".docs.test"])
    assert config.allowed_domains == ("example.com", "docs.test")


def test_the_first_fetch_imports_httpx_outside_the_event_loop() -> None:
    """httpx and markdownify are imported on the first call, in a worker thread, so the loop's
    other tasks do not wait for it: a fresh process records which thread imports httpx."""
    script = """
from kode import ToolContext
from kode.builtin.web import WebConfig, web_fetch
assert "httpx" not in sys.modules

class H(BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.send_header("Content-Length", "2"); self.end_headers()
        self.wfile.write(b"ok")
    def log_message(self, *a): pass

httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
threading.Thread(target=httpd.serve_forever, daemon=True).start()
ctx = ToolContext(services={"web": WebConfig(allow_private_networks=True)})
url = f"http://127.0.0.1:{httpd.server_address[1]}/"
result = anyio.run(web_fetch.run, {"url": url}, ctx)
assert not result.is_error, result.text
print(importers)
"""
    assert import_threads("httpx", script) == "[False]"
