"""How an agent shows itself to a person: a one-line ``repr`` and a notebook's summary.

This module owns `Agent`'s ``repr`` and ``_repr_markdown_``: its id, template, model, status,
tools and how far the conversation has gone, read from the agent without changing it. It does
not show events (`kode run` prints those) or save anything (`Agent.state`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kode.agent.ports import AgentLike

__all__ = ["agent_markdown", "agent_repr"]

_REPLY_CHARS = 300
_TOOLS_SHOWN = 30


def _model_label(model: Any) -> str:
    name = getattr(model, "name", None)
    kind = type(model).__name__
    return f"{kind}({name!r})" if isinstance(name, str) and name else kind


def _last_reply(agent: AgentLike) -> str:
    for message in reversed(agent.messages):
        if message.role == "assistant" and message.text:
            text = " ".join(message.text.split())
            return text if len(text) <= _REPLY_CHARS else text[: _REPLY_CHARS - 1] + "…"
    return ""


def _waiting(agent: AgentLike, approvals: list[str]) -> str:
    parts = []
    if approvals:
        parts.append(f"approval of {', '.join(approvals)}")
    if agent.client_calls.waiting:
        parts.append(f"client results for {', '.join(agent.client_calls.waiting)}")
    return "; ".join(parts)


def agent_repr(agent: AgentLike) -> str:
    """`agent` in one line.

    E.g. ``<Agent agent_1f2e3d 'notes' ScriptedModel('scripted') idle: 2 tools, 4 messages>``.
    """
    tools = len(agent.tools)
    messages = len(agent.messages)
    return (
        f"<Agent {agent.agent_id} {agent.template.id!r} {_model_label(agent.model)} "
        f"{agent.status}: {tools} tool{'s' * (tools != 1)}, "
        f"{messages} message{'s' * (messages != 1)}>"
    )


def agent_markdown(agent: AgentLike, approvals: list[str]) -> str:
    """`agent` as markdown: a heading and a table of its model, tools and conversation.

    Args:
        agent: The agent.
        approvals: The ids of the calls waiting for `Agent.decide`.
    """
    names = [t.name for t in agent.tools]
    shown = ", ".join(f"`{n}`" for n in names[:_TOOLS_SHOWN])
    if len(names) > _TOOLS_SHOWN:
        shown += f" and {len(names) - _TOOLS_SHOWN} more"
    usage = agent.usage
    rows = [
        ("model", f"`{_model_label(agent.model)}`"),
        ("tools", shown or "*none*"),
        ("messages", str(len(agent.messages))),
        ("tokens", f"{usage.input_tokens:,} in, {usage.output_tokens:,} out"),
    ]
    waiting = _waiting(agent, approvals)
    if waiting:
        rows.append(("waiting for", waiting))
    reply = _last_reply(agent)
    if reply:
        rows.append(("last reply", reply))
    lines = [
        f"**Agent** `{agent.agent_id}` · template `{agent.template.id}` · **{agent.status}**",
        "",
        "| | |",
        "|---|---|",
    ]
    lines += [f"| {key} | {value.replace('|', chr(92) + '|')} |" for key, value in rows]
    return "\n".join(lines)
