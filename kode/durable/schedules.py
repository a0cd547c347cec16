"""Scheduled prompts: a durable agent run on a cron expression, and the ``cron`` tool.

This module owns the schedules of prompts: adding, listing and removing them, the ``cron`` tool
that lets an agent do so, and the one DBOS workflow that every schedule fires
(`SCHEDULED_WORKFLOW`). A schedule is a DBOS schedule (``DBOS.create_schedule``): DBOS keeps it
in its system database and every launched worker's scheduler fires it, so it outlives the
process that added it and a restarted worker keeps firing it; the firing of one time is one
workflow whatever the number of workers (its id is the schedule's and the time's). The fired
workflow starts the target `DurableAgent`'s own workflow as its child, on the prompt, so a
scheduled run is a durable run like any other: a step per model turn and per tool call. A
schedule may target a session: each firing then continues that stored conversation (the
agent's store), one firing at a time (`kode.durable.dbos.SESSION_QUEUE`).

Cron expressions are checked with the parser DBOS's scheduler uses (croniter, seconds first
when there are six fields), so an expression accepted here is one DBOS runs. It does not run a
timer of its own and does not launch DBOS: the worker does (``kode worker``, or the
application's own ``DBOS.launch()``).
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter  # type: ignore[import-untyped]
from dbos import DBOS
from dbos import error as dbos_error

from kode.agent.agent import AgentError
from kode.durable.dbos import DurableAgent
from kode.tools.context import ToolContext
from kode.tools.define import define_tool
from kode.tools.errors import ToolError
from kode.tools.results import ToolResult, text_result

if TYPE_CHECKING:
    from dbos import DBOSClient, WorkflowSchedule

__all__ = [
    "SCHEDULED_WORKFLOW",
    "SCHEDULE_PREFIX",
    "Schedule",
    "add_schedule",
    "check_cron",
    "cron",
    "list_schedules",
    "remove_schedule",
]

SCHEDULED_WORKFLOW = "kode.cron.run"
"""The DBOS workflow every schedule fires: it runs the schedule's agent on its prompt."""

SCHEDULE_PREFIX = "kode-cron-"
"""How the ids of kode's schedules begin (DBOS's schedule names)."""

_FIELDS = (
    "write 5 fields, minute hour day-of-month month day-of-week (e.g. '0 9 * * mon-fri': "
    "9:00 on weekdays; '*/15 * * * *': every 15 minutes), or 6 with seconds first (e.g. "
    "'*/30 * * * * *': every 30 seconds)"
)


@dataclass(frozen=True, kw_only=True, slots=True)
class Schedule:
    """A scheduled prompt, as the system database holds it."""

    id: str
    """The schedule's id (its DBOS schedule name, ``kode-cron-...``)."""
    cron: str
    """When it fires: a cron expression (5 fields, or 6 with seconds first)."""
    prompt: str
    """What the agent is asked each time."""
    agent: str
    """The workflow name of the `DurableAgent` that runs it (``kode.agent.<template id>``)."""
    timezone: str | None = None
    """The IANA time zone the expression is read in (`None`: UTC)."""
    queue: str | None = None
    """The DBOS queue its runs go on (`None`: DBOS's internal queue, no limit)."""
    session: str | None = None
    """The session each firing continues, in the agent's store (`None`: a new conversation
    each time)."""
    status: str = "ACTIVE"
    """``ACTIVE`` or ``PAUSED`` (DBOS's)."""
    last_fired_at: str | None = None
    """When it last fired (ISO 8601), if it has."""

    def as_dict(self) -> dict[str, Any]:
        """The schedule as JSON-ready data (what `kode schedules list --json` prints)."""
        return {
            "id": self.id,
            "schedule": self.cron,
            "prompt": self.prompt,
            "agent": self.agent,
            "timezone": self.timezone,
            "queue": self.queue,
            "session": self.session,
            "status": self.status,
            "last_fired_at": self.last_fired_at,
        }

    def describe(self) -> str:
        """One line: id, expression, agent (and session) and prompt."""
        zone = f" {self.timezone}" if self.timezone else ""
        paused = "" if self.status == "ACTIVE" else f" [{self.status.lower()}]"
        session = f" in session {self.session}" if self.session else ""
        return f"{self.id}  '{self.cron}'{zone}  {self.agent}{session}{paused}: {self.prompt}"

    @classmethod
    def _of(cls, row: WorkflowSchedule) -> Schedule:
        context = row["context"] if isinstance(row["context"], Mapping) else {}
        return cls(
            id=row["schedule_name"],
            cron=row["schedule"],
            prompt=str(context.get("prompt", "")),
            agent=str(context.get("agent", "")),
            timezone=row.get("cron_timezone"),
            queue=row.get("queue_name"),
            session=str(context["session"]) if context.get("session") else None,
            status=row.get("status") or "ACTIVE",
            last_fired_at=row.get("last_fired_at"),
        )


