"""Groups, profiles and policy: patterns, deny wins, layers, optional tools, typos reported."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from kode import ToolRegistry, define_tool
from kode.registries import (
    BUILTIN_PROFILES,
    Diagnostic,
    Exclusion,
    PolicyError,
    ToolPolicy,
)
from kode.registries.plugins import load_plugin


def _tool(name: str, **options: Any) -> Any:
    def fn() -> str:
        """Answer."""
        return name

    return define_tool(fn, name=name, registry=None, **options)


@pytest.fixture
def tools() -> ToolRegistry:
    """Core tools in the usual groups, a user tool, and a plugin with an optional tool."""
    reg = ToolRegistry()
    for name, group in [
        ("fs_read", "group:fs"),
        ("fs_write", "group:fs"),
        ("exec", "group:runtime"),
        ("web_fetch", "group:web"),
        ("web_search", "group:web"),
        ("think", "group:think"),
        ("sessions_send", "group:sessions"),
        ("message", "group:messaging"),
    ]:
        reg.register(_tool(name, groups=[group]), source="core")
    reg.register(_tool("lookup_user"))

    def weather(api: Any) -> None:
        api.register_tool(_tool("forecast", groups=["group:web"]))
        api.register_tool(_tool("radar", groups=["group:web"]), optional=True)

    load_plugin(weather, plugin_id="weather", registry=reg)
    return reg


ALL = [
    "exec",
    "fs_read",
    "fs_write",
    "message",
    "sessions_send",
    "think",
    "web_fetch",
    "web_search",
    "lookup_user",
    "forecast",
]


def names(reg: ToolRegistry, *policies: ToolPolicy, template: list[str] | None = None) -> list[str]:
    return reg.resolve(template, list(policies)).names


# --- groups -----------------------------------------------------------------------------------


def test_groups_select_and_group_names_are_normalised(tools: ToolRegistry) -> None:
    assert names(tools, template=["group:fs"]) == ["fs_read", "fs_write"]
    assert names(tools, template=[" Group:WEB "]) == ["web_fetch", "web_search", "forecast"]
    tools.register(_tool("ping", groups=["Net"]))  # a bare group name means group:net
    assert tools.meta("ping").groups == ("group:net",)
    assert names(tools, template=["group:net"]) == ["ping"]


def test_group_plugins_and_a_plugin_id_select_plugin_tools(tools: ToolRegistry) -> None:
    assert tools.meta("forecast").groups == ("group:web", "group:plugins")
    # both name the plugin explicitly, so its optional tool comes too
    assert names(tools, template=["group:plugins"]) == ["forecast", "radar"]
    assert names(tools, template=["WEATHER"]) == ["forecast", "radar"]
    assert names(tools, ToolPolicy(allow=["weather"])) == ["forecast", "radar"]


def test_custom_groups(tools: ToolRegistry) -> None:
    tools.define_group("readonly", ["fs_read", "web_*", "weather"])
    tools.define_group("group:safe", ["group:readonly", "think"])  # a group of groups
    assert tools.groups() == {
        "group:readonly": ("fs_read", "web_*", "weather"),
        "group:safe": ("group:readonly", "think"),
    }
    # radar is optional: a custom group holding its plugin's id does not name it explicitly
    assert names(tools, template=["group:readonly"]) == [
        "fs_read",
        "web_fetch",
        "web_search",
        "forecast",
    ]
    assert names(tools, template=["group:safe"]) == [
        "fs_read",
        "think",
        "web_fetch",
        "web_search",
        "forecast",
    ]
    assert names(tools, ToolPolicy(deny=["group:safe"])) == [
        "exec",
        "fs_write",
        "message",
        "sessions_send",
        "lookup_user",
    ]
    resolution = tools.resolve(["group:readonly"])
    assert resolution.metas["fs_read"].groups == ("group:fs", "group:readonly", "group:safe")


def test_a_custom_group_member_that_matches_nothing_is_a_warning_when_the_group_is_used(
    tools: ToolRegistry, caplog: pytest.LogCaptureFixture
) -> None:
    tools.define_group("readonly", ["fs_read", "web_fecth"])
    tools.define_group("unused", ["nothing_here"])
    assert names(tools, template=["think"]) == ["think"]
    assert tools.diagnostics == []  # neither group is used
    with caplog.at_level(logging.WARNING, logger="kode.registry"):
        assert names(tools, template=["group:readonly"]) == ["fs_read"]
    message = (
        "group:readonly: member 'web_fecth' matches no registered tool — a typo here leaves "
        "the group short"
    )
    assert tools.diagnostics == [
        Diagnostic(level="warning", source=None, plugin_id=None, message=message)
    ]
    assert caplog.messages == [f"warning: {message}"]
    assert names(tools, ToolPolicy(deny=["group:readonly"]), template=["fs_*"]) == ["fs_write"]


def test_bad_custom_groups_are_refused(tools: ToolRegistry) -> None:
    with pytest.raises(PolicyError, match=r"^group 'x': members must be a list of patterns, got"):
        tools.define_group("x", "fs_read")
    with pytest.raises(PolicyError, match=r"^group 'x': members must hold strings .*got 3 \(int\)"):
        tools.define_group("x", ["fs_read", 3])  # type: ignore[list-item]
    with pytest.raises(PolicyError, match=r"^a group needs a name$"):
        tools.define_group("group:", ["fs_read"])
    assert tools.groups() == {}


def test_an_unknown_group_in_a_template_is_unmatched_with_suggestions(tools: ToolRegistry) -> None:
    resolution = tools.resolve(["fs_read", "group:wbe"])
    assert resolution.names == ["fs_read"]
    assert [(u.entry, u.suggestions) for u in resolution.unmatched] == [
        ("group:wbe", ("group:web",))
    ]


# --- profiles ---------------------------------------------------------------------------------


def test_builtin_profiles(tools: ToolRegistry) -> None:
    assert BUILTIN_PROFILES == {
        "minimal": ("group:think",),
        "coding": ("group:fs", "group:runtime", "group:web", "group:think"),
        "messaging": ("group:sessions", "group:messaging", "group:think"),
        "full": ("*",),
    }
    assert names(tools, ToolPolicy(profile="minimal")) == ["think"]
    assert names(tools, ToolPolicy(profile="coding")) == [
        "exec",
        "fs_read",
        "fs_write",
        "think",
        "web_fetch",
        "web_search",
        "forecast",
    ]
    assert names(tools, ToolPolicy(profile="Messaging")) == ["message", "sessions_send", "think"]
    assert names(tools, ToolPolicy(profile="full")) == ALL
    assert tools.diagnostics == []


def test_builtin_profile_groups_nobody_uses_are_not_warnings() -> None:
    reg = ToolRegistry()
    reg.register(_tool("fs_read", groups=["group:fs"]))
    assert reg.resolve(None, ToolPolicy(profile="coding")).names == ["fs_read"]
    assert reg.diagnostics == []


def test_custom_profiles(tools: ToolRegistry) -> None:
    tools.define_profile("Support", ["lookup_user", "group:messaging"])
    assert tools.profiles()["support"] == ("lookup_user", "group:messaging")
    assert set(tools.profiles()) == {"minimal", "coding", "messaging", "full", "support"}
    assert names(tools, ToolPolicy(profile="support")) == ["message", "lookup_user"]
    tools.define_profile("minimal", ["fs_read"])  # redefining a built-in one
    assert names(tools, ToolPolicy(profile="minimal")) == ["fs_read"]
    assert ToolRegistry().profiles()["minimal"] == ("group:think",)  # per registry


def test_a_custom_profile_entry_that_matches_nothing_is_a_warning(tools: ToolRegistry) -> None:
    tools.define_profile("support", ["lookup_usr"])
    assert names(tools, ToolPolicy(profile="support", name="agent")) == []
    assert [d.message for d in tools.diagnostics] == [
        "agent: profile 'support' entry 'lookup_usr' matches no registered tool — a typo here "
        "can leave an agent without tools"
    ]


def test_an_unknown_profile_names_the_known_ones(tools: ToolRegistry) -> None:
    tools.define_profile("support", ["lookup_user"])
    with pytest.raises(PolicyError) as info:
        tools.resolve(None, ToolPolicy(profile="codin", name="agent"))
    assert str(info.value) == (
        "agent: unknown tool profile 'codin'; known profiles: coding, full, messaging, "
        "minimal, support"
    )
    assert isinstance(info.value, ValueError)


def test_bad_profiles_are_refused(tools: ToolRegistry) -> None:
    with pytest.raises(PolicyError, match=r"^profile 'p' must be a list of patterns, got the str"):
        tools.define_profile("p", "fs_read")
    with pytest.raises(PolicyError, match=r"^a profile needs a name$"):
        tools.define_profile(" ", ["fs_read"])
    with pytest.raises(PolicyError, match=r"^ToolPolicy.profile must be a profile name, got list$"):
        ToolPolicy(profile=["coding"])  # type: ignore[arg-type]


# --- policy patterns --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("allow", "expected"),
    [
        (["*"], ALL),
        (["FS_*"], ["fs_read", "fs_write"]),
        (["fs_rea?"], ["fs_read"]),
        (["group:Web"], ["web_fetch", "web_search", "forecast"]),
        (["weather"], ["forecast", "radar"]),
        (["Lookup_User", "exec"], ["exec", "lookup_user"]),
        ([], ALL),
    ],
)
def test_allow_patterns(tools: ToolRegistry, allow: list[str], expected: list[str]) -> None:
    assert names(tools, ToolPolicy(allow=allow)) == expected


def test_an_empty_allow_allows_everything(tools: ToolRegistry) -> None:
    assert names(tools, ToolPolicy()) == ALL
    assert names(tools) == ALL


def test_deny_wins(tools: ToolRegistry) -> None:
    policy = ToolPolicy(allow=["group:fs", "exec"], also_allow=["fs_write"], deny=["FS_W*"])
    resolution = tools.resolve(["group:fs", "exec"], policy)
    assert resolution.names == ["exec", "fs_read"]
    assert Exclusion(name="fs_write", reason="policy: denied by 'fs_w*'") in resolution.excluded
    assert names(tools, ToolPolicy(profile="full", deny=["*"])) == []
    assert names(tools, ToolPolicy(deny=["group:plugins"])) == ALL[:-1]
    assert names(tools, ToolPolicy(deny=["weather"]), template=["weather"]) == []


def test_also_allow_adds_to_a_profile(tools: ToolRegistry) -> None:
    policy = ToolPolicy(profile="minimal", also_allow=["lookup_user", "radar"])
    assert names(tools, policy) == ["think", "lookup_user", "radar"]


def test_optional_tools_need_an_explicit_entry(tools: ToolRegistry) -> None:
    # not through "*" nor through another group, in the template or in a policy
    assert "radar" not in names(tools, template=["*"])
    assert "radar" not in names(tools, template=["group:web"])
    assert "radar" not in names(tools, ToolPolicy(allow=["group:web"]), template=["*"])
    assert "radar" not in names(tools, ToolPolicy(allow=["rad*"]))
    resolution = tools.resolve(["group:web"])
    assert (
        Exclusion(
            name="radar", reason="optional: name it, its plugin or group:plugins to include it"
        )
        in resolution.excluded
    )
    # by its name, its plugin's id, or group:plugins, in the template or an allow list
    assert "radar" in names(tools, template=["Radar"])
    assert "radar" in names(tools, template=["weather"])
    assert "radar" in names(tools, template=["group:plugins"])
    assert "radar" in names(tools, ToolPolicy(allow=["radar"]), template=["*"])
    assert "radar" in names(tools, ToolPolicy(also_allow=["group:plugins"]))
    # an optional user tool: group:plugins does not name it
    tools.register(_tool("deploy", optional=True))
    assert "deploy" not in names(tools, template=["*", "group:plugins"])
    assert "deploy" in names(tools, template=["deploy"])


def test_layers_all_must_pass_and_the_reason_names_the_layer(tools: ToolRegistry) -> None:
    layers = [
        ToolPolicy(profile="coding", name="global"),
        ToolPolicy(deny=["exec"], name="agent"),
        ToolPolicy(allow=["fs_*", "think", "exec"], name="sandbox"),
        ToolPolicy(deny=["fs_write"], name="sub-agent"),
    ]
    resolution = tools.resolve(None, layers)
    assert resolution.names == ["fs_read", "think"]
    assert resolution.excluded == [
        Exclusion(name="exec", reason="agent: denied by 'exec'"),
        Exclusion(name="fs_write", reason="sub-agent: denied by 'fs_write'"),
        Exclusion(name="message", reason="global: not in the profile"),
        Exclusion(name="sessions_send", reason="global: not in the profile"),
        Exclusion(name="web_fetch", reason="sandbox: not in allow"),
        Exclusion(name="web_search", reason="sandbox: not in allow"),
        Exclusion(name="lookup_user", reason="global: not in the profile"),
        Exclusion(name="forecast", reason="sandbox: not in allow"),
        Exclusion(
            name="radar", reason="optional: name it, its plugin or group:plugins to include it"
        ),
    ]
    # also_allow lets a tool through its own layer only
    layered = [ToolPolicy(allow=["think"]), ToolPolicy(allow=["fs_read"], also_allow=["think"])]
    assert names(tools, *layered) == ["think"]


def test_an_allow_entry_that_matches_nothing_is_a_warning(
    tools: ToolRegistry, caplog: pytest.LogCaptureFixture
) -> None:
    policy = ToolPolicy(allow=["fs_raed"], also_allow=["group:nope"], deny=["exce"], name="agent")
    with caplog.at_level(logging.WARNING, logger="kode.registry"):
        resolution = tools.resolve(None, policy)
    assert resolution.names == []
    expected = [
        Diagnostic(
            level="warning",
            source=None,
            plugin_id=None,
            message=f"agent: {key} entry {entry!r} matches no registered tool — a typo here "
            + tail,
        )
        for key, entry, tail in [
            ("allow", "fs_raed", "can leave an agent without tools"),
            ("also_allow", "group:nope", "can leave an agent without tools"),
            ("deny", "exce", "would let the tool through"),
        ]
    ]
    assert resolution.diagnostics == expected
    assert tools.diagnostics == expected
    assert caplog.messages == [str(d) for d in expected]


def test_bad_policies_are_policy_errors() -> None:
    with pytest.raises(PolicyError) as info:
        ToolPolicy(allow="fs_read")  # type: ignore[arg-type]
    assert str(info.value) == (
        "ToolPolicy.allow must be a list of patterns, got the string 'fs_read'; "
        "write allow=['fs_read']"
    )
    with pytest.raises(PolicyError, match=r"^ToolPolicy.deny must be a list of patterns, got the"):
        ToolPolicy(deny="exec")  # type: ignore[arg-type]
    with pytest.raises(PolicyError, match=r"^ToolPolicy.also_allow must hold strings .*None"):
        ToolPolicy(also_allow=[None])  # type: ignore[list-item]
    with pytest.raises(PolicyError, match=r"^ToolPolicy.allow must be a list of patterns, got int"):
        ToolPolicy(allow=3)  # type: ignore[arg-type]
    assert ToolPolicy(allow=[" ", "Fs_*"]).patterns({}) == {
        "allow": ("fs_*",),
        "also_allow": (),
        "deny": (),
    }


def test_a_template_that_is_a_bare_string_or_holds_non_strings(tools: ToolRegistry) -> None:
    with pytest.raises(PolicyError, match=r"^the template's tools must be a list of patterns, got"):
        tools.resolve("fs_read")
    with pytest.raises(PolicyError, match=r"^the template's tools must hold strings .*got 1 \(int"):
        tools.resolve(["fs_read", 1])  # type: ignore[list-item]
    with pytest.raises(PolicyError, match=r"^policy layers must be ToolPolicy objects, got dict$"):
        tools.resolve(None, [{"allow": ["x"]}])  # type: ignore[list-item]
