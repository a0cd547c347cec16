"""What the parts of an agent need of it and of its run, as protocols.

This module owns `AgentLike` (what the run, its reply, its stream, the services an agent
gives its tools and its display use of an `Agent`) and `CallEnvironment` (what the pipeline
uses of the run a call belongs to), and `EventCallbackFunc`. With them no module under
`kode.agent` imports `kode.agent.agent` or `kode.agent.run` back: the package has no import
circle, not even through imports made for type checking only (``tests/test_layering.py``).
`Agent` and `AgentRun` are checked against them wherever mypy sees one passed as the other.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

from kode.agent.events import AgentEvent

if TYPE_CHECKING:
    from kode.agent.client_calls import ClientCalls
    from kode.agent.events import Done, ErrorEvent
    from kode.agent.hooks import AgentHooks
    from kode.agent.permissions import ApprovalDecision, ApprovalRequest, ApproverFunc
    from kode.agent.session import Session
    from kode.agent.state import AgentStatus
    from kode.agent.template import AgentTemplate
    from kode.models.base import Model
    from kode.models.messages import Message, Usage
    from kode.registries.tool_registry import ToolRegistry
    from kode.tools.asking import ElicitationFunc
    from kode.tools.core import Tool
    from kode.tools.results import ToolResult
    from kode.tools.workspace import FilePool, Workspace
    from kode.tracing.spans import Tracing

__all__ = ["AgentLike", "CallEnvironment", "EventCallbackFunc", "ReplyLike"]

EventCallbackFunc = Callable[[AgentEvent], None]
"""Receives every event of a run as it happens."""


class ReplyLike(Protocol):
    """What the parts of an agent read of a reply (`AgentReply`)."""

    @property
    def text(self) -> str:
        """The final assistant text."""
        ...


class AgentLike(Protocol):
    """What the parts of an agent use of it: `kode.agent.agent.Agent` is the one."""

    template: AgentTemplate
    system_prompt: str
    model: Model
    registry: ToolRegistry
    deps: Any
    approver: ApproverFunc | None
    hooks: AgentHooks
    agent_id: str
    session_id: str
    session: Session
    tools: list[Tool[..., Any]]
    workspace: Workspace | None
    files: FilePool
    services: dict[str, Any]
    elicitation: ElicitationFunc | None
    tracing: Tracing | None

    @property
    def messages(self) -> list[Message]:
        """The conversation."""
        ...

    @property
    def client_calls(self) -> ClientCalls:
        """The client tool calls waiting for their results."""
        ...

    @property
    def always_allowed(self) -> set[str]:
        """What the user allowed for the session."""
        ...

    @property
    def usage(self) -> Usage:
        """Tokens used so far."""
        ...

    @property
    def status(self) -> AgentStatus:
        """What the agent is doing."""
        ...

    @property
    def asks_by_event(self) -> bool:
        """Whether a run is going whose approvals someone answers with ``decide``."""
        ...

    def lookup(self, name: str) -> Tool[..., Any] | None:
        """The agent's tool for a name as a model wrote it."""
        ...

    def request_tools(self) -> list[Tool[..., Any]]:
        """The tools the next model request carries."""
        ...

    def request_deferred(self) -> list[Tool[..., Any]]:
        """The deferred tools not loaded yet, for a model that searches natively."""
        ...

    def unknown_tool_result(self, name: str) -> ToolResult:
        """The error result for a call to a tool the agent does not have."""
        ...

    def subagent_options(
        self, template_id: str, *, model: Model | None = None, workspace: Any = None
    ) -> tuple[AgentTemplate, Model, dict[str, Any]]:
        """The template, model and `create` options of a sub-agent."""
        ...

    async def run_subagent(
        self,
        template_id: str,
        prompt: str,
        *,
        model: Model | None = None,
        on_event: EventCallbackFunc | None = None,
        workspace: Any = None,
    ) -> ReplyLike:
        """Run a sub-agent from a registered template on `prompt`."""
        ...

    async def ask_approval(self, request: ApprovalRequest) -> ApprovalDecision | None:
        """Ask for approval of something a running call wants to do."""
        ...

    async def execute(self, run: Any, prompt: str | None) -> Done | ErrorEvent:
        """Carry out `run` (an `AgentRun` made for this agent) on `prompt`."""
        ...

    async def send(
        self,
        prompt: str | None = None,
        *,
        on_event: EventCallbackFunc | None = None,
        interactive: bool | None = None,
    ) -> ReplyLike:
        """Run the agent on `prompt` until the model answers without calling tools."""
        ...

    async def aclose(self) -> None:
        """Release what the agent's tools hold, and the session's lease."""
        ...

    @property
    def create(self) -> Callable[..., AgentLike]:
        """Make an agent of this class from a template (the classmethod ``create``)."""
        ...

    @property
    def resume(self) -> Callable[..., Awaitable[AgentLike]]:
        """An agent of this class for a session kept in a store (``resume``)."""
        ...


class CallEnvironment(Protocol):
    """What one call's pipeline uses of the run it belongs to (`AgentRun`)."""

    agent: AgentLike
    emit: EventCallbackFunc
    interactive: bool
    tracing: Tracing | None
    poll_interval: float

    def on_loop(self) -> bool:
        """Whether the caller is on the thread of the run's event loop."""
        ...

    async def ask(self, request: ApprovalRequest) -> ApprovalDecision:
        """Ask the approver, or through an event, and wait for the answer."""
        ...

    async def commit(self) -> None:
        """Commit what the session wrote so far."""
        ...

    def abort(self, exc: BaseException) -> None:
        """End the whole run with `exc` (a tool's KeyboardInterrupt or SystemExit)."""
        ...
