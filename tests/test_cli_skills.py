"""``kode skills list`` and ``kode skills show``, run as real subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


def kode(*args: str, cwd: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    env["KODE_HOME"] = str(home)
    return subprocess.run(
        [sys.executable, "-m", "kode.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env=env,
    )


def skill(parent: Path, name: str, description: str, body: str = "Do it.") -> Path:
    folder = parent / name
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: {description}\nlicense: MIT\n---\n{body}\n"
    )
    return folder


@pytest.fixture
def world(tmp_path: Path) -> tuple[Path, Path]:
    home, workspace = tmp_path / "home", tmp_path / "ws"
    skill(home / "skills", "release-notes", "Write release notes from a git log.")
    skill(home / "skills", "shared", "The user's shared skill.")
    skill(workspace / ".kode" / "skills", "shared", "The workspace's shared skill.")
    helper = skill(workspace / ".kode" / "skills", "lint-fix", "Fix lint errors.", "Run it.")
    (helper / "scripts").mkdir()
    (helper / "scripts" / "fix.sh").write_text("ruff check --fix .\n")
    broken = workspace / ".kode" / "skills" / "broken"
    broken.mkdir()
    (broken / "SKILL.md").write_text("---\nname: Broken\ndescription: x\n---\n")
    return home, workspace


def test_list_names_every_skill_with_its_source(world: tuple[Path, Path]) -> None:
    home, workspace = world
    out = kode("skills", "list", cwd=workspace, home=home)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "NAME           SOURCE     DESCRIPTION",
        "lint-fix       workspace  Fix lint errors.",
        "release-notes  user       Write release notes from a git log.",
        "shared         user       The user's shared skill.",
    ]
    errors = out.stderr.splitlines()
    assert any("skill 'shared' from workspace" in e and "shadowed" in e for e in errors)
    broken = workspace / ".kode" / "skills" / "broken" / "SKILL.md"
    assert f"kode skills: skipped: {broken.resolve()}: name 'Broken' is invalid" in out.stderr


def test_list_json(world: tuple[Path, Path]) -> None:
    home, workspace = world
    out = kode("skills", "list", "--json", cwd=workspace, home=home)
    data = json.loads(out.stdout)
    assert [(s["name"], s["source"]) for s in data["skills"]] == [
        ("lint-fix", "workspace"),
        ("release-notes", "user"),
        ("shared", "user"),
    ]
    assert len(data["shadowed"]) == 1 and len(data["problems"]) == 1


def test_show_prints_front_matter_files_and_body(world: tuple[Path, Path]) -> None:
    home, workspace = world
    out = kode("skills", "show", "lint-fix", cwd=workspace, home=home)
    assert out.returncode == 0, out.stderr
    assert out.stdout == (
        "lint-fix (workspace: .kode/skills/lint-fix)\n"
        "front matter:\n"
        "  name: lint-fix\n"
        "  description: Fix lint errors.\n"
        "  license: MIT\n"
        "files: scripts/fix.sh\n"
        "\n"
        "Run it.\n"
    )
    shown = json.loads(
        kode("skills", "show", "lint-fix", "--json", cwd=workspace, home=home).stdout
    )
    assert shown["files"] == ["scripts/fix.sh"] and shown["front_matter"]["license"] == "MIT"


def test_unknown_names_and_bad_folders_are_errors(world: tuple[Path, Path], tmp_path: Path) -> None:
    home, workspace = world
    out = kode("skills", "show", "nope", cwd=workspace, home=home)
    assert out.returncode == 2
    assert out.stderr.strip() == (
        "kode skills: no skill named 'nope'; found: lint-fix, release-notes, shared"
    )
    out = kode("skills", "list", "--skills", str(tmp_path / "missing"), cwd=workspace, home=home)
    assert out.returncode == 2
    assert "--skills" in out.stderr and "no folder at" in out.stderr


def test_a_folder_given_on_the_command_line_wins(world: tuple[Path, Path], tmp_path: Path) -> None:
    home, workspace = world
    skill(tmp_path / "mine", "shared", "Mine.")
    out = kode("skills", "list", "--skills", str(tmp_path / "mine"), cwd=workspace, home=home)
    assert "shared         template   Mine." in out.stdout
