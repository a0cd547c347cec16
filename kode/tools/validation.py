"""Validating a model's arguments, and saying what was wrong in words a model can act on.

This module owns the path from raw input (a dict or a JSON string) to keyword arguments, and
the short error message when that fails. The fast path is one pydantic call; the repairs for
habits of models (a JSON-encoded string where an object or list is expected, ``null`` for an
optional parameter) run only after a first failure, so valid input pays nothing for them.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails, SchemaValidator, from_json

__all__ = [
    "MAX_INPUT_DEPTH",
    "MAX_INPUT_VALUES",
    "ArgumentValidator",
    "InvalidArguments",
    "ValidatorFunc",
    "format_validation_error",
    "short_value",
]

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
_SUBJECT_SHOULD = re.compile(
    r"^(?:String|List|Tuple|Set|Dictionary|Value|Object|Decimal|Date|"
    r"Datetime|Number|Integer|Float|Data|Uuid|Url|Path) should "
)


@dataclass(frozen=True, slots=True)
class InvalidArguments:
    """A validator's verdict on input it refused: the message the model is shown."""

    message: str
    """Names each bad field, what it got and what was expected."""


ValidatorFunc = Callable[[Any], "dict[str, Any] | InvalidArguments"]
"""Turns a model's raw arguments into keyword arguments, or says why it cannot."""

MAX_DESCRIBED_ERRORS = 64
"""Past this many validation errors, only a trimmed copy of the input is examined for the
message (the first items of each long list): describing hundreds of thousands of errors one by
one took seconds, and the model is shown eight of them anyway."""

_TRIM_ITEMS = 8

MAX_INPUT_VALUES = 20_000
"""The most values (objects, lists and scalars, counted through every level) a call's
arguments may hold. Validating input that is wrong everywhere costs about 3 µs per value in
pydantic's core, which holds the event loop (and the GIL) while it works: at this cap that is
under 100 ms. A model's tool call never comes near it."""


MAX_INPUT_DEPTH = 128
"""The most levels of objects and lists inside one another a call's arguments may have (the
arguments object itself is level 1). Deeper input is refused before validation: a model's tool
call never comes near it, and walking it recursively (validation, encoding, saving an agent's
state) would exhaust Python's stack or pydantic's serialisation depth."""


def input_too_large(raw: Any, tool_name: str) -> str | None:
    """Why `raw` is refused before validation (too many values, too deep), or `None`.

    One pass, level by level and without recursion, that stops as soon as a limit is passed:
    `MAX_INPUT_VALUES` values (objects, lists and scalars, keys counted) or `MAX_INPUT_DEPTH`
    levels.
    """
    count = 1
    depth = 1
    level: list[Any] = [raw]  # the objects and lists of one level
    while True:
        below: list[Any] | None = None  # most input has no level below the arguments
        for value in level:
            if type(value) is dict:
                count += 2 * len(value)  # keys and values
                children: Iterable[Any] = value.values()
            else:
                count += len(value)
                children = value
            if count > MAX_INPUT_VALUES:
                return too_many_values_message(tool_name)
            for child in children:
                if type(child) is dict or type(child) is list:
                    if below is None:
                        below = [child]
                    else:
                        below.append(child)
        if below is None:
            return None
        depth += 1
        if depth > MAX_INPUT_DEPTH:
            return too_deep_message(tool_name)
        level = below


def too_deep_message(tool_name: str) -> str:
    """The refusal for input nested deeper than `MAX_INPUT_DEPTH`."""
    return (
        f"Invalid arguments for tool '{tool_name}': the arguments are nested more than "
        f"{MAX_INPUT_DEPTH} levels deep (objects and lists inside one another). Send flatter JSON."
    )


def too_many_values_message(tool_name: str) -> str:
    """The refusal for input over `MAX_INPUT_VALUES`."""
    return (
        f"Invalid arguments for tool '{tool_name}': the arguments hold more than "
        f"{MAX_INPUT_VALUES:,} values. Send less in one call (split the work over several)."
    )


