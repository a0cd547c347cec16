"""10,000 sessions in one store, listed by page: every page right (bench/sessions.py times it)."""

from __future__ import annotations

import pytest

from kode.sessions import NewSession, SessionHeader, StatusChanged, Store

pytestmark = pytest.mark.anyio

COUNT = 10_000


def newest_first(headers: list[SessionHeader]) -> list[str]:
    return [h.id for h in sorted(headers, key=lambda h: (h.last_active, h.id), reverse=True)]


async def pages(store: Store, limit: int, most: int | None = None, **filters: str) -> list[str]:
    return [h.id for h in await headers_by_page(store, limit, most, **filters)]


async def headers_by_page(
    store: Store, limit: int, most: int | None = None, **filters: str
) -> list[SessionHeader]:
    found: list[SessionHeader] = []
    cursor = None
    count = 0
    while most is None or count < most:
        page = await store.list_sessions(limit=limit, cursor=cursor, **filters)  # type: ignore[arg-type]
        count += 1
        found += page.sessions
        assert len(page.sessions) <= limit
        cursor = page.next_cursor
        if cursor is None:
            break
    return found


async def test_ten_thousand_sessions_by_page(store: Store) -> None:
    await store.create_many(
        [
            NewSession(
                template=f"t{i % 10}",
                session_id=f"s{i:05}",
                label="starred" if i % 100 == 0 else None,
            )
            for i in range(COUNT)
        ]
    )  # one transaction
    # Activity on 50 of them, spread out: they move to the front, the latest first.
    touched = [f"s{i:05}" for i in range(7, COUNT, COUNT // 50)]
    for sid in touched:
        await store.append(sid, [StatusChanged(status="running")])

    listed = await headers_by_page(store, 1000)
    everything = [h.id for h in listed]
    assert len(everything) == COUNT == len(set(everything))
    assert everything[:50] == touched[::-1]
    assert everything == newest_first(listed)
    headers = {h.id: h for h in listed}

    assert await pages(store, 100, most=3) == everything[:300]
    third = [sid for sid in everything if headers[sid].template == "t3"]
    assert len(third) == COUNT // 10
    assert await pages(store, 100, most=3, template="t3") == third[:300]
    assert await pages(store, 40, label="starred") == [
        sid for sid in everything if headers[sid].label == "starred"
    ]
    assert await pages(store, 7, status="running") == touched[::-1]
    both = await pages(store, 10, template="t7", status="running")
    assert both == [sid for sid in touched[::-1] if headers[sid].template == "t7"]
