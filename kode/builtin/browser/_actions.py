"""What each ``browser`` action does with the page, and the text its result shows.

This module owns the five actions (navigate, click, type, read, screenshot) as they run in the
browser session's own event loop (`kode.builtin.browser._session`), and how Playwright's errors
and the proxy's refusals become error results. It does not start or stop the browser.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from kode.builtin._shared._ssrf import check_target
from kode.builtin.browser._proxy import REFUSED_HEADER
from kode.tools.errors import ToolError, ToolErrorType

if TYPE_CHECKING:
    from kode.builtin.browser._session import BrowserSession, Live

__all__ = ["Outcome", "check_url", "perform"]


@dataclass(kw_only=True, frozen=True, slots=True)
class Outcome:
    """What an action returns: text (or an image with a caption) and details."""

    text: str
    image: bytes | None = None
    details: dict[str, Any] = field(default_factory=dict)


async def check_url(session: BrowserSession, url: str) -> None:
    """Refuse `url` before the browser starts when the rules refuse it (the proxy would too).

    Raises:
        ToolError: as `kode.builtin._shared._ssrf.check_target` does, naming ``browser``.
    """
    try:
        split = urlsplit(url.strip())
        port = split.port
    except ValueError as exc:
        raise ToolError(
            f"{url!r} is not a valid URL: {exc}.",
            type=ToolErrorType.INVALID_TOOL_PARAMS,
            details={"url": url, "reason": "invalid_url"},
        ) from None
    scheme = split.scheme.lower()
    web = session.web
    await check_target(
        url,
        scheme=scheme,
        host=split.hostname or "",
        port=port or (443 if scheme == "https" else 80),
        allowed_domains=web.allowed_domains,
        denied_domains=web.denied_domains,
        allow_private=web.allow_private_networks,
        resolve=web.resolver,
        tool="browser",
    )


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _refused_navigation(live: Live, came_from: str | None = None) -> ToolError:
    message = live.blocked_navigation or "browser refused the page."
    if came_from:
        message += f" {came_from} redirected there."
    return ToolError(
        message, type=ToolErrorType.PERMISSION_DENIED, details={"reason": "refused_navigation"}
    )


def _blocked_lines(live: Live) -> list[str]:
    # Chromium may try a refused request again: each URL once
    refused = list({r.url: r for r in live.refusals()}.values())
    if not refused:
        return []
    shown = refused[:5]
    lines = ["", f"[The browser refused {len(refused)} request(s) the page made:"]
    lines += [f"- {r.message}" for r in shown]
    if len(refused) > len(shown):
        lines.append(f"- and {len(refused) - len(shown)} more")
    return [*lines[:-1], lines[-1] + "]"]


async def _header(live: Live) -> list[str]:
    page = live.page
    lines = [f"URL: {page.url}"]
    title = await page.title()
    if title:
        lines.append(f"Title: {title}")
    return lines


async def _settle(live: Live) -> None:
    """Wait for a navigation an action started to load (briefly; a page may never settle)."""
    try:
        await live.page.wait_for_load_state("load", timeout=live.config.timeout * 1000)
    except Exception:  # a page still loading is still a page to read
        pass


def _bounded(text: str, start: int, limit: int, what: str) -> tuple[list[str], dict[str, int]]:
    if start and start >= len(text):
        raise ToolError(
            f"start={start} is past the end of {what}, which has {len(text)} characters.",
            type=ToolErrorType.INVALID_TOOL_PARAMS,
        )
    end = min(start + limit, len(text))
    lines = [text[start:end] if text.strip() else "(no readable text)"]
    if start or end < len(text):
        more = (
            f' Call browser with action "read" and start={end} to read on.'
            if end < len(text)
            else ""
        )
        lines += ["", f"[Showing characters {start}-{end} of {len(text)}.{more}]"]
    return lines, {"start": start, "end": end, "total_chars": len(text)}


async def _text_of(live: Live, selector: str | None) -> str:
    page = live.page
    if selector is None:
        raw = await page.evaluate("() => document.body ? document.body.innerText : ''")
    else:
        raw = await page.locator(selector).first.inner_text(timeout=_element_ms(live))
    # innerText as the page shows it, without the spaces form fields leave at line ends
    return "\n".join(line.rstrip() for line in str(raw).splitlines()).strip()


def _element_ms(live: Live) -> float:
    return min(live.config.element_timeout, live.config.timeout) * 1000


def _element_error(action: str, selector: str, live: Live, exc: BaseException) -> ToolError:
    reason = _first_line(exc)
    if "Timeout" in type(exc).__name__ or "Timeout" in reason:
        reason = (
            f"no element matching it could be used within {live.config.element_timeout:g} s "
            "(none on the page, hidden, or disabled)"
        )
    return ToolError(
        f"browser could not {action} {selector!r} on {live.page.url}: {reason}",
        type=ToolErrorType.TOOL_ERROR,
        details={"action": action, "selector": selector, "url": live.page.url},
    )


async def _navigate(live: Live, url: str, start: int) -> Outcome:
    page = live.page
    try:
        response = await page.goto(url.strip(), wait_until="load")
    except Exception as exc:
        if live.blocked_navigation is not None or live.refusals():
            if live.blocked_navigation is None:
                live.blocked_navigation = live.refusals()[0].message
            raise _refused_navigation(live) from None
        raise ToolError(
            f"browser could not open {url}: {_first_line(exc)}",
            type=ToolErrorType.TOOL_ERROR,
            details={"url": url, "reason": "navigation"},
        ) from None
    redirects: list[str] = []
    if response is not None:
        request = response.request
        while request.redirected_from is not None:
            request = request.redirected_from
            redirects.insert(0, request.url)
        if response.headers.get(REFUSED_HEADER.lower()):
            if live.blocked_navigation is None:
                live.blocked_navigation = response.headers[REFUSED_HEADER.lower()]
            raise _refused_navigation(live, redirects[-1] if redirects else None)
    lines = await _header(live)
    if redirects:
        lines.insert(1, f"Redirected from: {redirects[0]}")
    status = response.status if response is not None else None
    if status is not None and not 200 <= status < 300:
        lines.append(f"Status: HTTP {status}")
    text, counts = _bounded(
        await _text_of(live, None), start, live.config.max_chars, f"the page {page.url}"
    )
    lines += ["", *text, *_blocked_lines(live)]
    details = {"url": url, "final_url": page.url, "status": status, "redirects": redirects}
    return Outcome(text="\n".join(lines), details={**details, **counts})


async def _click(live: Live, selector: str) -> Outcome:
    before = live.page.url
    try:
        await live.page.locator(selector).first.click(timeout=_element_ms(live))
    except Exception as exc:
        raise _element_error("click", selector, live, exc) from None
    await _settle(live)
    if live.blocked_navigation is not None:
        raise _refused_navigation(live)
    lines = [f"Clicked {selector!r}."]
    if live.page.url != before:
        lines.append(f"The page is now {live.page.url}.")
    lines += [*(await _header(live)), *_blocked_lines(live)]
    return Outcome(text="\n".join(lines), details={"selector": selector, "url": live.page.url})


async def _type(live: Live, selector: str, text: str, submit: bool) -> Outcome:
    field_ = live.page.locator(selector).first
    try:
        await field_.fill(text, timeout=_element_ms(live))
        if submit:
            await field_.press("Enter", timeout=_element_ms(live))
    except Exception as exc:
        raise _element_error("type into", selector, live, exc) from None
    if submit:
        await _settle(live)
        if live.blocked_navigation is not None:
            raise _refused_navigation(live)
    done = f"Typed {len(text)} characters into {selector!r}" + (
        " and pressed Enter." if submit else "."
    )
    lines = [done, *(await _header(live)), *_blocked_lines(live)]
    return Outcome(
        text="\n".join(lines),
        details={"selector": selector, "submitted": submit, "url": live.page.url},
    )


async def _read(live: Live, selector: str | None, start: int) -> Outcome:
    try:
        text = await _text_of(live, selector)
    except Exception as exc:
        if selector is None:
            raise
        raise _element_error("read", selector, live, exc) from None
    what = f"{selector!r} on {live.page.url}" if selector else f"the page {live.page.url}"
    shown, counts = _bounded(text, start, live.config.max_chars, what)
    lines = [*(await _header(live)), "", *shown]
    return Outcome(text="\n".join(lines), details={"url": live.page.url, **counts})


async def _screenshot(live: Live, selector: str | None, full_page: bool) -> Outcome:
    page = live.page
    note = ""
    try:
        if selector is not None:
            png = await page.locator(selector).first.screenshot(
                type="png", timeout=_element_ms(live)
            )
        elif full_page:
            height = int(await page.evaluate("() => document.documentElement.scrollHeight"))
            cap = live.config.max_screenshot_height
            if height > cap:
                width = int(await page.evaluate("() => document.documentElement.scrollWidth"))
                clip = {"x": 0, "y": 0, "width": max(width, 1), "height": cap}
                png = await page.screenshot(type="png", full_page=True, clip=clip)
                note = f" (the top {cap} of {height} pixels)"
            else:
                png = await page.screenshot(type="png", full_page=True)
        else:
            png = await page.screenshot(type="png")
    except Exception as exc:
        if selector is None:
            raise ToolError(
                f"browser could not take a screenshot of {page.url}: {_first_line(exc)}",
                type=ToolErrorType.TOOL_ERROR,
            ) from None
        raise _element_error("take a screenshot of", selector, live, exc) from None
    what = f"{selector!r} on {page.url}" if selector else page.url
    return Outcome(
        text=f"Screenshot of {what}{note}.",
        image=png,
        details={"url": page.url, "selector": selector, "full_page": full_page},
    )


async def perform(
    live: Live,
    *,
    action: str,
    url: str | None,
    selector: str | None,
    text: str | None,
    submit: bool,
    start: int,
    full_page: bool,
) -> Outcome:
    """Run one action on the page (in the session's loop, holding its lock)."""
    if action == "navigate":
        assert url is not None
        return await _navigate(live, url, start)
    if action == "click":
        assert selector is not None
        return await _click(live, selector)
    if action == "type":
        assert selector is not None and text is not None
        return await _type(live, selector, text, submit)
    if action == "read":
        return await _read(live, selector, start)
    return await _screenshot(live, selector, full_page)
