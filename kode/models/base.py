"""The `Model` protocol: what kode needs from an LLM provider, and the stream it yields.

This module owns the seam between the agent loop and providers. A model streams one response
for a request (system prompt, messages, tools); it yields `TextDelta`, `ThinkingDelta` and
`ToolInputDelta` events as they come (and a `ModelRetry` before each retry of a failed request)
and ends with exactly one `ModelResponse`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from kode.models.anthropic_context import ContextEdit, ContextEditing
from kode.models.messages import Message, Usage
from kode.tools.core import Tool
from kode.tools.errors import KodeError

__all__ = [
    "ContextEdit",
    "Model",
    "ModelError",
    "ModelEvent",
    "ModelRequest",
    "ModelResponse",
    "ModelRetry",
    "ModelSettings",
    "OutputFormat",
    "StopReason",
    "TextDelta",
    "ThinkingDelta",
    "ToolInputDelta",
    "supports_output_format",
]

StopReason = Literal["end_turn", "tool_use", "max_tokens", "stop_sequence", "refusal", "error"]
"""Why a response ended."""


class ModelError(KodeError):
    """A provider failed (HTTP error, malformed stream); the agent reports it as an error event."""

    def __init__(
        self,
        message: str,
        *,
        provider: str | None = None,
        status_code: int | None = None,
        retryable: bool = False,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.provider = provider
        """The provider that failed (``"anthropic"``, ``"openai"``, ``"gemini"``), when known."""
        self.status_code = status_code
        """The HTTP status of the failed request, when there was one (e.g. 401, 429, 500)."""
        self.retryable = retryable
        """Whether trying the same request again may succeed (a rate limit, an overloaded or
        unreachable server, a timeout), as the status and the server's headers say."""
        self.retry_after = retry_after
        """Seconds the server asked the client to wait before trying again, when it said."""


@dataclass(kw_only=True, frozen=True, slots=True)
class ModelSettings:
    """Generation settings passed to a provider."""

    max_tokens: int = 4096
    """The most tokens one response may have."""
    temperature: float | None = None
    """Sampling temperature, if set."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Provider-specific request fields, passed through."""


@dataclass(kw_only=True, frozen=True, slots=True)
class OutputFormat:
    """Structured output asked of the provider itself: the final text is JSON matching `schema`.

    An agent whose template sets ``output_type`` with ``output_mode="native"`` puts one on its
    requests when the model supports it (`Model.supports_output_format`); otherwise it asks
    for the output through a tool instead. Each provider model sends it in its own form:
    OpenAI's ``response_format`` (strict JSON schema whenever the schema allows it), the
    Responses API's ``text.format``, Anthropic's ``output_config.format``, Gemini's
    ``response_json_schema`` with ``response_mime_type: application/json``.
    """

    name: str
    """A name for the schema (OpenAI asks for one), e.g. ``"final_result"``."""
    schema: dict[str, Any]
    """The JSON schema of the output: always an object at the top level."""
    description: str = ""
    """What the output is, when the provider takes a description."""


@dataclass(kw_only=True, slots=True)
class ModelRequest:
    """One request: everything a model needs for one response."""

    system: str
    """The system prompt."""
    messages: Sequence[Message]
    """The conversation so far."""
    tools: Sequence[Tool[..., Any]]
    """The tools the model may call (each model renders them in its dialect)."""
    settings: ModelSettings = field(default_factory=ModelSettings)
    """Generation settings."""
    output: OutputFormat | None = None
    """Structured output the provider should enforce on the final text, if any."""
    deferred: Sequence[Tool[..., Any]] = ()
    """Deferred tools the provider's own tool search may load (not in `tools`).

    An agent fills it only for a model whose ``native_tool_search`` attribute is true
    (`AnthropicModel` or `OpenAIResponsesModel` made with ``tool_search=``): such a model
    sends these definitions marked ``defer_loading`` together with its provider's search
    tool, and the provider loads the ones its search finds. Otherwise the agent's own
    ``tool_search`` is in `tools` and this stays empty."""
    context_editing: ContextEditing | None = None
    """Server-side context editing the provider should apply to this request, when it offers
    it (a `kode.models.anthropic_context.ContextEditing`, from the template's context policy:
    `AnthropicModel` sends it; other models ignore it). `None`: the model's own setting."""


@dataclass(kw_only=True, slots=True)
class TextDelta:
    """A piece of text as it streams: from a model, and the same object in an agent's events."""

    text: str
    """The new text."""
    type: Literal["text_delta"] = "text_delta"


@dataclass(kw_only=True, slots=True)
class ThinkingDelta:
    """A piece of reasoning as it streams: from a model, and the same object in agent events."""

    thinking: str
    """The new reasoning text."""
    type: Literal["thinking_delta"] = "thinking_delta"


@dataclass(kw_only=True, slots=True)
class ToolInputDelta:
    """A piece of a tool call's arguments (JSON text) as it streams.

    Anthropic, OpenAI Chat Completions and the Responses API stream a call's arguments in
    pieces; Gemini sends each call whole, so `GeminiModel` yields none. The agent reads them
    for the typed output's `PartialOutput` events; the call itself is in the `ModelResponse`.
    """

    id: str
    """The call's id (as far as the provider has said it)."""
    name: str
    """The tool's name."""
    text: str
    """The new piece of the arguments."""


@dataclass(kw_only=True, slots=True)
class ModelRetry:
    """A request failed in a way worth retrying: the model waits `delay` seconds and retries.

    Provider models yield one before each retry (and the agent passes it on as an event), so a
    slow answer after a rate limit is visible instead of silent.
    """

    attempt: int
    """Which retry this is: 1 for the first."""
    max_retries: int
    """How many retries the model makes at most."""
    delay: float
    """Seconds waited before the retry (the server's ``retry-after`` when it sent one)."""
    error: ModelError = field(compare=False)
    """What failed."""
    message: str = ""
    """The failure, as text (`error`'s message)."""
    type: Literal["model_retry"] = "model_retry"

    def __post_init__(self) -> None:
        if not self.message:
            self.message = str(self.error)


@dataclass(kw_only=True, slots=True)
class ModelResponse:
    """The complete response: the assistant message, why it stopped, and usage."""

    message: Message
    """The assistant message (text, thinking and tool_use blocks)."""
    stop_reason: StopReason
    """Why it ended."""
    usage: Usage = field(default_factory=Usage)
    """Tokens used."""
    model: str = ""
    """The model that answered."""
    id: str = ""
    """The provider's id of the response (``msg_...``, ``chatcmpl-...``), when it sent one."""
    context_edits: tuple[ContextEdit, ...] = ()
    """What the provider's server-side context editing cleared from the request, if it did."""


ModelEvent = TextDelta | ThinkingDelta | ToolInputDelta | ModelRetry | ModelResponse
"""What `Model.stream` yields: deltas (and retries), then one `ModelResponse`."""


@runtime_checkable
class Model(Protocol):
    """An LLM provider: streams one response per request."""

    name: str
    """The model's name, for logs and state."""

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """Stream the response: deltas as they come, then exactly one `ModelResponse`.

        A model that retries a failed request yields a `ModelRetry` before each retry.

        Raises:
            ModelError: the provider failed.
        """
        ...


def supports_output_format(model: object, *, tools: bool) -> bool:
    """Whether `model` enforces a request's `OutputFormat` itself (`tools`: with tools sent).

    A model says so with a ``supports_output_format(*, tools: bool) -> bool`` method; a model
    without one does not.
    """
    method = getattr(model, "supports_output_format", None)
    return bool(method(tools=tools)) if callable(method) else False
