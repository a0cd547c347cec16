"""The agent's event stream: what happens during a run, as typed records.

This module owns the event types `Agent.stream` yields (and `on_event` receives). Every event
has a ``type`` string, so a consumer can match on it or on the class. Three are the model's own,
passed on as they come: `TextDelta`, `ThinkingDelta` (one class each, in `kode.models.base`) and
`ModelRetry`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic_core import to_jsonable_python

from kode.models.base import ContextEdit, ModelRetry, TextDelta, ThinkingDelta
from kode.models.messages import ToolResultContent, Usage
from kode.tools.core import PreparedCall, Tool
from kode.tools.invocation import Display

__all__ = [
    "AgentEvent",
    "ApprovalRequired",
    "Compaction",
    "Done",
    "ErrorEvent",
    "ModelRetry",
    "PartialOutput",
    "TextDelta",
    "ThinkingDelta",
    "ToolBlockedLoop",
    "ToolCustom",
    "ToolEnd",
    "ToolProgress",
    "ToolStart",
    "TurnEnd",
]


@dataclass(kw_only=True, slots=True)
class PartialOutput:
    """The typed output so far, as the model streams it.

    Sent after each piece that changes it, when the template sets ``output_type``: pieces of
    the ``final_result`` call's arguments from models that stream them (Anthropic, OpenAI,
    the Responses API; Gemini sends a call whole), or of the final text with
    ``output_mode="native"``. It is the JSON read so far (dicts, lists, text), not yet
    validated; the validated value comes with `Done`. A scalar output type's value is read
    from its ``result`` field.
    """

    output: Any
    """The partial output, as JSON data."""
    type: Literal["partial_output"] = "partial_output"


def jsonable_arguments(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """Validated arguments as JSON data: models and dataclasses as dicts, dates as text, ...

    What pydantic cannot turn into JSON data is shown as its ``str``; nothing raises.
    """
    try:
        out = to_jsonable_python(dict(arguments), serialize_unknown=True)
    except Exception:  # a value whose serialisation raised: show each value as text
        out = {}
        for key, value in arguments.items():
            try:
                out[key] = to_jsonable_python(value, serialize_unknown=True)
            except Exception:
                out[key] = f"<{type(value).__name__}>"
    return out  # type: ignore[no-any-return]


class ToolStart:
    """A tool call passed its checks and started.

    Args:
        call_id: The ``tool_use`` id.
        name: The tool's name.
        input: The validated arguments (turned into JSON data when `input` is first read).
        parent_call_id: The call that made this one (``code_run``'s, for a call its script
            made); `None` for a call the model made.
    """

    __slots__ = ("_arguments", "_input", "_raw", "_tool", "call_id", "name", "parent_call_id")

    type: Literal["tool_start"] = "tool_start"

    def __init__(
        self,
        *,
        call_id: str,
        name: str,
        input: Mapping[str, Any],
        parent_call_id: str | None = None,
    ) -> None:
        self.call_id = call_id
        """The ``tool_use`` id."""
        self.name = name
        """The tool's name."""
        self.parent_call_id = parent_call_id
        """The call that made this one (``code_run``'s); `None` for a call of the model."""
        self._arguments: Mapping[str, Any] | None = input
        self._input: dict[str, Any] | None = None
        self._tool: Tool[..., Any] | None = None
        self._raw: Mapping[str, Any] | str | None = None

    @classmethod
    def replayed(
        cls, call_id: str, tool: Tool[..., Any], raw: Mapping[str, Any] | str | None
    ) -> ToolStart:
        """The start of a call of `tool` whose arguments are `tool.prepare(raw)`'s.

        For a tool whose validation is pure (`Tool.pure_validation`): the arguments are made
        again from `raw` (the model's input, which the history keeps anyway) when `input` is
        first read, instead of being kept alive with the event. A turn of many calls then
        holds no copy of each call's validated arguments.
        """
        start = cls.__new__(cls)
        start.call_id = call_id
        start.name = tool.name
        start.parent_call_id = None
        start._arguments = None
        start._input = None
        start._tool = tool
        start._raw = raw
        return start

    @property
    def input(self) -> dict[str, Any]:
        """The validated arguments as JSON data, ready for ``json.dumps``.

        Defaults are filled in; pydantic models and dataclasses are dicts, dates text. They
        are converted when first read, so a run whose events nobody reads pays nothing.
        """
        if self._input is None:
            tool = self._tool
            if tool is None:
                self._input = jsonable_arguments(self._arguments or {})
            else:  # validated again: the same arguments, as the tool's validation is pure
                prepared = tool.prepare(self._raw)
                if isinstance(prepared, PreparedCall):
                    self._input = jsonable_arguments(prepared.arguments)
                else:  # (not reached: the call's validation passed before it started)
                    raw = self._raw
                    self._input = jsonable_arguments(raw if isinstance(raw, Mapping) else {})
                self._tool = self._raw = None
        return self._input

    def __reduce__(self) -> tuple[Any, tuple[str, str, dict[str, Any]]]:
        # pickled and copied with its arguments as JSON data (not the tool it would ask)
        return (_tool_start, (self.call_id, self.name, self.input))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ToolStart):
            return NotImplemented
        return (self.call_id, self.name, self.input) == (other.call_id, other.name, other.input)

    __hash__ = None  # type: ignore[assignment]  # mutable, like the other events

    def __repr__(self) -> str:
        return f"ToolStart(call_id={self.call_id!r}, name={self.name!r}, input={self.input!r})"


