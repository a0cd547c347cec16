"""`Agent`: a template's tools, a model and a conversation, run turn by turn.

This module owns the agent loop: send the conversation and the tools to the model, run every
``tool_use`` of the reply through the pipeline (`kode.agent.pipeline`), put the results back
in one user message in call order, and repeat until the model answers without tools. It also
owns approvals waiting for `decide`, client tool results waiting for `submit_tool_result`,
`interrupt`, the event stream, and the state that can be saved and restored.
"""

from __future__ import annotations

import difflib
import inspect
import logging
import os
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import anyio

from kode.agent.events import (
    AgentEvent,
    ApprovalRequired,
    Done,
    ErrorEvent,
    TextDelta,
    ThinkingDelta,
    TurnEnd,
)
from kode.agent.hooks import AgentHooks
from kode.agent.permissions import ApprovalDecision, ApprovalRequest, ApproverFunc
from kode.agent.pipeline import CallOutcome, _truncate, cancelled_result, run_turn_calls
from kode.agent.state import AgentState, _Record
from kode.agent.stream import AgentStream
from kode.agent.template import AgentTemplate, TemplateError, templates
from kode.models.base import Model, ModelError, ModelRequest, ModelResponse
from kode.models.base import TextDelta as ModelTextDelta
from kode.models.base import ThinkingDelta as ModelThinkingDelta
from kode.models.messages import (
    ContentBlock,
    Message,
    TextContent,
    ToolResultContent,
    ToolUseContent,
    Usage,
)
from kode.registries.factories import ToolFactoryContext
from kode.registries.policy import ToolPolicy
from kode.registries.registry import ToolRegistry, normalize_name
from kode.registries.registry import registry as global_registry
from kode.registries.resolve import Resolution
from kode.tools.errors import KodeError, ToolErrorType
from kode.tools.results import ToolResult, error_result, json_result, text_result
from kode.tools.sync import run_sync
from kode.tools.tool import Tool
from kode.tools.workspace import FilePool, Workspace

_log = logging.getLogger("kode.agent")

__all__ = ["Agent", "AgentError", "AgentReply"]

EventCallbackFunc = Callable[[AgentEvent], None]
"""Receives every event of a run as it happens."""


class AgentError(KodeError):
    """An agent cannot be created or cannot continue (bad template tools, a failed model)."""


class _AgentHandle:
    """What tools get as ``ctx.services["agent"]``: sub-agents, without the whole agent."""

    __slots__ = ("_agent",)

    def __init__(self, agent: Agent) -> None:
        self._agent = agent

    async def run_subagent(
        self,
        template_id: str,
        prompt: str,
        *,
        on_event: EventCallbackFunc | None = None,
    ) -> str:
        reply = await self._agent.run_subagent(template_id, prompt, on_event=on_event)
        return reply.text

    @property
    def agent_id(self) -> str:
        return self._agent.agent_id


class AgentReply:
    """What `Agent.send` returns: the final text, and the run's details."""

    __slots__ = ("events", "interrupted", "pending_calls", "text", "turns", "usage")

    def __init__(
        self,
        *,
        text: str,
        usage: Usage,
        turns: int,
        events: list[AgentEvent],
        pending_calls: tuple[str, ...] = (),
        interrupted: bool = False,
    ) -> None:
        self.text = text
        """The final assistant text."""
        self.usage = usage
        """Tokens used by the run."""
        self.turns = turns
        """How many model responses the run took."""
        self.events = events
        """Every event of the run, in order."""
        self.pending_calls = pending_calls
        """Client tool calls waiting for `Agent.submit_tool_result`."""
        self.interrupted = interrupted
        """Whether `Agent.interrupt` ended the run."""

    def __repr__(self) -> str:
        return f"AgentReply(text={self.text!r}, turns={self.turns}, usage={self.usage!r})"

    def __str__(self) -> str:
        return self.text


