"""Elicitation: an MCP server asks the user for information (a form) or to visit a URL.

A server's request is a `kode.tools.asking.ElicitationRequest` (re-exported here, with
`ElicitationReply` and `ElicitationFunc`), the same a kode tool's ``ctx.elicit`` makes, so one
function answers both. This module owns the check of a form's answer against the schema the
server sent, and the translations to and from MCP's ``elicitation/create``. Form mode is for
ordinary information; URL mode sends the user to a page (sign-in, payment) whose data never
passes through the client.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types

from kode.tools.asking import ElicitationFunc, ElicitationReply, ElicitationRequest
from kode.tools.context import ToolContext

__all__ = [
    "ElicitationFunc",
    "ElicitationReply",
    "ElicitationRequest",
    "elicit_result",
    "elicitation_request",
]


def elicitation_request(
    server: str,
    params: types.ElicitRequestFormParams | types.ElicitRequestURLParams,
    ctx: ToolContext[Any] | None,
) -> ElicitationRequest:
    """The kode form of a server's ``elicitation/create`` parameters."""
    tool_name = ctx.tool_name if ctx is not None else ""
    if isinstance(params, types.ElicitRequestURLParams):
        return ElicitationRequest(
            server=server,
            mode="url",
            message=params.message,
            url=params.url,
            elicitation_id=params.elicitation_id,
            tool_name=tool_name,
            ctx=ctx,
        )
    return ElicitationRequest(
        server=server,
        mode="form",
        message=params.message,
        schema=dict(params.requested_schema),
        tool_name=tool_name,
        ctx=ctx,
    )


def _problems(content: dict[str, Any], schema: dict[str, Any]) -> list[str]:
    import jsonschema  # type: ignore[import-untyped]  # comes with the mcp extra

    validator = jsonschema.Draft202012Validator(schema)
    found = []
    for error in sorted(validator.iter_errors(content), key=lambda e: list(e.path)):
        where = ".".join(str(p) for p in error.path)
        found.append(f"{where}: {error.message}" if where else error.message)
    return found


def elicit_result(reply: ElicitationReply, request: ElicitationRequest) -> types.ElicitResult:
    """The MCP result for a reply; a form's answer is checked against the request's schema.

    Raises:
        TypeError: the answer is not an `ElicitationReply`.
        ValueError: an accepted form's content is missing or does not fit the schema (the
            message lists each problem).
    """
    if not isinstance(reply, ElicitationReply):
        raise TypeError(
            f"an elicitation function must return an ElicitationReply, got {type(reply).__name__}"
        )
    if reply.action != "accept" or request.mode == "url":
        return types.ElicitResult(action=reply.action)
    if reply.content is None:
        raise ValueError(
            "an accepted form needs content: ElicitationReply(action='accept', content={...})"
        )
    problems = _problems(reply.content, request.schema or {})
    if problems:
        raise ValueError(
            f"the answer does not fit the form of MCP server '{request.server}': "
            + "; ".join(problems)
        )
    return types.ElicitResult(action="accept", content=reply.content)
