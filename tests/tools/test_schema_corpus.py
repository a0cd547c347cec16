"""A corpus of function-to-schema cases, run through `define_tool`.

The facts come from the public tests of four projects that also turn Python functions into
tool schemas: pydantic-ai, the OpenAI Agents SDK, FastMCP and LangChain. Each fact is
rewritten here as a kode case (its own function, kode's expected schema, descriptions and
validation), and names the test it comes from in `source`. Where kode gives another answer
than that project on purpose, `differs` says which and why; a case without `differs` agrees
with the project. The Epydoc cases are kode's own: none of the four tests Epydoc.

The cases live in one module per project (corpus_openai_agents.py, corpus_pydantic_ai.py,
corpus_fastmcp.py, corpus_langchain.py, corpus_epydoc.py; the `Case` record in
corpus_case.py); this module runs them all.

A regression in schema inference (a default lost, a docstring misread, a description from
the wrong place) shows up here as a case whose expectation no longer holds.
"""

from __future__ import annotations

from typing import Any

import corpus_epydoc
import corpus_fastmcp
import corpus_langchain
import corpus_openai_agents
import corpus_pydantic_ai
import pytest
from corpus_case import UNSET, Case

from kode import Tool, ToolContext, ToolDefinitionError, define_tool

CASES: list[Case] = [
    *corpus_openai_agents.CASES,
    *corpus_pydantic_ai.CASES,
    *corpus_fastmcp.CASES,
    *corpus_langchain.CASES,
    *corpus_epydoc.CASES,
]


def build(c: Case) -> Tool[..., Any]:
    return define_tool(c.fn, registry=None, **c.options)


def run(tool: Tool[..., Any], c: Case, arguments: Any) -> Any:
    ctx = None
    if tool.spec is not None and tool.spec.context_param is not None:
        ctx = ToolContext(tool_name=tool.name, deps=c.deps)
    return tool.run_sync(arguments, ctx)


@pytest.mark.parametrize("c", CASES, ids=[c.id for c in CASES])
def test_case(c: Case) -> None:
    if c.error is not None:
        with pytest.raises(ToolDefinitionError) as info:
            build(c)
        assert c.error in str(info.value)
        return
    tool = build(c)
    schema = tool.input_schema
    if c.schema is not UNSET:
        assert schema == c.schema
    if c.description is not UNSET:
        assert tool.description == c.description
    if c.params is not UNSET:
        got = {name: prop.get("description") for name, prop in schema["properties"].items()}
        assert got == c.params
    if c.properties is not UNSET:
        if c.properties == {}:
            assert schema["properties"] == {}
        for name, expected in c.properties.items():
            assert schema["properties"][name] == expected, name
    if c.required is not UNSET:
        assert schema.get("required", []) == c.required
    if c.defs is not UNSET:
        for name, expected in c.defs.items():
            assert schema["$defs"][name] == expected, name
    if c.output_schema is not UNSET:
        assert tool.output_schema == c.output_schema
    for arguments, text in c.calls:
        result = run(tool, c, arguments)
        assert not result.is_error, result.text
        assert result.text == text
    for arguments, fragment in c.refused:
        result = run(tool, c, arguments)
        assert result.is_error
        assert fragment in result.text


def test_the_corpus_covers_each_project() -> None:
    assert len(CASES) >= 100
    assert len({c.id for c in CASES}) == len(CASES)
    counts: dict[str, int] = {}
    for c in CASES:
        project = c.source.split(" ", 1)[0]
        counts[project] = counts.get(project, 0) + 1
    assert set(counts) == {"openai-agents", "pydantic-ai", "fastmcp", "langchain", "kode"}
    assert min(counts.values()) >= 10, counts
    checked = ("description", "params", "properties", "required", "schema", "defs")
    for c in CASES:
        # Every case expects something.
        assert (
            c.error
            or c.calls
            or c.refused
            or c.output_schema is not UNSET
            or any(getattr(c, name) is not UNSET for name in checked)
        ), c.id
        # A case that differs on purpose says how in a sentence; kode's own cases cannot.
        if c.differs:
            assert not c.source.startswith("kode") and len(c.differs) > 20, c.id
