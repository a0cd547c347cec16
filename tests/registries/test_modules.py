"""A ``.py`` path and a dotted name mean one module, imported once: ``-m shop/tools.py`` with
``--deps shop.tools:make_inventory``, absolute paths from anywhere, namespace directories,
and files whose name another module holds. Real files in a temporary directory; the command
runs as a real ``python -m kode`` subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kode import ToolRegistry
from kode.registries.modules import import_tools_module, module_name_for

DEPS = """
from dataclasses import dataclass


@dataclass
class Inventory:
    items: dict[str, int]


def make_inventory() -> Inventory:
    return Inventory(items={"dune": 3})
"""

TOOLS = '''
from kode import ToolContext, define_tool
from shop.deps import Inventory, make_inventory


@define_tool
def stock(title: str, ctx: ToolContext[Inventory]) -> int:
    """How many copies of a title are in stock.

    Args:
        title: The title.
    """
    return ctx.deps.items.get(title, 0)
'''

MORE = '''
from kode import define_tool
from shop.tools import Inventory


@define_tool
def restock(title: str) -> str:
    """Order more copies of a title.

    Args:
        title: The title.
    """
    return f"ordered {title}"
'''


def project(root: Path, *, package: bool = True) -> Path:
    shop = root / "shop"
    shop.mkdir(parents=True)
    if package:
        (shop / "__init__.py").write_text("", encoding="utf-8")
    (shop / "deps.py").write_text(DEPS, encoding="utf-8")
    (shop / "tools.py").write_text(TOOLS, encoding="utf-8")
    (shop / "more.py").write_text(MORE, encoding="utf-8")
    return root


def kode(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run(
        [sys.executable, "-m", "kode", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env=env,
        check=False,
    )


def stock(out: subprocess.CompletedProcess[str]) -> str:
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["is_error"] is False, result
    return str(result["content"][0]["text"])


@pytest.mark.parametrize("package", [True, False], ids=["package", "namespace"])
def test_a_path_and_a_dotted_name_are_one_module(tmp_path: Path, package: bool) -> None:
    root = project(tmp_path / "app", package=package)
    call = ("tools", "call", "stock", '{"title": "dune"}')
    both_ways = [
        ("-m", "shop/tools.py", "--deps", "shop.deps:make_inventory"),
        ("-m", "shop/tools.py", "--deps", "shop.tools:make_inventory"),
        ("-m", "shop.tools", "--deps", "shop/tools.py:make_inventory"),
        ("-m", str(root / "shop" / "tools.py"), "--deps", "shop.tools:make_inventory"),
        ("-m", "shop/tools.py", "-m", "shop/more.py", "--deps", "shop.deps:make_inventory"),
    ]
    for options in both_ways:
        assert stock(kode(*call, *options, cwd=root)) == "3", options


def test_an_absolute_path_into_a_package_works_from_anywhere(tmp_path: Path) -> None:
    root = project(tmp_path / "app")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    tools, deps = root / "shop" / "tools.py", root / "shop" / "deps.py"
    out = kode(
        "tools", "call", "stock", '{"title": "dune"}',
        "-m", str(tools), "--deps", f"{deps}:make_inventory",
        cwd=elsewhere,
    )  # fmt: skip
    assert stock(out) == "3"
    # From inside the package, a sibling's file name means the same module too.
    out = kode(
        "tools", "call", "stock", '{"title": "dune"}',
        "-m", "tools.py", "--deps", "deps.py:make_inventory",
        cwd=root / "shop",
    )  # fmt: skip
    assert stock(out) == "3"


def test_kode_tools_list_imports_a_module_named_twice_once(tmp_path: Path) -> None:
    root = project(tmp_path / "app")
    out = kode("tools", "list", "shop/tools.py", "shop.tools", "shop/more.py", cwd=root)
    assert out.returncode == 0, out.stderr
    assert [line.split()[0] for line in out.stdout.splitlines()] == ["restock", "stock"]


# --- in this process ---------------------------------------------------------------------


@pytest.fixture
def clean_imports(isolated_registry: ToolRegistry) -> Iterator[None]:
    """sys.path and sys.modules as they were, after the test imported its files."""
    path = list(sys.path)
    modules = set(sys.modules)
    yield
    sys.path[:] = path
    for name in set(sys.modules) - modules:
        del sys.modules[name]


def test_module_name_for(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = project(tmp_path / "app")
    (tmp_path / "loose").mkdir()
    loose = tmp_path / "loose" / "helpers.py"
    loose.write_text("", encoding="utf-8")
    monkeypatch.chdir(tmp_path / "loose")
    assert module_name_for(root / "shop" / "tools.py") == ("shop.tools", root)
    assert module_name_for(root / "shop" / "__init__.py") == ("shop", root)
    assert module_name_for(loose) == ("helpers", tmp_path / "loose")
    monkeypatch.chdir(tmp_path)
    assert module_name_for(loose) == ("loose.helpers", tmp_path)
    monkeypatch.chdir(root / "shop")
    assert module_name_for(loose) is None  # not under the current directory
    assert module_name_for(root / "shop" / "tools.py") == ("shop.tools", root)


@pytest.mark.usefixtures("clean_imports")
def test_import_tools_module_returns_one_module_for_both_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolated_registry: ToolRegistry
) -> None:
    root = project(tmp_path / "app")
    monkeypatch.chdir(tmp_path)  # the project is not the current directory
    by_path = import_tools_module(str(root / "shop" / "tools.py"))
    assert by_path.__name__ == "shop.tools"
    assert import_tools_module("shop.tools") is by_path
    assert import_tools_module(str(root / "shop" / "tools.py")) is by_path
    assert isolated_registry.names() == ["stock"]


@pytest.mark.usefixtures("clean_imports")
def test_a_file_named_like_another_module_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "lib").mkdir()
    (tmp_path / "here").mkdir()
    clash = tmp_path / "lib" / "json.py"
    clash.write_text("raise AssertionError('must not run')\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path / "here")
    with pytest.raises(ImportError, match=r"cannot import .*json\.py as 'json': that name is "):
        import_tools_module(str(clash))
    assert sys.modules["json"].__file__ != str(clash)


@pytest.mark.usefixtures("clean_imports")
def test_a_file_whose_name_is_not_a_module_name_is_imported_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolated_registry: ToolRegistry
) -> None:
    (tmp_path / "here").mkdir()
    odd = tmp_path / "my-tools.py"
    odd.write_text(
        "from kode import define_tool\n\n\n@define_tool\ndef ping() -> str:\n"
        '    """Answer pong."""\n    return "pong"\n',
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path / "here")
    first = import_tools_module(str(odd))
    assert import_tools_module(str(odd)) is first
    assert isolated_registry.names() == ["ping"]
    with pytest.raises(ImportError, match=r"no such file: .*nope\.py"):
        import_tools_module(str(tmp_path / "nope.py"))
