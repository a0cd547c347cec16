"""Sub-agents' rights: what an agent's sub-agent may do, and where its approvals go.

This module owns one rule and the function that applies it: a sub-agent (started by
``task_run``, ``sessions_spawn``, ``sessions_send`` or `Agent.run_subagent`) never has more
rights than the agent that starts it. Its rights are the intersection of its parent's and its
own template's, dimension by dimension (`subagent_rights`):

- **permission** (mode, ``allow``, ``deny``, ``require_approval``, rules): the sub-agent's
  template keeps its own settings and carries its parent's as ``inherited``
  (`PermissionConfig.inherited`); every call is decided by both, and the strictest answer wins
  (deny over ask over allow). So modes are ordered ``auto`` < ``approval`` < ``readonly``,
  a tool denied by either is denied (deny lists are unioned), a call runs without asking only
  when both would let it (allow lists are intersected), and either's rules apply; the
  session's "always" answers settle a parent's ask, never its deny;
- **tools**: every policy layer of the parent (global, agent, its own template's, and the
  sub-agent layer ``subagent_policy``) plus an allow-list of the parent's own tools, before
  the sub-agent's template layer: a sub-agent never has a tool its parent does not have;
- **session access** (`SessionAccess`): ``all`` only when both have it; otherwise the
  templates and labels both name (one with ``all`` gives way to the other's lists);
- **settings its tools read** (the services of keys made with ``passed_on=True``: the shell
  command policy, the web and browser settings): the parent's, as they are. A sub-agent has
  none of its own, so the intersection is the parent's (security level, approvals, block-list,
  sandbox, network, hidden paths all as the parent runs them);
- **workspace**: the parent's, or a directory inside it (`Agent.run_subagent`'s
  ``workspace``); ``sandboxed`` (for tool factories) is the parent's;
- **approvals** travel up: a call the sub-agent must ask about goes to the parent's approver,
  or, with none, to the parent's run's event stream (an ``ApprovalRequired`` event the
  parent's ``decide`` answers); a sub-agent that keeps its session in a store commits the
  request there too, and a decision made in another process (``decide_in_store``) counts as
  well (`ParentApprovals`). When the parent has neither, the sub-agent has no approver and runs
  with no one listening, so such a call is refused at once with a tool error.

It does not create the sub-agent (`Agent.subagent_options` and `Agent.create` do).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from kode.agent.permissions import ApprovalDecision, ApprovalRequest
from kode.agent.template import AgentTemplate, SessionAccess, TemplateError
from kode.registries.policy import ToolPolicy
from kode.tools.services import passed_on_names
from kode.tools.workspace import Workspace

if TYPE_CHECKING:
    from kode.agent.ports import AgentLike, CallEnvironment

__all__ = ["ParentApprovals", "SubagentRights", "subagent_rights"]

PARENT_TOOLS = "parent's tools"
"""The name of the layer that lets through only the tools the parent has."""


@dataclass(kw_only=True, frozen=True, slots=True)
class SubagentRights:
    """What a sub-agent is made with: its template and the `Agent.create` options that limit it."""

    template: AgentTemplate
    """Its template, with the parent's permission settings inherited and session access
    narrowed to the parent's."""
    policy: list[ToolPolicy]
    """The policy layers its tools are chosen through (its template's own is added by
    `Agent.create`)."""
    services: dict[str, Any]
    """The settings its tools read, passed on from the parent."""
    approver: ParentApprovals | None
    """Where its approvals go (the parent's approver or run); `None`: nobody can answer."""
    workspace: Workspace | None
    """The directory its tools may touch."""


def subagent_rights(
    parent: AgentLike,
    template: AgentTemplate,
    *,
    layers: Sequence[ToolPolicy],
    workspace: str | os.PathLike[str] | Workspace | None = None,
) -> SubagentRights:
    """A sub-agent of `parent` made from `template`: the intersection of both's rights.

    Args:
        parent: The agent that starts the sub-agent.
        template: The sub-agent's own template.
        layers: The parent's policy layers for sub-agents (global, agent, its template's,
            and the sub-agent layer), as `Agent.create` kept them.
        workspace: A directory for the sub-agent inside the parent's workspace (a path or a
            `Workspace` whose extra paths are inside it too); default: the parent's.

    Raises:
        TemplateError: `workspace` is not inside the parent's workspace (or, for a parent with
            none, the current directory).
    """
    names = sorted({t.name.lower() for t in parent.tools})
    own_tools = (
        ToolPolicy(name=PARENT_TOOLS, allow=names)
        if names
        else ToolPolicy(name=PARENT_TOOLS, deny=["*"])  # an empty allow-list allows all
    )
    mine = parent.template.permission
    permission = template.permission.model_copy(
        update={"inherited": [*template.permission.inherited, mine]}
    )
    narrowed = template.model_copy(
        update={
            "permission": permission,
            "session_access": _narrowed(parent.template.session_access, template.session_access),
        }
    )
    services = {n: parent.services[n] for n in passed_on_names() if n in parent.services}
    return SubagentRights(
        template=narrowed,
        policy=[*layers, own_tools],
        services=services,
        approver=_approvals_of(parent, template.id),
        workspace=_inside(parent.workspace, workspace),
    )


