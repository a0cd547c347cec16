"""`DurableAgent`: an agent's ``send`` as a DBOS workflow, a step per model turn and tool call.

This module owns the workflow and the two kinds of steps. A model turn is one step: the
model's whole response is checkpointed, so a recovered workflow replays it instead of asking
again. A tool call is two steps drawn in call order when the model's response arrives (so
calls a turn runs concurrently keep the same step ids on every execution): *begin*, which
records which execution of the workflow started the call, and *call*, which runs the tool and
checkpoints its result. A recovered workflow replays both when the call finished; when only
*begin* was recorded, the call was running when the worker stopped, and the store's resume
rule applies: a tool that only reads (kinds read, search, think) or is idempotent
(``define_tool(idempotent=True)``) runs again; any other is answered with an error result
saying it may have partly run, and is never run twice. A call of a tool that runs again in
any case takes no *begin* step (one write less).

It does not configure or launch DBOS, and keeps no state of its own: the conversation is the
replay of the checkpointed steps. A run that ends may also be written to a session store, by
one last step (``DurableAgent(store=...)``). A run may also continue a stored session
(``session_id=``): a first step reads the session's records, the run goes on from them, and
the last step appends the new ones; such runs go on a queue partitioned by session id with
one run at a time per session (`SESSION_QUEUE`), so two runs never continue one session at once.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator, Mapping
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from dbos import (
    DBOS,
    Queue,
    SetEnqueueOptions,
    SetWorkflowID,
    StepReservation,
    WorkflowHandleAsync,
)

from kode.agent.agent import Agent, AgentError
from kode.agent.hooks import AgentHooks, PreToolUseOutcome, Respond
from kode.agent.permissions import ApprovalDecision, ApprovalRequest
from kode.agent.session import rerun_safe
from kode.agent.template import AgentTemplate
from kode.models.base import Model, ModelError, ModelEvent, ModelRequest, ModelResponse
from kode.models.messages import ToolUseContent
from kode.sessions import (
    MemoryStore,
    SessionExistsError,
    SessionLeaseError,
    SessionNotFoundError,
    Store,
    store_from,
)
from kode.sessions.records import MetadataSet, SessionRecord, record_adapter
from kode.sessions.starting import start_session
from kode.tools.context import ToolContext
from kode.tools.errors import ToolErrorType
from kode.tools.results import ToolResult, error_result

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine

__all__ = ["INTERRUPTED_TEXT", "RUN_KEY", "SESSION_QUEUE", "DurableAgent", "approval_topic"]

INTERRUPTED_TEXT = (
    "Tool '{name}' was interrupted by a worker restart while it ran, and was not run again: "
    "it may have partly run. Check what it was doing before calling it again."
)
"""The error result of a call that was running when its worker stopped (``{name}``: the tool)."""


SESSION_QUEUE = "kode-sessions"
"""The DBOS queue of runs that continue a session (``start``/``run`` with ``session_id``).

