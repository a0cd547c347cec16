"""Typed service keys: what an agent shares with its tools, by name and by type.

An agent hands its tools shared things through ``ctx.services`` (its todo list, its
background processes, its web settings, the handle that starts sub-agents). A `ServiceKey`
names one of them together with its type, so the code that puts a service there and the tool
that takes it out agree on both, and a wrong value is a clear `TypeError` at the point of
use, not an ``AttributeError`` deep in a tool.

The keys both the agent and the built-in tools use live here; a built-in tool module defines
the keys only it reads (``kode.builtin.runtime.PROCESSES``, ``kode.builtin.web.WEB``). A key
made with ``passed_on=True`` names a setting that limits what tools may do (the shell command
policy, the web rules): a sub-agent gets the value of the agent that starts it
(`passed_on_names`), so it never runs with looser settings than its parent.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, runtime_checkable

from kode.tools.asking import ToolCaller

if TYPE_CHECKING:
    from kode.tools.context import ToolContext
    from kode.tools.core import Tool

__all__ = [
    "AGENT",
    "CALLER",
    "INNER_CALLS",
    "SESSIONS",
    "SUBAGENTS",
    "TODOS",
    "AgentLink",
    "InnerAnswer",
    "InnerCaller",
    "ServiceKey",
    "SessionDirectory",
    "SubagentRunner",
    "ToolCaller",
    "passed_on_names",
]

T = TypeVar("T")


class ServiceKey(Generic[T]):
    """The name and type of one service in ``ctx.services`` / ``agent.services``.

    Args:
        name: The key in the services mapping.
        kind: The type a value must have (checked with `isinstance`).
        doc: What the service is, for error messages.
        passed_on: Whether a sub-agent gets the value of the agent that starts it (a setting
            that limits what tools may do; see `passed_on_names`).

    Example:
        ```python
        from kode.tools.services import ServiceKey

        COUNTER = ServiceKey("counter", list, doc="calls counted so far")
        services: dict[str, object] = {}
        seen = COUNTER.get_or_set(services, list)
        seen.append(1)
        assert COUNTER.get(services) == [1]
        ```
    """

    __slots__ = ("doc", "kind", "name", "passed_on")

    def __init__(
        self, name: str, kind: type[Any], *, doc: str = "", passed_on: bool = False
    ) -> None:
        self.name = name
        """The key in the services mapping."""
        self.kind = kind
        """The type its value must have."""
        self.doc = doc
        """What the service is."""
        self.passed_on = passed_on
        """Whether a sub-agent gets the value of the agent that starts it."""
        if passed_on:
            _PASSED_ON[name] = kind

    def get(self, services: Mapping[str, Any]) -> T | None:
        """The service, or `None` when it is not there.

        Raises:
            TypeError: something that is not a `kind` is stored under the name.
        """
        value = services.get(self.name)
        if value is not None and not isinstance(value, self.kind):
            raise TypeError(
                f"services[{self.name!r}] must be a {self.kind.__name__}"
                f"{f' ({self.doc})' if self.doc else ''}, got {type(value).__name__}"
            )
        return value

    def get_or_set(self, services: MutableMapping[str, Any], factory: Callable[[], T]) -> T:
        """The service, made with `factory` and stored first if it is not there.

        Raises:
            TypeError: something that is not a `kind` is stored under the name.
        """
        value = self.get(services)
        if value is None:
            value = factory()
            self.set(services, value)
        return value

    def set(self, services: MutableMapping[str, Any], value: T) -> None:
        """Store the service.

        Raises:
            TypeError: `value` is not a `kind`.
        """
        if not isinstance(value, self.kind):
            raise TypeError(
                f"services[{self.name!r}] must be a {self.kind.__name__}, got "
                f"{type(value).__name__}"
            )
        services[self.name] = value

    def __repr__(self) -> str:
        return f"ServiceKey({self.name!r}, {self.kind.__name__})"


_PASSED_ON: dict[str, type[Any]] = {}  # name -> type, of every key made with passed_on=True


def passed_on_names() -> tuple[str, ...]:
    """The names of the services a sub-agent gets from the agent that starts it.

    Those of every `ServiceKey` made with ``passed_on=True`` so far (a module defines its keys
    when it is imported, before an agent can hold such a service).
    """
    return tuple(_PASSED_ON)


@runtime_checkable
class SubagentRunner(Protocol):
    """What the `SUBAGENTS` service does: run a sub-agent from a registered template."""

    @property
    def agent_id(self) -> str:
        """The id of the agent that starts sub-agents."""
        ...

    async def run_subagent(
        self,
        template_id: str,
        prompt: str,
        *,
        on_event: Callable[[Any], None] | None = None,
    ) -> str:
        """Run a sub-agent on `prompt`; return its final text."""
        ...


TODOS: ServiceKey[list[dict[str, Any]]] = ServiceKey(
    "todos", list, doc="the agent's todo list, saved with its state"
)
"""The agent's todo list: one dict per item (see `kode.builtin.todo`)."""

