"""Templates: from dict / JSON / TOML, errors naming the field, the registry, create by id."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kode import define_tool
from kode.agent import (
    Agent,
    AgentError,
    AgentTemplate,
    PermissionConfig,
    PolicyConfig,
    TemplateError,
    TemplateRegistry,
)
from kode.models import ModelSettings, ScriptedModel, tool_use
from kode.registries import ToolRegistry

pytestmark = pytest.mark.anyio

DATA = {
    "id": "researcher",
    "system_prompt": "You find files.",
    "tools": ["search_files", "fs_read"],
    "policy": {"deny": ["fs_write"]},
    "permission": {"mode": "approval", "require_approval": ["fs_*"], "allow": ["search_*"]},
    "model_settings": {"max_tokens": 512, "temperature": 0.2, "top_k": 5},
    "max_turns": 7,
    "tool_timeout": 2.5,
    "max_concurrent_tools": 3,
    "max_result_chars": 1000,
}

EXPECTED = AgentTemplate(
    id="researcher",
    system_prompt="You find files.",
    tools=["search_files", "fs_read"],
    policy=PolicyConfig(deny=["fs_write"]),
    permission=PermissionConfig(mode="approval", require_approval=["fs_*"], allow=["search_*"]),
    model_settings={"max_tokens": 512, "temperature": 0.2, "top_k": 5},
    max_turns=7,
    tool_timeout=2.5,
    max_concurrent_tools=3,
    max_result_chars=1000,
)

TOML = """
[template]
id = "researcher"
system_prompt = "You find files."
tools = ["search_files", "fs_read"]
max_turns = 7
tool_timeout = 2.5
max_concurrent_tools = 3
max_result_chars = 1000

[template.policy]
deny = ["fs_write"]

[template.permission]
mode = "approval"
require_approval = ["fs_*"]
allow = ["search_*"]

