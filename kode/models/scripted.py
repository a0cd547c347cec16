"""Offline models: `ScriptedModel` plays a list of turns, `FunctionModel` asks a function.

This module owns the models used by tests, examples and demos: no network, deterministic, and
streaming text word by word like a real provider. It records every request it receives in
`requests`, so a test can check what the model was shown.
"""

from __future__ import annotations

import inspect
import itertools
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from kode.models.base import (
    ModelError,
    ModelEvent,
    ModelRequest,
    ModelResponse,
    StopReason,
    TextDelta,
)
from kode.models.messages import (
    ContentBlock,
    Message,
    TextContent,
    ToolUseContent,
    Usage,
)

__all__ = ["FunctionModel", "ScriptedModel", "ScriptedTurn", "tool_use"]

_ids = itertools.count(1)
_WORDS = re.compile(r"\S+\s*|\s+")

ScriptedTurn = str | Message | ContentBlock | Sequence[str | ContentBlock]
"""One scripted reply: text, a message, a block, or a list of texts and blocks."""


def tool_use(
    name: str, input: dict[str, Any] | str | None = None, *, id: str | None = None
) -> ToolUseContent:
    """A ``tool_use`` block for a scripted turn (the id is generated when not given)."""
    return ToolUseContent(
        id=id or f"toolu_{next(_ids):04d}", name=name, input={} if input is None else input
    )


def _message(turn: ScriptedTurn) -> Message:
    if isinstance(turn, Message):
        return turn
    items: list[Any] = [turn] if isinstance(turn, str | BaseModel) else list(turn)
    blocks = [TextContent(text=item) if isinstance(item, str) else item for item in items]
    return Message(role="assistant", content=blocks)


class _WordCounter:
    """Counts the words of a request's messages (the offline models' input "tokens").

    A conversation grows by a message or two per request, so when a request starts with the
    messages the previous one had (its last one is the very object seen last time), only the
    new ones are counted: recounting, or even comparing, the whole history every turn made a
    run's cost grow with the square of its length (`bench/peers.py`, ``turns_50``).
    """

    __slots__ = ("_known", "_last", "_total")

    def __init__(self) -> None:
        self._known = 0
        self._last: Message | None = None
        self._total = 0

    def count(self, messages: Sequence[Message]) -> int:
        """The words of `messages`, counting only those not seen in the previous request."""
        known = self._known
        if known and (len(messages) < known or messages[known - 1] is not self._last):
            known = self._total = 0
        for index in range(known, len(messages)):
            self._total += len(messages[index].text.split())
        if messages:
            self._known = len(messages)
            self._last = messages[-1]
        return self._total


def _play(message: Message, name: str, words_in: int) -> list[ModelEvent]:
    # A list, not an async generator: `stream` is one already, and a second layer of them
    # cost more than the rest of a scripted turn. One pass over the blocks.
    events: list[ModelEvent] = []
    texts: list[str] = []
    stop: StopReason = "end_turn"
    for block in message.content:
        if isinstance(block, TextContent):
            texts.append(block.text)
            events.extend(TextDelta(text=piece) for piece in _WORDS.findall(block.text))
        elif isinstance(block, ToolUseContent):
            stop = "tool_use"
    words_out = len("".join(texts).split()) if texts else 0
    events.append(
        ModelResponse(
            message=message,
            stop_reason=stop,
            usage=Usage(input_tokens=words_in, output_tokens=words_out),
            model=name,
        )
    )
    return events


class ScriptedModel:
    """Replies with the scripted turns, one per request, in order.

    Example:
        ```python
        from kode.models import ScriptedModel, tool_use

        model = ScriptedModel([
            [tool_use("search_files", {"pattern": "*.toml"})],
            "I found pyproject.toml.",
        ])
        ```
    """

    def __init__(self, turns: Sequence[ScriptedTurn], *, name: str = "scripted") -> None:
        self.name = name
        """The model's name."""
        self.turns = [_message(t) for t in turns]
        """The replies still to come."""
        self.requests: list[ModelRequest] = []
        self._words = _WordCounter()
        """Every request received, in order."""

    @classmethod
    def from_file(cls, path: str | Path, *, name: str = "scripted") -> ScriptedModel:
        """A model playing the turns of a JSON file (what ``--model scripted:FILE`` reads).

        The file is a JSON list of turns, each a string (a text reply) or a list of strings
        and tool calls ``{"name": ..., "input": {...}, "id": ...}`` (``id`` optional).

        Raises:
            ScriptError: the file cannot be read or does not hold valid turns; the message
                names each problem's turn, item and key, and what to write instead.
        """
        from kode.models.script_file import load_script

        return cls(load_script(path), name=name)

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """Yield the next scripted turn.

        Raises:
            ModelError: the script has no turns left.
        """
        self.requests.append(request)
        if not self.turns:
            raise ModelError(
                f"ScriptedModel {self.name!r} has no turns left (request {len(self.requests)}); "
                "add a turn for every model reply the test expects"
            )
        message = self.turns.pop(0)
        for event in _play(message, self.name, self._words.count(request.messages)):
            yield event

    def supports_output_format(self, *, tools: bool) -> bool:
        """Native structured output: the scripted text stands for what the provider returns."""
        return True


FunctionModelFunc = Callable[[ModelRequest], "ScriptedTurn | Awaitable[ScriptedTurn]"]
"""A function of the request (sync or async) returning the reply."""


class FunctionModel:
    """Replies with whatever a function of the request returns (sync or async).

    Example:
        ```python
        from kode.models import FunctionModel, tool_use

        def reply(request):
            last = request.messages[-1]
            if last.content[0].type == "tool_result":
                return "Done."
            return [tool_use("ping")]

        model = FunctionModel(reply)
        ```
    """

    def __init__(self, function: FunctionModelFunc, *, name: str = "function") -> None:
        self.name = name
        """The model's name."""
        self.function = function
        """The function that decides each reply."""
        self.requests: list[ModelRequest] = []
        self._words = _WordCounter()
        """Every request received, in order."""

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """Yield the function's reply."""
        self.requests.append(request)
        turn = self.function(request)
        if inspect.isawaitable(turn):
            turn = await turn
        for event in _play(_message(turn), self.name, self._words.count(request.messages)):
            yield event

    def supports_output_format(self, *, tools: bool) -> bool:
        """Native structured output: the function sees ``request.output`` and answers JSON."""
        return True