def check_cron(expression: str, *, timezone: str | None = None) -> datetime:
    """Check a cron expression as DBOS's scheduler reads it; return when it fires next.

    Five fields (minute hour day-of-month month day-of-week), or six with seconds first;
    names (``mon-fri``, ``jan``) and shortcuts (``@daily``, ``@hourly``) are accepted.

    Raises:
        ValueError: The expression or the time zone is not valid, or the expression never
            fires (``0 0 30 2 *``); the message says what to write instead.
    """
    from croniter import CroniterError

    text = expression.strip()
    if not text:
        raise ValueError(f"the cron expression is empty: {_FIELDS}")
    zone: Any = UTC
    if timezone:
        try:
            zone = ZoneInfo(timezone)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(
                f"time zone {timezone!r} is not an IANA time zone name: write one such as "
                "'Europe/Paris' or 'America/New_York', or leave it out for UTC"
            ) from None
    fields = text.split()
    if not text.startswith("@") and len(fields) not in (5, 6, 7):
        raise ValueError(f"cron expression {text!r} has {len(fields)} fields: {_FIELDS}")
    if not croniter.is_valid(text, second_at_beginning=True):
        try:
            croniter(text, second_at_beginning=True)
            why = "it is not valid"
        except CroniterError as exc:
            why = str(exc).replace(f"[{text}] ", "").rstrip(".")
        raise ValueError(f"cron expression {text!r} is not valid ({why}): {_FIELDS}")
    try:
        upcoming: datetime = croniter(text, datetime.now(zone), second_at_beginning=True).get_next(
            datetime
        )
    except CroniterError:
        raise ValueError(
            f"cron expression {text!r} never fires (no such date): {_FIELDS}"
        ) from None
    return upcoming


def _schedule_id(seed: str | None) -> str:
    """A new schedule id; the same for the same `seed` (a call replayed by DBOS)."""
    if seed is None:
        return SCHEDULE_PREFIX + uuid.uuid4().hex[:12]
    return SCHEDULE_PREFIX + hashlib.sha256(seed.encode()).hexdigest()[:12]


def _target(agent: DurableAgent | str) -> str:
    """The workflow name of the agent a schedule runs, checked in this process."""
    if isinstance(agent, DurableAgent):
        return agent.name
    found = DurableAgent.named(agent)
    if found is None:
        known = ", ".join(repr(a.name) for a in DurableAgent.registered()) or "none"
        raise ValueError(
            f"no durable agent named {agent!r} in this process (made: {known}): name the "
            "workflow name of a DurableAgent made here (kode.agent.<template id>) or its "
            "template id"
        )
    return found.name


async def add_schedule(
    cron: str,
    prompt: str,
    *,
    agent: DurableAgent | str,
    timezone: str | None = None,
    queue: str | None = None,
    session: str | None = None,
    client: DBOSClient | None = None,
    schedule_id: str | None = None,
) -> Schedule:
    """Schedule `prompt` to be run by `agent` whenever `cron` fires.

    In a process that launched DBOS (a worker), or with a `DBOSClient` on the workers' system
    database. Every worker that makes the agent fires the schedule; each firing is one run of
    the agent's workflow (a child of the fired `SCHEDULED_WORKFLOW`).

    Args:
        cron: A cron expression: 5 fields, or 6 with seconds first (see `check_cron`).
        prompt: What the agent is asked each time.
        agent: The `DurableAgent`, or its workflow name or template id; checked in this
            process unless `client` is given (the workers must make it).
        timezone: The IANA time zone the expression is read in (default UTC).
        queue: A DBOS queue the workers registered, for the runs to respect its limits
            (default: DBOS's internal queue).
        session: A session id: each firing continues that conversation in the agent's store
            (`DurableAgent(store=...)`), as `DurableAgent.run(session_id=...)` does; a
            session not in the store yet is made by the first firing. Firings of one session
            run one at a time. Checked in this process unless `client` is given: the agent
            must keep a store, and a session already there must run the agent's template
            (otherwise the firing fails with an error saying so).
        client: Add through this client instead of the launched DBOS.
        schedule_id: The schedule's id (default: a new ``kode-cron-...`` one).

    Raises:
        ValueError: The expression, the time zone, the prompt, the agent or the session is
            not valid.
    """
    check_cron(cron, timezone=timezone)
    if not prompt.strip():
        raise ValueError("the prompt is empty: say what the agent should do each time")
    target = agent.name if isinstance(agent, DurableAgent) else agent
    if client is None:
        target = _target(agent)
    if session is not None:
        session = session.strip()
        _check_session_id(session)
        if client is None:
            found = DurableAgent.named(target)
            assert found is not None
            await _check_session(found, session)
    name = schedule_id or _schedule_id(None)
    context: dict[str, Any] = {"id": name, "agent": target, "prompt": prompt}
    if session:
        context["session"] = session
    if client is not None:
        await client.create_schedule_async(
            schedule_name=name,
            workflow_name=SCHEDULED_WORKFLOW,
            schedule=cron.strip(),
            context=context,
            cron_timezone=timezone or None,
            queue_name=queue,
        )
    else:
        await DBOS.create_schedule_async(
            schedule_name=name,
            workflow_fn=_run_scheduled,
            schedule=cron.strip(),
            context=context,
            cron_timezone=timezone or None,
            queue_name=queue,
        )
    return Schedule(
        id=name,
        cron=cron.strip(),
        prompt=prompt,
        agent=target,
        timezone=timezone,
        queue=queue,
        session=session or None,
    )


