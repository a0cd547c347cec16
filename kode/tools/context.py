"""The context a tool receives: who is calling, typed dependencies, events and cancellation.

This module owns `ToolContext`. It does not run tools (see `kode.tools.core`) and knows nothing
of agents: an agent fills the ids and the event sink, a standalone call leaves them empty.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Literal

from typing_extensions import TypeVar

from kode.tools.errors import ToolError, ToolErrorType
from kode.tools.workspace import FilePool, Workspace

if TYPE_CHECKING:
    from kode.tools.asking import ElicitationReply, ToolCaller

__all__ = ["DepsT", "EventSinkFunc", "ToolContext", "ToolEvent"]

DepsT = TypeVar("DepsT", default=Any)
"""The type of the user's dependencies carried by a `ToolContext`."""


@dataclass(kw_only=True, frozen=True, slots=True)
class ToolEvent:
    """One event a tool emitted while it ran."""

    tool_call_id: str
    """The id of the call that emitted it."""
    tool_name: str
    """The name of the tool that emitted it."""
    event: str
    """The event's name, e.g. ``"progress"``."""
    data: Any
    """The event's payload."""


EventSinkFunc = Callable[[ToolEvent], None]
"""A callable that receives each `ToolEvent` as it is emitted."""

_logger = logging.getLogger("kode.tools")


