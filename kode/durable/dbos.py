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
one last step (``DurableAgent(store=...)``).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from dbos import DBOS, Queue, SetWorkflowID, StepReservation, WorkflowHandleAsync

from kode.agent.agent import Agent, AgentError
from kode.agent.hooks import AgentHooks, PreToolUseOutcome, Respond
from kode.agent.permissions import ApprovalDecision, ApprovalRequest
from kode.agent.session import rerun_safe
from kode.agent.template import AgentTemplate
from kode.models.base import Model, ModelError, ModelEvent, ModelRequest, ModelResponse
from kode.models.messages import ToolUseContent
from kode.sessions import MemoryStore, SessionExistsError, Store, store_from
from kode.sessions.store import start_session
from kode.tools.context import ToolContext
from kode.tools.errors import ToolErrorType
from kode.tools.results import ToolResult, error_result

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine

__all__ = ["INTERRUPTED_TEXT", "DurableAgent", "approval_topic"]

INTERRUPTED_TEXT = (
    "Tool '{name}' was interrupted by a worker restart while it ran, and was not run again: "
    "it may have partly run. Check what it was doing before calling it again."
)
"""The error result of a call that was running when its worker stopped (``{name}``: the tool)."""


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
        self.name = name or f"kode.agent.{template_id}"
        """The workflow's name."""
        self._options = options
        self.durable_approvals = durable_approvals
        self.approval_timeout = approval_timeout
        self.store = store
        """Where finished runs are also written as sessions (None: nowhere)."""

        async def run_workflow(prompt: str) -> str:
            return await self._run_workflow(prompt)

        self._workflow: Callable[[str], Coroutine[Any, Any, str]] = DBOS.workflow(name=self.name)(
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

    async def _run_workflow(self, prompt: str) -> str:
        execution = _Execution()
        options = dict(self._options)
        own = AgentHooks(pre_tool_use=[self._tool_step(execution)])
        given = options.pop("hooks", None)
        hooks = given.merged(own) if isinstance(given, AgentHooks) else own
        if self.durable_approvals:
            options["approver"] = self._wait_for_decision
        run_id = DBOS.workflow_id or uuid.uuid4().hex
        # The run's records, as kode writes them, kept in memory: the replay of a recovered
        # run makes them again; only the final write to `store` is a step.
        records = MemoryStore() if self.store is not None else None
        if records is not None:
            options.update(store=records, session_id=run_id)
        agent = Agent.create(
            self.template, model=_StepModel(self.model, execution), hooks=hooks, **options
        )
        execution.agent = agent
        async with agent:
            reply = await agent.send(prompt)
        if records is not None:
            await self._save_session(records, run_id, agent.template.id)
        return reply.text

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
        self, queue: Queue, prompt: str, *, workflow_id: str | None = None
    ) -> WorkflowHandleAsync[str]:
        """Put a run on a DBOS queue, for the workers that listen to it to run.

        At most the queue's concurrency limit run at once. A client without the agent
        enqueues by name:
        ``DBOSClient.enqueue({"queue_name": ..., "workflow_name": agent.name}, prompt)``.
        """
        if workflow_id is None:
            return await queue.enqueue_async(self._workflow, prompt)
        with SetWorkflowID(workflow_id):
            return await queue.enqueue_async(self._workflow, prompt)

    async def start(
        self, prompt: str, *, workflow_id: str | None = None
    ) -> WorkflowHandleAsync[str]:
        """Start a run as a workflow and return its handle (status, result).

        Args:
            prompt: The user's message.
            workflow_id: The workflow's id (default: a new one); starting an id that exists
                returns that workflow's handle rather than running it again.
        """
        if workflow_id is None:
            return await DBOS.start_workflow_async(self._workflow, prompt)
        with SetWorkflowID(workflow_id):
            return await DBOS.start_workflow_async(self._workflow, prompt)

    async def run(self, prompt: str, *, workflow_id: str | None = None) -> str:
        """Run the agent on `prompt` as a workflow and return its final answer's text."""
        handle = await self.start(prompt, workflow_id=workflow_id)
        return await handle.get_result()

    @staticmethod
    async def retrieve(workflow_id: str) -> WorkflowHandleAsync[str]:
        """The handle of a run started earlier, by any process (its status, its result)."""
        return await DBOS.retrieve_workflow_async(workflow_id)
