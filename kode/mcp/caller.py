"""What a tool served over MCP gets when it asks (`ctx.elicit`, `ctx.sample`): the client's answer.

This module owns `ClientCaller`, the `CALLER` service `kode.mcp.server.ToolServer` gives the
tools it serves: a tool's ``ctx.elicit`` becomes an ``elicitation/create`` request to the MCP
client and ``ctx.sample`` a ``sampling/createMessage``, each tied to the ``tools/call`` that is
running (``related_request_id``). The server's services are shared by every call, so the call
in progress is found through a context variable that `ToolServer` sets around each call. A call
run as an MCP task has answered its request already: its questions go on the connection's own
channel, tied to the task (``_meta`` ``io.modelcontextprotocol/related-task``). On the
2026-07-28 protocol a question is the call's ``input_required`` result (`kode.mcp.rounds`).
"""

from __future__ import annotations

import contextvars
from typing import Any, TypeVar

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata

from kode.mcp.rounds import CURRENT_ROUNDS
from kode.tools.asking import ElicitationReply, ElicitationRequest, SampleRequest
from kode.tools.errors import ToolError, ToolErrorType

ResultT = TypeVar("ResultT", bound=types.Result)

__all__ = ["CURRENT_REQUEST", "CURRENT_TASK", "ClientCaller"]

CURRENT_REQUEST: contextvars.ContextVar[ServerRequestContext[Any, Any] | None]
CURRENT_REQUEST = contextvars.ContextVar("kode_mcp_current_request", default=None)
"""The ``tools/call`` request being served in this task (set by `ToolServer`)."""
CURRENT_TASK: contextvars.ContextVar[str | None]
CURRENT_TASK = contextvars.ContextVar("kode_mcp_current_task", default=None)
"""The id of the MCP task the call runs as, if it does (set by `kode.mcp.served_tasks`)."""
_RELATED_TASK = "io.modelcontextprotocol/related-task"


def _failed(text: str) -> ToolError:
    return ToolError(text, type=ToolErrorType.EXECUTION_FAILED)


class ClientCaller:
    """The MCP client of the call in progress, as a `kode.tools.asking.ToolCaller`."""

    def _request(self, request: ElicitationRequest | SampleRequest, what: str) -> Any:
        current = CURRENT_REQUEST.get()
        if current is None:
            raise _failed(
                f"Tool '{request.tool_name}' {what} outside a call from an MCP client (in a "
                "thread of its own?): ctx.elicit and ctx.sample work in the tool's own task."
            )
        return current

    def _check(self, current: Any, capability: types.ClientCapabilities, what: str) -> None:
        session = current.session
        declared = session.client_capabilities
        if declared is None or not session.check_client_capability(capability):
            raise _failed(f"The MCP client does not {what} (it did not declare it).")

    async def _send(self, current: Any, request: Any, result_type: type[ResultT]) -> ResultT:
        """Send a request to the client: on the call's request, or, for a task, the connection.

        On the 2026-07-28 protocol there is no such channel: the question becomes the call's
        ``input_required`` result (`kode.mcp.rounds`).
        """
        rounds = CURRENT_ROUNDS.get()
        if rounds is not None:
            return await rounds.ask(request, result_type)
        task_id = CURRENT_TASK.get()
        if task_id is None:
            sent: ResultT = await current.session.send_request(
                request,
                result_type,
                metadata=ServerMessageMetadata(related_request_id=current.request_id),
            )
            return sent
        # without related_request_id the SDK sends on the connection's standalone channel
        params = request.params.model_dump(by_alias=True, mode="json", exclude_none=True)
        params["_meta"] = {**params.get("_meta", {}), _RELATED_TASK: {"taskId": task_id}}
        tied = request.model_copy(
            update={"params": type(request.params).model_validate(params, by_name=False)}
        )
        standalone: ResultT = await current.session.send_request(tied, result_type)
        return standalone

    async def elicit(self, request: ElicitationRequest) -> ElicitationReply:
        """Send ``elicitation/create`` to the client and return its answer.

        Raises:
            ToolError: the client does not answer elicitations (of this mode), or failed.
        """
        current = self._request(request, "asked the user a question")
        if request.mode == "url":
            wanted = types.ElicitationCapability(url=types.UrlElicitationCapability())
            params: types.ElicitRequestFormParams | types.ElicitRequestURLParams
            params = types.ElicitRequestURLParams(
                message=request.message,
                url=request.url or "",
                elicitation_id=request.elicitation_id or "",
            )
        else:
            wanted = types.ElicitationCapability()
            params = types.ElicitRequestFormParams(
                message=request.message, requested_schema=request.schema or {}
            )
        self._check(current, types.ClientCapabilities(elicitation=wanted), "answer elicitations")
        try:
            result = await self._send(
                current, types.ElicitRequest(params=params), types.ElicitResult
            )
        except MCPError as exc:
            raise _failed(f"The MCP client refused the question: {exc.message}") from None
        return ElicitationReply(action=result.action, content=result.content)

    async def sample(self, request: SampleRequest) -> str:
        """Send ``sampling/createMessage`` to the client and return the text of its answer.

        Raises:
            ToolError: the client does not sample, refused, or answered without text.
        """
        current = self._request(request, "asked for a model's answer")
        self._check(
            current, types.ClientCapabilities(sampling=types.SamplingCapability()), "sample"
        )
        params = types.CreateMessageRequestParams(
            messages=[
                types.SamplingMessage(role=role, content=types.TextContent(text=text))
                for role, text in request.messages
            ],
            system_prompt=request.system or None,
            max_tokens=request.max_tokens,
            temperature=request.temperature,
        )
        try:
            result = await self._send(
                current, types.CreateMessageRequest(params=params), types.CreateMessageResult
            )
        except MCPError as exc:
            raise _failed(f"The MCP client refused to sample: {exc.message}") from None
        blocks = result.content if isinstance(result.content, list) else [result.content]
        texts = [b.text for b in blocks if isinstance(b, types.TextContent)]
        if not texts:
            raise _failed("The MCP client's model answered without text.")
        return "".join(texts)
