"""Elicitation: an MCP server asks the user for information (a form) or to visit a URL.

This module owns what such a request looks like in kode (`ElicitationRequest`), what answers
it (`ElicitationFunc`, returning an `ElicitationReply`: a UI, a prompt, an approver), the check
of a form's answer against the schema the server sent, and the translations to and from MCP's
``elicitation/create``. Form mode is for ordinary information; URL mode sends the user to a
page (sign-in, payment) whose data never passes through the client.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import mcp_types as types

from kode.tools.context import ToolContext

__all__ = [
    "ElicitationFunc",
    "ElicitationReply",
    "ElicitationRequest",
    "elicit_result",
    "elicitation_request",
]


@dataclass(kw_only=True, frozen=True, slots=True)
class ElicitationRequest:
    """A server's request for the user's input (MCP ``elicitation/create``)."""

    server: str
    """The server's name in kode."""
    mode: Literal["form", "url"]
    """``form``: fill in `schema`; ``url``: open `url` (and come back)."""
    message: str
    """What the server says to the user."""
    schema: dict[str, Any] | None = None
    """Form mode: the JSON schema of the answer (an object of plain fields)."""
    url: str | None = None
    """URL mode: the page the user should open."""
    elicitation_id: str | None = None
    """URL mode: the server's id for this elicitation."""
    ctx: ToolContext[Any] | None = field(default=None, compare=False)
    """The context of the kode call during which the server asked (`None`: outside a call)."""


@dataclass(kw_only=True, frozen=True, slots=True)
class ElicitationReply:
    """The user's answer to an `ElicitationRequest`."""

    action: Literal["accept", "decline", "cancel"]
    """``accept`` (form sent, or URL opened), ``decline`` (refused) or ``cancel`` (dismissed)."""
    content: dict[str, Any] | None = None
    """Form mode, with ``accept``: the answer, fitting the request's schema."""


ElicitationFunc = Callable[[ElicitationRequest], Awaitable[ElicitationReply]]
"""Answers a server's elicitation request (a UI, a prompt, an approver)."""


def elicitation_request(
    server: str,
    params: types.ElicitRequestFormParams | types.ElicitRequestURLParams,
    ctx: ToolContext[Any] | None,
) -> ElicitationRequest:
    """The kode form of a server's ``elicitation/create`` parameters."""
    if isinstance(params, types.ElicitRequestURLParams):
        return ElicitationRequest(
            server=server,
            mode="url",
            message=params.message,
            url=params.url,
            elicitation_id=params.elicitation_id,
            ctx=ctx,
        )
    return ElicitationRequest(
        server=server,
        mode="form",
        message=params.message,
        schema=dict(params.requested_schema),
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