def _check_session_id(session: str) -> None:
    if not session or not session.isprintable():
        raise ValueError(
            f"session: {session!r} is not a session id: give the id of a session of the "
            "agent's store (printable text), or leave it out for a new conversation each time"
        )


async def _check_session(agent: DurableAgent, session: str) -> None:
    """Refuse a session target `agent` cannot continue, as far as this process can tell."""
    from kode.sessions import SessionNotFoundError, store_from

    if agent.store is None:
        raise ValueError(
            f"durable agent {agent.name!r} keeps no session store, so it cannot continue "
            f"session {session!r}: make it with DurableAgent(..., store=...) in every worker, "
            "or leave the session out (each firing is then a new conversation)"
        )
    store = store_from(agent.store)
    try:
        header = await store.get(session)
    except SessionNotFoundError:
        return  # the first firing makes it
    finally:
        if isinstance(agent.store, str):
            await store.aclose()
    template = agent.template_id
    if header.template != template:
        raise ValueError(
            f"session {session!r} runs template {header.template!r}, not {template!r} (the "
            f"template of {agent.name!r}): name a session of that agent, or the agent of "
            f"template {header.template!r}"
        )


async def list_schedules(*, client: DBOSClient | None = None) -> list[Schedule]:
    """The scheduled prompts of this application, by id."""
    rows = (
        await client.list_schedules_async(workflow_name=SCHEDULED_WORKFLOW)
        if client is not None
        else await DBOS.list_schedules_async(workflow_name=SCHEDULED_WORKFLOW)
    )
    return sorted((Schedule._of(row) for row in rows), key=lambda s: s.id)


async def remove_schedule(schedule_id: str, *, client: DBOSClient | None = None) -> Schedule:
    """Remove a scheduled prompt: it fires no more (a run it started goes on).

    Raises:
        KeyError: No scheduled prompt has that id; the message lists the ids there are.
    """
    found = {s.id: s for s in await list_schedules(client=client)}
    schedule = found.get(schedule_id.strip())
    if schedule is None:
        there = ", ".join(found) or "none"
        raise KeyError(f"no scheduled prompt has id {schedule_id!r} (there are: {there})")
    if client is not None:
        await client.delete_schedule_async(schedule.id)
    else:
        await DBOS.delete_schedule_async(schedule.id)
    return schedule


async def _run_scheduled_workflow(scheduled_at: datetime, context: Any) -> None:
    """Run the schedule's agent on its prompt, as a child workflow ``<this id>.run``."""
    values = context if isinstance(context, Mapping) else {}
    name = str(values.get("agent", ""))
    agent = DurableAgent.named(name)
    if agent is None:
        known = ", ".join(repr(a.name) for a in DurableAgent.registered()) or "none"
        raise AgentError(
            f"scheduled prompt {values.get('id', '?')!r} (due {scheduled_at.isoformat()}) "
            f"names the durable agent {name!r}, which this worker does not make (it makes: "
            f"{known}): make it in every worker before DBOS.launch(), or remove the schedule"
        )
    session = values.get("session")
    await agent.run(
        str(values.get("prompt", "")),
        workflow_id=f"{DBOS.workflow_id}.run",
        session_id=str(session) if session else None,
    )


_run_scheduled = DBOS.workflow(name=SCHEDULED_WORKFLOW)(_run_scheduled_workflow)


# --- the cron tool ---------------------------------------------------------------------------


def _approval(arguments: dict[str, Any]) -> bool | str | None:
    """Adding asks (a prompt that runs unattended); listing does not; removing: by kind."""
    action = arguments.get("action")
    if action == "add":
        return (
            f"it schedules a prompt to run unattended on '{arguments.get('schedule', '')}': "
            f"{arguments.get('prompt', '')}"
        )
    return False if action == "list" else None


