"""Client tool calls: calls the caller executes, waiting between runs for their results.

This module owns `ClientCalls`. When a turn has a client tool call (a tool declared without a
handler), the run ends with the call pending; the caller supplies its result with
`Agent.submit_tool_result`, and the next ``send()`` opens with every result of that turn, in
call order (the agent's own results, kept meanwhile, and the submitted ones).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from kode.agent.blocks import cancelled_result
from kode.agent.text import clean_text
from kode.models.messages import ContentBlock, TextContent, ToolResultContent, ToolUseContent

if TYPE_CHECKING:
    from kode.agent.state import CallOutcome

__all__ = ["ClientCalls"]


class ClientCalls:
    """The turn waiting for client results: its calls, and the results so far."""

    __slots__ = ("_calls", "_client", "_results", "_waiting")

    def __init__(self) -> None:
        self._calls: list[ToolUseContent] = []
        self._results: dict[str, ToolResultContent] = {}
        self._waiting: set[str] = set()
        self._client: set[str] = set()  # the turn's client calls, answered or not

    @property
    def waiting(self) -> list[str]:
        """The ids of the client calls still waiting for a result, in call order."""
        return [c.id for c in self._calls if c.id in self._waiting]

    @property
    def open(self) -> bool:
        """Whether a turn is waiting (results must open the next run)."""
        return bool(self._calls)

    def wait_for(
        self, calls: Sequence[ToolUseContent], outcomes: Sequence[CallOutcome | None]
    ) -> None:
        """Hold a turn whose pending outcomes wait for the client."""
        self.restore(
            calls,
            {c.id: o.block for c, o in zip(calls, outcomes, strict=True) if o and not o.pending},
            [c.id for c, o in zip(calls, outcomes, strict=True) if o and o.pending],
        )

    def restore(
        self,
        calls: Sequence[ToolUseContent],
        results: dict[str, ToolResultContent],
        waiting: Sequence[str],
    ) -> None:
        """Hold a turn: its calls, the results it has, and the ids still waiting."""
        self._calls = list(calls)
        self._results = dict(results)
        self._waiting = set(waiting)
        self._client = set(waiting)

    def submit(self, call_id: str, block: ToolResultContent) -> bool:
        """Record a client's result (a second one replaces the first); whether it was asked for."""
        if call_id not in self._client:
            return False
        self._waiting.discard(call_id)
        self._results[call_id] = block
        return True

    def take(self, prompt: str | None) -> list[ContentBlock] | str:
        """The next user message's blocks (the turn's results, then the prompt), or why not.

        Raises nothing: a turn still missing results gives the message to show instead.
        """
        blocks: list[ContentBlock] = []
        if self._calls:
            if self._waiting:
                return (
                    "client tool calls are still waiting for results: "
                    f"{', '.join(self.waiting)}; call submit_tool_result for each, then send()"
                )
            blocks.extend(self._results.get(c.id) or cancelled_result(c) for c in self._calls)
            self._calls, self._results, self._client = [], {}, set()
        if prompt is not None:
            blocks.append(TextContent(text=clean_text(prompt)))
        return blocks
