"""Two deciders of one waiting call at the same moment: exactly one wins, the other is told.

Each decider is a thread with its own event loop and its own store (its own database
connection), as two processes would be; a barrier starts them together, round after round.
"""

from __future__ import annotations

import threading
from typing import Any

import anyio
import pytest

from kode.agent import Agent, AgentError
from kode.models import Message, tool_use
from kode.sessions import (
    ApprovalDecided,
    ApprovalRequested,
    CallUpdated,
    MessageAdded,
    SessionConflictError,
    StatusChanged,
    store_from,
)

ROUNDS = 40


async def _waiting_sessions(url: str, count: int) -> None:
    store = store_from(url)
    call = tool_use("pay", {"amount": 1}, id="c1")
    for index in range(count):
        await store.create(template="t", session_id=f"s{index}")
        await store.append(
            f"s{index}",
            [
                MessageAdded(message=Message.user("pay")),
                StatusChanged(status="running"),
                MessageAdded(message=Message(role="assistant", content=[call])),
                CallUpdated(call_id="c1", name="pay", status="awaiting_approval"),
                ApprovalRequested(call_id="c1", tool_name="pay", input={"amount": 1}),
                StatusChanged(status="awaiting_approval"),
            ],
        )
    await store.aclose()


def _decider(url: str, decision: str, barrier: threading.Barrier, out: list[str]) -> None:
    async def main() -> None:
        store = store_from(url)
        await store.get("s0")  # connected (and the schema checked) before the first round
        for index in range(ROUNDS):
            barrier.wait(timeout=30)
            try:
                await Agent.decide_in_store(store, f"s{index}", "c1", decision)  # type: ignore[arg-type]
            except AgentError as exc:
                out.append(f"lost: {exc}")
            else:
                out.append("won")
        await store.aclose()

    anyio.run(main)


def test_two_deciders_at_once_exactly_one_wins(url: str) -> None:
    anyio.run(_waiting_sessions, url, ROUNDS)
    barrier = threading.Barrier(2)
    allow: list[str] = []
    deny: list[str] = []
    threads = [
        threading.Thread(target=_decider, args=(url, "allow", barrier, allow)),
        threading.Thread(target=_decider, args=(url, "deny", barrier, deny)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert len(allow) == len(deny) == ROUNDS
    for index, (a, d) in enumerate(zip(allow, deny, strict=True)):
        assert sorted([a[:4], d[:4]]) == ["lost", "won"], (index, a, d)
        loser = a if a.startswith("lost") else d
        assert f"call 'c1' of session 's{index}' was decided already" in loser

    async def decisions() -> list[list[Any]]:
        store = store_from(url)
        found = []
        for index in range(ROUNDS):
            log = await store.load(f"s{index}", types={"approval_decision"})
            found.append([e.record for e in log.entries if isinstance(e.record, ApprovalDecided)])
        await store.aclose()
        return found

    for index, stored in enumerate(anyio.run(decisions)):
        won = "allow" if allow[index] == "won" else "deny"
        assert [d.decision for d in stored] == [won], index


@pytest.mark.anyio
async def test_an_append_against_a_changed_log_is_refused(url: str) -> None:
    store = store_from(url)
    await store.create(template="t", session_id="s")
    last = await store.append("s", [StatusChanged(status="running")], if_last_seq=0)
    assert last == 1
    with pytest.raises(SessionConflictError, match="has 1 records, not 0 as the append expected"):
        await store.append("s", [StatusChanged(status="idle")], if_last_seq=0)
    with pytest.raises(SessionConflictError, match="has 1 records, not 5"):
        await store.append("s", [], if_last_seq=5)
    with pytest.raises(ValueError, match="if_last_seq must be a sequence number"):
        await store.append("s", [], if_last_seq=-1)
    assert await store.append("s", [StatusChanged(status="idle")], if_last_seq=1) == 2
    await store.aclose()
