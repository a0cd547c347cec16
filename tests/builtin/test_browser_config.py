"""What the browser tool says before any browser starts: which executable it picks, and the
errors for a missing browser, a missing Playwright and bad settings (no Chromium needed)."""

from __future__ import annotations

import stat
import sys
from pathlib import Path

import pytest

from kode import ToolContext
from kode.builtin.browser import SESSION, BrowserConfig, browser, find_browser
from kode.builtin.web import WebConfig
from kode.extras import install_hint
from kode.registries import ToolSource, registry
from kode.tools.errors import ToolError

pytestmark = pytest.mark.anyio


def _executable(path: Path) -> Path:
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_the_lookup_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    on_path = tmp_path / "bin"
    on_path.mkdir()
    chrome = _executable(on_path / "google-chrome")
    monkeypatch.setenv("PATH", str(on_path))
    monkeypatch.delenv("KODE_BROWSER_PATH", raising=False)
    assert find_browser(BrowserConfig()) == str(chrome)
    chromium = _executable(on_path / "chromium")
    assert find_browser(BrowserConfig()) == str(chromium)  # chromium comes first
    named = _executable(tmp_path / "my-chrome")
    monkeypatch.setenv("KODE_BROWSER_PATH", str(named))
    assert find_browser(BrowserConfig()) == str(named)
    configured = _executable(tmp_path / "configured")
    assert find_browser(BrowserConfig(executable_path=str(configured))) == str(configured)


def test_no_browser_names_the_package_and_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("KODE_BROWSER_PATH", raising=False)
    with pytest.raises(ToolError) as none:
        find_browser(BrowserConfig())
    assert none.value.message == (
        "browser needs Chromium or Chrome, and none was found (looked for KODE_BROWSER_PATH, "
        "then chromium, chromium-browser, google-chrome on PATH): install it (apt-get install "
        "chromium on Debian and Ubuntu) or set KODE_BROWSER_PATH to its executable."
    )
    monkeypatch.setenv("KODE_BROWSER_PATH", str(tmp_path / "nothing"))
    with pytest.raises(ToolError) as wrong:
        find_browser(BrowserConfig())
    assert wrong.value.message == (
        f"KODE_BROWSER_PATH names {tmp_path / 'nothing'}, which is not an executable file: "
        "point it at Chromium or Chrome (e.g. /usr/bin/chromium)."
    )


async def test_the_tool_answers_with_the_lookup_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("KODE_BROWSER_PATH", raising=False)
    ctx: ToolContext[None] = ToolContext(services={"web": WebConfig()})
    result = await browser.run({"action": "read"}, ctx)
    assert result.is_error and "apt-get install chromium" in result.text
    session = SESSION.get(ctx.services)
    assert session is not None and not session.started


async def test_without_playwright_the_result_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "playwright", None)
    monkeypatch.setitem(sys.modules, "playwright.async_api", None)
    fake = _executable(tmp_path / "chromium")
    ctx: ToolContext[None] = ToolContext(
        services={"web": WebConfig(), "browser": BrowserConfig(executable_path=str(fake))}
    )
    result = await browser.run({"action": "read"}, ctx)
    assert result.is_error
    assert result.text == (
        "browser needs the optional dependency playwright, which is not installed "
        f"(playwright.async_api is missing): {install_hint('browser')}."
    )


async def test_arguments_an_action_needs() -> None:
    ctx: ToolContext[None] = ToolContext()
    for arguments, missing in (
        ({"action": "navigate"}, "url"),
        ({"action": "click"}, "selector"),
        ({"action": "type", "text": "x"}, "selector"),
    ):
        result = await browser.run(arguments, ctx)
        assert result.is_error
        assert result.text == f"browser action {arguments['action']!r} needs {missing}."


def test_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="width must be a positive number, got 0"):
        BrowserConfig(width=0)


def test_the_browser_is_a_core_tool_in_its_own_group() -> None:
    meta = registry.meta("browser")
    assert meta.source is ToolSource.CORE
    assert meta.groups == ("group:browser",) and meta.kind == "fetch"
    assert "browse" in meta.aliases
