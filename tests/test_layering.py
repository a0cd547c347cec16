"""The package's layers, checked: imports go down the table of docs/architecture.md only, and
no module reaches into another subpackage's private names or modules."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "kode"

# What each layer may import (besides itself), as in docs/architecture.md.
ALLOWED: dict[str, set[str]] = {
    "tools": set(),
    "registries": {"tools"},
    "models": {"tools"},
    "sessions": {"tools", "models"},
    "agent": {"tools", "registries", "models", "sessions"},
    "builtin": {"tools"},
    "mcp": {"tools", "registries", "models"},
    "testing": {"tools", "registries", "models", "sessions", "agent", "builtin", "mcp"},
    "cli": {"tools", "registries", "models", "sessions", "agent", "builtin", "mcp", "testing"},
    "kode": {"tools", "registries", "models", "sessions", "agent", "builtin", "mcp", "testing"},
}


def layer_of(module: str) -> str:
    """The layer of a dotted kode module name."""
    parts = module.split(".")
    if len(parts) == 1:
        return "kode"
    if parts[1] in ("cli", "cli_tools", "__main__"):
        return "cli"
    return parts[1] if parts[1] in ALLOWED else "kode"


def modules() -> Iterator[tuple[str, Path]]:
    for path in sorted(ROOT.rglob("*.py")):
        relative = path.relative_to(ROOT.parent).with_suffix("")
        parts = list(relative.parts)
        if parts[-1] == "__init__":
            parts.pop()
        yield ".".join(parts), path


def kode_imports(module: str, tree: ast.Module) -> Iterator[tuple[int, str, list[str]]]:
    """(line, imported module, names) for every import of a kode module in `tree`."""
    package = module if module.count(".") == 0 else module.rsplit(".", 1)[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "kode":
                    yield node.lineno, alias.name, []
        elif isinstance(node, ast.ImportFrom):
            target = node.module or ""
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join([*base, target] if target else base)
            if target.split(".")[0] == "kode":
                yield node.lineno, target, [a.name for a in node.names]


MODULES = list(modules())


@pytest.mark.parametrize(("module", "path"), MODULES, ids=[m for m, _ in MODULES])
def test_imports_go_down_the_layers(module: str, path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    mine = layer_of(module)
    wrong = []
    for line, target, _ in kode_imports(module, tree):
        theirs = layer_of(target)
        if theirs != mine and theirs != "kode" and theirs not in ALLOWED[mine]:
            wrong.append(f"line {line}: {target} ({theirs}/ may not be imported from {mine}/)")
    assert not wrong, f"{module}: " + "; ".join(wrong)


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


@pytest.mark.parametrize(("module", "path"), MODULES, ids=[m for m, _ in MODULES])
def test_no_private_names_across_subpackages(module: str, path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    mine = layer_of(module)
    wrong = []
    for line, target, names in kode_imports(module, tree):
        if layer_of(target) == mine:
            continue
        private_module = [p for p in target.split(".") if _private(p)]
        private_names = [n for n in names if _private(n)]
        if private_module or private_names:
            wrong.append(f"line {line}: from {target} import {', '.join(names)}")
    assert not wrong, f"{module} reaches into another subpackage's private names: {wrong}"


def _defined_private_names(tree: ast.Module) -> set[str]:
    """Private attribute names a module defines: its functions, classes, slots, self._x."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            found.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            found.add(node.id)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.add(node.value)  # __slots__ entries
    return found


def _stdlib_aliases(tree: ast.Module) -> set[str]:
    """Names bound to modules that are not kode's (``os``, ``sys``, ...)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] != "kode":
                    names.add((alias.asname or alias.name).split(".")[0])
    return names


@pytest.mark.parametrize(("module", "path"), MODULES, ids=[m for m, _ in MODULES])
def test_no_module_reads_private_attributes_defined_elsewhere(module: str, path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    defined = _defined_private_names(tree)
    foreign = _stdlib_aliases(tree)
    wrong = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and _private(node.attr)):
            continue
        owner = node.value
        if isinstance(owner, ast.Name) and owner.id in ("self", "cls"):
            continue
        if isinstance(owner, ast.Name) and owner.id in foreign:
            continue  # os._exit, sys._getframe: the standard library's own names
        if node.attr in defined:
            continue  # this module's own private name, on another instance of its class
        wrong.append(f"line {node.lineno}: {ast.unparse(node)}")
    assert not wrong, f"{module} reads private attributes defined elsewhere: {wrong}"


def test_the_checks_catch_what_they_are_for(tmp_path: Path) -> None:
    bad = ast.parse(
        "from kode.agent import pipeline\n"
        "from kode.registries._x import y\n"
        "def f(agent):\n"
        "    return agent._record_for\n"
    )
    assert [t for _, t, _ in kode_imports("kode.tools.thing", bad)] == [
        "kode.agent",
        "kode.registries._x",
    ]
    assert "kode.agent" not in ALLOWED["tools"]
    assert "_record_for" not in _defined_private_names(bad)
