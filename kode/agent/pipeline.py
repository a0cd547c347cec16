"""The tool-call pipeline: one ``tool_use`` in, one ``tool_result`` out, whatever happens.

This module owns the steps every call goes through, in order: lookup (normalised name) →
validation → permission → pre-hooks → context injection → execution (timeout, cancellation,
progress) → post-hooks → ``tool_result``. Each failure ends the call with an error result the
model can act on; nothing here raises for what the model or the tool did. It also owns the
scheduling of one turn's calls: read-only kinds run in parallel, mutating kinds (edit, delete,
move, execute) one at a time in call order, all bounded by ``max_concurrent_tools``.
"""

from __future__ import annotations

import inspect
import logging
import time
from collections.abc import Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio
import anyio.from_thread

from kode.agent.approvals import call_details, origin, remember_always
from kode.agent.blocks import edited_result, result_block
from kode.agent.events import (
    AgentEvent,
    ToolBlockedLoop,
    ToolCustom,
    ToolEnd,
    ToolProgress,
    ToolStart,
    jsonable_arguments,
)
from kode.agent.hooks import Allow, Deny, PostToolUseFunc, PreToolUseFunc, Respond, RewriteInput
from kode.agent.permissions import (
    ApprovalDecision,
    ApprovalRequest,
    Verdict,
    can_only_allow,
    check_permission,
    pattern_allowed,
)
from kode.agent.state import CallOutcome, ToolCallRecord, ToolCallStatus
from kode.models.messages import ToolUseContent
from kode.tools.blocking import BLOCKED_LOOP_KEY
from kode.tools.context import ToolContext, ToolEvent
from kode.tools.core import PreparedCall, Tool
from kode.tools.errors import ToolError, ToolErrorType
from kode.tools.results import TextBlock, ToolResult, error_result, text_result
from kode.tracing.events import link as span_link
from kode.tracing.events import note as span_event

if TYPE_CHECKING:
    from kode.agent.ports import CallEnvironment

__all__ = ["CallOutcome", "duplicate_result", "run_turn_calls", "truncate_result"]

_log = logging.getLogger("kode.agent")

# A call's events and outcome are made by their classes' own __init__, called directly: called
# through the class, the keyword arguments reach a Python __init__ as a new dict (twice the
# time, three times per call). The same objects while the classes have no __new__ of their own.
_new = object.__new__
_init_start = ToolStart.__init__
_init_end = ToolEnd.__init__
_init_outcome = CallOutcome.__init__


def truncate_result(result: ToolResult, limit: int) -> ToolResult:
    """`result` with its text cut to `limit` characters, saying how much was left out."""
    total = 0
    for block in result.content:
        if isinstance(block, TextBlock):
            total += len(block.text)
    if total <= limit:
        return result
    blocks: list[Any] = []
    budget = limit
    for block in result.content:
        if isinstance(block, TextBlock):
            if budget <= 0:
                continue
            text = block.text[:budget]
            budget -= len(text)
            blocks.append(TextBlock(text=text))
        else:
            blocks.append(block)
    blocks.append(
        TextBlock(
            text=f"[output truncated: {total - limit:,} of {total:,} characters left out; ask "
            "for less, e.g. a narrower query or a smaller range]"
        )
    )
    return ToolResult(
        content=tuple(blocks),
        details=result.details,
        is_error=result.is_error,
        error_type=result.error_type,
        metadata=result.metadata,
        pending=result.pending,
        display=result.display,
    )


async def _maybe_await(value: Any) -> Any:
    if inspect.isawaitable(value):
        return await value
    return value


