"""How a tool shows itself to a person: its signature and a notebook's markdown table.

This module owns `Tool`'s ``repr`` and ``_repr_markdown_``: the signature as a person reads it
(``Annotated`` metadata and module prefixes left out) and a table of the parameters from the
input schema. It does not describe tools to models (`kode.tools.dialects`).
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Mapping
from typing import Any

__all__ = ["format_signature", "tool_markdown"]


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