def _narrowed(parent: SessionAccess, own: SessionAccess) -> SessionAccess:
    """The sessions both `parent` and `own` reach (beyond the sub-agent's own and spawned)."""
    if parent.all:
        return own
    if own.all:
        return parent
    return SessionAccess(
        templates=[t for t in own.templates if t in parent.templates],
        labels=[x for x in own.labels if x in parent.labels],
    )


def _inside(
    parent: Workspace | None, given: str | os.PathLike[str] | Workspace | None
) -> Workspace | None:
    """The sub-agent's workspace: `given` if it lies inside `parent`'s, else the parent's."""
    wanted = Workspace.of(given, what="the sub-agent's workspace")
    if wanted is None:
        return parent
    where = parent if parent is not None else Workspace(root=Path.cwd())
    outside = [str(p) for p in (wanted.root, *wanted.extra_paths) if not where.allowed(p)]
    if outside:
        raise TemplateError(
            f"a sub-agent's workspace must lie inside its parent's ({where.root}"
            + "".join(f", {p}" for p in where.extra_paths)
            + f"); {', '.join(outside)} is not"
        )
    return wanted


def _approvals_of(parent: AgentLike, template_id: str) -> ParentApprovals | None:
    """The sub-agent's approver: the parent's approver, or the parent's run's events.

    `None` when the parent has neither (then the sub-agent's calls that need approval are
    refused at once, as for any agent nobody can answer).
    """
    if parent.approver is None and not parent.asks_by_event:
        return None
    return ParentApprovals(parent, template_id)


class ParentApprovals:
    """A sub-agent's approver: asks the agent that started it (its approver, else its run).

    A request says which sub-agent asks (its reason starts with ``sub-agent '<id>': ``). For
    a sub-agent that keeps its session in a store (``sessions_spawn``), `ask_with_store` also
    takes a decision made in another process (`Agent.decide_in_store` on the sub-agent's
    session), whichever comes first.
    """

    __slots__ = ("_approver", "_parent", "_template_id")

    def __init__(self, parent: AgentLike, template_id: str) -> None:
        self._parent = parent
        self._approver = parent.approver
        self._template_id = template_id

    async def __call__(self, request: ApprovalRequest) -> ApprovalDecision:
        """Ask the parent's approver, or through the parent's run; the decision."""
        forwarded = dataclasses.replace(
            request, reason=f"sub-agent {self._template_id!r}: {request.reason}"
        )
        if self._approver is not None:
            return await self._approver(forwarded)
        decision = await self._parent.ask_approval(forwarded)
        if decision is None:  # the parent's run ended meanwhile (the sub-agent outlived it)
            return ApprovalDecision(
                decision="deny",
                note="nobody can approve it now: the run of the agent that started this "
                "sub-agent has ended",
            )
        return decision

    async def ask_with_store(
        self, request: ApprovalRequest, run: CallEnvironment
    ) -> ApprovalDecision:
        """Ask the parent, and meanwhile read the sub-agent's store for a decision.

        The request is committed first (so another process sees it, and the session's status
        is ``awaiting_approval``); the first decision wins, and the other wait is cancelled.
        """
        session = run.agent.session
        session.set_status("awaiting_approval")
        await run.commit()
        after = session.last_seq
        found: list[ApprovalDecision] = []
        failed: list[Exception] = []
        try:
            async with anyio.create_task_group() as group:

                async def from_parent() -> None:
                    try:
                        found.append(await self(request))
                    except Exception as exc:  # the approver's failure: the pipeline's to say
                        failed.append(exc)
                    group.cancel_scope.cancel()

                async def from_store() -> None:
                    while request.call_id not in session.decisions:
                        await anyio.sleep(run.poll_interval)
                        await session.poll_decisions(after)
                    kept = session.decisions[request.call_id]
                    found.append(
                        ApprovalDecision(
                            decision=kept.decision,
                            note=kept.note,
                            scope=kept.scope,
                            pattern=kept.pattern,
                            input=kept.input,
                        )
                    )
                    group.cancel_scope.cancel()

                group.start_soon(from_parent)
                group.start_soon(from_store)
        finally:
            session.set_status("running")
        if failed:
            raise failed[0]
        return found[0]
