"""How a tool and its results show themselves to a person, in a ``repr`` and in a notebook.

This module owns `Tool`'s ``repr`` and ``_repr_markdown_`` (the signature as a person reads it,
``Annotated`` metadata and module prefixes left out, and a table of the parameters from the
input schema) and `ToolResult`'s (its outcome and text, cut to a readable length). It does not
describe tools to models (`kode.tools.dialects`).
"""

from __future__ import annotations

import base64
import inspect
import reprlib
import typing
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["format_signature", "result_markdown", "result_repr", "tool_markdown"]

REPR_TEXT_CHARS = 200
"""How much of a result's text its ``repr`` shows."""
MARKDOWN_TEXT_CHARS = 5_000
"""How much of a result's text a notebook shows."""
MARKDOWN_IMAGE_BYTES = 2_000_000
"""The largest image a notebook shows inline (larger ones are named, not shown)."""

_short = reprlib.Repr()
_short.maxstring = 80
_short.maxother = 80
_short.maxlist = _short.maxdict = _short.maxtuple = 6


def tool_markdown(
    name: str, description: str, signature: inspect.Signature, input_schema: Mapping[str, Any]
) -> str:
    """A tool as markdown: its name and signature, description and a table of parameters."""
    lines = [f"**`{name}`** `{format_signature(signature)}`", ""]
    if description:
        lines += [description, ""]
    props: dict[str, Any] = input_schema.get("properties", {})
    if props:
        required = set(input_schema.get("required", ()))
        lines += [
            "| parameter | type | required | default | description |",
            "|---|---|---|---|---|",
        ]
        for pname, prop in props.items():
            default = (repr(prop["default"]) if "default" in prop else "").replace("|", "\\|")
            desc = str(prop.get("description", "")).replace("|", "\\|")
            lines.append(
                f"| `{pname}` | {_type_label(prop)} | {'yes' if pname in required else 'no'}"
                f" | {default} | {desc} |"
            )
    else:
        lines.append("*No parameters.*")
    return "\n".join(lines)


def _type_label(prop: Mapping[str, Any]) -> str:
    if "$ref" in prop:
        return str(prop["$ref"]).rsplit("/", 1)[-1]
    if "enum" in prop:
        return " \\| ".join(repr(v) for v in prop["enum"])
    if "anyOf" in prop:
        return " \\| ".join(_type_label(p) for p in prop["anyOf"])
    t = prop.get("type", "any")
    if t == "array" and isinstance(prop.get("items"), Mapping):
        return f"array of {_type_label(prop['items'])}"
    return str(t)


def _format_annotation(annotation: Any) -> str:
    if typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    if isinstance(annotation, str):
        return (
            annotation.replace("Annotated[", "").split(",")[0]
            if "Annotated[" in annotation
            else annotation
        )
    text = inspect.formatannotation(annotation)
    return text.replace("typing.", "").replace("kode.tools.context.", "")


def format_signature(sig: inspect.Signature) -> str:
    """A signature as a person reads it: Annotated metadata and module prefixes left out."""
    parts: list[str] = []
    star_done = False
    for param in sig.parameters.values():
        if param.kind is param.KEYWORD_ONLY and not star_done:
            parts.append("*")
            star_done = True
        if param.kind is param.VAR_POSITIONAL:
            star_done = True
        text = param.name
        if param.annotation is not param.empty:
            text += f": {_format_annotation(param.annotation)}"
        if param.default is not param.empty:
            text += f" = {param.default!r}"
        parts.append(text)
    out = f"({', '.join(parts)})"
    if sig.return_annotation is not sig.empty:
        out += f" -> {_format_annotation(sig.return_annotation)}"
    return out


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def result_repr(
    content: Sequence[Any],
    *,
    details: Any,
    is_error: bool,
    error_type: Any,
    metadata: Mapping[str, Any],
    pending: bool,
) -> str:
    """A `ToolResult` in one line: its outcome, its text (cut), and the fields that are set.

    E.g. ``ToolResult(text='done', details={'files': 2})`` or
    ``ToolResult(error='permission_denied', text='The file is locked.')``.
    """
    parts: list[str] = []
    if is_error:
        parts.append(f"error={getattr(error_type, 'value', None)!r}" if error_type else "error")
    if pending:
        parts.append("pending")
    if all(getattr(b, "type", None) == "text" for b in content):
        text = "\n".join(b.text for b in content)
        parts.append(f"text={_cut(text, REPR_TEXT_CHARS)!r}")
    else:
        shown = [
            repr(_cut(b.text, REPR_TEXT_CHARS))
            if getattr(b, "type", None) == "text"
            else f"<{getattr(b, 'media_type', 'image')} image, {len(b.data):,} bytes>"
            for b in content
        ]
        parts.append(f"content=[{', '.join(shown)}]")
    if details is not None:
        parts.append(f"details={_short.repr(details)}")
    if metadata:
        parts.append(f"metadata={_short.repr(dict(metadata))}")
    return f"ToolResult({', '.join(parts)})"


def result_markdown(
    content: Sequence[Any], *, is_error: bool, error_type: Any, pending: bool
) -> str:
    """A `ToolResult` as markdown: its outcome, then its text and images as the model sees them."""
    if is_error:
        kind = getattr(error_type, "value", None)
        lines = [f"**✗ error**{f' `{kind}`' if kind else ''}"]
    else:
        lines = ["**⧗ pending**" if pending else "**✓ result**"]
    for block in content:
        if getattr(block, "type", None) == "text":
            text = block.text
            if len(text) > MARKDOWN_TEXT_CHARS:
                left = len(text) - MARKDOWN_TEXT_CHARS
                text = text[:MARKDOWN_TEXT_CHARS] + f"\n… ({left:,} more characters)"
            fence = "````" if "```" in text else "```"
            lines += ["", f"{fence}text", text, fence]
        elif len(block.data) <= MARKDOWN_IMAGE_BYTES:
            data = base64.b64encode(block.data).decode("ascii")
            lines += ["", f"![{block.media_type}](data:{block.media_type};base64,{data})"]
        else:
            lines += ["", f"*{block.media_type} image, {len(block.data):,} bytes (not shown)*"]
    return "\n".join(lines)