def _tool_start(call_id: str, name: str, input: dict[str, Any]) -> ToolStart:
    """A `ToolStart` again, from what `ToolStart.__reduce__` kept."""
    return ToolStart(call_id=call_id, name=name, input=input)


@dataclass(kw_only=True, slots=True)
class ToolProgress:
    """A running tool reported progress (``ctx.progress``)."""

    call_id: str
    """The ``tool_use`` id."""
    name: str
    """The tool's name."""
    message: str
    """What the tool is doing."""
    fraction: float | None
    """How much is done, 0.0 to 1.0, when known."""
    type: Literal["tool_progress"] = "tool_progress"


@dataclass(kw_only=True, slots=True)
class ToolCustom:
    """A running tool emitted a custom event (``ctx.emit``)."""

    call_id: str
    """The ``tool_use`` id."""
    name: str
    """The tool's name."""
    event: str
    """The event's name."""
    data: Any
    """Its payload."""
    type: Literal["tool_custom"] = "tool_custom"


@dataclass(kw_only=True, slots=True)
class ToolBlockedLoop:
    """A call held the event loop, so every other call and task waited.

    One step of an async tool (or an inline sync tool) ran for `seconds` without yielding.
    The usual cause is a blocking call (``time.sleep``, a blocking HTTP client) inside an
    ``async def`` tool. The call's result is kept; a warning naming the tool is logged too.
    See `kode.tools.blocking`.
    """

    call_id: str
    """The ``tool_use`` id."""
    name: str
    """The tool's name."""
    seconds: float
    """How long the longest step held the loop."""
    timeout: float | None
    """The call's time limit, which cannot fire while a step holds the loop (`None`: none)."""
    type: Literal["tool_blocked_loop"] = "tool_blocked_loop"


@dataclass(kw_only=True, slots=True)
class ToolEnd:
    """A tool call ended (successfully or not) and its result is ready."""

    call_id: str
    """The ``tool_use`` id."""
    name: str
    """The tool's name (as the model wrote it, trimmed, when no tool has it)."""
    duration: float
    """Seconds from the start of the call's pipeline to its result."""
    is_error: bool
    """Whether the result is an error."""
    result: ToolResultContent
    """The ``tool_result`` block that goes back to the model."""
    status: str = "done"
    """The call's final status (``done``, ``failed``, ``denied``, ``cancelled``, ``pending``)."""
    display: Display | None = None
    """What the result shows a person (a diff, a todo list, a command's output); never sent
    to the model."""
    parent_call_id: str | None = None
    """The call that made this one (``code_run``'s, for a call its script made; its result
    goes to the script, not to the model); `None` for a call the model made."""
    type: Literal["tool_end"] = "tool_end"


