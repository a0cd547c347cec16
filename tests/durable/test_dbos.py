"""kode.durable on DBOS with a SQLite system database: a run is a workflow with a step per
model turn and tool call, and a worker killed with SIGKILL mid-call is recovered by the next."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("dbos")

from kode import AgentTemplate
from kode.agent import AgentError
from kode.durable import INTERRUPTED_TEXT, DurableAgent
from kode.models import ScriptedModel

WORKER = Path(__file__).with_name("dbos_worker.py")


def worker(folder: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(WORKER), str(folder), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def lines(folder: Path, name: str) -> list[tuple[str, int]]:
    path = folder / name
    if not path.exists():
        return []
    return [
        (word, int(pid)) for word, pid in (line.split() for line in path.read_text().splitlines())
    ]


def serving(folder: Path, process: subprocess.Popen[str]) -> None:
    """Wait until `process` (a ``serve`` worker) has launched DBOS."""
    deadline = time.monotonic() + 60
    while process.pid not in [pid for _, pid in lines(folder, "ready.log")]:
        assert process.poll() is None, process.communicate()[1][-3000:]
        assert time.monotonic() < deadline, "the worker never launched"
        time.sleep(0.05)


def finish(process: subprocess.Popen[str]) -> str:
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err[-3000:]
    return out.strip()


def steps(folder: Path) -> list[str]:
    with sqlite3.connect(folder / "dbos.sqlite") as db:
        rows = db.execute(
            "SELECT function_name FROM operation_outputs WHERE workflow_uuid = 'run-1' "
            "ORDER BY function_id"
        )
        return [row[0] for row in rows]


def test_a_run_completes_as_a_workflow_with_a_step_per_turn_and_call(tmp_path: Path) -> None:
    answer = finish(worker(tmp_path, "start"))

    assert answer == "final: the note says 3 | added 3 | flag set"
    # A read-only or idempotent tool runs again after a crash anyway: it takes no begin step.
    assert steps(tmp_path) == [
        "kode.model_turn",
        "kode.tool_call.note_read",
        "kode.model_turn",
        "kode.tool_begin.ledger_add",
        "kode.tool_call.ledger_add",
        "kode.model_turn",
        "kode.tool_call.flag_set",
        "kode.model_turn",
    ]
    assert [turn for turn, _ in lines(tmp_path, "model.log")] == [
        "turn1",
        "turn2",
        "turn3",
        "turn4",
    ]


def kill_during(folder: Path, tool: str, log: str = "tools.log", *extra: str) -> int:
    """Start a run whose `tool` (or model turn) waits once started; kill the worker there."""
    first = worker(folder, "start", tool, *extra)
    deadline = time.monotonic() + 60
    while tool not in [name for name, _ in lines(folder, log)]:
        assert first.poll() is None, first.communicate()[1][-3000:]
        assert time.monotonic() < deadline, f"the worker never started {tool}"
        time.sleep(0.05)
    if extra:
        time.sleep(0.5)  # the other calls of the turn end meanwhile
    os.kill(first.pid, signal.SIGKILL)
    first.communicate(timeout=30)
    assert first.returncode == -signal.SIGKILL
    return first.pid


def test_a_mutating_call_in_flight_is_answered_as_interrupted_and_never_run_twice(
    tmp_path: Path,
) -> None:
    killed = kill_during(tmp_path, "ledger_add")

    answer = finish(worker(tmp_path, "recover"))

    interrupted = INTERRUPTED_TEXT.format(name="ledger_add")
    assert answer == f"final: the note says 3 | {interrupted} | flag set"
    tools = lines(tmp_path, "tools.log")
    # Each tool started once: the read before the kill is replayed, the mutating one not re-run.
    assert [name for name, _ in tools] == ["note_read", "ledger_add", "flag_set"]
    assert [pid for _, pid in tools][:2] == [killed, killed]
    assert lines(tmp_path, "ledger.log") == []  # it never got past its start
    model = lines(tmp_path, "model.log")
    # The completed turns are not asked again; the recovering worker asks for the rest.
    assert [turn for turn, _ in model] == ["turn1", "turn2", "turn3", "turn4"]
    assert [pid == killed for _, pid in model] == [True, True, False, False]


@pytest.mark.parametrize("tool", ["note_read", "flag_set"])
def test_a_read_only_or_idempotent_call_in_flight_runs_again(tmp_path: Path, tool: str) -> None:
    killed = kill_during(tmp_path, tool)

    answer = finish(worker(tmp_path, "recover"))

    assert answer == "final: the note says 3 | added 3 | flag set"
    tools = lines(tmp_path, "tools.log")
    started = [name for name, _ in tools]
    assert started.count(tool) == 2  # once in the killed worker, once after recovery
    assert [pid == killed for name, pid in tools if name == tool] == [True, False]
    assert started.count("ledger_add") == 1
    assert [amount for amount, _ in lines(tmp_path, "ledger.log")] == ["+3"]
    turns = [turn for turn, _ in lines(tmp_path, "model.log")]
    assert turns == ["turn1", "turn2", "turn3", "turn4"]  # no completed turn asked twice


def test_a_model_turn_in_flight_is_asked_again_and_no_call_repeats(tmp_path: Path) -> None:
    killed = kill_during(tmp_path, "turn2", log="model.log")

    answer = finish(worker(tmp_path, "recover"))

    assert answer == "final: the note says 3 | added 3 | flag set"
    model = lines(tmp_path, "model.log")
    assert [(turn, pid == killed) for turn, pid in model] == [
        ("turn1", True),
        ("turn2", True),
        ("turn2", False),  # its reply was never checkpointed
        ("turn3", False),
        ("turn4", False),
    ]
    assert [name for name, _ in lines(tmp_path, "tools.log")] == [
        "note_read",
        "ledger_add",
        "flag_set",
    ]


def test_calls_of_one_turn_run_concurrently_and_keep_their_steps(tmp_path: Path) -> None:
    killed = kill_during(tmp_path, "note_peek", "tools.log", "pair")

    answer = finish(worker(tmp_path, "recover", "", "pair"))

    assert answer == "final: the note says 3 | peeked | added 3 | flag set"
    tools = lines(tmp_path, "tools.log")
    # note_read ended before the kill: replayed. note_peek (read-only) was in flight: run again.
    assert [pid == killed for name, pid in tools if name == "note_read"] == [True]
    assert [pid == killed for name, pid in tools if name == "note_peek"] == [True, False]
    assert [name for name, _ in tools][-2:] == ["ledger_add", "flag_set"]
    assert steps(tmp_path)[:3] == [
        "kode.model_turn",
        "kode.tool_call.note_read",
        "kode.tool_call.note_peek",
    ]


def test_a_denial_sent_with_decide_from_another_launched_process(tmp_path: Path) -> None:
    from dbos import DBOSClient

    serve = worker(tmp_path, "serve")
    serving(tmp_path, serve)
    client = DBOSClient(system_database_url=f"sqlite:///{tmp_path / 'dbos.sqlite'}")
    try:
        run = client.enqueue(
            {"queue_name": "kode-runs", "workflow_name": "kode.agent.vault", "workflow_id": "d"},
            "Open the vault.",
        )
        finish(worker(tmp_path, "decide", "d", "v1"))
        answer = run.get_result()
    finally:
        (tmp_path / "stop").touch()
        client.destroy()
    finish(serve)
    assert answer.startswith("final: ") and "not today" in answer
    assert "vault_open" not in [name for name, _ in lines(tmp_path, "tools.log")]


def test_options_that_would_split_the_state_are_refused() -> None:
    with pytest.raises(AgentError, match="cannot name session_id, store"):
        DurableAgent(
            AgentTemplate(id="refused"),
            model=ScriptedModel(["hi"]),
            options={"store": "memory://", "session_id": "s"},
        )


def test_queued_runs_and_an_approval_decided_from_another_process_after_a_restart(
    tmp_path: Path,
) -> None:
    from dbos import DBOSClient

    from kode.durable import approval_topic

    first = worker(tmp_path, "serve")
    serving(tmp_path, first)
    client = DBOSClient(system_database_url=f"sqlite:///{tmp_path / 'dbos.sqlite'}")
    try:
        runs = [
            client.enqueue(
                {
                    "queue_name": "kode-runs",
                    "workflow_name": "kode.agent.ledger",
                    "workflow_id": f"q{n}",
                },
                "Add the note's amount to the ledger.",
            )
            for n in (1, 2)
        ]
        assert [run.get_result() for run in runs] == [
            "final: the note says 3 | added 3 | flag set"
        ] * 2
        assert [run.get_status().status for run in runs] == ["SUCCESS", "SUCCESS"]
        # Concurrency 1: the second run's calls start after the first run's ended.
        started = [name for name, _ in lines(tmp_path, "tools.log")]
        assert started == ["note_read", "ledger_add", "flag_set"] * 2

        waiting = client.enqueue(
            {"queue_name": "kode-runs", "workflow_name": "kode.agent.vault", "workflow_id": "v"},
            "Open the vault.",
        )
        deadline = time.monotonic() + 60
        while ("approval1", first.pid) not in lines(tmp_path, "model.log"):
            assert time.monotonic() < deadline, "the queued run never reached its model"
            time.sleep(0.05)
        time.sleep(0.5)  # the call now waits for its decision
        assert waiting.get_status().status == "PENDING"
        os.kill(first.pid, signal.SIGKILL)
        first.communicate(timeout=30)

        second = worker(tmp_path, "serve")
        serving(tmp_path, second)
        # The decision comes from this process, which runs no worker.
        client.send("v", {"decision": "allow"}, topic=approval_topic("v1"))
        assert waiting.get_result() == "final: vault opened"
        assert [name for name, _ in lines(tmp_path, "tools.log")].count("vault_open") == 1
        assert [t for t, _ in lines(tmp_path, "model.log")].count("approval1") == 1
    finally:
        (tmp_path / "stop").touch()
        client.destroy()
    finish(second)
