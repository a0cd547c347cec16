"""`Agent`: a template's tools, a model and a conversation that outlives each run.

This module owns the agent's configuration (template, model, tools, deps, approver, hooks,
workspace, services), its creation and resumption from a store, and the state that saves and
restores it. Its history is a `Session` (`kode.agent.session`), which alone changes it; each
``send`` or ``stream`` runs in an `AgentRun` (`kode.agent.run`), which owns the loop.
"""

from __future__ import annotations

import difflib
import functools
import inspect
import logging
import os
import uuid
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import anyio

from kode.agent.blocks import result_block
from kode.agent.caller import AgentCaller
from kode.agent.client_calls import ClientCalls
from kode.agent.deps import deps_problems
from kode.agent.directory import SessionTools
from kode.agent.display import agent_markdown, agent_repr
from kode.agent.errors import AgentError, RunLimitError
from kode.agent.events import AgentEvent, Done, ErrorEvent
from kode.agent.hooks import AgentHooks
from kode.agent.inner_calls import InnerCalls
from kode.agent.permissions import ApprovalDecision, ApprovalRequest, ApproverFunc
from kode.agent.pipeline import truncate_result
from kode.agent.reply import AgentHandle, AgentReply
from kode.agent.run import AgentRun, EventCallbackFunc
from kode.agent.session import Session
from kode.agent.skills import agent_skills, system_prompt
from kode.agent.state import AgentState, AgentStatus, CallRecords
from kode.agent.stream import AgentStream
from kode.agent.subagents import subagent_rights
from kode.agent.template import AgentTemplate, TemplateError, templates
from kode.models.base import Model
from kode.models.messages import Message, Usage
from kode.models.resolve import model_from
from kode.registries.factories import ToolFactoryContext
from kode.registries.policy import ToolPolicy
from kode.registries.resolve import Resolution
from kode.registries.tool_registry import ToolRegistry, normalize_name
from kode.registries.tool_registry import registry as global_registry
from kode.registries.tool_search import TOOL_SEARCH, TOOL_SEARCH_TOOL, ToolSearch
from kode.sessions.errors import SessionConflictError
from kode.sessions.records import ApprovalDecided
from kode.sessions.store import DEFAULT_LEASE_TTL, Store
from kode.sessions.url import store_from
from kode.tools.asking import ElicitationFunc
from kode.tools.collector import collector_paused
from kode.tools.context import ToolContext
from kode.tools.core import Tool
from kode.tools.errors import ToolErrorType
from kode.tools.results import ToolResult, error_result, to_result
from kode.tools.services import CALLER, INNER_CALLS, SESSIONS, SUBAGENTS, TODOS
from kode.tools.skills import SKILLS, SkillError
from kode.tools.sync import run_sync
from kode.tools.workspace import FilePool, Workspace
from kode.tracing import InstrumentSetting, trace_headers, tracing_for

_log = logging.getLogger("kode.agent")

_DECIDE_ATTEMPTS = 20  # reads of a session whose running process keeps appending

SUBAGENT_DENY = ["task_run", "sessions_spawn", "sessions_send"]
"""What a sub-agent may not use unless ``subagent_policy`` says otherwise: starting agents."""

