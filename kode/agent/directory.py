"""`SessionTools`: the `SESSIONS` service an agent with a store gives its session tools.

This module owns what ``sessions_list``, ``sessions_history``, ``session_status``,
``sessions_send``, ``sessions_spawn`` and ``agents_list`` (`kode.builtin.sessions`) do: which
sessions an agent reaches (its own, the sessions it spawned, and those its template's
`SessionAccess` names), what is shown of them, and
how a message is sent into one (the session is resumed here, under its lease, and run) or
queued for it (appended under its lease; the next run of the session answers it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio

from kode.agent.session import CHILDREN_KEY
from kode.agent.template import templates
from kode.models.messages import Message, ToolResultContent
from kode.sessions.errors import SessionLeaseError, SessionNotFoundError
from kode.sessions.records import MessageAdded
from kode.sessions.store import SessionHeader, Store

if TYPE_CHECKING:
    from kode.agent.ports import AgentLike

__all__ = ["SessionTools"]

_TEXT_LIMIT = 2_000  # characters of one message shown by sessions_history


def _header(header: SessionHeader) -> dict[str, Any]:
    return {
        "session_id": header.id,
        "template": header.template,
        "label": header.label,
        "status": header.status,
        "last_active": round(header.last_active, 3),
        "records": header.last_seq,
        "parent_id": header.parent_id,
    }


def _message(message: Message) -> dict[str, Any]:
    shown: dict[str, Any] = {"role": message.role}
    text = message.text
    if text:
        shown["text"] = text if len(text) <= _TEXT_LIMIT else text[:_TEXT_LIMIT] + " [...]"
    calls = message.tool_uses
    if calls:
        shown["calls"] = [c.name for c in calls]
    results = [b for b in message.content if isinstance(b, ToolResultContent)]
    if results:
        shown["results"] = [("error: " if r.is_error else "") + r.text[:200] for r in results]
    return shown


class SessionTools:
    """The sessions an agent reaches through its store (the `SESSIONS` service)."""

    __slots__ = ("_agent",)

    def __init__(self, agent: AgentLike) -> None:
        self._agent = agent

    def _store(self) -> Store:
        store = self._agent.session.store
        if store is None:  # pragma: no cover - the service is only given with a store
            raise ValueError("this agent keeps no sessions (it was made without a store)")
        return store

    async def _reachable(self, session_id: str) -> None:
        """Raise `LookupError` unless the agent reaches `session_id`."""
        session = self._agent.session
        if session_id == session.id or session_id in session.children:
            return
        access = self._agent.template.session_access
        if access.all or access.templates or access.labels:
            try:
                header = await self._store().get(session_id)
            except SessionNotFoundError:
                raise LookupError(f"there is no session {session_id!r} in the store") from None
            if access.reaches(header.template, header.label):
                return
        also = []
        if access.templates:
            also.append(f"sessions of templates {', '.join(access.templates)}")
        if access.labels:
            also.append(f"sessions labelled {', '.join(access.labels)}")
        raise LookupError(
            f"session {session_id!r} is not one this agent may reach: it reaches its own "
            f"session ({session.id!r}), the sessions it spawned "
            f"({', '.join(session.children) or 'none yet'})"
            + "".join(f", {a}" for a in also)
            + " (its template's session_access names which others)"
        )

    async def list_sessions(
        self, *, template: str | None, label: str | None, status: str | None, limit: int
    ) -> list[dict[str, Any]]:
        """The sessions the agent reaches, filtered, the most recently active first."""
        store = self._store()
        session = self._agent.session
        found: dict[str, SessionHeader] = {}
        for session_id in [session.id, *session.children]:
            try:
                header = await store.get(session_id)
            except SessionNotFoundError:  # deleted meanwhile, or not written yet
                continue
            if (
                (template is None or header.template == template)
                and (label is None or header.label == label)
                and (status is None or header.status == status)
            ):
                found[header.id] = header
        access = self._agent.template.session_access
        wanted: list[tuple[str | None, str | None]] = []  # (template, label) filters to list
        if access.all:
            wanted.append((template, label))
        else:
            wanted += [(t, label) for t in access.templates if template in (None, t)]
            wanted += [(template, x) for x in access.labels if label in (None, x)]
        for by_template, by_label in wanted:  # each the first page: the most recent `limit`
            page = await store.list_sessions(
                template=by_template,
                label=by_label,
                status=status,  # type: ignore[arg-type]  # checked by the tool's schema
                limit=limit,
            )
            found.update((h.id, h) for h in page.sessions)
        ordered = sorted(found.values(), key=lambda h: (h.last_active, h.id), reverse=True)
        return [_header(h) for h in ordered[:limit]]

    async def history(self, session_id: str, *, limit: int) -> list[dict[str, Any]]:
        """The last `limit` messages of a session the agent reaches."""
        await self._reachable(session_id)
        if session_id == self._agent.session.id:
            messages = self._agent.messages
        else:
            log = await self._store().load(session_id, types={"message"})
            messages = []
            for entry in log.entries:  # the conversation alone: its records, merges applied
                record = entry.record
                assert isinstance(record, MessageAdded)
                if record.merge and messages and messages[-1].role == record.message.role:
                    last = messages[-1]
                    content = [*last.content, *record.message.content]
                    messages[-1] = Message(role=last.role, content=content)
                else:
                    messages.append(record.message)
        return [_message(m) for m in messages[-limit:]]

    async def status(self, session_id: str) -> dict[str, Any]:
        """A reachable session's header, usage, and what it waits for."""
        await self._reachable(session_id)
        store = self._store()
        header = await store.get(session_id)
        state = (await store.load(session_id)).state()
        shown = _header(header)
        shown.update(
            messages=len(state.messages),
            usage={
                "input_tokens": state.usage.input_tokens,
                "output_tokens": state.usage.output_tokens,
            },
            calls_open=[f"{c.name} ({c.status})" for c in state.open_calls],
            approvals_waiting=[a.request.tool_name for a in state.approvals.values()],
            client_calls_waiting=list(state.client_waiting),
            spawned=list(state.metadata.get(CHILDREN_KEY) or []),
        )
        return shown

    async def send(
        self, session_id: str, message: str, *, wait: bool, seconds: float
    ) -> dict[str, Any]:
        """Send a message into a spawned session: run it now (`wait`), or queue it."""
        await self._reachable(session_id)
        if session_id == self._agent.session.id:
            raise ValueError("a session cannot send a message into itself")
        store = self._store()
        if not wait:
            await self._queue(store, session_id, message)
            return {"session_id": session_id, "queued": True}
        header = await store.get(session_id)
        template, model, options = self._agent.subagent_options(header.template)
        try:  # the agent's own class: no import of kode.agent.agent from here (no circle)
            child = await self._agent.resume(
                session_id, store=store, model=model, template=template, **options
            )
        except SessionLeaseError:
            raise ValueError(
                f"session {session_id!r} is running elsewhere (another process or agent holds "
                "it); try again later, or queue the message with wait=false"
            ) from None
        return await self._run(child, message, seconds)

    async def spawn(
        self, template_id: str, prompt: str, *, label: str | None, wait: bool, seconds: float
    ) -> dict[str, Any]:
        """A sub-agent in a new session (a child of this one) on `prompt`."""
        store = self._store()
        template, model, options = self._agent.subagent_options(template_id)
        child = self._agent.create(
            template, model=model, store=store, lease_ttl=self._agent.session.lease_ttl, **options
        )
        child.session.parent_id = self._agent.session.id
        self._agent.session.add_child(child.session_id)
        await child.session.open(resume=False)
        if label is not None:
            await store.set_label(child.session_id, label)
        if not wait:
            await child.session.commit()
            await child.aclose()
            await self._queue(store, child.session_id, prompt)
            return {"session_id": child.session_id, "queued": True}
        return await self._run(child, prompt, seconds)

    async def _run(self, child: AgentLike, message: str, seconds: float) -> dict[str, Any]:
        reply = None
        try:
            with anyio.move_on_after(seconds) as scope:
                reply = await child.send(message)
        finally:
            await child.aclose()
        if scope.cancelled_caught or reply is None:
            return {
                "session_id": child.session_id,
                "timed_out": True,
                "status": child.status,
                "note": f"no reply within {seconds:g} s; the run was stopped",
            }
        return {"session_id": child.session_id, "status": child.status, "reply": reply.text}

    async def _queue(self, store: Store, session_id: str, message: str) -> None:
        """Append `message` for the session's next run, under its lease."""
        try:
            lease = await store.acquire(session_id, ttl=30)
        except SessionLeaseError:
            raise ValueError(
                f"session {session_id!r} is running elsewhere; try again later"
            ) from None
        try:
            state = (await store.load(session_id)).state()
            last = state.messages[-1] if state.messages else None
            if state.status in ("awaiting_client", "awaiting_approval") or (
                last is not None and last.role == "assistant" and last.tool_uses
            ):
                raise ValueError(
                    f"session {session_id!r} is in the middle of a turn ({state.status}): it "
                    "takes a message once that turn ends"
                )
            merge = last is not None and last.role == "user"
            await store.append(
                session_id, [MessageAdded(message=Message.user(message), merge=merge)], lease=lease
            )
        finally:
            await store.release(lease)

    def agents(self) -> list[dict[str, Any]]:
        """The registered templates: id, the first line of the system prompt, tools."""
        shown = []
        for template_id in templates.ids():
            template = templates.get(template_id)
            about = template.system_prompt.strip().split("\n")[0][:200]
            shown.append({"id": template_id, "about": about, "tools": list(template.tools)})
        return shown
