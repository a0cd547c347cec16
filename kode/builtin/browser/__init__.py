"""The ``browser`` tool (``group:browser``): a real, headless Chromium the model drives.

One tool, five actions: ``navigate`` to a URL (the result is the page's text, like
``web_fetch``'s), ``click`` an element, ``type`` into a field, ``read`` the page's text (or an
element's), and take a ``screenshot`` (an image result). Elements are named by Playwright
selectors: CSS (``#submit``, ``form input[name=q]``), ``text=Sign in`` or
``role=button[name="Save"]``.

Which pages it may load is the agent's `kode.builtin.web.WebConfig`, the same rules as
``web_fetch`` (see `kode.builtin._shared._ssrf`): Chromium is launched with every request sent
through a proxy of kode's, which checks the first navigation, every redirect, every request a
page makes (images, scripts, frames, ``fetch``) and every new host, and connects only to the
addresses it checked. A refused navigation is an error result; refused requests of a page that
loaded are named in the result. Service workers, downloads, QUIC and WebRTC's direct UDP are
off.

Each agent has one browser (one page), started on its first action and closed when the agent
closes (``Agent.aclose`` or ``async with``): cookies and the page stay between calls. Approval:
the tool is of kind ``fetch`` (navigating, reading and screenshots are decided like
``web_fetch``: they run without asking unless the agent's settings say otherwise), while
``click`` and ``type`` act on a live site as the user would (they may submit a form, post or
buy) and always ask for approval, unless the agent's settings allow the tool. The request says
what would be clicked or typed on which page, and an "always" answer for its pattern
(``click https://shop.example``) covers that action on that site only.

Needs Playwright (the extra ``browser``) and a Chromium or Chrome on the machine:
`BrowserConfig.executable_path`, else ``KODE_BROWSER_PATH``, else ``chromium``,
``chromium-browser`` or ``google-chrome`` on ``PATH`` (Debian: ``apt-get install chromium``).
Playwright's own browser download is not used.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from kode.builtin._shared._web_config import config_of as _web_config_of
from kode.builtin.browser._config import BROWSER_NAMES, BrowserConfig, find_browser
from kode.builtin.browser._session import BrowserSession
from kode.tools.context import ToolContext
from kode.tools.define import define_tool
from kode.tools.errors import ToolError, ToolErrorType
from kode.tools.invocation import CallDetails
from kode.tools.results import ToolResult, image_result, text_result
from kode.tools.services import ServiceKey

__all__ = [
    "BROWSER",
    "BROWSER_NAMES",
    "SESSION",
    "BrowserConfig",
    "BrowserSession",
    "browser",
    "find_browser",
]

Action = Literal["navigate", "click", "type", "read", "screenshot"]

BROWSER: ServiceKey[BrowserConfig] = ServiceKey(
    "browser", BrowserConfig, doc="kode.builtin.browser.BrowserConfig", passed_on=True
)
"""An agent's browser settings: ``BROWSER.set(agent.services, BrowserConfig(...))`` (its
sub-agents get them too)."""

SESSION: ServiceKey[BrowserSession] = ServiceKey(
    "browser_session", BrowserSession, doc="the agent's browser"
)
"""The agent's running browser (made on first use, closed with the agent)."""


def _session_of(ctx: ToolContext[Any]) -> BrowserSession:
    """The agent's `BrowserSession`, made (not started) on first use."""
    try:
        config = BROWSER.get(ctx.services) or BrowserConfig()
        session = SESSION.get(ctx.services)
    except TypeError as exc:
        raise ToolError(f"{exc}.", type=ToolErrorType.EXECUTION_FAILED) from None
    if session is None:
        session = BrowserSession(web=_web_config_of(ctx), config=config)
        SESSION.set(ctx.services, session)
    return session


def _approval(arguments: dict[str, Any]) -> bool | str | None:
    """``click`` and ``type`` act on a live site; the other actions are decided by kind."""
    action = arguments.get("action")
    if action == "click":
        return f"clicks {arguments.get('selector')!r} on a live page (it may submit or change it)"
    if action == "type":
        return f"types into {arguments.get('selector')!r} on a live page"
    return None


