"""Models named by a string: ``"anthropic:claude-sonnet-4-6"``, ``"openai:gpt-4o"``, ...

This module owns the one reading of model strings, used by `Agent.create` (`model_from`) and
by the ``kode`` command (`model_from_environment`):

- ``"anthropic:<model>"`` is an `AnthropicModel`, ``"openai:<model>"`` an `OpenAIModel` (at
  ``OPENAI_BASE_URL`` when it is set: any server that speaks Chat Completions),
  ``"openai-responses:<model>"`` an `OpenAIResponsesModel` (the Responses API, also at
  ``OPENAI_BASE_URL`` when it is set), ``"google:<model>"`` a `GeminiModel`, and
  ``"scripted:<file>"`` a `ScriptedModel` playing the turns of a JSON file. The provider is
  the text before the first colon, so ``"openai:qwen3:8b"`` is the model ``qwen3:8b``.
- Only the command line reads a name without a provider (``--model gpt-4o``, or ``qwen3:8b``,
  whose ``qwen3`` is no provider): it goes to the provider the environment configures. In
  code, `model_from` refuses it, so an agent never depends on which keys happen to be set.

It does not own the models themselves, and it makes no request: an unknown model name or a
missing API key is reported by the provider at the first request.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from kode.models.base import Model

__all__ = [
    "DEFAULT_MODELS",
    "PROVIDERS",
    "import_sdk_soon",
    "model_from",
    "model_from_environment",
]

PROVIDERS = ("anthropic", "openai", "openai-responses", "google", "scripted")
"""The providers a model string may name, before its first colon."""

DEFAULT_MODELS = {"anthropic": "claude-sonnet-4-6", "openai": "gpt-4o-mini"}
"""The model the command line uses for a provider when no model is named."""

_FORMS = (
    "'anthropic:<model>', 'openai:<model>', 'openai-responses:<model>', 'google:<model>' or "
    "'scripted:<file.json>' (e.g. 'anthropic:claude-sonnet-4-6')"
)


def _split(text: str) -> tuple[str, str] | None:
    """``(provider, rest)`` when `text` starts with a known provider, else `None`."""
    provider, colon, rest = text.partition(":")
    if colon and provider in PROVIDERS:
        return provider, rest
    return None


def _named(provider: str, name: str, text: str, environ: Mapping[str, str]) -> Model:
    if not name.strip():
        raise ValueError(f"model {text!r} names no model after {provider + ':'!r}: use {_FORMS}")
    if provider == "anthropic":
        from kode.models.anthropic import AnthropicModel

        return AnthropicModel(name)
    if provider == "openai":
        from kode.models.openai import OpenAIModel

        return OpenAIModel(name, base_url=environ.get("OPENAI_BASE_URL") or None)
    if provider == "openai-responses":
        from kode.models.openai_responses import OpenAIResponsesModel

        return OpenAIResponsesModel(name, base_url=environ.get("OPENAI_BASE_URL") or None)
    if provider == "google":
        from kode.models.gemini import GeminiModel

        return GeminiModel(name)
    from kode.models.scripted import ScriptedModel

    return ScriptedModel.from_file(name)


def model_from(model: object) -> Model:
    """`model` itself if it is a `Model`, or the model a model string names.

    ``"anthropic:<model>"`` is an `AnthropicModel`, ``"openai:<model>"`` an `OpenAIModel`
    (Chat Completions), ``"openai-responses:<model>"`` an `OpenAIResponsesModel` (the Responses
    API) and ``"google:<model>"`` a `GeminiModel`, each with its default client (API key from
    the environment; the OpenAI models talk to ``OPENAI_BASE_URL`` when it is set);
    ``"scripted:<file>"`` is a `ScriptedModel` playing the turns of a JSON file (see
    `ScriptedModel.from_file`).

    Example:
        ```python
        from kode.models import OpenAIModel, model_from

        model = model_from("openai:gpt-4o")
        assert isinstance(model, OpenAIModel) and model.name == "gpt-4o"
        ```

    Raises:
        TypeError: `model` is neither a model nor a string.
        ValueError: the string names no provider or no model (the message shows the forms);
            a ``scripted:`` file that cannot be read or holds invalid turns (`ScriptError`).
    """
    if isinstance(model, str):
        parsed = _split(model)
        if parsed is None:
            raise ValueError(
                f"model {model!r} names no provider: use {_FORMS}, or pass a Model object. "
                "Only the kode command picks a provider from the environment."
            )
        return _named(*parsed, model, os.environ)
    stream = getattr(model, "stream", None)
    if not callable(stream):
        raise TypeError(
            f"model must be a Model (an object with an async stream(request) method) or a "
            f"model string like 'openai:gpt-4o', got {type(model).__name__}"
        )
    return model  # type: ignore[return-value]


def model_from_environment(
    name: str | None = None, *, environ: Mapping[str, str] | None = None
) -> Model:
    """The model the ``kode`` command's ``--model`` means.

    A string with a provider is read as `model_from` reads it, whatever the environment. A
    name without one (``gpt-4o``, ``qwen3:8b``), or no name at all (then ``KODE_MODEL``, else
    the provider's `DEFAULT_MODELS` entry), goes to the provider the environment configures:
    Anthropic when ``ANTHROPIC_API_KEY`` is set, else OpenAI (or the server at
    ``OPENAI_BASE_URL``) when ``OPENAI_API_KEY`` or ``OPENAI_BASE_URL`` is.

    Args:
        name: What ``--model`` said, if anything.
        environ: The environment to read (default: ``os.environ``).

    Raises:
        ValueError: a name without a provider when the environment configures none (the
            message says what to set), or what `model_from` raises for the string.
    """
    env = os.environ if environ is None else environ
    text = name or env.get("KODE_MODEL") or None
    parsed = _split(text) if text else None
    if parsed is not None:
        assert text is not None
        return _named(*parsed, text, env)
    if env.get("ANTHROPIC_API_KEY"):
        provider = "anthropic"
    elif env.get("OPENAI_API_KEY") or env.get("OPENAI_BASE_URL"):
        provider = "openai"
    else:
        what = (
            f"model {text!r} names no provider and the environment configures none"
            if text
            else "no model"
        )
        raise ValueError(
            f"{what}: set ANTHROPIC_API_KEY, or OPENAI_API_KEY / OPENAI_BASE_URL, or name the "
            f"model with its provider: {_FORMS}; a scripted file runs offline"
        )
    text = text or DEFAULT_MODELS[provider]
    return _named(provider, text, f"{provider}:{text}", env)


def import_sdk_soon(model: object) -> bool:
    """Start importing `model`'s provider SDK in a background thread, once.

    For a caller that knows a request will come (``kode run``, once ``--model`` is read): the
    SDK (seconds to import, for ``anthropic``) loads while the caller does other work, and the
    first request waits for that import instead of starting it. A model that is not a provider
    model (a scripted one) has nothing to import. See `kode.models._sdk_import.import_soon`.

    Returns:
        Whether an import was started.
    """
    from kode.models._sdk_import import import_soon

    return import_soon(model)
