"""Sampling: an MCP server asks the client's model to answer a conversation.

This module owns what a sampling request looks like in kode (`SamplingRequest`, with the
server's messages as kode `Message` objects), what answers it (`SamplingFunc`, returning text or
a `SamplingReply`), `model_sampler` (the answer of a kode `Model`, which is what an agent's
connection uses by default), and the translations to and from MCP's ``sampling/createMessage``.
Who is asked for approval, and which model answers by default, is `kode.mcp.answers`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types

from kode.models.base import Model, ModelRequest, ModelResponse, ModelSettings
from kode.models.messages import ContentBlock, ImageContent, ImageSource, Message, TextContent
from kode.tools.context import ToolContext

__all__ = [
    "SamplingFunc",
    "SamplingReply",
    "SamplingRequest",
    "model_sampler",
    "sampling_request",
    "sampling_result",
]

_STOP_REASONS = {
    "end_turn": "endTurn",
    "max_tokens": "maxTokens",
    "stop_sequence": "stopSequence",
    "tool_use": "toolUse",
}


@dataclass(kw_only=True, frozen=True, slots=True)
class SamplingRequest:
    """A server's request for a model's answer (MCP ``sampling/createMessage``)."""

    server: str
    """The server's name in kode."""
    messages: tuple[Message, ...]
    """The conversation to answer, as kode messages (text and images)."""
    system: str = ""
    """The system prompt the server asks for."""
    max_tokens: int = 1024
    """The most tokens the answer may have."""
    temperature: float | None = None
    """The temperature the server asks for, if any."""
    stop_sequences: tuple[str, ...] = ()
    """Where the server wants the answer to stop."""
    model_hints: tuple[str, ...] = ()
    """Model names the server would prefer, best first (a client may ignore them)."""
    ctx: ToolContext[Any] | None = field(default=None, compare=False)
    """The context of the kode call during which the server asked (`None`: outside a call)."""

    @property
    def text(self) -> str:
        """The conversation's text, one message a paragraph (images left out)."""
        return "\n\n".join(m.text for m in self.messages if m.text)


@dataclass(kw_only=True, frozen=True, slots=True)
class SamplingReply:
    """A model's answer to a `SamplingRequest`."""

    text: str
    """The answer."""
    model: str = ""
    """The model that answered."""
    stop_reason: str = "endTurn"
    """Why it stopped: ``endTurn``, ``maxTokens``, ``stopSequence``, or the provider's word."""


SamplingFunc = Callable[[SamplingRequest], Awaitable["str | SamplingReply"]]
"""Answers a server's sampling request: the text, or a `SamplingReply`."""


def model_sampler(model: Model) -> SamplingFunc:
    """A `SamplingFunc` that asks `model` (any kode `Model`) for the answer.

    Example:
        ```python
        import anyio
        from kode.mcp.sampling import SamplingRequest, model_sampler
        from kode.models import ScriptedModel
        from kode.models.messages import Message, TextContent

        sample = model_sampler(ScriptedModel(["Paris."]))
        question = Message(role="user", content=[TextContent(text="Capital of France?")])
        reply = anyio.run(sample, SamplingRequest(server="geo", messages=(question,)))
        assert reply.text == "Paris."
        ```
    """

    async def sample(request: SamplingRequest) -> SamplingReply:
        settings = ModelSettings(max_tokens=request.max_tokens, temperature=request.temperature)
        if request.stop_sequences:
            settings = ModelSettings(
                max_tokens=request.max_tokens,
                temperature=request.temperature,
                extra={"stop": list(request.stop_sequences)},
            )
        asked = ModelRequest(
            system=request.system, messages=list(request.messages), tools=[], settings=settings
        )
        response: ModelResponse | None = None
        async for event in model.stream(asked):
            if isinstance(event, ModelResponse):
                response = event
        if response is None:
            raise RuntimeError(f"model {model.name!r} ended without a response")
        return SamplingReply(
            text=response.message.text,
            model=response.model or model.name,
            stop_reason=_STOP_REASONS.get(response.stop_reason, response.stop_reason),
        )

    return sample


def _kode_content(block: Any) -> TextContent | ImageContent:
    if isinstance(block, types.TextContent):
        return TextContent(text=block.text)
    if isinstance(block, types.ImageContent):
        return ImageContent(source=ImageSource(media_type=block.mime_type, data=block.data))
    if isinstance(block, types.AudioContent):
        return TextContent(text=f"[audio ({block.mime_type}), which this model cannot hear]")
    return TextContent(text=f"[{type(block).__name__}, which kode does not pass to a model]")


def sampling_request(
    server: str, params: types.CreateMessageRequestParams, ctx: ToolContext[Any] | None
) -> SamplingRequest:
    """The kode form of a server's ``sampling/createMessage`` parameters."""
    messages: list[Message] = []
    for message in params.messages:
        blocks = message.content if isinstance(message.content, list) else [message.content]
        content: list[ContentBlock] = [_kode_content(b) for b in blocks] or [TextContent(text="")]
        if messages and messages[-1].role == message.role:  # providers want roles alternating
            messages[-1] = Message(role=message.role, content=[*messages[-1].content, *content])
        else:
            messages.append(Message(role=message.role, content=content))
    hints: tuple[str, ...] = ()
    if params.model_preferences is not None and params.model_preferences.hints:
        hints = tuple(h.name for h in params.model_preferences.hints if h.name)
    return SamplingRequest(
        server=server,
        messages=tuple(messages),
        system=params.system_prompt or "",
        max_tokens=params.max_tokens,
        temperature=params.temperature,
        stop_sequences=tuple(params.stop_sequences or ()),
        model_hints=hints,
        ctx=ctx,
    )


def sampling_result(reply: str | SamplingReply, *, default_model: str) -> types.CreateMessageResult:
    """The MCP result for what a `SamplingFunc` returned.

    Raises:
        TypeError: the function returned something else.
    """
    if isinstance(reply, str):
        reply = SamplingReply(text=reply, model=default_model)
    if not isinstance(reply, SamplingReply):
        raise TypeError(
            f"a sampling function must return a str or a SamplingReply, got {type(reply).__name__}"
        )
    return types.CreateMessageResult(
        role="assistant",
        content=types.TextContent(text=reply.text),
        model=reply.model or default_model,
        stop_reason=reply.stop_reason,
    )