_SCALARS = frozenset({str, int, float, bool, type(None)})
_SHORT_JSON = 2 * MAX_INPUT_DEPTH  # characters; far below MAX_INPUT_VALUES too
_GLANCE_VALUES = 4_096
"""Items in the containers `_within_limits_at_a_glance` accepts: with keys counted twice and
the 64 arguments, under half of `MAX_INPUT_VALUES`."""
if 2 * (64 + _GLANCE_VALUES) >= MAX_INPUT_VALUES or MAX_INPUT_DEPTH < 3:  # pragma: no cover
    raise RuntimeError("kode.tools.validation: the glance must stay within both input limits")


def _within_limits_at_a_glance(raw: dict[str, Any]) -> bool:
    """Whether `raw` is within both input limits without counting them level by level.

    It is when it holds at most 64 arguments, each a scalar or a list or object whose items
    are scalars or lists or objects of scalars, with at most `_GLANCE_VALUES` items in those
    containers in all: three levels and under ten thousand values, keys counted. Most calls
    look like that (a list of small objects among the arguments, say).
    """
    if len(raw) > 64:
        return False
    scalars = _SCALARS
    budget = _GLANCE_VALUES
    for value in raw.values():
        kind = type(value)
        if kind in scalars:
            continue
        if kind is list:
            items: Iterable[Any] = value
        elif kind is dict:
            items = value.values()
        else:
            return False
        budget -= len(value)
        if budget < 0:
            return False
        for item in items:
            kind = type(item)
            if kind in scalars:
                continue
            if kind is list:
                inner: Iterable[Any] = item
            elif kind is dict:
                inner = item.values()
            else:
                return False
            budget -= len(item)
            if budget < 0:
                return False
            for leaf in inner:
                if type(leaf) not in scalars:
                    return False
    return True


def _loads(text: str | bytes | bytearray) -> Any:
    """`json.loads(text)`, by pydantic's JSON parser (several times faster) when it can.

    It reads JSON the same way; what it refuses (invalid JSON, but also an escaped lone
    surrogate, which `json` reads) goes to `json.loads`, which decides, and words the error.
    """
    try:
        return from_json(text)
    except ValueError:
        return json.loads(text)


# Built once: json.dumps with non-default options builds a new encoder on every call.
_ENCODE = json.JSONEncoder(ensure_ascii=False, default=repr).encode


def short_value(value: Any) -> str:
    """`value` as short JSON (or repr) for an error message: sixty characters at most."""
    if isinstance(value, str) and len(value) > _MAX_INPUT_REPR:
        value = value[:_MAX_INPUT_REPR]  # no need to encode megabytes to show sixty characters
    try:
        text = _ENCODE(value)
    except (TypeError, ValueError, RecursionError):  # odd keys, a cycle, a huge int
        try:
            text = repr(value)
        except (ValueError, RecursionError):  # an int past the digit limit, deep nesting
            text = f"<{type(value).__name__}>"
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


def _data_path(loc: Sequence[int | str], data: Any) -> tuple[int | str, ...]:
    """The part of an error location that is a path into the data.

    pydantic puts the tag of the union member it tried into the location (``('pet', 'dog',
    'name')``, ``('x', 'list[int]', 0)``). Walking the data tells them apart: a part is kept
    when it is a key or index of the value reached so far, or the last part at an object (a
    missing key); anything else is a tag.
    """
    if len(loc) == 1 and type(data) is dict:  # a top-level argument: kept, present or missing
        return tuple(loc)
    path: list[int | str] = []
    node = data
    last = len(loc) - 1
    for i, part in enumerate(loc):
        if isinstance(node, dict):
            if part in node:
                path.append(part)
                node = node[part]
            elif i == last:
                path.append(part)
        elif isinstance(node, list) and isinstance(part, int):
            if 0 <= part < len(node):
                path.append(part)
                node = node[part]
            elif i == last:
                path.append(part)  # a missing item of a tuple
    return tuple(path)


