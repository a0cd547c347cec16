"""An agent whose tool is running when test_frozen_writer.py stops the process (SIGSTOP).

Usage: ``python stalled_agent.py STORE_URL``

Session ``s``, lease ttl 0.5 s. The model calls ``transfer`` once; the tool prints
``started`` and sleeps 1.5 s before it returns ``transferred``. At the end the script prints
``done <text>`` or ``error <type>: <message>``.
"""

from __future__ import annotations

import sys
import time

from kode import define_tool
from kode.agent import Agent, AgentError, AgentTemplate
from kode.models import FunctionModel, ModelRequest, ToolResultContent, tool_use
from kode.registries import ToolRegistry
from kode.sessions import SessionError

URL = sys.argv[1]
reg = ToolRegistry(name="stalled")


@define_tool(registry=reg, kind="execute", requires_approval=False)
def transfer(amount: int) -> str:
    """Move money.

    Args:
        amount: How much.
    """
    print("started", flush=True)
    time.sleep(1.5)
    return "transferred"


def model(request: ModelRequest) -> object:
    last = request.messages[-1]
    if any(isinstance(b, ToolResultContent) for b in last.content):
        return "Done."
    return [tool_use("transfer", {"amount": 5}, id="t1")]


agent = Agent.create(
    AgentTemplate(id="payer", tools=["transfer"]),
    model=FunctionModel(model),
    registry=reg,
    store=URL,
    session_id="s",
    lease_ttl=0.5,
)
try:
    print(f"done {agent.send_sync('pay').text}", flush=True)
except (AgentError, SessionError) as exc:
    print(f"error {type(exc).__name__}: {exc}", flush=True)
