"""Offline models: `ScriptedModel` plays a list of turns, `FunctionModel` asks a function.

This module owns the models used by tests, examples and demos: no network, deterministic, and
streaming text word by word like a real provider. It records every request it receives in
`requests`, so a test can check what the model was shown.

It also owns the file format of a script (``kode run --model scripted:TURNS.json``,
`ScriptedModel.from_file`) and its checks: a JSON list of turns, each a string (a text reply) or
a list of strings and tool calls ``{"name": ..., "input": {...}}``. A file that holds anything
else is refused with every problem named by where it is (turn, item, key) and what to write
instead, before the model plays a single turn: a script read loosely makes the model say the
wrong thing, or call a tool with no arguments, without a word.
"""

from __future__ import annotations

import difflib
import inspect
import itertools
import json
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
from kode.tools.errors import KodeError

__all__ = [
    "FunctionModel",
    "ScriptError",
    "ScriptedModel",
    "ScriptedTurn",
    "load_script",
    "parse_script",
    "tool_use",
]

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


# The script file format.

FORM = (
    "a JSON list of turns, each a string (a text reply) or a list of strings and tool calls "
    '{"name": ..., "input": {...}}, e.g. '
    '[[{"name": "search", "input": {"pattern": "*.toml"}}], "I found pyproject.toml."]'
)
"""The file format in one sentence, as the error messages show it."""

_KEYS = ("name", "input", "id", "type")
# What people write for the keys, from other formats (`tool`, `args`, `arguments`, ...).
_ALIASES = {
    "tool": "name",
    "tool_name": "name",
    "function": "name",
    "args": "input",
    "arguments": "input",
    "params": "input",
    "parameters": "input",
    "kwargs": "input",
    "tool_use_id": "id",
    "call_id": "id",
}
_MAX_PROBLEMS = 20


class ScriptError(KodeError, ValueError):
    """A file of scripted turns that cannot be read or does not hold valid turns.

    The message names the file, each problem's place (``turn 2, item 1``, counted from 1,
    with its JSON index) and what to write instead.
    """


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "a JSON object"


def _short(value: object, room: int = 60) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= room else text[: room - 1] + "…"


def _meant(key: str) -> str | None:
    """The key `key` probably stands for, if any."""
    if key in _ALIASES:
        return _ALIASES[key]
    close = difflib.get_close_matches(key, _KEYS, n=1)
    return close[0] if close else None


def _suggest(key: str) -> str:
    meant = _meant(key)
    if meant is None:
        return ""
    return f"; write {meant!r}" if key in _ALIASES else f"; did you mean {meant!r}?"


def _looks_like_call(value: dict[Any, Any]) -> bool:
    return any(k in value for k in (*_KEYS, *_ALIASES))


def _call(value: dict[Any, Any], where: str, problems: list[str]) -> ToolUseContent | None:
    if "type" in value and value["type"] != "tool_use":
        problems.append(
            f"{where}: 'type' is {_short(value['type'])}; a JSON object in a turn is a tool "
            "call (its 'type' may only be \"tool_use\"): write a text reply as a plain string"
        )
        return None
    found = len(problems)
    for key in value:
        if key not in _KEYS:
            problems.append(
                f"{where}: unknown key {key!r} in a tool call{_suggest(str(key))} "
                "(a tool call has 'name', 'input' and optionally 'id')"
            )
    name = value.get("name")
    if "name" not in value:
        if not any(_meant(str(k)) == "name" for k in value if k not in _KEYS):
            problems.append(f"{where}: the tool call has no 'name' (the tool to call)")
    elif not isinstance(name, str) or not name.strip():
        problems.append(
            f"{where}: 'name' is {_short(name)}; it must be the tool's name, a non-empty string"
        )
    arguments = value.get("input", {})
    if not isinstance(arguments, dict | str):
        problems.append(
            f"{where}: 'input' is {_kind(arguments)} ({_short(arguments)}); it must be a JSON "
            'object of arguments, e.g. {"pattern": "*.toml"} (or {} for none)'
        )
    call_id = value.get("id")
    if call_id is not None and (not isinstance(call_id, str) or not call_id):
        problems.append(f"{where}: 'id' is {_short(call_id)}; it must be a non-empty string")
    if len(problems) > found:
        return None
    return tool_use(str(name), arguments, id=call_id)


