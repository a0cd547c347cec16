"""Image generation providers: the seam ``image_generate`` asks, and the OpenAI images API."""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import anyio

from kode.extras import install_hint
from kode.tools.errors import ToolError, ToolErrorType

__all__ = ["GeneratedImage", "ImageProvider", "OpenAIImages"]


@dataclass(frozen=True, slots=True)
class GeneratedImage:
    """One image a provider made."""

    data: bytes
    """The image bytes (PNG, JPEG or WebP)."""
    revised_prompt: str | None = None
    """The prompt as the provider rewrote it, when it says."""


@runtime_checkable
class ImageProvider(Protocol):
    """What ``image_generate`` asks for images: set one with ``IMAGES.set(agent.services, p)``."""

    name: str
    """Shown in results and errors, e.g. ``"OpenAI"``."""

    async def generate(self, prompt: str, *, size: str, count: int) -> list[GeneratedImage]:
        """`count` images for `prompt` of `size` (``"1024x1024"`` or ``"auto"``).

        Raises:
            ToolError: the provider refused or failed, saying why.
        """
        ...


class OpenAIImages:
    """The OpenAI images API (``POST /v1/images/generations``), through the ``openai`` SDK.

    Args:
        model: The image model (default ``gpt-image-1``).
        base_url: The API's base URL (default: ``OPENAI_BASE_URL``, else OpenAI's).
        api_key: The key (default: ``OPENAI_API_KEY``).
        timeout: Seconds one request may take.
    """

    name = "OpenAI"

    def __init__(
        self,
        model: str = "gpt-image-1",
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 120.0,
    ) -> None:
        self.model = model
        self.base_url = base_url
        self.api_key = api_key
        self.timeout = timeout

    def _client(self) -> Any:
        try:
            import openai
        except ImportError as exc:
            if (exc.name or "").split(".")[0] != "openai":
                raise
            raise ToolError(
                "image_generate with OpenAI needs the openai package, which is not installed: "
                f"{install_hint('openai')}.",
                type=ToolErrorType.EXECUTION_FAILED,
                details={"missing": "openai"},
            ) from None
        try:
            return openai.AsyncOpenAI(
                base_url=self.base_url, api_key=self.api_key, timeout=self.timeout, max_retries=0
            )
        except openai.OpenAIError as exc:
            raise ToolError(
                f"image_generate cannot reach OpenAI: {exc} Set OPENAI_API_KEY, or give "
                "OpenAIImages(api_key=...).",
                type=ToolErrorType.EXECUTION_FAILED,
            ) from None

    async def generate(self, prompt: str, *, size: str, count: int) -> list[GeneratedImage]:
        """`count` images from ``/images/generations``, asked as base64 (``b64_json``)."""
        # Importing openai and making its client take a quarter of a second the first time:
        # not in the event loop. Says how to install openai when it is missing.
        client = await anyio.to_thread.run_sync(self._client)
        import openai

        extra: dict[str, Any] = {}
        if self.model.startswith("dall-e"):
            extra["response_format"] = "b64_json"  # gpt-image models always answer in base64
        try:
            async with client:
                answer = await client.images.generate(
                    model=self.model, prompt=prompt, size=size, n=count, **extra
                )
        except openai.APIStatusError as exc:
            raise ToolError(
                f"OpenAI refused the image request (HTTP {exc.status_code}): {_message(exc)}",
                type=ToolErrorType.EXECUTION_FAILED,
                details={"status": exc.status_code},
            ) from None
        except openai.APIError as exc:
            raise ToolError(
                f"The image request to OpenAI failed: {exc}",
                type=ToolErrorType.EXECUTION_FAILED,
            ) from None
        images: list[GeneratedImage] = []
        for item in answer.data or []:
            if not item.b64_json:
                raise ToolError(
                    "OpenAI answered without base64 image data (b64_json); kode does not "
                    "download image URLs.",
                    type=ToolErrorType.EXECUTION_FAILED,
                )
            try:
                data = base64.b64decode(item.b64_json, validate=True)
            except (binascii.Error, ValueError):
                raise ToolError(
                    "OpenAI answered with b64_json that is not valid base64.",
                    type=ToolErrorType.EXECUTION_FAILED,
                ) from None
            images.append(GeneratedImage(data=data, revised_prompt=item.revised_prompt))
        return images


def _message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return str(inner["message"])
    return str(exc)
