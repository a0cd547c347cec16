"""The registry's indexes: what resolution reads instead of every registered tool."""

from __future__ import annotations

from kode import Agent, AgentTemplate, ToolRegistry
from kode.models import ScriptedModel
from kode.registries import Exclusion
from kode.registries.index import NameIndex, glob_prefix
from kode.registries.meta import ToolMeta, ToolSource
from kode.tools.declared import declare_tool


def _registry() -> ToolRegistry:
    reg = ToolRegistry()
    reg.register(declare_tool("fs_read", groups=["fs"]), source="core")
    reg.register(declare_tool("fs_write", groups=["fs"]), source="core")
    reg.register(declare_tool("web_fetch", groups=["web"]), source="core")
    reg.register(declare_tool("mcp__git__log"), source="mcp", server="git")
    reg.register(declare_tool("mcp__github__pr"), source="mcp", server="github")
    reg.add_alias("read", "fs_read")
    return reg


def test_glob_prefix_is_the_literal_start() -> None:
    assert glob_prefix("fs_*") == "fs_"
    assert glob_prefix("mcp__git__*") == "mcp__git__"
    assert glob_prefix("*_read") == ""
    assert glob_prefix("f?_[rw]*") == "f"


def test_globs_groups_plugins_and_aliases_resolve_through_the_index() -> None:
    reg = _registry()
    assert reg.resolve(["fs_*"]).names == ["fs_read", "fs_write"]
    assert reg.resolve(["*_read"]).names == ["fs_read"]  # no literal start: every name is read
    assert reg.resolve(["mcp__git__*"]).names == ["mcp__git__log"]  # not mcp__github__
    assert reg.resolve(["rea?"]).names == ["fs_read"]  # a glob matches aliases too
    assert reg.resolve(["group:fs"]).names == ["fs_read", "fs_write"]
    assert reg.resolve(["READ"]).names == ["fs_read"]


def test_the_index_follows_unregister_replace_and_aliases() -> None:
    reg = _registry()
    reg.unregister("fs_read")
    assert reg.resolve(["group:fs"]).names == ["fs_write"]
    assert reg.resolve(["fs_*"]).names == ["fs_write"]
    assert reg.resolve(["rea*"], None).unmatched[0].entry == "rea*"  # its alias went with it
    reg.register(declare_tool("fs_write", groups=["files"]), source="core", replace=True)
    assert reg.resolve(["group:files"]).names == ["fs_write"]
    assert reg.resolve(["group:fs"]).unmatched[0].entry == "group:fs"
    with reg.isolated():
        assert reg.resolve(["fs_*"]).unmatched[0].entry == "fs_*"
    assert reg.resolve(["fs_*"]).names == ["fs_write"]
    reg.clear()
    assert reg.resolve(["fs_*"]).unmatched[0].entry == "fs_*"


def test_custom_groups_expand_through_the_index_even_in_a_loop() -> None:
    reg = _registry()
    reg.define_group("a", ["group:b", "web_*"])
    reg.define_group("b", ["group:a", "fs_read"])
    assert reg.resolve(["group:a"]).names == ["fs_read", "web_fetch"]
    assert reg.resolve(["group:b"]).metas["fs_read"].groups == ("group:fs", "group:b", "group:a")


def test_name_index_keeps_aliases_in_the_order_they_were_added() -> None:
    index = NameIndex()
    index.add("t", ToolMeta(name="t", source=ToolSource.USER, plugin_id="P", groups=("group:g",)))
    index.add_alias("z", "t")
    index.add_alias("a", "t")
    assert index.aliases_of("t") == ("z", "a")
    assert list(index.glob("*")) == ["a", "t", "z"]
    assert index.plugin("p") == {"t"}
    index.remove_alias("z", "t")
    index.remove(
        "t", ToolMeta(name="t", source=ToolSource.USER, plugin_id="P", groups=("group:g",))
    )
    assert (index.aliases_of("t"), list(index.glob("*")), index.group("group:g")) == (
        ("a",),
        ["a"],
        set(),
    )


def test_an_agent_keeps_no_list_of_the_tools_left_out() -> None:
    """The report of tools left out is worked out when read, so it sees later registrations."""
    reg = _registry()
    agent = Agent.create(
        AgentTemplate(id="one", tools=["web_fetch"]), model=ScriptedModel(["ok"]), registry=reg
    )
    assert agent.resolution.left_out == []
    assert (
        Exclusion(name="fs_read", reason="not listed by the template") in agent.resolution.excluded
    )
    reg.register(declare_tool("later"))
    assert Exclusion(name="later", reason="not listed by the template") in agent.resolution.excluded
    assert agent.resolution.aliases == {}
    reader = Agent.create(
        AgentTemplate(id="r", tools=["read"]), model=ScriptedModel(["ok"]), registry=reg
    )
    assert reader.resolution.aliases == {"read": "fs_read"}
