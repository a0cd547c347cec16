"""The ``kode worker`` and ``kode schedules`` commands.

``kode worker -m my_agents`` imports the modules that make durable agents (or makes them
from template files with ``--template FILE --model MODEL``), launches DBOS on the system
database, listens to a queue and runs whatever the database holds for it: queued runs, runs
of a worker that stopped, and scheduled prompts when they fire; until Ctrl-C or SIGTERM. It
holds the lease of its executor id (`kode.durable.workers.WorkerLease`) for its life, and
every few seconds recovers the runs of dead workers (``--recover-prefix``).
``kode schedules list | add | remove`` reads and changes the scheduled prompts from any
process, through a ``DBOSClient``.

This module owns the command line of the durable layer and nothing else. It does not import
DBOS until a command runs, so ``kode`` starts as fast without it and works without the
``dbos`` extra.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Callable
from typing import Any, TypeVar

from kode.trust.protected import kode_home, protect_database

__all__ = [
    "DEFAULT_APP",
    "DEFAULT_DATABASE_FILE",
    "DEFAULT_EXECUTOR",
    "DEFAULT_QUEUE",
    "default_database",
    "register",
]

DEFAULT_DATABASE_FILE = "dbos.sqlite"
"""The system database's file in ``$KODE_HOME`` (``~/.kode``) when neither ``--db`` nor
``DBOS_SYSTEM_DATABASE_URL`` names one: outside any project, where a command an agent runs in
its workspace cannot add a schedule to it."""
DEFAULT_APP = "kode"
"""The DBOS application name of the workers and the commands (``--app``)."""
DEFAULT_QUEUE = "kode-runs"
"""The queue a worker listens to (``--queue``)."""
DEFAULT_EXECUTOR = "worker-1"
"""A worker's executor id (``--executor-id``)."""


_T = TypeVar("_T")


class _Refused(Exception):
    """A command cannot run as asked: the message says why; exit code 2."""


def default_database() -> str:
    """The system database's URL by default: `DEFAULT_DATABASE_FILE` in ``$KODE_HOME``."""
    return f"sqlite:///{kode_home() / DEFAULT_DATABASE_FILE}"


def _database(args: argparse.Namespace) -> str:
    url: str = args.db or os.environ.get("DBOS_SYSTEM_DATABASE_URL") or ""
    if not url:
        url = default_database()
        try:  # private: it holds every run's arguments and results
            kode_home().mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as exc:
            raise _Refused(
                f"cannot make {str(kode_home())!r} for the system database ({exc.strerror or exc}):"
                " set KODE_HOME to a directory kode may write, or give --db"
            ) from None
    if not url.startswith(("sqlite:", "postgresql:", "postgresql+", "postgres:")):
        raise _Refused(
            f"--db {url!r} is not a database URL: give sqlite:///PATH (a file, created if "
            "missing) or postgresql://USER:PASSWORD@HOST:PORT/DATABASE"
        )
    if url.startswith("sqlite:///"):
        path = url[len("sqlite:///") :].split("?", 1)[0]
        if path and path != ":memory:":
            protect_database(path)  # commands sandboxed by this worker's agents may not write it
    return url


def _dbos() -> Any:
    try:
        import dbos
    except ModuleNotFoundError as exc:
        from kode.extras import install_hint

        raise _Refused(
            f"this command needs DBOS ({exc.name} is missing): {install_hint('dbos')}"
        ) from None
    return dbos


def _refuse_a_missing_file(url: str) -> None:
    """Refuse a SQLite system database that does not exist: opening it would create it."""
    from pathlib import Path

    from sqlalchemy.engine import make_url

    try:
        path = make_url(url).database if url.startswith("sqlite:") else None
    except Exception:  # a URL SQLAlchemy cannot read: opening it says why
        return
    if path and path != ":memory:" and not Path(path).exists():
        raise _Refused(
            f"the system database {url} does not exist: start a worker on it first (kode "
            f"worker -m MODULE --db {url}), which creates it"
        )


def _with_client(args: argparse.Namespace, work: Callable[[Any], _T]) -> _T:
    """Run `work` with a ``DBOSClient`` on the system database; say what a missing one needs."""
    dbos = _dbos()
    from sqlalchemy.exc import OperationalError, ProgrammingError

    url = _database(args)
    _refuse_a_missing_file(url)
    try:
        client = dbos.DBOSClient(system_database_url=url, application_name=args.app)
    except (OperationalError, ProgrammingError) as exc:
        raise _Refused(f"cannot open the system database {url}: {exc.orig}") from None
    try:
        return work(client)
    except (OperationalError, ProgrammingError) as exc:
        if "no such table" in str(exc) or "does not exist" in str(exc):
            raise _Refused(
                f"the system database {url} holds no DBOS tables yet: start a worker on it "
                f"first (kode worker -m MODULE --db {url}), which creates them"
            ) from None
        raise _Refused(f"the system database {url} failed: {exc.orig}") from None
    finally:
        client.destroy()


