"""``tool_result`` blocks: a `ToolResult` as the conversation holds it.

This module owns the conversion of a tool's result into the ``tool_result`` block the history
keeps (with text that can always be encoded, see `kode.agent.text`), and the blocks that
answer a call that did not run to its end.
"""

from __future__ import annotations

import json
from typing import Any, TypeVar

from pydantic import BaseModel

from kode.agent.text import clean_text
from kode.models.messages import (
    ContentBlock,
    ImageContent,
    Message,
    TextContent,
    ToolResultContent,
    ToolUseContent,
)
from kode.tools.errors import ToolErrorType
from kode.tools.results import TextBlock, ToolResult, error_result

__all__ = [
    "cancelled_result",
    "edited_result",
    "interrupted_result",
    "result_block",
    "results_message",
]


def result_block(call_id: str, result: ToolResult) -> ToolResultContent:
    """The ``tool_result`` block answering `call_id` with `result`."""
    is_error = result.is_error
    built = _BUILT and type(is_error) is bool and type(call_id) is str
    content: list[TextContent | ImageContent] = []
    for block in result.content:
        if isinstance(block, TextBlock):
            text = clean_text(block.text)
            content.append(
                _built(TextContent, {"type": "text", "text": text}, _TEXT)
                if built and type(text) is str
                else TextContent(text=text)
            )
        else:
            content.append(ImageContent.model_validate(block.to_dict()))
    if built:
        fields = {
            "type": "tool_result",
            "tool_use_id": call_id,
            "content": content,
            "is_error": is_error,
        }
        return _built(ToolResultContent, fields, _RESULT)
    return ToolResultContent(tool_use_id=call_id, content=content, is_error=is_error)


def edited_result(block: ToolResultContent, ran_with: dict[str, Any] | str) -> ToolResultContent:
    """`block` with a first line telling the model that a person changed the call's input.

    The ``tool_use`` block stays as the model wrote it (the history says what it asked for);
    its result says what ran instead, so the model's next step starts from what happened.
    """
    shown = ran_with if isinstance(ran_with, str) else json.dumps(ran_with, ensure_ascii=False)
    note = TextContent(
        text=clean_text(
            "The user changed the input of this call before approving it, so it ran with "
            f"{shown} instead of the input you sent."
        )
    )
    return block.model_copy(update={"content": [note, *block.content]})


def results_message(blocks: list[ContentBlock]) -> Message:
    """The user message answering a turn's calls with `blocks` (its ``tool_result`` blocks).

    The list becomes the message's content (a new list each turn); blocks that are not all
    ``tool_result`` blocks are validated as in any message.
    """
    if _BUILT and all(type(block) is ToolResultContent for block in blocks):
        return _built(Message, {"role": "user", "content": blocks}, _MESSAGE)
    return Message(role="user", content=blocks)


# A turn makes one tool_result block, and one text block in it, for every call: they are
# built here as pydantic's validation would build them from values already of the right
# types (a str, a list of blocks, a bool), in about half the time. Only while the models have
# no validators and pydantic keeps the internals checked below (else every block is validated
# as usual).
# (the setters of BaseModel's own slots, called directly: pydantic's __setattr__ would check
# each field, and object.__setattr__ looks each name up first)
_new = object.__new__


def _slot_setter(name: str) -> Any:
    """The setter of BaseModel's slot `name` (object.__setattr__'s, if it has none)."""
    slot = BaseModel.__dict__.get(name)
    setter = getattr(slot, "__set__", None)
    if setter is None:  # (then `_builds_as_validation` says no, as BaseModel.__slots__ differ)
        return lambda model, value: object.__setattr__(model, name, value)
    return setter


_set_dict = _slot_setter("__dict__")
_set_fields_set = _slot_setter("__pydantic_fields_set__")
_set_extra = _slot_setter("__pydantic_extra__")
_set_private = _slot_setter("__pydantic_private__")
_TEXT = frozenset({"text"})
_RESULT = frozenset({"tool_use_id", "content", "is_error"})
_MESSAGE = frozenset({"role", "content"})

_M = TypeVar("_M", bound=BaseModel)


def _built(cls: type[_M], fields: dict[str, Any], fields_set: frozenset[str]) -> _M:
    """A `cls` holding `fields` (every field, in order), made without validating them."""
    model = _new(cls)
    _set_dict(model, fields)
    _set_fields_set(model, set(fields_set))
    _set_extra(model, None)
    _set_private(model, None)
    return model


def _builds_as_validation() -> bool:
    """Whether `_built` makes the same blocks as validation, with this pydantic."""
    try:
        if set(BaseModel.__slots__) != {
            "__dict__",
            "__pydantic_fields_set__",
            "__pydantic_extra__",
            "__pydantic_private__",
        }:
            return False
        for model in (TextContent, ToolResultContent, Message):  # nothing validation would run
            found = model.__pydantic_decorators__
            validators = (found.validators, found.field_validators, found.model_validators)
            if model.__pydantic_post_init__ is not None or any(validators):
                return False
        text = TextContent(text="x")
        valid = ToolResultContent(tool_use_id="a", content=[text], is_error=True)
        made = _built(
            ToolResultContent,
            {
                "type": "tool_result",
                "tool_use_id": "a",
                "content": [_built(TextContent, {"type": "text", "text": "x"}, _TEXT)],
                "is_error": True,
            },
            _RESULT,
        )
        message = _built(Message, {"role": "user", "content": [made]}, _MESSAGE)
        validated = Message(role="user", content=[valid])
        return (
            message == validated
            and message.model_fields_set == validated.model_fields_set
            and message.model_dump_json() == validated.model_dump_json()
            and list(Message.model_fields) == ["role", "content"]
            and made == valid
            and made.model_fields_set == valid.model_fields_set
            and made.content[0].model_fields_set == text.model_fields_set
            and made.__pydantic_extra__ == valid.__pydantic_extra__
            and made.__pydantic_private__ == valid.__pydantic_private__
            and made.model_dump_json() == valid.model_dump_json()
            and list(TextContent.model_fields) == ["type", "text"]
            and list(ToolResultContent.model_fields)
            == ["type", "tool_use_id", "content", "is_error"]
        )
    except Exception:  # pragma: no cover - a pydantic that works otherwise
        return False


_BUILT = _builds_as_validation()


def cancelled_result(call: ToolUseContent) -> ToolResultContent:
    """The ``tool_result`` answering a call the run was interrupted before it finished."""
    return result_block(
        call.id,
        error_result(
            f"Tool '{call.name}' was cancelled: the run was interrupted before it finished.",
            type=ToolErrorType.CANCELLED,
        ),
    )


def interrupted_result(call: ToolUseContent, made: str = "") -> ToolResultContent:
    """The ``tool_result`` of a call that was running when its process stopped (resume).

    Its tool neither only reads nor is idempotent, so it is not run again. `made` says what
    became of the calls it made (a ``code_run`` script's), if it made any.
    """
    return result_block(
        call.id,
        error_result(
            f"Tool '{call.name}' was interrupted by a restart while it ran, and was not run "
            "again: it may have partly run. Check what it was doing before calling it again."
            + (f" {made}" if made else ""),
            type=ToolErrorType.EXECUTION_FAILED,
        ),
    )
