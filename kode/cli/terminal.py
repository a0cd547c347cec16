"""What ``kode run`` shows and asks at the terminal.

This module owns the printing of a run's events (text as it streams, each call with its
progress, result and time, compactions, errors) and the questions a person answers there: an
approval prompt (once, always, for a server or a pattern, with an edited input, or no) and the
forms a tool or an MCP server asks to be filled. A prompt is read in a daemon thread, so Ctrl-C
never waits for an answer. It does not make or run the agent (`kode.cli.run`).
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

__all__ = ["elicit", "first_line", "show"]


def first_line(text: str, room: int) -> str:
    """The first line of `text` in at most `room` characters, cut between words.

    An ellipsis says that something was left out: the end of the line, or the lines after it.
    """
    lines = text.strip().splitlines() or [""]
    first = lines[0].rstrip()
    if len(first) > room:
        cut = first[: room - 1]
        space = cut.rfind(" ")
        if space > room // 2:  # a word boundary not too far back
            cut = cut[:space]
        return cut.rstrip() + "…"
    return first + " …" if len(lines) > 1 else first


def _ask(question: str) -> str:
    """A line from the terminal; the end of input (a closed stdin, Ctrl-D) answers no.

    The line is read from the file descriptor, not `sys.stdin`: a prompt abandoned on Ctrl-C
    must not hold the lock of stdin's buffer while the interpreter shuts down.
    """
    print(question, end="", flush=True)
    line = bytearray()
    while True:
        try:
            byte = os.read(sys.stdin.fileno(), 1)
        except (AttributeError, OSError, ValueError):  # no stdin at all: as at its end
            byte = b""
        if byte in (b"", b"\n"):
            break
        line += byte
    if not byte and not line:
        print("\n  (end of input: denied)", flush=True)
    return line.decode(errors="replace")


async def _prompt(question: str) -> str:
    """`_ask` in a daemon thread, so that Ctrl-C need not wait for an answer.

    input() cannot be cancelled: neither the interrupted run nor the exit of the process may
    wait for an answer that will not come.
    """
    import threading

    import anyio.from_thread
    import anyio.lowlevel

    answered = anyio.Event()
    answer: list[str] = []
    token = anyio.lowlevel.current_token()

    def ask() -> None:
        answer.append(_ask(question))
        try:
            anyio.from_thread.run_sync(answered.set, token=token)
        except RuntimeError:  # the event loop is gone: nobody waits for this answer
            pass

    threading.Thread(target=ask, name="kode approval prompt", daemon=True).start()
    await answered.wait()
    return answer[0]


def _field_value(text: str, spec: dict[str, Any]) -> Any:
    """A form field's answer typed as its schema says (``ValueError`` when it does not fit)."""
    kind = spec.get("type", "string")
    try:
        if kind == "integer":
            return int(text)
        if kind == "number":
            return float(text)
    except ValueError:
        raise ValueError("a whole number" if kind == "integer" else "a number") from None
    if kind == "boolean":
        if text.strip().lower() in ("y", "yes", "true", "1"):
            return True
        if text.strip().lower() in ("n", "no", "false", "0"):
            return False
        raise ValueError("answer y or n")
    if kind == "array":
        return [part.strip() for part in text.split(",") if part.strip()]
    choices = spec.get("enum") or [o.get("const") for o in spec.get("oneOf", [])]
    if choices and text not in choices:
        raise ValueError(f"one of {', '.join(map(str, choices))}")
    return text


async def elicit(request: Any) -> Any:
    """``kode run``'s answer to a question for the user: one prompt per field, or a page.

    A blank answer takes the field's default; a blank required field without one cancels the
    form; the end of input declines.
    """
    from kode.tools.asking import ElicitationReply

    who = f"MCP server '{request.server}'" if request.server else f"tool {request.tool_name}"
    print(f"\n? {who} asks: {request.message}", flush=True)
    if request.mode == "url":
        answer = await _prompt(f"  Open {request.url} and come back here. Done? [y/N] ")
        done = answer.strip()[:1].lower() == "y"
        return ElicitationReply(action="accept" if done else "decline")
    schema = request.schema or {}
    required = set(schema.get("required", ()))
    content: dict[str, Any] = {}
    for name, spec in (schema.get("properties") or {}).items():
        what = spec.get("description") or spec.get("title") or spec.get("type", "text")
        default = spec.get("default")
        shown = f" [{default}]" if default is not None else ""
        while True:
            text = await _prompt(f"  {name} ({what}){shown}: ")
            if not text.strip():
                if default is not None:
                    content[name] = default
                elif name in required:
                    print("  (no answer: the form is cancelled)", flush=True)
                    return ElicitationReply(action="cancel")
                break
            try:
                content[name] = _field_value(text.strip(), spec)
                break
            except ValueError as exc:
                print(f"  ({exc})", flush=True)
    return ElicitationReply(action="accept", content=content)