@dataclass(kw_only=True, slots=True)
class ApprovalRequired:
    """A call waits for a decision: answer with ``agent.decide(call_id, ...)``."""

    call_id: str
    """The ``tool_use`` id."""
    name: str
    """The tool's name."""
    input: dict[str, Any]
    """The validated arguments, as JSON data (as `ToolStart.input`)."""
    reason: str
    """Why approval is needed."""
    description: str = ""
    """What the call will do, in one line (empty when its tool does not say)."""
    locations: list[str] = field(default_factory=list)
    """The paths it reads or changes."""
    diff: str = ""
    """A unified diff of the change it would make."""
    pattern: str | None = None
    """What an "always for calls starting with ..." answer matches (``bash_run``: the command)."""
    server: str | None = None
    """The tool's MCP server, for an "always for this server" answer."""
    rule: str = ""
    """What asked for approval: ``rule 'x' (project)``, ``mode approval``, ..."""
    type: Literal["approval_required"] = "approval_required"


@dataclass(kw_only=True, slots=True)
class TurnEnd:
    """The model finished one response."""

    turn: int
    """The turn's number in this run, from 1."""
    stop_reason: str
    """Why the response ended."""
    usage: Usage
    """Tokens used by this response."""
    context_edits: tuple[ContextEdit, ...] = ()
    """What the provider's server-side context editing cleared from this request (Anthropic's
    ``applied_edits``, with `AnthropicModel`'s ``context_editing``); the history is whole."""
    type: Literal["turn_end"] = "turn_end"


@dataclass(kw_only=True, slots=True)
class Compaction:
    """The older turns were summarised before a request (a context policy's compaction).

    Sent when the request's messages passed the policy's ``compact_at_tokens``. With
    `error`, no summary was made: the request sends the history uncompacted, and the next
    request tries again. The history itself never changes either way.
    """

    messages: int
    """How many messages, from the first, requests now send the summary in place of (with
    `error`: would have)."""
    summarised: int
    """How many of them this summary read (the ones since the last compaction, which it
    builds on)."""
    tokens_before: int
    """The estimated tokens of the request's messages before."""
    tokens_after: int
    """The estimated tokens after (the same as `tokens_before` with `error`)."""
    usage: Usage
    """Tokens the summary request used (counted in the run's usage and limits)."""
    summary: str = ""
    """The summary (empty with `error`)."""
    error: str | None = None
    """Why no summary was made, when it failed."""
    type: Literal["compaction"] = "compaction"


@dataclass(kw_only=True, slots=True)
class Done:
    """The run ended: the model answered without calling tools, or the run paused."""

    text: str
    """The final assistant text."""
    usage: Usage
    """Tokens used by the whole run."""
    turns: int
    """How many model responses the run took."""
    pending_calls: tuple[str, ...] = ()
    """Client tool calls waiting for ``agent.submit_tool_result`` (the run is paused)."""
    interrupted: bool = False
    """Whether ``agent.interrupt()`` ended the run."""
    output: Any = None
    """The validated final output, when the template sets ``output_type`` (else `None`)."""
    type: Literal["done"] = "done"


@dataclass(kw_only=True, slots=True)
class ErrorEvent:
    """The run failed (the model failed, or the turn limit was reached)."""

    message: str
    """What went wrong."""
    error: BaseException | None = field(default=None, compare=False)
    """The exception, when there is one."""
    type: Literal["error"] = "error"


AgentEvent = (
    TextDelta
    | ThinkingDelta
    | ModelRetry
    | PartialOutput
    | ToolStart
    | ToolProgress
    | ToolCustom
    | ToolBlockedLoop
    | ToolEnd
    | ApprovalRequired
    | TurnEnd
    | Compaction
    | Done
    | ErrorEvent
)
"""Any event of a run."""