class ToolContext(Generic[DepsT]):
    """The enhanced context injected into a tool that asks for it.

    A parameter annotated `ToolContext` (or `ToolContext[MyDeps]`), in any position, receives
    it and never appears in the tool's schema. `Tool.run` without a context makes a standalone
    one, so a tool works the same in a notebook, a unit test and an agent.

    Example:
        ```python
        from kode import ToolContext, define_tool

        @define_tool(registry=None)
        async def count_to(n: int, ctx: ToolContext) -> str:
            \"\"\"Count to n.\"\"\"
            for i in range(n):
                ctx.progress(f"at {i}", fraction=i / n)
            return "done"
        ```
    """

    __slots__ = (
        "_cancelled",
        "_event_sink",
        "agent_id",
        "deps",
        "events",
        "files",
        "logger",
        "services",
        "session_id",
        "tool_call_id",
        "tool_name",
        "workspace",
    )

    def __init__(
        self,
        *,
        tool_call_id: str = "",
        tool_name: str = "",
        agent_id: str | None = None,
        session_id: str | None = None,
        deps: DepsT = None,  # type: ignore[assignment]
        logger: logging.Logger | logging.LoggerAdapter[logging.Logger] | None = None,
        event_sink: EventSinkFunc | None = None,
        workspace: Workspace | str | os.PathLike[str] | None = None,
        files: FilePool | None = None,
        services: dict[str, Any] | None = None,
    ) -> None:
        self.tool_call_id = tool_call_id
        """The id of the `tool_use` block this call answers (empty when standalone)."""
        self.tool_name = tool_name
        """The name of the tool being called."""
        self.agent_id = agent_id
        """The id of the agent making the call, if any."""
        self.session_id = session_id
        """The id of the agent's session, if any."""
        self.deps: DepsT = deps
        """The user's dependencies (a database client, settings, ...), typed by `DepsT`."""
        self.logger = logger or _logger
        """A logger for the tool; its records go to the ``kode.tools`` logger by default."""
        self.events: list[ToolEvent] = []
        """Every event emitted through this context, in order."""
        self._event_sink = event_sink
        self._cancelled = threading.Event()
        self.workspace: Workspace | None = Workspace.of(workspace, what="ToolContext: workspace")
        """The directory tools may touch (`None`: the tool decides, e.g. the current one).
        A path given for it is the root of a `Workspace`."""
        self.files = files
        """What the agent read and wrote, to refuse writes over unseen changes."""
        self.services: dict[str, Any] = services if services is not None else {}
        """Things the running agent offers its tools by name (``"todos"``, ``"subagents"``,
        ``"processes"``, ...): shared by every call of one agent."""

    def __repr__(self) -> str:
        return (
            f"ToolContext(tool_name={self.tool_name!r}, tool_call_id={self.tool_call_id!r}, "
            f"agent_id={self.agent_id!r}, session_id={self.session_id!r})"
        )

    def for_call(self, *, tool_name: str, tool_call_id: str | None = None) -> ToolContext[DepsT]:
        """Return a context for one call of `tool_name`, sharing ids, deps and event sink."""
        ctx: ToolContext[DepsT] = ToolContext(
            tool_call_id=self.tool_call_id if tool_call_id is None else tool_call_id,
            tool_name=tool_name,
            agent_id=self.agent_id,
            session_id=self.session_id,
            deps=self.deps,
            logger=self.logger,
            event_sink=self._event_sink,
            workspace=self.workspace,
            files=self.files,
            services=self.services,
        )
        return ctx

    def resolve_path(self, path: str) -> Path:
        """`path` resolved in the workspace (the current directory when there is none).

        Raises:
            ToolError: of type ``path_not_in_workspace`` when it escapes the workspace.
        """
        workspace = self.workspace or Workspace(root=Path.cwd())
        return workspace.resolve(path)

    def emit(self, event: str, data: Any = None) -> None:
        """Emit a custom event: it is recorded in `events` and passed to the event sink.

        Safe to call from a sync tool running in a worker thread.
        """
        record = ToolEvent(
            tool_call_id=self.tool_call_id, tool_name=self.tool_name, event=event, data=data
        )
        self.events.append(record)
        if self._event_sink is not None:
            self._event_sink(record)

    def progress(self, message: str, fraction: float | None = None) -> None:
        """Report progress: emits a ``"progress"`` event with the message and the fraction.

        Args:
            message: What the tool is doing now, in a few words.
            fraction: How much is done, from 0.0 to 1.0, when the tool knows.
        """
        if fraction is not None and not 0.0 <= fraction <= 1.0:
            raise ValueError(f"progress fraction must be between 0.0 and 1.0, got {fraction!r}")
        self.emit("progress", {"message": message, "fraction": fraction})

    @property
    def cancelled(self) -> bool:
        """Whether the call was cancelled or timed out.

        A sync tool in a worker thread cannot be stopped from outside; a long loop should
        check this (or call `raise_if_cancelled`) and return early.
        """
        return self._cancelled.is_set()

    def raise_if_cancelled(self) -> None:
        """Raise `ToolError` (type ``cancelled``) if the call was cancelled or timed out."""
        if self._cancelled.is_set():
            raise ToolError("The tool call was cancelled.", type=ToolErrorType.CANCELLED)

    def cancel(self) -> None:
        """Mark the call as cancelled (kode does this on timeout and cancellation)."""
        self._cancelled.set()

    # --- asking the user and a model ---------------------------------------------------------

    def _caller(self, what: str) -> ToolCaller:
        from kode.tools.services import CALLER

        caller = CALLER.get(self.services)
        if caller is None:
            raise ToolError(
                f"Tool '{self.tool_name or '?'}' {what}, and nobody can answer outside an agent "
                "or an MCP client: run it in an agent (Agent.create(elicitation=...) answers the "
                "user's part), or serve it with kode mcp serve.",
                type=ToolErrorType.EXECUTION_FAILED,
            )
        return caller

    async def elicit(
        self,
        message: str,
        schema: dict[str, Any] | type[Any] | None = None,
        *,
        url: str | None = None,
    ) -> ElicitationReply:
        """Ask the user for information (a form) or to open a page, and wait for the answer.

        Inside an agent the agent's elicitation function answers (``Agent.create(
        elicitation=...)``); in a tool served by ``kode mcp serve`` the MCP client does
        (``elicitation/create``).

        Args:
            message: What the user is told.
            schema: The form: a JSON schema of an object of plain fields, or a type (a
                pydantic model, a dataclass, a TypedDict) whose schema is used and into which
                an accepted answer is validated (`ElicitationReply.value`).
            url: Open this page instead of filling in a form (URL mode; no `schema`).

        Returns:
            The answer: ``action`` is ``accept``, ``decline`` or ``cancel``; ``content`` holds
            an accepted form.

        Raises:
            ToolError: nobody can answer here, the runner refused, or an accepted answer does
                not fit `schema`'s type (the message says which).
            ValueError: both or neither of a form and `url` were given.
        """
        import uuid

        from kode.tools.asking import ElicitationRequest

        if url is not None and schema is not None:
            raise ValueError("ctx.elicit: give a schema (a form) or url= (a page), not both")
        adapter = None
        if isinstance(schema, type):
            from pydantic import TypeAdapter

            from kode.tools.dialects import strip_titles

            adapter = TypeAdapter(schema)
            schema = strip_titles(adapter.json_schema())
        if url is None and schema is None:
            schema = {"type": "object", "properties": {}}
        request = ElicitationRequest(
            message=message,
            mode="url" if url is not None else "form",
            schema=schema,
            url=url,
            elicitation_id=uuid.uuid4().hex if url is not None else None,
            tool_name=self.tool_name,
            ctx=self,
        )
        reply = await self._caller("asked the user a question").elicit(request)
        if adapter is not None and reply.action == "accept":
            from pydantic import ValidationError

            try:
                value = adapter.validate_python(reply.content or {})
            except ValidationError as exc:
                raise ToolError(
                    f"The user's answer to tool '{self.tool_name}' does not fit its form: "
                    + "; ".join(
                        f"{'.'.join(str(p) for p in e['loc']) or 'answer'}: {e['msg']}"
                        for e in exc.errors()
                    ),
                    type=ToolErrorType.EXECUTION_FAILED,
                ) from None
            reply = replace(reply, value=value)
        return reply

    async def sample(
        self,
        prompt: str | Sequence[tuple[Literal["user", "assistant"], str]],
        *,
        system: str = "",
        max_tokens: int = 1024,
        temperature: float | None = None,
    ) -> str:
        """Ask a model to answer `prompt`, and return its text.

        Inside an agent the agent's own model answers (with no tools); in a tool served by
        ``kode mcp serve`` the MCP client does (``sampling/createMessage``), after its user
        allows it.

        Args:
            prompt: The user's message, or a conversation of ``(role, text)`` pairs.
            system: The system prompt.
            max_tokens: The most tokens the answer may have.
            temperature: The sampling temperature, if any.

        Raises:
            ToolError: no model can answer here, or the runner refused.
        """
        from kode.tools.asking import SampleRequest

        messages: tuple[tuple[Literal["user", "assistant"], str], ...] = (
            (("user", prompt),) if isinstance(prompt, str) else tuple(prompt)
        )
        for role, text in messages:
            if role not in ("user", "assistant") or not isinstance(text, str):
                raise ValueError(
                    "ctx.sample: a conversation is a list of (role, text) pairs with role "
                    f"'user' or 'assistant', got ({role!r}, {type(text).__name__})"
                )
        request = SampleRequest(
            messages=messages,
            system=system,
            max_tokens=max_tokens,
            temperature=temperature,
            tool_name=self.tool_name,
            ctx=self,
        )
        return await self._caller("asked for a model's answer").sample(request)