_ASKED = "asked:"
"""`show`'s key prefix for the seconds a call waited at its approval prompt."""


async def show(agent: Any, event: Any, started: dict[str, float]) -> int:
    """Print one event of ``kode run``; return 1 for an error event.

    `started` holds when each call started, and (under ``asked:<call id>``) how long it waited
    for an approval, left out of the duration shown.
    """
    from kode.agent import events as ev

    if isinstance(event, ev.TextDelta):
        print(event.text, end="", flush=True)
    elif isinstance(event, ev.ToolStart):
        started[event.call_id] = time.monotonic()
        shown = json.dumps(event.input, default=str, ensure_ascii=False)
        print(f"\n→ {event.name} {shown}", flush=True)
    elif isinstance(event, ev.ToolProgress):
        done = f" {event.fraction:.0%}" if event.fraction is not None else ""
        elapsed = time.monotonic() - started.get(event.call_id, time.monotonic())
        print(f"  … {event.message}{done} ({elapsed:.1f} s)", flush=True)
    elif isinstance(event, ev.ToolEnd):
        mark = "✗" if event.is_error else "✓"
        first = first_line(event.result.text, 100)
        # The call's own time: not the time a person took to answer its approval prompt.
        took = max(0.0, event.duration - started.pop(_ASKED + event.call_id, 0.0))
        print(f"  {mark} {event.name} ({took:.2f} s) {first}", flush=True)
        if event.display is not None and event.display.text:
            print(_indented(event.display.text), flush=True)
    elif isinstance(event, ev.ApprovalRequired):
        asked = time.monotonic()
        try:
            await _approve(agent, event)
        finally:
            key = _ASKED + event.call_id
            started[key] = started.get(key, 0.0) + time.monotonic() - asked
    elif isinstance(event, ev.Compaction):
        if event.error is None:
            print(
                f"\n⋯ compacted: {event.messages} messages summarised "
                f"({event.tokens_before:,} → {event.tokens_after:,} tokens)",
                flush=True,
            )
        else:
            print(f"\n⋯ not compacted: {event.error}", file=sys.stderr, flush=True)
    elif isinstance(event, ev.Done):
        print()
    elif isinstance(event, ev.ErrorEvent):
        print(f"\nerror: {event.message}", file=sys.stderr)
        return 1
    return 0


_SHOWN_LINES = 60
"""The most lines of a diff or a display ``kode run`` prints (more are counted)."""


def _indented(text: str, prefix: str = "    ") -> str:
    lines = text.splitlines()
    if len(lines) > _SHOWN_LINES:
        lines = [*lines[:_SHOWN_LINES], f"… ({len(lines) - _SHOWN_LINES} more lines)"]
    return "\n".join(prefix + line for line in lines)


async def _approve(agent: Any, event: Any) -> None:
    """Ask whoever runs ``kode run`` about a call: what it does, its diff, and the choices."""
    from kode.agent import AgentError

    print(f"\n{event.name} needs approval: {event.reason} ({event.rule})")
    if event.description:
        print(f"  {event.description}")
    else:
        print(f"  {event.name} {json.dumps(event.input, default=str, ensure_ascii=False)}")
    if event.diff:
        print(_indented(event.diff))
    choices = ["[y]es once", f"[a]lways for {event.name}"]
    if event.server:
        choices.append(f"[s]erver: always for MCP server {event.server}")
    if event.pattern:
        choices.append(f"[p]attern: always for calls starting with {event.pattern!r}")
    choices.append("[e]dit (e JSON: run with this input)")
    choices.append("[n]o (n NOTE: say why)")
    while True:
        answer = (await _prompt(f"Allow? {', '.join(choices)}: ")).strip()
        try:
            _answer(agent, event, answer)
        except (AgentError, ValueError) as exc:
            if not answer.lower().startswith("e"):
                raise
            print(f"  {exc}", flush=True)  # an input that is not valid: ask again
            continue
        return


def _answer(agent: Any, event: Any, answer: str) -> None:
    """Decide a call by what was typed at ``kode run``'s approval prompt."""
    key, _, rest = answer.partition(" ")
    key = key[:1].lower()
    if key == "y":
        agent.decide(event.call_id, "allow")
    elif key == "a":
        agent.decide(event.call_id, "allow_always")
    elif key == "s" and event.server:
        agent.decide(event.call_id, "allow_always", scope="server")
    elif key == "p" and event.pattern:
        agent.decide(event.call_id, "allow_always", scope="pattern", pattern=rest.strip())
    elif key == "e":
        try:
            value = json.loads(rest)
        except json.JSONDecodeError as exc:
            raise ValueError(f"e takes the new input as a JSON object: {exc}") from None
        if not isinstance(value, dict):
            raise ValueError('e takes the new input as a JSON object, e.g. e {"path": "a"}')
        agent.decide(event.call_id, "allow", input=value)
    else:
        agent.decide(event.call_id, "deny", rest.strip() if key == "n" else "")