It is partitioned by session id with a partition concurrency of 1: runs of one session go on
one after the other (in the order they were queued), runs of different sessions at once.
`DurableAgent` registers it on first use, and ``kode worker`` at launch."""

RUN_KEY = "kode.durable_run"
"""The session metadata key a run that continues a session writes first: the run's workflow
id. Its last step finds it when an earlier attempt of the step already appended the records."""

_OWNER = "kode.durable"
"""The lease owner of every durable run's append: DBOS runs one run of a session at a time, so
they are one holder (a lease an interrupted append left is taken over, not waited for)."""


def approval_topic(call_id: str) -> str:
    """The DBOS topic a run waits on for the decision on call `call_id`.

    Any process can decide: ``DBOSClient(system_database_url=...).send(workflow_id,
    {"decision": "allow"}, topic=approval_topic(call_id))``, or `DurableAgent.decide` in a
    launched DBOS process.
    """
    return f"kode.approval.{call_id}"


_AGENTS: dict[str, DurableAgent] = {}
"""The agents made in this process by workflow name (the last one made wins)."""


@dataclass(kw_only=True, slots=True)
class _Execution:
    """One execution of the workflow (the first, or one recovery): its token and its calls."""

    token: str = field(default_factory=lambda: uuid.uuid4().hex)
    """Recorded by *begin* steps: a recorded token of another execution means interrupted."""
    slots: dict[str, tuple[StepReservation | None, StepReservation]] = field(default_factory=dict)
    """The (begin, call) step reservations of the calls the last model turn asked for (no
    begin for a tool that only reads or is idempotent: it runs again after a crash anyway)."""
    agent: Agent | None = None


class _StepModel:
    """A model whose every response is one DBOS step (the deltas are not streamed)."""

    def __init__(self, inner: Model, execution: _Execution) -> None:
        self._inner = inner
        self._execution = execution
        self.name = inner.name

    def supports_output_format(self, *, tools: bool) -> bool:
        """What the wrapped model says (a model without the method enforces nothing)."""
        method = getattr(self._inner, "supports_output_format", None)
        return bool(method(tools=tools)) if callable(method) else False

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """Ask the wrapped model in a step (or replay the step), then draw the calls' steps."""
        inner = self._inner

        async def model_turn() -> ModelResponse:
            final: ModelResponse | None = None
            async for event in inner.stream(request):
                if isinstance(event, ModelResponse):
                    final = event
            if final is None:
                raise ModelError(f"model '{inner.name}' ended its stream without a response")
            return final

        response = await DBOS.run_step_async({"name": "kode.model_turn"}, model_turn)
        # Draw the calls' steps now, in call order, from workflow code: the turn may run
        # them concurrently, and their step ids must not depend on which starts first.
        agent = self._execution.agent
        for block in response.message.content:
            if isinstance(block, ToolUseContent):
                tool = agent.lookup(block.name) if agent is not None else None
                safe = tool is not None and any(rerun_safe(tool))
                begin = None if safe else DBOS.reserve_step()
                self._execution.slots[block.id] = (begin, DBOS.reserve_step())
        yield response


