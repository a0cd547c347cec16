"""Sync scripts and leases, with real processes: a script that ends (send_sync, or just
exiting) leaves the session free at once, and a killed owner's lease on this host is taken at
once instead of after its ttl."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from kode.agent import Agent, AgentTemplate
from kode.models import FunctionModel
from kode.sessions import SessionLeaseError, store_from
from kode.sessions._common import owner_gone

SCRIPT = Path(__file__).with_name("lease_script.py")
TEMPLATE = AgentTemplate(id="scripted", tools=[])


def script(url: str, mode: str) -> str:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), url, "s1", mode],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


def header(url: str) -> tuple[str | None, int]:
    async def get() -> tuple[str | None, int]:
        store = store_from(url)
        try:
            found = await store.get("s1")
        finally:
            await store.aclose()
        return found.lease_owner, found.last_seq

    return anyio.run(get)


def test_a_script_that_ends_leaves_the_session_free(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'sessions.db'}"
    assert script(url, "create") == "ok seen 1 message(s)"
    assert header(url)[0] is None  # send_sync gave the lease up
    # The next process resumes at once (its lease would otherwise hold for 60 s).
    assert script(url, "resume") == "ok seen 3 message(s)"
    assert script(url, "exit") == "ok"  # resumed, and exited without closing
    assert header(url)[0] is None, "the exit handler gives the lease up"


def test_a_killed_owners_lease_is_taken_at_once_on_its_host(url: str) -> None:
    async def started() -> None:
        agent = Agent.create(
            TEMPLATE, model=FunctionModel(lambda r: "hi"), store=url, session_id="s1"
        )
        await agent.send("hello")
        await agent.aclose()

    anyio.run(started)
    holder = subprocess.Popen(
        [sys.executable, str(SCRIPT), url, "s1", "hold"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "holding"
        owner, _ = header(url)
        assert owner is not None and f":{holder.pid}:" in owner
        assert not owner_gone(owner)
        with pytest.raises(SessionLeaseError, match="session 's1' is leased by"):
            anyio.run(acquire, url)  # a live owner: refused, as before
    finally:
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(timeout=30)
        if holder.stdout is not None:
            holder.stdout.close()
    assert script(url, "resume") == "ok seen 3 message(s)"  # at once, not 60 s later
    assert owner_gone(owner)


async def acquire(url: str) -> None:
    store = store_from(url)
    try:
        await store.acquire("s1")
    finally:
        await store.aclose()


def test_only_ended_processes_of_this_host_count_as_gone() -> None:
    from kode.sessions._common import new_owner

    mine = new_owner()
    host, pid, _ = mine.split(":")
    assert int(pid) == os.getpid() and not owner_gone(mine)
    assert not owner_gone(f"{host}:1:abc")  # init runs
    assert not owner_gone("worker-1") and not owner_gone("elsewhere:99999999:abc")
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()
    assert owner_gone(f"{host}:{ended.pid}:abc")
    assert not owner_gone(f"otherhost:{ended.pid}:abc")


def test_the_next_sync_run_reads_what_another_agent_ran_meanwhile(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'sessions.db'}"
    seen: list[int] = []

    def model(request: Any) -> str:
        seen.append(len(request.messages))
        return f"answer {len(seen)}"

    first = Agent.create(TEMPLATE, model=FunctionModel(model), store=url, session_id="s1")
    assert first.send_sync("one").text == "answer 1"
    # Another agent (another process, in practice) takes the session over between the runs.
    other = Agent.resume_sync("s1", store=url, model=FunctionModel(model), template=TEMPLATE)
    assert other.send_sync("two").text == "answer 2"
    other.close_sync()
    # The first agent's next run takes the lease again and continues from what is stored.
    assert first.send_sync("three").text == "answer 3"
    assert seen == [1, 3, 5]
    assert [m.text for m in first.messages if m.role == "user"] == ["one", "two", "three"]
    first.close_sync()
    assert header(url)[0] is None
