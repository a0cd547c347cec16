"""Former module paths of public names, kept so that imports written against them still work.

This module owns one thing: the module ``__getattr__`` of a former home, which gives the name
from its new module and warns, once per importing line, with a `DeprecationWarning` that says
where the name lives now. It does not decide which paths are kept (each former module does, in
one line) and registers nothing.
"""

from __future__ import annotations

import warnings
from types import ModuleType
from typing import Any


def moved_attribute(former: str, home: ModuleType, name: str) -> Any:
    """The attribute ``name`` of ``home``, read through its former module ``former``.

    Args:
        former: The dotted name of the former module (the one whose ``__getattr__`` calls this).
        home: The module the name lives in now.
        name: The attribute asked for.

    Returns:
        The very object ``home`` holds under ``name``.

    Raises:
        AttributeError: ``name`` is a dunder (``__path__``, ``__file__``, ``__wrapped__``: what
            the import system, `inspect` and `doctest` probe any module for, which must not warn),
            or ``home`` has no such attribute.
    """
    if not (name.startswith("__") and name.endswith("__")) and hasattr(home, name):
        warnings.warn(
            f"{former}.{name} has moved to {home.__name__}.{name}; import it from there "
            f"(the path {former} is deprecated and will be removed).",
            DeprecationWarning,
            # The caller of the former module's __getattr__: the line that imports the name.
            stacklevel=3,
        )
        return getattr(home, name)
    raise AttributeError(f"module {former!r} has no attribute {name!r}")
