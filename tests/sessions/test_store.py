"""One test-suite for every store: memory, SQLite and PostgreSQL behave the same."""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import anyio
import pytest

from kode.models.messages import Message, TextContent, ToolResultContent, ToolUseContent
from kode.sessions import (
    ApprovalDecided,
    ApprovalRequested,
    CallUpdated,
    ClientCallsWaiting,
    Lease,
    MemoryStore,
    MessageAdded,
    MetadataSet,
    NewSession,
    SessionExistsError,
    SessionLeaseError,
    SessionNotFoundError,
    SessionRecordError,
    SessionState,
    StatusChanged,
    Store,
    StoreError,
    TodosReplaced,
    ToolAlwaysAllowed,
    UsageAdded,
)
from kode.sessions.starting import start_session

pytestmark = pytest.mark.anyio


def user(text: str) -> MessageAdded:
    return MessageAdded(message=Message.user(text))


def result(call_id: str, text: str, *, error: bool = False) -> ToolResultContent:
    return ToolResultContent(tool_use_id=call_id, content=[TextContent(text=text)], is_error=error)


# --- create and get -----------------------------------------------------------------------------


async def test_create_and_get(store: Store) -> None:
    before = time.time()
    made = await store.create(
        template="helper",
        session_id="s1",
        label="first",
        parent_id="p0",
        metadata={"agent_id": "agent_1", "n": [1, 2]},
    )
    assert made.id == "s1"
    assert (made.template, made.label, made.parent_id, made.status) == (
        "helper",
        "first",
        "p0",
        "idle",
    )
    assert made.metadata == {"agent_id": "agent_1", "n": [1, 2]}
    assert made.last_seq == 0
    assert before - 1 <= made.created_at == made.last_active <= time.time() + 1
    assert made.forked_from is None and made.lease_owner is None
    assert await store.get("s1") == made
    fresh = await store.create(template="helper")
    assert fresh.id.startswith("session_") and fresh.id != made.id


async def test_unknown_and_existing_ids_are_clear_errors(store: Store) -> None:
    await store.create(template="t", session_id="taken")
    with pytest.raises(SessionNotFoundError, match="no session 'nope' in this store"):
        await store.get("nope")
    with pytest.raises(SessionNotFoundError, match="nope"):
        await store.append("nope", [user("hi")])
    with pytest.raises(SessionNotFoundError):
        await store.load("nope")
    with pytest.raises(SessionExistsError, match="'taken'"):
        await store.create(template="t", session_id="taken")


async def test_create_many_is_all_or_nothing(store: Store) -> None:
    await store.create(template="t", session_id="b")
    with pytest.raises(SessionExistsError, match="'b'"):
        await store.create_many([NewSession(template="t", session_id=i) for i in "abc"])
    with pytest.raises(SessionNotFoundError):
        await store.get("a")  # nothing of the failed batch was created
    with pytest.raises(SessionExistsError, match="given twice"):
        await store.create_many([NewSession(template="t", session_id="x")] * 2)
    made = await store.create_many(
        [NewSession(template="t", session_id=f"n{i}", label="batch") for i in range(5)]
    )
    assert [h.id for h in made] == [f"n{i}" for i in range(5)]
    assert [await store.get(f"n{i}") for i in range(5)] == made


async def test_bad_arguments_say_what_is_wrong(store: Store) -> None:
    with pytest.raises(ValueError, match="1 to 256 characters"):
        await store.create(template="t", session_id="")
    with pytest.raises(ValueError, match="1 to 256 characters"):
        await store.create(template="t", session_id="x" * 257)
    with pytest.raises(ValueError, match="control character"):
        await store.create(template="t", session_id="a\nb")
    with pytest.raises(TypeError, match="template must be a string"):
        await store.create(template=3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="JSON values only"):
        await store.create(template="t", metadata={"x": object()})
    await store.create(template="t", session_id="s")
    with pytest.raises(TypeError, match=r"records\[1\] is not a session record"):
        await store.append("s", [user("ok"), {"type": "message"}])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="after must be"):
        await store.load("s", after=-1)
    with pytest.raises(ValueError, match="types must name record types"):
        await store.load("s", types={"messages"})
    with pytest.raises(ValueError, match=r"limit must be within 1..1000"):
        await store.list_sessions(limit=0)
    with pytest.raises(ValueError, match="status must be one of"):
        await store.list_sessions(status="asleep")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="ttl must be a finite number"):
        await store.acquire("s", ttl=0)