class _Call:
    """The pipeline for one call."""

    # Slots: a turn of many calls keeps one of these alive per call while they run, and
    # each object the collector tracks brings its next full collection nearer.
    __slots__ = (
        "agent",
        "call",
        "ctx",
        "emit",
        "index",
        "name",
        "record",
        "result",
        "results",
        "run_",
        "session",
        "span",
        "started",
        "tool",
    )

    def __init__(
        self,
        run: CallEnvironment,
        call: ToolUseContent,
        tool: Tool[..., Any] | None,
        results: list[CallOutcome | None] | None = None,
        index: int = 0,
    ) -> None:
        self.run_ = run
        self.agent = run.agent
        self.call = call
        self.tool = tool  # the agent's tool for the call's name (`None`: it has none)
        self.emit = run.emit
        self.session = session = run.agent.session
        self.record = session.records.for_call(call)
        self.started = 0.0  # (set when the pipeline starts)
        self.name = call.name.strip() if tool is None else tool.name
        self.ctx: ToolContext[Any] | None = None
        self.result: ToolResult | None = None  # what the call ended with (for its span)
        self.span: Any = None  # its execute_tool span, when the agent is instrumented
        # Where `run` puts the call's outcome, and what it does with an exception that
        # escapes the pipeline, as `_run_into` would (`None`: it returns the one and raises
        # the other, for `_run_into` or a span around it)
        self.results = results
        self.index = index

    def finish(self, result: ToolResult, status: ToolCallStatus) -> CallOutcome:
        result = truncate_result(result, self.agent.template.max_result_chars)
        self.result = result
        outcome = _ended(self.run_, self.call, self.name, self.record, result, status, self.started)
        if self.results is not None:
            self.results[self.index] = outcome
        return outcome

    async def run(self) -> CallOutcome | None:
        """The call's outcome (`None` when it went to `results` or the run was aborted)."""
        # Only the steps every call takes are here (a turn keeps one of these coroutines per
        # call in flight, and a smaller frame costs less); approval and hooks have their own.
        # With `results`, this is the call's task (one coroutine less per call than
        # `_run_into`), so it ends the call's exceptions as `_run_into` does.
        self.started = time.perf_counter()
        agent, call = self.agent, self.call
        try:
            # 1. lookup (made with the call: the turn's scheduling needed the tool already)
            tool = self.tool
            if tool is None:
                return self.finish(agent.unknown_tool_result(call.name), "failed")
            # 2. validation (of the input a person gave at approval, for a call approved so
            # before a restart)
            if self.record.requested_input is not None:
                call = call.model_copy(update={"input": self.record.input})
            prepared = tool.prepare(call.input)
            if isinstance(prepared, ToolResult):
                return self.finish(prepared, "failed")
            # 3. permission (a call approved, or started, before a restart has it already)
            if self.record.status not in ("approved", "running") and not can_only_allow(
                agent.template.permission, tool
            ):
                permitted = await self._permit(tool, prepared)
                if isinstance(permitted, CallOutcome):
                    return permitted
                prepared, call = permitted
            # 4. pre-hooks
            hooks = agent.hooks
            answer: ToolResult | None = None
            post: Sequence[PostToolUseFunc] = ()
            if hooks.pre_tool_use or hooks.post_tool_use or hooks.tools:  # (most agents have none)
                pre, post = hooks.for_tool(tool.name)
                if pre:
                    hooked = await self._pre_hooks(tool, prepared, call, pre)
                    if isinstance(hooked, CallOutcome):
                        return hooked
                    prepared, call, answer = hooked
            # 6. execution: the store knows the call started before it does (write-ahead)
            session = self.session
            session.update_call(self.call, "running", tool=tool, record=self.record)
            if session.store is not None:  # (without one, there is nothing to commit)
                await self.run_.commit()
            arguments = prepared.arguments
            takes_context = tool.context_param is not None
            # (a copy when the tool's context is about to join the arguments, in `execute`)
            _started(self.run_, call.id, tool.name, dict(arguments) if takes_context else arguments)
            if answer is None:
                # 5. context, for a tool that takes one (hooks made it already if there are any)
                limit = agent.template.tool_timeout
                # (the tool's own execute: one coroutine less than `prepared.execute`)
                result = await prepared.tool.execute(
                    arguments,
                    self.context(tool) if takes_context else self.ctx,
                    default_timeout=limit,
                )
                _blocked(self.run_, call, tool, result, limit)
            else:
                result = answer
            # 7. post-hooks
            if post:
                result = await self._post_hooks(tool, call, result, post)
            return self.finish(result, _status(result))
        except BaseException as exc:
            if self.results is None:
                raise
            _caught(self.run_, self.results, self.index, self.call, exc)
            return None

    async def _permit(
        self, tool: Tool[..., Any], prepared: PreparedCall
    ) -> CallOutcome | tuple[PreparedCall, ToolUseContent]:
        """Step 3 for a call the permission rules could refuse or ask about.

        The call's outcome when it ends here (denied, refused, a failed check), else what it
        runs with: the prepared call and the call (the input a decider gave instead, if any).
        """
        agent, call = self.agent, self.call
        arguments = prepared.arguments
        source = server = None
        try:
            permission = agent.template.permission
            source, server = origin(agent, tool)
            verdict = check_permission(
                tool,
                arguments,
                permission,
                always_allowed=agent.always_allowed,
                ctx=self.context(tool),
                source=source,
                server=server,
            )
        except Exception as exc:  # a requires_approval function that raised
            _log.error("the permission check of %r raised", tool.name, exc_info=exc)
            return self.finish(
                error_result(
                    f"Tool '{tool.name}' was not run: its permission check raised "
                    f"{type(exc).__name__}: {exc}",
                    type=ToolErrorType.PERMISSION_DENIED,
                ),
                "failed",
            )
        if verdict.action == "deny":
            if self.span is not None:
                span_event(self.span, "kode.tool.denied", {"kode.reason": verdict.reason})
            return self.finish(
                error_result(
                    f"Tool '{tool.name}' was not run: {verdict.reason}.",
                    type=ToolErrorType.PERMISSION_DENIED,
                    details={"rule": verdict.rule},
                ),
                "denied",
            )
        details = None
        if verdict.action == "ask":
            details = call_details(tool, arguments, self.context(tool), server=server)
            prefix = pattern_allowed(tool.name, details.pattern, agent.always_allowed)
            if prefix is not None:
                verdict = Verdict(
                    action="allow",
                    reason="allowed for this session",
                    rule=f"session: {tool.name} calls starting with {prefix!r} always allowed",
                )
        if verdict.action == "ask":
            assert details is not None
            session = self.session
            if (
                agent.approver is None
                and not self.run_.interactive
                and call.id not in session.decisions  # decided in another process meanwhile
            ):
                return self.finish(
                    error_result(
                        f"Tool '{tool.name}' was not run: it needs approval ({verdict.reason}) "
                        "and nobody can give it here. To allow such calls, pass approver= to "
                        "Agent.create, or run the agent with agent.stream() or "
                        "send(on_event=...) and answer with agent.decide().",
                        type=ToolErrorType.PERMISSION_DENIED,
                    ),
                    "denied",
                )
            prior = session.request_approval(
                call,
                tool_name=tool.name,
                input=jsonable_arguments(arguments),
                reason=verdict.reason,
                kind=tool.kind.value,
                details={
                    "description": details.description,
                    "locations": list(details.locations),
                    "diff": details.diff,
                    "pattern": details.pattern,
                    "server": server,
                    "rule": verdict.rule,
                },
            )
            request = ApprovalRequest(
                call_id=call.id,
                tool_name=tool.name,
                input=arguments,
                reason=verdict.reason,
                kind=tool.kind,
                description=details.description,
                locations=details.locations,
                diff=details.diff,
                pattern=details.pattern,
                server=server,
                rule=verdict.rule,
            )
            try:
                decision = (
                    ApprovalDecision(
                        decision=prior.decision,
                        note=prior.note,
                        scope=prior.scope,
                        pattern=prior.pattern,
                        input=prior.input,
                    )
                    if prior is not None
                    else await self.run_.ask(request)
                )
            except Exception as exc:  # an approver that raised: refuse, and say why
                _log.error("the approver raised for %r", tool.name, exc_info=exc)
                return self.finish(
                    error_result(
                        f"Tool '{tool.name}' was not run: asking for approval failed: "
                        f"{type(exc).__name__}: {exc}",
                        type=ToolErrorType.PERMISSION_DENIED,
                    ),
                    "denied",
                )
            if self.span is not None:
                span_event(
                    self.span,
                    "kode.approval",
                    {"kode.reason": verdict.reason, "kode.approval.decision": decision.decision},
                )
                stored = session.decisions.get(call.id)  # decided in another process
                if stored is not None and stored.trace:
                    span_link(self.span, stored.trace, {"kode.link.type": "approval_decision"})
            changed: PreparedCall | ToolResult | None = None
            if decision.input is not None and decision.decision != "deny":
                changed = tool.prepare(decision.input)  # the decider's input: validated again
            session.decide(
                call,
                decision.decision,
                decision.note,
                recorded=session.decisions.get(call.id) is not None,
                scope=decision.scope,
                pattern=decision.pattern,
                input=decision.input,
                runs_with=None
                if changed is None or isinstance(changed, ToolResult)
                else (decision.input),
            )
            if decision.decision == "deny":
                note = f" Note from the user: {decision.note}" if decision.note else ""
                return self.finish(
                    error_result(
                        f"Tool '{tool.name}' was denied by the user.{note}",
                        type=ToolErrorType.PERMISSION_DENIED,
                        details={"note": decision.note},
                    ),
                    "denied",
                )
            if decision.input is not None and changed is not None:  # the decider changed it
                if isinstance(changed, ToolResult):
                    return self.finish(
                        error_result(
                            f"Tool '{tool.name}' was not run: the input the user gave instead "
                            f"is not valid: {changed.text}",
                            type=ToolErrorType.INVALID_TOOL_PARAMS,
                        ),
                        "failed",
                    )
                prepared = changed
                arguments = prepared.arguments
                call = call.model_copy(update={"input": decision.input})
            if decision.decision == "allow_always":
                remember_always(session, request, decision)
        return prepared, call

    async def _pre_hooks(
        self,
        tool: Tool[..., Any],
        prepared: PreparedCall,
        call: ToolUseContent,
        pre: Sequence[PreToolUseFunc],
    ) -> CallOutcome | tuple[PreparedCall, ToolUseContent, ToolResult | None]:
        """Step 4: the pre-hooks, in order.

        The call's outcome when a hook ends it (denied, failed, invalid rewritten input), else
        what it runs with: the prepared call, the call (as a hook rewrote it) and the answer a
        hook gave in the tool's place, if any.
        """
        answer: ToolResult | None = None
        for hook in pre:
            try:
                outcome = await _maybe_await(hook(call, self.context(tool)))
            except Exception as exc:
                _log.error("pre_tool_use hook raised", exc_info=exc)
                if self.span is not None:
                    span_event(
                        self.span,
                        "kode.hook",
                        {
                            "kode.hook.kind": "pre",
                            "kode.hook.outcome": "raised",
                            "error.type": type(exc).__name__,
                        },
                    )
                return self.finish(
                    error_result(
                        f"Tool '{tool.name}' was not run: a pre_tool_use hook raised "
                        f"{type(exc).__name__}: {exc}",
                        type=ToolErrorType.EXECUTION_FAILED,
                    ),
                    "failed",
                )
            if self.span is not None:
                span_event(
                    self.span,
                    "kode.hook",
                    {"kode.hook.kind": "pre", "kode.hook.outcome": type(outcome).__name__.lower()},
                )
            if isinstance(outcome, Allow):
                break
            if isinstance(outcome, Deny):
                return self.finish(
                    error_result(
                        f"Tool '{tool.name}' was blocked: {outcome.reason}",
                        type=ToolErrorType.PERMISSION_DENIED,
                    ),
                    "denied",
                )
            if isinstance(outcome, RewriteInput):
                rewritten = tool.prepare(outcome.input)
                if isinstance(rewritten, ToolResult):
                    return self.finish(
                        error_result(
                            f"A pre_tool_use hook rewrote the input of '{tool.name}' into "
                            f"invalid arguments: {rewritten.text}",
                            type=ToolErrorType.INVALID_TOOL_PARAMS,
                        ),
                        "failed",
                    )
                prepared = rewritten
                # Later hooks (and post-hooks) see the call as it will run; the history
                # keeps the model's own call.
                call = call.model_copy(update={"input": outcome.input})
            elif isinstance(outcome, Respond):
                answer = (
                    text_result(outcome.result)
                    if isinstance(outcome.result, str)
                    else outcome.result
                )
                break
        return prepared, call, answer

    async def _post_hooks(
        self,
        tool: Tool[..., Any],
        call: ToolUseContent,
        result: ToolResult,
        post: Sequence[PostToolUseFunc],
    ) -> ToolResult:
        """Step 7: the post-hooks, in order; the result they leave."""
        for post_hook in post:
            try:
                replaced = await _maybe_await(post_hook(call, result, self.context(tool)))
            except Exception as exc:
                _log.error("post_tool_use hook raised", exc_info=exc)
                if self.span is not None:
                    span_event(
                        self.span,
                        "kode.hook",
                        {
                            "kode.hook.kind": "post",
                            "kode.hook.outcome": "raised",
                            "error.type": type(exc).__name__,
                        },
                    )
                result = error_result(
                    f"Tool '{tool.name}' ran, but a post_tool_use hook raised "
                    f"{type(exc).__name__}: {exc}",
                    type=ToolErrorType.EXECUTION_FAILED,
                )
                break
            if self.span is not None:
                span_event(
                    self.span,
                    "kode.hook",
                    {
                        "kode.hook.kind": "post",
                        "kode.hook.outcome": "replaced" if replaced is not None else "kept",
                    },
                )
            if isinstance(replaced, ToolResult):
                result = replaced
            elif isinstance(replaced, str):
                result = text_result(replaced)
        return result

    def context(self, tool: Tool[..., Any]) -> ToolContext[Any]:
        """The call's context, made on first use.

        Most calls have no hooks and a tool that takes no context, and making one costs about
        as much as validating the arguments.
        """
        if self.ctx is None:
            self.ctx = _context(self.run_, self.call, tool)
        return self.ctx


