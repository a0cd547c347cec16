"""Calls of served tools made by a served ``code_run`` script: `ServedCalls`.

This module owns the `INNER_CALLS` service of a `kode.mcp.server.ToolServer`. Served over
MCP, ``code_run`` has no agent behind it: the client approved the ``code_run`` call, and it
cannot see (nor approve) the calls the script makes. So a script may call only the served
tools that do not mutate (kinds read, search, think, fetch) and do not ask for approval
themselves; any other call is refused with a message the script sees as ``ToolCallError``
(the client calls such a tool itself, where it can ask its user). A call runs as a served
call does (`Tool.run`: validation, timeout, result), with the server's deps and services.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from kode.tools.context import ToolContext
from kode.tools.core import Tool
from kode.tools.errors import ToolErrorType
from kode.tools.services import InnerAnswer
from kode.tools.workspace import FilePool

__all__ = ["ServedCalls", "script_may_call"]


def script_may_call(tool: Tool[..., Any]) -> bool:
    """Whether a served script may call `tool`: it does not mutate and never asks for approval."""
    own = tool.requires_approval
    return not tool.kind.is_mutating and (own is None or own is False)


class ServedCalls:
    """The `INNER_CALLS` service of a tool server: its safe tools, run as served calls."""

    __slots__ = ("_deps", "_files", "_services", "_timeout", "_tools")

    def __init__(
        self,
        tools: Callable[[], Sequence[Tool[..., Any]]],
        *,
        deps: Any,
        files: FilePool,
        services: dict[str, Any],
        timeout: float | None,
    ) -> None:
        self._tools = tools
        self._deps = deps
        self._files = files
        self._services = services
        self._timeout = timeout

    def tools(self) -> Sequence[Tool[..., Any]]:
        """The served tools a script may call (see `script_may_call`)."""
        return [t for t in self._tools() if script_may_call(t)]

    async def call(
        self, name: str, arguments: dict[str, Any], *, call_id: str, parent_call_id: str
    ) -> InnerAnswer:
        """Run a call of the served tool `name`, or refuse it."""
        wanted = name.strip().lower()
        found = next((t for t in self._tools() if t.name.lower() == wanted), None)
        if found is None:
            return InnerAnswer(
                text=f"Tool '{name}' is not served here; nothing was run.",
                is_error=True,
                status="failed",
                error_type=ToolErrorType.TOOL_NOT_REGISTERED.value,
            )
        if not script_may_call(found):
            return InnerAnswer(
                text=f"Tool '{found.name}' was not run: over MCP a script may call only tools "
                "that change nothing and need no approval, since the client cannot approve the "
                "script's calls; call it from the client instead.",
                is_error=True,
                status="denied",
                error_type=ToolErrorType.PERMISSION_DENIED.value,
            )
        ctx: ToolContext[Any] = ToolContext(
            tool_call_id=call_id,
            tool_name=found.name,
            deps=self._deps,
            files=self._files,
            services=self._services,
        )
        result = await found.run(arguments, ctx, default_timeout=self._timeout)
        status = "done"
        if result.is_error:
            status = "cancelled" if result.error_type is ToolErrorType.CANCELLED else "failed"
        return InnerAnswer(
            text=result.text,
            is_error=result.is_error,
            status=status,
            error_type=None if result.error_type is None else result.error_type.value,
        )
