"""Anthropic's server-side context editing: the API clears old tool results before the model reads.

This module owns `ContextEditing` (what `AnthropicModel` is asked to send: one
``clear_tool_uses_20250919`` edit in the request's ``context_management``, with the beta
header the API needs for it) and the reading of the ``applied_edits`` a response reports into
`ContextEdit` values. It does not decide anything about the history: the API edits the
request on its side, and the history kode keeps (and sends) stays whole. kode's own
`ContextPolicy` does the same kind of clearing for every provider, visibly; this is the
provider's, for the models that support it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "CONTEXT_MANAGEMENT_BETA",
    "CLEAR_TOOL_USES",
    "ContextEdit",
    "ContextEditing",
    "applied_edits",
]

CONTEXT_MANAGEMENT_BETA = "context-management-2025-06-27"
"""The ``anthropic-beta`` header value a request with ``context_management`` carries."""
CLEAR_TOOL_USES = "clear_tool_uses_20250919"
"""The edit that clears old tool results (and, optionally, the calls' inputs)."""


@dataclass(kw_only=True, frozen=True, slots=True)
class ContextEdit:
    """What a provider's server-side context editing cleared before a response.

    Anthropic's ``applied_edits`` (see `AnthropicModel`'s ``context_editing``): the request's
    history was shortened on the provider's side; the history kode keeps is whole.
    """

    kind: str
    """The edit, as the provider names it (``"clear_tool_uses_20250919"``)."""
    cleared_tool_uses: int = 0
    """How many tool calls (with their results) it cleared."""
    cleared_input_tokens: int = 0
    """How many input tokens it cleared."""


@dataclass(kw_only=True, frozen=True, slots=True)
class ContextEditing:
    """Ask the Anthropic API to clear old tool results itself (``clear_tool_uses_20250919``).

    Once a request's input passes `trigger_tokens`, the API replaces the oldest tool results
    (all but the last `keep_tool_uses`) with a placeholder before the model reads them. What
    it cleared comes back on each response (`ModelResponse.context_edits`, and the agent's
    `TurnEnd` event). Clearing invalidates the prompt cache from the first cleared result on;
    `clear_at_least_tokens` makes each clearing worth that.

    Example:
        ```python
        from kode.models import AnthropicModel
        from kode.models.anthropic_context import ContextEditing

        model = AnthropicModel(
            "claude-sonnet-4-5", context_editing=ContextEditing(trigger_tokens=50_000)
        )
        ```

    Raises:
        ValueError: a count is not positive, or `keep_tool_uses` is negative.
    """

    trigger_tokens: int = 100_000
    """Clear once the request's input passes this many tokens (the API's default)."""
    keep_tool_uses: int = 3
    """How many of the latest tool calls keep their results (the API's default)."""
    clear_at_least_tokens: int | None = None
    """Clear only when at least this many tokens can go (`None`: any amount)."""
    exclude_tools: tuple[str, ...] = ()
    """Tools whose results are never cleared."""
    clear_tool_inputs: bool = False
    """Clear the calls' inputs too, not only their results."""

    def __post_init__(self) -> None:
        if self.trigger_tokens < 1:
            raise ValueError(f"trigger_tokens must be at least 1, got {self.trigger_tokens}")
        if self.keep_tool_uses < 0:
            raise ValueError(f"keep_tool_uses must be 0 or more, got {self.keep_tool_uses}")
        if self.clear_at_least_tokens is not None and self.clear_at_least_tokens < 1:
            raise ValueError(
                f"clear_at_least_tokens must be at least 1 (or None), got "
                f"{self.clear_at_least_tokens}"
            )
        if isinstance(self.exclude_tools, str):
            raise ValueError(
                f"exclude_tools must be a tuple of tool names, got the string "
                f"{self.exclude_tools!r}"
            )

    def edit(self) -> dict[str, Any]:
        """The edit as the request's ``context_management.edits`` holds it."""
        edit: dict[str, Any] = {
            "type": CLEAR_TOOL_USES,
            "trigger": {"type": "input_tokens", "value": self.trigger_tokens},
            "keep": {"type": "tool_uses", "value": self.keep_tool_uses},
        }
        if self.clear_at_least_tokens is not None:
            edit["clear_at_least"] = {"type": "input_tokens", "value": self.clear_at_least_tokens}
        if self.exclude_tools:
            edit["exclude_tools"] = list(self.exclude_tools)
        if self.clear_tool_inputs:
            edit["clear_tool_inputs"] = True
        return edit


def _field(item: Any, name: str) -> Any:
    return item.get(name) if isinstance(item, Mapping) else getattr(item, name, None)


def applied_edits(found: Any) -> tuple[ContextEdit, ...]:
    """The edits a response's ``context_management`` says were applied.

    It comes as the SDK's object or as plain JSON (the SDK keeps fields it does not type as
    they came); anything else reads as no edits.
    """
    edits = _field(found, "applied_edits") if found is not None else None
    if not isinstance(edits, list | tuple):
        return ()
    out: list[ContextEdit] = []
    for item in edits:
        kind = _field(item, "type")
        if not isinstance(kind, str):
            continue
        uses = _field(item, "cleared_tool_uses")
        tokens = _field(item, "cleared_input_tokens")
        out.append(
            ContextEdit(
                kind=kind,
                cleared_tool_uses=uses if isinstance(uses, int) else 0,
                cleared_input_tokens=tokens if isinstance(tokens, int) else 0,
            )
        )
    return tuple(out)
