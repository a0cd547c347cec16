"""A lazily registered tool's module is never imported while the registry's lock is held.

The module registers its tool into the registry as it is imported. If a resolution or a search
imported it with the lock held while another thread was importing the same module, that thread
would wait for the lock to register, and the first would wait for the module: a deadlock. Each
race here is made certain with events: the module's import waits until the other thread is
about to import it too. The threads are joined with a timeout, so a deadlock fails the test.
"""

from __future__ import annotations

import importlib
import itertools
import threading
from collections.abc import Callable
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest

from kode import ToolRegistry
from kode.tools.declared import declare_tool

_counter = itertools.count()

_MODULE = '''
import {gate} as gate
from kode import define_tool

gate.started.set()
gate.go.wait(10)


@define_tool(registry=gate.registry)
def slow_echo(text: str) -> str:
    """Echo a text back, from a module slow to import."""
    return text
'''


def _race(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, use: Callable[[ToolRegistry], Any]
) -> Any:
    n = next(_counter)
    gate_name, module_name = f"_kode_lazy_gate_{n}", f"_kode_lazy_tool_{n}"
    (tmp_path / f"{gate_name}.py").write_text(
        "import threading\nregistry = None\nstarted = threading.Event()\ngo = threading.Event()\n"
    )
    (tmp_path / f"{module_name}.py").write_text(_MODULE.format(gate=gate_name))
    monkeypatch.syspath_prepend(str(tmp_path))
    gate = importlib.import_module(gate_name)
    reg = ToolRegistry("race")
    gate.registry = reg
    importing = threading.Event()

    def importer(module: str) -> ModuleType:
        importing.set()  # the lazy load is about to import the module the other thread holds
        return importlib.import_module(module)

    reg.register_lazy("slow_echo", f"{module_name}:slow_echo", kind="other", importer=importer)
    outcome: dict[str, Any] = {}

    def direct() -> None:
        try:
            importlib.import_module(module_name)
        except BaseException as exc:  # pragma: no cover - reported below
            outcome["direct"] = exc

    def lazy() -> None:
        try:
            outcome["result"] = use(reg)
        except BaseException as exc:  # pragma: no cover - reported below
            outcome["lazy"] = exc

    importer_thread = threading.Thread(target=direct, daemon=True)
    importer_thread.start()
    assert gate.started.wait(10), "the direct import never started"
    user_thread = threading.Thread(target=lazy, daemon=True)
    user_thread.start()
    assert importing.wait(10), "the lazy load never reached the import"
    gate.go.set()
    user_thread.join(timeout=10)
    importer_thread.join(timeout=10)
    assert not user_thread.is_alive() and not importer_thread.is_alive(), (
        "deadlock: the lazy load imported the module while holding the registry's lock"
    )
    assert "direct" not in outcome and "lazy" not in outcome, outcome
    entry = next(e for e in reg.entries() if e.name == "slow_echo")
    assert entry.loaded and entry.origin == (module_name, "slow_echo")
    return outcome["result"]


def test_resolving_while_another_thread_imports_the_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    resolution = _race(tmp_path, monkeypatch, lambda reg: reg.resolve(["slow_echo"]))
    assert resolution.names == ["slow_echo"]
    assert resolution.tools[0].fn("hi") == "hi"


def test_resolving_a_group_while_another_thread_imports_the_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    resolution = _race(tmp_path, monkeypatch, lambda reg: reg.resolve(None))
    assert resolution.names == ["slow_echo"]


def test_searching_while_another_thread_imports_the_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hits = _race(tmp_path, monkeypatch, lambda reg: reg.search("echo a text back"))
    assert [h.name for h in hits] == ["slow_echo"]
    assert hits[0].description.startswith("Echo a text back")


def test_registering_lazily_after_a_search_imports_nothing_until_the_next_search() -> None:
    reg = ToolRegistry("late")
    reg.register(declare_tool("first", description="Read a file."))
    assert [h.name for h in reg.search("read a file")] == ["first"]
    imported: list[str] = []

    def importer(module: str) -> Any:
        imported.append(module)
        return SimpleNamespace(late=declare_tool("late", description="Send a postcard."))

    reg.register_lazy("late", "somewhere.cards:late", kind="other", importer=importer)
    assert imported == []  # registering ran under the lock: it must not import
    hits = reg.search("send a postcard")
    assert hits[0].name == "late"  # with meaning on, the closest others follow
    assert hits[0].description == "Send a postcard."
    assert imported == ["somewhere.cards"]
    reg.unregister("late")
    assert "late" not in [h.name for h in reg.search("postcard")]