# --- append and load --------------------------------------------------------------------------


async def test_append_numbers_records_and_load_reads_them_back(store: Store) -> None:
    header = await store.create(template="t", session_id="s")
    first = [user("hello"), UsageAdded(input_tokens=3, output_tokens=4)]
    second = [StatusChanged(status="running"), user("again")]
    assert await store.append("s", first) == 2
    assert await store.append("s", second) == 4
    assert await store.append("s", []) == 4  # nothing to write: nothing changes
    log = await store.load("s")
    assert [e.seq for e in log.entries] == [1, 2, 3, 4]
    assert [e.record for e in log.entries] == [*first, *second]
    assert log.entries[0].at == log.entries[1].at  # one batch, one time
    assert log.header.last_seq == 4
    assert log.header.status == "running"  # the header follows StatusChanged
    assert log.header.last_active >= header.last_active
    assert [e.seq for e in (await store.load("s", after=2)).entries] == [3, 4]
    assert [e.seq for e in (await store.load("s", after=1, limit=2)).entries] == [2, 3]
    only = await store.load("s", types=["message"])
    assert [e.seq for e in only.entries] == [1, 4]
    assert (await store.load("s", after=9)).entries == []


async def test_records_are_copied_not_shared(store: Store) -> None:
    await store.create(template="t", session_id="s")
    record = user("original")
    await store.append("s", [record])
    record.message.content[0] = TextContent(text="changed later")  # the caller's object
    log = await store.load("s")
    assert log.state().messages[0].text == "original"


async def test_a_record_json_cannot_hold_writes_nothing(store: Store) -> None:
    await store.create(template="t", session_id="s")
    with pytest.raises(SessionRecordError, match=r"records\[1\] \(message\) cannot be written"):
        await store.append("s", [user("fine"), user("lone \ud800 surrogate")])
    assert (await store.load("s")).entries == []  # the batch is written whole or not at all


async def test_text_any_tool_may_return_round_trips(store: Store) -> None:
    await store.create(template="t", session_id="s")
    odd = "nul \x00, emoji \U0001f600, quotes \" ' and back\\slash, 中文, % ? $1"
    await store.append("s", [user(odd), MetadataSet(key="k", value={"odd": odd})])
    state = (await store.load("s")).state()
    assert state.messages[0].text == odd
    assert state.metadata == {"k": {"odd": odd}}


