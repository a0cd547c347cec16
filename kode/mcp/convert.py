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
MCP requires before 2026-07-28), checked against the advertised schema before it is sent (a
mismatch is an ``isError`` result saying so, never content contradicting the schema). The
other way, MCP text and images become blocks, an
embedded resource's text becomes text and its binary content an image (``image/*``), text
(textual types in UTF-8) or a file saved by `BlobFiles` and named in the text; audio and
resource links are described in text. Content annotations (audience, priority) are kept in
the result's ``metadata["mcp_annotations"]``, by block.
"""

from __future__ import annotations

import base64
import binascii
import json
import mimetypes
import re
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any

import mcp_types as types

from kode.tools.errors import ToolErrorType
from kode.tools.kinds import Kind
from kode.tools.results import ContentBlock, ImageBlock, TextBlock, ToolResult

__all__ = [
    "BlobFiles",
    "annotations_for_kind",
    "call_result",
    "kind_from_annotations",
    "output_problems",
    "output_schema_for",
    "resource_block",
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


def output_problems(value: Any, schema: dict[str, Any]) -> list[str]:
    """How `value` fails to match the JSON `schema`, one line per problem (empty: it matches).

    Each line names the place (``city.celsius: 'warm' is not of type 'number'``); the
    ``jsonschema`` package (which comes with the ``mcp`` extra) judges, by JSON Schema 2020-12.
    """
    import jsonschema  # type: ignore[import-untyped]

    validator = jsonschema.Draft202012Validator(schema)
    found = []
    for error in sorted(validator.iter_errors(value), key=lambda e: [str(p) for p in e.path]):
        where = ".".join(str(p) for p in error.path)
        found.append(f"{where}: {error.message}" if where else error.message)
    return found


_MAX_PROBLEMS = 5


def call_result(
    result: ToolResult,
    *,
    has_output_schema: bool,
    wrapped: bool,
    output_schema: dict[str, Any] | None = None,
    tool_name: str = "",
) -> types.CallToolResult:
    """A kode `ToolResult` as an MCP ``CallToolResult``.

    `has_output_schema` and `wrapped` come from `output_schema_for`: structured content is
    sent for a successful call of a tool that advertises an output schema. Given the advertised
    `output_schema`, that structured content is checked against it first: a result with none,
    or one that does not match, becomes an ``isError`` result naming `tool_name` and the
    problems (at most five), instead of content that contradicts the schema.
    """
    content: list[types.ContentBlock] = [_mcp_content(b) for b in result.content]
    structured: Any = None
    if has_output_schema and not result.is_error:
        if wrapped:
            structured = {"result": result.details}
        elif isinstance(result.details, dict):
            structured = result.details
        if output_schema is not None:
            problem = _mismatch(structured, output_schema, tool_name)
            if problem is not None:
                return types.CallToolResult(
                    content=[types.TextContent(text=problem)], is_error=True
                )
    if structured is None:
        return types.CallToolResult(content=content, is_error=result.is_error)
    return types.CallToolResult(
        content=content, structured_content=structured, is_error=result.is_error
    )


def _mismatch(structured: Any, schema: dict[str, Any], tool_name: str) -> str | None:
    if structured is None:
        return (
            f"Tool {tool_name!r} returned no structured result (a JSON object), though its "
            "output schema promises one: the result was not sent."
        )
    problems = output_problems(structured, schema)
    if not problems:
        return None
    more = len(problems) - _MAX_PROBLEMS
    listed = "; ".join(problems[:_MAX_PROBLEMS]) + (f"; and {more} more" if more > 0 else "")
    return (
        f"Tool {tool_name!r} returned a result that does not match its output schema "
        f"({listed}): the result was not sent."
    )


_TEXTUAL = ("text/", "application/json", "application/xml", "application/yaml")
_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


class BlobFiles:
    """Where the binary resources a server sends are saved, so a model can be told of them.

    Args:
        directory: The directory to save into (made if needed); `None`: a temporary directory
            made on first use and removed by `cleanup`.
    """

    def __init__(self, directory: str | Path | None = None) -> None:
        self.directory = Path(directory) if directory is not None else None
        """Where files go (`None` until the temporary directory is made)."""
        self._owned = directory is None
        self._lock = threading.Lock()

    def save(self, uri: str, mime_type: str | None, data: bytes) -> Path:
        """Save `data`, named after the last part of `uri`; return the file's path."""
        with self._lock:
            if self.directory is None:
                self.directory = Path(tempfile.mkdtemp(prefix="kode-mcp-"))
            self.directory.mkdir(parents=True, exist_ok=True)
            stem = _UNSAFE_NAME.sub("_", uri.rstrip("/").rsplit("/", 1)[-1]).strip("._")
            stem = (stem or "resource")[:80]
            if not Path(stem).suffix and mime_type:
                stem += mimetypes.guess_extension(mime_type) or ""
            path = self.directory / stem
            n = 1
            while path.exists():
                n += 1
                path = self.directory / f"{Path(stem).stem}-{n}{Path(stem).suffix}"
            path.write_bytes(data)
            return path

    def cleanup(self) -> None:
        """Remove the temporary directory (a directory that was given is left alone)."""
        with self._lock:
            if self._owned and self.directory is not None:
                shutil.rmtree(self.directory, ignore_errors=True)
                self.directory = None


