"""What a tool call produces: `ToolResult`, its content blocks, and the conversion of values.

This module owns the normal form of a tool's outcome and turns whatever a function returned
into it. It does not run tools or catch their exceptions (see `kode.tools.core`).
"""

from __future__ import annotations

import base64
import dataclasses
import itertools
import mimetypes
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pydantic_core

from kode.tools.display import result_markdown, result_repr
from kode.tools.errors import ToolErrorType
from kode.tools.invocation import Display
from kode.tools.plain import is_json_data, is_plain_data

__all__ = [
    "EMPTY_RESULT_TEXT",
    "ContentBlock",
    "Image",
    "ImageBlock",
    "TextBlock",
    "ToolResult",
    "error_result",
    "image_result",
    "inline_result",
    "json_result",
    "text_result",
    "to_result",
]

EMPTY_RESULT_TEXT = "(the tool returned no output)"

MAX_ITERATOR_ITEMS = 100_000
"""A tool may return an iterator (a generator) of at most this many items; it is shown as a
list. An endless generator is cut here and becomes an ``invalid_result`` error."""
"""The text of the result of a tool that returned `None`, so a model never sees nothing."""

_IMAGE_SIGNATURES: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


def _sniff_image(data: bytes) -> str | None:
    for signature, media_type in _IMAGE_SIGNATURES:
        if data.startswith(signature):
            return media_type
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


@dataclass(kw_only=True, frozen=True, slots=True)
class TextBlock:
    """A block of text in a tool result."""

    text: str
    """The text."""
    type: Literal["text"] = "text"

    def to_dict(self) -> dict[str, Any]:
        """The Anthropic-style content block."""
        return {"type": "text", "text": self.text}


@dataclass(kw_only=True, frozen=True, slots=True)
class ImageBlock:
    """An image in a tool result."""

    data: bytes
    """The raw image bytes."""
    media_type: str
    """The MIME type, e.g. ``image/png``."""
    type: Literal["image"] = "image"

    def to_dict(self) -> dict[str, Any]:
        """The Anthropic-style content block, with the data base64-encoded."""
        return {
            "type": "image",
            "source": {
                "type": "base64",
                "media_type": self.media_type,
                "data": base64.b64encode(self.data).decode("ascii"),
            },
        }


ContentBlock = TextBlock | ImageBlock
"""A block of a tool result's content."""


@dataclass(kw_only=True, frozen=True, slots=True)
class Image:
    r"""An image value a tool can return; it becomes an image block.

    Example:
        ```python
        from kode import Image

        png = Image(data=b"\x89PNG\r\n\x1a\n...", media_type="image/png")
        ```
    """

    data: bytes
    """The raw image bytes."""
    media_type: str = "image/png"
    """The MIME type, e.g. ``image/png``."""

    @classmethod
    def from_path(cls, path: str | Path) -> Image:
        """Read an image file, taking its media type from its content or its name."""
        data = Path(path).read_bytes()
        media_type = _sniff_image(data) or mimetypes.guess_type(str(path))[0]
        if media_type is None or not media_type.startswith("image/"):
            raise ValueError(f"{path} is not a recognised image (PNG, JPEG, GIF or WebP)")
        return cls(data=data, media_type=media_type)


@dataclass(kw_only=True, frozen=True, slots=True)
class ToolResult:
    """The outcome of one tool call: content for the model, details for the program.

    `content` is what the model sees; `details` is structured data for the caller (the
    JSON-able form of what the tool returned) and is never sent to the model.
    """

    content: tuple[ContentBlock, ...]
    """The blocks shown to the model, in order."""
    details: Any = None
    """Structured data about the result, for programs (never shown to the model). For a value
    a tool returned, its JSON-able form: a dict or list of plain JSON data is kept as the tool
    returned it (the same object, not a copy)."""
    is_error: bool = False
    """Whether the call failed."""
    error_type: ToolErrorType | None = None
    """Why the call failed, when `is_error` is true."""
    metadata: dict[str, Any] = field(default_factory=dict)
    """Free-form data a pipeline attaches (timings, the tool name, ...)."""
    pending: bool = False
    """Whether the call is waiting for the caller to run it (a client tool): the content then
    says so, and the real result comes from the caller."""
    display: Display | None = None
    """What to show a person (a diff, a todo list, a command's output) instead of the content:
    events and ``kode run`` show it; it never reaches the model."""

    @property
    def text(self) -> str:
        """All text blocks joined with newlines (images are left out)."""
        return "\n".join(b.text for b in self.content if isinstance(b, TextBlock))

    def to_block(self, tool_use_id: str) -> dict[str, Any]:
        """The ``tool_result`` content block answering the ``tool_use`` with this id."""
        return {
            "type": "tool_result",
            "tool_use_id": tool_use_id,
            "content": [b.to_dict() for b in self.content],
            "is_error": self.is_error,
        }

    def __repr__(self) -> str:
        return result_repr(
            self.content,
            details=self.details,
            is_error=self.is_error,
            error_type=self.error_type,
            metadata=self.metadata,
            pending=self.pending,
        )

    def _repr_markdown_(self) -> str:
        return result_markdown(
            self.content, is_error=self.is_error, error_type=self.error_type, pending=self.pending
        )


