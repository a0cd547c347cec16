"""The browser tool in a real headless Chromium (Debian's, through Playwright), against pages a
real HTTP server serves on 127.0.0.1, with private networks allowed as in web_fetch's tests.
One browser serves the module's tool-level tests; the agent test starts and closes its own."""

from __future__ import annotations

import contextlib
import os
import struct
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from loopback_http import (
    PNG,
    Server,
    redirect,
    respond,
    send,
    serve,
    table_resolver,
    tls_contexts,
)

from kode import Agent, AgentTemplate, ToolContext
from kode.agent import ApprovalDecision, ApprovalRequest
from kode.builtin.browser import BROWSER, SESSION, BrowserConfig, browser, find_browser
from kode.builtin.web import WEB, WebConfig
from kode.extras import install_hint
from kode.models import ScriptedModel, tool_use
from kode.models.messages import ToolResultContent
from kode.testing.programs import missing_program
from kode.tools.errors import ToolError
from kode.tools.results import ImageBlock

pytest.importorskip("playwright", reason=f"the browser tool needs: {install_hint('browser')}")
try:  # kode's own lookup: KODE_BROWSER_PATH, else PATH
    find_browser(BrowserConfig())
except ToolError:  # pragma: no cover - CI installs it (.ci/run)
    pytest.skip(
        missing_program("chromium", package="chromium", needed_for="the browser tool"),
        allow_module_level=True,
    )

pytestmark = pytest.mark.anyio

INDEX = b"""<!doctype html><html><head><title>Kode test page</title></head><body>
<h1>Welcome</h1>
<p id="status">waiting</p>
<button id="go" onclick="document.getElementById('status').textContent = 'clicked'">Go</button>
<input id="name" oninput="document.getElementById('echo').textContent = 'Hello, ' + this.value">
<p id="echo"></p>
<form action="/search" method="get"><input name="q" id="q"></form>
<img src="/ok.png" alt="">
</body></html>"""


def _search(handler: BaseHTTPRequestHandler) -> None:
    query = parse_qs(urlsplit(handler.path).query).get("q", [""])[0]
    body = f"<html><head><title>Results</title></head><body>You searched for {query}</body></html>"
    send(handler, 200, "text/html; charset=utf-8", body.encode())


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def site() -> Iterator[Server]:
    routes = {
        "/": respond(200, "text/html; charset=utf-8", INDEX),
        "/ok.png": respond(200, "image/png", PNG),
        "/search": _search,
        "/r-meta": redirect("http://169.254.169.254/latest/meta-data/"),
        "/long": respond(
            200, "text/plain", "".join(f"line {i:04d}\n" for i in range(600)).encode()
        ),
    }
    with serve(routes) as srv:
        mapped = f"http://[::ffff:127.0.0.1]:{srv.port}"
        routes["/r-mapped"] = redirect(f"{mapped}/secret")
        routes["/r-denied"] = redirect(srv.url("/secret", host="denied.test"))
        routes["/leaky"] = respond(
            200,
            "text/html",
            f'<html><body><p>Leaky</p><img src="/ok.png"><img src="{mapped}/pixel.png">'
            f'<img src="https://denied.test:{srv.port}/tunnel.png">'
            "</body></html>".encode(),
        )
        yield srv


@pytest.fixture(scope="module")
def ctx(site: Server) -> Iterator[ToolContext[None]]:
    context: ToolContext[None] = ToolContext(
        services={
            "web": WebConfig(
                allow_private_networks=True,
                timeout=10,
                # names Chromium cannot resolve: only the proxy's checked resolution reaches them
                resolver=table_resolver({"site.test": ["127.0.0.1"], "denied.test": ["127.0.0.1"]}),
                denied_domains=["denied.test"],
            ),
            "browser": BrowserConfig(
                timeout=10, element_timeout=1, width=800, height=600, max_chars=2000
            ),
        }
    )
    yield context
    session = SESSION.get(context.services)
    if session is not None:
        session.close()


async def call(ctx: ToolContext[None], **arguments: Any) -> Any:
    return await browser.run(arguments, ctx)


