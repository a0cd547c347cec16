"""Models: the `Model` protocol, messages, provider dialects and offline models.

`AnthropicModel`, `OpenAIModel`, `OpenAIResponsesModel` and `GeminiModel` import their SDKs
(the extras ``anthropic``, ``openai`` and ``google``) when the first request needs them, in a
worker thread: importing kode or making a model imports none.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kode.models.base import (
    ContextEdit,
    Model,
    ModelError,
    ModelEvent,
    ModelRequest,
    ModelResponse,
    ModelRetry,
    ModelSettings,
    OutputFormat,
    StopReason,
    TextDelta,
    ThinkingDelta,
    ToolInputDelta,
    supports_output_format,
)
from kode.models.messages import (
    ContentBlock,
    ImageContent,
    ImageSource,
    Message,
    ProviderContent,
    TextContent,
    ThinkingContent,
    ToolResultContent,
    ToolUseContent,
    Usage,
)
from kode.models.resolve import model_from, model_from_environment
from kode.models.scripted import FunctionModel, ScriptedModel, ScriptedTurn, tool_use

if TYPE_CHECKING:
    from kode.models.anthropic import AnthropicModel
    from kode.models.gemini import GeminiModel
    from kode.models.openai import OpenAIModel
    from kode.models.openai_responses import OpenAIResponsesModel

__all__ = [
    "AnthropicModel",
    "ContentBlock",
    "ContextEdit",
    "FunctionModel",
    "GeminiModel",
    "ImageContent",
    "ImageSource",
    "Message",
    "Model",
    "ModelError",
    "ModelEvent",
    "ModelRequest",
    "ModelResponse",
    "ModelRetry",
    "ModelSettings",
    "OpenAIModel",
    "OpenAIResponsesModel",
    "OutputFormat",
    "ProviderContent",
    "ScriptedModel",
    "ScriptedTurn",
    "StopReason",
    "TextContent",
    "TextDelta",
    "ThinkingContent",
    "ThinkingDelta",
    "ToolInputDelta",
    "ToolResultContent",
    "ToolUseContent",
    "Usage",
    "model_from",
    "model_from_environment",
    "supports_output_format",
    "tool_use",
]


def __getattr__(name: str) -> Any:
    if name == "AnthropicModel":
        from kode.models.anthropic import AnthropicModel

        return AnthropicModel
    if name == "OpenAIModel":
        from kode.models.openai import OpenAIModel

        return OpenAIModel
    if name == "OpenAIResponsesModel":
        from kode.models.openai_responses import OpenAIResponsesModel

        return OpenAIResponsesModel
    if name == "GeminiModel":
        from kode.models.gemini import GeminiModel

        return GeminiModel
    raise AttributeError(f"module 'kode.models' has no attribute {name!r}")
