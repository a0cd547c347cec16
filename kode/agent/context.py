"""What of a long history each model request sends: old tool results cleared, older turns compacted.

This module owns `ContextPolicy` (a template's rule: keep the last N tool results whole, or
the most recent ones that fit a token budget; and, optionally, compact the older turns into
a summary once the request passes a token budget) and `ContextView`, which makes the
messages a request sends from the session's history: a cleared result's block keeps its
``tool_use_id`` (every call stays answered, as providers require) and says what was there and
how to get it again; a compaction's summary (a `HistoryCompacted` record of the session)
stands in for the messages before it. The history itself, in memory and in the store, never
changes, so a resume makes the same view from the same records.

A run keeps its view between requests and updates it with what the history gained since:
a result once cleared stays cleared (the results a policy keeps only move forward), and the
estimate of what a request sends is kept as messages come, so a request costs the same at
turn 5,000 as at turn 10. Writing a summary is `kode.agent.compaction`'s.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field, model_validator

from kode.models.anthropic_context import ContextEditing
from kode.models.messages import (
    ContentBlock,
    ImageContent,
    Message,
    TextContent,
    ThinkingContent,
    ToolResultContent,
    ToolUseContent,
)
from kode.sessions.records import HistoryCompacted

__all__ = ["SUMMARY_INTRO", "ContextPolicy", "ContextView"]

CHARS_PER_TOKEN = 4
"""How a result's size in tokens is estimated from its characters (no tokenizer is loaded)."""
IMAGE_TOKENS = 1_600
"""The tokens an image block is counted as (about what a provider charges for one)."""
SUMMARY_INTRO = (
    "The conversation so far was compacted to save context. A summary of the earlier part:"
)
"""What the user message sent in place of compacted messages says before the summary."""


class ContextPolicy(BaseModel):
    """What a request sends of a long history: old results as notes, older turns summarised.

    Set one or more: a result is cleared when it is older than the last `keep_tool_results`
    or does not fit, with the results after it, in `tool_results_tokens`. Results shorter
    than `min_chars` are never cleared (a note would not be shorter). With
    `compact_at_tokens`, once what a request would send passes that many tokens, a model
    first summarises the older turns, and requests send the summary and the most recent
    `compact_keep_tokens` of the history.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    keep_tool_results: int | None = Field(default=None, ge=0)
    """Send only the last N tool results whole."""
    tool_results_tokens: int | None = Field(default=None, ge=1)
    """Send whole only the most recent results that fit in this many tokens (estimated as
    characters / 4, an image as 1,600)."""
    min_chars: int = Field(default=200, ge=0)
    """Results shorter than this are always sent whole."""
    compact_at_tokens: int | None = Field(default=None, ge=1_000)
    """Compact when a request's messages are estimated above this many tokens (after
    clearing; the system prompt and tools are not counted): the older turns are summarised."""
    compact_keep_tokens: int | None = Field(default=None, ge=0)
    """Of the history, the most recent turns that fit in this many tokens are sent whole
    after a compaction (one turn at least); `None`: a quarter of `compact_at_tokens`."""
    compact_model: str | None = None
    """The model that writes the summary, as a model string (``"anthropic:..."``, see
    `kode.models.model_from`); `None`: the agent's own model."""
    compact_prompt: str | None = None
    """Instructions for the summary in place of kode's `COMPACT_PROMPT`."""
    server_editing: ContextEditing | None = None
    """The provider's own clearing of old tool results, for the models that offer it
    (Anthropic's ``clear_tool_uses_20250919``, `AnthropicModel`); other models ignore it. It
    edits the provider's copy of each request, after this policy's own clearing."""

    @model_validator(mode="after")
    def _says_something(self) -> ContextPolicy:
        if (
            self.keep_tool_results is None
            and self.tool_results_tokens is None
            and self.compact_at_tokens is None
            and self.server_editing is None
        ):
            raise ValueError(
                "a context policy needs keep_tool_results, tool_results_tokens, "
                "compact_at_tokens or server_editing (or more than one)"
            )
        if self.compact_at_tokens is None and (
            self.compact_keep_tokens is not None
            or self.compact_model is not None
            or self.compact_prompt is not None
        ):
            raise ValueError(
                "compact_keep_tokens, compact_model and compact_prompt need compact_at_tokens: "
                "set the token estimate above which the older turns are summarised"
            )
        if (
            self.compact_at_tokens is not None
            and self.compact_keep_tokens is not None
            and self.compact_keep_tokens >= self.compact_at_tokens
        ):
            raise ValueError(
                f"compact_keep_tokens ({self.compact_keep_tokens:,}) must be less than "
                f"compact_at_tokens ({self.compact_at_tokens:,}): a compaction must leave a "
                "request smaller than the budget that started it"
            )
        return self

    @property
    def keep_tokens(self) -> int:
        """The tokens of recent history a compaction keeps whole."""
        if self.compact_keep_tokens is not None:
            return self.compact_keep_tokens
        return (self.compact_at_tokens or 0) // 4


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