def _need(action: str, **given: Any) -> None:
    missing = [name for name, value in given.items() if value is None]
    if missing:
        raise ToolError(
            f"browser action {action!r} needs {' and '.join(missing)}.",
            type=ToolErrorType.INVALID_TOOL_PARAMS,
            details={"action": action, "missing": missing},
        )


@define_tool(
    kind="fetch", groups=["group:browser"], aliases=["browse"], requires_approval=_approval
)
async def browser(
    action: Action,
    ctx: ToolContext,
    url: Annotated[str, Field(min_length=1, max_length=8000)] | None = None,
    selector: Annotated[str, Field(min_length=1, max_length=1000)] | None = None,
    text: Annotated[str, Field(max_length=10_000)] | None = None,
    submit: bool = False,
    start: Annotated[int, Field(ge=0)] = 0,
    full_page: bool = False,
) -> ToolResult:
    """Drive a real web browser (headless Chromium): open pages, click, type, read, screenshot.

    One page stays open between calls (cookies too). Actions: "navigate" opens `url` and
    returns the page's text; "click" clicks the element `selector`; "type" fills the field
    `selector` with `text` (and presses Enter with `submit`); "read" returns the page's text
    (or the element `selector`'s); "screenshot" returns an image of the page (or the element).
    Selectors are CSS ("#login", "input[name=q]"), "text=Sign in" or 'role=button[name="Save"]'.
    Addresses inside private networks are refused, on every navigation and request.

    Args:
        action: "navigate", "click", "type", "read" or "screenshot".
        url: For "navigate": the absolute http:// or https:// URL to open.
        selector: For "click" and "type": the element; for "read" and "screenshot": only
            this element (default: the whole page).
        text: For "type": the text to put in the field (it replaces what is there).
        submit: For "type": press Enter afterwards (submits most forms).
        start: For "navigate" and "read": the character to start from, to read on.
        full_page: For "screenshot": the whole page, not only the visible part.
        ctx: Injected by kode (not shown to the model).
    """
    from kode.builtin.browser import _actions

    if action == "navigate":
        _need(action, url=url)
    elif action == "click":
        _need(action, selector=selector)
    elif action == "type":
        _need(action, selector=selector, text=text)
    session = _session_of(ctx)
    if action == "navigate":
        assert url is not None
        await _actions.check_url(session, url)
    outcome = await session.run(
        lambda live: _actions.perform(
            live,
            action=action,
            url=url,
            selector=selector,
            text=text,
            submit=submit,
            start=start,
            full_page=full_page,
        )
    )
    if outcome.image is not None:
        result = image_result(outcome.image, media_type="image/png", caption=outcome.text)
        return ToolResult(
            content=result.content, details={**outcome.details, **(result.details or {})}
        )
    return text_result(outcome.text, details=outcome.details)


@browser.describe
def _describe(arguments: dict[str, Any], ctx: ToolContext[Any] | None) -> CallDetails:
    """What a click or typing would do, on which page, for whoever approves it."""
    session = SESSION.get(ctx.services) if ctx is not None else None
    url = session.page_url if session is not None else None
    where = f" on {url}" if url else ""
    action, selector = arguments.get("action"), arguments.get("selector")
    if action == "click":
        description = f"Click {selector!r}{where}"
    elif action == "type":
        text = arguments.get("text") or ""
        enter = " and press Enter" if arguments.get("submit") else ""
        description = f"Type {text!r} into {selector!r}{where}{enter}"
    else:
        description = f"{str(action).capitalize()} {arguments.get('url') or url or ''}".rstrip()
    # An "always" answer covers this action on this site (scheme, host and port), not others.
    origin = None
    if url and url.startswith(("http://", "https://")):
        origin = "/".join(url.split("/", 3)[:3])
    return CallDetails(description=description, pattern=f"{action} {origin}" if origin else None)
