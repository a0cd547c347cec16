"""Permissions: may this call run, must someone approve it, and who decides.

This module owns the permission modes, the per-tool lists, the `Approver` protocol and the
decisions it returns. The rule, in order:

1. a tool in ``deny`` is refused;
2. the first matching permission rule (``rules``, `kode.agent.rules`: highest tier, then
   highest priority) decides: ``deny`` refuses, ``allow`` runs, ``ask`` asks unless the user
   allowed the tool "always" in this session;
3. a tool the user allowed "always" in this session (or its MCP server), or in ``allow``, runs;
4. mode ``readonly`` refuses mutating kinds (edit, delete, move, execute);
5. approval is needed when the tool is in ``require_approval``, when its own
   ``requires_approval`` says so (a bool, or a function of the input), or — with no such
   setting, or a function answering `None` — in mode ``approval`` for anything that is not
   read-only;
6. otherwise the call runs.

A sub-agent's settings carry those of the agent that started it (``inherited``): the call is
decided by each of them as well, and the strictest answer wins (deny over ask over allow), so
a sub-agent never runs what its parent could not, nor without asking what its parent would
ask about.

Every `Verdict` names what made it (``rule``): a permission rule, a list of the settings, the
session, the tool, or the mode. "Always" answers for calls matching a pattern (``bash_run``
calls starting with ``git status``) are checked where a call would be asked about, with the
call's `CallDetails`.
"""

from __future__ import annotations

import fnmatch
import inspect
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from kode.agent.rules import PermissionRule, match_rule
from kode.tools.context import ToolContext
from kode.tools.core import Tool
from kode.tools.invocation import CallDetails
from kode.tools.kinds import Kind

__all__ = [
    "ApprovalDecision",
    "ApprovalRequest",
    "Approver",
    "PermissionConfig",
    "PermissionMode",
    "Verdict",
    "always_key",
    "check_permission",
    "denied_by_name",
    "pattern_allowed",
]

PermissionMode = Literal["auto", "approval", "readonly"]
"""``auto`` allows, ``approval`` asks for everything not read-only, ``readonly`` denies
mutating kinds."""

_READ_ONLY = frozenset({Kind.READ, Kind.SEARCH, Kind.THINK, Kind.FETCH})
_ABOVE = " (a setting of an agent that started this one)"


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
    rules: list[PermissionRule] = Field(default_factory=list)
    """Permission rules (`kode.agent.rules.load_rules` reads them from TOML, in tiers)."""
    inherited: list[PermissionConfig] = Field(default_factory=list)
    """The settings of the agent that started this one (a sub-agent's; set by kode, see
    `kode.agent.subagents`): each decides every call too, and the strictest answer wins."""


@dataclass(kw_only=True, frozen=True, slots=True)
class Verdict:
    """What the permission check decided for one call."""

    action: Literal["allow", "deny", "ask"]
    """Run it, refuse it, or ask an approver."""
    reason: str
    """Why, in a few words."""
    rule: str = ""
    """What made the decision: ``rule 'no-rm' (project)``, ``deny list 'fs_*'``, ``mode
    approval``, ``session: always allowed``, ..."""


ALLOWED = Verdict(action="allow", reason="mode auto", rule="mode auto")
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
        and not config.rules
        and (own is None or own is False)
        and (not config.inherited or all(can_only_allow(o, tool) for o in config.inherited))
    )


def denied_by_name(config: PermissionConfig, tool: Tool[..., Any]) -> bool:
    """Whether every call of `tool` is refused by rule 1 (its name in a ``deny`` list).

    The settings `config` carries from an agent above it (``inherited``) count too.
    """
    if _matching(tool.name, config.deny) is not None:
        return True
    return any(denied_by_name(o, tool) for o in config.inherited)


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


def _matching(name: str, patterns: Sequence[str]) -> str | None:
    lowered = name.lower()
    for p in patterns:
        if fnmatch.fnmatchcase(lowered, p.strip().lower()):
            return p
    return None


def always_key(tool: str, *, server: str | None = None, pattern: str | None = None) -> str:
    """How the session keeps an "always" answer: a tool, an MCP server, or a tool's pattern.

    ``fs_write``; ``server:github`` for every tool of a server; ``bash_run:git status`` for
    the calls of a tool whose pattern (`CallDetails.pattern`) starts with ``git status``.
    Tool names hold no ``:``, so the three never collide.
    """
    if server:
        return f"server:{server.lower()}"
    if pattern is not None:
        return f"{tool.lower()}:{pattern}"
    return tool.lower()


