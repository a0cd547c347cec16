"""What an approval request says about a call, and what an "always" answer covers.

This module owns the parts of asking for approval that are not the permission rule itself:
where a tool comes from (its source and MCP server, for rules and "always for this server"),
the `CallDetails` a request carries (the tool's describe function, or for an MCP tool the
server it runs on), and turning an ``allow_always`` decision into what the session keeps.
None of it runs for a call that needs no approval and no rules.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from kode.agent.permissions import ApprovalDecision, ApprovalRequest, always_key
from kode.tools.invocation import CallDetails

if TYPE_CHECKING:
    from kode.agent.ports import AgentLike
    from kode.agent.session import Session
    from kode.tools.core import Tool

__all__ = ["NO_DETAILS", "call_details", "origin", "remember_always"]

_log = logging.getLogger("kode.agent")

NO_DETAILS = CallDetails()
"""The details of a call whose tool describes nothing."""


def origin(agent: AgentLike, tool: Tool[..., Any]) -> tuple[str | None, str | None]:
    """The tool's source (``core``, ``mcp``, ...) and MCP server, from the agent's registry.

    `None` for what the registry does not know.
    """
    try:
        meta = agent.registry.meta(tool.name)
    except Exception:  # a tool given to the agent directly, not through its registry
        return None, None
    return meta.source.value, meta.server


def call_details(
    tool: Tool[..., Any], arguments: dict[str, Any], ctx: Any, *, server: str | None
) -> CallDetails:
    """What the call says about itself: its tool's describe function, or its MCP server.

    A describe function that raises is logged and gives nothing.
    """
    describer = tool.describer
    if describer is not None:
        try:
            details = describer(arguments, ctx)
        except Exception as exc:
            _log.error("the describe function of %r raised", tool.name, exc_info=exc)
            details = NO_DETAILS
        if not isinstance(details, CallDetails):
            _log.error(
                "the describe function of %r returned %s, not CallDetails",
                tool.name,
                type(details).__name__,
            )
            details = NO_DETAILS
        if details.description or server is None:
            return details
        return CallDetails(
            description=f"Call {tool.name} on MCP server '{server}'",
            locations=details.locations,
            diff=details.diff,
            pattern=details.pattern,
        )
    if server is not None:
        return CallDetails(description=f"Call {tool.name} on MCP server '{server}'")
    return NO_DETAILS


def remember_always(session: Session, request: ApprovalRequest, decision: ApprovalDecision) -> str:
    """Keep an ``allow_always`` decision in the session; return the key kept.

    Scope ``server`` for a tool of no MCP server, or ``pattern`` for a tool with no pattern
    and no pattern given, falls back to the tool.
    """
    tool = request.tool_name
    if decision.scope == "server" and request.server:
        session.allow_always(tool, server=request.server)
        return always_key(tool, server=request.server)
    if decision.scope == "pattern":
        prefix = decision.pattern or request.pattern
        if prefix:
            session.allow_always(tool, pattern=prefix)
            return always_key(tool, pattern=prefix)
    session.allow_always(tool)
    return always_key(tool)
