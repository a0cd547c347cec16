"""`BrowserConfig`, the settings of the ``browser`` tool, and `find_browser`, which picks Chromium.

This module owns what an application sets for the browser (through ``ctx.services["browser"]``)
and the lookup of the Chromium or Chrome executable Playwright drives (from trusted places only,
through `kode.trust.executables`). It imports neither
Playwright nor anything that starts a browser (see `kode.builtin.browser._session`); which URLs
the browser may reach is `kode.builtin.web.WebConfig`'s, shared with ``web_fetch``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from kode.tools.errors import ToolError, ToolErrorType
from kode.trust import executables
from kode.trust.executables import BROWSER_NAMES

__all__ = ["BROWSER_NAMES", "BrowserConfig", "find_browser"]


@dataclass(kw_only=True, frozen=True, slots=True)
class BrowserConfig:
    """How the ``browser`` tool behaves for one agent.

    Put one in an agent's services with ``kode.builtin.browser.BROWSER.set(agent.services,
    config)``; without one the defaults apply. Which pages the browser may load (domain lists,
    private networks, the resolver) is the agent's `kode.builtin.web.WebConfig`, the same as for
    ``web_fetch``.

    Example:
        ```python
        from kode.builtin.browser import BrowserConfig

        services = {"browser": BrowserConfig(width=1024, height=768, timeout=15)}
        ```
    """

    executable_path: str | None = None
    """The Chromium or Chrome executable (default: ``KODE_BROWSER_PATH``, then ``chromium``,
    ``chromium-browser`` or ``google-chrome`` on ``PATH``)."""
    timeout: float = 30.0
    """Seconds one action may take (a navigation, a click, typing, reading, a screenshot)."""
    element_timeout: float = 5.0
    """Seconds ``click``, ``type``, ``read`` and ``screenshot`` wait for their element to be
    there and usable (visible, enabled) before answering that it is not."""
    width: int = 1280
    """The viewport's width in pixels."""
    height: int = 800
    """The viewport's height in pixels."""
    max_chars: int = 20_000
    """The most characters of page text one result shows (``start`` reads on)."""
    max_screenshot_height: int = 8_000
    """The most pixels of a full-page screenshot's height; a longer page is cut there."""
    ignore_https_errors: bool = False
    """Accept any TLS certificate (a test server's, an intranet's private CA): never for the
    open web."""

    def __post_init__(self) -> None:
        problems = []
        for name in (
            "timeout",
            "element_timeout",
            "width",
            "height",
            "max_chars",
            "max_screenshot_height",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                problems.append(f"{name} must be a positive number, got {value!r}")
        if problems:
            raise ValueError("BrowserConfig: " + "; ".join(problems))


def find_browser(config: BrowserConfig) -> str:
    """The browser executable to launch: `config`'s, ``KODE_BROWSER_PATH``, or one on ``PATH``.

    It is found from trusted places only (`kode.trust.executables`): one under the working
    directory (the workspace a ``kode run`` started in; an activated in-project ``.venv/bin``),
    or that another user could change, is refused, whether named by a setting or on ``PATH``.

    Raises:
        ToolError: ``execution_failed`` when the named file is not an executable, when it or
            every one found was refused (the message says why), or none is found (the
            message names the Debian package and the variable).
    """
    settings = [
        (named, where)
        for named, where in (
            (config.executable_path, "BrowserConfig.executable_path"),
            (os.environ.get("KODE_BROWSER_PATH") or None, "KODE_BROWSER_PATH"),
        )
        if named is not None
    ]
    for named, where in settings[:1]:
        path = Path(named).expanduser()
        if not path.is_file() or not os.access(path, os.X_OK):
            raise ToolError(
                f"{where} names {named}, which is not an executable file: point it at Chromium "
                "or Chrome (e.g. /usr/bin/chromium).",
                type=ToolErrorType.EXECUTION_FAILED,
                details={"reason": "no_browser", where: named},
            )
    found = executables.browser([(str(Path(n).expanduser()), w) for n, w in settings[:1]])
    if found.path is not None:
        return found.path
    if found.refused:
        refused = "; ".join(f"{r.path} ({r.source}): {r.reason}" for r in found.refused)
        raise ToolError(
            f"browser refused to run {refused}. Install Chromium where only an administrator "
            "can change it (apt-get install chromium on Debian and Ubuntu), or point "
            "KODE_BROWSER_PATH at such a one.",
            type=ToolErrorType.EXECUTION_FAILED,
            details={"reason": "refused_browser", "refused": [r.path for r in found.refused]},
        )
    raise ToolError(
        "browser needs Chromium or Chrome, and none was found (looked for KODE_BROWSER_PATH, "
        f"then {', '.join(BROWSER_NAMES)} on PATH): install it (apt-get install chromium on "
        "Debian and Ubuntu) or set KODE_BROWSER_PATH to its executable.",
        type=ToolErrorType.EXECUTION_FAILED,
        details={"reason": "no_browser"},
    )
