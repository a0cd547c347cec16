"""resolve(): the tools an agent gets, in a stable order, with an account of everything else."""

from __future__ import annotations

from typing import Any

import pytest

from kode import ToolRegistry, define_tool
from kode.registries import (
    Exclusion,
    Resolution,
    ToolFactoryContext,
    ToolPolicy,
    ToolSource,
    UnmatchedEntry,
)
from kode.registries.plugins import load_plugin
from kode.tools.declared import declare_tool


def _tool(name: str, **options: Any) -> Any:
    def fn() -> str:
        """Answer."""
        return name

    return define_tool(fn, name=name, registry=None, **options)


@pytest.fixture
def tools() -> ToolRegistry:
    """One or more tools of every source, registered in a scrambled order."""
    reg = ToolRegistry()
    reg.register(declare_tool("ask_user"), source="client")
    reg.register(declare_tool("mcp__linear__create_issue"), source="mcp", server="linear")
    reg.register(_tool("zeta_user_tool"))
    reg.register(declare_tool("mcp__github__list_prs"), source="mcp", server="github")
    reg.register(declare_tool("lint"), source="discovered")
    load_plugin(lambda api: api.register_tool(_tool("forecast")), plugin_id="weather", registry=reg)
    reg.register(declare_tool("mcp__github__create_issue"), source="mcp", server="github")
    reg.register(_tool("fs_read", groups=["group:fs"]), source="core")
    reg.register(_tool("alpha_user_tool"))
    reg.register(_tool("exec", groups=["group:runtime"], aliases=["bash"]), source="core")
    return reg


ORDER = [
    "exec",  # core, by name
    "fs_read",
    "alpha_user_tool",  # user
    "zeta_user_tool",
    "forecast",  # plugin
    "lint",  # discovered
    "mcp__github__create_issue",  # mcp, by server then name
    "mcp__github__list_prs",
    "mcp__linear__create_issue",
    "ask_user",  # client
]


def test_the_order_is_stable_core_user_plugin_discovered_mcp_by_server_client(
    tools: ToolRegistry,
) -> None:
    resolution = tools.resolve()
    assert resolution.names == ORDER
    assert [resolution.metas[n].source for n in resolution.names] == [
        ToolSource.CORE,
        ToolSource.CORE,
        ToolSource.USER,
        ToolSource.USER,
        ToolSource.PLUGIN,
        ToolSource.DISCOVERED,
        ToolSource.MCP,
        ToolSource.MCP,
        ToolSource.MCP,
        ToolSource.CLIENT,
    ]
    # the template's own order does not matter
    assert tools.resolve(list(reversed(ORDER))).names == ORDER
    assert tools.resolve(["*"]).names == ORDER


def test_a_template_naming_a_whole_mcp_server(tools: ToolRegistry) -> None:
    resolution = tools.resolve(["mcp__github__*", "exec"])
    assert resolution.names == ["exec", "mcp__github__create_issue", "mcp__github__list_prs"]
    assert resolution.metas["mcp__github__list_prs"].server == "github"
    assert resolution.unmatched == []
    assert tools.resolve(["mcp__*__create_issue"]).names == [
        "mcp__github__create_issue",
        "mcp__linear__create_issue",
    ]
    denied = tools.resolve(["mcp__*"], ToolPolicy(deny=["mcp__linear__*"]))
    assert denied.names == ["mcp__github__create_issue", "mcp__github__list_prs"]


def test_excluded_lists_everything_left_out_with_the_reason(tools: ToolRegistry) -> None:
    resolution = tools.resolve(["group:fs", "bash", "forecast"], ToolPolicy(deny=["forecast"]))
    assert resolution.names == ["exec", "fs_read"]
    assert resolution.excluded == [
        Exclusion(name="alpha_user_tool", reason="not listed by the template"),
        Exclusion(name="zeta_user_tool", reason="not listed by the template"),
        Exclusion(name="forecast", reason="policy: denied by 'forecast'"),
        Exclusion(name="lint", reason="not listed by the template"),
        Exclusion(name="mcp__github__create_issue", reason="not listed by the template"),
        Exclusion(name="mcp__github__list_prs", reason="not listed by the template"),
        Exclusion(name="mcp__linear__create_issue", reason="not listed by the template"),
        Exclusion(name="ask_user", reason="not listed by the template"),
    ]
    # without a template nothing is "not listed"
    assert tools.resolve(None, ToolPolicy(deny=["forecast"])).excluded == [
        Exclusion(name="forecast", reason="policy: denied by 'forecast'")
    ]


