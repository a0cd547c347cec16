"""The distribution is ``kode-sdk`` (imported as ``kode``): metadata, extras, install hints."""

from __future__ import annotations

import importlib.metadata
import re
import tomllib
from pathlib import Path

import kode

ROOT = Path(__file__).resolve().parent.parent
DISTRIBUTION = "kode-sdk"
# Extras for working on kode itself, not for using it.
DEVELOPMENT_EXTRAS = {"test", "docs", "bench"}

# `pip install` and its options, then the first thing it installs.
_HINT = re.compile(r"pip install\s+(?:-{1,2}[\w-]+(?:=\S+)?\s+)*['\"]?([^\s'\"`]+)")
# ``kode[web]`` and the like: an extra named on the wrong distribution (not ``kode["x"]``).
_BARE_EXTRA = re.compile(r"(?<![\w./-])kode\[(?![\"'])")


def _pyproject() -> dict[str, object]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def _texts() -> list[Path]:
    files = [ROOT / "README.md"]
    for folder, pattern in (("kode", "*.py"), ("docs", "*.md"), ("examples", "*.py")):
        files += sorted((ROOT / folder).rglob(pattern))
    return files


def test_every_install_hint_names_the_distribution() -> None:
    wrong: list[str] = []
    named = 0
    for path in _texts():
        for number, line in enumerate(path.read_text().splitlines(), 1):
            where = f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
            for match in _HINT.finditer(line):
                target = match.group(1)
                if target.startswith(DISTRIBUTION):
                    named += 1
                elif not target.startswith((".", "/", "examples/", "-")):
                    wrong.append(where)  # a package from PyPI that is not kode-sdk
            if _BARE_EXTRA.search(line):
                wrong.append(where)
    assert wrong == []
    assert named >= 10  # the hints in the error messages, docs and README were all seen


def test_the_readme_says_how_to_install_in_a_project() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "## Install in your project" in readme
    assert "pip install 'kode-sdk[all]'" in readme
    assert "pip install -e '.[all]'" in readme


def test_the_distribution_is_kode_sdk_and_its_version_is_kodes() -> None:
    project = _pyproject()["project"]
    assert isinstance(project, dict)
    assert project["name"] == DISTRIBUTION
    assert importlib.metadata.version(DISTRIBUTION) == project["version"] == kode.__version__


def test_the_all_extra_has_every_runtime_extra() -> None:
    project = _pyproject()["project"]
    assert isinstance(project, dict)
    extras: dict[str, list[str]] = project["optional-dependencies"]
    runtime = set(extras) - DEVELOPMENT_EXTRAS - {"all"}
    assert runtime >= {"anthropic", "openai", "mcp", "web", "shell"}
    assert sorted(extras["all"]) == sorted({dep for name in runtime for dep in extras[name]})
    assert extras["shell"] == ["bashlex>=0.18"]
    assert "bashlex>=0.18" in extras["test"]


def test_code_reading_its_own_version_asks_for_kode_sdk() -> None:
    calls = re.compile(r"""\bversion\(\s*["']kode[^"']*["']\s*\)""")
    found = {
        f"{path.relative_to(ROOT)}: {match.group(0)}"
        for path in (ROOT / "kode").rglob("*.py")
        for match in calls.finditer(path.read_text())
    }
    assert found
    assert {line for line in found if not line.endswith(f'version("{DISTRIBUTION}")')} == set()
