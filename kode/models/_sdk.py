"""What the provider models share: their SDK client, settings and request fields.

`SDKModel` owns the client's life (given, or made on first use and closed by `aclose`), the
settings sent with every request, and how a request's settings combine with them. Each
provider module makes its own client and translates the conversation.
"""

from __future__ import annotations

from typing import Any, Generic, Self, TypeVar

from kode.models.base import ModelRequest

__all__ = ["SDKModel"]

ClientT = TypeVar("ClientT")


class SDKModel(Generic[ClientT]):
    """A model behind a provider SDK's async client (a base class; not public API)."""

    def __init__(
        self,
        model: str,
        *,
        client: ClientT | None,
        api_key: str | None,
        base_url: str | None,
        max_tokens: int | None,
        settings: dict[str, Any],
    ) -> None:
        if client is not None and (api_key is not None or base_url is not None):
            raise ValueError(
                f"{type(self).__name__}: pass either client or api_key/base_url, not both"
            )
        self.name = model
        """The model name."""
        self.max_tokens = max_tokens
        """The most tokens per response (`None`: the request's ``settings.max_tokens``)."""
        self.settings: dict[str, Any] = dict(settings)
        """Request fields sent with every request."""
        self._client = client
        self._owns_client = client is None
        self._api_key = api_key
        self._base_url = base_url

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"

    def _make_client(self) -> ClientT:
        raise NotImplementedError

    @property
    def client(self) -> ClientT:
        """The SDK client (made on first use when none was given)."""
        if self._client is None:
            self._client = self._make_client()
        return self._client

    async def aclose(self) -> None:
        """Close the SDK client if this model made it (a client passed in stays open)."""
        if self._owns_client and self._client is not None:
            await self._client.close()  # type: ignore[attr-defined]
            self._client = None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def _extra_body(self, request: ModelRequest) -> dict[str, Any]:
        """`settings`, then the request's temperature and extra fields (which win)."""
        extra: dict[str, Any] = dict(self.settings)
        if request.settings.temperature is not None:
            extra["temperature"] = request.settings.temperature
        extra.update(request.settings.extra)
        return extra

    def _max_tokens(self, request: ModelRequest) -> int:
        return request.settings.max_tokens if self.max_tokens is None else self.max_tokens
