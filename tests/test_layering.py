"""The package's layers, checked: imports go down the table of docs/architecture.md only, and
no module reaches into another subpackage's private names or modules."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "kode"

# What each layer may import (besides itself), as in docs/architecture.md. ``base`` is the
# top-level modules that import nothing of kode (`kode.extras`, `kode.version`): every layer
# may import them. ``kode`` is the package's face (`kode/__init__.py`), which loads every layer
# on first use of a name: no layer below the command may import it.
ALLOWED: dict[str, set[str]] = {
    "base": set(),
    "trust": {"base"},
    "tracing": {"trust", "base"},
    "tools": {"tracing", "trust", "base"},
    "registries": {"tools", "tracing", "trust", "base"},
    "models": {"tools", "tracing", "trust", "base"},
    "sessions": {"tools", "models", "tracing", "trust", "base"},
    "agent": {"tools", "registries", "models", "sessions", "tracing", "trust", "base"},
    "durable": {
        *("tools", "registries", "models", "sessions", "agent", "tracing", "trust"),
        "base",
    },
    "builtin": {"tools", "registries", "tracing", "trust", "base"},
    "mcp": {"tools", "registries", "models", "tracing", "trust", "base"},
    "testing": {
        *("tools", "registries", "models", "sessions", "agent", "builtin", "mcp", "tracing"),
        *("trust", "base"),
    },
    "cli": {
        *("tools", "registries", "models", "sessions", "agent", "durable", "builtin", "mcp"),
        *("testing", "tracing", "trust", "base", "kode"),
    },
    "kode": {
        *("tools", "registries", "models", "sessions", "agent", "durable", "builtin", "mcp"),
        *("testing", "tracing", "trust", "base"),
    },
}

# The modules directly under kode/ besides its face, and their layer. A new one must be
# placed here (an unknown module belongs to no layer, and nothing may import it).
TOP_LEVEL = {
    **dict.fromkeys(("cli", "__main__"), "cli"),
    **dict.fromkeys(("extras", "version"), "base"),
}

# Public import paths kept for code written before a name moved up a layer, as (module,
# name) -> the module that defines it now. Each is a module `__getattr__` that imports the
# new home when the name is first read; an import of it counts as an import of the new home,
# so kode's own modules below that layer cannot use it.
COMPATIBILITY_PATHS: dict[tuple[str, str], str] = {
    ("kode.tools", "define_tool"): "kode.registries.define",
    ("kode.tools", "tool"): "kode.registries.define",
    ("kode.tools.define", "define_tool"): "kode.registries.define",
    ("kode.tools.define", "tool"): "kode.registries.define",
    ("kode.sessions.store", "start_session"): "kode.sessions.starting",
}


def layer_of(module: str) -> str:
    """The layer of a dotted kode module name (``unknown`` for a module no layer holds)."""
    parts = module.split(".")
    if len(parts) == 1:
        return "kode"
    if parts[1] in TOP_LEVEL:
        return TOP_LEVEL[parts[1]]
    if parts[1] in ALLOWED and parts[1] not in ("base", "cli", "kode"):
        return parts[1]
    return "unknown"


def modules() -> Iterator[tuple[str, Path]]:
    for path in sorted(ROOT.rglob("*.py")):
        relative = path.relative_to(ROOT.parent).with_suffix("")
        parts = list(relative.parts)
        if parts[-1] == "__init__":
            parts.pop()
        yield ".".join(parts), path


# A string naming a kode module, or a ``module:attribute`` in it, as an entry table holds.
MODULE_STRING = re.compile(r"kode(\.[A-Za-z_][A-Za-z0-9_]*)+(:[A-Za-z_][A-Za-z0-9_.]*)?")
IMPORTERS = frozenset({"import_module", "__import__", "find_spec"})


def _docstrings(tree: ast.Module) -> set[int]:
    """The ids of the constant nodes that are docstrings (text, not references)."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
        else:
            continue
        for index, statement in enumerate(body):
            if (
                isinstance(statement, ast.Expr)
                and isinstance(statement.value, ast.Constant)
                and isinstance(statement.value.value, str)
                and (index == 0 or isinstance(body[index - 1], ast.Assign | ast.AnnAssign))
            ):
                found.add(id(statement.value))
    return found


