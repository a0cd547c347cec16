"""`AgentRun`: one ``send`` or ``stream`` of an agent, from the prompt to `Done`.

This module owns the loop of one run: send the conversation and the tools to the model, run
every ``tool_use`` of the reply through the pipeline (`kode.agent.pipeline`), put the results
back in one user message in call order, and repeat until the model answers without tools. A
run also owns what only exists while it goes: the approvals waiting for `Agent.decide`, the
listener its events go to, the cancel scope `Agent.interrupt` cancels, and the event loop it
runs on. What outlives a run (the history, the call records, client calls waiting for
results, usage) belongs to the agent's `Session`, which the run changes through its methods
and commits before each step that follows a change.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

import anyio
import anyio.from_thread
import anyio.lowlevel

from kode.agent.blocks import cancelled_result, results_message
from kode.agent.compaction import Compactor
from kode.agent.context import ContextView
from kode.agent.errors import AgentError
from kode.agent.events import (
    ApprovalRequired,
    Done,
    ErrorEvent,
    PartialOutput,
    TextDelta,
    ThinkingDelta,
    ToolEnd,
    TurnEnd,
    jsonable_arguments,
)
from kode.agent.output import (
    OUTPUT_TOOL_NAME,
    InvalidOutput,
    OutputValue,
    PartialReader,
    RunOutput,
)
from kode.agent.permissions import ApprovalDecision, ApprovalRequest
from kode.agent.pipeline import CallOutcome, duplicate_result, run_turn_calls
from kode.agent.ports import EventCallbackFunc
from kode.agent.session import HistoryView
from kode.agent.state import ToolCallStatus
from kode.agent.subagents import ParentApprovals
from kode.agent.text import clean_message
from kode.models.base import (
    ModelError,
    ModelRequest,
    ModelResponse,
    ModelRetry,
    ModelSettings,
    ToolInputDelta,
)
from kode.models.messages import (
    ContentBlock,
    Message,
    TextContent,
    ToolResultContent,
    ToolUseContent,
    Usage,
)
from kode.tools.errors import ToolErrorType
from kode.tracing import trace_headers

if TYPE_CHECKING:
    from kode.agent.ports import AgentLike

__all__ = ["AgentRun", "EventCallbackFunc"]


class AgentRun:
    """One run of an agent: made by `Agent.send` and `Agent.stream`, used once.

    Args:
        agent: The agent to run.
        emit: Where the run's events go, as they happen.
        interactive: Whether someone is listening who can answer approvals with `decide`.
    """

    def __init__(self, agent: AgentLike, emit: EventCallbackFunc, *, interactive: bool) -> None:
        self.agent = agent
        """The agent this run belongs to."""
        self.emit = emit
        """Where the run's events go."""
        self.interactive = interactive
        """Whether approvals can be asked through events (someone answers with `decide`)."""
        self.loop_thread = threading.get_ident()
        """The thread of the event loop the run is on (where it was made, until it starts)."""
        self.abandoned = False
        """Whether the stream reading this run was left early (the run is being cancelled)."""
        self.ended = anyio.Event()
        """Set when the run has ended."""
        self._token: anyio.lowlevel.EventLoopToken | None = None
        self._scope: anyio.CancelScope | None = None
        self._interrupt_pending = False  # interrupt() came before the run's cancel scope
        self._approvals: dict[str, tuple[anyio.Event, list[ApprovalDecision], ApprovalRequest]] = {}
        self._fatal: BaseException | None = None  # a tool's KeyboardInterrupt or SystemExit
        self.poll_interval = 0.2
        """Seconds between reads of the store for decisions made in other processes."""
        self._context: ContextView | None = None  # made by the first request, if a policy asks
        self._compactor: Compactor | None = None  # made by the first compaction due
        tracing = agent.tracing
        self.tracing = tracing if tracing is not None and tracing.active() else None
        """Its spans and metrics; `None` when the agent is not traced, or nothing would record
        them (no tracer or meter provider configured): then tracing costs nothing more."""

    # --- from other tasks and threads --------------------------------------------------------

    def on_loop(self) -> bool:
        """Whether the caller is on the thread of the event loop running this run."""
        return threading.get_ident() == self.loop_thread

    def interrupt(self) -> None:
        """Cancel the run (from any thread); see `Agent.interrupt`."""
        if not self.on_loop() and self._token is not None:
            anyio.from_thread.run_sync(self.interrupt, token=self._token)
        elif self._scope is not None:
            self._scope.cancel()
        else:  # the run has started but not yet opened its cancel scope
            self._interrupt_pending = True

    def decide(self, call_id: str, decision: ApprovalDecision) -> bool:
        """Answer the approval a call waits for (from any thread); whether one was waiting."""
        if not self.on_loop() and self._token is not None:
            return anyio.from_thread.run_sync(self.decide, call_id, decision, token=self._token)
        waiting = self._approvals.get(call_id)
        if waiting is None:
            return False
        event, box, _ = waiting
        box.append(decision)
        event.set()
        return True

    def abort(self, exc: BaseException) -> None:
        """End the run because a tool raised `exc` (KeyboardInterrupt, SystemExit).

        Raised in the task of one call, it would leave asyncio's event loop at once, before
        the turn's calls are answered. The run is cancelled instead; once every call has its
        result, `exc` is raised again from the run's own task.
        """
        if self._fatal is None:
            self._fatal = exc
        if self._scope is not None:
            self._scope.cancel()

    @property
    def waiting_for_approval(self) -> list[str]:
        """The ids of the calls waiting for `decide`."""
        return list(self._approvals)

    def approval_request(self, call_id: str) -> ApprovalRequest | None:
        """The request of a call waiting for `decide`, or `None`."""
        waiting = self._approvals.get(call_id)
        return None if waiting is None else waiting[2]

    async def ask(self, request: ApprovalRequest) -> ApprovalDecision:
        """Ask for approval: the agent's approver, or an `ApprovalRequired` event and `decide`."""
        agent = self.agent
        approver = agent.approver
        if approver is not None:
            if isinstance(approver, ParentApprovals) and agent.session.store is not None:
                return await approver.ask_with_store(request, self)  # a spawned sub-agent
            return await approver(request)
        event = anyio.Event()
        box: list[ApprovalDecision] = []
        self._approvals[request.call_id] = (event, box, request)
        session = agent.session
        session.set_status("awaiting_approval")
        await self.commit()
        self.emit(
            ApprovalRequired(
                call_id=request.call_id,
                name=request.tool_name,
                input=jsonable_arguments(request.input),
                reason=request.reason,
                description=request.description,
                locations=list(request.locations),
                diff=request.diff,
                pattern=request.pattern,
                server=request.server,
                rule=request.rule,
            )
        )
        try:
            if session.store is None:
                await event.wait()
            else:  # a decision may also come from another process, through the store
                after = session.last_seq
                while not event.is_set():
                    with anyio.move_on_after(self.poll_interval):
                        await event.wait()
                    if event.is_set():
                        break
                    await session.poll_decisions(after)
                    found = session.decisions.get(request.call_id)
                    if found is not None:
                        box.append(
                            ApprovalDecision(
                                decision=found.decision,
                                note=found.note,
                                scope=found.scope,
                                pattern=found.pattern,
                                input=found.input,
                            )
                        )
                        break
        finally:
            self._approvals.pop(request.call_id, None)
            session.set_status("awaiting_approval" if self._approvals else "running")
        return box[0]

    async def commit(self) -> None:
        """Write the session's new records before the next step (a no-op without a store).

        When the store fails, or another process took the session's lease, the run ends:
        every call gets its result, then `send` raises the store's error.
        """
        try:
            await self.agent.session.commit()
        except Exception as exc:
            if self._scope is None:
                raise
            self.abort(exc)
            await anyio.lowlevel.checkpoint()  # the cancellation abort() asked for
            raise

    # --- the loop ------------------------------------------------------------------------------

    async def execute(self, prompt: str | None) -> Done | ErrorEvent:
        """Run the agent on `prompt`; the last event, which has also been emitted."""
        self._token = anyio.lowlevel.current_token()
        self.loop_thread = threading.get_ident()
        tracing = self.tracing
        try:
            if tracing is None:
                result = await self._kept_loop(prompt)
            else:  # the run inside its invoke_agent span (continuing a stopped run's trace)
                session = self.agent.session
                stopped, session.trace_context = session.trace_context, None
                result = await tracing.invoke_agent(
                    self.agent, lambda: self._kept_loop(prompt), resume_from=stopped
                )
        finally:
            self.ended.set()
        self.emit(result)
        return result

    async def _kept_loop(self, prompt: str | None) -> Done | ErrorEvent:
        """`_loop`; with a store, the session's lease is renewed meanwhile.

        On asyncio the event loop's timer renews it (`Session.lease_timer`), elsewhere one task
        for the whole run (not one per turn), during a long call or a long wait for approval;
        commits renew it too.
        """
        session = self.agent.session
        if session.store is None:
            return await self._loop(prompt)
        timer = session.lease_timer()
        if timer is not None:
            try:
                return await self._loop(prompt)
            finally:
                timer.stop()
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(session.keep_lease)
                try:
                    return await self._loop(prompt)
                finally:
                    tg.cancel_scope.cancel()
        except BaseExceptionGroup as group:  # the loop's own error (keep_lease raises none)
            if len(group.exceptions) != 1:
                raise
            error = group.exceptions[0]
            raise error from error.__cause__
        raise AssertionError("unreachable: the loop returned or raised")  # pragma: no cover

    async def _loop(self, prompt: str | None) -> Done | ErrorEvent:
        agent = self.agent
        session = agent.session
        await session.prepare()  # the first commit creates the session and takes its lease
        if session.store is not None and (self.tracing is not None or session.trace_kept):
            # for a resume in another process (an untraced run removes an earlier run's)
            session.keep_trace(trace_headers() if self.tracing is not None else {})
        resumed, session.resumed = session.resumed, False
        if resumed and session.open_turn():
            # A process stopped in the middle of a turn: its calls are settled by the resume
            # rules (see Session.settle_for_resume) before anything else.
            session.set_status("running")
            if await self._resume_turn():
                session.set_status("idle")
                await self._commit_at_end()
                return Done(text="", usage=Usage(), turns=0, interrupted=True)
        first = session.client_calls.take(prompt)
        if isinstance(first, str):
            return ErrorEvent(message=first)
        if not first and not resumed:
            return ErrorEvent(message="nothing to send: give a prompt")
        if first:
            # After a run that ended on a user message (interrupted, failed model, turn
            # limit), the blocks join it, so roles keep alternating as providers require.
            session.add_user_blocks(first)
        session.set_status("running")
        await session.commit()
        template = agent.template
        settings = template.settings()  # once per run: the template cannot change during it
        output = RunOutput.start(
            template.output_type,
            template.output_mode,
            template.output_retries,
            agent.model,
            tools=bool(agent.tools),
        )
        if output is not None and output.uses_tool and agent.lookup(OUTPUT_TOOL_NAME):
            session.set_status("failed")
            await self.commit()
            return ErrorEvent(
                message=f"the agent has a tool named {OUTPUT_TOOL_NAME!r}, the name of the "
                "tool that gives the typed output (output_type): rename the tool, or use "
                "output_mode='native' with a model that supports it"
            )
        used = Usage()
        limits = template.limits
        ran = 0  # tool calls this run ran (for limits.tool_calls)
        retried: dict[str, int] = {}  # ToolRetry answers this run, by tool (for its retries)
        turn = 0
        response: ModelResponse | None = None
        recorded = False  # whether `response`'s message is in the history
        calls: Sequence[ToolUseContent] = ()  # the recorded turn's calls, until answered
        outcomes: list[CallOutcome | None] = []
        # One cancel scope for the whole run, which `interrupt` cancels; after it, the turn's
        # variables say where it hit.
        with anyio.CancelScope() as scope:
            self._scope = scope
            try:
                if self._interrupt_pending:
                    scope.cancel()
                    await anyio.lowlevel.checkpoint()
                for turn in range(1, template.max_turns + 1):
                    response = None
                    recorded = False
                    calls = ()
                    outcomes = []
                    hit = limits.spent(used) if turn > 1 and limits.counts_tokens else None
                    sending: Sequence[Message] = ()
                    if hit is None:
                        sending = self._history()
                        if self._context is not None and self._context.over_budget:
                            if self._compactor is None:
                                self._compactor = Compactor(self.agent, self.emit, self.tracing)
                            spent = await self._compactor.compact(
                                self._context, settings, self.commit
                            )
                            sending = self._history()
                            used += spent  # the summary's tokens count as the run's
                            if limits.counts_tokens and spent != Usage():
                                hit = limits.spent(used)
                    if hit is not None:
                        session.set_status("failed")
                        await self.commit()
                        return ErrorEvent(message=str(hit), error=hit)
                    try:
                        response = await self._model_turn(settings, sending, output)
                    except ModelError as exc:
                        session.set_status("failed")
                        await self.commit()
                        return ErrorEvent(message=f"the model failed: {exc}", error=exc)
                    if response is None:
                        session.set_status("failed")
                        await self.commit()
                        return ErrorEvent(message="the model ended its stream without a response")
                    turn_calls, duplicates = session.add_reply(response.message, response.usage)
                    recorded = True
                    calls = turn_calls
                    used += response.usage
                    verdict = output.judge(response.message.text, calls) if output else None
                    failure = (
                        output.exhausted(verdict)
                        if output is not None and isinstance(verdict, InvalidOutput)
                        else None
                    )
                    if (not calls and verdict is None) or isinstance(verdict, OutputValue):
                        session.set_status("idle")
                    if not calls or verdict is not None:  # else: written with the calls' first step
                        await self.commit()
                    self.emit(
                        TurnEnd(
                            turn=turn,
                            stop_reason=response.stop_reason,
                            usage=response.usage,
                            context_edits=response.context_edits,
                        )
                    )
                    if not calls and verdict is None:
                        return Done(text=response.message.text, usage=used, turns=turn)
                    if verdict is not None and (isinstance(verdict, OutputValue) or failure):
                        # The run ends with its output, or without a valid one.
                        if calls:
                            answers = self._output_answers(calls, verdict)
                            session.add_message(Message(role="user", content=answers))
                            calls = ()
                        if isinstance(verdict, OutputValue):
                            await self.commit()
                            text = response.message.text
                            return Done(text=text, usage=used, turns=turn, output=verdict.value)
                        session.set_status("failed")
                        await self.commit()
                        return ErrorEvent(message=failure or "")
                    if isinstance(verdict, InvalidOutput) and verdict.index is None:
                        session.add_message(Message.user(verdict.message))  # no call to answer
                        await self.commit()
                        continue
                    outcomes = [None] * len(calls)
                    if isinstance(verdict, InvalidOutput) and verdict.index is not None:
                        index = verdict.index
                        outcomes[index] = self._settle(calls[index], verdict.message, error=True)
                    for index, original in duplicates.items():
                        outcomes[index] = duplicate_result(self, calls[index], original)
                    to_run = outcomes.count(None)
                    if (hit := limits.calls_over(ran, to_run)) is not None:
                        self._not_run(calls, outcomes, str(hit))
                        session.add_message(results_message(self._answer(calls, outcomes)))
                        calls = ()
                        session.set_status("failed")
                        await self.commit()
                        return ErrorEvent(message=str(hit), error=hit)
                    ran += to_run
                    await self._run_calls(calls, outcomes)
                    if self._fatal is not None:  # a tool's KeyboardInterrupt or SystemExit
                        raise self._fatal
                    pending = [
                        call
                        for call, outcome in zip(calls, outcomes, strict=True)
                        if outcome is not None and outcome.pending
                    ]
                    if pending:
                        session.wait_for_client(calls, outcomes)
                        session.set_status("awaiting_client")
                        await self.commit()
                        return Done(
                            text=response.message.text,
                            usage=used,
                            turns=turn,
                            pending_calls=tuple(c.id for c in pending),
                        )
                    asked = self._retries_over(calls, outcomes, retried)
                    session.add_message(results_message(self._answer(calls, outcomes)))
                    calls = ()
                    if asked is not None:
                        session.set_status("failed")
                        await self.commit()
                        return ErrorEvent(message=str(asked), error=asked)
                    await self.commit()
            except BaseException as exc:
                # `interrupt`, a cancellation from outside (a timeout around send(), a stream
                # left early), or a KeyboardInterrupt from a tool: answer the calls of the
                # turn, so no tool_use is left without its tool_result.
                if calls:
                    if len(outcomes) != len(calls):  # hit before the calls started
                        outcomes = [None] * len(calls)
                    blocks = self._answer(calls, outcomes, interrupted=True)
                    session.add_message(Message(role="user", content=blocks))
                cancelled = isinstance(exc, anyio.get_cancelled_exc_class())
                session.set_status("idle" if cancelled and self._fatal is None else "failed")
                await self._commit_at_end()
                raise
            finally:
                self._scope = None
        if self._fatal is not None:
            session.set_status("failed")
            await self._commit_at_end()
            raise self._fatal
        if scope.cancelled_caught:
            text = response.message.text if response is not None and recorded else ""
            await self._commit_at_end()
            return Done(text=text, usage=used, turns=turn, interrupted=True)
        session.set_status("failed")
        await self._commit_at_end()
        return ErrorEvent(
            message=f"the agent reached its limit of {template.max_turns} turns without "
            "a final answer; raise max_turns in the template if the task needs more"
        )

    async def _model_turn(
        self,
        settings: ModelSettings,
        messages: Sequence[Message],
        output: RunOutput | None = None,
    ) -> ModelResponse | None:
        """Stream one model response, passing its text and thinking on as events."""
        agent = self.agent
        request = ModelRequest(
            system=agent.system_prompt,
            messages=messages,
            tools=agent.request_tools() if output is None else output.tools(agent.request_tools()),
            settings=settings,
            output=None if output is None else output.format,
            deferred=agent.request_deferred(),
            context_editing=policy.server_editing if (policy := agent.template.context) else None,
        )
        response: ModelResponse | None = None
        partial = PartialReader(output.spec) if output is not None and output.native else None
        calls: dict[str, PartialReader] = {}  # the output tool's calls, by id
        stream = agent.model.stream(request)
        if self.tracing is not None:  # the request inside its chat span
            stream = self.tracing.chat(agent, request, stream)
        async for event in stream:
            if isinstance(event, ModelResponse):
                response = event
            elif isinstance(event, TextDelta):
                self.emit(event)
                if partial is not None:
                    changed, value = partial.feed(event.text)
                    if changed:
                        self.emit(PartialOutput(output=value))
            elif isinstance(event, ToolInputDelta):
                if output is not None and output.uses_tool and event.name == OUTPUT_TOOL_NAME:
                    reader = calls.setdefault(event.id, PartialReader(output.spec))
                    changed, value = reader.feed(event.text)
                    if changed:
                        self.emit(PartialOutput(output=value))
            elif isinstance(event, ThinkingDelta):
                self.emit(event)
            elif isinstance(event, ModelRetry):
                self.emit(event)  # the model retries a failed request: say so
        if response is not None:
            response.message = clean_message(response.message)
        return response

    async def _run_calls(
        self, calls: Sequence[ToolUseContent], outcomes: list[CallOutcome | None]
    ) -> None:
        """Run a turn's calls (the lease is kept by `_kept_loop`)."""
        await run_turn_calls(self, calls, outcomes)

    async def _commit_at_end(self) -> None:
        """Write what the run's end changed, even while cancelled.

        A store that fails here has failed the run already (that error is raised).
        """
        with anyio.CancelScope(shield=True):
            try:
                await self.agent.session.commit()
            except Exception as exc:
                if self._fatal is None:
                    self._fatal = exc

    async def _resume_turn(self) -> bool:
        """Answer the turn a stopped process left open, by the resume rules.

        Returns whether the run was interrupted meanwhile.
        """
        session = self.agent.session
        calls = session.open_turn()
        outcomes: list[CallOutcome | None] = []
        for call in calls:
            block = session.settle_for_resume(call)
            if block is None:
                outcomes.append(None)
            else:
                record = session.records.get(call.id)
                status = record.status if record is not None else "failed"
                outcomes.append(CallOutcome(block=block, status=status))
        await session.commit()
        with anyio.CancelScope() as scope:
            self._scope = scope
            try:
                if self._interrupt_pending:
                    scope.cancel()
                await self._run_calls(calls, outcomes)
            finally:
                self._scope = None
        stopped = self._fatal is not None or scope.cancelled_caught
        session.add_message(
            Message(role="user", content=self._answer(calls, outcomes, interrupted=stopped))
        )
        if self._fatal is not None:
            session.set_status("failed")
            await self._commit_at_end()
            raise self._fatal
        await self._commit_at_end()
        if self._fatal is not None:
            raise self._fatal
        return scope.cancelled_caught

    def _settle(self, call: ToolUseContent, text: str, *, error: bool) -> CallOutcome:
        """The outcome of a call the agent answers itself (the output tool's, or one not run)."""
        block = ToolResultContent(
            tool_use_id=call.id, content=[TextContent(text=text)], is_error=error
        )
        status: ToolCallStatus = "failed" if error else "done"
        error_type = ToolErrorType.INVALID_TOOL_PARAMS.value if error else None
        self.agent.session.update_call(call, status, result=block, error_type=error_type)
        self.emit(
            ToolEnd(
                call_id=call.id,
                name=call.name.strip(),
                duration=0.0,
                is_error=error,
                result=block,
                status=status,
            )
        )
        return CallOutcome(block=block, status=status)

    def _history(self) -> Sequence[Message]:
        """The history the next request sends: whole, or under the template's context policy."""
        agent = self.agent
        policy = agent.template.context
        if policy is None:
            return HistoryView(agent.session.messages)
        if self._context is None:
            self._context = ContextView(policy)
        session = agent.session
        return self._context.messages(session.messages, session.compaction)

    def _retries_over(
        self,
        calls: Sequence[ToolUseContent],
        outcomes: Sequence[CallOutcome | None],
        retried: dict[str, int],
    ) -> AgentError | None:
        """Count the turn's `ToolRetry` answers; the error when a tool asked past its budget."""
        over: AgentError | None = None
        records = self.agent.session.records
        for call, outcome in zip(calls, outcomes, strict=True):
            if outcome is None or not outcome.block.is_error:
                continue
            record = records.get(call.id)
            if record is None or record.error_type != ToolErrorType.RETRY:
                continue
            name = call.name.strip()
            count = retried[name] = retried.get(name, 0) + 1
            tool = self.agent.lookup(name)
            budget = tool.retries if tool is not None else 0
            if count > budget and over is None:
                said = " ".join(b.text for b in outcome.block.content if isinstance(b, TextContent))
                over = AgentError(
                    f"tool {name!r} asked for a retry {count} times in this run, more than its "
                    f"retries={budget} allow (its last message: {said!r}); give it more with "
                    "define_tool(retries=...), or send again to go on"
                )
        return over

    def _not_run(
        self, calls: Sequence[ToolUseContent], outcomes: list[CallOutcome | None], why: str
    ) -> None:
        """Answer the calls a run limit keeps from running (cancelled, saying why)."""
        text = f"Not run: {why}."
        for index, call in enumerate(calls):
            if outcomes[index] is not None:
                continue
            block = ToolResultContent(
                tool_use_id=call.id, content=[TextContent(text=text)], is_error=True
            )
            self.agent.session.update_call(
                call, "cancelled", result=block, error_type=ToolErrorType.CANCELLED.value
            )
            self.emit(
                ToolEnd(
                    call_id=call.id,
                    name=call.name.strip(),
                    duration=0.0,
                    is_error=True,
                    result=block,
                    status="cancelled",
                )
            )
            outcomes[index] = CallOutcome(block=block, status="cancelled")

    def _output_answers(
        self, calls: Sequence[ToolUseContent], verdict: OutputValue | InvalidOutput
    ) -> list[ContentBlock]:
        """The results of a turn that ends the run with its output (or without one)."""
        outcomes: list[CallOutcome | None] = []
        for index, call in enumerate(calls):
            if index == verdict.index and isinstance(verdict, OutputValue):
                outcomes.append(self._settle(call, "The final output was accepted.", error=False))
            elif index == verdict.index and isinstance(verdict, InvalidOutput):
                outcomes.append(self._settle(call, verdict.message, error=True))
            else:
                text = (
                    f"Tool '{call.name.strip()}' was not run: the run ended with the final "
                    f"output given by '{OUTPUT_TOOL_NAME}' in the same turn."
                )
                outcomes.append(self._settle(call, text, error=True))
        return self._answer(calls, outcomes)

    def _answer(
        self,
        calls: Sequence[ToolUseContent],
        outcomes: Sequence[CallOutcome | None],
        *,
        interrupted: bool = False,
    ) -> list[ContentBlock]:
        """The ``tool_result`` blocks for a turn's calls, in call order.

        A call without an outcome (and, when `interrupted`, a client call still pending) is
        answered as cancelled.
        """
        blocks: list[ContentBlock] = []
        for call, outcome in zip(calls, outcomes, strict=True):
            if outcome is None or (interrupted and outcome.pending):
                block = cancelled_result(call)
                self.agent.session.update_call(
                    call, "cancelled", result=block, error_type=ToolErrorType.CANCELLED.value
                )
                blocks.append(block)
            else:
                blocks.append(outcome.block)
        return blocks