async def _calling_run() -> tuple[str | None, str | None, str | None]:
    """(workflow id, workflow name, queue) of the run making the call, if it is a workflow."""
    workflow_id = DBOS.workflow_id
    if workflow_id is None:
        return None, None, None
    status = await DBOS.get_workflow_status_async(workflow_id)
    if status is None:
        return workflow_id, None, None
    queue = status.queue_name
    if queue is None and status.parent_workflow_id:  # a scheduled run: its parent's queue
        parent = await DBOS.get_workflow_status_async(status.parent_workflow_id)
        queue = parent.queue_name if parent is not None else None
    return workflow_id, status.name, queue


@define_tool(kind="edit", groups=["group:automation"], requires_approval=_approval)
async def cron(
    action: Literal["add", "list", "remove"],
    schedule: str = "",
    prompt: str = "",
    agent: str = "",
    timezone: str = "",
    id: str = "",
    session: str = "",
    *,
    ctx: ToolContext,
) -> ToolResult:
    """Schedule a prompt to run later and repeatedly, list the schedules, or remove one.

    add: on each time the cron expression `schedule` fires, `agent` (default: this agent) is
    run on `prompt`, unattended: as a new conversation, so write the prompt so that it stands
    on its own, or, with `session`, as the next message of that conversation. list: every
    schedule with its id. remove: the schedule `id` fires no more.

    Cron expressions: 5 fields, minute hour day-of-month month day-of-week, in UTC unless
    `timezone` is given: '0 9 * * mon-fri' is 9:00 on weekdays, '*/15 * * * *' every 15
    minutes, '30 8 1 * *' 8:30 on the 1st of each month; 6 fields put seconds first. Adding
    asks the user for approval unless a rule allows it.

    Args:
        action: add, list or remove.
        schedule: add: when, as a cron expression.
        prompt: add: what the agent is asked each time.
        agent: add: the agent that runs it (its template id); default: this one.
        timezone: add: an IANA time zone such as Europe/Paris for the expression (default UTC).
        id: remove: the schedule's id, as list shows it.
        session: add: continue this conversation at each firing: a session id, or "this"
            for the conversation making the call; default: a new conversation each time.
        ctx: Injected by kode (not shown to the model).
    """
    try:
        return await _act(action, schedule, prompt, agent, timezone, id, session, ctx)
    except dbos_error.DBOSException as exc:
        raise ToolError(
            f"DBOS could not do it ({exc}). The cron tool keeps schedules in DBOS's system "
            "database: it needs DBOS launched in this process (a worker: kode worker, or "
            "DBOS(config=...) then DBOS.launch())"
        ) from None


async def _act(
    action: str,
    schedule: str,
    prompt: str,
    agent: str,
    timezone: str,
    id: str,
    session: str,
    ctx: ToolContext,
) -> ToolResult:
    if action == "list":
        found = await list_schedules()
        if not found:
            return text_result("No schedules.", details={"schedules": []})
        lines = [s.describe() for s in found]
        return text_result("\n".join(lines), details={"schedules": [s.as_dict() for s in found]})
    if action == "remove":
        if not id.strip():
            raise ToolError(
                "remove needs the schedule's id: call cron with action list to see them"
            )
        try:
            removed = await remove_schedule(id)
        except KeyError as exc:
            raise ToolError(str(exc.args[0])) from None
        return text_result(f"Removed {removed.describe()}", details=removed.as_dict())
    workflow_id, running, queue = await _calling_run()
    target = agent.strip() or running
    if not target:
        raise ToolError(
            "add needs agent: the template id of the durable agent that should run the prompt "
            "(this agent is not running as a durable run)"
        )
    seed = f"{workflow_id}/{ctx.tool_call_id}" if workflow_id and ctx.tool_call_id else None
    target_session = session.strip() or None
    if target_session == "this":
        # A run that continues a session runs as that session; any other durable run's own
        # session is its workflow id, written only when it ends.
        if workflow_id is None or ctx.session_id in (None, workflow_id):
            raise ToolError(
                'session "this" needs a run that continues a stored session (started with '
                "session_id=...); this one does not: give a session id, or leave session out"
            )
        target_session = ctx.session_id
    try:
        upcoming = check_cron(schedule, timezone=timezone or None)
        added = await add_schedule(
            schedule,
            prompt,
            agent=target,
            timezone=timezone or None,
            queue=queue,
            session=target_session,
            schedule_id=_schedule_id(seed),
        )
    except ValueError as exc:
        raise ToolError(str(exc)) from None
    return text_result(
        f"Added {added.describe()}\nNext run: {upcoming.isoformat()}",
        details={**added.as_dict(), "next": upcoming.isoformat()},
    )