def _table_strings(tree: ast.Module) -> set[int]:
    """The ids of the strings a module keeps to import later: in a table it binds at its top
    level (``_GROUPS = ("kode.cli.tools", ...)``), or alone under a name that a call with an
    importer in it is given (``_LATER = "kode.x"`` ... ``run_sync(import_module, _LATER)``).
    A lone label (``_OWNER = "kode.durable"``) imports nothing."""
    found: set[int] = set()
    alone: dict[str, int] = {}
    for statement in tree.body:
        value = statement.value if isinstance(statement, ast.Assign | ast.AnnAssign) else None
        if isinstance(value, ast.Tuple | ast.List | ast.Set | ast.Dict):
            found.update(id(n) for n in ast.walk(value) if isinstance(n, ast.Constant))
        elif isinstance(value, ast.Constant) and isinstance(statement, ast.Assign):
            alone.update((t.id, id(value)) for t in statement.targets if isinstance(t, ast.Name))
        elif isinstance(value, ast.Constant) and isinstance(statement, ast.AnnAssign):
            if isinstance(statement.target, ast.Name):
                alone[statement.target.id] = id(value)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and any(
            _names_an_importer(n) for n in (node.func, *node.args)
        ):
            found.update(
                alone[a.id] for a in node.args if isinstance(a, ast.Name) and a.id in alone
            )
    return found


def _names_an_importer(node: ast.expr) -> bool:
    name = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")
    return name in IMPORTERS


def string_imports(tree: ast.Module) -> Iterator[tuple[int, str]]:
    """(line, module) for every kode module a string names to be imported: an argument of
    ``importlib.import_module``/``__import__``, a ``"module:attribute"`` entry anywhere
    (``"kode.builtin.fs:fs_read"``), or a module's dotted name a module keeps to import later
    (`_table_strings`). Docstrings, logger names and span attributes (``"kode.hook.kind"``)
    import nothing."""
    docs = _docstrings(tree)
    tables = _table_strings(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            if _names_an_importer(node.func) and node.args:
                first = node.args[0]
                if isinstance(first, ast.JoinedStr) and first.values:
                    first = first.values[0]  # f"kode.agent.{name}": its fixed start
                if isinstance(first, ast.Constant) and isinstance(first.value, str):
                    text = first.value.rstrip(".")
                    if text == "kode" or text.startswith("kode."):
                        yield node.lineno, text
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docs
            and MODULE_STRING.fullmatch(node.value)
            and node.value.split(":", 1)[0] in MODULE_NAMES
            and (":" in node.value or id(node) in tables)
        ):
            yield node.lineno, node.value.split(":", 1)[0]


def kode_imports(module: str, tree: ast.Module) -> Iterator[tuple[int, str, list[str]]]:
    """(line, imported module, names) for every import statement of a kode module in `tree`."""
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
MODULE_NAMES = {name for name, _ in MODULES}
PACKAGES = sorted(m for m, p in MODULES if p.name == "__init__.py" and m != "kode")


def _resolved(target: str, names: list[str]) -> list[str]:
    """The kode modules an import of `names` from `target` loads: `from pkg import sub`
    loads ``pkg.sub`` when that is a module, a kept public path loads the name's new home
    (`COMPATIBILITY_PATHS`), else ``pkg`` itself."""
    found = [f"{target}.{n}" for n in names if f"{target}.{n}" in MODULE_NAMES]
    moved = [COMPATIBILITY_PATHS[target, n] for n in names if (target, n) in COMPATIBILITY_PATHS]
    if len(found) + len(moved) < len(names) or not names:
        found.append(target)
    return [m for m in dict.fromkeys([*found, *moved]) if m in MODULE_NAMES]


