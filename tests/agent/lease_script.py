"""A sync script using a stored session, run by test_sync_leases.py in subprocesses.

Usage: ``python lease_script.py STORE_URL SESSION_ID MODE``

Modes: ``create`` (Agent.create + send_sync, then exit), ``resume`` (Agent.resume_sync +
send_sync, then exit), ``hold`` (Agent.resume_sync, print ``holding`` and sleep until
killed), ``exit`` (Agent.resume_sync and exit without closing: the exit handler gives the
lease up). Each prints one result line: ``ok <reply text>``, or ``error <type>: <message>``.
"""

from __future__ import annotations

import sys
import time

from kode.agent import Agent, AgentTemplate
from kode.models import FunctionModel, ModelRequest
from kode.sessions import SessionError

URL, SESSION, MODE = sys.argv[1:4]
TEMPLATE = AgentTemplate(id="scripted", tools=[])
LONG_TTL = 60.0  # a lease that would hold the session for a minute if nobody gave it up


def answer(request: ModelRequest) -> str:
    return f"seen {len(request.messages)} message(s)"


def main() -> None:
    model = FunctionModel(answer)
    try:
        if MODE == "create":
            agent = Agent.create(
                TEMPLATE, model=model, store=URL, session_id=SESSION, lease_ttl=LONG_TTL
            )
        else:
            agent = Agent.resume_sync(
                SESSION, store=URL, model=model, template=TEMPLATE, lease_ttl=LONG_TTL
            )
        if MODE == "hold":
            print("holding", flush=True)
            time.sleep(120)
        if MODE in ("create", "resume"):
            print(f"ok {agent.send_sync('hello').text}", flush=True)
        else:
            print("ok", flush=True)
    except SessionError as exc:
        print(f"error {type(exc).__name__}: {exc}", flush=True)


main()
