r"""Text that can always be saved: lone surrogates replaced where text enters an agent.

A Python string can hold a lone UTF-16 surrogate (``"\ud800"``: from a JSON escape a model
wrote, a file decoded with ``surrogateescape``, a tool's own string). UTF-8 cannot encode it,
so one such character in the history makes ``agent.state`` fail to serialise and a provider
request fail to send. This module owns the replacement, applied at the boundaries: the prompt,
the model's messages and tool results. Valid surrogate pairs become the character they encode;
a lone one becomes U+FFFD.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeVar

from pydantic import BaseModel
from pydantic_core import to_json

from kode.models.messages import Message, TextContent, ToolUseContent
from kode.tools.validation import MAX_INPUT_DEPTH

__all__ = ["CUT_MARK", "clean_message", "clean_text", "clean_value"]

T = TypeVar("T")


def clean_text(text: str) -> str:
    """`text` with lone surrogates replaced by U+FFFD (unchanged, and not copied, if none)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def clean_value(value: T) -> T:
    """`value` (a string, a list, a dict or a pydantic model) with every string cleaned.

    Without recursion, so a value nested thousands of levels deep is cleaned like any other.
    """
    cleaned: T = _rebuild(value, None)
    return cleaned


def _rebuild(value: Any, cut_below: int | None) -> Any:
    """`value` with every string cleaned, and containers below level `cut_below` cut.

    Containers (lists, dicts, models) deeper than `cut_below` levels (`value` is level 1) are
    replaced by `CUT_MARK`; `None` cuts nothing. Iterative: each list, dict and model is copied
    when first met, its items filled in as they are reached; a model is copied with its cleaned
    fields once all of them are (an entry below its fields on the stack).
    """
    out: list[Any] = [None]
    # (value, where its copy goes, under which key or index, its level)
    stack: list[tuple[Any, Any, Any, int]] = [(value, out, 0, 1)]
    while stack:
        item, target, key, depth = stack.pop()
        if type(item) is _Finish:
            target[key] = item.model.model_copy(update=item.updates)
            continue
        if isinstance(item, str):
            target[key] = clean_text(item)
            continue
        is_container = isinstance(item, list | dict | BaseModel)
        if is_container and cut_below is not None and depth > cut_below:
            target[key] = CUT_MARK
        elif isinstance(item, list):
            copied: list[Any] = [None] * len(item)
            target[key] = copied
            stack.extend((v, copied, i, depth + 1) for i, v in enumerate(item))
        elif isinstance(item, dict):
            mapping: dict[Any, Any] = {}
            target[key] = mapping
            for k, v in item.items():
                k = clean_text(k) if isinstance(k, str) else k
                mapping[k] = None  # keeps the order; the value is filled in below
                stack.append((v, mapping, k, depth + 1))
        elif isinstance(item, BaseModel):
            finish = _Finish(item)
            stack.append((finish, target, key, depth))
            stack.extend(
                (getattr(item, name), finish.updates, name, depth + 1)
                for name in type(item).model_fields
            )
        else:
            target[key] = item
    return out[0]


class _Finish:
    """A model whose fields are being cleaned, copied once they all are."""

    __slots__ = ("model", "updates")

    def __init__(self, model: BaseModel) -> None:
        self.model = model
        self.updates: dict[str, Any] = {}


CUT_MARK = "[cut: nested too deeply]"
"""What stands in the history for the part of a model's tool input nested deeper than
`MAX_INPUT_DEPTH` + 1 levels (the call is refused as invalid arguments either way)."""


def _shallow(raw: dict[str, Any]) -> bool:
    """Whether `raw` has no object or list below the items of its values (three levels).

    Most calls look like that; checking it costs a third of walking them level by level.
    """
    for value in raw.values():
        kind = type(value)
        if kind is list:
            items: Iterable[Any] = value
        elif kind is dict:
            items = value.values()
        else:
            continue
        for item in items:
            kind = type(item)
            if kind is list:
                inner: Iterable[Any] = item
            elif kind is dict:
                inner = item.values()
            else:
                continue
            for leaf in inner:
                kind = type(leaf)
                if kind is list or kind is dict:
                    return False
    return True


def _too_deep(raw: dict[str, Any]) -> bool:
    """Whether a ``tool_use`` input is nested deeper than `MAX_INPUT_DEPTH` levels."""
    level = [v for v in raw.values() if type(v) is dict or type(v) is list]
    depth = 1
    while level:
        depth += 1
        if depth > MAX_INPUT_DEPTH:
            return True
        below: list[Any] = []
        for value in level:
            below.extend(value.values() if type(value) is dict else value)
        level = [v for v in below if type(v) is dict or type(v) is list]
    return False


def _already_clean(message: Message) -> bool:
    """Whether `message` encodes as JSON (UTF-8) and no ``tool_use`` input is too deep.

    One pass over the blocks, then one encoding in pydantic's Rust core: the strings of text
    and ``tool_use`` blocks are encoded as they are (a call's id, name and input; a text's
    text), other blocks as models, so the same strings are encoded as through the message's
    own serializer, without its per-block dispatch (a turn of 1,000 calls costs a third).
    """
    pieces: list[Any] = []
    add = pieces.append
    for block in message.content:
        if type(block) is ToolUseContent:
            add(block.id)
            add(block.name)
            raw = block.input
            add(raw)
            if type(raw) is dict and not _shallow(raw) and _too_deep(raw):
                return False
        elif type(block) is TextContent:
            add(block.text)
        else:
            add(block)
    try:
        to_json(pieces)
    except ValueError:  # pydantic_core.PydanticSerializationError is a ValueError
        return False
    return True


def clean_message(message: Message) -> Message:
    """`message` itself if it encodes and its tool input is not too deep, else a clean copy.

    In the copy, every string is cleaned, and a ``tool_use`` input nested deeper than
    `MAX_INPUT_DEPTH` levels is cut one level below the limit (`CUT_MARK` stands for the rest),
    so the history can always be saved and sent; validation refuses such a call.
    """
    if _already_clean(message):
        return message
    blocks: list[Any] = []
    for block in message.content:
        if type(block) is ToolUseContent and type(block.input) is dict:
            block = block.model_copy(
                update={
                    "id": clean_text(block.id),
                    "name": clean_text(block.name),
                    "input": _rebuild(block.input, MAX_INPUT_DEPTH + 1),
                }
            )
        else:
            block = _rebuild(block, None)
        blocks.append(block)
    return message.model_copy(update={"content": blocks})
