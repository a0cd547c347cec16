"""The fold: what records add up to, and the rules a log must follow (no store involved)."""

from __future__ import annotations

import json

import pytest

from kode.models.messages import Message, TextContent, ToolResultContent
from kode.sessions import (
    ApprovalDecided,
    ApprovalRequested,
    CallUpdated,
    ClientCallsWaiting,
    MessageAdded,
    MetadataSet,
    SessionEntry,
    SessionHeader,
    SessionLog,
    SessionRecord,
    SessionRecordError,
    SessionState,
    StatusChanged,
    TodosReplaced,
    ToolAlwaysAllowed,
    UsageAdded,
    fold,
    record_adapter,
)


def entries(*records: SessionRecord, start: int = 1) -> list[SessionEntry]:
    return [SessionEntry(seq=start + i, at=1000.0 + i, record=r) for i, r in enumerate(records)]


def call(status: str, call_id: str = "c1", **extra: object) -> CallUpdated:
    return CallUpdated(call_id=call_id, name="tool", status=status, **extra)  # type: ignore[arg-type]


def done(call_id: str = "c1", status: str = "done") -> CallUpdated:
    block = ToolResultContent(tool_use_id=call_id, content=[TextContent(text="r")])
    return call(status, call_id, result=block, error_type=None)


def test_every_record_round_trips_through_json() -> None:
    records: list[SessionRecord] = [
        MessageAdded(message=Message.user("hi"), merge=True),
        done(),
        ClientCallsWaiting(call_ids=["a", "b"]),
        ApprovalRequested(call_id="c", tool_name="t", input={"x": 1}, reason="r", kind="edit"),
        ApprovalDecided(call_id="c", decision="deny", note="no"),
        UsageAdded(input_tokens=1, output_tokens=2),
        TodosReplaced(todos=[{"id": "1", "title": "x", "status": "pending"}]),
        ToolAlwaysAllowed(tool="Edit"),
        StatusChanged(status="failed"),
        MetadataSet(key="k", value=[1, "2"]),
    ]
    for record in records:
        data = record.model_dump_json()
        assert json.loads(data)["type"] == record.type
        assert record_adapter.validate_json(data) == record
    entry = SessionEntry(seq=3, at=1.5, record=records[0])
    assert SessionEntry.model_validate_json(entry.model_dump_json()) == entry
    assert ToolAlwaysAllowed(tool="Edit").tool == "edit"


def test_a_call_moves_forward_only() -> None:
    state = fold(
        entries(
            call("pending", read_only=True),
            call("awaiting_approval"),
            ApprovalRequested(call_id="c1", tool_name="tool"),
            call("approved"),
            call("running"),
            call("running"),  # re-run after a restart
            done(),
        )
    )
    record = state.calls["c1"]
    assert record.status == "done" and record.finished
    assert record.attempts == 2
    assert (record.opened_at, record.started_at, record.ended_at) == (1000.0, 1004.0, 1006.0)
    assert record.read_only and record.safe_to_rerun and not record.idempotent
    assert record.result is not None and record.result.content[0].text == "r"  # type: ignore[union-attr]
    assert state.open_calls == [] and state.approvals == {}


@pytest.mark.parametrize(
    ("records", "message"),
    [
        ((done(), call("running")), "cannot go from done to running: it is done already"),
        ((call("pending"), done(status="cancelled"), done()), "cancelled already"),
        ((call("approved"),), "cannot open as approved"),
        ((call("awaiting_approval"), call("running")), "from awaiting_approval it can go to"),
        ((call("running"), call("pending")), "only a client call"),
        ((call("running"), call("awaiting_approval")), "cannot go from running"),
    ],
)
def test_a_finished_or_skipped_step_is_refused(
    records: tuple[SessionRecord, ...], message: str
) -> None:
    with pytest.raises(SessionRecordError, match=message):
        fold(entries(*records))


def test_client_calls_wait_until_their_results_come() -> None:
    state = fold(
        entries(
            call("pending", "a"),
            call("running", "b"),
            call("pending", "b", client=True),
            ClientCallsWaiting(call_ids=["a", "b"]),
            done("a"),
        )
    )
    assert state.client_waiting == ["b"]
    assert state.calls["b"].client
    with pytest.raises(SessionRecordError, match=r"client call 'a' cannot wait.*is done"):
        fold(entries(done("a"), ClientCallsWaiting(call_ids=["a"])))
    with pytest.raises(SessionRecordError, match=r"'z' cannot wait.*has no record"):
        fold(entries(ClientCallsWaiting(call_ids=["z"])))


