"""The distribution is ``kode-sdk`` (imported as ``kode``): metadata, extras, install hints."""

from __future__ import annotations

import importlib.metadata
import re
import shlex
import site
import subprocess
import sys
import tomllib
from pathlib import Path

import kode

ROOT = Path(__file__).resolve().parent.parent
DISTRIBUTION = "kode-sdk"
# Extras for working on kode itself, not for using it.
DEVELOPMENT_EXTRAS = {"test", "docs", "bench", "dist"}
# Programs from PyPI that examples in the docs talk to, installed on their own (not extras).
PEERS = ("mcp-server-time",)

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
                if target.startswith((DISTRIBUTION, ".[")):
                    named += 1
                elif target in PEERS:
                    pass
                elif not target.startswith((".", "/", "examples/", "-")):
                    wrong.append(where)  # a package from PyPI that is not kode-sdk
            if _BARE_EXTRA.search(line):
                wrong.append(where)
    assert wrong == []
    assert named >= 10  # the hints in the docs, the README and kode.extras were all seen


# ``pip install 'kode-sdk[<extra>]'`` alone: what finds nothing until the distribution is published.
_FROM_PYPI = re.compile(r"pip install\s+['\"]?kode-sdk\[[^\]]*\]['\"]?(?!\s*@)")
# The extras a hint names: install_hint(<extras>), '.[<extras>]', kode-sdk[<extras>].
_HINT_CALL = re.compile(r"install_hint\(([^)]*)\)")
_EXTRAS = re.compile(r"(?:kode-sdk|['\"]\.)\[([\w,-]+)\]")


def test_no_hint_says_an_install_command_that_finds_nothing() -> None:
    """Every "needs an extra" message and page says what works today, through install_hint."""
    wrong = []
    for path in _texts():
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if _FROM_PYPI.search(line) and "Once it is on PyPI" not in line:
                wrong.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert wrong == []


def test_every_extra_a_hint_names_exists() -> None:
    project = _pyproject()["project"]
    assert isinstance(project, dict)
    extras = set(project["optional-dependencies"])
    named: dict[str, set[str]] = {}
    for path in [*_texts(), *sorted((ROOT / "tests").rglob("*.py"))]:
        text = path.read_text()
        for call in _HINT_CALL.findall(text):
            for name in re.findall(r"[\"']([\w-]+)[\"']", call):
                named.setdefault(name, set()).add(str(path.relative_to(ROOT)))
        for group in _EXTRAS.findall(text):
            for name in group.split(","):
                named.setdefault(name, set()).add(str(path.relative_to(ROOT)))
    assert {"anthropic", "openai", "google", "web", "mcp", "dbos", "otel", "canvas"} <= set(named)
    unknown = {name: sorted(where) for name, where in named.items() if name not in extras}
    assert unknown == {}


def test_the_install_hint_is_two_commands_a_shell_can_run() -> None:
    from kode.extras import install_hint

    hint = install_hint("web", "mcp")
    checkout, _, rest = hint.partition(" in a checkout of kode, or ")
    assert shlex.split(checkout) == ["pip", "install", "-e", ".[web,mcp]"]
    url_form = rest.split(" (", 1)[0]
    assert shlex.split(url_form) == [
        "pip",
        "install",
        "kode-sdk[web,mcp] @ git+<repository URL>",
    ]


def test_the_readme_says_how_to_install_in_a_project() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "## Install in your project" in readme
    assert "`kode-sdk` is not published on PyPI yet" in readme
    assert "pip install -e '.[all]'" in readme


def _install_commands() -> list[str]:
    """The ``pip install`` lines of the README's "Install in your project" code block."""
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Install in your project", 1)[1].split("\n## ", 1)[0]
    block = section.split("```bash\n", 1)[1].split("```", 1)[0]
    return [line.split("  #")[0].strip() for line in block.splitlines() if line.strip()]


def test_the_readme_install_commands_work_from_a_checkout_and_a_git_url(tmp_path: Path) -> None:
    """Each command, run as written, with the checkout and the git URL made local.

    Offline: pip builds kode from a fresh clone without an index; its dependencies are the
    test environment's (a venv whose site-packages points at them). The installed copy, not
    the source tree, is what the venv then imports.
    """
    commands = _install_commands()
    assert [c.split("'")[1].split("[")[0].split(" @ ")[0] for c in commands] == [
        "/path/to/kode",
        "/path/to/kode",
        "kode-sdk",
    ]
    clone = tmp_path / "kode"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True, timeout=120)
    for n, command in enumerate(commands[::2]):  # the second is the first with fewer extras
        venv = tmp_path / f"venv{n}"
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
        site_packages = next((venv / "lib").glob("python*/site-packages"))
        host = [p for p in site.getsitepackages() if Path(p).is_dir()]
        (site_packages / "_host.pth").write_text(
            "".join(f"import site; site.addsitedir({p!r})\n" for p in host)
        )
        made_local = command.replace("/path/to/kode", str(clone)).replace(
            # pip's URL parser wants a host in a file URL
            "https://github.com/OWNER/kode.git",
            f"file://localhost{clone}",
        )
        argv = shlex.split(made_local)
        assert argv[:2] == ["pip", "install"], command
        offline = ["--no-index", "--no-deps", "--no-build-isolation", "--no-cache-dir", "-q"]
        pip = subprocess.run(
            [venv / "bin" / "python", "-m", "pip", "install", *offline, *argv[2:]],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert pip.returncode == 0, f"{command}\n{pip.stderr}"
        shown = subprocess.run(
            [
                venv / "bin" / "python",
                "-c",
                "import importlib.metadata, kode; "
                "print(kode.__file__, importlib.metadata.version('kode-sdk'))",
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
            cwd=tmp_path,
        )
        where, version = shown.stdout.split()
        assert Path(where).is_relative_to(site_packages), command
        assert version == kode.__version__


def _name(requirement: str) -> str:
    return re.split(r"[^A-Za-z0-9._-]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def test_docs_say_how_to_install_the_programs_their_examples_start() -> None:
    """A ``python -m X`` in a page's example: X comes with kode, or the page says to install it."""
    project = _pyproject()["project"]
    assert isinstance(project, dict)
    extras: dict[str, list[str]] = project["optional-dependencies"]
    runtime = {_name(r) for r in project["dependencies"]} | {
        _name(r) for name, deps in extras.items() if name not in DEVELOPMENT_EXTRAS for r in deps
    }
    owners = importlib.metadata.packages_distributions()
    started = re.compile(r"""sys\.executable,\s*["']-m["'],\s*["']([\w.]+)["']""")
    missing: list[str] = []
    seen = 0
    for page in sorted((ROOT / "docs").rglob("*.md")):
        text = page.read_text()
        for module in set(started.findall(text)):
            top = module.split(".")[0]
            if top == "kode":
                continue
            seen += 1
            distributions = [_name(d) for d in owners.get(top, [])]
            assert distributions, f"{page.name}: nothing installed provides {module!r}"
            if any(d in runtime for d in distributions):
                continue
            if not any(f"pip install {d}" in text for d in distributions):
                missing.append(f"{page.name}: {module} (pip install {distributions[0]})")
    assert seen  # the MCP page's time server, at least
    assert missing == []


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
