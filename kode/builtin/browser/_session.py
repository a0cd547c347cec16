"""One agent's browser: Chromium driven by Playwright in a thread of its own, behind the proxy.

This module owns `BrowserSession`, what the ``browser`` tool keeps in the agent's services:
it starts on the first action (a `CheckingProxy`, Playwright, Chromium launched headless with
every request sent through the proxy, one page) and is closed with the agent
(``Agent.aclose`` closes every service that has ``aclose``). Playwright's async API runs only
on asyncio and stays with the loop it started in, so the session runs it in an event loop of
its own, in a daemon thread, and each action is handed to that loop: the tool works the same
from asyncio, trio and ``run_sync``. It does not decide what the tool returns (see
`kode.builtin.browser`).

Needs Playwright (``kode-sdk[browser]``) and a Chromium or Chrome on the machine.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import anyio
from anyio.from_thread import BlockingPortal

from kode.builtin._shared._web_config import WebConfig
from kode.builtin.browser._config import BrowserConfig, find_browser
from kode.builtin.browser._proxy import REFUSED_HEADER, CheckingProxy, Refusal
from kode.extras import install_hint
from kode.tools.errors import ToolError, ToolErrorType
from kode.trust.processes import helper_environment

__all__ = ["BrowserSession", "Live"]

T = TypeVar("T")

_log = logging.getLogger(__name__)

# Chromium talks to Google on its own (updates, sign-in) and WebRTC and QUIC use UDP, which no
# HTTP proxy sees: none of that while an agent drives it.
_ARGS = (
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
    "--webrtc-ip-handling-policy=disable_non_proxied_udp",
    "--disable-features=AutofillServerCommunication,OptimizationHints,MediaRouter,Translate",
)
# What Chromium needs of kode's environment (its home, temporary and runtime directories, fonts).
_BROWSER_ENVIRONMENT = (
    "HOME",
    "TMPDIR",
    "XDG_RUNTIME_DIR",
    "XDG_CONFIG_HOME",
    "XDG_CACHE_HOME",
    "XDG_DATA_HOME",
    "FONTCONFIG_FILE",
    "FONTCONFIG_PATH",
)


@dataclass(kw_only=True, slots=True)
class Live:
    """The running browser, as the actions in the session's loop see it."""

    page: Any
    """The Playwright page."""
    browser: Any
    """The Playwright browser (Chromium)."""
    proxy: CheckingProxy
    """The proxy every request goes through."""
    config: BrowserConfig
    """The browser's settings."""
    lock: anyio.Lock
    """Held by the running action: one at a time."""
    blocked_navigation: str | None = None
    """Why the page's last navigation was refused, during the current action."""
    refusals_before: int = 0
    """How many requests the proxy had refused when the current action began."""
    requested: set[str] = field(default_factory=set)
    """The URLs the page asked for during the current action (Playwright's request events)."""
    closers: list[Callable[[], Awaitable[Any]]] = field(default_factory=list)

    def refusals(self) -> list[Refusal]:
        """The page's requests refused during the current action.

        Only requests the page made count: Chromium's own (a favicon for the last page) are
        refused the same way but not reported.
        """
        new = self.proxy.refused_total - self.refusals_before
        recent = list(self.proxy.refusals)[-new:] if new > 0 else []
        return [
            r
            for r in recent
            if r.url in self.requested or any(u.startswith(r.url + "/") for u in self.requested)
        ]