def test_approvals_first_decision_wins_and_late_ones_change_nothing() -> None:
    base = entries(
        call("awaiting_approval"),
        ApprovalRequested(call_id="c1", tool_name="tool", reason="kind edit"),
        ApprovalDecided(call_id="c1", decision="deny", note="first"),
        ApprovalDecided(call_id="c1", decision="allow"),  # a second process, too late
        ApprovalDecided(call_id="other", decision="allow"),  # no such call waiting
    )
    state = fold(base)
    waiting = state.approvals["c1"]
    assert waiting.request.reason == "kind edit"
    assert waiting.decision == ApprovalDecided(call_id="c1", decision="deny", note="first")
    later = fold(entries(done("c1", "denied"), start=6), state)
    assert later.approvals == {}
    # A decision after the call was cancelled is not an error: the log still folds.
    fold(entries(ApprovalDecided(call_id="c1", decision="allow"), start=7), later)
    with pytest.raises(SessionRecordError, match="record the call as awaiting_approval"):
        fold(entries(call("pending"), ApprovalRequested(call_id="c1", tool_name="tool")))


def test_messages_usage_todos_allowed_status_metadata() -> None:
    state = fold(
        entries(
            MessageAdded(message=Message.user("one")),
            MessageAdded(message=Message.user("two"), merge=True),
            MessageAdded(message=Message(role="assistant", content=[TextContent(text="ok")])),
            UsageAdded(input_tokens=2, output_tokens=1),
            UsageAdded(input_tokens=3),
            TodosReplaced(todos=[{"id": "a"}]),
            TodosReplaced(todos=[{"id": "b"}]),
            ToolAlwaysAllowed(tool="x"),
            ToolAlwaysAllowed(tool="X"),
            StatusChanged(status="running"),
            StatusChanged(status="idle"),
            MetadataSet(key="a", value=1),
            MetadataSet(key="b", value=2),
            MetadataSet(key="a", value=None),
        )
    )
    assert [m.role for m in state.messages] == ["user", "assistant"]
    assert [b.text for b in state.messages[0].content] == ["one", "two"]  # type: ignore[union-attr]
    assert (state.usage.input_tokens, state.usage.output_tokens) == (5, 1)
    assert state.todos == [{"id": "b"}]
    assert state.always_allowed == ["x"]
    assert state.status == "idle"
    assert state.metadata == {"b": 2}
    assert state.last_seq == 14
    wrong_role = "needs a last message of that role, and it has role 'user'"
    with pytest.raises(SessionRecordError, match=wrong_role):
        fold(
            entries(
                MessageAdded(message=Message.user("u")),
                MessageAdded(message=Message(role="assistant", content=[]), merge=True),
            )
        )
    with pytest.raises(SessionRecordError, match="there is none yet"):
        fold(entries(MessageAdded(message=Message.user("u"), merge=True)))


def test_sequence_numbers_must_increase() -> None:
    state = fold(entries(StatusChanged(status="running")))
    with pytest.raises(SessionRecordError, match="record 1 cannot follow record 1"):
        state.apply(entries(StatusChanged(status="idle"))[0])


def test_fold_is_pure() -> None:
    start = fold(entries(MessageAdded(message=Message.user("a"))))
    snapshot = start.model_dump_json()
    later = fold(entries(MessageAdded(message=Message.user("b")), start=2), start)
    assert start.model_dump_json() == snapshot
    assert len(later.messages) == 2 and len(start.messages) == 1
    assert SessionState.model_validate_json(later.model_dump_json()) == later


def test_a_partial_log_has_no_state() -> None:
    header = SessionHeader(id="s", template="t", created_at=0.0, last_active=0.0, last_seq=3)
    partial = SessionLog(
        header=header, entries=entries(*[StatusChanged(status="idle")] * 2, start=2)
    )
    with pytest.raises(ValueError, match=r"needs its whole log, but records 2\.\.3 were read"):
        partial.state()
    gap = SessionLog(
        header=header,
        entries=[
            entries(StatusChanged(status="idle"))[0],
            *entries(StatusChanged(status="idle"), start=3),
        ],
    )
    with pytest.raises(ValueError, match="whole log"):
        gap.state()
    assert SessionLog(header=header, entries=[]).state() == SessionState()
