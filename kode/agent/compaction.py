"""Compaction: a model summarises the older turns of the history a context policy sends.

This module owns what the summarising model is asked (`COMPACT_PROMPT`, and the transcript
of the older messages it reads), the request itself (`summarise`) and a run's compactions
(`Compactor`: the summary kept as the session's `HistoryCompacted` record, its usage added to
the session's, a `Compaction` event either way). It does not decide when to compact or where
the older part ends (`kode.agent.context.ContextView` does), nor stop a run a compaction's
tokens took past its limits (the run does).

The older part is sent as one text transcript, not as the messages themselves: a provider
needs tool definitions to read ``tool_use`` blocks, and the summarising model must not call
tools. Each tool result in it is cut to `RESULT_CHARS` characters.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from kode.agent.events import Compaction
from kode.models.base import Model, ModelError, ModelRequest, ModelResponse, ModelSettings
from kode.models.messages import (
    ImageContent,
    Message,
    TextContent,
    ThinkingContent,
    ToolResultContent,
    ToolUseContent,
    Usage,
)
from kode.models.resolve import model_from

if TYPE_CHECKING:
    from kode.agent.context import ContextView
    from kode.agent.ports import AgentLike, EventCallbackFunc
    from kode.tracing.spans import Tracing

__all__ = ["COMPACT_PROMPT", "RESULT_CHARS", "Compactor", "summarise", "transcript"]

logger = logging.getLogger("kode.agent")

COMPACT_PROMPT = (
    "You write the summary that replaces the earlier part of a conversation between a user "
    "and an AI agent that works with tools. The agent will go on with only your summary and "
    "the most recent messages, so keep everything it needs: what the user asked for and their "
    "constraints, the decisions made and why, what the tools found (names of files, "
    "functions, URLs, figures, errors), what has been done and what is left to do. Leave out "
    "pleasantries and whatever was superseded. When a summary of an even earlier part is "
    "given, fold it in: yours replaces it. Write plain prose and short lists, without a "
    "preamble."
)
"""The summarising model's system prompt (a policy's ``compact_prompt`` replaces it)."""

RESULT_CHARS = 2_000
"""Each tool result is cut to this many characters in the transcript the model reads."""


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]} [... {len(text) - limit:,} more characters]"


def transcript(messages: Sequence[Message], previous: str | None) -> str:
    """The text the summarising model reads: the earlier summary, then the messages."""
    lines: list[str] = []
    if previous is not None:
        lines += ["<earlier-summary>", previous, "</earlier-summary>", ""]
    lines.append("<conversation>")
    for message in messages:
        who = "User" if message.role == "user" else "Agent"
        for block in message.content:
            if isinstance(block, TextContent) and block.text.strip():
                lines.append(f"{who}: {block.text}")
            elif isinstance(block, ToolUseContent):
                raw = block.input if isinstance(block.input, str) else json.dumps(block.input)
                lines.append(f"Agent calls {block.name}({_cut(raw, RESULT_CHARS)})")
            elif isinstance(block, ToolResultContent):
                what = "Tool error" if block.is_error else "Tool result"
                images = sum(isinstance(p, ImageContent) for p in block.content)
                text = block.text + (f" [{images} image(s)]" if images else "")
                lines.append(f"{what}: {_cut(text, RESULT_CHARS)}")
            elif isinstance(block, ImageContent):
                lines.append(f"{who}: [an image]")
            elif isinstance(block, ThinkingContent):
                continue  # the agent's reasoning: what it did is in its calls and text
    lines.append("</conversation>")
    lines += ["", "Write the summary of everything above."]
    return "\n".join(lines)


async def summarise(
    model: Model,
    messages: Sequence[Message],
    previous: str | None,
    *,
    prompt: str | None = None,
    settings: ModelSettings | None = None,
    wrap: Callable[[ModelRequest, AsyncIterator[Any]], AsyncIterator[Any]] | None = None,
) -> tuple[str, Usage]:
    """Ask `model` for the summary of `messages` (after the `previous` summary, if any).

    Args:
        model: The model that writes it.
        messages: The older messages, whole.
        previous: The summary of what came before them (the last compaction's).
        prompt: The system prompt; `COMPACT_PROMPT` when `None`.
        settings: The request's settings (the template's).
        wrap: Wraps the request's event stream (the run's tracing span).

    Returns:
        The summary and the tokens the request used.

    Raises:
        ModelError: The model failed, or answered without text.
    """
    request = ModelRequest(
        system=prompt or COMPACT_PROMPT,
        messages=[Message.user(transcript(messages, previous))],
        tools=[],
        settings=settings or ModelSettings(),
    )
    stream = model.stream(request)
    if wrap is not None:
        stream = wrap(request, stream)
    response: ModelResponse | None = None
    async for event in stream:
        if isinstance(event, ModelResponse):
            response = event
    if response is None:
        raise ModelError("the model ended its stream without a response")
    text = response.message.text.strip()
    if not text:
        raise ModelError("the model answered the summary request without text")
    return text, response.usage


class Compactor:
    """A run's compactions: each asks for a summary, keeps it, and says what happened.

    Args:
        agent: The agent whose history is compacted.
        emit: Where the `Compaction` events go.
        tracing: The run's tracing, if it is traced (the summary request is a ``chat`` span).
    """

    def __init__(self, agent: AgentLike, emit: EventCallbackFunc, tracing: Tracing | None) -> None:
        self._agent = agent
        self._emit = emit
        self._tracing = tracing
        self._named: Model | None = None  # a policy's compact_model, made once a run

    async def compact(
        self, view: ContextView, settings: ModelSettings, commit: Callable[[], Awaitable[None]]
    ) -> Usage:
        """Summarise the older turns `view` names; the tokens it took (none when it failed).

        On success the session holds the new `HistoryCompacted` record and its usage, and
        `commit` wrote them. A failure of any kind changes nothing but its event (and a
        warning in the log): the request sends the history uncompacted, and the next one
        tries again.
        """
        older = view.older()
        if older is None:  # the recent turns alone pass the budget: nothing older to summarise
            return Usage()
        cut, part = older
        session = self._agent.session
        previous = session.compaction
        before = view.tokens
        policy = view.policy
        try:
            model = self._model(policy.compact_model)
        except (ValueError, TypeError) as exc:  # compact_model names no model kode knows
            return self._failed(cut, part, before, exc)
        try:
            summary, usage = await summarise(
                model,
                part,
                previous.summary if previous is not None else None,
                prompt=policy.compact_prompt,
                settings=settings,
                wrap=self._wrap(model),
            )
        except Exception as exc:  # whatever the summary's failure, the run goes on without it
            return self._failed(cut, part, before, exc)
        session.add_usage(usage)
        session.compact(summary, cut)
        await commit()
        view.messages(session.messages, session.compaction)  # its estimate, now compacted
        self._emit(
            Compaction(
                messages=cut,
                summarised=len(part),
                tokens_before=before,
                tokens_after=view.tokens,
                usage=usage,
                summary=summary,
            )
        )
        return usage

    def _model(self, named: str | None) -> Model:
        if named is None:
            return self._agent.model
        if self._named is None:  # once a run: a scripted model plays its turns in order
            self._named = model_from(named)
        return self._named

    def _wrap(
        self, model: Model
    ) -> Callable[[ModelRequest, AsyncIterator[Any]], AsyncIterator[Any]] | None:
        tracing = self._tracing
        if tracing is None:
            return None
        agent = self._agent

        def wrap(request: ModelRequest, stream: AsyncIterator[Any]) -> AsyncIterator[Any]:
            return tracing.chat(agent, request, stream, model=model, compaction=True)

        return wrap

    def _failed(self, cut: int, part: Sequence[Message], before: int, exc: Exception) -> Usage:
        logger.warning("kode: the history was not compacted: %s", exc)
        self._emit(
            Compaction(
                messages=cut,
                summarised=len(part),
                tokens_before=before,
                tokens_after=before,
                usage=Usage(),
                error=f"the summary failed, so the request sends the whole history: {exc}",
            )
        )
        return Usage()