__all__ = ["Agent", "AgentError", "AgentReply"]


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
        session: Session | None = None,
    ) -> None:
        self.template = template
        """The template the agent was made from."""
        self.system_prompt = template.system_prompt
        """The system prompt its requests carry: the template's, then its skills' names."""
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
        """The tools it may call, in order (`request_tools`: those a model request carries)."""
        self.tool_search: ToolSearch | None = None
        """Its deferred tools and what loaded them (`None`: it has none): ``tool_search``."""
        if resolution.deferred:
            self.tool_search = ToolSearch(
                [t for t in self.tools if t.name in resolution.deferred], registry
            )
            self.tools.append(TOOL_SEARCH_TOOL)
        self._by_name: dict[str, Tool[..., Any]] = {}
        for made in self.tools:
            self._by_name[normalize_name(made.name)] = made
            for alias in getattr(made, "aliases", ()):
                self._by_name.setdefault(normalize_name(alias), made)
        for alias, target in resolution.aliases.items():
            found = self._by_name.get(normalize_name(target))
            if found is not None:
                self._by_name.setdefault(alias, found)
        self.session = session or Session(session_id, template_id=template.id)
        """The history (messages, calls, approvals, usage, todos, status) and its store."""
        self.workspace: Workspace | None = None
        """The directory its tools may touch."""
        self.files = FilePool()
        """What its tools read and wrote (refuses writes over unseen changes)."""
        self.services: dict[str, Any] = {}
        """What its tools share, by `ServiceKey` name (see `ToolContext.services`)."""
        self.services[TODOS.name] = self.session.todos  # of their keys' types: set unchecked
        self.services[SUBAGENTS.name] = AgentHandle(self)
        if self.session.store is not None:  # the session tools reach the store's sessions
            self.services[SESSIONS.name] = SessionTools(self)
        if self.tool_search is not None:
            TOOL_SEARCH.set(self.services, self.tool_search)
        self.services[CALLER.name] = AgentCaller(self)
        self.services[INNER_CALLS.name] = InnerCalls(self, lambda: self._current)
        self.elicitation: ElicitationFunc | None = None
        """Answers the questions its calls ask the user (``ctx.elicit``, MCP servers'
        elicitations): a UI, a prompt; `None`: such a question is an error the model sees."""
        self.subagent_models: dict[str, Model] = {}
        """Models for sub-agents by template id (others use this agent's model)."""
        self._create_options: dict[str, Any] = {}
        self._current: AgentRun | None = None  # the run going on, if any
        self.tracing = tracing_for(None)
        """Its spans and metrics (`kode.tracing`); `None` when it is not instrumented."""

    # --- the history: the session's, read here; only its methods change it --------------------

    @property
    def messages(self) -> list[Message]:
        """The conversation (the session's list: change it only through the session)."""
        return self.session.messages

    @property
    def records(self) -> CallRecords:
        """Every tool call and what became of it, by id."""
        return self.session.records

    @property
    def client_calls(self) -> ClientCalls:
        """The client tool calls waiting for `submit_tool_result`."""
        return self.session.client_calls

    @property
    def always_allowed(self) -> set[str]:
        """Tools the user allowed for the session (``allow_always``), lower-case."""
        return self.session.always_allowed

    @property
    def usage(self) -> Usage:
        """Tokens used so far."""
        return self.session.usage

    @property
    def status(self) -> AgentStatus:
        """What the agent is doing."""
        return self.session.status

    @property
    def todos(self) -> list[dict[str, Any]]:
        """The agent's todo list (for todo tools)."""
        return self.session.todos

    # --- creation ----------------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        template: AgentTemplate | str,
        *,
        model: Model | str,
        deps: Any = None,
        registry: ToolRegistry | None = None,
        policy: ToolPolicy | Sequence[ToolPolicy] | None = None,
        approver: ApproverFunc | None = None,
        elicitation: ElicitationFunc | None = None,
        hooks: AgentHooks | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
        config: dict[str, Any] | None = None,
        channel: str | None = None,
        sandboxed: bool = False,
        workspace: str | os.PathLike[str] | Workspace | None = None,
        subagent_policy: ToolPolicy | None = None,
        subagent_models: Mapping[str, Model] | None = None,
        store: Store | str | None = None,
        lease_ttl: float = DEFAULT_LEASE_TTL,
        instrument: InstrumentSetting = None,
        services: Mapping[str, Any] | None = None,
    ) -> Agent:
        """Make an agent from a template (or a template id), resolving its tools now.

        Args:
            template: The template, or its id in the global template registry.
            model: The model to talk to: a `Model`, or a model string (`model_from`):
                ``"anthropic:<model>"`` / ``"openai:<model>"`` for `AnthropicModel` /
                `OpenAIModel` with their default clients (API keys from the environment),
                ``"scripted:<file.json>"`` for a `ScriptedModel` playing a file's turns.
            deps: The application's dependencies, given to tools as ``ctx.deps``.
            registry: Where tools are looked up (default: the global registry).
            policy: Policy layers applied before the template's own (global → agent → ...).
            approver: Decides calls that need approval.
            elicitation: Answers the questions its calls ask the user (``ctx.elicit``, an MCP
                server's elicitation): a form to fill in or a page to open.
            hooks: Hooks run after the template's hooks.
            agent_id: The agent's id (default: a new one).
            session_id: The session's id (default: a new one).
            config: Configuration for tool factories.
            channel: Where the agent talks, for tool factories.
            sandboxed: Whether the agent runs sandboxed, for tool factories.
            workspace: The directory its tools may touch (a path or a `Workspace` with extra
                allowed paths); `None` leaves tools to use the current directory.
            subagent_policy: The policy layer added for sub-agents this agent starts
                (``task_run``, ``sessions_spawn``); default: sub-agents cannot start agents
                (no ``task_run``, ``sessions_spawn`` or ``sessions_send``).
            subagent_models: Models for sub-agents by template id; a sub-agent whose
                template is not listed uses this agent's model.
            store: Where the session is kept: a `Store` or a URL (``sqlite:///agent.db``,
                ``postgresql://...``, see `store_from`). Every change is written to it before
                the next step begins, and `resume` continues the session in another process.
                The session is made in the store (and its lease taken) when the first run
                starts; `None` keeps it in memory.
            lease_ttl: Seconds the lease on the session lasts between renewals (a run renews
                it as it writes); another process can take over a session whose lease ran out.
            instrument: Trace its runs with OpenTelemetry (``invoke_agent``, ``chat`` and
                ``execute_tool`` spans and the GenAI metrics): ``True``, an
                `kode.tracing.Instrumentation` with providers of its own, ``False`` (never), or
                ``None`` (as `kode.tracing.instrument` switched it for every agent).
            services: Services its tools get from the start, by name (``{"runtime_policy":
                RuntimePolicy(...)}``), besides those the agent makes itself; the same as
                setting ``agent.services[name]`` after `create`, but seen by the tools'
                ``on_agent_create`` too. A sub-agent gets its parent's settings this way.

        Raises:
            AgentError: a template entry names no tool (the message lists close names), a
                profile is unknown, or a tool's context requires deps (``ToolContext[Deps]``)
                that `deps` does not give (missing, or not an instance of ``Deps``).
            TypeError: `model` is neither a model nor a string, or `workspace` is not a path
                or a `Workspace`.
            ValueError: `model` is a string that names no provider or no model, or a
                ``scripted:`` file that does not hold valid turns.
        """
        model = model_from(model)
        if isinstance(template, str):
            template = templates.get(template)
        elif not isinstance(template, AgentTemplate):
            raise TypeError(
                f"template must be an AgentTemplate or a registered template id, got "
                f"{type(template).__name__}"
            )
        reg = registry if registry is not None else global_registry
        layers: list[ToolPolicy] = (
            [] if policy is None else [policy] if isinstance(policy, ToolPolicy) else list(policy)
        )
        if template.policy is not None:
            layers.append(template.policy.to_policy(f"template {template.id!r}"))
        agent_id = agent_id or f"agent_{uuid.uuid4().hex[:12]}"
        session_id = session_id or f"session_{uuid.uuid4().hex[:12]}"
        space = Workspace.of(workspace, what="Agent.create: workspace")
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
            resolution = reg.resolve(
                template.tools, layers, factory_ctx, deferred=template.deferred
            )
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
        if resolution.deferred and TOOL_SEARCH_TOOL.name in resolution.metas:
            raise AgentError(
                f"agent template {template.id!r} has deferred tools, which need kode's "
                f"{TOOL_SEARCH_TOOL.name!r} tool, and also lists a tool of that name: rename "
                "that tool, or defer nothing"
            )
        problems = deps_problems(resolution.tools, deps)
        if problems:
            raise AgentError(
                f"agent template {template.id!r}: {'; '.join(problems)}. Pass the deps its "
                "tools need with Agent.create(deps=...) (kode run: --deps module:factory)."
            )
        try:
            skills = agent_skills(template, resolution.tools, space.root if space else None)
        except SkillError as exc:
            raise AgentError(f"agent template {template.id!r}: {exc}") from None
        except ValueError as exc:  # skills without the skill tool: the message names the template
            raise AgentError(str(exc)) from None
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
            session=Session(
                session_id,
                template_id=template.id,
                store=store_from(store) if store is not None else None,
                lease_ttl=lease_ttl,
                owns_store=isinstance(store, str),
            ),
        )
        made.workspace = space
        for name, value in (services or {}).items():
            made.services.setdefault(name, value)  # the agent's own (todos, sub-agents) stay
        if skills is not None:
            SKILLS.set(made.services, skills)
            made.system_prompt = system_prompt(template, skills)
        made.elicitation = elicitation
        made.tracing = tracing_for(instrument)
        made.subagent_models = dict(subagent_models or {})
        for chosen in made.tools:
            if chosen.on_agent_create is not None or chosen.agent_instructions is not None:
                context = ToolContext(
                    tool_name=chosen.name,
                    agent_id=agent_id,
                    session_id=session_id,
                    deps=deps,
                    workspace=space,
                    files=made.files,
                    services=made.services,
                )
                if chosen.on_agent_create is not None:
                    chosen.on_agent_create(context)
                if chosen.agent_instructions is not None:
                    told = chosen.agent_instructions(made.tools, context)
                    if told:
                        made.system_prompt = f"{made.system_prompt}\n\n{told}".lstrip()
        made._create_options = {
            "deps": deps,
            "registry": reg,
            "policy": [
                *layers,
                subagent_policy
                or ToolPolicy(
                    name="sub-agent",
                    deny=[n for n in SUBAGENT_DENY if n == "task_run" or n in reg],
                ),
            ],
            "approver": approver,
            "elicitation": elicitation,
            "hooks": hooks,
            "config": config,
            "channel": channel,
            "sandboxed": sandboxed,
            "workspace": space,
            "instrument": instrument,
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
        workspace: str | os.PathLike[str] | Workspace | None = None,
    ) -> AgentReply:
        """Run a sub-agent from a registered template on `prompt`; return its reply.

        Its model is `model` if given, else the one `subagent_models` names for the template,
        else this agent's. It inherits deps, registry and elicitation, and never has more
        rights than this agent (`kode.agent.subagents`): its permission settings are decided
        together with this agent's, its tools pass this agent's policy layers and are among
        this agent's tools (and the sub-agent layer: no ``task_run`` by default), it gets
        this agent's shell, web and browser settings, its workspace is this agent's (or
        `workspace`, a directory inside it), and its approvals go to this agent's approver
        or run. Its events go to `on_event`; nobody answers approvals through them.

        Raises:
            TemplateError: no template is registered under `template_id`, or `workspace`
                lies outside this agent's.
        """
        template, chosen, options = self.subagent_options(
            template_id, model=model, workspace=workspace
        )
        child = Agent.create(template, model=chosen, **options)
        try:  # its approvals travel up (its approver), never to events only a tool sees
            return await child.send(prompt, on_event=on_event, interactive=False)
        finally:
            await child.aclose()

    def subagent_options(
        self,
        template_id: str,
        *,
        model: Model | None = None,
        workspace: str | os.PathLike[str] | Workspace | None = None,
    ) -> tuple[AgentTemplate, Model, dict[str, Any]]:
        """The template, model and `create` options of a sub-agent this agent starts.

        As `run_subagent` describes (`kode.agent.subagents.subagent_rights` makes the template
        and the options that limit it); the store is not among the options (a caller that
        keeps the sub-agent's session adds it).

        Raises:
            TemplateError: no template is registered under `template_id`, or `workspace`
                lies outside this agent's.
        """
        template = templates.get(template_id)
        chosen = model or self.subagent_models.get(template_id) or self.model
        options = dict(self._create_options)
        rights = subagent_rights(self, template, layers=options["policy"], workspace=workspace)
        options.update(
            policy=rights.policy,
            approver=rights.approver,
            services=rights.services,
            workspace=rights.workspace,
        )
        return rights.template, chosen, options

    @classmethod
    async def resume(
        cls,
        session_id: str,
        *,
        store: Store | str,
        model: Model | str,
        template: AgentTemplate | None = None,
        **create_options: Any,
    ) -> Agent:
        """An agent for a session kept in `store`, ready to continue where its process stopped.

        It takes the session's lease and reads its records; the next ``send()`` (a prompt is
        optional) or ``stream()`` first settles the turn that was going on, by these rules:
        a call that ended keeps its result and never runs again; a call that had not started
        runs; a call that was running runs again only if its tool only reads (kinds read,
        search, think) or is idempotent (``define_tool(idempotent=True)``), otherwise it is
        answered with an error saying a restart interrupted it and it may have partly run; a
        call waiting for approval waits again (a decision made meanwhile, by `decide_in_store`
        from any process, is used). Then the run goes on as usual. Client calls that waited
        still wait for `submit_tool_result`.

        Args:
            session_id: The session's id.
            store: The store, or its URL (see `create`).
            model: The model to talk to (as for `create`).
            template: The template (default: the registered template the session names).
            **create_options: Passed to `create` (deps, registry, approver, lease_ttl, ...).

        Raises:
            SessionNotFoundError: the store has no such session.
            SessionLeaseError: another process holds the session (it is running it, or
                stopped less than its lease's ``ttl`` ago on another host: a lease whose
                owner was a process of this host that has ended is taken at once); the
                message says who, and until when.
            TemplateError: no template is given and none is registered under the session's
                template id.
        """
        kept = store_from(store)
        try:
            header = await kept.get(session_id)
            if template is None:
                template = templates.get(header.template)
            elif template.id != header.template:
                raise TemplateError(
                    f"session {session_id!r} runs template {header.template!r}, not {template.id!r}"
                )
            agent = cls.create(
                template, model=model, session_id=session_id, store=kept, **create_options
            )
        except BaseException:
            if isinstance(store, str):
                await kept.aclose()
            raise
        agent.session.owns_store = isinstance(store, str)
        try:
            await agent.session.open(resume=True)
        except BaseException:
            await agent.session.close()
            raise
        return agent

    @classmethod
    def resume_sync(
        cls,
        session_id: str,
        *,
        store: Store | str,
        model: Model | str,
        template: AgentTemplate | None = None,
        **create_options: Any,
    ) -> Agent:
        """`resume` from sync code: scripts, and notebooks with a running event loop.

        Continue with `send_sync`, which gives the lease up when its run ends; `close_sync`
        gives it up without a run (so does the interpreter's exit).

        Raises:
            SessionNotFoundError: as `resume`.
            SessionLeaseError: as `resume`.
            TemplateError: as `resume`.
        """
        resumed: Agent = run_sync(
            functools.partial(
                cls.resume,
                session_id,
                store=store,
                model=model,
                template=template,
                **create_options,
            )
        )
        return resumed

    @staticmethod
    async def decide_in_store(
        store: Store | str,
        session_id: str,
        call_id: str,
        decision: Literal["allow", "deny", "allow_always"],
        note: str = "",
        *,
        scope: Literal["tool", "server", "pattern"] = "tool",
        pattern: str = "",
        input: dict[str, Any] | None = None,
    ) -> None:
        """Decide a call of a stored session that waits for approval, from any process.

        The process running the session sees the decision within a moment (it reads the
        store while it waits); a session whose process stopped uses it when resumed. The
        first decision wins. `scope`, `pattern` and `input` are those of `decide`; a changed
        `input` is validated by the process that runs the call (an invalid one becomes the
        call's error result).

        Raises:
            SessionNotFoundError: the store has no such session.
            AgentError: the call is not waiting for approval, or was decided already.
        """
        kept = store_from(store)
        try:
            await Agent._decide_in(
                kept, session_id, call_id, decision, note, scope=scope, pattern=pattern, input=input
            )
        finally:
            if isinstance(store, str):
                await kept.aclose()

    @staticmethod
    async def _decide_in(
        kept: Store,
        session_id: str,
        call_id: str,
        decision: Literal["allow", "deny", "allow_always"],
        note: str,
        *,
        scope: Literal["tool", "server", "pattern"] = "tool",
        pattern: str = "",
        input: dict[str, Any] | None = None,
    ) -> None:
        decided = ApprovalDecided(
            call_id=call_id,
            decision=decision,
            note=note,
            scope=scope,
            pattern=pattern,
            input=input,
            trace=trace_headers() or None,
        )
        # Check and append are one conditional write (compare-and-set on the last record):
        # of two deciders that read the same log, exactly one appends; the other reads again
        # and finds the call decided. Records the running process appends meanwhile make a
        # decider read again too, a bounded number of times.
        for _ in range(_DECIDE_ATTEMPTS):
            state = (await kept.load(session_id)).state()
            waiting = state.approvals.get(call_id)
            if waiting is None or waiting.decision is not None:
                open_ = [k for k, v in state.approvals.items() if v.decision is None]
                why = (
                    "was decided already" if waiting is not None else "is not waiting for approval"
                )
                raise AgentError(
                    f"call {call_id!r} of session {session_id!r} {why}; waiting: "
                    f"{', '.join(open_) or 'none'}"
                )
            try:
                await kept.append(session_id, [decided], if_last_seq=state.last_seq)
            except SessionConflictError:
                continue
            return
        raise AgentError(
            f"session {session_id!r} changed {_DECIDE_ATTEMPTS} times while call {call_id!r} "
            "was being decided; decide it again"
        )

    async def aclose(self) -> None:
        """Release what the agent's tools hold, and the session's lease.

        Every service with an ``aclose`` or ``close`` method (background processes,
        connections) is closed; one that fails is logged and the others still close.
        """
        try:
            await self.session.close()
        except Exception as exc:  # the store failed: the services must still close
            _log.error("closing the agent's session failed", exc_info=exc)
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

    def request_tools(self) -> list[Tool[..., Any]]:
        """The tools the next model request carries: all but the deferred ones not loaded yet.

        With a model that searches natively (its ``native_tool_search`` true) ``tool_search``
        is left out: the provider's own search tool takes its place (`request_deferred`).
        """
        if self.tool_search is None:
            return self.tools
        shown = self.tool_search.visible(self.tools, self.session.messages)
        if self.searches_natively:
            return [t for t in shown if t is not TOOL_SEARCH_TOOL]
        return shown

    @property
    def searches_natively(self) -> bool:
        """Whether its deferred tools are found by the provider's tool search, not kode's."""
        native = getattr(self.model, "native_tool_search", False)
        return self.tool_search is not None and native is True

    def request_deferred(self) -> list[Tool[..., Any]]:
        """The deferred tools not loaded yet, for a model that searches natively.

        Such a model sends them with ``defer_loading`` (`ModelRequest.deferred`); for any
        other model this is empty.
        """
        if self.tool_search is None or not self.searches_natively:
            return []
        return self.tool_search.waiting(self.session.messages)

    def unknown_tool_result(self, name: str) -> ToolResult:
        """The error result for a call to a tool the agent does not have (names close ones).

        A tool a policy layer left out is ``policy_violation``, with the layer and the reason;
        any other name is ``tool_not_registered``.
        """
        names = [t.name for t in self.request_tools()]
        if self.tool_search is not None:
            names.append("and more that tool_search finds")
        denied = self.resolution.denied.get(normalize_name(name))
        if denied is not None:
            return error_result(
                f"Tool '{name.strip()}' is not allowed for this agent ({denied}). Available "
                f"tools: {', '.join(names) or 'none'}.",
                type=ToolErrorType.POLICY_VIOLATION,
            )
        close = difflib.get_close_matches(normalize_name(name), list(self._by_name), n=1)
        hint = f" Did you mean '{self._by_name[close[0]].name}'?" if close else ""
        return error_result(
            f"Tool '{name.strip()}' is not available.{hint} Available tools: "
            f"{', '.join(names) or 'none'}.",
            type=ToolErrorType.TOOL_NOT_REGISTERED,
        )

    # --- approvals and client tools ----------------------------------------------------------

    def decide(
        self,
        call_id: str,
        decision: Literal["allow", "deny", "allow_always"],
        note: str = "",
        *,
        scope: Literal["tool", "server", "pattern"] = "tool",
        pattern: str = "",
        input: dict[str, Any] | None = None,
    ) -> None:
        """Answer an `ApprovalRequired` event (from any thread).

        Args:
            call_id: The call's id, from the event.
            decision: ``allow``, ``deny``, or ``allow_always`` (for the rest of the session:
                the tool, its server or calls matching a pattern, by `scope`).
            note: Shown to the model with a denial.
            scope: What ``allow_always`` covers: ``tool``, ``server`` (every tool of the
                call's MCP server) or ``pattern`` (the tool's calls whose pattern, e.g. a
                ``bash_run`` command, starts with `pattern`).
            pattern: For scope ``pattern``: the prefix (empty: the event's ``pattern``).
            input: Run the call with these arguments instead (validated here first).

        Raises:
            AgentError: no call with this id is waiting for a decision, `input` is not valid
                for the tool (the call still waits), or `scope` cannot apply to the call.
        """
        run = self._current
        request = run.approval_request(call_id) if run is not None else None
        if request is not None:
            if input is not None:
                if decision == "deny":
                    raise AgentError("input= changes a call that runs: give it with an allow")
                tool = self.lookup(request.tool_name)
                checked = tool.prepare(input) if tool is not None else None
                if isinstance(checked, ToolResult):
                    raise AgentError(
                        f"the input given for call {call_id!r} is not valid for "
                        f"{request.tool_name}, and the call still waits: {checked.text}"
                    )
            if decision == "allow_always" and scope == "server" and not request.server:
                raise AgentError(
                    f"{request.tool_name} is not an MCP tool, so there is no server to allow; "
                    "use scope='tool'"
                )
            if (
                decision == "allow_always"
                and scope == "pattern"
                and not (pattern or request.pattern)
            ):
                raise AgentError(
                    f"{request.tool_name} gives no pattern for its calls; pass pattern=... or "
                    "use scope='tool'"
                )
        answer = ApprovalDecision(
            decision=decision, note=note, scope=scope, pattern=pattern, input=input
        )
        if run is None or not run.decide(call_id, answer):
            waiting = run.waiting_for_approval if run is not None else []
            raise AgentError(
                f"no call {call_id!r} is waiting for approval; waiting: "
                f"{', '.join(waiting) or 'none'}"
            )

    @property
    def asks_by_event(self) -> bool:
        """Whether a run is going whose approvals someone answers with `decide`.

        So a run of ``stream()`` or ``send(on_event=...)``: its `ApprovalRequired` events
        reach someone who can answer them.
        """
        run = self._current
        return run is not None and run.interactive and not run.ended.is_set()

    async def ask_approval(self, request: ApprovalRequest) -> ApprovalDecision | None:
        """Ask for approval of something a running call wants to do, as for a tool call.

        The approver decides, or (in ``stream()`` or ``send(on_event=...)``) an
        `ApprovalRequired` event waits for `decide`. `None` when no run is going or nobody can
        answer (no approver and no one listening).
        """
        run = self._current
        if run is None or (self.approver is None and not run.interactive):
            return None
        return await run.ask(request)

    def submit_tool_result(
        self, call_id: str, result: ToolResult | str | dict[str, Any] | list[Any]
    ) -> None:
        """Supply the result of a client tool call; continue with ``send()`` / ``stream()``.

        The result takes the path a tool's return value takes: a string is text, a dict or a
        list JSON (one that cannot be encoded becomes an error result saying why), the text is
        truncated to the template's ``max_result_chars`` and lone surrogates are replaced.

        Raises:
            AgentError: no client call with this id is waiting.
        """
        record = self.records.get(call_id)
        made = to_result(result, tool_name=record.name.strip() if record else call_id)
        made = truncate_result(made, self.template.max_result_chars)  # as for its own tools
        block = result_block(call_id, made)  # the one way results enter the history
        if not self.session.submit_client_result(call_id, block):
            raise AgentError(
                f"no client tool call {call_id!r} is waiting for a result; waiting: "
                f"{', '.join(self.client_calls.waiting) or 'none'}"
            )

    # --- running -----------------------------------------------------------------------------

    def interrupt(self) -> None:
        """Cancel the running turn (from any thread); nothing happens when no run is going.

        Running tools are cancelled, and every outstanding ``tool_use`` is answered with a
        cancelled error result, so the history stays valid for the next turn.
        """
        run = self._current
        if run is not None:
            run.interrupt()

    async def send(
        self,
        prompt: str | None = None,
        *,
        on_event: EventCallbackFunc | None = None,
        interactive: bool | None = None,
    ) -> AgentReply:
        """Run the agent on `prompt` until the model answers without calling tools.

        `prompt=None` continues after client tool results were submitted. Events go to
        `on_event` as they happen and are all kept on the reply. A call that needs approval
        and has no approver waits for `decide` when someone listens (`interactive`; default:
        when `on_event` is given), else it is refused at once.

        Raises:
            AgentError: the model failed, or the turn limit was reached.
        """
        events: list[AgentEvent] = []
        collect: EventCallbackFunc = events.append  # (a turn of many calls emits two each)
        if on_event is not None:
            listener = on_event

            def collect(event: AgentEvent) -> None:
                events.append(event)
                listener(event)

        listening = on_event is not None if interactive is None else interactive
        run = AgentRun(self, collect, interactive=listening)
        done = await self.execute(run, prompt)
        if isinstance(done, ErrorEvent):
            if isinstance(done.error, RunLimitError):
                raise done.error
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
        """`send` from sync code: scripts, and notebooks with a running event loop.

        With a store, the run gives up the session's lease when it ends (its records are all
        written by then), so another process can resume the session at once; the next
        `send_sync` takes the lease again (reading the session again if another process ran
        it meanwhile).

        Raises:
            AgentError: as `send`.
            SessionLeaseError: another process holds the session's lease.
        """
        return run_sync(self._send_and_release, prompt)

    async def _send_and_release(self, prompt: str | None) -> AgentReply:
        try:
            reply = await self.send(prompt)
        except BaseException:
            with anyio.CancelScope(shield=True):
                try:
                    await self.session.release_lease()
                except Exception as exc:  # the run's own error is the one to raise
                    _log.error("giving up the session's lease failed", exc_info=exc)
            raise
        await self.session.release_lease()
        return reply

    def close_sync(self) -> None:
        """`aclose` from sync code: release what the agent's tools hold, and the lease."""
        run_sync(self.aclose)

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

    async def execute(self, run: AgentRun, prompt: str | None) -> Done | ErrorEvent:
        """Carry out `run` on `prompt`: what `send` and `stream` do with the run they make.

        One run at a time: a run of a stream that was left early is waited for (it is being
        cancelled and ends in a moment).

        Raises:
            AgentError: another run of this agent is going on, or `run` was made for another
                agent or has run already.
        """
        if run.agent is not self or run.ended.is_set():
            raise AgentError(
                "this AgentRun cannot be carried out here: "
                + ("it was made for another agent" if run.agent is not self else "it has run")
                + "; make a new one with AgentRun(agent, emit, interactive=...)"
            )
        current = self._current
        if current is not None and current.abandoned:
            await current.ended.wait()
        if self._current is not None:
            raise AgentError(
                "this agent is already running a send() or stream(); wait for it to end, "
                "or call agent.interrupt() first"
            )
        self._current = run
        try:
            return await run.execute(prompt)
        finally:
            self._current = None

    # --- display -----------------------------------------------------------------------------

    def __repr__(self) -> str:
        return agent_repr(self)

    def _repr_markdown_(self) -> str:
        run = self._current
        return agent_markdown(self, run.waiting_for_approval if run is not None else [])

    # --- state -------------------------------------------------------------------------------

    @property
    def state(self) -> AgentState:
        """A snapshot of everything needed to rebuild this agent (JSON round-trips)."""
        return AgentState(
            template_id=self.template.id,
            agent_id=self.agent_id,
            session_id=self.session_id,
            messages=[m.model_copy(deep=True) for m in self.messages],
            tool_calls=self.records.snapshot(),
            todos=[dict(t) for t in self.todos],
            usage=self.usage,
            status=self.status,
            always_allowed=sorted(self.always_allowed),
            template=self.template,
            compaction=self.session.compaction,
        )

    @classmethod
    def from_state(
        cls,
        state: AgentState,
        *,
        model: Model | str,
        template: AgentTemplate | None = None,
        **create_options: Any,
    ) -> Agent:
        """Rebuild an agent from a saved state, re-resolving its tools by name.

        Calls that were running or waiting for approval when the state was saved cannot
        resume: they are answered with cancelled error results, so the history is valid.
        Client calls that were waiting still wait for `submit_tool_result`.

        Args:
            state: The saved state.
            model: The model to talk to (as for `create`).
            template: The template (default: the registered template with the state's id,
                else the one saved in the state, which has no hooks: pass ``hooks=`` to
                have them again).
            **create_options: Passed to `create` (deps, registry, approver, ...).

        Raises:
            TemplateError: no template is given, saved or registered under the state's id.
        """
        if template is None:
            if state.template is not None and state.template_id not in templates:
                template = state.template
            else:  # the registered template keeps its hooks; raises if there is none
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
        with collector_paused():  # a long history: see kode.tools.collector
            agent.session.restore_agent_state(state)
        return agent