# ToolResult and TextBlock are frozen, so their generated __init__ sets each field through
# object.__setattr__: about 1.8 us for one text result, as much as validating the arguments.
# The constructors below fill the slots directly (same objects, same defaults); the check
# under them fails at import if a field is added and they were not updated.
_new = object.__new__
_set_text = TextBlock.__dict__["text"].__set__
_set_block_type = TextBlock.__dict__["type"].__set__
_set_content = ToolResult.__dict__["content"].__set__
_set_details = ToolResult.__dict__["details"].__set__
_set_is_error = ToolResult.__dict__["is_error"].__set__
_set_error_type = ToolResult.__dict__["error_type"].__set__
_set_metadata = ToolResult.__dict__["metadata"].__set__
_set_pending = ToolResult.__dict__["pending"].__set__
_set_display = ToolResult.__dict__["display"].__set__
if [f.name for f in dataclasses.fields(ToolResult)] != [
    "content",
    "details",
    "is_error",
    "error_type",
    "metadata",
    "pending",
    "display",
] or [f.name for f in dataclasses.fields(TextBlock)] != ["text", "type"]:  # pragma: no cover
    raise RuntimeError("kode.tools.results: update _result and _text_block to the new fields")


def _text_block(text: str) -> TextBlock:
    """`TextBlock(text=text)`, without the frozen dataclass's per-field setattr calls."""
    block: TextBlock = _new(TextBlock)
    _set_text(block, text)
    _set_block_type(block, "text")
    return block


def _result(
    content: tuple[ContentBlock, ...],
    details: Any = None,
    is_error: bool = False,
    error_type: ToolErrorType | None = None,
    display: Display | None = None,
) -> ToolResult:
    """`ToolResult(...)`, without the frozen dataclass's per-field setattr calls."""
    result: ToolResult = _new(ToolResult)
    _set_content(result, content)
    _set_details(result, details)
    _set_is_error(result, is_error)
    _set_error_type(result, error_type)
    _set_metadata(result, {})
    _set_pending(result, False)
    _set_display(result, display)
    return result


_EMPTY_BLOCK = TextBlock(text=EMPTY_RESULT_TEXT)
_INLINE_TYPES = frozenset({ToolResult, int, float, bool, type(None), bytes, Image})
"""The values `to_result` turns into a result with no work that depends on their content."""


def text_result(text: str, *, details: Any = None, display: Display | None = None) -> ToolResult:
    """A result holding one text block (and what to show a person instead, if given)."""
    return _result((_text_block(text),), details, display=display)


def json_result(value: Any, *, indent: int | None = None) -> ToolResult:
    """A result showing `value` as JSON text, with its JSON-able form kept in `details`.

    Accepts anything pydantic can serialise: dicts, lists, models, dataclasses, dates, UUIDs.
    """
    jsonable = pydantic_core.to_jsonable_python(value)
    text = pydantic_core.to_json(jsonable, indent=indent).decode()
    return _result((_text_block(text),), jsonable)


def image_result(
    image: Image | bytes, *, media_type: str | None = None, caption: str | None = None
) -> ToolResult:
    """A result holding one image block (and a caption text block, if given).

    Raises:
        ValueError: `image` is bytes whose format is not recognised and no `media_type` given.
    """
    kind: str | None
    if isinstance(image, Image):
        data, kind = image.data, media_type or image.media_type
    else:
        data, kind = image, media_type or _sniff_image(image)
        if kind is None:
            raise ValueError(
                f"{len(image)} bytes are not a recognised image (PNG, JPEG, GIF or WebP); "
                "pass media_type=... or return str for text"
            )
    blocks: list[ContentBlock] = [ImageBlock(data=data, media_type=kind)]
    if caption:
        blocks.append(TextBlock(text=caption))
    return ToolResult(content=tuple(blocks), details={"media_type": kind, "bytes": len(data)})


