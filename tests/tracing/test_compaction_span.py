"""A compaction's summary request is a chat span of its own, marked kode.compaction."""

from __future__ import annotations

from otel_support import Telemetry

from kode import define_tool
from kode.agent import Agent, AgentTemplate, ContextPolicy
from kode.agent.compaction import COMPACT_PROMPT
from kode.models import FunctionModel, ModelRequest, tool_use
from kode.registries import ToolRegistry


def test_the_summary_request_has_its_own_chat_span(reg: ToolRegistry, telemetry: Telemetry) -> None:
    @define_tool(registry=reg, kind="read")
    def read_page(n: int) -> str:
        """Read a page.

        Args:
            n: The page.
        """
        return f"page {n}: " + "lorem ipsum " * 50

    pages = iter(range(1, 13))

    def reply(request: ModelRequest) -> object:
        if request.system == COMPACT_PROMPT:
            return "Pages were read."
        n = next(pages, None)
        return "Done." if n is None else [tool_use("read_page", {"n": n})]

    template = AgentTemplate(
        id="reader",
        tools=["read_page"],
        context=ContextPolicy(compact_at_tokens=1_000, compact_keep_tokens=300),
    )
    agent = Agent.create(
        template, model=FunctionModel(reply), registry=reg, instrument=telemetry.settings()
    )
    agent.send_sync("Read.")
    chats = telemetry.named("chat function")
    marked = [s for s in chats if s.attributes and s.attributes.get("kode.compaction")]
    assert len(marked) >= 1
    assert len(chats) == 13 + len(marked)  # every agent request, and each summary's
    run = telemetry.one("invoke_agent reader")
    assert all(s.parent is not None and s.parent.span_id == run.context.span_id for s in marked)