[template.model_settings]
max_tokens = 512
temperature = 0.2
top_k = 5
"""


@pytest.fixture
def tools(reg: ToolRegistry) -> ToolRegistry:
    @define_tool(registry=reg, kind="search")
    def search_files(pattern: str) -> list[str]:
        """Find files by glob pattern.

        Args:
            pattern: A glob such as ``*.toml``.
        """
        return []

    @define_tool(registry=reg, kind="read")
    def fs_read(path: str) -> str:
        """Read a file.

        Args:
            path: The file.
        """
        return ""

    @define_tool(registry=reg, kind="edit")
    def fs_write(path: str, text: str) -> None:
        """Write a file.

        Args:
            path: The file.
            text: The content.
        """

    return reg


# --- loading -----------------------------------------------------------------------------------


def test_from_dict_json_and_toml_give_the_same_template() -> None:
    assert AgentTemplate.from_dict(DATA) == EXPECTED
    assert AgentTemplate.from_json(json.dumps(DATA)) == EXPECTED
    assert AgentTemplate.from_toml(TOML) == EXPECTED
    whole_document = TOML.replace("[template]\n", "").replace("template.", "")
    assert AgentTemplate.from_toml(whole_document) == EXPECTED


def test_from_file_by_suffix(tmp_path: Path) -> None:
    (tmp_path / "a.toml").write_text(TOML, encoding="utf-8")
    (tmp_path / "a.json").write_text(json.dumps(DATA), encoding="utf-8")
    (tmp_path / "a.yaml").write_text("id: x", encoding="utf-8")
    assert AgentTemplate.from_file(tmp_path / "a.toml") == EXPECTED
    assert AgentTemplate.from_file(str(tmp_path / "a.json")) == EXPECTED
    with pytest.raises(TemplateError, match=r"a\.yaml: use a \.toml or \.json file"):
        AgentTemplate.from_file(tmp_path / "a.yaml")


def test_defaults() -> None:
    template = AgentTemplate.from_dict({"id": "x"})
    assert template.tools == []
    assert template.permission == PermissionConfig(mode="auto")
    assert template.policy is None
    assert (template.max_turns, template.tool_timeout, template.max_concurrent_tools) == (
        25,
        None,
        8,
    )
    assert template.settings() == ModelSettings(max_tokens=4096, temperature=None, extra={})


def test_settings_split_known_fields_from_provider_extras() -> None:
    assert EXPECTED.settings() == ModelSettings(max_tokens=512, temperature=0.2, extra={"top_k": 5})


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({}, "invalid agent template: id: Field required"),
        ({"id": ""}, "id: String should have at least 1 character"),
        ({"id": "x", "max_turns": 0}, "max_turns: Input should be greater than or equal to 1"),
        ({"id": "x", "tool_timeout": -1}, "tool_timeout: Input should be greater than 0"),
        ({"id": "x", "tool": ["a"]}, "tool: Extra inputs are not permitted"),
        (
            {"id": "x", "permission": {"mode": "yolo"}},
            "permission.mode: Input should be 'auto', 'approval' or 'readonly'",
        ),
        (
            {"id": "x", "permission": {"alow": []}},
            "permission.alow: Extra inputs are not permitted",
        ),
        ({"id": "x", "policy": {"deny": "fs_*"}}, "policy.deny: Input should be a valid list"),
        ({"id": "x", "tools": ["a", 3]}, "tools.1: Input should be a valid string"),
        (
            {"id": "x", "tools": "fs_read"},
            "tools: Value error, tools must be a list of names, got the string 'fs_read'",
        ),
    ],
)
def test_bad_input_names_the_field(data: dict[str, object], message: str) -> None:
    with pytest.raises(TemplateError) as info:
        AgentTemplate.from_dict(data)
    assert message in str(info.value)


def test_every_bad_field_is_listed_at_once() -> None:
    with pytest.raises(TemplateError) as info:
        AgentTemplate.from_dict({"id": "x", "max_turns": 0, "max_concurrent_tools": 0})
    assert "max_turns:" in str(info.value)
    assert "max_concurrent_tools:" in str(info.value)


def test_tools_as_a_string_is_refused_in_code_too() -> None:
    with pytest.raises(TemplateError, match="tools must be a list of names"):
        AgentTemplate.from_toml('id = "x"\ntools = "fs_read"\n')
    with pytest.raises(ValueError, match="got the string 'fs_read'"):
        AgentTemplate(id="x", tools="fs_read")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "agent template is not valid JSON"),
        ("[1, 2]", "an agent template must be a JSON object"),
    ],
)
def test_bad_json(text: str, message: str) -> None:
    with pytest.raises(TemplateError, match=message):
        AgentTemplate.from_json(text)


def test_bad_toml() -> None:
    with pytest.raises(TemplateError, match="agent template is not valid TOML"):
        AgentTemplate.from_toml("id = ")


def test_hooks_are_code_only_and_left_out_of_the_serialised_template() -> None:
    from kode.agent import AgentHooks

    template = AgentTemplate(id="x", hooks=AgentHooks())
    assert "hooks" not in template.model_dump()
    assert AgentTemplate.from_json(template.model_dump_json()) == AgentTemplate(id="x")


# --- the template registry ---------------------------------------------------------------------


def test_template_registry() -> None:
    registry = TemplateRegistry()
    first = registry.register(AgentTemplate(id="a"))
    assert registry.get("a") is first
    assert "a" in registry and "b" not in registry
    registry.register(AgentTemplate(id="b"))
    assert registry.ids() == ["a", "b"]
    replaced = registry.register(AgentTemplate(id="a", system_prompt="new"))
    assert registry.get("a") is replaced
    with pytest.raises(TemplateError, match="a template with id 'a' is already registered"):
        registry.register(AgentTemplate(id="a"), replace=False)
    with pytest.raises(TemplateError, match=r"no agent template with id 'c'; registered: a, b"):
        registry.get("c")
    with pytest.raises(TemplateError, match="registered: none"):
        TemplateRegistry().get("a")


async def test_create_by_id(tools: ToolRegistry, template_registry: TemplateRegistry) -> None:
    template_registry.register(AgentTemplate(id="finder", tools=["search_files"]))
    agent = Agent.create("finder", model=ScriptedModel(["hi"]), registry=tools)
    assert agent.template.id == "finder"
    assert [t.name for t in agent.tools] == ["search_files"]
    with pytest.raises(TemplateError, match="no agent template with id 'nope'; registered: finder"):
        Agent.create("nope", model=ScriptedModel([]), registry=tools)


# --- resolution at create time -----------------------------------------------------------------


async def test_the_model_is_shown_the_template(tools: ToolRegistry) -> None:
    model = ScriptedModel(["hi"])
    agent = Agent.create(EXPECTED, model=model, registry=tools)
    await agent.send("go")
    (request,) = model.requests
    assert request.system == "You find files."
    assert [t.name for t in request.tools] == ["fs_read", "search_files"]  # stable order
    assert request.tools[1] is tools.get("search_files")
    assert request.settings == EXPECTED.settings()


def test_an_entry_that_names_nothing_fails_at_create_with_close_matches(
    tools: ToolRegistry,
) -> None:
    template = AgentTemplate(id="r", tools=["serch_files", "fs_read", "zzzz"])
    with pytest.raises(AgentError) as info:
        Agent.create(template, model=ScriptedModel([]), registry=tools)
    assert str(info.value) == (
        "agent template 'r' lists tools that match nothing registered: 'serch_files' "
        "(did you mean 'search_files'?); 'zzzz'. Import the modules that define them, "
        "or fix the names."
    )


def test_a_pattern_and_a_group_that_match_nothing_fail_too(tools: ToolRegistry) -> None:
    template = AgentTemplate(id="r", tools=["web_*", "group:nothing"])
    with pytest.raises(AgentError, match=r"'web_\*'.*'group:nothing'"):
        Agent.create(template, model=ScriptedModel([]), registry=tools)


def test_policy_in_the_template_filters_the_tools(tools: ToolRegistry) -> None:
    template = AgentTemplate(id="p", tools=["fs_*", "search_files"], policy={"deny": ["fs_w*"]})
    agent = Agent.create(template, model=ScriptedModel([]), registry=tools)
    assert [t.name for t in agent.tools] == ["fs_read", "search_files"]
    assert [e.name for e in agent.resolution.excluded] == ["fs_write"]
    assert agent.lookup("fs_write") is None


def test_policy_given_to_create_comes_before_the_templates(tools: ToolRegistry) -> None:
    from kode.registries import ToolPolicy

    template = AgentTemplate(id="p", tools=["*"], policy={"deny": ["fs_write"]})
    agent = Agent.create(
        template,
        model=ScriptedModel([]),
        registry=tools,
        policy=ToolPolicy(deny=["search_*"], name="app"),
    )
    assert [t.name for t in agent.tools] == ["fs_read"]


def test_a_call_of_a_tool_the_policy_denies_is_a_policy_violation(tools: ToolRegistry) -> None:
    from kode.registries import ToolPolicy

    template = AgentTemplate(id="p", tools=["*"], policy={"deny": ["fs_write"]})
    model = ScriptedModel(
        [
            [
                tool_use("fs_write", {"path": "a", "text": "b"}),
                tool_use("search_files", {"pattern": "*"}),
                tool_use("nothere", {}),
            ],
            "Done.",
        ]
    )
    agent = Agent.create(
        template, model=model, registry=tools, policy=ToolPolicy(deny=["search_*"], name="app")
    )
    agent.send_sync("Go.")
    write, search, unknown = agent.state.tool_calls
    assert write.error_type == "policy_violation"
    assert write.result is not None
    assert write.result.text.startswith(
        "Tool 'fs_write' is not allowed for this agent (template 'p': denied by 'fs_write')."
    )
    assert search.error_type == "policy_violation"
    assert search.result is not None and "(app: denied by 'search_*')" in search.result.text
    assert unknown.error_type == "tool_not_registered"


def test_an_unknown_profile_is_an_agent_error(tools: ToolRegistry) -> None:
    template = AgentTemplate(id="p", tools=["*"], policy={"profile": "nonexistent"})
    with pytest.raises(AgentError, match="agent template 'p': "):
        Agent.create(template, model=ScriptedModel([]), registry=tools)