async def test_a_whole_run_folds_to_its_state(store: Store) -> None:
    """What an agent writes over a run, read back and folded, is the agent's state."""
    await store.create(template="t", session_id="s")
    call = ToolUseContent(id="c1", name="fs_write", input={"path": "a"})
    read = ToolUseContent(id="c2", name="fs_read", input={"path": "b"})
    client = ToolUseContent(id="c3", name="ask_user", input={})
    batches = [
        [user("do it"), StatusChanged(status="running")],
        [
            MessageAdded(message=Message(role="assistant", content=[call, read, client])),
            UsageAdded(input_tokens=10, output_tokens=5),
            CallUpdated(call_id="c1", name="fs_write", status="pending"),
            CallUpdated(call_id="c2", name="fs_read", status="pending", read_only=True),
            CallUpdated(call_id="c3", name="ask_user", status="pending"),
        ],
        [
            CallUpdated(call_id="c1", name="fs_write", status="awaiting_approval"),
            ApprovalRequested(call_id="c1", tool_name="fs_write", reason="kind edit", kind="edit"),
            StatusChanged(status="awaiting_approval"),
        ],
        [CallUpdated(call_id="c2", name="fs_read", status="running")],
        [CallUpdated(call_id="c2", name="fs_read", status="done", result=result("c2", "b!"))],
        [ApprovalDecided(call_id="c1", decision="allow_always")],
    ]
    for batch in batches:
        await store.append("s", batch)
    state = (await store.load("s")).state()
    assert state.status == "awaiting_approval"
    assert state.approvals["c1"].decision == ApprovalDecided(call_id="c1", decision="allow_always")
    assert [c.id for c in state.open_calls] == ["c1", "c3"]
    more = [
        ToolAlwaysAllowed(tool="FS_Write"),
        CallUpdated(call_id="c1", name="fs_write", status="approved"),
        CallUpdated(call_id="c1", name="fs_write", status="running", idempotent=False),
        CallUpdated(call_id="c1", name="fs_write", status="done", result=result("c1", "ok")),
        CallUpdated(call_id="c3", name="ask_user", status="running"),
        CallUpdated(call_id="c3", name="ask_user", status="pending", client=True),
        ClientCallsWaiting(call_ids=["c3"]),
        TodosReplaced(todos=[{"id": "1", "title": "write", "status": "completed"}]),
        StatusChanged(status="awaiting_client"),
    ]
    await store.append("s", more)
    log = await store.load("s")
    state = log.state()
    assert log.header.status == state.status == "awaiting_client"
    assert state.approvals == {}
    assert state.always_allowed == ["fs_write"]
    assert state.client_waiting == ["c3"]
    assert state.calls["c1"].status == "done" and state.calls["c1"].attempts == 1
    assert state.calls["c2"].result == result("c2", "b!")
    assert state.usage.input_tokens == 10 and state.usage.output_tokens == 5
    assert state.todos[0]["title"] == "write"
    assert len(state.messages) == 2
    assert SessionState.model_validate_json(state.model_dump_json()) == state
    # The client's result arrives in another process (no lease), and the next run opens.
    await store.append(
        "s", [CallUpdated(call_id="c3", name="ask_user", status="done", result=result("c3", "y"))]
    )
    assert (await store.load("s")).state().client_waiting == []


# --- listing ----------------------------------------------------------------------------------


async def test_list_newest_first_with_filters(store: Store) -> None:
    for i in range(6):
        await store.create(
            template="a" if i % 2 else "b",
            session_id=f"s{i}",
            label="red" if i < 3 else None,
        )
        await anyio.sleep(0.002)  # distinct creation times
    await store.append("s1", [StatusChanged(status="running")])  # s1 is now the most recent
    page = await store.list_sessions()
    assert [h.id for h in page.sessions] == ["s1", "s5", "s4", "s3", "s2", "s0"]
    assert page.next_cursor is None
    assert [h.id for h in (await store.list_sessions(template="a")).sessions] == [
        "s1",
        "s5",
        "s3",
    ]
    assert [h.id for h in (await store.list_sessions(label="red")).sessions] == [
        "s1",
        "s2",
        "s0",
    ]
    assert [h.id for h in (await store.list_sessions(status="running")).sessions] == ["s1"]
    both = await store.list_sessions(template="b", label="red")
    assert [h.id for h in both.sessions] == ["s2", "s0"]
    assert (await store.list_sessions(template="none")).sessions == []


async def test_paging_with_a_cursor_sees_every_session_once(store: Store) -> None:
    await store.create_many(
        [NewSession(template="t", session_id=f"s{i:02}") for i in range(25)]
    )  # one transaction: the same time for all, so the order is by id
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        page = await store.list_sessions(limit=10, cursor=cursor)
        pages += 1
        seen += [h.id for h in page.sessions]
        if pages == 1:
            # Activity after the first page moves a session to the front; the pages after
            # it neither repeat nor skip the others.
            await store.append("s20", [user("hi")])
        cursor = page.next_cursor
        if cursor is None:
            break
    assert pages == 3
    expected = [f"s{i:02}" for i in range(24, -1, -1)]
    assert seen == expected
    assert len(seen) == len(set(seen))
    exact = await store.list_sessions(limit=26)
    assert exact.next_cursor is None and len(exact.sessions) == 25
    with pytest.raises(ValueError, match="not one list_sessions made"):
        await store.list_sessions(cursor="garbage!")
    with pytest.raises(ValueError, match="not one list_sessions made"):
        await store.list_sessions(cursor="WzEsMl0")  # valid base64 JSON, wrong shape