_SHELL_JOINERS = frozenset(";&|`$<>()\n\r")


def pattern_allowed(tool: str, pattern: str | None, always_allowed: set[str]) -> str | None:
    """The prefix of an "always" answer `pattern` falls under, or `None`.

    A prefix covers the pattern equal to it, or followed by a space and more words, as long
    as the rest holds none of ``; & | ` $ < > ( )`` or a line break: ``git status`` covers
    ``git status -s`` but not ``git status; rm -rf ~`` or ``git statusx``.
    """
    if pattern is None:
        return None
    head = f"{tool.lower()}:"
    for key in always_allowed:
        if not key.startswith(head):
            continue
        prefix = key[len(head) :]
        if pattern == prefix:
            return prefix
        rest = pattern[len(prefix) :]
        if (
            prefix
            and pattern.startswith(prefix)
            and rest[:1] == " "
            and not any(c in _SHELL_JOINERS for c in rest)
        ):
            return prefix
    return None


def check_permission(
    tool: Tool[..., Any],
    arguments: dict[str, Any],
    config: PermissionConfig,
    *,
    always_allowed: set[str],
    ctx: ToolContext[Any] | None = None,
    source: str | None = None,
    server: str | None = None,
) -> Verdict:
    """Decide a call by the rule in this module's docstring.

    A tool's ``requires_approval`` function gets the validated arguments, and the call's
    `ToolContext` too when it takes two parameters (to read ``ctx.services``); it returns a
    bool, a non-empty string (approval is needed, and the string says why), or `None` (no
    opinion on this input: the mode decides by kind, as if the tool had no function).
    `source` and `server` (the tool's `ToolMeta`) are what rules match and what a server's
    "always" answer covers. With ``config.inherited`` (a sub-agent) each inherited config
    decides the call too: a deny of any wins, then an ask, and the verdict of an inherited
    config says so (its ``rule`` starts with ``parent:``). The session's "always" answers
    (`always_allowed`) settle an inherited config's ask, never its deny.
    """
    verdict = _check_one(
        tool,
        arguments,
        config,
        always_allowed=always_allowed,
        ctx=ctx,
        source=source,
        server=server,
    )
    for outer in config.inherited:
        if verdict.action == "deny":
            break
        # The session's "always" answers settle an inherited config's ask, but never lift
        # its refusals (a parent's deny list, rules or read-only mode): it is checked with
        # none, and an ask they cover is then let through.
        theirs = check_permission(
            tool,
            arguments,
            outer,
            always_allowed=set(),
            ctx=ctx,
            source=source,
            server=server,
        )
        if theirs.action == "ask" and (
            tool.name.lower() in always_allowed
            or (server is not None and always_key(tool.name, server=server) in always_allowed)
        ):
            continue
        if theirs.action == "deny" or (theirs.action == "ask" and verdict.action == "allow"):
            said = theirs.reason if theirs.reason.endswith(_ABOVE) else theirs.reason + _ABOVE
            verdict = Verdict(action=theirs.action, reason=said, rule=f"parent: {theirs.rule}")
    return verdict