def _context(run: CallEnvironment, call: ToolUseContent, tool: Tool[..., Any]) -> ToolContext[Any]:
    """A new context for `call` of `tool` in `run`."""
    agent = run.agent
    return ToolContext(
        tool_call_id=call.id,
        tool_name=tool.name,
        agent_id=agent.agent_id,
        session_id=agent.session_id,
        deps=agent.deps,
        event_sink=partial(_tool_event, run),
        workspace=agent.workspace,
        files=agent.files,
        services=agent.services,
    )


def _tool_event(run: CallEnvironment, event: ToolEvent) -> None:
    """Pass an event a tool sent through its context on as an agent event."""
    if event.event == "progress" and isinstance(event.data, dict):
        out: AgentEvent = ToolProgress(
            call_id=event.tool_call_id,
            name=event.tool_name,
            message=str(event.data.get("message", "")),
            fraction=event.data.get("fraction"),
        )
    else:
        out = ToolCustom(
            call_id=event.tool_call_id, name=event.tool_name, event=event.event, data=event.data
        )
    if run.on_loop():
        run.emit(out)
    else:  # a sync tool in a worker thread: hand the event to the loop
        try:
            anyio.from_thread.run_sync(run.emit, out)
        except RuntimeError:  # not an anyio worker thread (a thread the tool started)
            run.emit(out)