def seen(srv: Server) -> list[str]:
    return [urlsplit(s.path).path for s in srv.seen]


async def test_navigate_returns_the_pages_text(site: Server, ctx: ToolContext[None]) -> None:
    result = await call(ctx, action="navigate", url=site.url("/"))
    assert not result.is_error, result.text
    assert result.text == (
        f"URL: {site.url('/')}\nTitle: Kode test page\n\nWelcome\n\nwaiting\n\nGo"
    )
    assert {"/", "/ok.png"} <= set(seen(site))
    assert result.details["status"] == 200


async def test_click_changes_the_text_and_type_fills_a_field(
    site: Server, ctx: ToolContext[None]
) -> None:
    await call(ctx, action="navigate", url=site.url("/"))
    clicked = await call(ctx, action="click", selector="#go")
    assert not clicked.is_error, clicked.text
    assert clicked.text == f"Clicked '#go'.\nURL: {site.url('/')}\nTitle: Kode test page"
    status = await call(ctx, action="read", selector="#status")
    assert status.text.endswith("\n\nclicked")
    typed = await call(ctx, action="type", selector="#name", text="Ada")
    assert typed.text.startswith("Typed 3 characters into '#name'.")
    echo = await call(ctx, action="read", selector="#echo")
    assert echo.text.endswith("\n\nHello, Ada")
    # typing with submit sends the form: the next page is the server's answer
    await call(ctx, action="type", selector="#q", text="kode tools", submit=True)
    page = await call(ctx, action="read")
    assert (
        page.text
        == f"URL: {site.url('/search?q=kode+tools')}\nTitle: Results\n\nYou searched for kode tools"
    )


async def test_a_missing_element_is_a_clear_error(site: Server, ctx: ToolContext[None]) -> None:
    await call(ctx, action="navigate", url=site.url("/"))
    missing = await call(ctx, action="click", selector="#nowhere")
    assert missing.is_error
    assert missing.text == (
        f"browser could not click '#nowhere' on {site.url('/')}: no element matching it could "
        "be used within 1 s (none on the page, hidden, or disabled)"
    )
    unnamed = await call(ctx, action="type", selector="#name")
    assert unnamed.is_error and unnamed.text == "browser action 'type' needs text."