async def test_set_label(store: Store) -> None:
    await store.create(template="t", session_id="s")
    labelled = await store.set_label("s", "important")
    assert labelled.label == "important" == (await store.get("s")).label
    assert [h.id for h in (await store.list_sessions(label="important")).sessions] == ["s"]
    assert (await store.set_label("s", None)).label is None
    with pytest.raises(SessionNotFoundError):
        await store.set_label("other", "x")


# --- fork and delete ----------------------------------------------------------------------------


async def test_fork_copies_the_log_up_to_a_point(store: Store) -> None:
    await store.create(template="t", session_id="src", metadata={"agent_id": "a"})
    await store.append("src", [user("one"), StatusChanged(status="running")])
    await store.append("src", [user("two"), StatusChanged(status="failed")])
    fork = await store.fork("src", at=2, session_id="fork", label="branch")
    assert (fork.id, fork.label, fork.template, fork.metadata) == (
        "fork",
        "branch",
        "t",
        {"agent_id": "a"},
    )
    assert (fork.forked_from, fork.forked_at, fork.last_seq) == ("src", 2, 2)
    assert fork.status == "running"  # the source's status as of record 2
    source = await store.load("src")
    copied = await store.load("fork")
    assert copied.entries == source.entries[:2]  # same records, numbers and times
    assert await store.append("fork", [user("three")]) == 3
    assert (await store.get("src")).last_seq == 4  # the source is untouched
    whole = await store.fork("src")
    assert whole.last_seq == 4 and whole.status == "failed"
    empty = await store.fork("src", at=0)
    assert empty.last_seq == 0 and empty.status == "idle"
    assert (await store.load(empty.id)).entries == []
    with pytest.raises(ValueError, match=r"0\.\.4"):
        await store.fork("src", at=5)
    with pytest.raises(ValueError):
        await store.fork("src", at=-1)
    with pytest.raises(SessionExistsError):
        await store.fork("src", session_id="fork")
    with pytest.raises(SessionNotFoundError):
        await store.fork("missing")


async def test_delete(store: Store) -> None:
    await store.create(template="t", session_id="s")
    await store.create(template="t", session_id="keep")
    await store.append("s", [user("bye")])
    await store.delete("s")
    with pytest.raises(SessionNotFoundError):
        await store.get("s")
    with pytest.raises(SessionNotFoundError):
        await store.load("s")
    assert [h.id for h in (await store.list_sessions()).sessions] == ["keep"]
    with pytest.raises(SessionNotFoundError):
        await store.delete("s")
    # A new session may take the id again, and starts empty.
    await store.create(template="t", session_id="s")
    assert (await store.load("s")).entries == []
    lease = await store.acquire("keep", ttl=60)
    with pytest.raises(SessionLeaseError, match="is leased by"):
        await store.delete("keep")
    await store.delete("keep", force=True)
    assert not await store.release(lease)


# --- leases -------------------------------------------------------------------------------------


async def test_lease_one_owner_at_a_time(store: Store) -> None:
    await store.create(template="t", session_id="s")
    mine = await store.acquire("s", owner="me", ttl=60)
    assert isinstance(mine, Lease) and mine.owner == "me"
    assert mine.expires_at > time.time() + 50
    header = await store.get("s")
    assert header.lease_owner == "me" and header.leased(time.time())
    with pytest.raises(SessionLeaseError) as caught:
        await store.acquire("s", owner="you")
    message = str(caught.value)
    assert "session 's' is leased by 'me'" in message and "s more" in message
    again = await store.acquire("s", owner="me", ttl=120)  # the holder again: renewed
    assert again.expires_at > mine.expires_at
    renewed = await store.renew(again, ttl=200)
    assert renewed.expires_at > again.expires_at
    assert await store.release(renewed)
    assert not await store.release(renewed)  # twice: harmless
    yours = await store.acquire("s", owner="you")
    with pytest.raises(SessionLeaseError, match="was lost"):
        await store.renew(mine)
    with pytest.raises(SessionNotFoundError):
        await store.acquire("missing")
    default = await store.acquire(
        (await store.create(template="t")).id
    )  # no owner given: a unique one
    assert default.owner.count(":") == 2
    assert yours.owner == "you"