def _started(run: CallEnvironment, call_id: str, name: str, arguments: dict[str, Any]) -> None:
    """Emit the `ToolStart` of a call about to run with `arguments`."""
    start = _new(ToolStart)
    _init_start(start, call_id=call_id, name=name, input=arguments)
    run.emit(start)


def _blocked(
    run: CallEnvironment,
    call: ToolUseContent,
    tool: Tool[..., Any],
    result: ToolResult,
    limit: float | None,
) -> None:
    """Say so when the tool that ran to `result` held the event loop (see kode.tools.blocking)."""
    metadata = result.metadata
    if metadata and BLOCKED_LOOP_KEY in metadata:
        run.emit(
            ToolBlockedLoop(
                call_id=call.id,
                name=tool.name,
                seconds=metadata[BLOCKED_LOOP_KEY],
                timeout=tool.timeout if tool.timeout is not None else limit,
            )
        )


def _status(result: ToolResult) -> ToolCallStatus:
    """The final status of a call that ends with `result`."""
    if result.is_error:
        return "cancelled" if result.error_type is ToolErrorType.CANCELLED else "failed"
    return "done"


def _ended(
    run: CallEnvironment,
    call: ToolUseContent,
    name: str,
    record: ToolCallRecord,
    result: ToolResult,
    status: ToolCallStatus,
    started: float,
) -> CallOutcome:
    """The outcome of a call that ended with `result` (truncated already).

    Its ``tool_result`` block is made, its record updated and its `ToolEnd` emitted.
    """
    block = result_block(call.id, result)
    if record.requested_input is not None:  # a person changed the input: the model is told
        block = edited_result(block, record.input)
    pending = result.pending
    if pending:
        status = "pending"
    error_type = result.error_type
    run.agent.session.update_call(
        call,
        status,
        result=None if pending else block,
        error_type=None if error_type is None else error_type.value,
        client=True if pending else None,
        record=record,
    )
    end = _new(ToolEnd)
    _init_end(
        end,
        call_id=call.id,
        name=name,
        duration=time.perf_counter() - started,
        is_error=result.is_error,
        result=block,
        status=status,
        display=result.display,
    )
    run.emit(end)
    outcome = _new(CallOutcome)
    _init_outcome(outcome, block=block, status=status, pending=pending)
    return outcome


