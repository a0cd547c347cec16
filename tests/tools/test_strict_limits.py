"""OpenAI strict mode's documented limits: a schema past one is sent non-strict, and said so."""

from __future__ import annotations

import logging
from typing import Any, Literal

import pytest
from pydantic import BaseModel, create_model

from kode.registries import ToolRegistry
from kode.tools import Tool, define_tool
from kode.tools.dialects import OPENAI_STRICT_LIMITS, openai_strict_limit


def nested(levels: int) -> type[BaseModel]:
    """A model whose objects nest `levels` deep, counting itself (``leaf`` is the innermost)."""
    model: type[BaseModel] = create_model("Level1", leaf=(str, ...))
    for level in range(2, levels + 1):
        model = create_model(f"Level{level}", inner=(model, ...))
    return model


def tool_taking(annotation: Any, name: str = "deep") -> Tool[..., Any]:
    """A tool with one parameter ``value`` of `annotation` (the tool's object is level 1)."""

    async def handler(arguments: dict[str, Any], ctx: Any) -> str:
        return "ok"

    schema = create_model("Args", value=(annotation, ...)).model_json_schema()
    return Tool.from_schema(
        name, description="Takes a value.", input_schema=schema, handler=handler
    )


def strict(tool: Tool[..., Any]) -> bool:
    return bool(tool.schema("openai")["function"]["strict"])


def test_ten_levels_are_strict_eleven_are_not(caplog: pytest.LogCaptureFixture) -> None:
    assert strict(tool_taking(nested(9), "nine"))  # 9 + the tool's own object: 10 levels
    deep = tool_taking(nested(10), "eleven")
    with caplog.at_level(logging.WARNING, logger="kode.tools"):
        assert not strict(deep)
    path = "value" + ".inner" * 9
    [record] = [r for r in caplog.records if "eleven" in r.getMessage()]
    assert record.getMessage() == (
        "tool 'eleven' is sent to OpenAI without strict mode: its schema has objects nested 11 "
        f"levels deep at '{path}', past OpenAI strict mode's limit of 10 levels"
    )
    # the arguments are still described: as the schema itself, not strict
    parameters = deep.schema("openai")["function"]["parameters"]
    assert parameters["properties"]["value"] == {"$ref": "#/$defs/Level10"}


def test_strict_true_says_which_limit() -> None:
    with pytest.raises(ValueError, match="past OpenAI strict mode's limit of 10 levels"):
        tool_taking(nested(10)).schema("openai", strict=True)


def test_the_registry_reports_a_diagnostic_naming_the_limit_and_place() -> None:
    registry = ToolRegistry(name="limits")
    registry.register(tool_taking(nested(10)))
    registry.register(tool_taking(nested(9), "fine"))
    [diagnostic] = registry.diagnostics
    assert diagnostic.level == "warning"
    assert "tool 'deep' is sent to OpenAI without strict mode" in diagnostic.message
    assert "at 'value.inner.inner" in diagnostic.message
    assert "limit of 10 levels" in diagnostic.message


def test_a_recursive_model_is_not_too_deep() -> None:
    class Node(BaseModel):
        name: str
        children: list[Node] = []

    assert openai_strict_limit(create_model("Args", root=(Node, ...)).model_json_schema()) is None


def enum_of(count: int, width: int = 3) -> Any:
    return Literal[tuple(f"v{n:0{width}d}" for n in range(count))]


def test_more_than_a_thousand_enum_values() -> None:
    assert strict(tool_taking(enum_of(1000), "thousand"))
    schema = {
        "type": "object",
        "properties": {"a": {"enum": list(range(600))}, "b": {"enum": list(range(401))}},
    }
    assert openai_strict_limit(schema) == (
        "1,001 enum values in all (the limit is passed at 'b'), past OpenAI strict mode's limit "
        "of 1,000"
    )
    assert not strict(tool_taking(enum_of(1001), "too_many"))


def test_a_large_string_enum_with_too_many_characters() -> None:
    # 251 values of 60 characters: 15,060 characters, more than 15,000 for one enum of > 250
    long = Literal[tuple(f"{n:060d}" for n in range(251))]
    limit = openai_strict_limit(create_model("Args", kind=(long, ...)).model_json_schema())
    assert limit is not None
    assert limit.startswith("an enum of 251 strings with 15,060 characters in all at 'kind'")
    # 250 such values are fine: the character limit is only for enums of more than 250
    short = Literal[tuple(f"{n:060d}" for n in range(250))]
    assert openai_strict_limit(create_model("Args", kind=(short, ...)).model_json_schema()) is None


def test_more_than_five_thousand_properties() -> None:
    properties = {f"p{n}": {"type": "integer"} for n in range(OPENAI_STRICT_LIMITS["properties"])}
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    assert openai_strict_limit(schema) is None
    schema["properties"]["extra"] = {"type": "object", "properties": {"x": {"type": "string"}}}
    assert openai_strict_limit(schema) == (
        "5,002 object properties in all (the limit is passed at 'the top level'), past OpenAI "
        "strict mode's limit of 5,000"
    )


def test_too_many_characters_of_names() -> None:
    name = "n" * 1000
    schema = {
        "type": "object",
        "properties": {f"{name}{i}": {"type": "string"} for i in range(121)},
    }
    limit = openai_strict_limit(schema)
    assert limit is not None and limit.startswith("121,") and "limit of 120,000" in limit


def test_an_ordinary_tool_stays_strict_and_quiet() -> None:
    registry = ToolRegistry(name="quiet")

    @define_tool(registry=registry)
    def search(query: str, kinds: list[Literal["a", "b"]] | None = None) -> str:
        """Search.

        Args:
            query: What to find.
            kinds: Which kinds.
        """
        return query

    assert strict(search)
    assert registry.diagnostics == []


def test_the_limit_warning_is_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    registry = ToolRegistry(name="once")
    with caplog.at_level(logging.WARNING):
        registry.register(tool_taking(nested(10), "deep_once"))
        tool = registry.get("deep_once")
        assert tool is not None
        for _ in range(3):  # a declaration for each request
            assert not strict(tool)
    said = [r for r in caplog.records if "deep_once" in r.getMessage()]
    assert len(said) == 1
    assert (
        "tool 'deep_once' is sent to OpenAI without strict mode: its schema has objects nested"
        in said[0].getMessage()
    )