class DurableAgent:
    """An agent whose runs are DBOS workflows: a step per model turn and per tool call.

    Make it (and so register its workflow) before ``DBOS.launch()``, with the same `name` in
    every worker: a worker that starts after another stopped recovers the runs that were going
    on and continues each after its last completed step (see the "Durable runs" page).

    A call that was running when its worker stopped is run again only if its tool only reads
    or is idempotent; otherwise its result is an error saying it may have partly run
    (`INTERRUPTED_TEXT`).
    """

    def __init__(
        self,
        template: AgentTemplate | str,
        *,
        model: Model,
        name: str | None = None,
        options: Mapping[str, Any] | None = None,
        durable_approvals: bool = False,
        approval_timeout: float = 86_400.0,
        store: Store | str | None = None,
    ) -> None:
        """Register the workflow of this agent's runs.

        Args:
            template: The agent's template, or its id in the global template registry.
            model: The model; each response is checkpointed, so it is asked once per turn.
            name: The workflow's name, the same in every worker (default:
                ``kode.agent.<template id>``).
            options: Other keyword arguments of `Agent.create` (``deps``, ``policy``,
                ``approver``, ``hooks``, ``workspace``, ...); not ``store`` or ``model``.
            durable_approvals: A call that needs approval waits durably for a decision sent
                to its run (`decide`, or a `DBOSClient` on `approval_topic`), from any
                process, even after the worker restarted; instead of an ``approver``.
            approval_timeout: Seconds a call waits for its decision before it is denied.
            store: Where each run that ends with an answer is also written, as a session
                whose id is the workflow's (a `Store`, or a URL: a store made for the write
                and closed after, which any event loop DBOS runs the workflow on can use).
                `Agent.resume` and the session tools then see the finished run; a run going
                on is not in it. The write is a step: a recovered run writes it once.

        Raises:
            AgentError: `options` names ``store``, ``session_id`` or ``model``, or
                ``approver`` together with `durable_approvals`.
        """
        options = dict(options or {})
        refused = sorted(
            {"store", "session_id", "model", *(["approver"] if durable_approvals else [])}
            & options.keys()
        )
        if refused:
            raise AgentError(
                f"DurableAgent options cannot name {', '.join(refused)}: the run's state is "
                "DBOS's checkpoints (store= of DurableAgent also writes finished runs to a "
                "store), and the model is given as model=; pass the others (deps, policy, "
                "approver, hooks, workspace, ...)"
            )
        self.template = template
        self.model = model
        template_id = template if isinstance(template, str) else template.id
        self.template_id = template_id
        """The id of the agent's template (the template of the sessions it writes)."""
        self.name = name or f"kode.agent.{template_id}"
        """The workflow's name."""
        self._options = options
        self.durable_approvals = durable_approvals
        self.approval_timeout = approval_timeout
        self.store = store
        """Where finished runs are also written as sessions (None: nowhere)."""

        async def run_workflow(prompt: str, session_id: str | None = None) -> str:
            return await self._run_workflow(prompt, session_id)

        self._workflow: Callable[..., Coroutine[Any, Any, str]] = DBOS.workflow(name=self.name)(
            run_workflow
        )
        _AGENTS[self.name] = self

    @staticmethod
    def named(name: str) -> DurableAgent | None:
        """The `DurableAgent` made in this process with workflow name `name` (or template id).

        A scheduled prompt (`kode.durable.schedules`) names the agent that runs it this way.
        """
        return _AGENTS.get(name) or _AGENTS.get(f"kode.agent.{name}")

    @staticmethod
    def registered() -> list[DurableAgent]:
        """The durable agents made in this process, in the order they were made."""
        return list(_AGENTS.values())

    async def _run_workflow(self, prompt: str, session_id: str | None = None) -> str:
        execution = _Execution()
        options = dict(self._options)
        own = AgentHooks(pre_tool_use=[self._tool_step(execution)])
        given = options.pop("hooks", None)
        hooks = given.merged(own) if isinstance(given, AgentHooks) else own
        if self.durable_approvals:
            options["approver"] = self._wait_for_decision
        run_id = DBOS.workflow_id or uuid.uuid4().hex
        template = self._template()
        if session_id is not None:
            return await self._continue(
                prompt, session_id, run_id, template, execution, hooks, options
            )
        # The run's records, as kode writes them, kept in memory: the replay of a recovered
        # run makes them again; only the final write to `store` is a step.
        records = MemoryStore() if self.store is not None else None
        if records is not None:
            options.update(store=records, session_id=run_id)
        model = _StepModel(self.model, execution)
        agent = Agent.create(template, model=model, hooks=hooks, **options)
        execution.agent = agent
        async with agent:
            reply = await agent.send(prompt)
        if records is not None:
            await self._save_session(records, run_id, agent.template.id)
        return reply.text

    def _template(self) -> AgentTemplate:
        if isinstance(self.template, AgentTemplate):
            return self.template
        from kode.agent import templates

        return templates.get(self.template)

    async def _continue(
        self,
        prompt: str,
        session_id: str,
        run_id: str,
        template: AgentTemplate,
        execution: _Execution,
        hooks: AgentHooks,
        options: dict[str, Any],
    ) -> str:
        """Continue stored session `session_id`: read it (a step), run, append (a step)."""
        loaded = await self._load_session(session_id, run_id, template.id)
        model = _StepModel(self.model, execution)
        base = int(loaded["last_seq"])
        records = MemoryStore()
        await records.create(template=template.id, session_id=session_id)
        history = [record_adapter.validate_python(r) for r in loaded["records"]]
        if history:
            await records.append(session_id, history)
            agent = await Agent.resume(
                session_id, store=records, model=model, template=template, hooks=hooks, **options
            )
        else:  # a new session, or one made and still empty
            agent = Agent.create(
                template, model=model, hooks=hooks, store=records, session_id=session_id, **options
            )
        execution.agent = agent
        async with agent:
            reply = await agent.send(prompt)
        written = [e.record for e in (await records.load(session_id, after=base)).entries]
        await self._append_session(session_id, run_id, template.id, base, written)
        return reply.text

    def _target_store(self) -> Store | str:
        if self.store is None:
            raise AgentError(
                f"durable agent {self.name!r} keeps no session store: a run that continues a "
                "session needs one (DurableAgent(..., store=Store or URL))"
            )
        return self.store

    async def _load_session(self, session_id: str, run_id: str, template_id: str) -> dict[str, Any]:
        """The step ``kode.session_load``: the session's records, checked (or none: a new one)."""
        target = self._target_store()

        async def session_load() -> dict[str, Any]:
            await _check_partition(run_id, session_id)
            store = store_from(target)
            try:
                try:
                    log = await store.load(session_id)
                except SessionNotFoundError:
                    return {"last_seq": 0, "records": []}
                header = log.header
                if header.template != template_id:
                    raise AgentError(
                        f"session {session_id!r} runs template {header.template!r}, not "
                        f"{template_id!r}: continue it with a durable agent of template "
                        f"{header.template!r}, or name another session"
                    )
                state = log.state()
                unsettled = [c.id for c in state.open_calls] + state.client_waiting
                if header.status not in ("idle", "failed") or unsettled:
                    held = f" (calls not settled: {', '.join(unsettled)})" if unsettled else ""
                    raise AgentError(
                        f"session {session_id!r} is {header.status}{held} (a run of it is "
                        "going on, waits, or stopped in the middle): a durable run continues "
                        "a session at rest; finish that run first (Agent.resume)"
                    )
                now = time.time()
                if header.leased(now) and header.lease_owner != _OWNER:
                    raise AgentError(
                        f"session {session_id!r} is held by {header.lease_owner} until "
                        f"{header.lease_expires:.0f} (an agent has it open): close that agent "
                        "first"
                    )
                return {
                    "last_seq": header.last_seq,
                    "records": [e.record.model_dump(mode="json") for e in log.entries],
                }
            finally:
                if isinstance(target, str):
                    await store.aclose()

        loaded: dict[str, Any] = await DBOS.run_step_async(
            {"name": "kode.session_load"}, session_load
        )
        return loaded

    async def _append_session(
        self,
        session_id: str,
        run_id: str,
        template_id: str,
        base: int,
        written: list[SessionRecord],
    ) -> None:
        """The step ``kode.session_save`` of a run that continued a session: append once."""
        target = self._target_store()
        batch: list[SessionRecord] = [MetadataSet(key=RUN_KEY, value=run_id), *written]

        async def session_save() -> int:
            store = store_from(target)
            try:
                return await _append_once(store, session_id, run_id, template_id, base, batch)
            finally:
                if isinstance(target, str):
                    await store.aclose()

        await DBOS.run_step_async({"name": "kode.session_save"}, session_save)

    async def _save_session(self, records: MemoryStore, run_id: str, template_id: str) -> None:
        written = [entry.record for entry in (await records.load(run_id)).entries]
        target = self.store
        assert target is not None

        async def session_save() -> int:
            store = store_from(target)
            try:
                lease, last = await start_session(
                    store, run_id, template=template_id, records=written
                )
            except SessionExistsError:
                return 0  # an earlier attempt of this step wrote it before its checkpoint
            else:
                await store.release(lease)
                return last
            finally:
                if isinstance(target, str):
                    await store.aclose()

        await DBOS.run_step_async({"name": "kode.session_save"}, session_save)

    def _tool_step(
        self, execution: _Execution
    ) -> Callable[[ToolUseContent, ToolContext[Any]], Coroutine[Any, Any, PreToolUseOutcome]]:
        async def pre_tool_use(call: ToolUseContent, ctx: ToolContext[Any]) -> PreToolUseOutcome:
            slots = execution.slots.pop(call.id, None)
            agent = execution.agent
            tool = agent.lookup(call.name) if agent is not None else None
            if slots is None or agent is None or tool is None:
                return None  # not a call of a checkpointed turn: the pipeline runs it
            begin, step = slots
            token = execution.token

            async def tool_begin() -> str:
                return token

            interrupted = False
            if begin is not None:  # a tool that does not run again after a crash
                started_by = await begin.run_async(
                    {"name": f"kode.tool_begin.{call.name}"}, tool_begin
                )
                interrupted = started_by != token
            arguments = dict(call.input) if isinstance(call.input, dict) else call.input
            timeout = agent.template.tool_timeout

            async def tool_call() -> ToolResult:
                if interrupted:
                    return error_result(
                        INTERRUPTED_TEXT.format(name=call.name),
                        type=ToolErrorType.EXECUTION_FAILED,
                    )
                return await tool.run(arguments, ctx, default_timeout=timeout)

            result = await step.run_async({"name": f"kode.tool_call.{call.name}"}, tool_call)
            return Respond(result=result)

        return pre_tool_use

    async def _wait_for_decision(self, request: ApprovalRequest) -> ApprovalDecision:
        # recv is checkpointed: a recovered run gets the decision it had, or waits again.
        sent = await DBOS.recv_async(
            approval_topic(request.call_id), timeout_seconds=self.approval_timeout
        )
        if sent is None:
            return ApprovalDecision(
                decision="deny",
                note=f"No decision arrived within {self.approval_timeout:g} s.",
            )
        if isinstance(sent, ApprovalDecision):
            return sent
        try:
            return ApprovalDecision(**sent)
        except (TypeError, ValueError) as exc:
            return ApprovalDecision(
                decision="deny",
                note=f"The decision sent was not one ({exc}); send "
                "{'decision': 'allow' | 'deny' | 'allow_always', 'note': '...'}.",
            )

    @staticmethod
    async def decide(
        workflow_id: str,
        call_id: str,
        decision: Literal["allow", "deny", "allow_always"],
        *,
        note: str = "",
    ) -> None:
        """Send the decision on a call waiting in run `workflow_id` (a launched DBOS process).

        A process that does not launch DBOS sends the same dict with a ``DBOSClient``
        (see `approval_topic`).
        """
        message = {"decision": decision, "note": note}
        await DBOS.send_async(workflow_id, message, topic=approval_topic(call_id))

    async def enqueue(
        self,
        queue: Queue,
        prompt: str,
        *,
        workflow_id: str | None = None,
        session_id: str | None = None,
    ) -> WorkflowHandleAsync[str]:
        """Put a run on a DBOS queue, for the workers that listen to it to run.

        At most the queue's concurrency limit run at once. A client without the agent
        enqueues by name:
        ``DBOSClient.enqueue({"queue_name": ..., "workflow_name": agent.name}, prompt)``.

        Args:
            queue: The queue; with `session_id`, one partitioned with a partition
                concurrency of 1 (``DBOS.register_queue(name, partition_concurrency=1)``).
            prompt: The user's message.
            workflow_id: The workflow's id (default: a new one).
            session_id: Continue this session of the agent's store (see `start`).

        Raises:
            AgentError: `session_id` is given and the agent has no store, or the queue is not
                partitioned with a partition concurrency of 1.
        """
        if session_id is not None:
            self._target_store()
            await _check_queue(queue)
        with (
            SetWorkflowID(workflow_id) if workflow_id is not None else nullcontext(),
            SetEnqueueOptions(queue_partition_key=session_id)
            if session_id is not None
            else nullcontext(),
        ):
            return await queue.enqueue_async(self._workflow, prompt, session_id)

    async def start(
        self, prompt: str, *, workflow_id: str | None = None, session_id: str | None = None
    ) -> WorkflowHandleAsync[str]:
        """Start a run as a workflow and return its handle (status, result).

        Args:
            prompt: The user's message.
            workflow_id: The workflow's id (default: a new one); starting an id that exists
                returns that workflow's handle rather than running it again.
            session_id: Continue this session of the agent's `store`: the run's first step
                reads its records, the run goes on from them (the model sees the whole
                conversation) and its last step appends the new records, the prompt first. A
                session not in the store yet is made (with the agent's template). The run is
                put on `SESSION_QUEUE`, in the session's partition: runs of one session go on
                one at a time, in order.

        Raises:
            AgentError: `session_id` is given and the agent has no `store`. The run itself
                fails (its handle's result raises) when the session runs another template, is
                not at rest (a run of it is going on or waits) or is open in an `Agent`.
        """
        if session_id is not None:
            self._target_store()
            queue = await session_queue()
            return await self.enqueue(queue, prompt, workflow_id=workflow_id, session_id=session_id)
        if workflow_id is None:
            return await DBOS.start_workflow_async(self._workflow, prompt)
        with SetWorkflowID(workflow_id):
            return await DBOS.start_workflow_async(self._workflow, prompt)

    async def run(
        self, prompt: str, *, workflow_id: str | None = None, session_id: str | None = None
    ) -> str:
        """Run the agent on `prompt` as a workflow and return its final answer's text.

        With `session_id`, the run continues that stored session (see `start`).
        """
        handle = await self.start(prompt, workflow_id=workflow_id, session_id=session_id)
        return await handle.get_result()

    @staticmethod
    async def retrieve(workflow_id: str) -> WorkflowHandleAsync[str]:
        """The handle of a run started earlier, by any process (its status, its result)."""
        return await DBOS.retrieve_workflow_async(workflow_id)


