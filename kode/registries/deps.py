"""Making an application's deps from a ``module:factory`` spec, for the command line.

A tool whose context is ``ToolContext[T]`` reads ``ctx.deps``; in Python the deps are passed
to `Agent.create`, `ToolContext` or `ToolServer`. On the command line (``kode tools call``,
``kode run``, ``kode mcp serve``) they are named as ``--deps module:factory``: this module
imports the module (a dotted name or a ``.py`` file's path, as `import_tools_module` does) and
calls the factory once, with no arguments. It does not decide where the deps go.
"""

from __future__ import annotations

import inspect
from types import ModuleType
from typing import Any

from kode.registries.modules import import_tools_module
from kode.tools.errors import KodeError

__all__ = ["DepsSpecError", "load_deps"]

_FORM = (
    "write it as MODULE:FACTORY, e.g. 'my_app.deps:make_deps' or 'deps.py:make_deps', where "
    "FACTORY is a function that takes no arguments and returns the deps"
)


class DepsSpecError(KodeError, ValueError):
    """A ``module:factory`` spec that does not give deps; the message says what to fix."""


def _import(target: str) -> ModuleType:
    # A file or module named with -m as well is imported once, whichever way each names it:
    # running it again would define its tools a second time.
    return import_tools_module(target)


def load_deps(spec: str) -> Any:
    """Import the module `spec` names, call its factory once with no arguments, return that.

    Args:
        spec: ``module:factory``: a dotted module name or a ``.py`` file's path, a colon, and
            the name of a callable in it (dotted for an attribute of an attribute).

    Raises:
        DepsSpecError: the spec is malformed, the module cannot be imported, the name is
            missing or not callable, the factory needs arguments or is async, or it raised.
    """
    module_name, colon, attribute = spec.strip().rpartition(":")
    parts = attribute.split(".")
    if not colon or not module_name or not all(p.isidentifier() for p in parts):
        raise DepsSpecError(f"deps spec {spec!r} is not MODULE:FACTORY: {_FORM}.")
    try:
        found: Any = _import(module_name)
    except Exception as exc:  # whatever the module raises while it runs
        raise DepsSpecError(
            f"deps spec {spec!r}: cannot import module {module_name!r}: {type(exc).__name__}: {exc}"
        ) from exc
    for i, part in enumerate(parts):
        if not hasattr(found, part):
            where = ".".join([module_name, *parts[:i]]) if i else module_name
            raise DepsSpecError(
                f"deps spec {spec!r}: {where!r} has no attribute {part!r}; {_FORM}."
            )
        found = getattr(found, part)
    if not callable(found):
        raise DepsSpecError(
            f"deps spec {spec!r}: {attribute!r} is a {type(found).__name__}, not a callable; "
            f"{_FORM}."
        )
    if inspect.iscoroutinefunction(found):
        raise DepsSpecError(
            f"deps spec {spec!r}: {attribute!r} is an async function; the factory must be a "
            "plain function that returns the deps."
        )
    try:
        signature = inspect.signature(found)
    except (TypeError, ValueError):  # a builtin without a signature: try calling it
        signature = None
    if signature is not None:
        required = [
            p.name
            for p in signature.parameters.values()
            if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        ]
        if required:
            raise DepsSpecError(
                f"deps spec {spec!r}: {attribute!r} requires arguments "
                f"({', '.join(required)}); the factory is called with none."
            )
    try:
        return found()
    except Exception as exc:  # the application's own code failed
        raise DepsSpecError(
            f"deps spec {spec!r}: {attribute}() raised {type(exc).__name__}: {exc}"
        ) from exc