def _check_one(
    tool: Tool[..., Any],
    arguments: dict[str, Any],
    config: PermissionConfig,
    *,
    always_allowed: set[str],
    ctx: ToolContext[Any] | None,
    source: str | None,
    server: str | None,
) -> Verdict:
    """`check_permission` by one config alone (its ``inherited`` aside)."""
    name = tool.name
    lowered = name.lower()
    denied = _matching(name, config.deny)
    if denied is not None:
        return Verdict(
            action="deny",
            reason=f"tool '{name}' is denied by the agent's settings",
            rule=f"deny list {denied!r}",
        )
    if config.rules:
        rule = match_rule(
            config.rules,
            name,
            arguments,
            mode=config.mode,
            source=source,
            server=server,
            groups=tool.groups,
        )
        if rule is not None:
            why = rule.reason or f"{rule.decision} by {rule.label}"
            if rule.decision == "ask" and lowered in always_allowed:
                return Verdict(
                    action="allow",
                    reason="allowed for this session",
                    rule=f"session: always allowed (over {rule.label})",
                )
            return Verdict(action=rule.decision, reason=why, rule=rule.label)
    if lowered in always_allowed:
        return Verdict(
            action="allow", reason="allowed for this session", rule="session: always allowed"
        )
    if server is not None and always_key(name, server=server) in always_allowed:
        return Verdict(
            action="allow",
            reason=f"MCP server '{server}' allowed for this session",
            rule=f"session: server {server!r} always allowed",
        )
    allowed = _matching(name, config.allow)
    if allowed is not None:
        return Verdict(
            action="allow", reason="allowed by the agent's settings", rule=f"allow list {allowed!r}"
        )
    if config.mode == "readonly" and tool.kind.is_mutating:
        return Verdict(
            action="deny",
            reason=f"the agent is read-only and tool '{name}' is of kind {tool.kind.value}",
            rule="mode readonly",
        )
    required = _matching(name, config.require_approval)
    if required is not None:
        return Verdict(
            action="ask",
            reason="the agent's settings require approval for it",
            rule=f"require_approval list {required!r}",
        )
    own = tool.requires_approval
    if callable(own):
        answer = _ask_tool(own, arguments, ctx)
        if isinstance(answer, str) and answer:
            return Verdict(action="ask", reason=answer, rule="the tool's requires_approval")
        if answer is not None:
            return (
                Verdict(
                    action="ask",
                    reason="the tool asks for approval for this input",
                    rule="the tool's requires_approval",
                )
                if answer
                else Verdict(
                    action="allow",
                    reason="the tool needs no approval for this input",
                    rule="the tool's requires_approval",
                )
            )
        # None: the tool has no opinion on this input; the mode decides, as for no function
    if own is True:
        return Verdict(
            action="ask", reason="the tool always asks for approval", rule="requires_approval=True"
        )
    if own is False:
        return Verdict(
            action="allow", reason="the tool needs no approval", rule="requires_approval=False"
        )
    if config.mode == "approval" and tool.kind not in _READ_ONLY:
        return Verdict(
            action="ask", reason=f"kind {tool.kind.value} needs approval", rule="mode approval"
        )
    return Verdict(action="allow", reason=f"mode {config.mode}", rule=f"mode {config.mode}")


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
    description: str = ""
    """What the call will do, in one line (the tool's `CallDetails`; else empty)."""
    locations: tuple[str, ...] = ()
    """The paths it reads or changes."""
    diff: str = ""
    """A unified diff of the change it would make (empty: none)."""
    pattern: str | None = None
    """What an "always for calls starting with ..." answer is matched against (``bash_run``:
    the command); `None`: the tool offers no such answer."""
    server: str | None = None
    """The MCP server of the tool, for an "always for this server" answer."""
    rule: str = ""
    """What asked for the approval (``rule 'x' (project)``, ``mode approval``, ...)."""

    @property
    def details(self) -> CallDetails:
        """The description, locations, diff and pattern as one `CallDetails`."""
        return CallDetails(
            description=self.description,
            locations=self.locations,
            diff=self.diff,
            pattern=self.pattern,
        )


@dataclass(kw_only=True, frozen=True, slots=True)
class ApprovalDecision:
    """An approver's answer.

    ``allow_always`` runs the call and every later call it covers in the session: by
    ``scope``, all calls of the tool (``tool``), of every tool of its MCP server (``server``),
    or of the tool whose pattern starts with ``pattern`` (``pattern``; empty: the request's
    own pattern). With ``input`` the call runs with that input instead (validated again; an
    invalid one makes `Agent.decide` raise, or the call's result an error).
    """

    decision: Literal["allow", "deny", "allow_always"]
    """Run it, refuse it, or run it and every later call it covers (``scope``)."""
    note: str = ""
    """Shown to the model with a denial (what to do instead)."""
    scope: Literal["tool", "server", "pattern"] = "tool"
    """What ``allow_always`` covers: the tool, its MCP server, or calls matching ``pattern``."""
    pattern: str = ""
    """For scope ``pattern``: the prefix (``git status``); empty: the request's pattern."""
    input: dict[str, Any] | None = None
    """Run with these arguments instead of the model's (an allow only)."""


class Approver(Protocol):
    """Decides calls that need approval (an async callback)."""

    def __call__(self, request: ApprovalRequest) -> Awaitable[ApprovalDecision]:
        """Return the decision for `request`."""
        ...


ApproverFunc = Callable[[ApprovalRequest], Awaitable[ApprovalDecision]]
"""An `Approver` as a plain async function."""
