"""Kinds and annotations, results and content, in both directions."""

from __future__ import annotations

import base64

import mcp.types as types
import pytest

from kode import Kind, ToolErrorType
from kode.mcp.convert import (
    annotations_for_kind,
    call_result,
    kind_from_annotations,
    output_schema_for,
    tool_result,
)
from kode.tools.results import ImageBlock, TextBlock, error_result, json_result, text_result

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 8


@pytest.mark.parametrize(
    ("kind", "read_only", "destructive", "open_world", "imported"),
    [
        (Kind.READ, True, None, None, Kind.READ),
        (Kind.SEARCH, True, None, None, Kind.READ),
        (Kind.THINK, True, None, None, Kind.READ),
        (Kind.FETCH, True, None, True, Kind.FETCH),
        (Kind.MOVE, False, False, None, Kind.EDIT),
        (Kind.EDIT, False, True, None, Kind.EDIT),
        (Kind.DELETE, False, True, None, Kind.EDIT),
        (Kind.EXECUTE, False, True, True, Kind.EDIT),
    ],
)
def test_kinds_and_annotations(
    kind: Kind, read_only: bool, destructive: bool | None, open_world: bool | None, imported: Kind
) -> None:
    hints = annotations_for_kind(kind)
    assert hints is not None
    assert (hints.read_only_hint, hints.destructive_hint, hints.open_world_hint) == (
        read_only,
        destructive,
        open_world,
    )
    assert kind_from_annotations(hints) is imported
    # mutating kinds stay mutating, read-only ones read-only, across the round trip
    assert imported.is_mutating == (not read_only)


def test_no_hints_is_other() -> None:
    assert annotations_for_kind(Kind.OTHER) is None
    assert kind_from_annotations(None) is Kind.OTHER
    assert kind_from_annotations(types.ToolAnnotations(title="Just a title")) is Kind.OTHER
    assert kind_from_annotations(types.ToolAnnotations(destructive_hint=False)) is Kind.EDIT


def test_output_schemas_are_objects() -> None:
    obj = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    assert output_schema_for(obj) == (obj, False)
    assert output_schema_for(None) == (None, False)
    assert output_schema_for({"type": "array", "items": {"type": "string"}}) == (
        {
            "type": "object",
            "properties": {"result": {"type": "array", "items": {"type": "string"}}},
            "required": ["result"],
        },
        True,
    )
    with_defs = {"type": "array", "items": {"$ref": "#/$defs/P"}, "$defs": {"P": obj}}
    wrapped, is_wrapped = output_schema_for(with_defs)
    assert is_wrapped and wrapped is not None
    assert wrapped["$defs"] == {"P": obj}
    assert wrapped["properties"]["result"] == {"type": "array", "items": {"$ref": "#/$defs/P"}}


def test_kode_results_as_mcp_results() -> None:
    ok = call_result(json_result({"a": 1}), has_output_schema=True, wrapped=False)
    assert ok.structured_content == {"a": 1} and not ok.is_error
    assert ok.content == [types.TextContent(text='{"a":1}')]
    wrapped = call_result(json_result([1, 2]), has_output_schema=True, wrapped=True)
    assert wrapped.structured_content == {"result": [1, 2]}
    plain = call_result(text_result("hi"), has_output_schema=False, wrapped=False)
    assert plain.structured_content is None
    failed = call_result(error_result("no"), has_output_schema=True, wrapped=False)
    assert failed.is_error and failed.structured_content is None
    image = call_result(
        text_result("x").__class__(content=(ImageBlock(data=PNG, media_type="image/png"),)),
        has_output_schema=False,
        wrapped=False,
    )
    assert image.content == [
        types.ImageContent(data=base64.b64encode(PNG).decode(), mime_type="image/png")
    ]


def test_mcp_results_as_kode_results() -> None:
    result = tool_result(
        types.CallToolResult(
            content=[
                types.TextContent(text="hello"),
                types.ImageContent(data=base64.b64encode(PNG).decode(), mime_type="image/png"),
                types.EmbeddedResource(
                    resource=types.TextResourceContents(uri="file:///a.txt", text="contents")
                ),
                types.ResourceLink(uri="file:///b.bin", name="b.bin"),
                types.AudioContent(data="", mime_type="audio/wav"),
            ],
            structured_content={"ok": True},
        ),
        tool_name="t",
    )
    assert not result.is_error and result.details == {"ok": True}
    assert result.content == (
        TextBlock(text="hello"),
        ImageBlock(data=PNG, media_type="image/png"),
        TextBlock(text="[resource file:///a.txt]\ncontents"),
        TextBlock(text="[resource link file:///b.bin (b.bin)]"),
        TextBlock(text="[audio (audio/wav), which kode cannot show to a model]"),
    )
    only_structured = tool_result(
        types.CallToolResult(content=[], structured_content={"n": 1}), tool_name="t"
    )
    assert only_structured.text == '{"n": 1}'
    error = tool_result(types.CallToolResult(content=[], is_error=True), tool_name="t")
    assert error.is_error and error.error_type is ToolErrorType.EXECUTION_FAILED
    assert error.text == "Tool 't' failed on its MCP server without saying why."
