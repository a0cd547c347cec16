"""Reading scripted turns from a JSON file, for ``kode run --model scripted:TURNS.json``.

This module owns the file format of a script and its checks: a JSON list of turns, each a
string (a text reply) or a list of strings and tool calls ``{"name": ..., "input": {...}}``.
A file that holds anything else is refused with every problem named by where it is (turn,
item, key) and what to write instead, before the model plays a single turn: a script read
loosely makes the model say the wrong thing, or call a tool with no arguments, without a word.
It does not play the turns (`ScriptedModel` does).
"""

from __future__ import annotations

import difflib
import json
from pathlib import Path
from typing import Any

from kode.models.messages import ToolUseContent
from kode.models.scripted import ScriptedTurn, tool_use
from kode.tools.errors import KodeError

__all__ = ["ScriptError", "load_script", "parse_script"]

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