async def _plain_call(
    run: CallEnvironment,
    call: ToolUseContent,
    tool: Tool[..., Any],
    results: list[CallOutcome | None],
    index: int,
) -> None:
    """`_Call.run` into ``results[index]`` for a call that needs none of its optional steps.

    That is a call of a known tool that the permission rules can only allow
    (`can_only_allow`), in a run with no hooks, no store to write and no tracing
    (`_plain_calls`): lookup, validation, execution and the ``tool_result``, the same events
    and record as `_Call`, without its per-call object (most calls of most turns).
    """
    started = time.perf_counter()
    try:
        agent = run.agent
        session = agent.session
        record = session.records.for_call(call)
        name = tool.name
        prepared = tool.prepare(call.input)
        template = agent.template
        if isinstance(prepared, ToolResult):
            result = truncate_result(prepared, template.max_result_chars)
            results[index] = _ended(run, call, name, record, result, "failed", started)
            return
        session.update_call(call, "running", tool=tool, record=record)
        arguments = prepared.arguments
        limit = template.tool_timeout
        if tool.pure_validation:  # its event makes the arguments again when read
            run.emit(ToolStart.replayed(call.id, tool, call.input))
        else:  # (a copy when the context is about to join the arguments, in `execute`)
            _started(
                run, call.id, name, arguments if tool.context_param is None else dict(arguments)
            )
        if tool.context_param is None:
            result = await tool.execute(arguments, None, default_timeout=limit)
        else:
            result = await tool.execute(arguments, _context(run, call, tool), default_timeout=limit)
        _blocked(run, call, tool, result, limit)
        status = _status(result)
        result = truncate_result(result, template.max_result_chars)
        results[index] = _ended(run, call, name, record, result, status, started)
    except BaseException as exc:
        _caught(run, results, index, call, exc)


