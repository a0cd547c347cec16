"""How kode answers a server's requests: sampling, elicitation and roots.

This module owns the policy `connect` configures (`ClientAnswers`): which model samples (by
default the model of the agent whose call is running, through the ``AGENT`` service, or, for
a call that is not an agent's, whoever runs it: the MCP client of ``kode mcp serve``), who
approves a sampling request (the agent's permission rules and approver, as for a tool call of
the pseudo-tool ``mcp__<server>__sampling``), who answers an elicitation (the function given to
`connect`), and which roots a server sees (the calling agent's workspace by default). Each
method runs in the caller's event loop when a call is in flight (`kode.mcp.routing`).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import mcp_types as types
from pydantic import FileUrl

from kode.mcp.elicitation import (
    ElicitationFunc,
    elicit_result,
    elicitation_request,
)
from kode.mcp.names import server_prefix
from kode.mcp.sampling import (
    SamplingFunc,
    SamplingRequest,
    model_sampler,
    sampling_request,
    sampling_result,
)
from kode.models.base import Model
from kode.tools.asking import SampleRequest, ToolCaller
from kode.tools.context import ToolContext
from kode.tools.declared import DeclaredTool, declare_tool
from kode.tools.kinds import Kind
from kode.tools.results import ToolResult, text_result
from kode.tools.services import AGENT, CALLER

__all__ = ["USER_REJECTED", "ClientAnswers", "ElicitationOption", "RootsOption", "SamplingOption"]

USER_REJECTED = -1
"""The error code MCP uses for a request the user refused."""

SamplingOption = SamplingFunc | Model | Literal["agent"] | None
"""What answers sampling: a function, a model, the calling agent's model, or nothing."""
RootsOption = Sequence[str | Path] | Literal["workspace"] | None
"""Which roots a server sees: these paths, the calling agent's workspace, or none."""
ElicitationOption = ElicitationFunc | Literal["agent"] | None
"""Who answers elicitation: a function, whoever runs the call (`CALLER`), or nobody."""


def _refuse(text: str, code: int = types.INVALID_REQUEST) -> types.ErrorData:
    return types.ErrorData(code=code, message=text)


async def _never(arguments: dict[str, Any], ctx: ToolContext[Any]) -> ToolResult:
    return text_result("(this stands for a server's request and is never run)")


def _caller_sampler(caller: ToolCaller, ctx: ToolContext[Any] | None) -> SamplingFunc:
    """A `SamplingFunc` that asks whoever runs the call (its text; images are described)."""

    async def sample(request: SamplingRequest) -> str:
        turns: tuple[tuple[Literal["user", "assistant"], str], ...] = tuple(
            (m.role, m.text or "[an image]") for m in request.messages
        )
        return await caller.sample(
            SampleRequest(
                messages=turns,
                system=request.system,
                max_tokens=request.max_tokens,
                temperature=request.temperature,
                tool_name=ctx.tool_name if ctx is not None else "",
                ctx=ctx,
            )
        )

    return sample


