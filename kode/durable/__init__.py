"""Durable runs of agents on DBOS (``pip install 'kode-sdk[dbos]'``).

This package owns `DurableAgent`: an agent's run as a DBOS workflow whose model turns and tool
calls are DBOS steps, so a worker that stops (a crash, a kill -9, a deploy) is continued by
DBOS's recovery after the last completed step, never repeating one. It does not own the
system database, the queues or the workers' lifecycle: the application configures and launches
DBOS as usual (``DBOS(config=...)``, ``DBOS.launch()``).
"""

from __future__ import annotations

from kode.durable.dbos import INTERRUPTED_TEXT, DurableAgent, approval_topic

__all__ = ["INTERRUPTED_TEXT", "DurableAgent", "approval_topic"]