def error_result(
    message: str,
    *,
    type: ToolErrorType | str = ToolErrorType.TOOL_ERROR,
    details: Any = None,
) -> ToolResult:
    """An error result with one text block the model can act on."""
    return _result(
        (_text_block(message),),
        details,
        True,
        type if isinstance(type, ToolErrorType) else ToolErrorType(type),
    )


def _article(noun: str) -> str:
    return f"an {noun}" if noun[:1].lower() in "aeiou" else f"a {noun}"


def to_result(value: Any, *, tool_name: str) -> ToolResult:
    """Turn whatever a tool returned into a `ToolResult`.

    `str` becomes text; `None` becomes `EMPTY_RESULT_TEXT`; a `ToolResult` passes through;
    an `Image` or image bytes becomes an image block; anything else pydantic can serialise
    (dicts, lists, models, dataclasses, numbers, ...) becomes JSON text with `details` set.
    A value that cannot be serialised becomes an ``invalid_result`` error naming its type.
    """
    if type(value) is str:
        return _result((_text_block(value),))
    if value is None:
        return _result((_EMPTY_BLOCK,))
    if type(value) is dict or type(value) is list:  # none of the checks below applies
        if is_json_data(value):
            return _json_data_result(value, tool_name)
        return _json_or_error(value, tool_name)
    if isinstance(value, ToolResult):
        return value
    if isinstance(value, str):  # str subclasses (e.g. enums)
        return _result((_text_block(str.__str__(value)),))
    if isinstance(value, Image):
        return image_result(value)
    if isinstance(value, bytes | bytearray | memoryview):
        data = bytes(value)
        if _sniff_image(data) is None:
            return error_result(
                f"Tool {tool_name!r} returned {len(data)} bytes that are not a recognised image "
                "(PNG, JPEG, GIF or WebP).",
                type=ToolErrorType.INVALID_RESULT,
            )
        return image_result(data)
    if dataclasses.is_dataclass(value) and isinstance(value, type):
        value = repr(value)
    if isinstance(value, Iterator):  # a generator: shown as a list, if it ends soon enough
        items = list(itertools.islice(value, MAX_ITERATOR_ITEMS + 1))
        if len(items) > MAX_ITERATOR_ITEMS:
            return error_result(
                f"Tool {tool_name!r} returned an iterator with more than "
                f"{MAX_ITERATOR_ITEMS:,} items; return a list, or fewer items.",
                type=ToolErrorType.INVALID_RESULT,
            )
        value = items
    return _json_or_error(value, tool_name)


def inline_result(value: Any, *, tool_name: str) -> ToolResult | None:
    """`to_result(value)` when that is quick work on plain data, else `None`.

    `None` means the conversion could hold the event loop (an iterator, which may never end;
    an object whose serialisation runs code of its own; a value past `MAX_INLINE_VALUES`), so
    the caller makes it in a worker thread. See `kode.tools.plain`.
    """
    kind = type(value)
    if kind is str:
        return _result((_text_block(value),))
    if kind is dict or kind is list:
        if is_json_data(value):
            return _json_data_result(value, tool_name)
    elif kind in _INLINE_TYPES:
        return to_result(value, tool_name=tool_name)
    if is_plain_data(value):
        return to_result(value, tool_name=tool_name)
    return None


def _json_data_result(value: dict[str, Any] | list[Any], tool_name: str) -> ToolResult:
    """The result for a dict or list `is_json_data` accepted: it is its own JSON-able form."""
    try:
        text = pydantic_core.to_json(value).decode()
    except (pydantic_core.PydanticSerializationError, ValueError) as exc:  # lone surrogates
        return _cannot_show(value, tool_name, exc)
    return _result((_text_block(text),), value)


def _cannot_show(value: Any, tool_name: str, exc: Exception) -> ToolResult:
    return error_result(
        f"Tool {tool_name!r} returned {_article(type(value).__name__)} that cannot be shown "
        f"to a model: {exc}",
        type=ToolErrorType.INVALID_RESULT,
    )


def _json_or_error(value: Any, tool_name: str) -> ToolResult:
    """`json_result(value)`, or the ``invalid_result`` error saying why it cannot be made."""
    try:
        return json_result(value)
    except (pydantic_core.PydanticSerializationError, TypeError, ValueError) as exc:
        return _cannot_show(value, tool_name, exc)
