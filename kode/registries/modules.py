"""Importing the modules that define tools, by dotted name or by a ``.py`` file's path.

Defining is registering, so importing a module is how its tools reach a registry. This module
owns the one way the command-line tools (``kode tools``, ``kode run``, ``kode mcp serve``) do
it: the current directory is importable, as with ``python -m``, and a file's directory is
added to the path so its sibling modules import too.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from pathlib import Path

__all__ = ["import_tools_module"]


def import_tools_module(spec: str) -> None:
    """Import `spec`: a module name (``my_tools``, ``pkg.tools``) or a ``.py`` file's path.

    Raises:
        ImportError: the module cannot be found or loaded. Whatever the module itself raises
            while it runs propagates unchanged.
    """
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    path = Path(spec)
    if spec.endswith(".py") or path.is_file():
        if not path.is_file():
            raise ImportError(f"no such file: {spec}")
        name = path.stem if path.stem.isidentifier() else "kode_tools_module"
        loaded = importlib.util.spec_from_file_location(name, path)
        if loaded is None or loaded.loader is None:
            raise ImportError(f"cannot import {spec} as a Python module")
        module = importlib.util.module_from_spec(loaded)
        sys.modules[name] = module
        sys.path.insert(0, str(path.resolve().parent))
        loaded.loader.exec_module(module)
        return
    importlib.import_module(spec)
