"""The resume rules for the calls a call made (a ``code_run`` script's), left open by a crash.

A call made by a call (`kode.agent.inner_calls`) is a call of the agent, and the resume rules
of ordinary calls (`Session.settle_for_resume`) apply to it, with one difference: nothing can
take its result any more, since the script that made it ended with the process. So it never
runs again:

- a call that ended keeps its record;
- a call that was running and whose tool neither only reads nor is idempotent ends ``failed``
  with the result an ordinary call gets there: a restart interrupted it, it may have partly
  run;
- a call that was running and whose tool only reads or is idempotent ends ``cancelled``: an
  ordinary call would run again, harmlessly, but no one would take this one's result;
- a call that had not started (pending, waiting for approval, approved) ends ``cancelled``.

The calls they made in turn are settled first, by the same rules. The call that made them is
then settled by the rules of ordinary calls; answered as interrupted, it says what became of
each call it made (`settle_made_calls` gives that sentence).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Protocol

from kode.agent.blocks import interrupted_result, result_block
from kode.agent.state import CallRecords, ToolCallRecord, ToolCallStatus
from kode.models.messages import ToolResultContent, ToolUseContent
from kode.sessions.records import TERMINAL_STATUSES
from kode.tools.errors import ToolErrorType
from kode.tools.results import error_result

__all__ = ["cancel_made_calls", "settle_made_calls"]

_SHOWN = 20
"""How many of its calls the result of an interrupted call names (then how many more)."""


class Session(Protocol):
    """What of `kode.agent.session.Session` the rules use (it imports this module)."""

    records: CallRecords

    def update_call(
        self,
        call: ToolUseContent,
        status: ToolCallStatus,
        *,
        result: ToolResultContent | None = ...,
        error_type: str | None = ...,
        record: ToolCallRecord | None = ...,
    ) -> ToolCallRecord: ...


def _made_by(records: Iterable[ToolCallRecord]) -> dict[str, list[ToolCallRecord]]:
    made: dict[str, list[ToolCallRecord]] = {}
    for record in records:
        if record.parent_call_id is not None:
            made.setdefault(record.parent_call_id, []).append(record)
    return made


def settle_made_calls(session: Session, parent_id: str, safe: Mapping[str, bool]) -> str:
    """Settle the open calls that the call `parent_id` made, by the rules above.

    Args:
        session: The resumed session (its records change, and are written at its next commit).
        parent_id: The call whose calls are settled.
        safe: Call id → whether its tool only reads or is idempotent (from the records).

    Returns:
        What became of each call it made, in order, as a sentence ("" when it made none).
    """
    made = _made_by(session.records)
    if parent_id not in made:
        return ""
    parts = [_settle_tree(session, record, made, safe) for record in made[parent_id]]
    more = len(parts) - _SHOWN
    shown = ", ".join(parts[:_SHOWN]) + (f", and {more} more" if more > 0 else "")
    return f"The tool calls it made, in order: {shown}."


def _settle_tree(
    session: Session,
    record: ToolCallRecord,
    made: Mapping[str, list[ToolCallRecord]],
    safe: Mapping[str, bool],
) -> str:
    for child in made.get(record.id, ()):  # what it made ends before it does
        _settle_tree(session, child, made, safe)
    if record.status in TERMINAL_STATUSES:
        return f"{record.name} ({record.status})"
    call = ToolUseContent(
        id=record.id, name=record.name, input=record.input if isinstance(record.input, dict) else {}
    )
    if record.status == "running" and not safe.get(record.id, False):
        session.update_call(
            call,
            "failed",
            result=interrupted_result(call),
            error_type=ToolErrorType.EXECUTION_FAILED.value,
            record=record,
        )
    else:
        if record.status == "running":
            text = (
                f"Tool '{record.name}' was stopped by a restart while it ran, and was not run "
                "again: the call that made it had stopped too. Its tool only reads or is "
                "idempotent, so calling it again is safe."
            )
        else:
            text = (
                f"Tool '{record.name}' was not run: a restart stopped the call that made it "
                "before it started."
            )
        session.update_call(
            call,
            "cancelled",
            result=result_block(record.id, error_result(text, type=ToolErrorType.CANCELLED)),
            error_type=ToolErrorType.CANCELLED.value,
            record=record,
        )
    return f"{record.name} ({record.status}, ended by the restart)"


def cancel_made_calls(records: Iterable[ToolCallRecord]) -> None:
    """Mark cancelled every call made by a call that has no final status yet.

    For `Agent.from_state`: a call running in a saved state cannot resume, nor can its script.
    """
    for record in records:
        if record.parent_call_id is not None and record.status not in TERMINAL_STATUSES:
            record.status = "cancelled"
