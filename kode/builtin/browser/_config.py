"""`BrowserConfig`, the settings of the ``browser`` tool, and `find_browser`, which picks Chromium.

This module owns what an application sets for the browser (through ``ctx.services["browser"]``)
and the lookup of the Chromium or Chrome executable Playwright drives. It imports neither
Playwright nor anything that starts a browser (see `kode.builtin.browser._session`); which URLs
the browser may reach is `kode.builtin.web.WebConfig`'s, shared with ``web_fetch``.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from kode.tools.errors import ToolError, ToolErrorType

__all__ = ["BROWSER_NAMES", "BrowserConfig", "find_browser"]

BROWSER_NAMES = ("chromium", "chromium-browser", "google-chrome")
"""The executables looked for on ``PATH``, in order, when neither `BrowserConfig.executable_path`
nor ``KODE_BROWSER_PATH`` names one."""


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

    Raises:
        ToolError: ``execution_failed`` when the named file is not an executable, or none is
            found (the message names the Debian package and the variable).
    """
    for named, where in (
        (config.executable_path, "BrowserConfig.executable_path"),
        (os.environ.get("KODE_BROWSER_PATH") or None, "KODE_BROWSER_PATH"),
    ):
        if named is None:
            continue
        path = Path(named).expanduser()
        if not path.is_file() or not os.access(path, os.X_OK):
            raise ToolError(
                f"{where} names {named}, which is not an executable file: point it at Chromium "
                "or Chrome (e.g. /usr/bin/chromium).",
                type=ToolErrorType.EXECUTION_FAILED,
                details={"reason": "no_browser", where: named},
            )
        return str(path)
    for name in BROWSER_NAMES:
        found = shutil.which(name)
        if found:
            return found
    raise ToolError(
        "browser needs Chromium or Chrome, and none was found (looked for KODE_BROWSER_PATH, "
        f"then {', '.join(BROWSER_NAMES)} on PATH): install it (apt-get install chromium on "
        "Debian and Ubuntu) or set KODE_BROWSER_PATH to its executable.",
        type=ToolErrorType.EXECUTION_FAILED,
        details={"reason": "no_browser"},
    )
