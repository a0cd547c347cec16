"""bench/peers.py in quick mode: kode's rows run, missing peers are skipped cleanly.

No timing is asserted: the machine is shared. What is checked is that the script runs, its
correctness checks hold, and its rows and exit status follow the bench scripts' convention.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import anyio
import anyio.lowlevel
import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "bench" / "peers.py"


@pytest.fixture(scope="module")
def peers() -> Iterator[ModuleType]:
    spec = importlib.util.spec_from_file_location("bench_peers", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # dataclasses look their module up in sys.modules while the class is being made.
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        del sys.modules[spec.name]


@pytest.fixture
def no_peers(peers: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every peer's packages look uninstalled (a None entry in sys.modules hides a module)."""
    for peer in peers.PEERS:
        for module in peer.modules:
            monkeypatch.setitem(sys.modules, module, None)


def test_kode_rows_run_in_quick_mode(peers: ModuleType, capsys: pytest.CaptureFixture[str]):
    assert peers.main(["--quick", "--no-peers"]) == 0
    lines = capsys.readouterr().out.splitlines()
    figures = [line.split()[0] for line in lines[3:]]
    assert figures == ["run_1_tool", "turns_50", "parallel_100"], lines
    assert all("kode, ScriptedModel" in line for line in lines[3:5]), lines


@pytest.mark.usefixtures("no_peers")
def test_missing_peers_get_not_installed_rows(
    peers: ModuleType, capsys: pytest.CaptureFixture[str]
):
    assert not any(peers.installed(p) for p in peers.PEERS)
    # --check: with no peer timed there is no target to miss on these rows.
    assert peers.main(["--quick", "--check", "--only", "run_1_tool"]) == 0
    lines = capsys.readouterr().out.splitlines()[3:]
    assert len(lines) == 1 + len(peers.PEERS), lines
    for line, peer in zip(lines[1:], peers.PEERS, strict=True):
        assert line.split()[0] == "run_1_tool", line
        assert line.endswith(f"{peer.name}: not installed"), line


@pytest.mark.usefixtures("no_peers")
def test_json_names_the_missing_peers(peers: ModuleType, capsys: pytest.CaptureFixture[str]):
    assert peers.main(["--quick", "--json", "--only", "turns_50"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["environment"]["peers"] == {p.name: False for p in peers.PEERS}
    kode, *missing = data["rows"]
    assert kode["figure"] == "turns_50" and kode["kode_ns"] > 0 and kode["passed"] is None
    assert [(r["other_ns"], r["passed"]) for r in missing] == [(None, None)] * len(peers.PEERS)


def test_a_run_that_skips_the_tool_fails_the_batch(peers: ModuleType):
    real = peers.kode_subject(1)
    idle = peers.Subject(name="idle", label="idle", run=anyio.lowlevel.checkpoint, check=real.check)
    batch = peers._subject_batch(idle, 1)
    with pytest.raises(AssertionError, match="idle"):
        anyio.run(batch, 1)


def test_a_wrong_history_fails_the_check(peers: ModuleType):
    one, two = peers.kode_subject(1), peers.kode_subject(2)
    outcome = anyio.run(two.run)
    two.check(outcome)
    with pytest.raises(AssertionError):
        one.check(outcome)
