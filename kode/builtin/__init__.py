"""kode's built-in tools, each an ordinary `define_tool` module registered with source ``core``.

Importing ``kode.builtin`` registers them all; importing one module (``kode.builtin.fs``)
registers only its tools. Groups: ``group:fs``, ``group:runtime``, ``group:web``,
``group:think`` (todo), ``group:sessions`` (sub-agents, the sessions of the agent's store),
``group:memory`` (facts kept across sessions).
See ``docs/builtin-tools.md``.

What configures them is importable from here too: `RuntimePolicy` (what ``bash_run`` may run)
with `set_default_runtime_policy` and `using_runtime_policy`.
"""

from __future__ import annotations

import importlib

from kode.tools.define import building_later

__all__ = ["MODULES", "RuntimePolicy", "set_default_runtime_policy", "using_runtime_policy"]

MODULES = ("fs", "runtime", "web", "todo", "tasks", "sessions", "memory")
"""The built-in tool modules, in registration order."""

# Each tool's pydantic model and JSON Schema are made on its first use: importing the tools
# costs less, and every other check of their functions still runs now.
with building_later():
    for _name in MODULES:
        try:
            importlib.import_module(f"{__name__}.{_name}")
        except ModuleNotFoundError as _exc:  # a module not shipped in this build
            if _exc.name != f"{__name__}.{_name}":
                raise

# After the loop, so the tool modules register in the order of MODULES.
from kode.builtin.runtime._policy import (  # noqa: E402
    RuntimePolicy,
    set_default_runtime_policy,
    using_runtime_policy,
)