def _plain_calls(run: CallEnvironment) -> bool:
    """Whether `run`'s calls may take `_plain_call` (for tools `can_only_allow` lets through)."""
    agent = run.agent
    hooks = agent.hooks
    return (
        run.tracing is None
        and agent.session.store is None
        and not (hooks.pre_tool_use or hooks.post_tool_use or hooks.tools)
    )


def duplicate_result(run: CallEnvironment, call: ToolUseContent, original: str) -> CallOutcome:
    """The outcome of a call whose id (`original`) repeated another's: answered, never run."""
    why = (
        f"its call id {original!r} was already used by another call"
        if original
        else "it came without a call id"
    )
    answering = _Call(run, call, None)
    answering.started = time.perf_counter()
    return answering.finish(
        error_result(
            f"Tool '{call.name.strip()}' was not run: {why}, so its result could not be told "
            "apart. Call it again; every call needs an id of its own.",
            type=ToolErrorType.INVALID_TOOL_PARAMS,
        ),
        "failed",
    )


async def _run_into(
    results: list[CallOutcome | None],
    index: int,
    run: CallEnvironment,
    call: ToolUseContent,
    tool: Tool[..., Any] | None,
    *,
    commit: bool = True,
) -> None:
    """Run one call into ``results[index]``; its exceptions end in `_caught`.

    KeyboardInterrupt and SystemExit end the run (`AgentRun.abort`); cancellation propagates;
    anything else raised (a `GeneratorExit` or another `BaseException` from a tool, a bug in a
    hook) becomes the call's error result, whatever the turn's shape.
    """
    try:
        tracing = run.tracing
        if tracing is None:
            results[index] = await _Call(run, call, tool).run()
        else:  # the call inside its execute_tool span
            results[index] = await tracing.execute_tool(run.agent, call, _Call(run, call, tool))
        session = run.agent.session
        if session.store is not None:  # the call's end is written before what follows it
            session.sync_todos()
            if commit:  # (a turn's only call: with the turn's results, the next step)
                await run.commit()
    except BaseException as exc:
        _caught(run, results, index, call, exc)


