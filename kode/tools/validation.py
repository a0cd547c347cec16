"""Validating a model's arguments, and saying what was wrong in words a model can act on.

This module owns the path from raw input (a dict or a JSON string) to keyword arguments, and
the short error message when that fails. The fast path is one pydantic call; the repairs for
habits of models (a JSON-encoded string where an object or list is expected, ``null`` for an
optional parameter) run only after a first failure, so valid input pays nothing for them.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from kode.tools.errors import ToolError, ToolErrorType

__all__ = ["format_validation_error", "validate_arguments"]

_CONTAINER_ERRORS = frozenset(
    {
        "model_type",
        "model_attributes_type",
        "dataclass_type",
        "dataclass_exact_type",
        "dict_type",
        "list_type",
        "tuple_type",
        "set_type",
        "frozen_set_type",
        "is_instance_of",
    }
)
_MAX_INPUT_REPR = 60


def _short(value: Any) -> str:
    text = (
        json.dumps(value, default=repr, ensure_ascii=False)
        if not isinstance(value, str)
        else json.dumps(value, ensure_ascii=False)
    )
    if len(text) > _MAX_INPUT_REPR:
        text = text[: _MAX_INPUT_REPR - 1] + "…"
    return text


def _loc(loc: Sequence[int | str]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out or "(arguments)"


def _describe(err: ErrorDetails, params: Sequence[str]) -> str:
    where = _loc(err["loc"])
    kind = err["type"]
    if kind == "missing":
        return f"'{where}' is required but missing"
    if kind == "extra_forbidden":
        if len(err["loc"]) == 1:
            accepted = ", ".join(params) if params else "none"
            return f"'{where}' is not a parameter of this tool (parameters: {accepted})"
        return f"'{where}' is not an accepted field"
    msg = err["msg"]
    if msg.startswith("Input should be"):
        msg = "should be" + msg[len("Input should be") :]
    elif msg.startswith("Value error, "):
        msg = msg[len("Value error, ") :]
    return f"'{where}' {msg}, got {_short(err['input'])}" if "input" in err else f"'{where}' {msg}"


def format_validation_error(
    tool_name: str, errors: Sequence[ErrorDetails], params: Sequence[str]
) -> str:
    """One message naming each bad field, what it got and what was expected."""
    parts = [_describe(e, params) for e in errors[:8]]
    more = len(errors) - len(parts)
    if more > 0:
        parts.append(f"and {more} more")
    return (
        f"Invalid arguments for tool '{tool_name}': {'; '.join(parts)}. "
        "Fix the arguments and call the tool again."
    )


def _repair(data: dict[str, Any], errors: Sequence[ErrorDetails]) -> dict[str, Any] | None:
    """A copy of `data` with the repairable mistakes fixed, or `None` if nothing was fixable."""
    fixed: dict[str, Any] | None = None
    for err in errors:
        loc = err["loc"]
        value = err.get("input")
        if not loc:
            continue
        action: str
        if err["type"] in _CONTAINER_ERRORS and isinstance(value, str):
            try:
                decoded = json.loads(value)
            except ValueError:
                continue
            if not isinstance(decoded, dict | list):
                continue
            action = "set"
        elif value is None and err["type"] != "missing":
            action = "drop"  # null for an optional parameter means "use the default"
            decoded = None
        else:
            continue
        if fixed is None:
            fixed = copy.deepcopy(data)
        parent: Any = fixed
        try:
            for part in loc[:-1]:
                parent = parent[part]
            if action == "set":
                parent[loc[-1]] = decoded
            elif isinstance(parent, dict) and loc[-1] in parent:
                del parent[loc[-1]]
        except (KeyError, IndexError, TypeError):
            continue
    return fixed


def validate_arguments(
    model: type[BaseModel],
    raw: Any,
    *,
    tool_name: str,
    params: Sequence[str],
    field_to_param: Mapping[str, str] | None,
) -> dict[str, Any]:
    """Validate `raw` against `model`; return the keyword arguments for the function.

    Raises:
        ToolError: of type ``invalid_tool_params``, with a message for the model.
    """
    if type(raw) is not dict:
        if raw is None:
            raw = {}
        elif isinstance(raw, str | bytes | bytearray):
            try:
                raw = json.loads(raw) if raw.strip() else {}
            except ValueError as exc:
                raise ToolError(
                    f"Invalid arguments for tool '{tool_name}': the arguments are not valid "
                    f"JSON ({exc}). Send a JSON object.",
                    type=ToolErrorType.INVALID_TOOL_PARAMS,
                ) from None
        if isinstance(raw, Mapping) and type(raw) is not dict:
            raw = dict(raw)
        if type(raw) is not dict:
            raise ToolError(
                f"Invalid arguments for tool '{tool_name}': expected a JSON object with the "
                f"parameters by name, got {type(raw).__name__} {_short(raw)}.",
                type=ToolErrorType.INVALID_TOOL_PARAMS,
            )
    try:
        values = model.model_validate(raw).__dict__
    except ValidationError as first:
        errors = first.errors(include_url=False)
        repaired = _repair(raw, errors)
        if repaired is None:
            raise ToolError(
                format_validation_error(tool_name, errors, params),
                type=ToolErrorType.INVALID_TOOL_PARAMS,
            ) from None
        try:
            values = model.model_validate(repaired).__dict__
        except ValidationError as second:
            raise ToolError(
                format_validation_error(tool_name, second.errors(include_url=False), params),
                type=ToolErrorType.INVALID_TOOL_PARAMS,
            ) from None
    if field_to_param:
        return {field_to_param.get(k, k): v for k, v in values.items()}
    return values
