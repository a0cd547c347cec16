"""Models named by a string: ``"anthropic:claude-sonnet-4-5"``, ``"openai:gpt-4o"``.

This module owns `model_from`, which `Agent.create` uses for its ``model`` argument: a
`Model` passes through, a provider model string becomes that provider's model, anything else
is a `TypeError` at once (not an error at the first request).
"""

from __future__ import annotations

from kode.models.base import Model

__all__ = ["model_from"]


def model_from(model: object) -> Model:
    """`model` itself if it is a `Model`, or the model a provider model string names.

    ``"anthropic:<model>"`` is an `AnthropicModel`, ``"openai:<model>"`` an `OpenAIModel`,
    each with its default client (API key and address from the environment).

    Raises:
        TypeError: `model` is neither a model nor such a string (the message shows the forms).
    """
    if isinstance(model, str):
        provider, _, name = model.partition(":")
        if provider == "anthropic" and name:
            from kode.models.anthropic import AnthropicModel

            return AnthropicModel(name)
        if provider == "openai" and name:
            from kode.models.openai import OpenAIModel

            return OpenAIModel(name)
        raise TypeError(
            f"model {model!r} is not a provider model string: use 'anthropic:<model>' or "
            "'openai:<model>' (e.g. 'anthropic:claude-sonnet-4-5'), or pass a Model object"
        )
    stream = getattr(model, "stream", None)
    if not callable(stream):
        raise TypeError(
            f"model must be a Model (an object with an async stream(request) method) or a "
            f"provider model string like 'openai:gpt-4o', got {type(model).__name__}"
        )
    return model  # type: ignore[return-value]
