"""kode's built-in tools, each an ordinary `define_tool` module registered with source ``core``.

Importing ``kode.builtin`` registers them all; importing one module (``kode.builtin.fs``)
registers only its tools. Groups: ``group:fs``, ``group:runtime``, ``group:web``,
``group:think`` (todo), ``group:sessions`` (sub-agents). See ``docs/builtin-tools.md``.
"""

from __future__ import annotations

import importlib

__all__ = ["MODULES"]

MODULES = ("fs", "runtime", "web", "todo", "tasks")
"""The built-in tool modules, in registration order."""

for _name in MODULES:
    try:
        importlib.import_module(f"{__name__}.{_name}")
    except ModuleNotFoundError as _exc:  # a module not shipped in this build
        if _exc.name != f"{__name__}.{_name}":
            raise