def test_unmatched_template_entries_come_with_suggestions(tools: ToolRegistry) -> None:
    resolution = tools.resolve(
        ["fs_raed", "Bsh", "wether", "group:f", "fs", "mcp__gitlab__*", "mcp__x*", "zzz"]
    )
    assert resolution.names == []
    assert resolution.unmatched == [
        UnmatchedEntry(entry="fs_raed", suggestions=("fs_read",)),
        UnmatchedEntry(entry="bsh", suggestions=("bash",)),
        UnmatchedEntry(entry="wether", suggestions=("weather",)),
        UnmatchedEntry(entry="group:f", suggestions=("group:fs",)),
        UnmatchedEntry(entry="fs", suggestions=("group:fs",)),
        UnmatchedEntry(entry="mcp__gitlab__*", suggestions=("mcp__github__*",)),
        UnmatchedEntry(entry="mcp__x*", suggestions=()),
        UnmatchedEntry(entry="zzz", suggestions=()),
    ]
    assert tools.diagnostics == []  # template typos are reported in the resolution


def test_explain(tools: ToolRegistry) -> None:
    tools.register_factory(lambda ctx: 42, plugin_id="broken-kit")
    resolution = tools.resolve(
        ["exec", "forecast", "mcp__github__*", "ask_usr"],
        ToolPolicy(deny=["mcp__github__list_prs"], name="agent"),
    )
    assert resolution.explain() == "\n".join(
        [
            "3 tools chosen:",
            "  + exec (core)",
            "  + forecast (plugin: weather)",
            "  + mcp__github__create_issue (mcp: github)",
            "7 left out:",
            "  - fs_read: not listed by the template",
            "  - alpha_user_tool: not listed by the template",
            "  - zeta_user_tool: not listed by the template",
            "  - lint: not listed by the template",
            "  - mcp__github__list_prs: agent: denied by 'mcp__github__list_prs'",
            "  - mcp__linear__create_issue: not listed by the template",
            "  - ask_user: not listed by the template",
            "  ! 'ask_usr' matches no tool; did you mean ask_user?",
            "  ! error [broken-kit]: tool factory broken-kit returned int, not a Tool, a list of "
            "tools or None; its tools were skipped",
        ]
    )


def test_an_empty_registry_and_an_empty_template() -> None:
    empty = ToolRegistry().resolve()
    assert (empty.names, empty.excluded, empty.unmatched, empty.diagnostics) == ([], [], [], [])
    assert empty.explain() == "0 tools chosen:"
    reg = ToolRegistry()
    reg.register(_tool("exec"))
    nothing = reg.resolve([])
    assert nothing.names == []
    assert nothing.excluded == [Exclusion(name="exec", reason="not listed by the template")]


def test_resolution_is_a_snapshot_with_the_metas(tools: ToolRegistry) -> None:
    resolution = tools.resolve(["exec"])
    assert isinstance(resolution, Resolution)
    assert resolution.tools[0] is tools.get("exec")
    assert resolution.metas["exec"].aliases == ("bash",)
    tools.unregister("exec")  # later changes do not touch an earlier resolution
    assert resolution.names == ["exec"]
    assert tools.resolve(["exec"]).unmatched == [UnmatchedEntry(entry="exec", suggestions=())]


def test_factory_tools_take_their_place_in_the_order() -> None:
    reg = ToolRegistry()
    reg.register(declare_tool("ask_user"), source="client")
    reg.register_factory(lambda ctx: _tool("b_user"))
    reg.register_factory(lambda ctx: _tool("a_plugin"), names=["a_plugin"], plugin_id="p")
    reg.register_factory(lambda ctx: _tool("core_made"), source="core")
    reg.register(_tool("a_user"))
    resolution = reg.resolve(ctx=ToolFactoryContext(agent_id="x"))
    assert resolution.names == ["core_made", "a_user", "b_user", "a_plugin", "ask_user"]
    assert resolution.metas["a_plugin"].groups == ("group:plugins",)
    assert resolution.metas["core_made"].factory is True