async def session_queue() -> Queue:
    """`SESSION_QUEUE`, registered in the system database if it is not yet (DBOS launched).

    Raises:
        AgentError: a queue of that name exists without a partition concurrency of 1.
    """
    queue = await DBOS.retrieve_queue_async(SESSION_QUEUE)
    if queue is None:
        queue = await DBOS.register_queue_async(
            SESSION_QUEUE, partition_concurrency=1, on_conflict="never_update"
        )
    await _check_queue(queue)
    return queue


async def _check_queue(queue: Queue) -> None:
    if await queue.get_partition_concurrency_async() != 1:
        raise AgentError(
            f"queue {queue.name!r} is not partitioned with a partition concurrency of 1: runs "
            "that continue a session must go on one, keyed by the session id, so that two runs "
            "never continue one session at once (DBOS.register_queue(name, "
            f"partition_concurrency=1), or leave the queue out: {SESSION_QUEUE!r} is one)"
        )


async def _check_partition(run_id: str, session_id: str) -> None:
    """Refuse a run that continues a session outside the session's partition of a queue."""
    status = await DBOS.get_workflow_status_async(run_id)
    queue_name = status.queue_name if status is not None else None
    key = status.queue_partition_key if status is not None else None
    queue = await DBOS.retrieve_queue_async(queue_name) if queue_name else None
    if queue is None or key != session_id or await queue.get_partition_concurrency_async() != 1:
        raise AgentError(
            f"run {run_id!r} continues session {session_id!r} but was not queued in that "
            f"session's partition of a queue with a partition concurrency of 1 (queue "
            f"{queue_name!r}, partition {key!r}): start it with DurableAgent.start/run/"
            f"enqueue(session_id=...), or enqueue it by name on {SESSION_QUEUE!r} with "
            "queue_partition_key set to the session id"
        )


