"""The deps an agent's tools require, checked when the agent is made.

This module owns `deps_problems`: for each tool whose context is ``ToolContext[Deps]`` (deps
required, see `kode.tools.schema.context_deps_type`), whether the deps given to
`Agent.create` are missing or of another type. A tool would otherwise find out at its first
call (a refusal when they are missing, an ``AttributeError`` inside the tool when a dict came
where a dataclass was expected). Types that cannot be checked with ``isinstance`` (a protocol
that is not runtime-checkable, a ``TypedDict``, a ``NewType``) are taken on trust.
"""

from __future__ import annotations

import reprlib
import types
import typing
from collections.abc import Iterable
from typing import Any, get_args, get_origin

from kode.tools.core import Tool

__all__ = ["deps_problems"]

_short = reprlib.Repr()
_short.maxstring = 40
_short.maxother = 40


def _type_name(wanted: Any) -> str:
    """`wanted` as written in code: ``Settings``, ``list[str]``, ``Settings | None``."""
    if get_origin(wanted) is typing.Annotated:
        wanted = get_args(wanted)[0]
    args = get_args(wanted)
    if get_origin(wanted) in (typing.Union, types.UnionType):
        return " | ".join(_type_name(a) for a in args)
    if isinstance(wanted, type) and not args:
        return wanted.__qualname__
    origin = get_origin(wanted)
    if isinstance(origin, type) and args:
        return f"{origin.__qualname__}[{', '.join(_type_name(a) for a in args)}]"
    return repr(wanted).replace("typing.", "")


def _classes(wanted: Any) -> tuple[type, ...] | None:
    """The classes `isinstance` can check `wanted` with, or `None` when it cannot."""
    if get_origin(wanted) is typing.Annotated:
        wanted = get_args(wanted)[0]
    if get_origin(wanted) in (typing.Union, types.UnionType):
        found: list[type] = []
        for option in get_args(wanted):
            classes = _classes(option)
            if classes is None:
                return None
            found.extend(classes)
        return tuple(found)
    origin = get_origin(wanted) or wanted  # list[str] is checked as a list
    return (origin,) if isinstance(origin, type) else None


def _mismatch(wanted: Any, deps: object) -> bool:
    """Whether `deps` is surely not of type `wanted`."""
    classes = _classes(wanted)
    if classes is None:
        return False
    try:
        return not isinstance(deps, classes)
    except TypeError:  # a protocol that is not runtime-checkable, a TypedDict
        return False


def deps_problems(tools: Iterable[Tool[..., Any]], deps: object) -> list[str]:
    """What is wrong with `deps` for `tools`: one sentence per tool, empty when nothing is.

    Args:
        tools: The agent's tools.
        deps: What was given as ``deps=``.
    """
    problems: list[str] = []
    for tool in tools:
        spec = tool.spec
        wanted = spec.deps_type if spec is not None else None
        if wanted is None:
            continue
        name = _type_name(wanted)
        needs = f"tool '{tool.name}' needs deps of type {name} (its context is ToolContext[{name}])"
        if deps is None:
            problems.append(f"{needs}, and none were given")
        elif _mismatch(wanted, deps):
            problems.append(
                f"{needs}, but the deps given are of type {type(deps).__qualname__} "
                f"({_short.repr(deps)})"
            )
    return problems