class _Gone(Exception):
    """The browser is no longer connected (Chromium crashed or was killed)."""


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class BrowserSession:
    """One agent's browser, started on first use and closed with the agent.

    Args:
        web: Which URLs it may load (the agent's `WebConfig`, shared with ``web_fetch``).
        config: Its settings.
    """

    def __init__(self, *, web: WebConfig, config: BrowserConfig) -> None:
        self.web = web
        """Which URLs it may load."""
        self.config = config
        """Its settings."""
        self._lock = threading.Lock()
        self._portal: BlockingPortal | None = None
        self._thread: threading.Thread | None = None
        self._live: Live | None = None
        self._closed = False

    @property
    def started(self) -> bool:
        """Whether a browser was started (and not closed or found stopped since)."""
        return self._live is not None

    @property
    def running(self) -> bool:
        """Whether a browser is started and still connected.

        A browser that crashed or was killed is not; the next action starts a new one.
        """
        live = self._live
        return live is not None and bool(live.browser.is_connected())

    @property
    def page_url(self) -> str | None:
        """The URL of the page now open, or `None` before the first action."""
        live = self._live
        return str(live.page.url) if live is not None else None

    @property
    def closed(self) -> bool:
        """Whether the session was closed (it cannot start again)."""
        return self._closed

    async def run(self, action: Callable[[Live], Awaitable[T]]) -> T:
        """Run `action` with the browser (started first if needed), one action at a time.

        Raises:
            ToolError: the browser cannot start, or the action failed.
        """
        for attempt in range(2):
            portal = await anyio.to_thread.run_sync(self._start)
            future = portal.start_task_soon(self._locked, action)
            try:
                return await anyio.to_thread.run_sync(future.result, abandon_on_cancel=True)
            except _Gone:
                if attempt:
                    raise ToolError(
                        "The browser stopped as soon as it started; try again later.",
                        type=ToolErrorType.EXECUTION_FAILED,
                    ) from None
                # Chromium crashed or was killed: a new one, with a new page (cookies are lost)
                await anyio.to_thread.run_sync(self._shut, False)
            finally:
                if not future.done():
                    future.cancel()
        raise AssertionError("unreachable")  # pragma: no cover

    async def _locked(self, action: Callable[[Live], Awaitable[T]]) -> T:
        live = self._live
        if live is None or not live.browser.is_connected():
            raise _Gone
        async with live.lock:
            live.blocked_navigation = None
            live.refusals_before = live.proxy.refused_total
            live.requested.clear()
            with anyio.fail_after(self.config.timeout * 2 + 5):  # a backstop to Playwright's own
                return await action(live)

    # --- starting and closing ----------------------------------------------------------------

    def _start(self) -> BlockingPortal:
        with self._lock:
            if self._closed:
                raise ToolError(
                    "The agent's browser was closed with the agent; start a new agent to browse.",
                    type=ToolErrorType.EXECUTION_FAILED,
                )
            if self._portal is not None:
                return self._portal
            executable = find_browser(self.config)
            portal = self._start_loop()
            try:
                proxy = CheckingProxy(self.web, tool="browser")
                _, port = portal.start_task(proxy.serve)  # stopped with the loop
                self._live = portal.call(self._launch, executable, proxy, port)
            except BaseException:
                self._stop_loop(portal)
                raise
            self._portal = portal
            return portal

    def _start_loop(self) -> BlockingPortal:
        ready: queue.Queue[BlockingPortal | BaseException] = queue.Queue()

        async def loop() -> None:
            async with BlockingPortal() as portal:
                ready.put(portal)
                await portal.sleep_until_stopped()

        def main() -> None:
            try:
                anyio.run(loop, backend="asyncio")
            except BaseException as exc:  # pragma: no cover - the loop failed to start
                ready.put(exc)

        # A daemon thread: an agent never closed does not keep the interpreter from exiting
        # (Playwright's driver, and Chromium with it, end when their pipe to this process does).
        self._thread = threading.Thread(target=main, name="kode-browser", daemon=True)
        self._thread.start()
        got = ready.get()
        if isinstance(got, BaseException):  # pragma: no cover
            raise got
        return got

    def _stop_loop(self, portal: BlockingPortal) -> None:
        try:
            portal.call(portal.stop, True)
        except Exception:  # pragma: no cover - already stopped
            pass
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None

    async def _launch(self, executable: str, proxy: CheckingProxy, port: int) -> Live:
        try:
            from playwright.async_api import Error as PlaywrightError
            from playwright.async_api import async_playwright
        except ImportError as exc:
            raise ToolError(
                "browser needs the optional dependency playwright, which is not installed "
                f"({exc.name} is missing): {install_hint('browser')}.",
                type=ToolErrorType.EXECUTION_FAILED,
                details={"missing": exc.name},
            ) from None
        closers: list[Callable[[], Awaitable[Any]]] = []
        try:
            playwright = await async_playwright().start()
            closers.append(playwright.stop)
            browser = await playwright.chromium.launch(
                executable_path=executable,
                headless=True,
                proxy={"server": f"http://127.0.0.1:{port}"},
                args=list(_ARGS),
                timeout=self.config.timeout * 1000,
                # A scrubbed environment (kode.trust.processes): a page that takes over the
                # renderer finds no API key in the browser's environment.
                env={**helper_environment(allow=_BROWSER_ENVIRONMENT)},
            )
            closers.append(browser.close)
            context = await browser.new_context(
                viewport={"width": self.config.width, "height": self.config.height},
                accept_downloads=False,
                service_workers="block",
                ignore_https_errors=self.config.ignore_https_errors,
            )
            closers.append(context.close)
            page = await context.new_page()
        except PlaywrightError as exc:
            await _close_all(closers)
            raise ToolError(
                f"browser could not start {executable}: {_first_line(exc)}",
                type=ToolErrorType.EXECUTION_FAILED,
                details={"reason": "launch", "executable": executable},
            ) from None
        except BaseException:
            await _close_all(closers)
            raise
        page.set_default_timeout(self.config.timeout * 1000)
        live = Live(
            page=page,
            browser=browser,
            proxy=proxy,
            config=self.config,
            lock=anyio.Lock(),
            closers=closers,
        )
        _watch_navigations(live)
        return live

    def close(self) -> None:
        """Close the browser and its thread (it cannot start again); safe to call twice."""
        self._shut(True)

    def _shut(self, final: bool) -> None:
        with self._lock:
            self._closed = self._closed or final
            portal, live = self._portal, self._live
            self._portal = self._live = None
        if portal is None:
            return
        try:
            if live is not None:
                portal.call(_close_all, live.closers)
        except Exception as exc:  # the browser may already be gone
            _log.warning("closing the browser failed", exc_info=exc)
        finally:
            self._stop_loop(portal)

    async def aclose(self) -> None:
        """Close the browser (``Agent.aclose`` calls this)."""
        await anyio.to_thread.run_sync(self.close)


async def _close_all(closers: list[Callable[[], Awaitable[Any]]]) -> None:
    for closer in reversed(closers):
        try:
            await closer()
        except Exception as exc:
            _log.debug("closing a browser part failed", exc_info=exc)
    closers.clear()


def _watch_navigations(live: Live) -> None:
    """Note in `live` when the page's own navigation was refused by the proxy."""
    page = live.page

    def on_response(response: Any) -> None:
        request = response.request
        if request.is_navigation_request() and request.frame == page.main_frame:
            why = response.headers.get(REFUSED_HEADER.lower())
            if why:
                refused = [r for r in live.refusals() if r.url == response.url]
                live.blocked_navigation = refused[-1].message if refused else why

    def on_failed(request: Any) -> None:
        if request.is_navigation_request() and request.frame == page.main_frame:
            refused = live.refusals()
            if refused:
                origin = request.url.split("/", 3)[:3]
                same = [r for r in refused if r.url.split("/", 3)[:3] == origin]
                live.blocked_navigation = (same or refused)[-1].message

    page.on("request", lambda request: live.requested.add(request.url))
    page.on("response", on_response)
    page.on("requestfailed", on_failed)