def _turn(value: object, number: int, problems: list[str]) -> ScriptedTurn | None:
    where = f"turn {number} (at [{number - 1}])"
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        if _looks_like_call(value):
            problems.append(
                f"{where}: a tool call not wrapped in a list; a turn is a string or a list, "
                f"so write [{_short(value)}]"
            )
            _call(value, where, problems)
        else:
            problems.append(
                f"{where}: {_short(value)} is a JSON object; a turn is a string or a list of "
                "strings and tool calls"
            )
        return None
    if not isinstance(value, list):
        problems.append(
            f"{where}: {_short(value)} is {_kind(value)}; a turn is a string (a text reply) or "
            "a list of strings and tool calls"
        )
        return None
    if not value:
        problems.append(f"{where}: an empty list; give the turn a text or a tool call")
        return None
    items: list[Any] = []
    for i, item in enumerate(value):
        at = f"turn {number}, item {i + 1} (at [{number - 1}][{i}])"
        if isinstance(item, str):
            items.append(item)
        elif isinstance(item, dict):
            items.append(_call(item, at, problems))
        else:
            hint = (
                "; write one turn's texts and tool calls in one list"
                if isinstance(item, list)
                else ""
            )
            problems.append(
                f"{at}: {_short(item)} is {_kind(item)}; a turn's items are strings and tool "
                f'calls {{"name": ..., "input": {{...}}}}{hint}'
            )
    return items


def parse_script(data: object, *, source: str = "the script") -> list[ScriptedTurn]:
    """The turns `data` (a decoded JSON value) holds, checked against the file format.

    Args:
        data: What the file's JSON decodes to.
        source: How messages name the script (the file's path).

    Raises:
        ScriptError: `data` is not a list of turns; the message lists every problem found.
    """
    if not isinstance(data, list):
        if (
            isinstance(data, dict)
            and len(data) == 1
            and isinstance(next(iter(data.values())), list)
        ):
            key = next(iter(data))
            raise ScriptError(
                f"{source} holds a JSON object with the key {key!r}; the file must be the list "
                f"of turns itself: write [...] instead of {{{json.dumps(key)}: [...]}}. "
                f"A script is {FORM}."
            )
        if isinstance(data, dict) and _looks_like_call(data):
            raise ScriptError(
                f"{source} holds one tool call; the file is a list of turns and a turn is a "
                f"list of tool calls: write [[{_short(data)}]]. A script is {FORM}."
            )
        raise ScriptError(f"{source} holds {_kind(data)}; a script is {FORM}.")
    if not data:
        raise ScriptError(f"{source} holds an empty list: give it at least one turn; {FORM}.")
    problems: list[str] = []
    turns = [_turn(turn, i + 1, problems) for i, turn in enumerate(data)]
    if problems:
        more = len(problems) - _MAX_PROBLEMS
        shown = "\n  ".join(problems[:_MAX_PROBLEMS]) + (
            f"\n  ... and {more} more" if more > 0 else ""
        )
        raise ScriptError(
            f"{source} does not hold valid turns ({len(problems)} problem(s)):\n  {shown}\n"
            f"A script is {FORM}."
        )
    return [t for t in turns if t is not None]


def load_script(path: str | Path) -> list[ScriptedTurn]:
    """Read and check the turns of a script file (see `parse_script` for the format).

    Raises:
        ScriptError: the file cannot be read, is not JSON, or does not hold valid turns.
    """
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise ScriptError(
            f"cannot read scripted turns from {file}: {exc.strerror or exc}"
        ) from None
    except UnicodeDecodeError as exc:
        raise ScriptError(
            f"cannot read scripted turns from {file}: not UTF-8 text ({exc})"
        ) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ScriptError(
            f"{file} is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}; "
            f"a script is {FORM}."
        ) from None
    return parse_script(data, source=str(file))
