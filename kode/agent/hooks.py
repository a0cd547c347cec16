"""Hooks around each tool call: before it runs (allow, deny, rewrite, answer) and after it.

This module owns the hook types and what their return values mean. A pre-hook returns `None`
to let the call go on, or one of `Allow`, `Deny`, `RewriteInput`, `Respond`; a post-hook returns
`None` to keep the result, or a `ToolResult` (or a string) to replace it. Hooks may be sync or
async.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kode.models.messages import ToolUseContent
from kode.tools.context import ToolContext
from kode.tools.results import ToolResult

__all__ = [
    "Allow",
    "AgentHooks",
    "Deny",
    "PostToolUseFunc",
    "PreToolUseFunc",
    "PreToolUseOutcome",
    "Respond",
    "RewriteInput",
]


@dataclass(kw_only=True, frozen=True, slots=True)
class Allow:
    """Let the call run, and skip the remaining pre-hooks."""


@dataclass(kw_only=True, frozen=True, slots=True)
class Deny:
    """Refuse the call; the reason reaches the model in the error result."""

    reason: str
    """Why, in words the model can act on."""


@dataclass(kw_only=True, frozen=True, slots=True)
class RewriteInput:
    """Run the call with these arguments instead (they are validated again)."""

    input: dict[str, Any]
    """The new arguments."""


@dataclass(kw_only=True, frozen=True, slots=True)
class Respond:
    """Answer the call with this result without running the tool."""

    result: ToolResult | str
    """The result (a string becomes a text result)."""


PreToolUseOutcome = Allow | Deny | RewriteInput | Respond | None
"""What a pre-hook returns."""

PreToolUseFunc = Callable[
    [ToolUseContent, ToolContext[Any]], "PreToolUseOutcome | Awaitable[PreToolUseOutcome]"
]
"""``pre_tool_use(call, ctx)``; sync or async."""

PostToolUseFunc = Callable[
    [ToolUseContent, ToolResult, ToolContext[Any]],
    "ToolResult | str | Awaitable[ToolResult | str | None] | None",
]
"""``post_tool_use(call, result, ctx)``; sync or async; returns a replacement or `None`."""


@dataclass(kw_only=True, frozen=True, slots=True)
class AgentHooks:
    """Hooks for every call, and hooks for calls of one tool (by name).

    Template-level hooks run first, then the tool's own, in list order.
    """

    pre_tool_use: Sequence[PreToolUseFunc] = ()
    """Run before each call, after its permission check."""
    post_tool_use: Sequence[PostToolUseFunc] = ()
    """Run after each call, on its result."""
    tools: Mapping[str, AgentHooks] = field(default_factory=dict)
    """Hooks for one tool's calls, by tool name."""

    def merged(self, other: AgentHooks | None) -> AgentHooks:
        """These hooks followed by `other`'s."""
        if other is None:
            return self
        tools = dict(self.tools)
        for name, hooks in other.tools.items():
            tools[name] = tools[name].merged(hooks) if name in tools else hooks
        return AgentHooks(
            pre_tool_use=(*self.pre_tool_use, *other.pre_tool_use),
            post_tool_use=(*self.post_tool_use, *other.post_tool_use),
            tools=tools,
        )

    def for_tool(self, name: str) -> tuple[Sequence[PreToolUseFunc], Sequence[PostToolUseFunc]]:
        """The pre- and post-hooks that apply to calls of `name`."""
        own = self.tools.get(name) if self.tools else None
        if own is None and not self.pre_tool_use and not self.post_tool_use:
            return (), ()  # the common case: no hooks (and no lists made for every call)
        pre = [*self.pre_tool_use, *(own.pre_tool_use if own else ())]
        post = [*self.post_tool_use, *(own.post_tool_use if own else ())]
        return pre, post
