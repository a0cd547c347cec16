"""The public import paths that must keep working when a name moves between modules or layers.

Each path is one users write (in the docs, the examples, their own code, an entry point); a
move keeps it importable, and giving the very object of the name's home, not a copy.
"""

from __future__ import annotations

import importlib
import pickle
import re
import subprocess
import sys
import tomllib
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# "module:attribute" (or a module alone) -> where the object lives now.
PUBLIC_PATHS = {
    "kode.cli:main": "kode.cli:main",
    "kode:define_tool": "kode.registries.define:define_tool",
    "kode:tool": "kode.registries.define:define_tool",
    "kode.tools:define_tool": "kode.registries.define:define_tool",
    "kode.tools:tool": "kode.registries.define:define_tool",
    "kode.tools.define:define_tool": "kode.registries.define:define_tool",
    "kode.tools.define:tool": "kode.registries.define:define_tool",
    "kode.registries:define_tool": "kode.registries.define:define_tool",
    "kode.registries:tool_factory": "kode.registries.factories:tool_factory",
    "kode.registries:registry": "kode.registries.tool_registry:registry",
    "kode.registries.registry": "kode.registries.tool_registry:registry",
    "kode.tools.tool": "kode.registries.define:define_tool",
    "kode.tools:Tool": "kode.tools.core:Tool",
    "kode:declare_tool": "kode.tools.declared:declare_tool",
    "kode:__version__": "kode.version:__version__",
    "kode.cli:version": "kode.cli:version",
    "kode.models.script_file:load_script": "kode.models.scripted:load_script",
    "kode.models.script_file:parse_script": "kode.models.scripted:parse_script",
    "kode.models.script_file:ScriptError": "kode.models.scripted:ScriptError",
    "kode:ScriptError": "kode.models.scripted:ScriptError",
    "kode.sessions.store:start_session": "kode.sessions.starting:start_session",
    "kode.builtin.fs_search:fs_grep": "kode.builtin.fs.search:fs_grep",
}


def _load(path: str) -> object:
    module, _, attribute = path.partition(":")
    if not attribute and "." in module:
        # A dotted name alone is read as an attribute of its package, as code reads it.
        package, _, attribute = module.rpartition(".")
        return getattr(importlib.import_module(package), attribute)
    loaded = importlib.import_module(module)
    return getattr(loaded, attribute) if attribute else loaded


@pytest.mark.parametrize("path", sorted(PUBLIC_PATHS))
def test_a_public_path_gives_the_object_of_its_home(path: str) -> None:
    assert _load(path) is _load(PUBLIC_PATHS[path])


def test_the_kode_command_is_the_entry_point_the_distribution_declares() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert project["project"]["scripts"] == {"kode": "kode.cli:main"}
    assert "kode.cli:main" in PUBLIC_PATHS