# --- kode worker -----------------------------------------------------------------------------


def _agents(args: argparse.Namespace) -> list[Any]:
    """Import the modules and make the template files' agents; the durable agents made."""
    from kode.agent.template import AgentTemplate, TemplateError
    from kode.durable.dbos import DurableAgent
    from kode.models import model_from_environment
    from kode.registries.modules import import_tools_module

    if args.builtin:
        import importlib

        importlib.import_module("kode.builtin")
    for spec in args.modules:
        try:
            import_tools_module(spec)
        except Exception as exc:
            raise _Refused(f"cannot import {spec!r}: {exc}") from None
    if args.templates:
        try:
            model = model_from_environment(args.model)
        except ValueError as exc:
            raise _Refused(f"--model: {exc}" if args.model else str(exc)) from None
        for path in args.templates:
            try:
                template = AgentTemplate.from_file(path)
            except (OSError, TemplateError) as exc:
                raise _Refused(f"--template {path}: {exc}") from None
            options: dict[str, Any] = {"durable_approvals": True}
            if args.store:
                options["store"] = args.store
            if args.workspace:
                options["options"] = {"workspace": args.workspace}
            DurableAgent(template, model=model, **options)
    agents = DurableAgent.registered()
    if not agents:
        raise _Refused(
            "no durable agents to run: name a module that makes them (-m MODULE, a dotted "
            "name or a .py file making DurableAgent(...)) or a template file (--template "
            "FILE --model MODEL)"
        )
    return agents


def _config(args: argparse.Namespace) -> dict[str, Any]:
    config: dict[str, Any] = {
        "name": args.app,
        "system_database_url": _database(args),
        "executor_id": args.executor_id,
        "scheduler_polling_interval_sec": args.scheduler_poll,
        "log_level": "INFO" if args.verbose else "WARNING",
    }
    if args.app_version:
        config["application_version"] = args.app_version
    return config


def _one_line_for_kode_errors(record: logging.LogRecord) -> bool:
    """DBOS logs a failed workflow with its traceback; a kode error says all in its message.

    A scheduled prompt naming an agent this worker does not make fails on every firing: one
    line each, not thirty.
    """
    from kode.tools.errors import KodeError

    exc = record.exc_info[1] if record.exc_info else None
    if isinstance(exc, KodeError):
        said = record.getMessage().rstrip(": ")
        record.msg = "%s: %s: %s"
        record.args = (said, type(exc).__name__, exc)
        record.exc_info = None
        record.exc_text = None
    return True


def _cmd_worker(args: argparse.Namespace) -> int:
    import signal

    import anyio

    if args.concurrency is not None and args.concurrency < 1:
        raise _Refused(f"--concurrency {args.concurrency}: give 1 or more runs at once")
    if args.scheduler_poll <= 0:
        raise _Refused(f"--scheduler-poll {args.scheduler_poll}: give a number of seconds > 0")
    if args.recover_interval < 0:
        raise _Refused(f"--recover-interval {args.recover_interval}: give seconds, 0 for never")
    dbos = _dbos()
    import kode.durable.schedules  # noqa: F401 (the cron tool and the scheduled workflow)
    from kode.agent.agent import AgentError
    from kode.durable.dbos import session_queue
    from kode.durable.workers import WorkerLease

    agents = _agents(args)
    config = _config(args)
    try:  # before the launch, which recovers this executor id's runs: one live worker per id
        lease = WorkerLease.acquire(config["system_database_url"], args.executor_id)
    except AgentError as exc:
        raise _Refused(str(exc)) from None
    lost: list[str] = []

    async def watch(scope: anyio.CancelScope) -> None:
        while True:
            try:
                await lease.watch(interval=args.recover_interval, prefix=args.recover_prefix)
            except AgentError as exc:  # the lease is gone: another worker may take these runs
                lost.append(str(exc))
                scope.cancel()
                return
            except Exception as exc:  # a failed round (a busy database): the next one retries
                print(
                    f"kode worker {args.executor_id}: recovering dead workers' runs failed, "
                    f"trying again: {type(exc).__name__}: {exc}",
                    file=sys.stderr,
                    flush=True,
                )
                await anyio.sleep(args.recover_interval)

    async def main() -> None:
        dbos.DBOS(config=config)
        logging.getLogger("dbos").addFilter(_one_line_for_kode_errors)
        dbos.DBOS.launch()
        try:
            await dbos.DBOS.register_queue_async(
                args.queue,
                global_concurrency=args.concurrency,
                worker_concurrency=args.worker_concurrency,
            )
            await session_queue()  # runs that continue a session: one at a time per session
            names = ", ".join(agent.name for agent in agents)
            print(
                f"kode worker {args.executor_id}: running {names} on queue {args.queue!r} "
                f"and scheduled prompts, system database {config['system_database_url']}; "
                "Ctrl-C stops",
                file=sys.stderr,
                flush=True,
            )
            async with anyio.create_task_group() as tg:
                if args.recover_interval > 0 and args.recover_prefix:
                    tg.start_soon(watch, tg.cancel_scope)
                with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                    async for _ in signals:
                        break
                tg.cancel_scope.cancel()
        finally:
            dbos.DBOS.destroy()
            lease.release()

    anyio.run(main)
    if lost:
        print(f"kode worker {args.executor_id}: {lost[0]}", file=sys.stderr, flush=True)
        return 1
    print(f"kode worker {args.executor_id}: stopped", file=sys.stderr, flush=True)
    return 0


