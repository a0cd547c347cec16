"""Durable runs that continue a stored session: scheduled firings and queued runs of one
session run one at a time and append to one conversation in order, and a run cut by SIGKILL,
during a model turn and again right after its append committed, is recovered with each record
written once; on SQLite and on PostgreSQL (where its server is installed), in real
``kode worker`` processes. Also the refusals, in process."""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("dbos")

from kode_workers import KodeWorker, in_dbos, kode

from kode import AgentTemplate
from kode.agent.agent import AgentError
from kode.durable import DurableAgent, add_schedule
from kode.durable.dbos import RUN_KEY, SESSION_QUEUE
from kode.models import ScriptedModel
from kode.sessions import MessageAdded, MetadataSet, SessionLog, StatusChanged, store_from

AGENTS = Path(__file__).with_name("session_agents.py")
CHAT = "kode.agent.session-chat"


class Worker(KodeWorker):
    """A ``kode worker`` subprocess running tests/durable/session_agents.py."""

    def __init__(self, folder: Path, db: str, store: str, *extra: str, turn: float = 0) -> None:
        env = {
            "KODE_SESSION_DIR": str(folder),
            "KODE_SESSION_STORE": store,
            "KODE_SESSION_TURN": str(turn),
        }
        super().__init__(folder, AGENTS, db, "--recover-interval", "0.5", *extra, env=env)


def turns(folder: Path) -> list[tuple[str, str, int, float]]:
    """(what, prompt, pid, time) of each line of turns.log."""
    path = folder / "turns.log"
    lines = path.read_text().splitlines() if path.exists() else []
    out = []
    for line in lines:
        head, pid, at = line.rsplit(" ", 2)
        what, _, prompt = head.partition(" ")
        out.append((what, prompt, int(pid), float(at)))
    return out


