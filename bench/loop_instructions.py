"""Instructions a tool turn costs, counted by valgrind: a figure a shared machine cannot move.

Run under cachegrind, once per mode, and subtract::

    valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null \\
        .venv/bin/python bench/loop_instructions.py 400 send

Modes: ``send`` makes ``N`` fresh agents (the script ``[tool_use turn, "Done."]`` of
`agent_loop.py`'s ``round_trip``) and sends ``"Go."`` to each; ``none`` makes them and sends
nothing (start-up and set-up: subtract it from ``send``); ``run`` makes them and then awaits
``tool.run(args)`` ``10 * N`` times (``round_trip``'s baseline; subtract ``none`` and divide
by ``10 * N``). ``(I refs of send - I refs of none) / N`` is the instructions of one send.
Set ``PYTHONHASHSEED=0`` so two runs hash alike. To compare two trees, run this script from
each tree's ``bench/`` folder with ``PYTHONPATH`` set to that tree. The collector is off while
the agents send (as in ``agent_loop.py``'s batches).

No network, no pytest: a plain script.
"""

from __future__ import annotations

import gc
import sys
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))

import agent_loop  # the sibling script, found through the path set above

from kode import define_tool
from kode.registries.tool_registry import ToolRegistry


def main() -> int:
    count, mode = int(sys.argv[1]), sys.argv[2]
    if mode not in ("send", "none", "run"):
        raise SystemExit("mode must be send, none or run")
    registry = ToolRegistry()
    tool = define_tool(registry=registry)(agent_loop.search_files_async)
    subject = agent_loop._Subject(tool, registry, 1, agent_loop.CPU_CLOCK)

    async def go() -> None:
        await subject.send_all(subject.agents(20, with_tool_turn=True))  # warm
        agents = subject.agents(count, with_tool_turn=True)
        gc.disable()
        if mode == "send":
            await subject.send_all(agents)
        elif mode == "run":
            for _ in range(count * 10):
                await tool.run(dict(agent_loop.ARGS))

    anyio.run(go)
    return 0


if __name__ == "__main__":
    sys.exit(main())
