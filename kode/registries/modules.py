"""Importing the modules that define tools, by dotted name or by a ``.py`` file's path.

Defining is registering, so importing a module is how its tools reach a registry, and
importing one file under two names defines its tools twice. This module owns the one way the
command-line tools (``kode tools``, ``kode run``, ``kode mcp serve``, ``--deps``) import: the
current directory is importable, as with ``python -m``, and a file's path means the module a
dotted name would import, so ``shop/tools.py`` and ``shop.tools`` are one module, imported once:

- a file in a package (its directory has an ``__init__.py``) is named from the top of that
  package (``shop/tools.py`` is ``shop.tools``), and the directory above the package is made
  importable, so the package's own imports (``from shop.deps import ...``, ``from . import
  deps``) work wherever the command runs;
- a file elsewhere under the current directory is named from there, as Python names a
  namespace package's module (``app/tools.py`` is ``app.tools``; ``tools.py`` is ``tools``),
  and its directory is made importable too, so its sibling modules import;
- any other file is named by its stem, with its directory first on the path.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import sys
from pathlib import Path
from types import ModuleType

__all__ = ["import_tools_module", "module_name_for"]


def _is_package(directory: Path) -> bool:
    return directory.name.isidentifier() and (directory / "__init__.py").is_file()


def _parts(path: Path) -> list[str]:
    return [*path.parent.parts, path.stem] if path.stem != "__init__" else list(path.parent.parts)


def module_name_for(path: str | Path) -> tuple[str, Path] | None:
    """The dotted name a ``.py`` file is imported as, and the directory it is imported from.

    A file in a package (a directory with an ``__init__.py``) is named from the top of that
    package: ``/srv/shop/tools.py`` in package ``shop`` is ``("shop.tools", Path("/srv"))``.
    A file elsewhere under the current directory is named from there, as a namespace
    package's module is. `None` for any other file (it is imported under its stem, from its
    own directory).
    """
    file = Path(path).resolve()
    top = file.parent
    while _is_package(top):
        top = top.parent
    if top != file.parent:
        parts = _parts(file.relative_to(top))
        return ".".join(parts), top
    cwd = Path.cwd().resolve()
    try:
        relative = file.relative_to(cwd)
    except ValueError:
        return None
    parts = _parts(relative)
    if parts and all(p.isidentifier() for p in parts):
        return ".".join(parts), cwd
    return None


def _origin(module: ModuleType | None) -> Path | None:
    file = getattr(module, "__file__", None)
    return Path(file).resolve() if file else None


def _found_at(name: str) -> Path | None:
    """Where importing `name` would load it from (its parent packages are imported)."""
    importlib.invalidate_caches()  # files written since the last import are seen
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin or not spec.has_location:
        return None
    return Path(spec.origin).resolve()


def _put_on_path(directory: Path, *, first: bool) -> None:
    entry = str(directory)
    if entry in sys.path or (entry == os.getcwd() and "" in sys.path):
        return
    if first:
        sys.path.insert(0, entry)
    else:
        sys.path.append(entry)


def _import_as(name: str, file: Path, spec: str) -> ModuleType | None:
    """The module `name` if it is `file` (imported now, or earlier); `None` if `name` is not it."""
    loaded = sys.modules.get(name)
    if loaded is not None:
        return loaded if _origin(loaded) == file else None
    if _found_at(name) != file:
        return None
    module = importlib.import_module(name)
    if _origin(module) != file:  # pragma: no cover - find_spec said otherwise
        raise ImportError(f"importing {spec} as {name!r} loaded {module.__file__} instead")
    return module


def _taken(name: str) -> str:
    loaded = sys.modules.get(name)
    where = getattr(loaded, "__file__", None) if loaded is not None else None
    where = where or _found_at(name)
    return f"module {name!r} ({where})" if where else f"the built-in module {name!r}"


def _import_file(spec: str) -> ModuleType:
    path = Path(spec)
    if not path.is_file():
        raise ImportError(f"no such file: {spec}")
    file = path.resolve()
    named = module_name_for(file)
    if named is not None:
        name, root = named
        in_package = _is_package(file.parent)
        _put_on_path(root, first=True)
        if not in_package:
            _put_on_path(file.parent, first=False)  # sibling modules import by their names
        module = _import_as(name, file, spec)
        if module is not None:
            return module
        if in_package:
            raise ImportError(
                f"{spec} is module {name!r} of its package, but that name is "
                f"{_taken(name)}: another package {name.partition('.')[0]!r} comes first on "
                "sys.path; rename one of them"
            )
        # A namespace name that another module holds: the file is named by its stem.
    stem = file.stem
    if stem.isidentifier():
        _put_on_path(file.parent, first=True)
        module = _import_as(stem, file, spec)
        if module is not None:
            return module
        raise ImportError(
            f"cannot import {spec} as {stem!r}: that name is {_taken(stem)}; rename the file"
        )
    # Not a module name (``my-tools.py``): nothing else can import it, so any name will do.
    base = name = "kode_file_" + re.sub(r"\W", "_", stem)
    n = 1
    while (loaded := sys.modules.get(name)) is not None:
        if _origin(loaded) == file:
            return loaded
        n += 1
        name = f"{base}_{n}"
    found = importlib.util.spec_from_file_location(name, file)
    if found is None or found.loader is None:
        raise ImportError(f"cannot import {spec} as a Python module")
    module = importlib.util.module_from_spec(found)
    sys.modules[name] = module
    _put_on_path(file.parent, first=True)
    try:
        found.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def import_tools_module(spec: str) -> ModuleType:
    """Import `spec`: a module name (``my_tools``, ``pkg.tools``) or a ``.py`` file's path.

    A file is imported as the module its dotted name would import (see `module_name_for`), so
    naming one module both ways (``-m shop/tools.py --deps shop.tools:make``) imports it once.

    Returns:
        The module, imported now or earlier.

    Raises:
        ImportError: the module cannot be found or loaded, or the file's name is another
            module's. Whatever the module itself raises while it runs propagates unchanged.
    """
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    if spec.endswith(".py") or Path(spec).is_file():
        return _import_file(spec)
    return importlib.import_module(spec)
