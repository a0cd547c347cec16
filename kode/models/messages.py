"""Messages and content blocks: the conversation, Anthropic-style, as pydantic models.

This module owns the internal form of a conversation. Providers translate it at the edge
(`kode.models.anthropic`, `kode.models.openai`); everything inside kode speaks this form.
A message is a role and a list of blocks: ``text``, ``image``, ``thinking``, ``tool_use``,
``tool_result`` and ``provider`` (a provider's own block, kept to be sent back to it).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

__all__ = [
    "ContentBlock",
    "ImageContent",
    "ImageSource",
    "Message",
    "ProviderContent",
    "TextContent",
    "ThinkingContent",
    "ToolResultContent",
    "ToolUseContent",
    "Usage",
]

_CONFIG = ConfigDict(extra="forbid")


class TextContent(BaseModel):
    """Text."""

    model_config = _CONFIG
    type: Literal["text"] = "text"
    text: str
    """The text."""


class ImageSource(BaseModel):
    """Base64 image data."""

    model_config = _CONFIG
    type: Literal["base64"] = "base64"
    media_type: str
    """The MIME type, e.g. ``image/png``."""
    data: str
    """The image, base64-encoded."""


class ImageContent(BaseModel):
    """An image."""

    model_config = _CONFIG
    type: Literal["image"] = "image"
    source: ImageSource
    """The image data."""


class ThinkingContent(BaseModel):
    """A model's visible reasoning (kept so it can be sent back unchanged)."""

    model_config = _CONFIG
    type: Literal["thinking"] = "thinking"
    thinking: str
    """The reasoning text."""
    signature: str | None = None
    """The provider's signature over it, when it gives one."""
    provider: str | None = None
    """Whose `signature` it is, when not Anthropic's: ``"gemini"`` (a thought signature) or
    ``"openai"`` (an OpenAI Responses reasoning item). Each model sends back only the signed
    thinking of its own provider."""


class ToolUseContent(BaseModel):
    """The model asks for a tool call."""

    model_config = _CONFIG
    type: Literal["tool_use"] = "tool_use"
    id: str
    """The call's id; the `ToolResultContent` answering it carries the same id."""
    name: str
    """The tool's name, as the model wrote it."""
    input: dict[str, Any] | str = Field(default_factory=dict)
    """The arguments; a string when the model sent text that is not a JSON object."""


class ToolResultContent(BaseModel):
    """The answer to one `ToolUseContent`."""

    model_config = _CONFIG
    type: Literal["tool_result"] = "tool_result"
    tool_use_id: str
    """The id of the call it answers."""
    content: list[TextContent | ImageContent] = Field(default_factory=list)
    """What the model sees."""
    is_error: bool = False
    """Whether the call failed."""

    @property
    def text(self) -> str:
        """The text blocks joined with newlines."""
        return "\n".join(b.text for b in self.content if isinstance(b, TextContent))


class ProviderContent(BaseModel):
    """A provider's own block, kept as it came so it can be sent back to that provider.

    A tool that runs on the provider's side answers inside the model's turn: Anthropic's tool
    search sends a ``server_tool_use`` block and a ``tool_search_tool_result`` block (whose
    ``tool_reference`` entries name the deferred tools it loaded); the Responses API's hosted
    tool search sends ``tool_search_call`` and ``tool_search_output`` items. kode runs nothing
    for them. The model of the same provider sends them back with the history (the provider
    needs them to keep what they loaded); other providers leave them out.
    """

    model_config = _CONFIG
    type: Literal["provider"] = "provider"
    provider: str
    """Whose block it is: ``"anthropic"`` or ``"openai"`` (the Responses API)."""
    data: dict[str, Any]
    """The block (or output item) as the provider sent it, in its JSON form."""


ContentBlock = Annotated[
    TextContent
    | ImageContent
    | ThinkingContent
    | ToolUseContent
    | ToolResultContent
    | ProviderContent,
    Field(discriminator="type"),
]
"""Any block of a message."""


class Message(BaseModel):
    """One message of a conversation."""

    model_config = _CONFIG
    role: Literal["user", "assistant"]
    """Who speaks."""
    content: list[ContentBlock]
    """The blocks, in order."""

    @classmethod
    def user(cls, text: str) -> Message:
        """A user message with one text block."""
        return cls(role="user", content=[TextContent(text=text)])

    @property
    def text(self) -> str:
        """The text blocks joined (thinking, tools and images left out)."""
        return "".join([b.text for b in self.content if isinstance(b, TextContent)])

    @property
    def tool_uses(self) -> list[ToolUseContent]:
        """The tool calls in this message, in order."""
        return [b for b in self.content if isinstance(b, ToolUseContent)]


class Usage(BaseModel):
    """Tokens used, as the provider reports them."""

    model_config = _CONFIG
    input_tokens: int = 0
    """Tokens read."""
    output_tokens: int = 0
    """Tokens written."""
    cache_read_input_tokens: int = 0
    """Of `input_tokens`, those read from the provider's prompt cache (billed at a fraction of
    the price)."""
    cache_creation_input_tokens: int = 0
    """Of `input_tokens`, those written to the provider's prompt cache (billed at a premium, so
    that later requests can read them)."""

    @model_serializer(mode="wrap")
    def _without_empty_cache_counts(self, handler: SerializerFunctionWrapHandler) -> Any:
        # Saved without the cache counts when there are none, so the JSON of a state or a
        # session record is what it was before they existed (and most providers report none).
        out = handler(self)
        if isinstance(out, dict):
            for name in ("cache_read_input_tokens", "cache_creation_input_tokens"):
                if not out.get(name, 1):
                    del out[name]
        return out

    def __repr_args__(self) -> Any:
        # The cache counts are shown only when there are some: most providers report none.
        for name, value in super().__repr_args__():
            if value or not (name or "").startswith("cache_"):
                yield name, value

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_input_tokens=self.cache_read_input_tokens + other.cache_read_input_tokens,
            cache_creation_input_tokens=(
                self.cache_creation_input_tokens + other.cache_creation_input_tokens
            ),
        )
