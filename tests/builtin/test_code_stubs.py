"""code_run's Python stubs: made from the tools' JSON Schemas, the same text every time."""

from __future__ import annotations

import ast
from typing import Literal

import pytest

from kode import Agent, AgentTemplate, ToolRegistry, define_tool
from kode.builtin.code import CodePolicy, agent_stubs, code_run
from kode.builtin.code._stubs import function_name, python_type, stub
from kode.models import ScriptedModel


def test_types_follow_the_schema() -> None:
    assert python_type({"type": "string"}) == "str"
    assert python_type({"type": "array", "items": {"type": "integer"}}) == "list[int]"
    assert python_type({"anyOf": [{"type": "number"}, {"type": "null"}]}) == "float | None"
    assert python_type({"enum": ["a", "b"]}) == "Literal['a', 'b']"
    assert python_type({"type": "object", "additionalProperties": {"type": "boolean"}}) == (
        "dict[str, bool]"
    )
    defs = {"Point": {"type": "object"}}
    assert python_type({"$ref": "#/$defs/Point"}, defs) == "dict[str, Any]"
    assert python_type({}) == "Any"


def test_names_python_cannot_take_are_changed() -> None:
    assert function_name("my-tool") == "my_tool"
    assert function_name("class") == "class_"
    assert function_name("9lives") == "_9lives"


def test_a_stub_is_keyword_only_typed_and_documented() -> None:
    schema = {
        "type": "object",
        "properties": {
            "key": {"type": "string", "description": "The key."},
            "limit": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None},
            "mode": {"enum": ["fast", "slow"], "default": "fast"},
        },
        "required": ["key"],
    }
    text = stub("find-it", 'Find a key.\n\nQuotes """ and a \\ stay inert.', schema)
    assert text.splitlines()[0] == (
        "def find_it(*, key: str, limit: int | None = None, mode: Literal['fast', 'slow'] = "
        "'fast') -> str:"
    )
    tree = ast.parse(text)  # valid Python, its docstring intact
    fn = tree.body[0]
    assert isinstance(fn, ast.FunctionDef)
    doc = ast.get_docstring(fn) or ""
    assert doc.startswith("Find a key.") and "key: The key." in doc and "'''" in doc
    assert [a.arg for a in fn.args.kwonlyargs] == ["key", "limit", "mode"]


def test_parameters_python_cannot_name_become_keyword_arguments() -> None:
    text = stub("odd", "Odd.", {"type": "object", "properties": {"from": {"type": "string"}}})
    assert text.splitlines()[0] == "def odd(**arguments: Any) -> str:"


def test_the_agent_prompt_lists_its_tools_but_code_run_sorted_and_stable() -> None:
    reg = ToolRegistry("stubs")

    @define_tool(registry=reg)
    def zeta(count: int, label: Literal["a", "b"] = "a") -> str:
        """Count things.

        Args:
            count: How many.
            label: Which label.
        """
        return label * count

    @define_tool(registry=reg)
    def alpha(items: list[str], *, flag: bool = False) -> int:
        """Count items.

        Args:
            items: The items.
            flag: A flag.
        """
        return len(items)

    @define_tool(registry=reg)
    def hidden() -> str:
        """Not in the template."""
        return ""

    reg.register(code_run, source="core")

    def make() -> Agent:
        return Agent.create(
            AgentTemplate(id="s", tools=["zeta", "alpha", "code_run"]),
            model=ScriptedModel([]),
            registry=reg,
        )

    first, second = make(), make()
    assert first.system_prompt == second.system_prompt
    listed = agent_stubs(first.tools)
    assert "def alpha(*, items: list[str], flag: bool = False) -> str:" in listed
    assert "def zeta(*, count: int, label: Literal['a', 'b'] = 'a') -> str:" in listed
    assert listed.index("def alpha") < listed.index("def zeta")
    assert "def code_run" not in listed and "def hidden" not in listed
    assert listed in first.system_prompt
    names = [n.name for n in ast.parse(listed).body if isinstance(n, ast.FunctionDef)]
    assert names == ["alpha", "zeta"]


def test_an_agent_without_code_run_gets_no_stubs() -> None:
    reg = ToolRegistry("plain")

    @define_tool(registry=reg)
    def only(x: int) -> int:
        """Echo.

        Args:
            x: A number.
        """
        return x

    agent = Agent.create(
        AgentTemplate(id="p", tools=["only"], system_prompt="Be brief."),
        model=ScriptedModel([]),
        registry=reg,
    )
    assert agent.system_prompt == "Be brief."


def test_a_code_policy_with_impossible_limits_is_refused() -> None:
    with pytest.raises(ValueError, match="must be positive"):
        CodePolicy(timeout=0)
    with pytest.raises(ValueError, match="max_output_chars must be at least 100"):
        CodePolicy(max_output_chars=10)
    with pytest.raises(ValueError, match=r"timeout \(600 s\) is longer than its max_timeout"):
        CodePolicy(timeout=600)
    with pytest.raises(ValueError, match="'read-only' or 'workspace-write', not 'write'"):
        CodePolicy(workspace="write")  # type: ignore[arg-type]
    assert CodePolicy(timeout=600, max_timeout=900).timeout == 600
    assert CodePolicy().max_calls == 100
