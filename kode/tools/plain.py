"""Whether a value a tool returned is plain data, quick to turn into JSON in the event loop.

A tool's value becomes a result in the event loop's own thread when that is quick, bounded
work: strings, numbers, dicts and lists of them, and pydantic models and dataclasses of such
data. Anything else (an iterator, which may never end; an object whose serialisation runs code
of its own; a value past `MAX_INLINE_VALUES`) is turned into a result in a worker thread
(`kode.tools.core`). This module only answers the question; `kode.tools.results` converts.
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import uuid
from typing import Any

from pydantic import BaseModel

__all__ = ["MAX_INLINE_VALUES", "is_json_data", "is_plain_data"]

MAX_INLINE_VALUES = 10_000
"""The most values (counted through every level, keys included) a tool's return value may
hold to be turned into a result in the event loop's own thread; a larger one is turned in a
worker thread. At this size the check and the conversion take a few milliseconds at most."""

_JSON_SCALARS = frozenset({str, int, float, bool, type(None)})


def is_json_data(value: dict[str, Any] | list[Any], budget: int = MAX_INLINE_VALUES) -> bool:
    """Whether `value` is JSON data alone, with at most `budget` values in all.

    JSON data: dicts with string keys, lists, strings, numbers, booleans and `None`; such a
    value is already its own JSON-able form. This is the check for the common case (a dict or
    a list a tool returned), written for speed: one loop per container.
    """
    scalars = _JSON_SCALARS
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if type(item) is dict:
            budget -= 2 * len(item)  # keys and values
            if budget < 0:
                return False
            for key, child in item.items():
                if type(key) is not str:
                    return False
                kind = type(child)
                if kind in scalars:
                    continue
                if kind is dict or kind is list:
                    stack.append(child)
                    continue
                return False
        else:
            budget -= len(item)
            if budget < 0:
                return False
            for child in item:
                kind = type(child)
                if kind in scalars:
                    continue
                if kind is dict or kind is list:
                    stack.append(child)
                    continue
                return False
    return True


# What a value's class means for `is_plain_data` (worked out once per class):
_LEAF, _DICT, _SEQUENCE, _FIELDS, _NOT_PLAIN = range(5)
_KINDS: dict[type, int] = {
    str: _LEAF,
    int: _LEAF,
    float: _LEAF,
    bool: _LEAF,
    type(None): _LEAF,
    datetime.datetime: _LEAF,
    datetime.date: _LEAF,
    datetime.time: _LEAF,
    datetime.timedelta: _LEAF,
    uuid.UUID: _LEAF,
    decimal.Decimal: _LEAF,
    dict: _DICT,
    list: _SEQUENCE,
    tuple: _SEQUENCE,
}
_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _has_serializer_code(schema: Any) -> bool:
    """Whether a pydantic core schema runs code of its own to serialise, anywhere in it.

    Serializer functions and computed fields do; everything else pydantic's core does alone.
    """
    stack = [schema]
    while stack:
        node = stack.pop()
        if type(node) is dict:
            serialization = node.get("serialization")
            if type(serialization) is dict and str(serialization.get("type", "")).startswith(
                "function"
            ):
                return True
            if node.get("computed_fields"):
                return True
            stack.extend(node.values())
        elif type(node) is list:
            stack.extend(node)
    return False


def _kind_of(cls: type) -> int:
    """What `cls` means for `is_plain_data`, worked out once per class."""
    kind = _NOT_PLAIN
    names: tuple[str, ...] = ()
    try:
        if issubclass(cls, enum.Enum):
            kind = _LEAF
        elif issubclass(cls, BaseModel):
            if not cls.model_computed_fields and not _has_serializer_code(
                cls.__pydantic_core_schema__
            ):
                kind, names = _FIELDS, tuple(cls.model_fields)
        elif dataclasses.is_dataclass(cls):
            schema = getattr(cls, "__pydantic_core_schema__", None)  # a pydantic dataclass
            if schema is None or not _has_serializer_code(schema):
                kind = _FIELDS
                names = tuple(f.name for f in dataclasses.fields(cls))
    except Exception:  # a model still waiting for a forward reference, an odd class
        kind = _NOT_PLAIN
    if kind == _FIELDS:
        _FIELD_NAMES[cls] = names
    _KINDS[cls] = kind
    return kind


def is_plain_data(value: Any, budget: int = MAX_INLINE_VALUES) -> bool:
    """Whether turning `value` into a result is quick work on plain data.

    Plain data is made of dicts, lists and tuples of strings, numbers, booleans, `None`,
    dates, times, UUIDs, decimals and enums, and of pydantic models and dataclasses of those
    that serialise without running code of their own (no serializers, no computed fields);
    and it holds at most `budget` values. Anything else (an iterator, which may never end, an
    object pydantic serialises by running its code, a huge value) is not.
    """
    kinds = _KINDS
    stack = [value]
    budget -= 1
    while stack:
        item = stack.pop()
        cls = type(item)
        kind = kinds.get(cls)
        if kind is None:
            kind = _kind_of(cls)
        if kind == _LEAF:
            continue
        if kind == _DICT:
            budget -= 2 * len(item)  # keys and values
            if budget < 0:
                return False
            for key in item:
                if kinds.get(type(key)) != _LEAF:
                    return False
            stack.extend(item.values())
        elif kind == _SEQUENCE:
            budget -= len(item)
            if budget < 0:
                return False
            stack.extend(item)
        elif kind == _FIELDS:
            names = _FIELD_NAMES[cls]
            budget -= len(names)
            if budget < 0:
                return False
            stack.extend([getattr(item, name, None) for name in names])
            extra = getattr(item, "__pydantic_extra__", None)
            if extra:
                stack.append(extra)
        else:
            return False
    return True
