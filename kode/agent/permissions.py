"""Permissions: may this call run, must someone approve it, and who decides.

This module owns the permission modes, the per-tool lists, the `Approver` protocol and the
decisions it returns. The rule, in order:

1. a tool in ``deny`` is refused;
2. a tool the user allowed "always" in this session, or in ``allow``, runs;
3. mode ``readonly`` refuses mutating kinds (edit, delete, move, execute);
4. approval is needed when the tool is in ``require_approval``, when its own
   ``requires_approval`` says so (a bool, or a function of the input), or — with no such
   setting, or a function answering `None` — in mode ``approval`` for anything that is not
   read-only;
5. otherwise the call runs.
"""

from __future__ import annotations

import fnmatch
import inspect
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from kode.tools.context import ToolContext
from kode.tools.kinds import Kind
from kode.tools.tool import Tool

__all__ = [
    "ApprovalDecision",
    "ApprovalRequest",
    "Approver",
    "PermissionConfig",
    "PermissionMode",
    "Verdict",
    "check_permission",
]

PermissionMode = Literal["auto", "approval", "readonly"]
"""``auto`` allows, ``approval`` asks for everything not read-only, ``readonly`` denies
mutating kinds."""

_READ_ONLY = frozenset({Kind.READ, Kind.SEARCH, Kind.THINK, Kind.FETCH})


class PermissionConfig(BaseModel):
    """A template's permission settings."""

    model_config = ConfigDict(extra="forbid")
    mode: PermissionMode = "auto"
    """The default for every tool."""
    allow: list[str] = Field(default_factory=list)
    """Tools (names or globs) that run without asking."""
    deny: list[str] = Field(default_factory=list)
    """Tools (names or globs) that never run."""
    require_approval: list[str] = Field(default_factory=list)
    """Tools (names or globs) that always ask."""


@dataclass(kw_only=True, frozen=True, slots=True)
class Verdict:
    """What the permission check decided for one call."""

    action: Literal["allow", "deny", "ask"]
    """Run it, refuse it, or ask an approver."""
    reason: str
    """Why, in a few words."""


ALLOWED = Verdict(action="allow", reason="mode auto")
"""The verdict of a call `can_only_allow` lets through without `check_permission`."""


def can_only_allow(config: PermissionConfig, tool: Tool[..., Any]) -> bool:
    """Whether `check_permission` could only allow calls of `tool`, so it need not run.

    So in mode ``auto`` with no ``deny`` and no ``require_approval`` patterns, for a tool that
    does not ask for approval itself (rules 1 and 4 above): the common case, where the check
    would cost about as much as validating the arguments.
    """
    own = tool.requires_approval
    return (
        config.mode == "auto"
        and not config.deny
        and not config.require_approval
        and (own is None or own is False)
    )


def _ask_tool(own: Callable[..., Any], arguments: dict[str, Any], ctx: Any) -> Any:
    try:
        params = [
            p
            for p in inspect.signature(own).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
    except (TypeError, ValueError):
        params = []
    return own(arguments, ctx) if len(params) >= 2 else own(arguments)


def _matches(name: str, patterns: Sequence[str]) -> bool:
    lowered = name.lower()
    return any(fnmatch.fnmatchcase(lowered, p.strip().lower()) for p in patterns)


def check_permission(
    tool: Tool[..., Any],
    arguments: dict[str, Any],
    config: PermissionConfig,
    *,
    always_allowed: set[str],
    ctx: ToolContext[Any] | None = None,
) -> Verdict:
    """Decide a call by the rule in this module's docstring.

    A tool's ``requires_approval`` function gets the validated arguments, and the call's
    `ToolContext` too when it takes two parameters (to read ``ctx.services``); it returns a
    bool, a non-empty string (approval is needed, and the string says why), or `None` (no
    opinion on this input: the mode decides by kind, as if the tool had no function).
    """
    name = tool.name
    if _matches(name, config.deny):
        return Verdict(action="deny", reason=f"tool '{name}' is denied by the agent's settings")
    if name.lower() in always_allowed:
        return Verdict(action="allow", reason="allowed for this session")
    if _matches(name, config.allow):
        return Verdict(action="allow", reason="allowed by the agent's settings")
    if config.mode == "readonly" and tool.kind.is_mutating:
        return Verdict(
            action="deny",
            reason=f"the agent is read-only and tool '{name}' is of kind {tool.kind.value}",
        )
    if _matches(name, config.require_approval):
        return Verdict(action="ask", reason="the agent's settings require approval for it")
    own = tool.requires_approval
    if callable(own):
        answer = _ask_tool(own, arguments, ctx)
        if isinstance(answer, str) and answer:
            return Verdict(action="ask", reason=answer)
        if answer is not None:
            return (
                Verdict(action="ask", reason="the tool asks for approval for this input")
                if answer
                else Verdict(action="allow", reason="the tool needs no approval for this input")
            )
        # None: the tool has no opinion on this input; the mode decides, as for no function
    if own is True:
        return Verdict(action="ask", reason="the tool always asks for approval")
    if own is False:
        return Verdict(action="allow", reason="the tool needs no approval")
    if config.mode == "approval" and tool.kind not in _READ_ONLY:
        return Verdict(action="ask", reason=f"kind {tool.kind.value} needs approval")
    return Verdict(action="allow", reason=f"mode {config.mode}")


@dataclass(kw_only=True, frozen=True, slots=True)
class ApprovalRequest:
    """A call waiting for a decision."""

    call_id: str
    """The ``tool_use`` id."""
    tool_name: str
    """The tool's name."""
    input: dict[str, Any]
    """The validated arguments."""
    reason: str
    """Why approval is needed."""
    kind: Kind
    """The tool's kind."""


@dataclass(kw_only=True, frozen=True, slots=True)
class ApprovalDecision:
    """An approver's answer."""

    decision: Literal["allow", "deny", "allow_always"]
    """Run it, refuse it, or run it and every later call of this tool in the session."""
    note: str = ""
    """Shown to the model with a denial (what to do instead)."""


class Approver(Protocol):
    """Decides calls that need approval (an async callback)."""

    def __call__(self, request: ApprovalRequest) -> Awaitable[ApprovalDecision]:
        """Return the decision for `request`."""
        ...


ApproverFunc = Callable[[ApprovalRequest], Awaitable[ApprovalDecision]]
"""An `Approver` as a plain async function."""
