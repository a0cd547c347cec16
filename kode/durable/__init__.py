"""Durable runs of agents on DBOS (the extra ``dbos``).

This package owns `DurableAgent`: an agent's run as a DBOS workflow whose model turns and tool
calls are DBOS steps, so a worker that stops (a crash, a kill -9, a deploy) is continued by
DBOS's recovery after the last completed step, never repeating one, and `WorkerLease`
(`kode.durable.workers`): a worker's lease on its executor id, with which a live worker
recovers the runs of a dead one and never those of a live one. It also owns scheduled
prompts (`kode.durable.schedules`): schedules kept by DBOS that run a durable agent on a cron
expression, and the ``cron`` tool that lets an agent add, list and remove them; and the
``kode worker`` and ``kode schedules`` commands (`kode.cli.durable`). It does not own the
system database or the queues: the application configures and launches DBOS as usual
(``DBOS(config=...)``, ``DBOS.launch()``), or runs ``kode worker``.

The names load DBOS on first use (importing ``kode`` never does). Using any of them also
registers the ``cron`` tool in the global registry and the workflow scheduled prompts fire
(`SCHEDULED_WORKFLOW`), so every worker that makes a `DurableAgent` can run them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kode.durable.dbos import (
        INTERRUPTED_TEXT,
        RUN_KEY,
        SESSION_QUEUE,
        DurableAgent,
        approval_topic,
    )
    from kode.durable.schedules import (
        SCHEDULED_WORKFLOW,
        Schedule,
        add_schedule,
        check_cron,
        cron,
        list_schedules,
        remove_schedule,
    )
    from kode.durable.workers import WorkerLease

__all__ = [
    "INTERRUPTED_TEXT",
    "RUN_KEY",
    "SCHEDULED_WORKFLOW",
    "SESSION_QUEUE",
    "DurableAgent",
    "Schedule",
    "WorkerLease",
    "add_schedule",
    "approval_topic",
    "check_cron",
    "cron",
    "list_schedules",
    "remove_schedule",
]

_SOURCES = {
    "INTERRUPTED_TEXT": "kode.durable.dbos",
    "RUN_KEY": "kode.durable.dbos",
    "SESSION_QUEUE": "kode.durable.dbos",
    "DurableAgent": "kode.durable.dbos",
    "approval_topic": "kode.durable.dbos",
    "SCHEDULED_WORKFLOW": "kode.durable.schedules",
    "Schedule": "kode.durable.schedules",
    "add_schedule": "kode.durable.schedules",
    "check_cron": "kode.durable.schedules",
    "cron": "kode.durable.schedules",
    "list_schedules": "kode.durable.schedules",
    "remove_schedule": "kode.durable.schedules",
    "WorkerLease": "kode.durable.workers",
}


def __getattr__(name: str) -> Any:
    source = _SOURCES.get(name)
    if source is None:
        raise AttributeError(f"module 'kode.durable' has no attribute {name!r}")
    try:
        # The schedules module first, whatever the name: it imports the agent's module and
        # registers the cron tool and the scheduled workflow before any DBOS.launch().
        importlib.import_module("kode.durable.schedules")
        module = importlib.import_module(source)
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.split(".")[0] in ("dbos", "croniter"):
            from kode.extras import install_hint

            raise ModuleNotFoundError(
                f"kode.durable.{name} needs DBOS: {install_hint('dbos')}", name=exc.name
            ) from exc
        raise
    value = getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