def resource_block(
    resource: types.TextResourceContents | types.BlobResourceContents, files: BlobFiles | None
) -> ContentBlock:
    """One resource's contents as a block: text, an image, or a saved file named in text."""
    if isinstance(resource, types.TextResourceContents):
        return TextBlock(text=f"[resource {resource.uri}]\n{resource.text}")
    mime = resource.mime_type or "application/octet-stream"
    try:
        data = base64.b64decode(resource.blob, validate=True)
    except (binascii.Error, ValueError):
        return TextBlock(text=f"[resource {resource.uri} ({mime}) that was not valid base64]")
    if mime.startswith("image/"):
        return ImageBlock(data=data, media_type=mime)
    if mime.startswith(_TEXTUAL):
        try:
            return TextBlock(text=f"[resource {resource.uri}]\n{data.decode('utf-8')}")
        except UnicodeDecodeError:
            pass
    if files is None:
        return TextBlock(text=f"[resource {resource.uri} ({mime}, {len(data)} bytes)]")
    path = files.save(resource.uri, mime, data)
    return TextBlock(text=f"[resource {resource.uri} ({mime}, {len(data)} bytes) saved as {path}]")


def _kode_block(item: Any, files: BlobFiles | None) -> ContentBlock:
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
        return resource_block(item.resource, files)
    if isinstance(item, types.ResourceLink):
        what = f": {item.description}" if item.description else ""
        mime = f", {item.mime_type}" if item.mime_type else ""
        return TextBlock(text=f"[resource link {item.uri} ({item.name}{mime}){what}]")
    return TextBlock(text=f"[{type(item).__name__} content, which kode cannot show]")


def _annotations(items: list[Any]) -> list[dict[str, Any]]:
    found = []
    for index, item in enumerate(items):
        notes = getattr(item, "annotations", None)
        if notes is None:
            continue
        entry: dict[str, Any] = {"index": index}
        if notes.audience is not None:
            entry["audience"] = list(notes.audience)
        if notes.priority is not None:
            entry["priority"] = notes.priority
        if notes.last_modified is not None:
            entry["last_modified"] = notes.last_modified
        if len(entry) > 1:
            found.append(entry)
    return found


def tool_result(
    result: types.CallToolResult, *, tool_name: str, files: BlobFiles | None = None
) -> ToolResult:
    """An MCP ``CallToolResult`` as a kode `ToolResult` (``details``: the structured content).

    A result without content shows its structured content as JSON text, so a model never sees
    nothing. An error result keeps the server's text and gets the ``execution_failed`` type.
    Binary resources other than images and text are saved with `files` (see the module
    docstring); content annotations go to ``metadata["mcp_annotations"]``.
    """
    blocks = tuple(_kode_block(item, files) for item in result.content)
    annotations = _annotations(list(result.content))
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
        metadata={"mcp_annotations": annotations} if annotations else {},
    )