async def test_an_expired_lease_can_be_taken_and_fences_its_old_owner(store: Store) -> None:
    await store.create(template="t", session_id="s")
    old = await store.acquire("s", owner="old", ttl=0.05)
    assert await store.append("s", [user("1")], lease=old) == 1
    await anyio.sleep(0.1)
    assert not (await store.get("s")).leased(time.time())
    # Expired but not taken: its owner may still renew and write.
    old = await store.renew(old, ttl=0.05)
    assert await store.append("s", [user("2")], lease=old) == 2
    await anyio.sleep(0.1)
    new = await store.acquire("s", owner="new", ttl=60)
    with pytest.raises(SessionLeaseError, match="now held by 'new'"):
        await store.append("s", [user("late")], lease=old)
    with pytest.raises(SessionLeaseError, match="now held by 'new'"):
        await store.append("s", [], lease=old)
    with pytest.raises(SessionLeaseError):
        await store.renew(old)
    assert await store.append("s", [user("3")], lease=new) == 3
    # A decision from another process needs no lease.
    assert await store.append("s", [ApprovalDecided(call_id="x", decision="deny")]) == 4
    assert [e.seq for e in (await store.load("s")).entries] == [1, 2, 3, 4]


async def test_concurrent_acquires_one_wins(store: Store, reopen: Callable[[], Store]) -> None:
    await store.create(template="t", session_id="s")
    others = [reopen() for _ in range(3)]
    won: list[str] = []
    refused: list[str] = []

    async def take(target: Store, owner: str) -> None:
        try:
            await target.acquire("s", owner=owner, ttl=60)
            won.append(owner)
        except SessionLeaseError:
            refused.append(owner)

    async with anyio.create_task_group() as tg:
        for index, target in enumerate([store, *others]):
            tg.start_soon(take, target, f"owner{index}")
    assert len(won) == 1 and len(refused) == 3
    assert (await store.get("s")).lease_owner == won[0]
    for other in others:
        if other is not store:
            await other.aclose()


class OnlyTheProtocol:
    """A store with the `Store` methods alone (no fast path of kode's own stores)."""

    def __init__(self, inner: Store) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> object:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.inner, name)


@pytest.mark.parametrize("protocol_only", [False, True], ids=["fast", "protocol"])
async def test_start_session_creates_leases_and_appends_at_once(
    store: Store, protocol_only: bool
) -> None:
    """What a new agent run does first: kode's stores in one transaction, any `Store` the same
    way through its protocol."""
    target: Store = OnlyTheProtocol(store) if protocol_only else store  # type: ignore[assignment]
    lease, last = await start_session(
        target,
        "new",
        template="helper",
        parent_id="p0",
        owner="me",
        ttl=60,
        records=[user("hi"), StatusChanged(status="running")],
    )
    assert (lease.session_id, lease.owner, last) == ("new", "me", 2)
    assert lease.expires_at > time.time() + 50
    header = await store.get("new")
    assert (header.template, header.parent_id, header.status, header.last_seq) == (
        "helper",
        "p0",
        "running",
        2,
    )
    assert header.lease_owner == "me" and header.created_at <= header.last_active
    assert [e.record.type for e in (await store.load("new")).entries] == ["message", "status"]
    assert await store.append("new", [user("more")], lease=lease) == 3
    # A session made beforehand and still empty is taken up, keeping what it was made with.
    await store.create(template="helper", session_id="empty", label="kept", metadata={"k": 1})
    lease, last = await start_session(target, "empty", template="helper", owner="me")
    header = await store.get("empty")
    assert last == 0 and (header.label, header.metadata, header.lease_owner) == (
        "kept",
        {"k": 1},
        "me",
    )
    # ... by its holder again too, but not while another holds it.
    assert (await start_session(target, "empty", template="helper", owner="me"))[1] == 0
    with pytest.raises(SessionLeaseError, match="session 'empty' is leased by 'me'"):
        await start_session(target, "empty", template="helper", owner="you", records=[user("x")])
    assert (await store.get("empty")).last_seq == 0  # nothing written
    # A session with records is resumed, not started again.
    with pytest.raises(SessionExistsError, match="session 'new' already has 3 records"):
        await start_session(target, "new", template="helper", owner="you", records=[user("x")])
    after = await store.get("new")
    assert (after.last_seq, after.lease_owner) == (3, "me")
    with pytest.raises(ValueError, match="session_id must have 1 to 256"):
        await start_session(target, "", template="helper")
    lease, _ = await start_session(target, "auto", template="helper")  # a unique owner
    assert lease.owner.count(":") == 2