def _describe(
    err: ErrorDetails,
    params: Sequence[str],
    data: Any = None,
    nulls: set[tuple[int | str, ...]] | None = None,
) -> str:
    loc = _data_path(err["loc"], data) if data is not None else err["loc"]
    where = _loc(loc)
    kind = err["type"]
    if kind == "missing":
        if nulls is not None and tuple(loc) in nulls:
            return f"'{where}' is required and cannot be null"
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
        msg = "is invalid: " + msg[len("Value error, ") :]
    elif msg.startswith("Assertion failed, "):
        msg = "is invalid: " + msg[len("Assertion failed, ") :]
    elif _SUBJECT_SHOULD.match(msg):  # "String should have at least 2 characters"
        msg = "should " + _SUBJECT_SHOULD.sub("", msg, count=1)
    elif kind == "unexpected_keyword_argument":
        return f"'{where}' is not an accepted field"
    else:
        msg = "is invalid: " + msg[:1].lower() + msg[1:]
    if "input" not in err:
        return f"'{where}' {msg}"
    if ", got " in msg:  # pydantic already says what it got, in words: add the value
        return f"'{where}' {msg} ({short_value(err['input'])})"
    return f"'{where}' {msg}, got {short_value(err['input'])}"


def format_validation_error(
    tool_name: str,
    errors: Sequence[ErrorDetails],
    params: Sequence[str],
    data: Any = None,
    nulls: set[tuple[int | str, ...]] | None = None,
) -> str:
    """One message naming each bad field, what it got and what was expected.

    With `data` (the input), union-member tags are left out of the field paths; `nulls` are
    the paths of ``null`` values that were dropped before a second attempt.
    """
    if len(errors) == 1:  # the common case: one bad field
        described = _describe(errors[0], params, data, nulls)
    else:
        parts = list(dict.fromkeys(_describe(e, params, data, nulls) for e in errors))
        parts = parts[:8] + ([f"and {len(parts) - 8} more"] if len(parts) > 8 else [])
        described = "; ".join(parts)
    return (
        f"Invalid arguments for tool '{tool_name}': {described}. "
        "Fix the arguments and call the tool again."
    )


def _repair(
    data: dict[str, Any],
    errors: Sequence[ErrorDetails],
    nulls: set[tuple[int | str, ...]] | None = None,
) -> dict[str, Any] | None:
    """A copy of `data` with the repairable mistakes fixed, or `None` if nothing was fixable.

    The paths of dropped ``null`` values are added to `nulls`.
    """
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
        path = _data_path(loc, data)
        if not path:
            continue
        loc = path
        parent: Any = fixed
        try:
            for part in loc[:-1]:
                parent = parent[part]
            if action == "set":
                parent[loc[-1]] = decoded
            elif isinstance(parent, dict) and loc[-1] in parent:
                del parent[loc[-1]]
                if nulls is not None:
                    nulls.add(tuple(loc))
        except (KeyError, IndexError, TypeError):
            continue
    return fixed


# The core schema types whose validation is a pure function of the input (no code of
# anyone's runs), and the keys of a schema that hold values rather than schemas.
_PURE_TYPES = frozenset(
    {
        "any", "none", "bool", "int", "float", "decimal", "complex", "str", "bytes",
        "date", "time", "datetime", "timedelta", "literal", "enum", "uuid", "url",
        "multi-host-url", "list", "tuple", "set", "frozenset", "dict", "nullable", "union",
        "tagged-union", "default", "json", "json-or-python", "lax-or-strict", "chain",
        "custom-error", "definitions", "definition-ref", "model", "model-fields",
        "model-field", "dataclass", "dataclass-args", "dataclass-field", "typed-dict",
        "typed-dict-field", "arguments", "arguments-v3",
    }
)  # fmt: skip
_VALUE_KEYS = frozenset(
    {"metadata", "serialization", "default", "expected", "cls", "members", "sub_type", "ref"}
)