@pytest.mark.parametrize("module", ["kode", "kode.cli"])
def test_python_dash_m_runs_the_kode_command(module: str) -> None:
    """``python -m kode`` and ``python -m kode.cli`` (what the docs' MCP examples start a
    server with) are the ``kode`` command."""
    done = subprocess.run(
        [sys.executable, "-m", module, "--version"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("kode ")


def test_the_version_module_and_the_distribution_agree() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    from kode.version import __version__

    assert __version__ == project["project"]["version"]


def test_the_kept_paths_of_the_decorators_load_the_registry_only_when_read() -> None:
    """``import kode.tools`` and ``import kode.tools.define`` load nothing of the registries;
    reading ``define_tool`` there does, and gives the registering decorator."""
    code = (
        "import sys, kode.tools, kode.tools.define\n"
        "assert not [m for m in sys.modules if m.startswith('kode.registries')], sys.modules\n"
        "from kode.tools.define import define_tool\n"
        "import kode.registries\n"
        "assert define_tool is kode.registries.define_tool\n"
        "@define_tool\n"
        "def ping() -> str:\n"
        "    '''Answer pong.'''\n"
        "    return 'pong'\n"
        "assert kode.registries.registry.get('ping') is ping\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_an_unknown_name_of_a_kept_path_is_an_attribute_error() -> None:
    import kode.tools
    import kode.tools.define

    for module in (kode.tools, kode.tools.define):
        with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
            _ = module.nothing_here  # type: ignore[attr-defined]


# Former module -> (the module its names live in now, the names users import from it).
MOVED = {
    "kode.tools.tool": ("kode.tools.core", ["JsonSchemaGenerator", "PreparedCall", "Tool"]),
    "kode.registries.registry": (
        "kode.registries.tool_registry",
        ["RegisteredTool", "RegistrySnapshot", "RegistryView", "ToolRegistry", "normalize_name"],
    ),
}
MOVED_NAMES = [(former, name) for former, (_, names) in MOVED.items() for name in names]


@pytest.mark.parametrize(("former", "name"), MOVED_NAMES)
def test_a_former_module_gives_the_object_of_its_new_home_with_a_warning(
    former: str, name: str
) -> None:
    home = MOVED[former][0]
    with pytest.warns(DeprecationWarning, match=rf"{former}\.{name} has moved to {home}\.{name}"):
        exec(f"from {former} import {name} as got", namespace := {})
    assert namespace["got"] is getattr(importlib.import_module(home), name)


@pytest.mark.parametrize(("former", "name"), MOVED_NAMES)
def test_the_new_home_of_a_moved_name_does_not_warn(former: str, name: str) -> None:
    home = MOVED[former][0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        exec(f"from {home} import {name}", {})


def test_the_warning_points_at_the_line_that_imports_the_former_path() -> None:
    with pytest.warns(DeprecationWarning) as caught:
        exec(compile("from kode.tools.tool import Tool", "user_code.py", "exec"), {})
    assert [w.filename for w in caught] == ["user_code.py"]


def test_a_former_module_answers_probes_for_dunders_without_a_warning() -> None:
    """`inspect`, `doctest` and the import system probe every module in `sys.modules` for
    such names: a probe is an ordinary missing attribute, not a use of the former path."""
    former = importlib.import_module("kode.registries.registry")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for dunder in ("__path__", "__wrapped__", "__test__", "__warningregistry__"):
            assert not hasattr(former, dunder), dunder
        with pytest.raises(ImportError, match="cannot import name 'nothing_here'"):
            exec("from kode.registries.registry import nothing_here", {})


def test_a_class_pickled_under_its_former_module_unpickles_with_a_warning() -> None:
    """What a pickle stored before the move holds: the class by its former module's name."""
    from kode.registries.tool_registry import ToolRegistry
    from kode.tools.core import Tool

    stored_tool = pickle.dumps(Tool).replace(b"kode.tools.core", b"kode.tools.tool")
    stored_registry = b"ckode.registries.registry\nToolRegistry\n."
    with pytest.warns(DeprecationWarning, match="kode.tools.core.Tool"):
        assert pickle.loads(stored_tool) is Tool
    with pytest.warns(DeprecationWarning, match="kode.registries.tool_registry.ToolRegistry"):
        assert pickle.loads(stored_registry) is ToolRegistry
    assert pickle.loads(pickle.dumps(Tool)) is Tool
    assert b"kode.tools.core" in pickle.dumps(Tool)


FIRST_IMPORTS = [
    "import kode.tools.tool",
    "import kode.registries.registry",
    "from kode.tools.tool import Tool",
    "from kode.registries.registry import ToolRegistry",
    "import kode.tools.tool as m",
    "from kode.tools import tool",
    "import kode",
]


@pytest.mark.parametrize("first", FIRST_IMPORTS)
def test_the_decorator_and_the_registry_keep_their_names_whatever_is_imported_first(
    first: str,
) -> None:
    """In a fresh interpreter, whichever path is imported first: ``kode.tools.tool`` stays the
    decorator and ``kode.registries.registry`` the registry, never the module of that name,
    which still gives its names."""
    code = (
        "import warnings\n"
        "warnings.simplefilter('ignore', DeprecationWarning)\n"
        f"{first}\n"
        "import kode.tools.tool, kode.registries.registry, kode.registries.define as d\n"
        "import kode.registries.tool_registry as r, kode.tools.core as c\n"
        "assert kode.tools.tool is d.define_tool, kode.tools.tool\n"
        "assert kode.registries.registry is r.registry, kode.registries.registry\n"
        "import kode.tools.tool as m\n"
        "assert m is d.define_tool, m\n"
        "from kode.tools import tool\n"
        "assert tool is d.define_tool, tool\n"
        "from kode.registries import registry\n"
        "assert registry is r.registry, registry\n"
        "from kode.tools.tool import Tool\n"
        "from kode.registries.registry import ToolRegistry\n"
        "assert Tool is c.Tool and ToolRegistry is r.ToolRegistry\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_nothing_in_kode_tests_benchmarks_or_docs_imports_a_former_module() -> None:
    """The tests turn the warning into an error where it runs; this covers code they do not
    run (benchmarks, scripts, branches a test does not take) and the API pages. Docs prose
    may name a former path; a page may not render or link to it."""
    pattern = "|".join(re.escape(former) for former in MOVED)
    users = []
    for folder in ("kode", "tests", "bench", "scripts", "examples", "docs"):
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix not in (".py", ".md") or path.name in ("tool.py", "registry.py"):
                continue
            if path == Path(__file__).resolve():
                continue
            text = path.read_text(encoding="utf-8")
            # Code imports it; a docs page renders it (``:::``) or links to it (``api.md#``).
            uses = r"(from|import)\s+" if path.suffix == ".py" else r"(:::\s+|api\.md#)"
            # (Its package loads a former module, as ``_former_*``, to keep the name's meaning.)
            for found in re.finditer(rf"{uses}({pattern})\b(?! as _former_)", text):
                users.append(f"{path.relative_to(ROOT)}: {found.group(0)}")
    assert not users, users
