"""A plugin registering a tool that application code already registered from the same function.

Only a plugin's own tool (the very tool its own package defined with a bare ``@define_tool``)
becomes the plugin's quietly; any other duplicate across sources keeps the first registration
and is a diagnostic and a log record.
"""

from __future__ import annotations

import importlib
import logging
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kode import ToolRegistry, define_tool, registry
from kode.registries import Diagnostic, ToolSource
from kode.registries.plugins import PluginApi, load_plugin

WriteFunc = Callable[[str, str], None]


@pytest.fixture
def write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[WriteFunc]:
    """Write modules under a directory on sys.path; forget the modules imported from it after."""
    monkeypatch.syspath_prepend(str(tmp_path))
    before = set(sys.modules)

    def write_module(relative: str, text: str) -> None:
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
        importlib.invalidate_caches()

    yield write_module
    for name in set(sys.modules) - before:
        del sys.modules[name]


APP_TOOLS = '''
    from kode import define_tool

    @define_tool(kind="read", groups=["group:notes"])
    def lookup(word: str) -> str:
        """Look a word up in the notes."""
        return word
'''


def test_a_plugin_registering_the_users_tool_keeps_the_users_registration(
    write: WriteFunc, isolated_registry: ToolRegistry, caplog: pytest.LogCaptureFixture
) -> None:
    write("kpa_app/__init__.py", "")
    write("kpa_app/tools.py", APP_TOOLS)
    write(
        "kpa_thief.py",
        """
        from kpa_app.tools import lookup

        def register(api):
            api.register_tool(lookup, optional=True)
        """,
    )
    importlib.import_module("kpa_app.tools")
    with caplog.at_level(logging.WARNING, logger="kode.registry"):
        report = load_plugin("kpa_thief", plugin_id="thief")
    meta = registry.meta("lookup")
    assert (meta.source, meta.plugin_id, meta.kind.value, meta.groups, meta.optional) == (
        ToolSource.USER,
        None,
        "read",
        ("group:notes",),
        False,
    )
    assert report.registered == []
    message = (
        "plugin tool 'lookup' skipped: the name is taken by kpa_app.tools.lookup "
        "(the tool registered first is kept)"
    )
    assert registry.diagnostics == [
        Diagnostic(level="warning", source=ToolSource.PLUGIN, plugin_id="thief", message=message)
    ]
    assert caplog.messages == [f"warning [thief]: {message}"]
    assert registry.resolve(["*"]).names == ["lookup"]  # not optional, so still resolved


def test_another_tool_made_from_the_same_function_is_a_diagnostic() -> None:
    tools = ToolRegistry("app")

    def lookup(word: str) -> str:
        """Look a word up."""
        return word

    define_tool(lookup, registry=tools, kind="read", groups=["group:notes"])

    def plugin(api: PluginApi) -> None:
        api.register_tool(define_tool(lookup, registry=None), optional=True)

    load_plugin(plugin, plugin_id="same-function", registry=tools)
    meta = tools.meta("lookup")
    assert (meta.source, meta.kind.value, meta.groups, meta.optional) == (
        ToolSource.USER,
        "read",
        ("group:notes",),
        False,
    )
    assert [d.message for d in tools.diagnostics] == [
        "plugin tool 'lookup' skipped: the name is taken by "
        f"{__name__}.test_another_tool_made_from_the_same_function_is_a_diagnostic.<locals>"
        ".lookup (the tool registered first is kept)"
    ]


def test_a_plugin_in_the_same_script_does_not_adopt_the_scripts_tool() -> None:
    tools = ToolRegistry("script")

    def lookup(word: str) -> str:
        """Look a word up."""
        return word

    lookup.__module__ = "__main__"  # as in a script or a notebook
    made = define_tool(lookup, registry=tools, kind="read")

    load_plugin(lambda api: api.register_tool(made), plugin_id="inline", registry=tools)
    assert tools.meta("lookup").source is ToolSource.USER
    assert len(tools.diagnostics) == 1


def test_registering_a_user_tool_again_as_core_is_a_diagnostic(
    isolated_registry: ToolRegistry,
) -> None:
    @define_tool(groups=["group:mine"])
    def grep(pattern: str) -> str:
        """Search."""
        return pattern

    registry.register(grep, source="core")
    assert registry.meta("grep").source is ToolSource.USER
    assert registry.meta("grep").groups == ("group:mine",)
    assert [d.message for d in registry.diagnostics] == [
        f"core tool 'grep' skipped: the name is taken by {__name__}."
        "test_registering_a_user_tool_again_as_core_is_a_diagnostic.<locals>.grep "
        "(the tool registered first is kept)"
    ]


def test_a_plugins_own_tool_defined_with_a_bare_decorator_becomes_the_plugins(
    write: WriteFunc, isolated_registry: ToolRegistry
) -> None:
    write(
        "kpa_own/__init__.py",
        '''
        from kode import define_tool
        from kpa_own.extra import radar

        @define_tool(kind="fetch")
        def forecast(city: str) -> str:
            """Tell the forecast."""
            return city

        def register(api):
            api.register_tool(forecast)
            api.register_tool(radar)
        ''',
    )
    write(
        "kpa_own/extra.py",
        '''
        from kode import define_tool

        @define_tool
        def radar(city: str) -> str:
            """Show the radar."""
            return city
        ''',
    )
    report = load_plugin("kpa_own", plugin_id="own")
    assert report.registered == ["forecast", "radar"]
    for name in ("forecast", "radar"):
        meta = registry.meta(name)
        assert (meta.source, meta.plugin_id) == (ToolSource.PLUGIN, "own")
    assert registry.diagnostics == []