def _caught(
    run: CallEnvironment,
    results: list[CallOutcome | None],
    index: int,
    call: ToolUseContent,
    exc: BaseException,
) -> None:
    """End a call whose pipeline raised `exc` (raising it again when it must propagate)."""
    if isinstance(exc, KeyboardInterrupt | SystemExit):  # stop the whole run
        run.abort(exc)
    elif isinstance(exc, ToolError):  # defensive: the pipeline should not raise these
        results[index] = CallOutcome(
            block=result_block(call.id, error_result(exc.message, type=exc.type)), status="failed"
        )
    elif isinstance(exc, Exception):  # a bug (a hook's odd return value, an event listener
        # that raised): the call still gets its tool_result, and the other calls go on
        _log.error("the pipeline of %r raised", call.name, exc_info=exc)
        results[index] = _failed(run, call, f"could not be run: {type(exc).__name__}: {exc}")
    elif isinstance(exc, anyio.get_cancelled_exc_class()):
        raise exc
    else:
        fatal = _fatal_in(exc)
        if fatal is not None:  # a group (a tool's own task group) holding one
            run.abort(fatal)
        elif isinstance(exc, BaseExceptionGroup) and _cancelled_in(exc):
            raise exc
        else:  # GeneratorExit, a BaseException subclass of the tool's own: a failure
            _log.error("the tool %r raised %s", call.name, type(exc).__name__, exc_info=exc)
            text = str(exc)
            results[index] = _failed(
                run,
                call,
                f"failed: {type(exc).__name__}: {text}"
                if text
                else f"failed: {type(exc).__name__}",
            )


def _fatal_in(exc: BaseException) -> BaseException | None:
    """The first KeyboardInterrupt or SystemExit in `exc` (an exception group), if any."""
    if isinstance(exc, KeyboardInterrupt | SystemExit):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = _fatal_in(inner)
            if found is not None:
                return found
    return None


def _cancelled_in(exc: BaseExceptionGroup[BaseException]) -> bool:
    """Whether the group holds a cancellation (which must reach its cancel scope)."""
    return exc.subgroup(anyio.get_cancelled_exc_class()) is not None


