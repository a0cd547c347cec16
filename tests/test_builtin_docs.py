"""docs/builtin-tools.md is generated from the built-in tools by scripts/builtin_reference.py: it
must equal `render()`.

To rewrite the page from the code as it is now, run

    KODE_DOCS_UPDATE=1 python -m pytest tests/test_builtin_docs.py

and review the diff.
"""

from __future__ import annotations

import difflib
import importlib.util
import os
import sys
from pathlib import Path

import pytest

from kode.builtin import MODULES
from kode.extras import install_hint
from kode.testing.programs import missing_program, sandbox_here

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "builtin-tools.md"


def _load_generator() -> object:
    """scripts/builtin_reference.py, the page's generator (not part of the package)."""
    spec = importlib.util.spec_from_file_location(
        "builtin_reference", ROOT / "scripts" / "builtin_reference.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


render = _load_generator().render  # type: ignore[attr-defined]


def test_builtin_tools_page_is_generated_from_the_tools() -> None:
    from kode.builtin.browser import BrowserConfig, find_browser
    from kode.tools.errors import ToolError

    try:  # the browser's example runs in a real Chromium
        find_browser(BrowserConfig())
    except ToolError:  # pragma: no cover - .ci/run installs it
        pytest.skip(
            missing_program("chromium", package="chromium", needed_for="the browser example")
        )
    pytest.importorskip("playwright", reason=f"the browser example needs {install_hint('browser')}")
    support = sandbox_here()
    if not support.available:  # pragma: no cover - .ci/run has bubblewrap
        pytest.skip(
            f"code_run's example runs in the OS sandbox, and there is none here: {support.reason}"
        )
    expected = render()
    if os.environ.get("KODE_DOCS_UPDATE") == "1":
        PAGE.write_text(expected, encoding="utf-8")
    shown = PAGE.read_text(encoding="utf-8") if PAGE.exists() else ""
    diff = "".join(
        difflib.unified_diff(
            shown.splitlines(keepends=True),
            expected.splitlines(keepends=True),
            "docs/builtin-tools.md",
            "render()",
            n=1,
        )
    )
    assert shown == expected, (
        "docs/builtin-tools.md is out of date (KODE_DOCS_UPDATE=1 rewrites it):\n" + diff[:4000]
    )


def test_every_builtin_tool_is_on_the_page() -> None:
    import importlib

    from kode import Tool

    page = render()
    for short in MODULES:
        module = importlib.import_module(f"kode.builtin.{short}")
        exported = set(getattr(module, "__all__", ()))
        for name, value in vars(module).items():
            if isinstance(value, Tool) and (
                value.fn.__module__ == module.__name__ or name in exported
            ):
                assert f"### `{value.name}`" in page, value.name
                for name in value.input_schema.get("properties", {}):
                    assert f"| `{name}`" in page, f"{value.name}.{name}"
