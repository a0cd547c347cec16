"""Tools with typed dependencies and progress events, run by an agent offline.

The application builds its dependencies once (here a tiny in-memory "database" and settings)
and passes them to `Agent.create(deps=...)`; every tool that asks for `ToolContext[AppDeps]`
gets them as ``ctx.deps``, fully typed. Long tools report progress with ``ctx.progress`` and
custom events with ``ctx.emit``; the agent's event stream carries both.

Run it with:  python examples/deps_and_progress.py
"""

from __future__ import annotations

from dataclasses import dataclass, field

import anyio

from kode import Agent, AgentTemplate, ToolContext, ToolRegistry, define_tool
from kode.agent import ToolCustom, ToolEnd, ToolProgress
from kode.models import ScriptedModel, tool_use


@dataclass
class Database:
    orders: dict[int, dict[str, object]] = field(
        default_factory=lambda: {
            1: {"customer": "ada", "total": 42.5, "status": "shipped"},
            2: {"customer": "linus", "total": 17.0, "status": "pending"},
            3: {"customer": "ada", "total": 8.25, "status": "pending"},
        }
    )


@dataclass
class AppDeps:
    db: Database
    currency: str = "EUR"


tools = ToolRegistry("shop")


@define_tool(registry=tools, kind="read")
async def customer_orders(customer: str, ctx: ToolContext[AppDeps]) -> list[dict[str, object]]:
    """List a customer's orders.

    Args:
        customer: The customer's user name.
    """
    orders = ctx.deps.db.orders
    found = []
    for index, (order_id, order) in enumerate(orders.items(), start=1):
        await anyio.sleep(0.01)  # pretend each row takes a moment
        ctx.progress(f"scanned order {order_id}", fraction=index / len(orders))
        if order["customer"] == customer:
            found.append({"id": order_id, **order, "currency": ctx.deps.currency})
    ctx.emit("rows_scanned", {"rows": len(orders), "matches": len(found)})
    return found


@define_tool(registry=tools, kind="edit")
def mark_shipped(order_id: int, ctx: ToolContext[AppDeps]) -> str:
    """Mark an order as shipped.

    Args:
        order_id: The order's number.
    """
    order = ctx.deps.db.orders.get(order_id)
    if order is None:
        return f"There is no order {order_id}."
    order["status"] = "shipped"
    return f"Order {order_id} is now shipped."


async def main() -> None:
    deps = AppDeps(db=Database())
    model = ScriptedModel(
        [
            [tool_use("customer_orders", {"customer": "ada"})],
            [tool_use("mark_shipped", {"order_id": "3"})],
            "Ada had one pending order (3, 8.25 EUR); it is now shipped.",
        ]
    )
    template = AgentTemplate(id="shop-assistant", tools=["customer_orders", "mark_shipped"])
    agent = Agent.create(template, model=model, registry=tools, deps=deps)
    async for event in agent.stream("Ship Ada's pending orders."):
        if isinstance(event, ToolProgress):
            print(f"  … {event.name}: {event.message} ({event.fraction:.0%})")
        elif isinstance(event, ToolCustom):
            print(f"  * {event.name} says {event.event}: {event.data}")
        elif isinstance(event, ToolEnd):
            print(f"  ✓ {event.name}: {event.result.text}")
        elif event.type == "done":
            print(f"Agent: {event.text}")
    print("Order 3 is now:", deps.db.orders[3]["status"])


if __name__ == "__main__":
    anyio.run(main)