# --- kode schedules --------------------------------------------------------------------------


def _cmd_list(args: argparse.Namespace) -> int:
    import anyio

    from kode.durable.schedules import list_schedules

    found = _with_client(args, lambda client: anyio.run(lambda: list_schedules(client=client)))
    if args.json:
        print(json.dumps([s.as_dict() for s in found], indent=2))
    elif not found:
        print("No schedules.")
    else:
        for schedule in found:
            fired = f"  (last fired {schedule.last_fired_at})" if schedule.last_fired_at else ""
            print(schedule.describe() + fired)
    return 0


def _cmd_add(args: argparse.Namespace) -> int:
    import anyio

    from kode.durable.schedules import add_schedule, check_cron

    try:
        upcoming = check_cron(args.cron, timezone=args.timezone)
    except ValueError as exc:
        raise _Refused(str(exc)) from None

    async def add(client: Any) -> Any:
        return await add_schedule(
            args.cron,
            args.prompt,
            agent=args.agent,
            timezone=args.timezone,
            queue=args.queue,
            session=args.session,
            client=client,
        )

    def add_and_look(client: Any) -> tuple[Any, bool]:
        added = anyio.run(add, client)
        # No worker says which agents it makes; the runs it kept do. A name with none may be
        # a typo, or an agent no worker makes: each firing of it would fail.
        names = list(dict.fromkeys((args.agent, f"kode.agent.{args.agent}")))
        ran = bool(client.list_workflows(name=names, limit=1, load_input=False))
        return added, ran

    try:
        added, ran = _with_client(args, add_and_look)
    except ValueError as exc:
        raise _Refused(str(exc)) from None
    print(f"Added {added.describe()}\nNext run: {upcoming.isoformat()}")
    if not ran:
        print(
            f"kode schedules: warning: no run of a durable agent {args.agent!r} is recorded in "
            "this system database: unless a worker makes it (kode worker -m MODULE, or "
            "--template FILE), each firing fails",
            file=sys.stderr,
        )
    return 0


def _cmd_remove(args: argparse.Namespace) -> int:
    import anyio

    from kode.durable.schedules import remove_schedule

    try:
        removed = _with_client(
            args, lambda client: anyio.run(lambda: remove_schedule(args.id, client=client))
        )
    except KeyError as exc:
        raise _Refused(str(exc.args[0])) from None
    print(f"Removed {removed.describe()}")
    return 0


# --- wiring ----------------------------------------------------------------------------------


def _guard(func: Any, command: str) -> Any:
    def run(args: argparse.Namespace) -> int:
        try:
            code: int = func(args)
        except _Refused as exc:
            print(f"kode {command}: {exc}", file=sys.stderr)
            return 2
        return code

    return run


def _database_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--db",
        metavar="URL",
        help="the DBOS system database: sqlite:///PATH or postgresql://... (default: "
        f"$DBOS_SYSTEM_DATABASE_URL, else {DEFAULT_DATABASE_FILE} in $KODE_HOME, ~/.kode "
        "when it is not set)",
    )
    p.add_argument(
        "--app",
        default=DEFAULT_APP,
        help="the DBOS application name, the same for workers and commands (default "
        f"{DEFAULT_APP})",
    )


