"""The shape of a schema corpus case (see test_schema_corpus.py), and the sources cited."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

PAI = "pydantic-ai tests/test_tools.py::"
OAI_SCHEMA = "openai-agents tests/test_function_schema.py::"
OAI_TOOL = "openai-agents tests/test_function_tool.py::"
FMCP = "fastmcp tests/tools/test_tool.py::"
LC_FC = "langchain libs/core/tests/unit_tests/utils/test_function_calling.py::"
LC_TOOLS = "langchain libs/core/tests/unit_tests/test_tools.py::"
KODE = "kode (Epydoc, which no peer tests)::"

UNSET: Any = object()
NO_OUTPUT = "(the tool returned no output)"


@dataclasses.dataclass(frozen=True)
class Case:
    """One function, what kode should make of it, and where the fact comes from."""

    id: str
    source: str
    fn: Any
    options: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    description: Any = UNSET
    """The tool's description."""
    params: Any = UNSET
    """Each property's description (`None`: it has none), in schema order."""
    properties: Any = UNSET
    """Properties whose whole schema is checked (a subset of the schema's)."""
    required: Any = UNSET
    schema: Any = UNSET
    """The whole input schema."""
    defs: Any = UNSET
    """``$defs`` entries checked (a subset)."""
    output_schema: Any = UNSET
    calls: tuple[tuple[Mapping[str, Any], str], ...] = ()
    """Arguments a model sends, and the text of the result."""
    refused: tuple[tuple[Mapping[str, Any], str], ...] = ()
    """Arguments refused by validation, and a fragment of the error result."""
    error: str | None = None
    """A fragment of the `ToolDefinitionError` the definition raises."""
    deps: Any = None
    """The deps of the context the calls run with."""
    differs: str = ""
    """How and why kode differs from the project the fact comes from."""


class Cases(list[Case]):
    """The cases of one module: ``CASES.add(id=..., ...)`` appends one."""

    def add(self, **fields: Any) -> None:
        self.append(Case(**fields))
