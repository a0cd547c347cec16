"""Sources and metadata: every registered tool says where it came from (`registry.meta`)."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from kode import Kind, ToolDefinitionError, ToolNotFoundError, ToolRegistry, define_tool, registry
from kode.registries import Diagnostic, ToolMeta, ToolSource
from kode.registries.plugins import load_plugin
from kode.tools.declared import declare_tool


def _tool(name: str, answer: str = "", **options: Any) -> Any:
    def fn() -> str:
        """Answer."""
        return answer or name

    return define_tool(fn, name=name, registry=None, **options)


def test_a_tool_defined_in_application_code_is_a_user_tool(
    isolated_registry: ToolRegistry,
) -> None:
    @define_tool(kind="read", groups=["group:fs"])
    def fs_read(path: str) -> str:
        """Read a file."""
        return path

    assert registry.meta("fs_read") == ToolMeta(
        name="fs_read",
        source=ToolSource.USER,
        optional=False,
        groups=("group:fs",),
        kind=Kind.READ,
    )


def test_a_tool_defined_in_a_kode_builtin_module_is_core() -> None:
    tools = ToolRegistry()

    def fs_list() -> str:
        """List."""
        return ""

    fs_list.__module__ = "kode.builtin.fs"  # what a built-in module's functions carry
    define_tool(fs_list, registry=tools)
    assert tools.meta("fs_list").source is ToolSource.CORE


def test_source_core_simulated_with_register() -> None:
    tools = ToolRegistry()
    tools.register(_tool("exec", kind="execute"), source="core")
    meta = tools.meta("exec")
    assert (meta.source, meta.kind, meta.plugin_id, meta.server) == (
        ToolSource.CORE,
        Kind.EXECUTE,
        None,
        None,
    )


def test_a_plugin_tool_carries_its_plugin_id_and_group_plugins() -> None:
    tools = ToolRegistry()

    def plugin(api: Any) -> None:
        api.register_tool(_tool("weather", groups=["group:web"]))
        api.register_tool(_tool("radar"), optional=True)

    report = load_plugin(plugin, plugin_id="weather-kit", registry=tools)
    assert report.loaded and report.registered == ["weather", "radar"]
    assert tools.meta("weather") == ToolMeta(
        name="weather",
        source=ToolSource.PLUGIN,
        plugin_id="weather-kit",
        groups=("group:web", "group:plugins"),
    )
    assert tools.meta("radar").optional is True
    assert tools.meta("radar").groups == ("group:plugins",)


def test_register_with_a_plugin_id_means_source_plugin() -> None:
    tools = ToolRegistry()
    tools.register(_tool("ping"), plugin_id="net")
    meta = tools.meta("ping")
    assert (meta.source, meta.plugin_id, meta.groups) == (
        ToolSource.PLUGIN,
        "net",
        ("group:plugins",),
    )


def test_an_mcp_tool_carries_its_server_and_remote_name() -> None:
    tools = ToolRegistry()
    tools.register(
        declare_tool("mcp__github__create_issue", description="Open an issue."),
        source="mcp",
        server="github",
        remote_name="create_issue",
    )
    meta = tools.meta("mcp__github__create_issue")
    assert (meta.source, meta.server, meta.remote_name, meta.plugin_id) == (
        ToolSource.MCP,
        "github",
        "create_issue",
        None,
    )


def test_a_discovered_source_is_recorded() -> None:
    tools = ToolRegistry()
    tools.register(declare_tool("lint"), source=ToolSource.DISCOVERED, groups=["discovered"])
    assert tools.meta("lint").source is ToolSource.DISCOVERED
    assert tools.meta("lint").groups == ("group:discovered",)


def test_an_unknown_source_is_refused() -> None:
    tools = ToolRegistry()
    with pytest.raises(ValueError, match="'elsewhere' is not a valid ToolSource"):
        tools.register(_tool("x"), source="elsewhere")
    assert "x" not in tools


def test_register_overrides_optional_and_adds_groups() -> None:
    tools = ToolRegistry()
    tools.register(_tool("peek", groups=["group:fs"]), optional=True, groups=[" Web ", "group:fs"])
    meta = tools.meta("peek")
    assert meta.optional is True
    assert meta.groups == ("group:fs", "group:web")
    with pytest.raises(TypeError, match="groups must be a list of group names, got the string"):
        tools.register(_tool("poke"), groups="group:fs")


def test_meta_of_an_unknown_name_suggests() -> None:
    tools = ToolRegistry()
    tools.register(_tool("fs_read"))
    with pytest.raises(ToolNotFoundError, match=r"No tool named 'fs_raed' is registered\. Did"):
        tools.meta("fs_raed")
    assert tools.meta(" FS_READ ").name == "fs_read"


# --- client tools ---------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_client_tool_yields_a_pending_result_with_its_input() -> None:
    tools = ToolRegistry()
    pick = declare_tool(
        "pick_file",
        description="Ask the user to pick a file.",
        input_schema={
            "type": "object",
            "properties": {"title": {"type": "string"}, "multiple": {"type": "boolean"}},
            "required": ["title"],
        },
    )
    assert pick.handler is None
    tools.register(pick, source="client")
    assert tools.meta("pick_file").source is ToolSource.CLIENT

    result = await tools.get("pick_file").run({"title": "Open", "multiple": False})
    assert result.pending is True
    assert result.is_error is False
    assert result.details == {"tool": "pick_file", "input": {"title": "Open", "multiple": False}}
    assert result.text == "Tool 'pick_file' is executed by the client; waiting for it."


@pytest.mark.anyio
async def test_a_client_tool_still_validates_before_it_is_handed_out() -> None:
    pick = declare_tool(
        "pick_file",
        input_schema={"type": "object", "properties": {"title": {"type": "string"}}},
    )
    result = await pick.run({"title": 3})
    assert result.is_error and not result.pending
    assert result.text == (
        "Invalid arguments for tool 'pick_file': 'title' should be of type string, got 3. "
        "Fix the arguments and call the tool again."
    )


# --- one name, several sources ----------------------------------------------------------------


def test_a_later_source_with_a_taken_name_is_skipped_with_a_diagnostic(
    caplog: pytest.LogCaptureFixture,
) -> None:
    tools = ToolRegistry()
    client = declare_tool("search")
    tools.register(client, source="client")
    with caplog.at_level(logging.WARNING, logger="kode.registry"):
        tools.register(declare_tool("search"), source="mcp", server="github")
    assert tools.get("search") is client
    message = (
        "mcp tool 'search' skipped: the name is taken by a client tool "
        "(the tool registered first is kept)"
    )
    assert tools.diagnostics == [
        Diagnostic(level="warning", source=ToolSource.MCP, plugin_id=None, message=message)
    ]
    assert [(r.name, r.levelno, r.getMessage()) for r in caplog.records] == [
        ("kode.registry", logging.WARNING, f"warning: {message}")
    ]


def test_one_shared_tool_registered_by_two_owners_is_a_conflict() -> None:
    tools = ToolRegistry()
    shared = _tool("shared")
    tools.register(shared, source="mcp", server="a")
    tools.register(shared, source="mcp", server="b")
    assert tools.meta("shared").server == "a"
    assert [d.message for d in tools.diagnostics] == [
        "mcp tool 'shared' skipped: the name is taken by MCP server 'a' "
        "(the tool registered first is kept)"
    ]


def test_the_same_owner_registering_again_refreshes_quietly() -> None:
    tools = ToolRegistry()
    tools.register(declare_tool("ask", description="v1"), source="client")
    tools.register(declare_tool("ask", description="v2"), source="client")
    assert tools.get("ask").description == "v2"
    assert tools.diagnostics == []


def test_a_user_tool_taking_a_plugin_tools_name_is_an_error() -> None:
    tools = ToolRegistry("app")
    tools.register(_tool("weather"), plugin_id="wx")

    def weather() -> str:
        """Mine."""
        return ""

    with pytest.raises(ToolDefinitionError, match="already registered in 'app' by plugin 'wx'"):
        define_tool(weather, registry=tools)
    assert tools.meta("weather").plugin_id == "wx"


def test_declared_tools_from_two_handlers_are_two_definitions() -> None:
    tools = ToolRegistry()

    async def first(arguments: dict[str, Any], ctx: Any) -> str:
        return "1"

    async def second(arguments: dict[str, Any], ctx: Any) -> str:
        return "2"

    tools.register(declare_tool("echo", handler=first))
    tools.register(declare_tool("echo", handler=first))  # the same declaration again: fine
    with pytest.raises(ToolDefinitionError, match="the tool name 'echo' is already registered"):
        tools.register(declare_tool("echo", handler=second))
    assert tools.get("echo").run_sync().text == "1"