def pure_schema(schema: Mapping[str, Any]) -> bool:
    """Whether validating with the pydantic core `schema` runs no code but pydantic's.

    Every schema in it must be of a data type (`_PURE_TYPES`: no ``function-*``, ``call``,
    ``is-instance``, ``generator``...), with no ``default_factory``, no model or dataclass
    ``post_init`` or custom ``__init__``, and no enum class with a ``_missing_`` of its own.
    Unknown shapes count as impure. Without recursion, so any depth is walked.
    """
    stack: list[Any] = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            kind = node.get("type")
            if isinstance(kind, str):
                if kind not in _PURE_TYPES:
                    return False
                if "default_factory" in node or node.get("post_init") or node.get("custom_init"):
                    return False
                if kind == "enum" and getattr(
                    getattr(node.get("cls"), "_missing_", None), "__module__", "enum"
                ) not in ("enum", None):  # an enum's own _missing_ hook runs on a miss
                    return False
            for key, value in node.items():
                if key not in _VALUE_KEYS and isinstance(value, dict | list | tuple):
                    stack.append(value)
        elif isinstance(node, list | tuple):
            stack.extend(item for item in node if isinstance(item, dict | list | tuple))
    return True


class ArgumentValidator:
    """Validates a model's arguments for one tool: built once at definition, called per call.

    Calling it never raises for bad input: it returns the keyword arguments for the function, or
    the message telling the model what to fix. Not raising keeps the invalid path cheap, and the
    bound validator (pydantic's public ``__pydantic_validator__``) skips ``model_validate``'s
    per-call Python wrapper.
    """

    __slots__ = (
        "_field_to_param",
        "_model",
        "_model_of",
        "_params",
        "_tool_name",
        "_validate",
    )

    def __init__(
        self,
        model: type[BaseModel] | Callable[[], type[BaseModel]],
        *,
        tool_name: str,
        params: Sequence[str],
        field_to_param: Mapping[str, str] | None,
    ) -> None:
        self._tool_name = tool_name
        self._params = tuple(params)
        self._field_to_param = dict(field_to_param) if field_to_param else None
        self._model: type[BaseModel] | None = None
        if isinstance(model, type):
            self._validate: Callable[[Any], BaseModel] = self._validator_of(model)
            self._model = model
        else:  # the model is built on the first call (a built-in tool, defined at import)
            self._validate = self._first_validate
            self._model_of = model

    @property
    def pure(self) -> bool:
        """Whether validating the same input again gives equal arguments, and nothing else.

        So when the arguments' schema runs no code of anyone's (no validator functions, no
        default factories, no ``__init__`` or ``model_post_init`` of a model or dataclass, no
        enum ``_missing_`` of its own) and holds only data types (see `pure_schema`). Worked out
        on each read: `Tool.pure_validation` keeps the answer.
        """
        try:
            model = self._model if self._model is not None else self._model_of()
            return pure_schema(model.__pydantic_core_schema__)
        except Exception:  # a model pydantic cannot build yet: not known to be pure
            return False

    @staticmethod
    def _validator_of(model: type[BaseModel]) -> Callable[[Any], BaseModel]:
        validator = model.__pydantic_validator__
        # A model still waiting for a forward reference holds a placeholder that rebuilds on
        # use; model_validate handles that, so keep it for such a model.
        return (
            validator.validate_python
            if isinstance(validator, SchemaValidator)
            else model.model_validate
        )

    def _first_validate(self, raw: Any) -> BaseModel:
        # `_model_of` builds the model once however many threads ask at once.
        model = self._model = self._model_of()
        validate = self._validate = self._validator_of(model)
        return validate(raw)

    def __call__(self, raw: Any) -> dict[str, Any] | InvalidArguments:
        """The keyword arguments for the function, or what the model must fix.

        `raw` is what the model sent: a dict, a JSON string (or bytes), a mapping or `None`.
        Exceptions other than validation failures (a user validator raising ``KeyError``, say)
        propagate.
        """
        within_limits = False
        if type(raw) is not dict:
            # JSON text this short is within both input limits: each level takes two
            # characters, each value at least one.
            within_limits = type(raw) is str and len(raw) <= _SHORT_JSON
            parsed: Any = None
            if type(raw) is str:  # the common case: read it once, by pydantic's parser
                try:
                    parsed = from_json(raw)
                except ValueError:  # _as_dict decides, and words the error
                    pass
            raw = parsed if type(parsed) is dict else self._as_dict(raw)
            if type(raw) is InvalidArguments:
                return raw
        if not within_limits and not _within_limits_at_a_glance(raw):
            refusal = input_too_large(raw, self._tool_name)
            if refusal is not None:
                return InvalidArguments(refusal)
        try:
            values = self._validate(raw).__dict__
        except ValidationError as first:
            return self._refused(raw, first)
        except RecursionError:
            return InvalidArguments(too_deep_message(self._tool_name))
        if self._field_to_param:
            return self._arguments(values)
        return values

    def _refused(
        self, raw: dict[str, Any], first: ValidationError
    ) -> dict[str, Any] | InvalidArguments:
        """The failure path: repair a model's habits and try again, or say what is wrong."""
        count = first.error_count()
        if count > MAX_DESCRIBED_ERRORS:
            # No repair either: a model's habits are a few fields, not thousands.
            return InvalidArguments(self._many_errors(raw, count))
        errors = first.errors(include_url=False, include_context=False)  # ctx: read by none
        nulls: set[tuple[int | str, ...]] = set()
        repaired = _repair(raw, errors, nulls)
        if repaired is None:
            return InvalidArguments(
                format_validation_error(self._tool_name, errors, self._params, raw)
            )
        try:
            values = self._validate(repaired).__dict__
        except ValidationError as second:
            return InvalidArguments(
                format_validation_error(
                    self._tool_name,
                    second.errors(include_url=False, include_context=False),
                    self._params,
                    repaired,
                    nulls,
                )
            )
        return self._arguments(values)

    def _arguments(self, values: dict[str, Any]) -> dict[str, Any]:
        """The validated fields as the function's keyword arguments (renamed fields mapped back)."""
        field_to_param = self._field_to_param
        if field_to_param:
            return {field_to_param.get(k, k): v for k, v in values.items()}
        return values

    def _many_errors(self, raw: dict[str, Any], count: int) -> str:
        """The message for input with very many errors, from a trimmed copy of it."""
        trimmed = _trim(raw, 3)
        try:
            self._validate(trimmed)
        except ValidationError as exc:
            text = format_validation_error(
                self._tool_name,
                exc.errors(include_url=False, include_context=False),
                self._params,
                trimmed,
            )
        else:  # the errors are all past the first items of long lists
            text = (
                f"Invalid arguments for tool '{self._tool_name}': items past the first "
                f"{_TRIM_ITEMS} of a list are invalid. Fix the arguments and call the tool again."
            )
        return f"{text} ({count:,} errors in all.)"

    def _as_dict(self, raw: Any) -> dict[str, Any] | InvalidArguments:
        """`raw` as a dict, or the error message when it is not a JSON object."""
        if raw is None:
            return {}
        if isinstance(raw, str | bytes | bytearray):
            try:
                raw = _loads(raw) if raw.strip() else {}
            except ValueError as exc:
                return InvalidArguments(
                    f"Invalid arguments for tool '{self._tool_name}': the arguments are not "
                    f"valid JSON ({exc}). Send a JSON object."
                )
            except RecursionError:
                return InvalidArguments(too_deep_message(self._tool_name))
        if isinstance(raw, Mapping) and type(raw) is not dict:
            raw = dict(raw)
        if type(raw) is not dict:
            return InvalidArguments(
                f"Invalid arguments for tool '{self._tool_name}': expected a JSON object with "
                f"the parameters by name, got {type(raw).__name__} {short_value(raw)}."
            )
        return raw


def _trim(value: Any, depth: int) -> Any:
    """`value` with every list cut to its first few items, `depth` levels down."""
    if depth <= 0:
        return value
    if type(value) is dict:
        return {k: _trim(v, depth - 1) for k, v in value.items()}
    if type(value) is list:
        return [_trim(v, depth - 1) for v in value[:_TRIM_ITEMS]]
    return value