SUBAGENTS: ServiceKey[SubagentRunner] = ServiceKey("agent", SubagentRunner, doc="starts sub-agents")
"""The handle that runs sub-agents for ``task_run``."""


@runtime_checkable
class AgentLink(Protocol):
    """What the `AGENT` service offers a running call: the agent's model and its user's approval.

    A call that wants to do something beyond itself (an MCP server asking the agent's model to
    answer a message, for one) asks through this, so the agent's permission settings and
    approver decide it as they decide tool calls.
    """

    @property
    def model(self) -> Any:
        """The agent's model (a `kode.models.Model`)."""
        ...

    async def approve(
        self,
        tool: Tool[..., Any],
        arguments: dict[str, Any],
        ctx: ToolContext[Any],
        *,
        call_id: str,
    ) -> str | None:
        """Decide an action described as a call of `tool` by the agent's permission rules.

        It is asked for like a tool call that needs approval (the approver, or an
        ``ApprovalRequired`` event answered with ``decide``) when the rules say so.

        Returns:
            `None` when it may go ahead, else why not (a sentence for the model).
        """
        ...


AGENT: ServiceKey[AgentLink] = ServiceKey(
    "agent", AgentLink, doc="the running agent: its model and its user's approval"
)
"""The agent a call runs in (the same handle as `SUBAGENTS`, seen for its model and approvals)."""


@runtime_checkable
class SessionDirectory(Protocol):
    """What the `SESSIONS` service does: the sessions an agent's store holds that it may reach.

    Every method returns JSON data. A session the agent may not reach, or that does not
    exist, is a `LookupError`; a session busy in another run, or a bad argument, a
    `ValueError`. Each message says what was wrong.
    """

    async def list_sessions(
        self, *, template: str | None, label: str | None, status: str | None, limit: int
    ) -> list[dict[str, Any]]:
        """The sessions the agent may reach, the most recently active first."""
        ...

    async def history(self, session_id: str, *, limit: int) -> list[dict[str, Any]]:
        """The last `limit` messages of a session: role and text, calls and results named."""
        ...

    async def status(self, session_id: str) -> dict[str, Any]:
        """A session's status, template, label, usage, and the calls and approvals waiting."""
        ...

    async def send(
        self, session_id: str, message: str, *, wait: bool, seconds: float
    ) -> dict[str, Any]:
        """Send a message into a session; with `wait`, run it and return its reply."""
        ...

    async def spawn(
        self, template_id: str, prompt: str, *, label: str | None, wait: bool, seconds: float
    ) -> dict[str, Any]:
        """Start a sub-agent in a new session on `prompt`; with `wait`, return its reply."""
        ...

    def agents(self) -> list[dict[str, Any]]:
        """The registered agent templates: id, description (system prompt's start), tools."""
        ...


SESSIONS: ServiceKey[SessionDirectory] = ServiceKey(
    "sessions", SessionDirectory, doc="the sessions of the agent's store that it may reach"
)
"""The sessions tools (``group:sessions``) reach through this (see `kode.builtin.sessions`)."""


CALLER: ServiceKey[ToolCaller] = ServiceKey(
    "caller", ToolCaller, doc="who runs the tool: its user's answers and a model's"
)
"""Whoever runs the call (an agent, or ``kode mcp serve`` for an MCP client): what
`ToolContext.elicit` and `ToolContext.sample` ask."""


@dataclass(kw_only=True, frozen=True, slots=True)
class InnerAnswer:
    """What one call made on a tool's behalf (`InnerCaller.call`) ended as."""

    text: str
    """The text of its ``tool_result`` (cut to the agent's ``max_result_chars``)."""
    is_error: bool
    """Whether the call failed (it was not valid, denied, refused, or its tool failed)."""
    status: str
    """Its final status (``done``, ``failed``, ``denied``, ``cancelled``)."""
    error_type: str | None = None
    """The `ToolErrorType` value of an error."""


@runtime_checkable
class InnerCaller(Protocol):
    """What the `INNER_CALLS` service does: run calls of the agent's tools for a running call.

    ``code_run`` calls the agent's tools from a script through this: each call goes through
    the agent's own pipeline as a call of the agent (validation, permission and approval,
    hooks, events, tracing, session records), but its result goes back to the caller, not to
    the model.
    """

    def tools(self) -> Sequence[Tool[..., Any]]:
        """The agent's tools a call may name (not those its permission settings deny by name)."""
        ...

    async def call(
        self, name: str, arguments: dict[str, Any], *, call_id: str, parent_call_id: str
    ) -> InnerAnswer:
        """Run a call of the tool `name` with `arguments` through the agent's pipeline.

        Args:
            name: The tool's name.
            arguments: Its arguments (JSON data, validated as a model's would be).
            call_id: The call's own id (unique in the session).
            parent_call_id: The id of the call that makes it (its events carry it).
        """
        ...


INNER_CALLS: ServiceKey[InnerCaller] = ServiceKey(
    "inner_calls", InnerCaller, doc="runs calls of the agent's tools for a running call"
)
"""The agent's `InnerCaller`: calls of its tools made by one of its calls (``code_run``)."""