def wait_until(check: Callable[[], bool], what: str, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, f"waited {seconds:g} s: {what}"
        time.sleep(0.1)


def load(store: str, session_id: str) -> SessionLog:
    async def read() -> SessionLog:
        kept = store_from(store)
        try:
            return await kept.load(session_id)
        finally:
            await kept.aclose()

    return anyio.run(read)


def exchanges(log: SessionLog) -> list[tuple[str, str, str]]:
    """(run id, prompt, answer) of each run the session holds, checking each run's records."""
    out: list[tuple[str, str, str]] = []
    records = [entry.record for entry in log.entries]
    assert [entry.seq for entry in log.entries] == list(range(1, len(records) + 1))
    while records:
        marker, prompt, running, answer, idle, *records = records  # the model counts no usage
        assert isinstance(marker, MetadataSet) and marker.key == RUN_KEY
        assert isinstance(prompt, MessageAdded) and prompt.message.role == "user"
        assert isinstance(running, StatusChanged) and running.status == "running"
        assert isinstance(answer, MessageAdded) and answer.message.role == "assistant"
        assert isinstance(idle, StatusChanged) and idle.status == "idle"
        out.append((str(marker.value), prompt.message.text, answer.message.text))
    return out


@pytest.fixture(params=["sqlite", "postgres"])
def databases(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """(DBOS system database, session store): SQLite files, or one PostgreSQL database."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'dbos.sqlite'}", f"sqlite:///{tmp_path / 'sessions.db'}"
    else:
        url = request.getfixturevalue("postgres_url")
        yield url, url


def test_scheduled_firings_continue_one_session_one_at_a_time(
    tmp_path: Path, databases: tuple[str, str]
) -> None:
    from dbos import DBOSClient

    db, store = databases
    client = DBOSClient(system_database_url=db, application_name="kode")
    # Two workers; each turn lasts 2.5 s and the schedule fires every 2 s, so firings of one
    # session are due while another runs, on either worker.
    workers = [
        Worker(tmp_path, db, store, "--executor-id", name, turn=2.5)
        for name in ("worker-1", "worker-2")
    ]
    try:
        added = kode(
            "schedules",
            "add",
            "*/2 * * * * *",
            "Report.",
            "--agent",
            "session-chat",
            "--session",
            "standup",
            db=db,
        )
        assert added.returncode == 0, added.stderr
        assert "session-chat in session standup: Report." in added.stdout
        listed = kode("schedules", "list", "--json", db=db)
        (row,) = json.loads(listed.stdout)
        assert row["session"] == "standup"
        ended = lambda: len([t for t in turns(tmp_path) if t[0] == "end"])  # noqa: E731
        wait_until(lambda: ended() >= 3, "three firings ended")
        assert kode("schedules", "remove", row["id"], db=db).returncode == 0
        time.sleep(2)  # the workers see the removal within their poll; one more may be due

        def settled() -> bool:
            going = client.list_workflows(status=["ENQUEUED", "PENDING"], load_input=False)
            return not going

        wait_until(settled, "the firings still due ended")
        done = exchanges(load(store, "standup"))
        log = turns(tmp_path)
        assert len(done) == ended() >= 3
        # One conversation, in order: each firing saw every earlier prompt of the session.
        assert [answer for _, _, answer in done] == [
            f"answer {n}: Report." for n in range(1, len(done) + 1)
        ]
        assert all(prompt == "Report." for _, prompt, _ in done)
        assert len({run for run, _, _ in done}) == len(done)
        # Never two turns of the session at once, whichever worker ran them.
        spans = [at for what, _, _, at in log if what in ("begin", "end")]
        assert [what for what, *_ in log] == ["begin", "end"] * len(done)
        assert spans == sorted(spans)
        # ... although a firing was due before the one before it ended (its id has its time).
        due = [datetime.fromisoformat(run[: -len(".run")][-25:]).timestamp() for run, _, _ in done]
        ends = spans[1::2]
        assert any(due[k + 1] < ends[k] for k in range(len(done) - 1)), (due, ends)
        for worker in workers:
            worker.stop()
    finally:
        client.destroy()
        for worker in workers:
            worker.kill()


def test_a_run_killed_mid_turn_and_after_its_append_is_recovered_with_each_record_once(
    tmp_path: Path, databases: tuple[str, str]
) -> None:
    from dbos import DBOSClient

    db, store = databases
    worker = Worker(tmp_path, db, store)
    client = DBOSClient(system_database_url=db, application_name="kode")
    started = [worker]
    try:

        def enqueue(run_id: str, prompt: str) -> Any:
            options = {
                "queue_name": SESSION_QUEUE,
                "workflow_name": CHAT,
                "workflow_id": run_id,
                "queue_partition_key": "kept",
            }
            return client.enqueue(options, prompt, "kept")  # type: ignore[arg-type]

        assert enqueue("first", "Hello.").get_result() == "answer 1: Hello."
        held = enqueue("held", "Hold on.")
        wait_until(lambda: (tmp_path / "held").exists(), "the run reached its model")
        worker.kill()  # during the model turn
        (tmp_path / "die-after-append").touch()
        # Restarted with its executor id, the worker recovers the run, asks the model again,
        # appends, and dies right after the append committed: the step is not recorded.
        worker = Worker(tmp_path, db, store)
        started.append(worker)
        wait_until(lambda: worker.process.poll() is not None, "the worker killed itself")
        assert not (tmp_path / "die-after-append").exists()
        assert held.get_status().status == "PENDING"
        # The next one recovers it again: the step runs again, finds the records, writes none.
        worker = Worker(tmp_path, db, store)
        started.append(worker)
        assert held.get_result() == "answer 2: Hold on."
        steps = [s["function_name"] for s in client.list_workflow_steps("held")]
        assert steps == ["kode.session_load", "kode.model_turn", "kode.session_save"]
        assert enqueue("after", "And then?").get_result() == "answer 3: And then?"
        assert exchanges(load(store, "kept")) == [
            ("first", "Hello.", "answer 1: Hello."),
            ("held", "Hold on.", "answer 2: Hold on."),
            ("after", "And then?", "answer 3: And then?"),
        ]
        assert [what for what, prompt, *_ in turns(tmp_path) if prompt == "Hold on."] == [
            "begin",
            "holding",
            "begin",
            "end",
        ]
        assert ("killed", "after append") in [(w, p) for w, p, *_ in turns(tmp_path)]
        worker.stop()
    finally:
        client.destroy()
        for each in started:
            each.kill()


# --- refusals, in process ----------------------------------------------------------------


def test_runs_on_a_session_are_refused_with_what_to_do(tmp_path: Path) -> None:
    from dbos import DBOS

    url = f"sqlite:///{tmp_path / 'sessions.db'}"
    notes = DurableAgent(
        AgentTemplate(id="session-notes"), model=ScriptedModel(["Noted."] * 3), store=url
    )
    other = DurableAgent(AgentTemplate(id="session-other"), model=ScriptedModel(["-"]), store=url)
    bare = DurableAgent(AgentTemplate(id="session-bare"), model=ScriptedModel(["-"]))
    errors: dict[str, str] = {}

    async def refused(key: str, work: Awaitable[Any]) -> None:
        try:
            await work
        except (AgentError, ValueError) as exc:
            errors[key] = str(exc)

    async def work() -> None:
        assert await notes.run("Note this.", session_id="notes-1") == "Noted."
        await refused("template", other.run("Hi.", session_id="notes-1"))
        await refused("store", bare.run("Hi.", session_id="notes-1"))
        plain = await DBOS.register_queue_async("plain")
        await refused("queue", notes.enqueue(plain, "Hi.", session_id="notes-1"))
        # Started by hand outside the session's partition: the first step refuses it.
        handle = await DBOS.start_workflow_async(notes._workflow, "Hi.", "notes-1")
        await refused("partition", handle.get_result())
        await refused(
            "schedule-template",
            add_schedule("0 9 * * *", "Hi.", agent=other, session="notes-1"),
        )
        await refused(
            "schedule-store", add_schedule("0 9 * * *", "Hi.", agent=bare, session="notes-1")
        )
        await refused("schedule-id", add_schedule("0 9 * * *", "Hi.", agent=notes, session=" "))
        kept = store_from(url)
        try:
            await kept.create(template="session-notes", session_id="busy")
            await kept.append("busy", [StatusChanged(status="running")])
            await refused("running", notes.run("Hi.", session_id="busy"))
            log = await kept.load("notes-1")
        finally:
            await kept.aclose()
        errors["records"] = str(len(log.entries))

    in_dbos(tmp_path, work, name="kode-session-test", log_level="CRITICAL")
    assert (
        "session 'notes-1' runs template 'session-notes', not 'session-other'"
        in (errors["template"])
    )
    assert "keeps no session store: a run that continues a session needs one" in errors["store"]
    assert "queue 'plain' is not partitioned with a partition concurrency of 1" in errors["queue"]
    assert "was not queued in that session's partition" in errors["partition"]
    assert "runs template 'session-notes', not 'session-other'" in errors["schedule-template"]
    assert "keeps no session store, so it cannot continue session" in errors["schedule-store"]
    assert errors["schedule-id"].startswith("session: ")
    assert "session 'busy' is running (a run of it is going on" in errors["running"]
    assert errors["records"] == "6"  # the refused runs wrote nothing


def test_the_cron_tool_targets_the_session_of_the_run_calling_it(tmp_path: Path) -> None:
    from kode.durable import list_schedules, remove_schedule
    from kode.models import tool_use

    url = f"sqlite:///{tmp_path / 'sessions.db'}"
    add = {"action": "add", "schedule": "0 9 * * *", "prompt": "Daily.", "session": "this"}
    script = ScriptedModel(
        [
            [tool_use("cron", add, id="k1")],
            "Scheduled here.",
            [tool_use("cron", add, id="k2")],
            "Could not.",
        ]
    )
    template = AgentTemplate(id="session-planner", tools=["cron"], permission={"allow": ["cron"]})
    planner = DurableAgent(template, model=script, store=url)
    found: dict[str, Any] = {}

    async def work() -> None:
        await planner.run("Remind me here every day.", session_id="plans")
        (schedule,) = await list_schedules()
        found["schedule"] = schedule
        await remove_schedule(schedule.id)
        await planner.run("And in a new conversation?")  # its session is not in the store yet
        found["refusal"] = script.requests[-1].messages[-1].content[0]

    in_dbos(tmp_path, work, name="kode-session-test", log_level="CRITICAL")
    schedule = found["schedule"]
    assert (schedule.agent, schedule.session, schedule.prompt) == (
        "kode.agent.session-planner",
        "plans",
        "Daily.",
    )
    assert "in session plans: Daily." in schedule.describe()
    refusal = found["refusal"]
    assert refusal.is_error
    assert 'session "this" needs a run that continues a stored session' in refusal.text
