"""``import kode.builtin`` registers every built-in tool from a table, importing no tool module.

The registry knows each tool's name, kind, group and aliases from ``kode.builtin.TOOLS`` and
imports the tool's module when the tool is first needed. These tests, each in a fresh process,
check that the table says what the modules define (so it cannot drift: a new built-in tool
missing from it fails here), that nothing is imported until a tool is needed, and that every
way of listing or choosing tools sees the same tools as importing the modules would.
"""

from __future__ import annotations

import json
import subprocess
import sys

_META = (
    "def meta(reg):\n"
    "    return [[e.name, e.meta.source.value, e.meta.kind.value, list(e.meta.groups),\n"
    "             list(e.meta.aliases), e.meta.optional, e.meta.defer_loading, list(e.origin)]\n"
    "            for e in reg.snapshot().entries]\n"
)


def _run(code: str) -> object:
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_importing_kode_builtin_imports_no_tool_module() -> None:
    code = (
        "import sys, json, kode.builtin\n"
        "from kode import registry\n"
        "print(json.dumps([len(registry.names()),\n"
        "                  sorted(m for m in sys.modules if m.startswith('kode.builtin.'))]))\n"
    )
    count, modules = _run(code)  # type: ignore[misc]
    assert count >= 25
    assert modules == []


def test_the_table_matches_the_tools_the_modules_define() -> None:
    # Registered from the table, then each tool made: the registry must hold the same entries,
    # in the same order, with the same meta as when the modules register their tools.
    code = (
        "import json, importlib, kode.builtin\n"
        "from kode import registry\n" + _META + "lazy = meta(registry)\n"
        "for e in registry.entries():\n"
        "    assert e.tool is not None\n"
        "for m in kode.builtin.MODULES:\n"
        "    importlib.import_module('kode.builtin.' + m)\n"
        "real = meta(registry)\n"
        "tools = [[t.name, t.kind.value, sorted(t.groups)] for t in\n"
        "         (registry.get(e.name) for e in registry.snapshot().entries)]\n"
        "print(json.dumps([lazy, real, tools]))\n"
    )
    lazy, real, tools = _run(code)  # type: ignore[misc]
    missing = [row for row in real if row[0] not in {r[0] for r in lazy}]
    assert not missing, (
        "built-in tools missing from kode.builtin.TOOLS (add a row: name, 'module:attribute', "
        f"kind, group, aliases): {missing}"
    )
    assert lazy == real
    assert [[n, k, g] for n, _, k, g, *_ in real] == tools


def test_importing_a_module_first_gives_the_same_registry() -> None:
    # kode.builtin.web imported (and registered) before kode.builtin: its entries are kept,
    # the others are lazy, and the registry says the same as when everything was imported.
    code = (
        "import json, importlib\n"
        "import kode.builtin.web\n"
        "import kode.builtin\n"
        "from kode import registry\n" + _META + "first = meta(registry)\n"
        "same = registry.get('web_fetch') is kode.builtin.web.web_fetch\n"
        "for m in kode.builtin.MODULES:\n"
        "    importlib.import_module('kode.builtin.' + m)\n"
        "print(json.dumps([sorted(first), sorted(meta(registry)), same]))\n"
    )
    first, after, same = _run(code)  # type: ignore[misc]
    assert first == after
    assert same is True


def test_choosing_tools_imports_only_the_modules_of_the_tools_chosen() -> None:
    code = (
        "import sys, json, kode.builtin\n"
        "from kode import registry\n"
        "resolution = registry.resolve(['group:think', 'read'])\n"
        "chosen = sorted(t.name for t in resolution.tools)\n"
        "import kode.builtin.todo as todo\n"
        "same = registry.get('todo_write') is todo.todo_write\n"
        "mods = sorted(m for m in sys.modules if m.startswith('kode.builtin.'))\n"
        "print(json.dumps([chosen, same, 'kode.builtin.web' in mods,\n"
        "                  'kode.builtin.runtime' in mods, kode.builtin.fs.fs_read.name]))\n"
    )
    chosen, same, web, runtime, fs_read = _run(code)  # type: ignore[misc]
    assert chosen == ["fs_read", "todo_read", "todo_write"]
    assert same is True
    assert (web, runtime) == (False, False)
    assert fs_read == "fs_read"
