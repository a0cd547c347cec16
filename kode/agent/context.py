"""What of a long history each model request sends: old tool results can be cleared from it.

This module owns `ContextPolicy` (a template's rule: keep the last N tool results whole, or
the most recent ones that fit a token budget) and `ContextView`, which makes the messages a
request sends from the session's history: a cleared result's block keeps its ``tool_use_id``
(every call stays answered, as providers require) and says what was there and how to get it
again. The history itself, in memory and in the store, never changes, so a resume makes the
same view from the same records.

A run keeps its view between requests and updates it with what the history gained since:
a result once cleared stays cleared (the results a policy keeps only move forward), so a
request costs the same at turn 5,000 as at turn 10. It does not summarise anything.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field, model_validator

from kode.models.messages import (
    ContentBlock,
    ImageContent,
    Message,
    TextContent,
    ToolResultContent,
    ToolUseContent,
)

__all__ = ["ContextPolicy", "ContextView"]

CHARS_PER_TOKEN = 4
"""How a result's size in tokens is estimated from its characters (no tokenizer is loaded)."""
IMAGE_TOKENS = 1_600
"""The tokens an image block is counted as (about what a provider charges for one)."""


class ContextPolicy(BaseModel):
    """Which tool results a request sends whole; the older ones are sent as a short note.

    Set one or both: a result is cleared when it is older than the last `keep_tool_results`
    or does not fit, with the results after it, in `tool_results_tokens`. Results shorter
    than `min_chars` are never cleared (a note would not be shorter).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    keep_tool_results: int | None = Field(default=None, ge=0)
    """Send only the last N tool results whole."""
    tool_results_tokens: int | None = Field(default=None, ge=1)
    """Send whole only the most recent results that fit in this many tokens (estimated as
    characters / 4, an image as 1,600)."""
    min_chars: int = Field(default=200, ge=0)
    """Results shorter than this are always sent whole."""

    @model_validator(mode="after")
    def _says_something(self) -> ContextPolicy:
        if self.keep_tool_results is None and self.tool_results_tokens is None:
            raise ValueError(
                "a context policy needs keep_tool_results or tool_results_tokens (or both)"
            )
        return self


def _size(block: ToolResultContent) -> tuple[int, int]:
    """A result's characters and estimated tokens."""
    chars = 0
    tokens = 0
    for part in block.content:
        if isinstance(part, TextContent):
            chars += len(part.text)
            tokens += len(part.text) // CHARS_PER_TOKEN + 1
        elif isinstance(part, ImageContent):
            tokens += IMAGE_TOKENS
            chars += IMAGE_TOKENS * CHARS_PER_TOKEN
    return chars, tokens


class ContextView:
    """The messages a request sends under a `ContextPolicy`, kept up to date between requests."""

    __slots__ = ("_cleared", "_names", "_policy", "_results", "_source", "_view")

    def __init__(self, policy: ContextPolicy) -> None:
        self._policy = policy
        self._source: list[Message] = []  # the history's messages the view was made from
        self._view: list[Message] = []
        # Every tool result of the history, oldest first: (message index, block index, chars,
        # tokens); and how many of them (from the oldest) are cleared.
        self._results: list[tuple[int, int, int, int]] = []
        self._cleared = 0
        self._names: dict[str, str] = {}  # tool_use id -> tool name

    def messages(self, history: Sequence[Message]) -> list[Message]:
        """The messages to send for `history` (the same objects where nothing is cleared).

        A new list each time (a pointer copy): a request kept after it was sent keeps what
        it sent.
        """
        self._sync(history)
        self._clear()
        return self._view.copy()

    def _sync(self, history: Sequence[Message]) -> None:
        source = self._source
        known = len(source)
        if known and (
            len(history) < known
            or history[0] is not source[0]
            or (known >= 2 and history[known - 2] is not source[known - 2])
        ):
            self._forget(0)  # not the history the view was made from (a restore): anew
        elif known and history[known - 1] is not source[known - 1]:
            self._forget(known - 1)  # the last message was replaced (blocks added to it)
        for index in range(len(source), len(history)):
            message = history[index]
            source.append(message)
            self._view.append(message)
            for position, block in enumerate(message.content):
                if isinstance(block, ToolUseContent):
                    self._names[block.id] = block.name
                elif isinstance(block, ToolResultContent):
                    chars, tokens = _size(block)
                    self._results.append((index, position, chars, tokens))

    def _forget(self, start: int) -> None:
        """Drop what the view knows from message `start` on."""
        del self._source[start:]
        del self._view[start:]
        self._results = [r for r in self._results if r[0] < start]
        self._cleared = min(self._cleared, len(self._results))

    def _clear(self) -> None:
        policy = self._policy
        results = self._results
        keep_from = self._cleared  # the oldest result sent whole; what is cleared stays so
        if policy.keep_tool_results is not None:
            keep_from = max(keep_from, len(results) - policy.keep_tool_results)
        if policy.tool_results_tokens is not None:
            budget = policy.tool_results_tokens
            fit = len(results)
            for i in range(len(results) - 1, keep_from - 1, -1):
                budget -= results[i][3]
                if budget < 0:
                    break
                fit = i
            keep_from = max(keep_from, fit)
        for i in range(self._cleared, keep_from):
            index, position, chars, _ = results[i]
            if chars >= policy.min_chars:
                self._replace(index, position, chars)
        self._cleared = keep_from

    def _replace(self, index: int, position: int, chars: int) -> None:
        message = self._view[index]
        block = message.content[position]
        assert isinstance(block, ToolResultContent)
        name = self._names.get(block.tool_use_id, "the tool")
        note = (
            f"[This result of {name} ({chars:,} characters) was cleared from the conversation "
            "to save context. Call the tool again with the same arguments if you need it.]"
        )
        content: list[ContentBlock] = list(message.content)
        content[position] = ToolResultContent(
            tool_use_id=block.tool_use_id,
            content=[TextContent(text=note)],
            is_error=block.is_error,
        )
        self._view[index] = Message(role=message.role, content=content)