class Agent:
    """An agent: create it with `Agent.create`, talk to it with `send` or `stream`.

    Example:
        ```python
        from kode import Agent, AgentTemplate, define_tool
        from kode.models import ScriptedModel, tool_use

        @define_tool(kind="read")
        def word_count(text: str) -> int:
            \"\"\"Count the words of a text.\"\"\"
            return len(text.split())

        template = AgentTemplate(id="counter", tools=["word_count"])
        model = ScriptedModel([[tool_use("word_count", {"text": "a b c"})], "Three words."])
        agent = Agent.create(template, model=model)
        assert agent.send_sync("How many words?").text == "Three words."
        ```
    """

    def __init__(
        self,
        *,
        template: AgentTemplate,
        model: Model,
        resolution: Resolution,
        registry: ToolRegistry,
        deps: Any,
        approver: ApproverFunc | None,
        hooks: AgentHooks,
        agent_id: str,
        session_id: str,
    ) -> None:
        self.template = template
        """The template the agent was made from."""
        self.model = model
        """The model it talks to."""
        self.resolution = resolution
        """How its tools were chosen (`Resolution.explain` tells why each is in or out)."""
        self.registry = registry
        """The registry its tools came from."""
        self.deps = deps
        """The application's dependencies, injected into tools as ``ctx.deps``."""
        self.approver = approver
        """Decides calls that need approval; `None`: ask through events and `decide`."""
        self.hooks = hooks
        """Template hooks followed by the hooks given to `create`."""
        self.agent_id = agent_id
        """The agent's id."""
        self.session_id = session_id
        """The session's id."""
        self.tools: list[Tool[..., Any]] = list(resolution.tools)
        """The tools the model is shown, in order."""
        self._by_name: dict[str, Tool[..., Any]] = {}
        for made in self.tools:
            self._by_name[normalize_name(made.name)] = made
            for alias in getattr(made, "aliases", ()):
                self._by_name.setdefault(normalize_name(alias), made)
        for alias, target in registry.aliases().items():
            found = self._by_name.get(normalize_name(target))
            if found is not None:
                self._by_name.setdefault(alias, found)
        self.messages: list[Message] = []
        """The conversation."""
        self._used_in = 0  # tokens so far, as ints: the loop adds to them every turn
        self._used_out = 0
        self.status: Literal[
            "idle", "running", "awaiting_approval", "awaiting_client", "failed"
        ] = "idle"
        """What the agent is doing."""
        self.todos: list[dict[str, Any]] = []
        """The agent's todo list (for todo tools)."""
        self.workspace: Workspace | None = None
        """The directory its tools may touch."""
        self.files = FilePool()
        """What its tools read and wrote (refuses writes over unseen changes)."""
        self.services: dict[str, Any] = {"todos": self.todos, "agent": _AgentHandle(self)}
        """Things its tools share by name (see `ToolContext.services`)."""
        self.subagent_models: dict[str, Model] = {}
        """Models for sub-agents by template id (others use this agent's model)."""
        self._create_options: dict[str, Any] = {}
        self._records: dict[str, _Record] = {}
        self._always_allowed: set[str] = set()
        self._approvals: dict[str, tuple[anyio.Event, list[ApprovalDecision]]] = {}
        self._pending: dict[str, ToolResultContent | None] = {}
        self._pending_calls: list[ToolUseContent] = []
        self._pending_results_cache: dict[str, ToolResultContent] = {}
        self._scope: anyio.CancelScope | None = None
        self._loop_thread = threading.get_ident()
        self._listener: EventCallbackFunc | None = None  # the running send's or stream's
        self._interactive = False
        # A flag, not an anyio.Lock: a lock belongs to the event loop that made it, and
        # send_sync runs the agent in a loop of its own when one is already running.
        self._running = False
        self._abandoned = False  # the running stream was left early; its run is ending
        self._interrupt_pending = False  # interrupt() came before the run's cancel scope
        self._token: anyio.lowlevel.EventLoopToken | None = None  # the running loop's
        self._run_ended: anyio.Event | None = None  # set when it has, for whoever waits

    # --- creation ----------------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        template: AgentTemplate | str,
        *,
        model: Model,
        deps: Any = None,
        registry: ToolRegistry | None = None,
        policy: ToolPolicy | Sequence[ToolPolicy] | None = None,
        approver: ApproverFunc | None = None,
        hooks: AgentHooks | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
        config: dict[str, Any] | None = None,
        channel: str | None = None,
        sandboxed: bool = False,
        workspace: str | os.PathLike[str] | Workspace | None = None,
        subagent_policy: ToolPolicy | None = None,
        subagent_models: Mapping[str, Model] | None = None,
    ) -> Agent:
        """Make an agent from a template (or a template id), resolving its tools now.

        Args:
            template: The template, or its id in the global template registry.
            model: The model to talk to.
            deps: The application's dependencies, given to tools as ``ctx.deps``.
            registry: Where tools are looked up (default: the global registry).
            policy: Policy layers applied before the template's own (global → agent → ...).
            approver: Decides calls that need approval.
            hooks: Hooks run after the template's hooks.
            agent_id: The agent's id (default: a new one).
            session_id: The session's id (default: a new one).
            config: Configuration for tool factories.
            channel: Where the agent talks, for tool factories.
            sandboxed: Whether the agent runs sandboxed, for tool factories.
            workspace: The directory its tools may touch (a path or a `Workspace` with extra
                allowed paths); `None` leaves tools to use the current directory.
            subagent_policy: The policy layer added for sub-agents this agent starts
                (``task_run``); default: sub-agents cannot start sub-agents.
            subagent_models: Models for sub-agents by template id; a sub-agent whose
                template is not listed uses this agent's model.

        Raises:
            AgentError: a template entry names no tool (the message lists close names), or a
                profile is unknown.
        """
        if isinstance(template, str):
            template = templates.get(template)
        reg = registry if registry is not None else global_registry
        layers: list[ToolPolicy] = (
            [] if policy is None else [policy] if isinstance(policy, ToolPolicy) else list(policy)
        )
        if template.policy is not None:
            layers.append(template.policy.to_policy(f"template {template.id!r}"))
        agent_id = agent_id or f"agent_{uuid.uuid4().hex[:12]}"
        session_id = session_id or f"session_{uuid.uuid4().hex[:12]}"
        space = (
            workspace
            if isinstance(workspace, Workspace) or workspace is None
            else Workspace(root=Path(workspace))
        )
        factory_ctx = ToolFactoryContext(
            workspace_dir=space.root if space is not None else None,
            config=config or {},
            agent_id=agent_id,
            session_id=session_id,
            channel=channel,
            sandboxed=sandboxed,
            deps=deps,
        )
        try:
            resolution = reg.resolve(template.tools, layers, factory_ctx)
        except ValueError as exc:
            raise AgentError(f"agent template {template.id!r}: {exc}") from None
        if resolution.unmatched:
            parts = []
            for entry in resolution.unmatched:
                hint = (
                    f" (did you mean {', '.join(repr(s) for s in entry.suggestions)}?)"
                    if entry.suggestions
                    else ""
                )
                parts.append(f"{entry.entry!r}{hint}")
            raise AgentError(
                f"agent template {template.id!r} lists tools that match nothing registered: "
                f"{'; '.join(parts)}. Import the modules that define them, or fix the names."
            )
        merged = (template.hooks or AgentHooks()).merged(hooks)
        made = cls(
            template=template,
            model=model,
            resolution=resolution,
            registry=reg,
            deps=deps,
            approver=approver,
            hooks=merged,
            agent_id=agent_id,
            session_id=session_id,
        )
        made.workspace = space
        made.subagent_models = dict(subagent_models or {})
        made._create_options = {
            "deps": deps,
            "registry": reg,
            "policy": [*layers, subagent_policy or ToolPolicy(name="sub-agent", deny=["task_run"])],
            "approver": approver,
            "hooks": hooks,
            "config": config,
            "channel": channel,
            "sandboxed": sandboxed,
            "workspace": space,
        }
        return made

    # --- sub-agents and resources --------------------------------------------------------------

    async def run_subagent(
        self,
        template_id: str,
        prompt: str,
        *,
        model: Model | None = None,
        on_event: EventCallbackFunc | None = None,
    ) -> AgentReply:
        """Run a sub-agent from a registered template on `prompt`; return its reply.

        Its model is `model` if given, else the one `subagent_models` names for the template,
        else this agent's. It inherits deps, registry, approver, workspace and policy layers,
        plus the sub-agent layer (no ``task_run`` by default).
        """
        chosen = model or self.subagent_models.get(template_id) or self.model
        options = dict(self._create_options)
        # The parent's own template layer is the parent's; the sub-agent's template adds its own.
        options["policy"] = [p for p in options["policy"] if not p.name.startswith("template ")]
        child = Agent.create(templates.get(template_id), model=chosen, **options)
        try:
            return await child.send(prompt, on_event=on_event)
        finally:
            await child.aclose()

    async def aclose(self) -> None:
        """Release what the agent's tools hold.

        Every service with an ``aclose`` or ``close`` method (background processes,
        connections) is closed; one that fails is logged and the others still close.
        """
        for name, service in list(self.services.items()):
            closer = getattr(service, "aclose", None) or getattr(service, "close", None)
            if closer is None:
                continue
            try:
                out = closer()
                if inspect.isawaitable(out):
                    await out
            except Exception as exc:  # one failing service must not keep others open
                _log.error("closing agent service %r failed", name, exc_info=exc)

    async def __aenter__(self) -> Agent:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # --- lookup ------------------------------------------------------------------------------

    def lookup(self, name: str) -> Tool[..., Any] | None:
        """The agent's tool for a name as a model wrote it (trimmed, any case, aliases)."""
        return self._by_name.get(normalize_name(name))

    def _unknown_tool_result(self, name: str) -> ToolResult:
        names = [t.name for t in self.tools]
        close = difflib.get_close_matches(normalize_name(name), list(self._by_name), n=1)
        hint = f" Did you mean '{self._by_name[close[0]].name}'?" if close else ""
        return error_result(
            f"Tool '{name.strip()}' is not available.{hint} Available tools: "
            f"{', '.join(names) or 'none'}.",
            type=ToolErrorType.TOOL_NOT_REGISTERED,
        )

    @property
    def usage(self) -> Usage:
        """Tokens used so far."""
        return Usage(input_tokens=self._used_in, output_tokens=self._used_out)

    @usage.setter
    def usage(self, value: Usage) -> None:
        self._used_in = value.input_tokens
        self._used_out = value.output_tokens

    def _record_for(self, call: ToolUseContent) -> _Record:
        record = self._records.get(call.id)
        if record is None:
            record = _Record(call.id, call.name, call.input)
            self._records[call.id] = record
        return record

    # --- approvals and client tools ----------------------------------------------------------

    async def _ask(self, request: ApprovalRequest) -> ApprovalDecision:
        if self.approver is not None:
            return await self.approver(request)
        event = anyio.Event()
        box: list[ApprovalDecision] = []
        self._approvals[request.call_id] = (event, box)
        self.status = "awaiting_approval"
        self._emit(
            ApprovalRequired(
                call_id=request.call_id,
                name=request.tool_name,
                input=request.input,
                reason=request.reason,
            )
        )
        try:
            await event.wait()
        finally:
            self._approvals.pop(request.call_id, None)
            self.status = "awaiting_approval" if self._approvals else "running"
        return box[0]

    def decide(
        self,
        call_id: str,
        decision: Literal["allow", "deny", "allow_always"],
        note: str = "",
    ) -> None:
        """Answer an `ApprovalRequired` event (from any thread).

        Args:
            call_id: The call's id, from the event.
            decision: ``allow``, ``deny``, or ``allow_always`` (this tool, for the session).
            note: Shown to the model with a denial.

        Raises:
            AgentError: no call with this id is waiting for a decision.
        """
        if self._off_loop():
            anyio.from_thread.run_sync(self.decide, call_id, decision, note, token=self._token)
            return
        waiting = self._approvals.get(call_id)
        if waiting is None:
            raise AgentError(
                f"no call {call_id!r} is waiting for approval; waiting: "
                f"{', '.join(self._approvals) or 'none'}"
            )
        event, box = waiting
        box.append(ApprovalDecision(decision=decision, note=note))
        event.set()

    def submit_tool_result(
        self, call_id: str, result: ToolResult | str | dict[str, Any] | list[Any]
    ) -> None:
        """Supply the result of a client tool call; continue with ``send()`` / ``stream()``.

        Raises:
            AgentError: no client call with this id is waiting.
        """
        if call_id not in self._pending:
            raise AgentError(
                f"no client tool call {call_id!r} is waiting for a result; waiting: "
                f"{', '.join(self._pending) or 'none'}"
            )
        made = (
            result
            if isinstance(result, ToolResult)
            else text_result(result)
            if isinstance(result, str)
            else json_result(result)
        )
        made = _truncate(made, self.template.max_result_chars)  # as for the agent's own tools
        block = ToolResultContent.model_validate(made.to_block(call_id))
        self._pending[call_id] = block
        record = self._records.get(call_id)
        if record is not None:
            record.result = block
            record.status = "failed" if made.is_error else "done"

    # --- events ------------------------------------------------------------------------------

    def _emit(self, event: AgentEvent) -> None:
        listener = self._listener
        if listener is not None:
            listener(event)

    # --- running -----------------------------------------------------------------------------

    def interrupt(self) -> None:
        """Cancel the running turn (from any thread); nothing happens when no run is going.

        Running tools are cancelled, and every outstanding ``tool_use`` is answered with a
        cancelled error result, so the history stays valid for the next turn.
        """
        if self._off_loop():
            anyio.from_thread.run_sync(self.interrupt, token=self._token)
        elif self._scope is not None:
            self._scope.cancel()
        elif self._running:  # the run has started but not yet opened its cancel scope
            self._interrupt_pending = True

    def _off_loop(self) -> bool:
        """Whether the caller is outside the thread of the event loop running the agent."""
        return (
            self._running and self._token is not None and threading.get_ident() != self._loop_thread
        )

    async def send(
        self, prompt: str | None = None, *, on_event: EventCallbackFunc | None = None
    ) -> AgentReply:
        """Run the agent on `prompt` until the model answers without calling tools.

        `prompt=None` continues after client tool results were submitted. Events go to
        `on_event` as they happen and are all kept on the reply.

        Raises:
            AgentError: the model failed, or the turn limit was reached.
        """
        events: list[AgentEvent] = []

        def collect(event: AgentEvent) -> None:
            events.append(event)
            if on_event is not None:
                on_event(event)

        done = await self._run(prompt, collect, interactive=on_event is not None)
        if isinstance(done, ErrorEvent):
            raise AgentError(done.message) from done.error
        return AgentReply(
            text=done.text,
            usage=done.usage,
            turns=done.turns,
            events=events,
            pending_calls=done.pending_calls,
            interrupted=done.interrupted,
        )

    def send_sync(self, prompt: str | None = None) -> AgentReply:
        """`send` from sync code: scripts, and notebooks with a running event loop."""
        return run_sync(self.send, prompt)

    def stream(self, prompt: str | None = None) -> AgentStream:
        """Run the agent on `prompt`; iterate the result for the events as they happen.

        The last event is `Done` or `ErrorEvent`. Calls needing approval wait for `decide`
        (an `ApprovalRequired` event says which). Leaving the iteration early (``break``, an
        exception, a cancelled caller) ends the run: running tools are cancelled and every
        outstanding call gets a cancelled result.

        Example:
            ```python
            from kode import Agent, AgentTemplate
            from kode.models import ScriptedModel

            agent = Agent.create(
                AgentTemplate(id="streamer", tools=[]), model=ScriptedModel(["Hi there."])
            )
            async with agent.stream("Hello") as events:
                async for event in events:
                    print(event.type)
            ```

            ``async with`` is optional: a plain ``async for event in agent.stream(...)``
            works too; the block only makes the end of the run part of leaving it.
        """
        return AgentStream(self, prompt)

    async def _run(
        self, prompt: str | None, emit: EventCallbackFunc, *, interactive: bool
    ) -> Done | ErrorEvent:
        if self._running and self._abandoned:
            # A stream left early: its run is being cancelled and ends in a moment.
            ended = self._run_ended or anyio.Event()
            self._run_ended = ended
            await ended.wait()
        if self._running:
            raise AgentError(
                "this agent is already running a send() or stream(); wait for it to end, "
                "or call agent.interrupt() first"
            )
        self._interrupt_pending = False
        self._token = anyio.lowlevel.current_token()
        self._loop_thread = threading.get_ident()  # before _running: _off_loop reads both
        self._running = True
        self._abandoned = False
        self._listener = emit
        self._interactive = interactive
        try:
            result = await self._loop(prompt, emit)
        finally:
            self._listener = None
            self._interactive = False
            self._running = False
            waiting = self._run_ended
            self._run_ended = None
            if waiting is not None:
                waiting.set()
        emit(result)
        return result

    def _take_pending(self, prompt: str | None) -> list[ContentBlock] | ErrorEvent:
        """The user message's blocks: submitted client results, then the prompt."""
        blocks: list[ContentBlock] = []
        if self._pending_calls:
            missing = [cid for cid, block in self._pending.items() if block is None]
            if missing:
                return ErrorEvent(
                    message="client tool calls are still waiting for results: "
                    f"{', '.join(missing)}; call submit_tool_result for each, then send()"
                )
            blocks.extend(self._results_in_order(self._pending_calls, self._pending_results()))
            self._pending_calls = []
            self._pending = {}
            self._pending_results_cache = {}
        if prompt is not None:
            blocks.append(TextContent(text=prompt))
        return blocks

    def _pending_results(self) -> dict[str, ToolResultContent]:
        done = dict(self._pending_results_cache)
        done.update({k: v for k, v in self._pending.items() if v is not None})
        return done

    @staticmethod
    def _results_in_order(
        calls: Sequence[ToolUseContent], results: dict[str, ToolResultContent]
    ) -> list[ContentBlock]:
        return [results.get(call.id) or cancelled_result(call) for call in calls]

    async def _loop(self, prompt: str | None, emit: EventCallbackFunc) -> Done | ErrorEvent:
        first = self._take_pending(prompt)
        if isinstance(first, ErrorEvent):
            return first
        if not first:
            return ErrorEvent(message="nothing to send: give a prompt")
        last = self.messages[-1] if self.messages else None
        if last is not None and last.role == "user":
            # The previous run ended on a user message (interrupted, failed model, turn
            # limit): add to it, so roles keep alternating as providers require.
            self.messages[-1] = Message(role="user", content=[*last.content, *first])
        else:
            self.messages.append(Message(role="user", content=first))
        self.status = "running"
        used_in = used_out = 0  # this run's tokens (a Usage is made only for the result)
        tools = self.tools
        settings = self.template.settings()
        turn = 0
        response: ModelResponse | None = None
        recorded = False  # whether `response`'s message is in the history
        calls: list[ToolUseContent] = []
        outcomes: list[CallOutcome | None] = []
        # One cancel scope for the whole run, which `interrupt` cancels (a scope per turn cost
        # as much as a tool call); after it, the turn's variables say where it hit.
        with anyio.CancelScope() as scope:
            self._scope = scope
            try:
                if self._interrupt_pending:  # interrupt() came before the scope was open
                    scope.cancel()
                    await anyio.lowlevel.checkpoint()
                for turn in range(1, self.template.max_turns + 1):
                    response = None
                    recorded = False
                    calls = []
                    outcomes = []
                    try:
                        request = ModelRequest(
                            system=self.template.system_prompt,
                            messages=list(self.messages),
                            tools=tools,
                            settings=settings,
                        )
                        async for event in self.model.stream(request):
                            if isinstance(event, ModelResponse):
                                response = event
                            elif isinstance(event, ModelTextDelta):
                                emit(TextDelta(text=event.text))
                            elif isinstance(event, ModelThinkingDelta):
                                emit(ThinkingDelta(thinking=event.thinking))
                    except ModelError as exc:
                        self.status = "failed"
                        return ErrorEvent(message=f"the model failed: {exc}", error=exc)
                    if response is None:
                        self.status = "failed"
                        return ErrorEvent(message="the model ended its stream without a response")
                    self.messages.append(response.message)
                    recorded = True
                    used_in += response.usage.input_tokens
                    used_out += response.usage.output_tokens
                    self._used_in += response.usage.input_tokens
                    self._used_out += response.usage.output_tokens
                    emit(TurnEnd(turn=turn, stop_reason=response.stop_reason, usage=response.usage))
                    calls = response.message.tool_uses
                    if not calls:
                        self.status = "idle"
                        return Done(
                            text=response.message.text,
                            usage=Usage(input_tokens=used_in, output_tokens=used_out),
                            turns=turn,
                        )
                    outcomes = [None] * len(calls)
                    for call in calls:
                        self._record_for(call)
                    if await run_turn_calls(self, calls, emit, outcomes):
                        pending = [
                            c for c, o in zip(calls, outcomes, strict=True) if o and o.pending
                        ]
                        self._pending_calls = list(calls)
                        self._pending = {c.id: None for c in pending}
                        self._pending_results_cache = {
                            c.id: o.block
                            for c, o in zip(calls, outcomes, strict=True)
                            if o is not None and not o.pending
                        }
                        self.status = "awaiting_client"
                        return Done(
                            text=response.message.text,
                            usage=Usage(input_tokens=used_in, output_tokens=used_out),
                            turns=turn,
                            pending_calls=tuple(c.id for c in pending),
                        )
                    answered = Message(role="user", content=self._answer(calls, outcomes))
                    self.messages.append(answered)
            except BaseException as exc:
                # `interrupt`, or a cancellation from outside (a timeout around send(), a
                # stream closed early): answer the calls of the turn, so no tool_use is left
                # without its tool_result.
                open_calls = response.message.tool_uses if response and recorded else []
                if open_calls:
                    if len(outcomes) != len(open_calls):  # hit before the calls started
                        outcomes = [None] * len(open_calls)
                    blocks = self._answer(open_calls, outcomes, interrupted=True)
                    self.messages.append(Message(role="user", content=blocks))
                cancelled = isinstance(exc, anyio.get_cancelled_exc_class())
                self.status = "idle" if cancelled else "failed"
                raise
            finally:
                self._scope = None
        run_usage = Usage(input_tokens=used_in, output_tokens=used_out)
        if scope.cancelled_caught:
            text = response.message.text if response is not None and recorded else ""
            return Done(text=text, usage=run_usage, turns=turn, interrupted=True)
        self.status = "failed"
        return ErrorEvent(
            message=f"the agent reached its limit of {self.template.max_turns} turns without "
            "a final answer; raise max_turns in the template if the task needs more"
        )

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
        if not interrupted and None not in outcomes:  # every call ended: the common case
            return [outcome.block for outcome in outcomes if outcome is not None]
        blocks: list[ContentBlock] = []
        for call, outcome in zip(calls, outcomes, strict=True):
            if outcome is None or (interrupted and outcome.pending):
                block = cancelled_result(call)
                record = self._record_for(call)
                record.status = "cancelled"
                record.result = block
                record.error_type = ToolErrorType.CANCELLED.value
                blocks.append(block)
            else:
                blocks.append(outcome.block)
        return blocks

    # --- state -------------------------------------------------------------------------------

    @property
    def state(self) -> AgentState:
        """A snapshot of everything needed to rebuild this agent (JSON round-trips)."""
        return AgentState(
            template_id=self.template.id,
            agent_id=self.agent_id,
            session_id=self.session_id,
            messages=[m.model_copy(deep=True) for m in self.messages],
            tool_calls=[r.to_model() for r in self._records.values()],
            todos=[dict(t) for t in self.todos],
            usage=self.usage,
            status=self.status,
            always_allowed=sorted(self._always_allowed),
        )

    @classmethod
    def from_state(
        cls,
        state: AgentState,
        *,
        model: Model,
        template: AgentTemplate | None = None,
        **create_options: Any,
    ) -> Agent:
        """Rebuild an agent from a saved state, re-resolving its tools by name.

        Calls that were running or waiting for approval when the state was saved cannot
        resume: they are answered with cancelled error results, so the history is valid.
        Client calls that were waiting still wait for `submit_tool_result`.

        Args:
            state: The saved state.
            model: The model to talk to.
            template: The template (default: the registered template with the state's id).
            **create_options: Passed to `create` (deps, registry, approver, ...).

        Raises:
            TemplateError: no template is given or registered under the state's id.
        """
        if template is None:
            template = templates.get(state.template_id)
        elif template.id != state.template_id:
            raise TemplateError(
                f"the state was saved from template {state.template_id!r}, not {template.id!r}"
            )
        agent = cls.create(
            template,
            model=model,
            agent_id=state.agent_id,
            session_id=state.session_id,
            **create_options,
        )
        agent.messages = [m.model_copy(deep=True) for m in state.messages]
        agent._records = {r.id: _Record.from_model(r) for r in state.tool_calls}
        agent.todos[:] = [dict(t) for t in state.todos]  # the same list tools see
        agent.usage = state.usage
        agent._always_allowed = set(state.always_allowed)
        last = agent.messages[-1] if agent.messages else None
        if last is not None and last.role == "assistant" and last.tool_uses:
            calls = last.tool_uses
            waiting = [
                c
                for c in calls
                if agent._records.get(c.id) is not None
                and agent._records[c.id].client
                and agent._records[c.id].status == "pending"
            ]
            if waiting and state.status == "awaiting_client":
                agent._pending_calls = list(calls)
                agent._pending = {c.id: None for c in waiting}
                agent._pending_results_cache = {
                    c.id: r.result
                    for c in calls
                    if (r := agent._records.get(c.id)) is not None and r.result is not None
                }
                agent.status = "awaiting_client"
            else:
                results = {
                    c.id: r.result
                    for c in calls
                    if (r := agent._records.get(c.id)) is not None
                    and r.result is not None
                    and r.status in ("done", "failed", "denied", "cancelled")
                }
                blocks = agent._results_in_order(calls, results)
                for call in calls:
                    if call.id not in results:
                        record = agent._record_for(call)
                        record.status = "cancelled"
                agent.messages.append(Message(role="user", content=blocks))
        return agent
