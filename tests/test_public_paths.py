"""The public import paths that must keep working when a name moves between modules or layers.

Each path is one users write (in the docs, the examples, their own code, an entry point); a
move keeps it importable, and giving the very object of the name's home, not a copy.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
import tomllib
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
    "kode.registries:registry": "kode.registries.registry:registry",
    "kode.tools:Tool": "kode.tools.tool:Tool",
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