class ClientAnswers:
    """A connection's answers to its server's sampling, elicitation and roots requests."""

    def __init__(
        self,
        server: str,
        *,
        sampling: SamplingOption,
        elicitation: ElicitationOption,
        roots: RootsOption,
        trust: bool,
    ) -> None:
        if sampling is not None and sampling != "agent" and not callable(sampling):
            if not isinstance(sampling, Model):
                raise TypeError(
                    "sampling must be 'agent', a kode Model, an async function or None, got "
                    f"{type(sampling).__name__}"
                )
        if elicitation is not None and elicitation != "agent" and not callable(elicitation):
            raise TypeError(
                "elicitation must be 'agent', an async function or None, got "
                f"{type(elicitation).__name__}"
            )
        if isinstance(roots, str) and roots != "workspace":
            raise TypeError(f"roots must be 'workspace', a list of paths or None, got {roots!r}")
        self.server = server
        """The server's name in kode."""
        self.sampling = sampling
        """What answers sampling requests (see `SamplingOption`)."""
        self.elicitation = elicitation
        """What answers elicitation requests (see `ElicitationOption`; `None`: the capability
        is not declared)."""
        self.roots = roots
        """Which roots the server sees (see `RootsOption`)."""
        self.trust = trust
        """Whether the server is trusted (its sampling then follows the agent's mode)."""
        self.sampling_tool: DeclaredTool = declare_tool(
            f"{server_prefix(server)}sampling",
            description=f"MCP server '{server}' asks the agent's model to answer a message.",
            input_schema={"type": "object", "properties": {}},
            handler=_never,
            kind=Kind.OTHER,
            requires_approval=None if trust else True,
        )
        """What a sampling request is, for the agent's permission rules and approver."""
        self._asks = itertools.count(1)

    # --- sampling ------------------------------------------------------------------------------

    async def sample(
        self, params: types.CreateMessageRequestParams, ctx: ToolContext[Any] | None
    ) -> types.CreateMessageResult | types.ErrorData:
        """Answer a ``sampling/createMessage`` (after approval, inside an agent)."""
        request = sampling_request(self.server, params, ctx)
        link = AGENT.get(ctx.services) if ctx is not None else None
        sampler: SamplingFunc
        caller = CALLER.get(ctx.services) if ctx is not None else None
        if self.sampling == "agent" and link is None and caller is not None:
            # not an agent, but whoever runs the call (an MCP client of `kode mcp serve`,
            # whose user approves): it samples, and decides
            sampler, default_model = _caller_sampler(caller, ctx), "kode"
        elif self.sampling == "agent":
            if link is None or not isinstance(link.model, Model):
                return _refuse(
                    f"MCP server '{self.server}' asked for sampling outside an agent's call, and "
                    "this connection samples with the calling agent's model: pass sampling= "
                    "(a model or a function) to kode.mcp.connect to answer it"
                )
            sampler, default_model = model_sampler(link.model), link.model.name
        elif isinstance(self.sampling, Model):
            sampler, default_model = model_sampler(self.sampling), self.sampling.name
        elif self.sampling is not None:
            sampler, default_model = self.sampling, "kode"
        else:
            return _refuse("sampling is not supported by this client")
        if link is not None and ctx is not None:
            shown = {
                "system": request.system,
                "messages": request.text,
                "max_tokens": request.max_tokens,
            }
            refusal = await link.approve(
                self.sampling_tool,
                shown,
                ctx,
                call_id=f"{ctx.tool_call_id}/sampling-{next(self._asks)}",
            )
            if refusal is not None:
                return _refuse(f"The sampling request was not run: {refusal}.", USER_REJECTED)
        reply = await sampler(request)
        return sampling_result(reply, default_model=default_model)

    # --- elicitation ---------------------------------------------------------------------------

    async def elicit(
        self,
        params: types.ElicitRequestFormParams | types.ElicitRequestURLParams,
        ctx: ToolContext[Any] | None,
    ) -> types.ElicitResult | types.ErrorData:
        """Answer an ``elicitation/create`` with the connection's elicitation function."""
        if self.elicitation is None:
            return _refuse("elicitation is not supported by this client")
        request = elicitation_request(self.server, params, ctx)
        if self.elicitation == "agent":
            caller = CALLER.get(ctx.services) if ctx is not None else None
            if caller is None:
                return _refuse(
                    f"MCP server '{self.server}' asked the user a question outside a call from "
                    "an agent, and this connection leaves questions to the calling agent: pass "
                    "elicitation= (a function) to kode.mcp.connect to answer it"
                )
            reply = await caller.elicit(request)
        else:
            reply = await self.elicitation(request)
        try:
            return elicit_result(reply, request)
        except (TypeError, ValueError) as exc:
            return _refuse(str(exc), types.INVALID_PARAMS)

    # --- roots ---------------------------------------------------------------------------------

    def root_paths(self, ctx: ToolContext[Any] | None) -> list[Path]:
        """The directories the server is told it may work in."""
        if self.roots is None:
            return []
        if self.roots == "workspace":
            if ctx is not None and ctx.workspace is not None:
                return [ctx.workspace.root]
            return [Path.cwd()]
        return [Path(p).resolve() for p in self.roots]

    async def list_roots(self, ctx: ToolContext[Any] | None) -> types.ListRootsResult:
        """Answer ``roots/list``."""
        return types.ListRootsResult(
            roots=[
                types.Root(uri=FileUrl(p.as_uri()), name=p.name or str(p))
                for p in self.root_paths(ctx)
            ]
        )
