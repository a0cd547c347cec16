"""`kode.trust.processes`: an isolated Python worker, a scrubbed environment, kode's directory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import kode
from kode.trust.processes import (
    SAFE_PATH,
    helper_directory,
    helper_environment,
    open_helper,
    python_command,
    python_paths,
)

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX processes")

KODE_ROOT = str(Path(kode.__file__).resolve().parents[1])


def test_the_environment_is_scrubbed(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "PYTHONPATH", "LD_PRELOAD", "RIPGREP_CONFIG_PATH"):
        monkeypatch.setenv(name, "x")
    monkeypatch.setenv("LANG", "C.UTF-8")
    env = helper_environment(allow=["HOME"], values={"TMPDIR": "/tmp"})
    assert env["PATH"] == SAFE_PATH and env["LANG"] == "C.UTF-8" and env["TMPDIR"] == "/tmp"
    assert set(env) <= {"PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "HOME", "TMPDIR"}


def test_the_directory_is_kodes_own_and_private() -> None:
    where = helper_directory()
    assert where == helper_directory()
    assert os.stat(where).st_mode & 0o777 == 0o700 and os.path.basename(where).startswith("kode-")


def test_import_paths_leave_out_the_workspace_but_keep_kode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = tmp_path / "ws"
    (ws / "lib").mkdir(parents=True)
    monkeypatch.setattr(sys, "path", [sys.path[0], str(ws), str(ws / "lib"), *sys.path[1:]])
    paths = python_paths([ws])
    assert not [p for p in paths if p.startswith(str(ws))]
    assert paths[-1] == KODE_ROOT
    # kode's own install is kept even inside the workspace (a checkout of kode itself).
    assert python_paths([KODE_ROOT])[-1] == KODE_ROOT


def _run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, cwd=cwd, capture_output=True, text=True, timeout=60, env={**os.environ}
    )


def test_the_worker_imports_nothing_from_the_workspace_or_pythonpath(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    marker = tmp_path / "ran"
    for name in ("kode.py", "sitecustomize.py", "usercustomize.py", "json.py"):
        (ws / name).write_text(f"open({str(marker)!r}, 'a').write({name!r})\n")
    monkeypatch.setenv("PYTHONPATH", str(ws))
    monkeypatch.setattr(sys, "path", [sys.path[0], str(ws), *sys.path[1:]])
    code = "import json, kode\nprint(kode.__file__)\n"
    done = _run(python_command(code, roots=[ws]), cwd=ws)
    assert not marker.exists(), marker.read_text()
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == kode.__file__


def test_a_kode_module_elsewhere_on_the_path_cannot_stand_in_for_kode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / "kode.py").write_text("raise SystemExit('shadow ran')\n")
    # A directory outside the workspace, before kode's own (a dependency's, say).
    monkeypatch.setattr(sys, "path", [sys.path[0], str(shadow), *sys.path[1:]])
    code = "import kode\nprint(kode.__file__)\n"
    done = _run(python_command(code, roots=[tmp_path / "ws"]), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == kode.__file__


def test_an_in_project_venv_is_kodes_install_but_its_pth_files_are_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """kode run from the project's own .venv: its site-packages stays, its .pth is not read."""
    ws = tmp_path / "project"
    site = ws / ".venv" / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    (site / "helper_dep.py").write_text("VALUE = 42\n")
    marker = tmp_path / "ran"
    (site / "evil.pth").write_text(f"import os; open({str(marker)!r}, 'w').close()\n")
    monkeypatch.setattr(sys, "prefix", str(ws / ".venv"))
    monkeypatch.setattr(sys, "path", [sys.path[0], str(site), *sys.path[1:]])
    assert str(site) in python_paths([ws])
    code = "import helper_dep\nprint(helper_dep.VALUE)\n"
    done = _run(python_command(code, roots=[ws]), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "42" and not marker.exists()


@pytest.mark.anyio
async def test_open_helper_starts_in_kodes_directory_with_the_scrubbed_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    code = "import os, json\nprint(json.dumps([os.getcwd(), dict(os.environ)]))\n"
    process = await open_helper(python_command(code, kode=False), stdin=None, stderr=None)
    assert process.stdout is not None
    out = b"".join([chunk async for chunk in process.stdout])
    assert await process.wait() == 0
    cwd, env = json.loads(out)
    assert cwd == helper_directory()
    assert "OPENAI_API_KEY" not in env and env["PATH"] == SAFE_PATH
