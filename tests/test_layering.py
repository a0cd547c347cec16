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
    "trust": set(),
    "tracing": set(),
    "tools": {"tracing", "trust"},
    "registries": {"tools", "tracing", "trust"},
    "models": {"tools", "tracing", "trust"},
    "sessions": {"tools", "models", "tracing", "trust"},
    "agent": {"tools", "registries", "models", "sessions", "tracing", "trust"},
    "durable": {"tools", "registries", "models", "sessions", "agent", "tracing", "trust"},
    "builtin": {"tools", "tracing", "trust"},
    "mcp": {"tools", "registries", "models", "tracing", "trust"},
    "testing": {
        *("tools", "registries", "models", "sessions", "agent", "builtin", "mcp", "tracing"),
        "trust",
    },
    "cli": {
        *("tools", "registries", "models", "sessions", "agent", "builtin", "mcp", "testing"),
        "tracing",
        "trust",
    },
    "kode": {
        *("tools", "registries", "models", "sessions", "agent", "builtin", "mcp", "testing"),
        "tracing",
        "trust",
    },
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


# --- kode.builtin: three independent clusters, and no import cycle ----------------------------

MODULE_NAMES = {name for name, _ in MODULES}

# The sub-packages of kode.builtin that hold one cluster of tools each; a cluster imports
# nothing of another (the package's own __init__, todo and tasks import from any).
BUILTIN_CLUSTERS = ("fs", "runtime", "web")


def _resolved(target: str, names: list[str]) -> list[str]:
    """The kode modules an import of `names` from `target` loads: `from pkg import sub`
    loads ``pkg.sub`` when that is a module, else ``pkg`` itself."""
    found = [f"{target}.{n}" for n in names if f"{target}.{n}" in MODULE_NAMES]
    if len(found) < len(names) or not names:
        found.append(target)
    return [m for m in found if m in MODULE_NAMES]


def import_graph(prefix: str) -> dict[str, set[str]]:
    """Module → the modules under `prefix` it imports anywhere (top level, in functions,
    under TYPE_CHECKING): a cycle through any of them is a cycle of the design."""
    graph: dict[str, set[str]] = {}
    for module, path in MODULES:
        if module != prefix and not module.startswith(prefix + "."):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        edges = graph.setdefault(module, set())
        for _, target, names in kode_imports(module, tree):
            for imported in _resolved(target, names):
                if imported != module and imported.startswith(prefix + "."):
                    edges.add(imported)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of `graph` as a path that ends where it starts, or `None`."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (cycle := visit(nxt)) is not None:
                return cycle
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (cycle := visit(start)) is not None:
            return cycle
    return None


def test_kode_builtin_has_no_import_cycle() -> None:
    cycle = find_cycle(import_graph("kode.builtin"))
    assert cycle is None, "import cycle in kode.builtin: " + " -> ".join(cycle or [])


def test_kode_agent_has_no_import_cycle() -> None:
    """Every import counts, those made for type checking only too: the modules under an agent
    (its run, reply, stream, pipeline, services, display) use it through `kode.agent.ports`'
    protocols and never import `kode.agent.agent` or `kode.agent.run` back."""
    cycle = find_cycle(import_graph("kode.agent"))
    assert cycle is None, "import cycle in kode.agent: " + " -> ".join(cycle or [])


def test_no_module_of_kode_agent_imports_its_package_or_the_agent() -> None:
    """The package's __init__ imports every module (an import of it would hide a cycle from
    the graph above); only it imports `Agent`, which sits at the top of the package."""
    wrong = []
    for module, path in MODULES:
        if not module.startswith("kode.agent.") or module == "kode.agent.agent":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for line, target, names in kode_imports(module, tree):
            if target == "kode.agent" or "kode.agent.agent" in _resolved(target, names):
                wrong.append(f"{module} line {line}: {target}")
    assert not wrong, wrong


def test_the_builtin_clusters_import_nothing_of_each_other() -> None:
    wrong = []
    for module, imported in import_graph("kode.builtin").items():
        mine = module.split(".")[2] if module.count(".") >= 2 else ""
        if mine not in BUILTIN_CLUSTERS:
            continue
        for target in sorted(imported):
            theirs = target.split(".")[2]
            if theirs in BUILTIN_CLUSTERS and theirs != mine:
                wrong.append(f"{module} imports {target}")
    assert not wrong, wrong