async def _append_once(
    store: Store,
    session_id: str,
    run_id: str,
    template_id: str,
    base: int,
    batch: list[SessionRecord],
) -> int:
    """Append `batch` after record `base` of the session (made if missing), exactly once.

    An earlier attempt of the step that appended before its checkpoint left `RUN_KEY` with
    this run's id after `base`: nothing is written again. Records after `base` without it were
    written by someone else meanwhile: the batch would not follow what the run's model saw,
    so it is refused.
    """
    if base == 0:
        try:
            lease, last = await start_session(
                store, session_id, template=template_id, owner=_OWNER, records=batch
            )
        except SessionExistsError:
            pass  # it has records now: written by an earlier attempt, or by someone else
        else:
            await store.release(lease)
            return last
    try:
        lease = await store.acquire(session_id, owner=_OWNER)
    except SessionLeaseError as exc:
        raise AgentError(
            f"run {run_id!r} cannot append its records to session {session_id!r}: {exc}"
        ) from None
    try:
        header = await store.get(session_id)
        if header.last_seq != base:
            later = await store.load(session_id, after=base, types={"metadata"})
            for entry in later.entries:
                record = entry.record
                if isinstance(record, MetadataSet) and record.key == RUN_KEY:
                    if record.value == run_id:
                        return header.last_seq  # an earlier attempt of this step wrote them
            raise AgentError(
                f"session {session_id!r} changed while run {run_id!r} went on: records "
                f"{base + 1}..{header.last_seq} were written by someone else, so the run's "
                f"{len(batch)} records were not appended (its model did not see those)"
            )
        return await store.append(session_id, batch, lease=lease)
    finally:
        await store.release(lease)