# --- concurrency --------------------------------------------------------------------------------


async def test_concurrent_appends_from_two_tasks(store: Store, reopen: Callable[[], Store]) -> None:
    await store.create(template="t", session_id="s")
    other = reopen()  # a second store object (connection) on the same data
    batches = 30

    async def writer(target: Store, name: str) -> list[int]:
        ends = []
        for i in range(batches):
            ends.append(
                await target.append("s", [MetadataSet(key=f"{name}{i}", value=j) for j in range(3)])
            )
        return ends

    results: dict[str, list[int]] = {}

    async def run(target: Store, name: str) -> None:
        results[name] = await writer(target, name)

    async with anyio.create_task_group() as tg:
        tg.start_soon(run, store, "a")
        tg.start_soon(run, other, "b")
    if other is not store:
        await other.aclose()
    log = await store.load("s")
    assert [e.seq for e in log.entries] == list(range(1, 2 * batches * 3 + 1))
    assert sorted(results["a"] + results["b"]) == list(range(3, 2 * batches * 3 + 1, 3))
    # Each batch is contiguous: its three records carry the same key, in order.
    keys = [e.record.key for e in log.entries]  # type: ignore[union-attr]
    for start in range(0, len(keys), 3):
        assert len(set(keys[start : start + 3])) == 1
    assert log.state().last_seq == 2 * batches * 3


async def test_data_outlives_the_store_object(store: Store, reopen: Callable[[], Store]) -> None:
    await store.create(template="t", session_id="s", label="kept")
    await store.append("s", [user("remember me")])
    await store.acquire("s", owner="first", ttl=60)
    if isinstance(store, MemoryStore):
        pytest.skip("a memory store's data lives as long as the store object")
    await store.aclose()
    with pytest.raises(StoreError, match="closed"):
        await store.get("s")
    again = reopen()
    try:
        log = await again.load("s")
        assert log.header.label == "kept" and log.state().messages[0].text == "remember me"
        with pytest.raises(SessionLeaseError):  # the lease is in the database too
            await again.acquire("s", owner="second")
    finally:
        await again.aclose()


async def test_closed_memory_store_refuses() -> None:
    store = MemoryStore()
    await store.create(template="t", session_id="s")
    await store.aclose()
    with pytest.raises(StoreError, match="closed"):
        await store.get("s")


@pytest.mark.parametrize("anyio_backend", ["trio"])
async def test_trio(store: Store) -> None:
    """The stores work on trio too (their I/O runs in worker threads)."""
    await store.create(template="t", session_id="s")
    lease = await store.acquire("s")
    await store.append("s", [user("on trio"), StatusChanged(status="idle")], lease=lease)
    page = await store.list_sessions()
    assert [h.id for h in page.sessions] == ["s"]
    assert (await store.load("s")).state().messages[0].text == "on trio"
    json.loads((await store.load("s")).model_dump_json())  # the log is valid JSON


async def test_an_append_against_a_last_record_that_changed_is_refused(store: Store) -> None:
    from kode.sessions import SessionConflictError

    await store.create(template="t", session_id="cas")
    assert await store.append("cas", [StatusChanged(status="running")], if_last_seq=0) == 1
    with pytest.raises(SessionConflictError, match="'cas' has 1 records, not 0 as the append"):
        await store.append("cas", [StatusChanged(status="idle")], if_last_seq=0)
    with pytest.raises(SessionConflictError):
        await store.append("cas", [], if_last_seq=2)
    with pytest.raises(ValueError, match="if_last_seq must be a sequence number"):
        await store.append("cas", [], if_last_seq=True)  # type: ignore[arg-type]
    assert (await store.get("cas")).last_seq == 1
    assert await store.append("cas", [StatusChanged(status="idle")], if_last_seq=1) == 2