def imported(module: str, tree: ast.Module) -> Iterator[tuple[int, str]]:
    """(line, module) for every kode module `module` reaches: by an import statement anywhere
    (top level, in a function, for type checking only) or by a string that names it."""
    for line, target, names in kode_imports(module, tree):
        if names and all(COMPATIBILITY_PATHS.get((module, n)) == target for n in names):
            continue  # a kept public path's own door to the name's new home
        for found in _resolved(target, names) or [target]:
            yield line, found
    for line, target in string_imports(tree):
        yield line, target


def layer_problems(module: str, tree: ast.Module) -> list[str]:
    """Every reach of `module` to a layer it may not import, each with its line."""
    mine = layer_of(module)
    wrong = []
    for line, target in imported(module, tree):
        theirs = layer_of(target)
        if theirs != mine and theirs not in ALLOWED.get(mine, set()):
            wrong.append(f"line {line}: {target} ({theirs} may not be imported from {mine})")
    return wrong


@pytest.mark.parametrize(("module", "path"), MODULES, ids=[m for m, _ in MODULES])
def test_imports_go_down_the_layers(module: str, path: Path) -> None:
    problems = layer_problems(module, ast.parse(path.read_text(encoding="utf-8")))
    assert not problems, f"{module}: " + "; ".join(problems)


def _private(name: str) -> bool:
    """``_x`` is private; ``__x__`` is Python's, and ``_x_`` an enum's hook (``_missing_``)."""
    return name.startswith("_") and not name.startswith("__") and not name.endswith("_")


def private_import_problems(module: str, tree: ast.Module) -> list[str]:
    """Every import of another layer's private module or name (a string import too)."""
    mine = layer_of(module)
    wrong = []
    for line, target, names in kode_imports(module, tree):
        if layer_of(target) == mine:
            continue
        private_module = [p for p in target.split(".") if _private(p)]
        private_names = [n for n in names if _private(n)]
        if private_module or private_names:
            wrong.append(f"line {line}: from {target} import {', '.join(names)}")
    for line, target in string_imports(tree):
        if layer_of(target) != mine and any(_private(p) for p in target.split(".")):
            wrong.append(f"line {line}: the string {target!r}")
    return wrong


@pytest.mark.parametrize(("module", "path"), MODULES, ids=[m for m, _ in MODULES])
def test_no_private_names_across_subpackages(module: str, path: Path) -> None:
    wrong = private_import_problems(module, ast.parse(path.read_text(encoding="utf-8")))
    assert not wrong, f"{module} reaches into another subpackage's private names: {wrong}"


def _defined_private_names(tree: ast.Module) -> set[str]:
    """Private attribute names a module defines: its functions, classes, slots, self._x."""
    found: set[str] = set()
    docs = _docstrings(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            found.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            found.add(node.id)
        elif isinstance(node, ast.Call) and _reflective(node) == "setattr":
            found.add(_literal_name(node) or "")  # setattr(x, "_y", ...): this module's name
        elif isinstance(node, ast.ClassDef | ast.Assign):
            continue
    for node in ast.walk(tree):  # __slots__ = ("_a", "_b"): names the class defines
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__slots__" for t in node.targets
        ):
            for item in ast.walk(node.value):
                if isinstance(item, ast.Constant) and isinstance(item.value, str):
                    if id(item) not in docs:
                        found.add(item.value)
    return found


def _reflective(node: ast.Call) -> str:
    """``getattr``, ``hasattr``, ``setattr`` or ``delattr`` when `node` calls one, else ``""``."""
    name = node.func.id if isinstance(node.func, ast.Name) else ""
    return name if name in ("getattr", "hasattr", "setattr", "delattr") else ""


def _literal_name(node: ast.Call) -> str | None:
    """The attribute name a reflective call passes as a literal string, if it does."""
    if len(node.args) >= 2 and isinstance(node.args[1], ast.Constant):
        value = node.args[1].value
        return value if isinstance(value, str) else None
    return None