def _failed(run: CallEnvironment, call: ToolUseContent, why: str) -> CallOutcome:
    """The outcome of a call whose pipeline raised: an ``execution_failed`` result."""
    block = result_block(
        call.id,
        error_result(f"Tool '{call.name.strip()}' {why}", type=ToolErrorType.EXECUTION_FAILED),
    )
    run.agent.session.update_call(
        call, "failed", result=block, error_type=ToolErrorType.EXECUTION_FAILED.value
    )
    return CallOutcome(block=block, status="failed")


_TASK_NAME = f"{__name__}.{_run_into.__qualname__}"
_CALL_TASK_NAME = f"{__name__}.{_Call.run.__qualname__}"
_PLAIN_TASK_NAME = f"{__name__}.{_plain_call.__qualname__}"


async def run_turn_calls(
    run: CallEnvironment, calls: Sequence[ToolUseContent], results: list[CallOutcome | None]
) -> None:
    """Run one turn's calls into `results` (same order as `calls`; set ones are skipped).

    Read-only kinds run concurrently; mutating kinds wait for the previous mutating call, so
    they run one at a time in call order. At most ``max_concurrent_tools`` run at once.
    """
    agent = run.agent
    plain = _plain_calls(run)
    permission = agent.template.permission
    if len(calls) == 1:  # one call: no task group to make and start (half a turn's cost)
        if results[0] is None:
            call = calls[0]
            tool = agent.lookup(call.name)
            if plain and tool is not None and can_only_allow(permission, tool):
                await _plain_call(run, call, tool, results, 0)
            else:
                await _run_into(results, 0, run, call, tool, commit=False)
        return
    limit = agent.template.max_concurrent_tools
    limiter = anyio.CapacityLimiter(limit) if len(calls) > limit else None
    previous: anyio.Event | None = None

    async def one(
        index: int,
        call: ToolUseContent,
        tool: Tool[..., Any] | None,
        wait: anyio.Event | None,
        done: anyio.Event | None,
    ) -> None:
        try:
            if wait is not None:
                await wait.wait()
            if limiter is None:
                await _run_into(results, index, run, call, tool)
            else:
                async with limiter:
                    await _run_into(results, index, run, call, tool)
        finally:
            if done is not None:
                done.set()

    # A call with nothing to wait for runs as its pipeline's own coroutine, unless a span
    # must be around it or a store must be written after it (then `_run_into` does both).
    direct = limiter is None and run.tracing is None and agent.session.store is None
    # the turn's tools by name, whether they mutate, and whether their calls are plain
    found: dict[str, tuple[Tool[..., Any] | None, bool, bool]] = {}
    async with anyio.create_task_group() as tg:
        # anyio 4.14 and later start a coroutine made here without start_soon's checks of a
        # function that makes one
        create_task = getattr(tg, "create_task", None)
        for index, call in enumerate(calls):
            if results[index] is not None:  # answered already (a duplicate id)
                continue
            name = call.name
            known = found.get(name)
            if known is None:
                tool = agent.lookup(name)
                known = found[name] = (
                    tool,
                    tool is not None and tool.kind.is_mutating,
                    plain and tool is not None and can_only_allow(permission, tool),
                )
            tool, mutating, plain_call = known
            if mutating:
                done = anyio.Event()
                tg.start_soon(one, index, call, tool, previous, done)
                previous = done
            elif direct and create_task is not None:  # (named as anyio would name it)
                if plain_call:
                    assert tool is not None
                    create_task(_plain_call(run, call, tool, results, index), name=_PLAIN_TASK_NAME)
                else:
                    create_task(_Call(run, call, tool, results, index).run(), name=_CALL_TASK_NAME)
            elif limiter is None:  # nothing to wait for: one coroutine less per call
                # (named as anyio would name it, without working the name out every time)
                if create_task is not None:
                    create_task(_run_into(results, index, run, call, tool), name=_TASK_NAME)
                else:
                    tg.start_soon(_run_into, results, index, run, call, tool, name=_TASK_NAME)
            else:
                tg.start_soon(one, index, call, tool, None, None)
