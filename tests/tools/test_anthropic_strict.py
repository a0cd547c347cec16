"""The Anthropic strict dialect: kode's strict rules with Anthropic's differences."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from pydantic import BaseModel, Field

from kode.tools import define_tool
from kode.tools.anthropic_strict import anthropic_strict_counts, anthropic_strict_schema


def strict(schema: dict[str, Any]) -> dict[str, Any]:
    out = anthropic_strict_schema(schema)
    assert out is not None
    return out


def test_optional_parameters_and_defaults_stay() -> None:
    @define_tool(registry=None)
    def find(query: str, limit: int = 5) -> str:
        """Find.

        Args:
            query: Words.
            limit: At most.
        """
        return ""

    schema = strict(find.input_schema)
    assert schema["required"] == ["query"]
    assert schema["properties"]["limit"] == {
        "default": 5,
        "description": "At most.",
        "type": "integer",
    }
    assert schema["additionalProperties"] is False


def test_keywords_anthropic_lacks_move_into_the_description() -> None:
    schema = strict(
        {
            "type": "object",
            "properties": {
                "n": {"type": "integer", "minimum": 1, "exclusiveMaximum": 10},
                "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                "many": {
                    "type": "array",
                    "items": {"type": "string"},
                    "minItems": 2,
                    "maxItems": 4,
                },
                "site": {"type": "string", "format": "uri"},
                "word": {"type": "string", "pattern": "^[a-z]+$"},
                "echo": {"type": "string", "pattern": r"^(a)\1$"},
                "look": {"type": "string", "pattern": "^(?!x)"},
            },
            "required": ["n"],
        }
    )
    props = schema["properties"]
    assert props["n"] == {"type": "integer", "description": "(minimum: 1) (exclusiveMaximum: 10)"}
    assert props["tags"]["minItems"] == 1  # 0 and 1 are taken as they are
    assert props["many"]["description"] == "(minItems: 2) (maxItems: 4)"
    assert props["site"]["format"] == "uri"
    assert props["word"]["pattern"] == "^[a-z]+$"
    assert (
        "pattern" not in props["echo"] and props["echo"]["description"] == r'(pattern: "^(a)\\1$")'
    )
    assert "pattern" not in props["look"]


class Folder(BaseModel):
    name: str
    children: list[Folder] = []


def test_what_makes_strict_mode_impossible() -> None:
    @define_tool(registry=None)
    def tidy(root: Folder) -> str:
        """Tidy.

        Args:
            root: The tree.
        """
        return ""

    @define_tool(registry=None)
    def label(labels: dict[str, str]) -> str:
        """Label.

        Args:
            labels: Path to label.
        """
        return ""

    with pytest.raises(ValueError, match=r"recursive model \('Folder' contains itself\)$"):
        tidy.schema("anthropic", strict=True)
    with pytest.raises(ValueError, match=r"a free-form object .* at 'labels'$"):
        label.schema("anthropic", strict=True)
    assert "strict" not in tidy.schema("anthropic")  # plain unless asked


def test_a_schema_past_the_request_limits_alone_cannot_be_strict() -> None:
    props = {f"p{n}": {"type": "string"} for n in range(25)}
    assert anthropic_strict_schema({"type": "object", "properties": props}) is None
    unions = {f"u{n}": {"anyOf": [{"type": "string"}, {"type": "null"}]} for n in range(17)}
    schema = {"type": "object", "properties": unions, "required": list(unions)}
    assert anthropic_strict_counts(schema) == (0, 17)
    assert anthropic_strict_schema(schema) is None


def test_counts_cover_nested_objects_and_definitions() -> None:
    class Inner(BaseModel):
        a: int
        b: int | None = None

    @define_tool(registry=None)
    def nest(inner: Inner, note: Annotated[str | None, Field(description="A note.")] = None) -> str:
        """Nest.

        Args:
            inner: Something inside.
        """
        return ""

    assert anthropic_strict_counts(strict(nest.input_schema)) == (2, 2)