def _foreign_names(tree: ast.Module) -> set[str]:
    """Names bound to what is not kode's: modules (``os``, ``sys``) and what is imported from
    another package (``from dbos import DBOS``): their private names are theirs to keep."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] != "kode":
                    names.add((alias.asname or alias.name).split(".")[0])
        elif isinstance(node, ast.ImportFrom) and not node.level:
            if (node.module or "").split(".")[0] != "kode":
                names.update(a.asname or a.name for a in node.names)
    return names


def private_attribute_problems(tree: ast.Module) -> list[str]:
    """Every read of a private attribute the module does not define: ``obj._x``, and
    ``getattr(obj, "_x")`` (or ``hasattr``, ``setattr``, ``delattr``) with the name spelled."""
    defined = _defined_private_names(tree)
    foreign = _foreign_names(tree)
    wrong = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            owner, name = node.value, node.attr
        elif isinstance(node, ast.Call) and _reflective(node) and node.args:
            owner, name = node.args[0], _literal_name(node) or ""
            if not _private(name):
                continue
        else:
            continue
        if isinstance(owner, ast.Name) and owner.id in ("self", "cls"):
            continue
        if isinstance(owner, ast.Name) and owner.id in foreign:
            continue  # os._exit, sys._getframe: another package's own names
        if name in defined:
            continue  # this module's own private name, on another instance of its class
        wrong.append(f"line {node.lineno}: {ast.unparse(node)}")
    return wrong


@pytest.mark.parametrize(("module", "path"), MODULES, ids=[m for m, _ in MODULES])
def test_no_module_reads_private_attributes_defined_elsewhere(module: str, path: Path) -> None:
    wrong = private_attribute_problems(ast.parse(path.read_text(encoding="utf-8")))
    assert not wrong, f"{module} reads private attributes defined elsewhere: {wrong}"


# Each reach the checks above exist to catch, as a module of tools/ might write it.
REACHES = {
    "an import of a layer above": "from kode.agent import pipeline\n",
    "an import of a layer above, in a function": "def f():\n    import kode.agent.run\n",
    "an import of the package's face": "from kode import Agent\n",
    "an import of the package's face as a module": "def f():\n    import kode\n",
    "a string import": 'import importlib\nimportlib.import_module("kode.agent.agent")\n',
    "a string import by a bare name": (
        'from importlib import import_module\nimport_module("kode.registries")\n'
    ),
    "a string import built at run time": (
        'import importlib\ndef f(n):\n    importlib.import_module(f"kode.agent.{n}")\n'
    ),
    "an entry naming a module above": 'TARGET = "kode.agent.agent:Agent"\n',
    "a table of modules above": '_GROUPS = ("kode.tools.define", "kode.agent.run")\n',
    "a module above kept to import later": (
        'import importlib\n_LATER = "kode.registries"\nimportlib.import_module(_LATER)\n'
    ),
    "a module above handed to an importer": (
        'import anyio, importlib\n_LATER = "kode.agent.run"\n'
        "anyio.to_thread.run_sync(importlib.import_module, _LATER)\n"
    ),
    "a kept public path whose name lives above": "from kode.tools import define_tool\n",
    "an unknown top-level module": "from kode import nothing_known\n",
}
PRIVATE_REACHES = {
    "a private module": "from kode.registries._x import y\n",
    "a private name": "from kode.registries.tool_registry import _lock\n",
    "a private module by string": 'import importlib\nimportlib.import_module("kode.agent._x")\n',
}
ATTRIBUTE_REACHES = {
    "a private attribute": "def f(agent):\n    return agent._record_for\n",
    "a private attribute by getattr": 'def f(agent):\n    return getattr(agent, "_record_for")\n',
    "a private attribute by getattr with a default": (
        'def f(store):\n    return getattr(store, "_start_session", None)\n'
    ),
    "a private attribute by hasattr": 'def f(x):\n    return hasattr(x, "_private")\n',
}


@pytest.mark.parametrize("reach", sorted(REACHES))
def test_the_layer_check_catches_each_reach(reach: str) -> None:
    problems = layer_problems("kode.tools.thing", ast.parse(REACHES[reach]))
    assert problems, f"{reach} passed the layer check"


@pytest.mark.parametrize("reach", sorted(PRIVATE_REACHES))
def test_the_private_import_check_catches_each_reach(reach: str) -> None:
    problems = private_import_problems("kode.tools.thing", ast.parse(PRIVATE_REACHES[reach]))
    assert problems, f"{reach} passed the private-name check"


@pytest.mark.parametrize("reach", sorted(ATTRIBUTE_REACHES))
def test_the_attribute_check_catches_each_reach(reach: str) -> None:
    problems = private_attribute_problems(ast.parse(ATTRIBUTE_REACHES[reach]))
    assert problems, f"{reach} passed the private-attribute check"


def test_the_checks_let_through_what_is_allowed() -> None:
    """The same shapes, pointed at what a module of tools/ may use, pass: the checks above
    fail for the reach, not for the shape."""
    allowed = (
        "from kode.tools import results\n"
        "from kode.extras import install_hint\n"
        'import importlib\nimportlib.import_module("kode.tools.results")\n'
        'TARGET = "kode.tools.results:text_result"\n'
        '"""A docstring may name kode.agent.agent."""\n'
        'import logging\n_log = logging.getLogger("kode.agent")\n'
        'def g(module):\n    return module.startswith("kode.agent")\n'
        '_OWNER = "kode.agent"\n'
        "import os\n"
        "def f(self, x):\n"
        "    os._exit(0)\n"
        '    getattr(x, "__name__")\n'
        "    return self._mine\n"
    )
    tree = ast.parse(allowed)
    assert layer_problems("kode.tools.thing", tree) == []
    assert private_import_problems("kode.tools.thing", tree) == []
    assert private_attribute_problems(tree) == []


# --- kode.builtin: three independent clusters, and no import cycle ----------------------------

# The sub-packages of kode.builtin that hold one cluster of tools each; a cluster imports
# nothing of another (the package's own __init__, todo and tasks import from any).
BUILTIN_CLUSTERS = ("fs", "runtime", "web")


def import_graph(prefix: str) -> dict[str, set[str]]:
    """Module → the modules under `prefix` it imports anywhere (top level, in functions,
    under TYPE_CHECKING): a cycle through any of them is a cycle of the design."""
    graph: dict[str, set[str]] = {}
    for module, path in MODULES:
        if module != prefix and not module.startswith(prefix + "."):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        edges = graph.setdefault(module, set())
        for _, found in imported(module, tree):
            if found != module and (found == prefix or found.startswith(prefix + ".")):
                edges.add(found)
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


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import cycles of `graph`: each set of two or more modules that reach each other
    (its strongly connected components), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for start in sorted(graph):
        if start not in index:
            visit(start)
    return sorted(found)


def layer_graph() -> dict[str, set[str]]:
    """Layer -> the layers its modules reach (import statements and strings alike)."""
    graph: dict[str, set[str]] = {}
    for module, path in MODULES:
        mine = layer_of(module)
        edges = graph.setdefault(mine, set())
        for _, target in imported(module, ast.parse(path.read_text(encoding="utf-8"))):
            if layer_of(target) != mine:
                edges.add(layer_of(target))
    return graph


def test_the_layers_the_imports_draw_have_no_cycle() -> None:
    """The picture of the package drawn from its real imports: every edge is one the table
    allows, and no path runs back up (the allowed edges themselves form no cycle)."""
    drawn = layer_graph()
    assert find_cycle(drawn) is None, find_cycle(drawn)
    assert find_cycle(ALLOWED) is None, find_cycle(ALLOWED)
    extra = {layer: sorted(edges - ALLOWED[layer]) for layer, edges in drawn.items()}
    assert not any(extra.values()), extra


def test_no_import_cycle_spans_two_folders() -> None:
    """Every import anywhere (in functions and for type checking too) and every string
    import: no cycle holds modules of two folders."""
    graph = {
        module: {target for _, target in imported(module, ast.parse(path.read_text("utf-8")))}
        for module, path in MODULES
    }
    spanning = [c for c in strongly_connected(graph) if len({layer_of(m) for m in c}) > 1]
    assert not spanning, spanning


# The import cycles inside one folder that remain (through imports made in a function or for
# type checking: a module and the one it hands work to). This list may only shrink: a new
# cycle, or one that grows, fails the test below, and so does a cycle that is gone and still
# listed.
KNOWN_CYCLES = [
    [
        "kode.registries.entries",
        "kode.registries.factories",
        "kode.registries.resolve",
        "kode.registries.tool_registry",
    ],
    [
        "kode.tools.asking",
        "kode.tools.blocking",
        "kode.tools.context",
        "kode.tools.core",
        "kode.tools.declared",
        "kode.tools.define",
        "kode.tools.schema",
        "kode.tools.services",
    ],
]


def test_every_subpackage_has_no_import_cycle_but_the_known() -> None:
    found = [c for package in PACKAGES for c in strongly_connected(import_graph(package))]
    found = sorted({tuple(c): c for c in found}.values())
    assert found == KNOWN_CYCLES


def test_the_cycle_finder_finds_every_cycle() -> None:
    graph = {"a": {"b"}, "b": {"a", "c"}, "c": set(), "d": {"e"}, "e": {"d"}, "f": {"f"}}
    assert strongly_connected(graph) == [["a", "b"], ["d", "e"]]
    assert strongly_connected({"a": {"b"}, "b": {"c"}}) == []


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


# The plumbing several folders of kode.builtin share lives in a folder of its own, which every
# folder may import and which imports none of them: the workspace's paths and writes (memory and
# media write files as the file tools do), the web tools' address rules and settings (the
# browser loads what web_fetch may), and how a command is checked, started and killed (code_run's
# script runs as bash_run's command does).
SHARED_HOME = "_shared"


def builtin_folder_problems(graph: dict[str, set[str]]) -> list[str]:
    """Every import of one folder of kode.builtin by another (the shared home is no folder's
    own: any folder may import it), and every import of a folder by the shared home."""
    wrong = []
    for module, imported in graph.items():
        if module.count(".") < 3 and not (ROOT / "builtin" / module.split(".")[-1]).is_dir():
            continue  # kode.builtin itself, todo, tasks and the compatibility modules
        mine = module.split(".")[2]
        for target in sorted(imported):
            if target.count(".") < 2:
                wrong.append(f"{module} imports the package {target}")
                continue
            theirs = target.split(".")[2]
            if (ROOT / "builtin" / theirs).is_dir() and theirs not in (mine, SHARED_HOME):
                wrong.append(f"{module} imports {target}")
    return wrong


def test_no_folder_of_kode_builtin_imports_another_but_the_shared_plumbing() -> None:
    """Every folder (fs, runtime, web, memory, media, browser, sessions, skills, and any new
    one), not just the first three clusters: each imports nothing of another but the shared
    home, and the shared home imports none of them."""
    folders = {p.name for p in (ROOT / "builtin").iterdir() if (p / "__init__.py").is_file()}
    assert folders >= {"fs", "runtime", "web", "memory", "media", "browser", SHARED_HOME}
    assert builtin_folder_problems(import_graph("kode.builtin")) == []


def test_the_folder_check_catches_a_folder_reaching_another() -> None:
    graph = {
        "kode.builtin.memory": {"kode.builtin.fs._globs", "kode.builtin._shared._safe_open"},
        "kode.builtin.media._save": {"kode.builtin.web._fetch"},
        "kode.builtin.browser": {"kode.builtin._shared._web_config", "kode.builtin"},
        "kode.builtin._shared._policy": {"kode.builtin.runtime", "kode.builtin._shared._env"},
    }
    assert builtin_folder_problems(graph) == [
        "kode.builtin.memory imports kode.builtin.fs._globs",
        "kode.builtin.media._save imports kode.builtin.web._fetch",
        "kode.builtin.browser imports the package kode.builtin",
        "kode.builtin._shared._policy imports kode.builtin.runtime",
    ]


def test_loading_one_folder_loads_no_other() -> None:
    """In a fresh interpreter, the memory, image and browser tools load the plumbing they
    share and nothing of another folder (memory once loaded all fourteen modules of fs)."""
    import subprocess
    import sys

    code = (
        "import sys, kode.builtin.memory, kode.builtin.media, kode.builtin.browser\n"
        "print(*sorted({m.split('.')[2] for m in sys.modules if m.startswith('kode.builtin.')}))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["_shared", "browser", "media", "memory"]


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