async def test_a_screenshot_is_a_png_of_the_viewport_or_an_element(
    site: Server, ctx: ToolContext[None]
) -> None:
    await call(ctx, action="navigate", url=site.url("/"))
    shot = await call(ctx, action="screenshot")
    assert not shot.is_error, shot.text
    image, caption = shot.content
    assert isinstance(image, ImageBlock) and image.media_type == "image/png"
    assert image.data[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", image.data[16:24]) == (800, 600)  # the IHDR: the viewport
    assert caption.text == f"Screenshot of {site.url('/')}."
    button = await call(ctx, action="screenshot", selector="#go")
    width, height = struct.unpack(">II", button.content[0].data[16:24])
    assert 0 < width < 200 and 0 < height < 100


async def test_long_text_is_bounded_and_read_on_with_start(
    site: Server, ctx: ToolContext[None]
) -> None:
    first = await call(ctx, action="navigate", url=site.url("/long"))
    # the page's text, as the browser shows it: the lines without the last line break
    total = len("".join(f"line {i:04d}\n" for i in range(600))) - 1
    assert first.details["total_chars"] == total
    assert first.text.endswith(
        f'[Showing characters 0-2000 of {total}. Call browser with action "read" and '
        "start=2000 to read on.]"
    )
    more = await call(ctx, action="read", start=2000)
    assert "line 0200" in more.text and "line 0100" not in more.text


async def test_a_redirect_to_a_refused_address_is_refused(
    site: Server, ctx: ToolContext[None]
) -> None:
    mapped = await call(ctx, action="navigate", url=site.url("/r-mapped"))
    assert mapped.is_error
    assert mapped.text == (
        f"browser refused http://[::ffff:7f00:1]:{site.port}/secret: ::ffff:127.0.0.1 is an "
        "IPv4-mapped IPv6 address. It does not fetch from private, local or cloud metadata "
        f"addresses. {site.url('/r-mapped')} redirected there."
    )
    # Chromium writes the address in its canonical form; the server never got the request
    assert "/secret" not in seen(site)
    meta = await call(ctx, action="navigate", url=site.url("/r-meta"))
    assert meta.is_error and meta.text.startswith(
        "browser refused http://169.254.169.254/latest/meta-data/: 169.254.169.254 is a cloud "
        "metadata address."
    )


async def test_the_browser_connects_to_the_address_the_rules_checked(
    site: Server, ctx: ToolContext[None]
) -> None:
    named = await call(ctx, action="navigate", url=site.url("/", host="site.test"))
    assert not named.is_error, named.text
    assert named.text.startswith(f"URL: {site.url('/', host='site.test')}\nTitle: Kode test page")
    assert any(s.headers["Host"] == f"site.test:{site.port}" for s in site.seen)
    denied = await call(ctx, action="navigate", url=site.url("/r-denied"))
    assert denied.is_error
    assert denied.text == (
        f"browser refused {site.url('/secret', host='denied.test')}: denied.test is on the "
        f"denied domain list. {site.url('/r-denied')} redirected there."
    )
    assert "/secret" not in seen(site)


async def test_a_sub_request_to_a_refused_address_is_blocked(
    site: Server, ctx: ToolContext[None]
) -> None:
    result = await call(ctx, action="navigate", url=site.url("/leaky"))
    assert not result.is_error, result.text
    text, note = result.text.split("\n\n[", 1)
    assert text.endswith("\n\nLeaky")
    head, *lines = note.removesuffix("]").splitlines()
    assert head == "The browser refused 2 request(s) the page made:"
    assert sorted(lines) == [
        f"- browser refused http://[::ffff:7f00:1]:{site.port}/pixel.png: ::ffff:127.0.0.1 is "
        "an IPv4-mapped IPv6 address. It does not fetch from private, local or cloud metadata "
        "addresses.",
        # an https request: the proxy sees the tunnel's host and port, and refuses the tunnel
        f"- browser refused https://denied.test:{site.port}: denied.test is on the denied "
        "domain list.",
    ]
    assert "/pixel.png" not in seen(site) and "/ok.png" in seen(site)


async def test_a_refused_url_is_an_error_before_anything_starts() -> None:
    fresh: ToolContext[None] = ToolContext(services={"web": WebConfig()})
    local = await call(fresh, action="navigate", url="http://127.0.0.1:9/")
    assert local.is_error and local.text.startswith(
        "browser refused http://127.0.0.1:9/: 127.0.0.1 is a loopback address."
    )
    scheme = await call(fresh, action="navigate", url="file:///etc/passwd")
    assert scheme.text == (
        "browser only fetches http:// and https:// URLs, not file:// (file:///etc/passwd)."
    )
    session = SESSION.get(fresh.services)
    assert session is not None and not session.started


def _chromium_descendants() -> list[int]:
    """Chromium processes started (through Playwright's driver) by this test process."""
    parents: dict[int, int] = {}
    names: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        pid = int(entry.name)
        names[pid] = stat[stat.index("(") + 1 : stat.rindex(")")]
        parents[pid] = int(stat[stat.rindex(")") + 2 :].split()[1])
    me, found = os.getpid(), []
    for pid, name in names.items():
        up, depth = parents.get(pid, 0), 0
        while up not in (0, 1, me) and depth < 20:
            up, depth = parents.get(up, 0), depth + 1
        if up == me and "chrom" in name:
            found.append(pid)
    return found


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_an_agent_asks_before_clicking_and_closes_its_browser(site: Server) -> None:
    asked: list[ApprovalRequest] = []

    async def approver(request: ApprovalRequest) -> ApprovalDecision:
        asked.append(request)
        # clicks on this site from now on, not clicks elsewhere nor typing
        return ApprovalDecision(decision="allow_always", scope="pattern")

    model = ScriptedModel(
        [
            [tool_use("browser", {"action": "navigate", "url": site.url("/")})],
            [tool_use("browser", {"action": "click", "selector": "#go"})],
            [tool_use("browser", {"action": "read", "selector": "#status"})],
            [tool_use("browser", {"action": "click", "selector": "#go"})],
            "It says clicked.",
        ]
    )
    agent = Agent.create(
        AgentTemplate(id="surfer", tools=["browser"]), model=model, approver=approver
    )
    WEB.set(agent.services, WebConfig(allow_private_networks=True, timeout=10))
    BROWSER.set(agent.services, BrowserConfig(timeout=10))
    before = set(_chromium_descendants())
    async with agent:
        await agent.send("Press Go and tell me what it says.")
        running = set(_chromium_descendants()) - before
        assert running, "no chromium process while the agent is open"
    results = [
        b
        for m in agent.messages
        if m.role == "user" and not isinstance(m.content, str)
        for b in m.content
        if isinstance(b, ToolResultContent)
    ]
    assert [r.is_error for r in results] == [False, False, False, False]
    assert results[2].text.endswith("\n\nclicked")
    # only the first click asked: navigating and reading are decided like web_fetch (kind
    # fetch), and the answer covered later clicks on the same site
    (question,) = asked
    assert question.input["action"] == "click"
    assert question.reason == "clicks '#go' on a live page (it may submit or change it)"
    assert question.description == f"Click '#go' on {site.url('/')}"
    assert question.pattern == f"click http://127.0.0.1:{site.port}"
    assert not set(_chromium_descendants()) & running
    session = SESSION.get(agent.services)
    assert session is not None and session.closed and not session.started


async def test_a_killed_browser_is_started_again_on_the_next_action(site: Server) -> None:
    import signal

    import anyio

    fresh: ToolContext[None] = ToolContext(
        services={
            "web": WebConfig(allow_private_networks=True, timeout=10),
            "browser": BrowserConfig(timeout=10),
        }
    )
    before = set(_chromium_descendants())
    try:
        first = await call(fresh, action="navigate", url=site.url("/"))
        assert not first.is_error, first.text
        session = SESSION.get(fresh.services)
        assert session is not None and session.running
        for pid in set(_chromium_descendants()) - before:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        with anyio.fail_after(10):
            # Playwright notices the lost browser in the session's own thread and loop
            while session.running:  # noqa: ASYNC110
                await anyio.sleep(0.05)
        again = await call(fresh, action="navigate", url=site.url("/"))
        assert not again.is_error, again.text
        assert again.text.startswith(f"URL: {site.url('/')}\nTitle: Kode test page")
        assert session.running
    finally:
        session = SESSION.get(fresh.services)
        if session is not None:
            session.close()
    assert not set(_chromium_descendants()) - before


async def test_https_goes_through_a_checked_tunnel(tmp_path: Path) -> None:
    """An https page: Chromium opens a CONNECT tunnel, which the proxy checks and relays to the
    checked address; TLS runs end to end inside it (the server sees the name as SNI)."""
    server_tls, _ = tls_contexts(tmp_path, "secure.test")
    secure: ToolContext[None] = ToolContext(
        services={
            "web": WebConfig(
                allow_private_networks=True,
                timeout=10,
                resolver=table_resolver({"secure.test": ["127.0.0.1"]}),
            ),
            # the test's own CA is not Chromium's: accept its certificate
            "browser": BrowserConfig(timeout=10, ignore_https_errors=True),
        }
    )
    routes = {"/": respond(200, "text/html", b"<html><title>Safe</title><p>Over TLS</p></html>")}
    try:
        with serve(routes, tls=server_tls) as srv:
            page = await call(secure, action="navigate", url=srv.url("/", host="secure.test"))
        assert not page.is_error, page.text
        assert page.text == f"URL: https://secure.test:{srv.port}/\nTitle: Safe\n\nOver TLS"
        assert "secure.test" in srv.sni
        assert srv.seen[0].headers["Host"] == f"secure.test:{srv.port}"
    finally:
        session = SESSION.get(secure.services)
        if session is not None:
            session.close()
