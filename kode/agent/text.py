r"""Text that can always be saved: lone surrogates replaced where text enters an agent.

A Python string can hold a lone UTF-16 surrogate (``"\ud800"``: from a JSON escape a model
wrote, a file decoded with ``surrogateescape``, a tool's own string). UTF-8 cannot encode it,
so one such character in the history makes ``agent.state`` fail to serialise and a provider
request fail to send. This module owns the replacement, applied at the boundaries: the prompt,
the model's messages and tool results. Valid surrogate pairs become the character they encode;
a lone one becomes U+FFFD.
"""

from __future__ import annotations

from typing import TypeVar

from pydantic import BaseModel

from kode.models.messages import Message

__all__ = ["clean_message", "clean_text", "clean_value"]

T = TypeVar("T")


def clean_text(text: str) -> str:
    """`text` with lone surrogates replaced by U+FFFD (unchanged, and not copied, if none)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def _encodable(message: Message) -> bool:
    """Whether the message encodes as JSON (UTF-8): one pass in pydantic's Rust core."""
    try:
        message.__pydantic_serializer__.to_json(message)
    except ValueError:  # pydantic_core.PydanticSerializationError is a ValueError
        return False
    return True


def clean_value(value: T) -> T:
    """`value` (a string, a list, a dict or a pydantic model) with every string cleaned."""
    if isinstance(value, str):
        return clean_text(value)  # type: ignore[return-value]
    if isinstance(value, list):
        return [clean_value(v) for v in value]  # type: ignore[return-value]
    if isinstance(value, dict):
        return {clean_value(k): clean_value(v) for k, v in value.items()}  # type: ignore[return-value]
    if isinstance(value, BaseModel):
        updates = {name: clean_value(getattr(value, name)) for name in type(value).model_fields}
        return value.model_copy(update=updates)
    return value


def clean_message(message: Message) -> Message:
    """`message` itself if it encodes, else a copy with every string cleaned."""
    if _encodable(message):
        return message
    return clean_value(message)