def estimate(message: Message) -> int:
    """A message's estimated tokens (characters / 4, an image as 1,600, and 4 a block)."""
    tokens = 4
    for block in message.content:
        tokens += 4
        if isinstance(block, TextContent):
            tokens += len(block.text) // CHARS_PER_TOKEN
        elif isinstance(block, ToolResultContent):
            tokens += _size(block)[1]
        elif isinstance(block, ToolUseContent):
            raw = block.input if isinstance(block.input, str) else json.dumps(block.input)
            tokens += (len(block.name) + len(raw)) // CHARS_PER_TOKEN
        elif isinstance(block, ThinkingContent):
            tokens += len(block.thinking) // CHARS_PER_TOKEN
        elif isinstance(block, ImageContent):
            tokens += IMAGE_TOKENS
    return tokens


def summary_message(compaction: HistoryCompacted) -> Message:
    """The user message a request sends in place of the compacted messages."""
    return Message.user(f"{SUMMARY_INTRO}\n\n{compaction.summary}")


class ContextView:
    """The messages a request sends under a `ContextPolicy`, kept up to date between requests."""

    __slots__ = (
        "_cleared",
        "_compaction",
        "_names",
        "_policy",
        "_results",
        "_sent",
        "_source",
        "_start",
        "_summary",
        "_tokens",
        "_view",
    )

    def __init__(self, policy: ContextPolicy) -> None:
        self._policy = policy
        self._source: list[Message] = []  # the history's messages the view was made from
        self._view: list[Message] = []
        self._tokens: list[int] = []  # each message of the view: its estimated tokens
        # Every tool result of the history, oldest first: (message index, block index, chars,
        # tokens); and how many of them (from the oldest) are cleared.
        self._results: list[tuple[int, int, int, int]] = []
        self._cleared = 0
        self._names: dict[str, str] = {}  # tool_use id -> tool name
        # The compaction the view sends (a summary in place of the messages before _start),
        # and the estimated tokens of what it sends (the summary, the view from _start).
        self._compaction: HistoryCompacted | None = None
        self._summary: Message | None = None
        self._start = 0
        self._sent = 0

    @property
    def policy(self) -> ContextPolicy:
        """The policy the view follows."""
        return self._policy

    @property
    def tokens(self) -> int:
        """The estimated tokens of the messages the last `messages` returned."""
        return self._sent

    @property
    def over_budget(self) -> bool:
        """Whether the last request's messages passed the policy's `compact_at_tokens`."""
        at = self._policy.compact_at_tokens
        return at is not None and self._sent > at

    def messages(
        self, history: Sequence[Message], compaction: HistoryCompacted | None = None
    ) -> list[Message]:
        """The messages to send for `history` (the same objects where nothing is cleared).

        With `compaction` (the session's latest, when the policy compacts), its summary in
        place of the messages it stands for. A new list each time (a pointer copy): a request
        kept after it was sent keeps what it sent.
        """
        self._sync(history)
        self._clear()
        if self._policy.compact_at_tokens is None:
            return self._view.copy()
        if compaction is not self._compaction:
            self._compact(compaction)
        if self._summary is None:
            return self._view.copy()
        return [self._summary, *self._view[self._start :]]

    def older(self) -> tuple[int, list[Message]] | None:
        """What the next compaction summarises (`None`: nothing).

        Where the recent part starts, and the history's messages (whole) since the last
        compaction up to there. The recent part is the latest turns that fit in the
        policy's `keep_tokens` (the latest turn at least) and starts with a model's turn,
        so a call and its result stay on the same side.
        """
        view = self._view
        keep = self._policy.keep_tokens
        kept = 0
        cut: int | None = None
        for index in range(len(view) - 1, self._start, -1):
            kept += self._tokens[index]
            if kept > keep and cut is not None:
                break
            if view[index].role == "assistant":
                cut = index
        if cut is None or cut <= self._start:
            return None
        return cut, self._source[self._start : cut]

    def _compact(self, compaction: HistoryCompacted | None) -> None:
        self._compaction = compaction
        if compaction is None or compaction.messages >= len(self._view):
            self._summary = None
            self._start = 0
            self._sent = sum(self._tokens)
            return
        self._summary = summary_message(compaction)
        self._start = compaction.messages
        self._sent = estimate(self._summary) + sum(self._tokens[self._start :])

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
        tokens = self._tokens
        counting = self._policy.compact_at_tokens is not None  # else no estimate is read
        for index in range(len(source), len(history)):
            message = history[index]
            source.append(message)
            self._view.append(message)
            size = estimate(message) if counting else 0
            tokens.append(size)
            if index >= self._start:
                self._sent += size
            for position, block in enumerate(message.content):
                if isinstance(block, ToolUseContent):
                    self._names[block.id] = block.name
                elif isinstance(block, ToolResultContent):
                    chars, size = _size(block)
                    self._results.append((index, position, chars, size))

    def _forget(self, start: int) -> None:
        """Drop what the view knows from message `start` on."""
        del self._source[start:]
        del self._view[start:]
        del self._tokens[start:]
        self._results = [r for r in self._results if r[0] < start]
        self._cleared = min(self._cleared, len(self._results))
        if start <= self._start:  # the compaction no longer fits: made again by messages()
            self._compaction = self._summary = None
            self._start = 0
        self._sent = (0 if self._summary is None else estimate(self._summary)) + sum(
            self._tokens[self._start :]
        )

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
        replaced = Message(role=message.role, content=content)
        self._view[index] = replaced
        size = estimate(replaced) if self._policy.compact_at_tokens is not None else 0
        if index >= self._start:
            self._sent += size - self._tokens[index]
        self._tokens[index] = size