def register(commands: Any) -> None:
    """Add ``worker`` and ``schedules`` to the ``kode`` command."""
    worker = commands.add_parser(
        "worker",
        help="run durable agents: queued runs, recovered runs and scheduled prompts (DBOS)",
    )
    worker.add_argument(
        "modules_pos", nargs="*", metavar="MODULE", help="modules making DurableAgents"
    )
    worker.add_argument(
        "-m",
        "--module",
        dest="modules",
        action="append",
        default=[],
        help="a module (dotted name or .py path) that makes DurableAgents and defines their "
        "tools; repeatable",
    )
    worker.add_argument(
        "--template",
        dest="templates",
        action="append",
        default=[],
        metavar="FILE",
        help="a .toml or .json agent template to run as a DurableAgent (with --model); repeatable",
    )
    worker.add_argument(
        "--model",
        help="with --template: a model name, or scripted:TURNS.json (default: from the "
        "environment)",
    )
    worker.add_argument("--workspace", help="with --template: the directory tools may touch")
    worker.add_argument(
        "--store",
        metavar="URL",
        help="with --template: the session store (sqlite:///PATH or postgresql://...) finished "
        "runs are written to and runs with a session continue (schedules add --session)",
    )
    worker.add_argument("--builtin", action="store_true", help="load kode's built-in tools")
    worker.add_argument(
        "-v", "--verbose", action="store_true", help="show DBOS's log records from INFO up"
    )
    _database_arguments(worker)
    worker.add_argument(
        "--queue", default=DEFAULT_QUEUE, help=f"the queue to listen to (default {DEFAULT_QUEUE})"
    )
    worker.add_argument(
        "--concurrency",
        type=int,
        metavar="N",
        help="at most N runs of the queue at once across all workers (default: no limit)",
    )
    worker.add_argument(
        "--worker-concurrency",
        type=int,
        metavar="N",
        help="at most N runs of the queue at once in this worker (default: no limit)",
    )
    worker.add_argument(
        "--executor-id",
        default=DEFAULT_EXECUTOR,
        help="this worker's id, held for its life (a second live worker with it is refused): "
        f"a worker restarted with it recovers the runs it had (default {DEFAULT_EXECUTOR}; "
        "give each worker its own)",
    )
    worker.add_argument(
        "--recover-prefix",
        default="worker-",
        metavar="PREFIX",
        help="recover the runs of dead workers whose executor id starts with PREFIX "
        "(default worker-; '' for none)",
    )
    worker.add_argument(
        "--recover-interval",
        type=float,
        default=5.0,
        metavar="SECONDS",
        help="how often to look for dead workers' runs (default 5; 0 for never)",
    )
    worker.add_argument(
        "--app-version",
        help="the DBOS application version (default: computed by DBOS from the workflows' "
        "code); runs are recovered only by workers of their version",
    )
    worker.add_argument(
        "--scheduler-poll",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="how often the scheduler looks for added or removed schedules (default 30; the "
        "first minute after launch, every second)",
    )
    worker.set_defaults(
        handler=_guard(
            lambda a: _cmd_worker(_merge(a)),
            "worker",
        )
    )

    schedules = commands.add_parser(
        "schedules", help="list, add and remove scheduled prompts (the cron tool)"
    )
    sub = schedules.add_subparsers(dest="schedules_command", metavar="COMMAND")
    schedules.set_defaults(handler=lambda a: (schedules.print_help(), 2)[1])

    p = sub.add_parser(
        "list", help="list the scheduled prompts: id, cron expression, agent, prompt"
    )
    _database_arguments(p)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=_guard(_cmd_list, "schedules list"))

    p = sub.add_parser("add", help="schedule a prompt for a durable agent the workers make")
    p.add_argument(
        "cron", help="when: 5 cron fields (minute hour day month weekday), or 6 with seconds first"
    )
    p.add_argument("prompt", help="what the agent is asked each time")
    p.add_argument(
        "--agent",
        required=True,
        help="the durable agent's workflow name (kode.agent.<template id>)",
    )
    p.add_argument("--timezone", help="an IANA time zone for the expression (default UTC)")
    p.add_argument(
        "--queue", help="a queue the workers listen to, for its limits (default: DBOS's own)"
    )
    p.add_argument(
        "--session",
        metavar="ID",
        help="continue this session (in the agent's store) at each firing instead of a new "
        "conversation; made by the first firing if missing",
    )
    _database_arguments(p)
    p.set_defaults(handler=_guard(_cmd_add, "schedules add"))

    p = sub.add_parser("remove", help="remove a scheduled prompt: it fires no more")
    p.add_argument("id", help="the schedule's id, as kode schedules list shows it")
    _database_arguments(p)
    p.set_defaults(handler=_guard(_cmd_remove, "schedules remove"))


def _merge(args: argparse.Namespace) -> argparse.Namespace:
    args.modules = [*getattr(args, "modules_pos", []), *args.modules]
    return args
