"""Translations between kode's tool objects and MCP's: kinds, annotations, results, content.

This module owns both directions of the mapping, so the two can be read side by side:

=============================  ===========================================================
kode ``Kind``                  MCP ``ToolAnnotations`` when serving
=============================  ===========================================================
read, search, think            ``readOnlyHint: true``
fetch                          ``readOnlyHint: true, openWorldHint: true``
move                           ``readOnlyHint: false, destructiveHint: false``
edit, delete                   ``readOnlyHint: false, destructiveHint: true``
execute                        ``readOnlyHint: false, destructiveHint: true, openWorldHint: true``
other                          no hints (MCP's defaults: may change and destroy things)
=============================  ===========================================================

When importing, the hints are coarser than kinds, so an imported tool is ``read`` (``fetch``
when it also says ``openWorldHint``) if it says ``readOnlyHint: true``, ``edit`` if it says it
is not read-only or gives a ``destructiveHint``, and ``other`` when it says nothing.

Results: a `ToolResult`'s text and image blocks become MCP content, its ``is_error`` becomes
``isError``, and a tool whose return type gives an output schema also returns
``structuredContent`` (wrapped as ``{"result": ...}`` when the schema is not an object, as
MCP requires before 2026-07-28). The other way, MCP text and images become blocks, and
resources and audio are described in text.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

import mcp_types as types

from kode.tools.errors import ToolErrorType
from kode.tools.kinds import Kind
from kode.tools.results import ContentBlock, ImageBlock, TextBlock, ToolResult

__all__ = [
    "annotations_for_kind",
    "call_result",
    "kind_from_annotations",
    "output_schema_for",
    "tool_result",
]

_READ_ONLY = frozenset({Kind.READ, Kind.SEARCH, Kind.THINK})


def annotations_for_kind(kind: Kind) -> types.ToolAnnotations | None:
    """The MCP hints that say what a tool of this kind does (see the table above)."""
    if kind in _READ_ONLY:
        return types.ToolAnnotations(read_only_hint=True)
    if kind is Kind.FETCH:
        return types.ToolAnnotations(read_only_hint=True, open_world_hint=True)
    if kind is Kind.MOVE:
        return types.ToolAnnotations(read_only_hint=False, destructive_hint=False)
    if kind in (Kind.EDIT, Kind.DELETE):
        return types.ToolAnnotations(read_only_hint=False, destructive_hint=True)
    if kind is Kind.EXECUTE:
        return types.ToolAnnotations(
            read_only_hint=False, destructive_hint=True, open_world_hint=True
        )
    return None


def kind_from_annotations(annotations: types.ToolAnnotations | None) -> Kind:
    """The kind of an imported tool, from its hints (see the module's docstring)."""
    if annotations is None:
        return Kind.OTHER
    if annotations.read_only_hint is True:
        return Kind.FETCH if annotations.open_world_hint is True else Kind.READ
    if annotations.read_only_hint is False or annotations.destructive_hint is not None:
        return Kind.EDIT
    return Kind.OTHER


def output_schema_for(schema: dict[str, Any] | None) -> tuple[dict[str, Any] | None, bool]:
    """The ``outputSchema`` to advertise for a tool's output schema, and whether it is wrapped.

    MCP (through 2025-11-25) wants an object schema; any other one is advertised as
    ``{"type": "object", "properties": {"result": schema}, "required": ["result"]}``.
    """
    if schema is None:
        return None, False
    if schema.get("type") == "object":
        return schema, False
    wrapped = {"type": "object", "properties": {"result": schema}, "required": ["result"]}
    if "$defs" in schema:
        # references point at the root: keep the definitions there
        inner = {k: v for k, v in schema.items() if k != "$defs"}
        wrapped = {**wrapped, "properties": {"result": inner}, "$defs": schema["$defs"]}
    return wrapped, True


def _mcp_content(block: ContentBlock) -> types.TextContent | types.ImageContent:
    if isinstance(block, ImageBlock):
        return types.ImageContent(
            data=base64.b64encode(block.data).decode("ascii"), mime_type=block.media_type
        )
    return types.TextContent(text=block.text)


def call_result(
    result: ToolResult, *, has_output_schema: bool, wrapped: bool
) -> types.CallToolResult:
    """A kode `ToolResult` as an MCP ``CallToolResult``.

    `has_output_schema` and `wrapped` come from `output_schema_for`: structured content is
    sent for a successful call of a tool that advertises an output schema.
    """
    content: list[types.ContentBlock] = [_mcp_content(b) for b in result.content]
    structured: Any = None
    if has_output_schema and not result.is_error:
        if wrapped:
            structured = {"result": result.details}
        elif isinstance(result.details, dict):
            structured = result.details
    if structured is None:
        return types.CallToolResult(content=content, is_error=result.is_error)
    return types.CallToolResult(
        content=content, structured_content=structured, is_error=result.is_error
    )


def _kode_block(item: types.ContentBlock) -> ContentBlock:
    if isinstance(item, types.TextContent):
        return TextBlock(text=item.text)
    if isinstance(item, types.ImageContent):
        try:
            return ImageBlock(data=base64.b64decode(item.data), media_type=item.mime_type)
        except (binascii.Error, ValueError):
            return TextBlock(text=f"[an image ({item.mime_type}) that was not valid base64]")
    if isinstance(item, types.AudioContent):
        return TextBlock(text=f"[audio ({item.mime_type}), which kode cannot show to a model]")
    if isinstance(item, types.EmbeddedResource):
        resource = item.resource
        if isinstance(resource, types.TextResourceContents):
            return TextBlock(text=f"[resource {resource.uri}]\n{resource.text}")
        return TextBlock(
            text=f"[resource {resource.uri} ({resource.mime_type or 'binary'}), not shown]"
        )
    if isinstance(item, types.ResourceLink):
        what = f": {item.description}" if item.description else ""
        return TextBlock(text=f"[resource link {item.uri} ({item.name}){what}]")
    return TextBlock(text=f"[{type(item).__name__} content, which kode cannot show]")


def tool_result(result: types.CallToolResult, *, tool_name: str) -> ToolResult:
    """An MCP ``CallToolResult`` as a kode `ToolResult` (``details``: the structured content).

    A result without content shows its structured content as JSON text, so a model never sees
    nothing. An error result keeps the server's text and gets the ``execution_failed`` type.
    """
    blocks = tuple(_kode_block(item) for item in result.content)
    if not blocks:
        if result.structured_content is not None:
            text = json.dumps(result.structured_content, ensure_ascii=False)
        elif result.is_error:
            text = f"Tool '{tool_name}' failed on its MCP server without saying why."
        else:
            text = "(the tool returned no output)"
        blocks = (TextBlock(text=text),)
    return ToolResult(
        content=blocks,
        details=result.structured_content,
        is_error=result.is_error,
        error_type=ToolErrorType.EXECUTION_FAILED if result.is_error else None,
    )