# Public modules of the former flat layout of kode.builtin, kept as thin modules that re-export
# the objects of their new home (old path -> new path) so that existing imports keep working.
BUILTIN_COMPATIBILITY_MODULES = {"kode.builtin.fs_search": "kode.builtin.fs.search"}


def test_the_builtin_package_ships_only_tools_and_their_plumbing() -> None:
    """The flat files became one sub-package per cluster; the docs generator is not shipped.
    The only other flat modules are the named compatibility modules of the old layout."""
    flat = sorted(p.name for p in (ROOT / "builtin").glob("*.py"))
    kept = sorted(old.rsplit(".", 1)[1] + ".py" for old in BUILTIN_COMPATIBILITY_MODULES)
    assert flat == sorted(["__init__.py", "tasks.py", "todo.py", *kept]), flat
    assert {p.name for p in (ROOT / "builtin").iterdir() if p.is_dir()} >= set(BUILTIN_CLUSTERS)
    assert not (ROOT / "builtin" / "_reference.py").exists()


def test_the_cycle_check_finds_cycles() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None
    assert find_cycle({"a": {"a"}}) == ["a", "a"]
    grep = ast.parse(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from kode.builtin.fs._grep import GrepFile\n"
        "def f():\n"
        "    from kode.builtin.fs import _grep\n"
    )
    found = {t for _, t, _ in kode_imports("kode.builtin.fs._grep_files", grep)}
    assert found == {"kode.builtin.fs._grep", "kode.builtin.fs"}
    assert _resolved("kode.builtin.fs", ["_grep"]) == ["kode.builtin.fs._grep"]


def test_no_package_of_kode_builtin_hides_a_module_of_its_own() -> None:
    """A name its __init__ defines would hide the submodule of that name from
    ``from kode.builtin.runtime import _sandbox`` (it once did, for four of them)."""
    wrong = []
    for package in ROOT.joinpath("builtin").rglob("__init__.py"):
        modules = {p.stem for p in package.parent.glob("*.py")} | {
            p.name for p in package.parent.iterdir() if (p / "__init__.py").exists()
        }
        tree = ast.parse(package.read_text(encoding="utf-8"))
        for node in tree.body:
            names: list[str] = []
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names = [node.name]
            elif isinstance(node, ast.Assign):
                names = [t.id for t in node.targets if isinstance(t, ast.Name)]
            wrong += [f"{package.parent.name}.{n}" for n in names if n in modules]
    assert not wrong, wrong


@pytest.mark.parametrize("old", sorted(BUILTIN_COMPATIBILITY_MODULES))
def test_a_former_public_builtin_module_re_exports_the_same_objects(old: str) -> None:
    """Each public module path of the flat layout still imports, and gives the very objects of
    its new home (the same tools, not a second registration of them)."""
    import importlib

    former = importlib.import_module(old)
    new = importlib.import_module(BUILTIN_COMPATIBILITY_MODULES[old])
    assert former.__all__ == new.__all__
    for name in new.__all__:
        assert getattr(former, name) is getattr(new, name), name
    tree = ast.parse(ROOT.joinpath(*old.split(".")[1:]).with_suffix(".py").read_text("utf-8"))
    defined = [n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    assert not defined, "a compatibility module only re-exports"


def test_importing_a_compatibility_module_first_registers_each_tool_once() -> None:
    """In a fresh interpreter: the old path imported before kode.builtin, then kode.builtin;
    the registry holds the one tool object of each name, with no diagnostic about a second."""
    import subprocess
    import sys

    code = (
        "import kode.builtin.fs_search as old, kode.builtin, kode.builtin.fs.search as new\n"
        "from kode.registries import registry\n"
        "assert registry.get('fs_glob') is old.fs_glob is new.fs_glob\n"
        "assert registry.get('fs_grep') is old.fs_grep is new.fs_grep\n"
        "assert registry.names().count('fs_glob') == 1, registry.names()\n"
        "assert not [d for d in registry.diagnostics if 'fs_g' in str(d)], registry.diagnostics\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_every_public_module_of_the_former_flat_layout_still_imports() -> None:
    """kode/builtin held fs, fs_search, runtime, tasks, todo and web (and private modules)
    before it became sub-packages; each public path still imports."""
    import importlib

    for name in ("fs", "fs_search", "runtime", "tasks", "todo", "web"):
        importlib.import_module(f"kode.builtin.{name}")
