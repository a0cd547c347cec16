"""Scheduled prompts: the cron tool adds a DBOS schedule that real ``kode worker`` processes
fire (on SQLite, and on PostgreSQL where its server is installed), through a worker's SIGKILL
and restart; ``kode schedules`` lists and removes it from another process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

pytest.importorskip("dbos")

from kode_workers import KodeWorker, kode

from kode.durable import DurableAgent, check_cron

AGENTS = Path(__file__).with_name("cron_agents.py")
EVERY_2S = "*/2 * * * * *"


class Worker(KodeWorker):
    """A ``kode worker`` subprocess running tests/durable/cron_agents.py."""

    def __init__(self, folder: Path, db: str, *extra: str) -> None:
        super().__init__(folder, AGENTS, db, *extra, env={"KODE_CRON_DIR": str(folder)})


def fired(folder: Path) -> list[tuple[str, int]]:
    path = folder / "fired.log"
    if not path.exists():
        return []
    return [
        (line.rsplit(" ", 1)[0], int(line.rsplit(" ", 1)[1]))
        for line in path.read_text().splitlines()
    ]


def wait_for_firing(folder: Path, prompt: str, pid: int, after: int = 0) -> None:
    """Wait until worker `pid` ran `prompt` as a scheduled prompt (beyond the first `after`)."""
    deadline = time.monotonic() + 60
    while len([p for p in fired(folder)[after:] if p == (prompt, pid)]) < 1:
        assert time.monotonic() < deadline, f"{prompt!r} never fired in worker {pid}"
        time.sleep(0.1)


@pytest.fixture(params=["sqlite", "postgres"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'dbos.sqlite'}"
    else:
        yield request.getfixturevalue("postgres_url")


def test_a_schedule_added_by_the_cron_tool_fires_survives_a_restart_and_is_removed(
    tmp_path: Path, db: str
) -> None:
    from dbos import DBOSClient

    workers = [Worker(tmp_path, db)]
    first = workers[0]
    client = DBOSClient(system_database_url=db, application_name="kode")
    try:
        # An agent run on the worker's queue asks its cron tool to add the schedule.
        run = client.enqueue(
            {"queue_name": "kode-runs", "workflow_name": "kode.agent.cron-test"},
            f"Schedule '{EVERY_2S}': water the plants",
        )
        answer = run.get_result()
        assert answer.startswith("Added kode-cron-"), answer
        schedule_id = answer.split()[1]
        assert f"'{EVERY_2S}'  kode.agent.cron-test: water the plants" in answer
        steps = [s["function_name"] for s in client.list_workflow_steps(run.workflow_id)]
        assert steps == [
            "kode.model_turn",
            "kode.tool_begin.cron",
            "kode.tool_call.cron",
            "kode.model_turn",
        ]

        wait_for_firing(tmp_path, "water the plants", first.pid)
        # A firing is the fired workflow and, as its child, a run of the agent's own workflow
        # with a step per model turn.
        runs = client.list_workflows(name="kode.agent.cron-test", status="SUCCESS")
        scheduled = [w for w in runs if w.workflow_id.startswith(f"sched-{schedule_id}-")]
        assert scheduled
        assert scheduled[0].workflow_id.endswith(".run")
        child_steps = client.list_workflow_steps(scheduled[0].workflow_id)
        assert [s["function_name"] for s in child_steps] == ["kode.model_turn"]

        listed = kode("schedules", "list", "--json", db=db)
        assert listed.returncode == 0, listed.stderr
        (row,) = json.loads(listed.stdout)
        assert row["id"] == schedule_id
        assert row["schedule"] == EVERY_2S
        assert row["prompt"] == "water the plants"
        assert row["agent"] == "kode.agent.cron-test"
        assert row["queue"] == "kode-runs"  # the queue of the run that added it

        first.kill()
        before = len(fired(tmp_path))
        second = Worker(tmp_path, db)  # the same executor id: its lease ended with the kill
        workers.append(second)
        wait_for_firing(tmp_path, "water the plants", second.pid, after=before)

        removed = kode("schedules", "remove", schedule_id, db=db)
        assert removed.returncode == 0, removed.stderr
        assert removed.stdout.startswith(f"Removed {schedule_id}")
        listed = kode("schedules", "list", db=db)
        assert listed.stdout.strip() == "No schedules."
        time.sleep(2)  # the scheduler sees the removal within its poll (0.5 s); one may be due
        settled = len(fired(tmp_path))
        time.sleep(5)  # two and a half periods of the schedule
        assert len(fired(tmp_path)) == settled
        assert "stopped" in second.stop()
    finally:
        client.destroy()
        for worker in workers:
            if worker.process.poll() is None:
                worker.process.kill()
                worker.process.wait(timeout=30)


def test_the_cli_adds_lists_and_refuses_with_what_to_write(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'dbos.sqlite'}"
    empty = kode("schedules", "list", db=db)
    assert empty.returncode == 2
    assert "does not exist: start a worker on it first" in empty.stderr
    assert not (tmp_path / "dbos.sqlite").exists()
    Worker(tmp_path, db).stop()  # a worker creates the system database's tables
    added = kode(
        "schedules",
        "add",
        "30 8 * * mon-fri",
        "Summarise the news.",
        "--agent",
        "kode.agent.news",
        "--timezone",
        "Europe/Paris",
        db=db,
    )
    assert added.returncode == 0, added.stderr
    assert "'30 8 * * mon-fri' Europe/Paris  kode.agent.news: Summarise the news." in added.stdout
    upcoming = datetime.fromisoformat(added.stdout.split("Next run: ")[1].strip())
    assert (upcoming.hour, upcoming.minute, upcoming.weekday() < 5) == (8, 30, True)

    listed = kode("schedules", "list", db=db)
    assert listed.returncode == 0, listed.stderr
    assert "Summarise the news." in listed.stdout

    bad = kode("schedules", "add", "*/5 * * *", "hi", "--agent", "a", db=db)
    assert bad.returncode == 2
    assert "cron expression '*/5 * * *' has 4 fields: write 5 fields" in bad.stderr
    missing = kode("schedules", "remove", "kode-cron-nope", db=db)
    assert missing.returncode == 2
    assert "no scheduled prompt has id 'kode-cron-nope' (there are: kode-cron-" in missing.stderr
    url = kode("schedules", "list", db="mysql://x")
    assert url.returncode == 2 and "give sqlite:///PATH" in url.stderr

    nothing = subprocess.run(
        [sys.executable, "-m", "kode", "worker", "--db", db],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert nothing.returncode == 2
    assert "no durable agents to run: name a module that makes them" in nothing.stderr


def test_the_system_database_is_in_kode_home_unless_named(tmp_path: Path) -> None:
    """Not in the current directory, where a command an agent runs could add a schedule."""
    project, home = tmp_path / "project", tmp_path / "kode-home"
    project.mkdir()

    def schedules(**env: str) -> subprocess.CompletedProcess[str]:
        clean = {k: v for k, v in os.environ.items() if k != "DBOS_SYSTEM_DATABASE_URL"}
        return subprocess.run(
            [sys.executable, "-m", "kode", "schedules", "list"],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=project,
            env={**clean, "KODE_HOME": str(home), **env},
        )

    default = schedules()
    assert default.returncode == 2
    # Refused, not created: a list on a missing database says where a worker would make it.
    assert f"the system database sqlite:///{home / 'dbos.sqlite'} does not exist" in default.stderr
    assert list(project.iterdir()) == []
    assert (home.stat().st_mode & 0o777) == 0o700  # made private: runs' arguments live there
    named = schedules(DBOS_SYSTEM_DATABASE_URL=f"sqlite:///{tmp_path / 'named.sqlite'}")
    assert f"the system database sqlite:///{tmp_path / 'named.sqlite'} does not exist" in (
        named.stderr
    )


def wait_for_workflow(client: object, name: str, status: str) -> object:
    deadline = time.monotonic() + 180
    while True:
        found = client.list_workflows(name=name, status=status)  # type: ignore[attr-defined]
        if found:
            return found[0]
        assert time.monotonic() < deadline, f"no {status} run of {name} in 180 s"
        time.sleep(0.5)  # each read of a SQLite system database takes its write lock


def test_a_worker_runs_a_template_file_on_schedule_and_names_an_agent_it_lacks(
    tmp_path: Path,
) -> None:
    from dbos import DBOSClient

    db = f"sqlite:///{tmp_path / 'dbos.sqlite'}"
    template = tmp_path / "greeter.toml"
    template.write_text('id = "greeter"\nsystem_prompt = "Greet."\n')
    turns = tmp_path / "turns.json"
    turns.write_text(json.dumps([f"Hello {n}." for n in range(1, 30)]))
    worker = Worker(tmp_path, db, "--template", str(template), "--model", f"scripted:{turns}")
    client = DBOSClient(system_database_url=db, application_name="kode")
    try:
        assert "kode worker worker-1: running kode.agent.cron-test, kode.agent.greeter" in (
            worker.stderr()
        )
        for agent, prompt in (("greeter", "Say hello."), ("kode.agent.nobody", "Anyone?")):
            added = kode("schedules", "add", EVERY_2S, prompt, "--agent", agent, db=db)
            assert added.returncode == 0, added.stderr
        greeted = wait_for_workflow(client, "kode.agent.greeter", "SUCCESS")
        assert greeted.output == "Hello 1."  # type: ignore[attr-defined]
        failed = wait_for_workflow(client, "kode.cron.run", "ERROR")
        assert "names the durable agent 'kode.agent.nobody', which this worker does not " in str(
            failed.error  # type: ignore[attr-defined]
        )
        assert "make it in every worker before DBOS.launch(), or remove the schedule" in str(
            failed.error  # type: ignore[attr-defined]
        )
        for schedule in json.loads(kode("schedules", "list", "--json", db=db).stdout):
            assert kode("schedules", "remove", schedule["id"], db=db).returncode == 0
    finally:
        client.destroy()
        worker.stop()


def test_the_cron_tool_says_it_needs_dbos_launched() -> None:
    code = (
        "import anyio\n"
        "from kode.durable import cron\n"
        "result = anyio.run(cron.run, {'action': 'list'})\n"
        "print(result.is_error, result.text)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("True DBOS could not do it (")
    assert "it needs DBOS launched in this process (a worker: kode worker" in done.stdout


def test_adding_through_a_worker_waits_for_a_decision_from_another_process(
    tmp_path: Path,
) -> None:
    from dbos import DBOSClient

    from kode.durable import approval_topic

    db = f"sqlite:///{tmp_path / 'dbos.sqlite'}"
    template = tmp_path / "planner.toml"
    template.write_text('id = "planner"\ntools = ["cron"]\n')  # no rule allows cron
    add = {"action": "add", "schedule": "0 9 * * *", "prompt": "Report."}
    turns = [
        [{"name": "cron", "input": add, "id": "c1"}],
        "Not scheduled.",
        [{"name": "cron", "input": add, "id": "c2"}],
        "Scheduled.",
    ]
    (tmp_path / "turns.json").write_text(json.dumps(turns))
    model = f"scripted:{tmp_path / 'turns.json'}"
    worker = Worker(tmp_path, db, "--template", str(template), "--model", model)
    client = DBOSClient(system_database_url=db, application_name="kode")

    def until(run_id: str, done: Callable[[list[str], str], bool], what: str) -> None:
        """Poll the run's steps and status (every 0.5 s: each read of a SQLite system database
        takes its write lock) until `done`; fail saying where the run and the worker are."""
        deadline = time.monotonic() + 180
        while True:
            steps = [s["function_name"] for s in client.list_workflow_steps(run_id)]
            status = client.retrieve_workflow(run_id).get_status().status
            if done(steps, status):
                return
            assert time.monotonic() < deadline, (
                f"run {run_id} never {what} in 180 s: status {status}, steps {steps}; "
                f"worker (alive: {worker.process.poll() is None}):\n{worker.stderr()[-3000:]}"
            )
            time.sleep(0.5)

    try:
        for run_id, call, decision in (("deny-1", "c1", "deny"), ("allow-1", "c2", "allow")):
            options = {"queue_name": "kode-runs", "workflow_name": "kode.agent.planner"}
            run = client.enqueue({**options, "workflow_id": run_id}, "Report every day at 9.")
            # The call waits for its decision once DBOS recorded the wait's deadline (the
            # step DBOS.sleep that recv writes): nothing is added meanwhile.
            until(run_id, lambda steps, _: "DBOS.sleep" in steps, "waited for a decision")
            assert run.get_status().status == "PENDING"
            assert kode("schedules", "list", db=db).stdout.strip() == "No schedules."
            client.send(run_id, {"decision": decision}, topic=approval_topic(call))
            until(run_id, lambda _, status: status not in ("PENDING", "ENQUEUED"), "ended")
            assert run.get_result() == ("Not scheduled." if decision == "deny" else "Scheduled.")
        (row,) = json.loads(kode("schedules", "list", "--json", db=db).stdout)
        assert (row["schedule"], row["prompt"], row["agent"]) == (
            "0 9 * * *",
            "Report.",
            "kode.agent.planner",
        )
    finally:
        client.destroy()
        worker.stop()


def test_a_worker_recovers_the_run_of_a_dead_worker(tmp_path: Path) -> None:
    from dbos import DBOSClient

    db = f"sqlite:///{tmp_path / 'dbos.sqlite'}"
    fast = ("--recover-interval", "0.5")
    workers = [
        Worker(tmp_path, db, "--executor-id", name, *fast) for name in ("worker-1", "worker-2")
    ]
    client = DBOSClient(system_database_url=db, application_name="kode")
    try:
        run = client.enqueue(
            {"queue_name": "kode-runs", "workflow_name": "kode.agent.cron-test"}, "Hold on."
        )
        deadline = time.monotonic() + 60
        while not fired(tmp_path):
            assert time.monotonic() < deadline, "no worker took the run"
            time.sleep(0.05)
        ((_, holder),) = fired(tmp_path)
        victim = next(w for w in workers if w.pid == holder)
        survivor = next(w for w in workers if w.pid != holder)
        victim.kill()
        deadline = time.monotonic() + 180
        while run.get_status().status != "SUCCESS":
            assert time.monotonic() < deadline, "the dead worker's run was never recovered"
            time.sleep(0.5)
        assert run.get_result() == "did Hold on."
        assert fired(tmp_path) == [("Hold on.", holder), ("Hold on.", survivor.pid)]
        assert "stopped" in survivor.stop()
    finally:
        client.destroy()
        for worker in workers:
            if worker.process.poll() is None:
                worker.process.kill()
                worker.process.wait(timeout=30)


def test_cron_expressions_are_checked_as_dbos_reads_them() -> None:
    now = datetime.now(UTC)
    assert check_cron("*/10 * * * * *") > now  # six fields: seconds first
    assert check_cron("@daily").hour == 0
    assert check_cron("0 9 * * mon-fri", timezone="America/New_York").hour == 9
    refused = {
        "": "the cron expression is empty",
        "* * * *": "has 4 fields: write 5 fields, minute hour day-of-month month day-of-week",
        "61 * * * *": "is not valid (is not acceptable, out of range)",
        "0 0 30 2 *": "never fires",
        "every day": "has 2 fields",
    }
    for expression, message in refused.items():
        with pytest.raises(ValueError, match="cron expression") as caught:
            check_cron(expression)
        assert message in str(caught.value), (expression, str(caught.value))
        assert "e.g. '0 9 * * mon-fri'" in str(caught.value)
    with pytest.raises(ValueError, match="is not an IANA time zone name"):
        check_cron("0 9 * * *", timezone="Mars/Olympus")


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_cron_tool_answers_bad_input_with_what_to_write() -> None:
    from kode import AgentTemplate, registry
    from kode.models import ScriptedModel

    DurableAgent(AgentTemplate(id="cron-check", tools=["cron"]), model=ScriptedModel(["-"]))
    tool = registry.get("cron")
    result = await tool.run({"action": "add", "schedule": "0 25 * * *", "prompt": "hi"})
    assert result.is_error
    assert "add needs agent" in result.text
    result = await tool.run(
        {"action": "add", "schedule": "0 25 * * *", "prompt": "hi", "agent": "cron-check"}
    )
    assert result.is_error
    assert "cron expression '0 25 * * *' is not valid" in result.text
    result = await tool.run(
        {"action": "add", "schedule": "0 9 * * *", "prompt": "hi", "agent": "nobody"}
    )
    assert result.is_error
    assert "no durable agent named 'nobody' in this process" in result.text
    result = await tool.run({"action": "remove"})
    assert result.is_error and "remove needs the schedule's id" in result.text


def test_adding_asks_for_approval_unless_allowed_listing_does_not(tmp_path: Path) -> None:
    def explain(arguments: dict[str, str], *extra: str) -> str:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "kode",
                "tools",
                "check",
                "-m",
                "kode.durable.schedules",
                "--explain",
                "cron",
                json.dumps(arguments),
                *extra,
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    add = {"action": "add", "schedule": "0 9 * * *", "prompt": "Report."}
    assert explain(add).startswith("cron: ask")
    assert "it schedules a prompt to run unattended on '0 9 * * *': Report." in explain(add)
    assert explain({"action": "list"}).startswith("cron: allow")
    template = tmp_path / "allowed.toml"
    template.write_text('id = "allowed"\ntools = ["cron"]\n[permission]\nallow = ["cron"]\n')
    assert explain(add, "--template", str(template)).startswith("cron: allow")


def test_an_agent_no_worker_makes_is_a_warning_at_add_and_one_line_per_firing(
    tmp_path: Path,
) -> None:
    from dbos import DBOSClient

    db = f"sqlite:///{tmp_path / 'dbos.sqlite'}"
    missing = tmp_path / "missing.sqlite"
    for command in (("schedules", "list"), ("schedules", "add", EVERY_2S, "hi", "--agent", "a")):
        refused = kode(*command, db=f"sqlite:///{missing}")
        assert refused.returncode == 2
        assert f"the system database sqlite:///{missing} does not exist" in refused.stderr
    assert not missing.exists()  # reading schedules makes no database

    worker = Worker(tmp_path, db)
    client = DBOSClient(system_database_url=db, application_name="kode")
    try:
        added = kode("schedules", "add", EVERY_2S, "Anyone?", "--agent", "nobody", db=db)
        assert added.returncode == 0, added.stderr
        assert "warning: no run of a durable agent 'nobody' is recorded" in added.stderr
        wait_for_workflow(client, "kode.cron.run", "ERROR")
        for schedule in json.loads(kode("schedules", "list", "--json", db=db).stdout):
            assert kode("schedules", "remove", schedule["id"], db=db).returncode == 0
    finally:
        client.destroy()
        err = worker.stop()
    failures = [line for line in err.splitlines() if "names the durable agent 'nobody'" in line]
    assert failures
    assert all(": AgentError: scheduled prompt " in line for line in failures)
    assert "Traceback" not in err
