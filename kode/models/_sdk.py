"""What the provider models share: their SDK clients, settings and request fields.

`SDKModel` owns the clients' lives, the settings sent with every request, and how a request's
settings combine with them. Each provider module makes its own client and translates the
conversation.

An SDK's async client keeps its pooled connections bound to the event loop that opened them,
and `run_sync` (behind ``agent.send_sync``) runs every call in a new loop. So a model that makes
its own client makes one per event loop, and closes it when that loop ends: an async generator
started in the loop is parked until the loop finalizes it (``asyncio.run``, ``anyio.run`` and
``trio.run`` all finalize the async generators still alive when they end), and its ``finally``
closes the client while the loop can still run the close. A client passed in is the caller's: it
is used as it is, in whatever loop the model runs.
"""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import AsyncGenerator
from typing import Any, Generic, Self, TypeVar

from kode.models.base import ModelRequest

__all__ = ["SDKModel"]

ClientT = TypeVar("ClientT")


def _current_loop() -> object | None:
    """The event loop running in this thread (asyncio's loop or trio's token), or `None`."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        pass
    trio = sys.modules.get("trio")
    if trio is not None:
        try:
            token: object = trio.lowlevel.current_trio_token()
        except RuntimeError:
            pass
        else:
            return token
    return None


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
        self._given = client
        self._api_key = api_key
        self._base_url = base_url
        # The clients this model made, by event loop (`None`: made outside any loop), and the
        # parked generators that close them when their loop ends.
        self._clients: dict[object | None, ClientT] = {}
        self._keepers: dict[object, AsyncGenerator[None, None]] = {}
        # Loops in several threads may share the model. Reentrant: the garbage collector may
        # finalize a parked generator (whose cleanup takes the lock) while this thread holds it.
        self._lock = threading.RLock()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"

    def _make_client(self) -> ClientT:
        raise NotImplementedError

    @property
    def client(self) -> ClientT:
        """The SDK client for the running event loop.

        The client passed in when there was one; otherwise the one this model made for the
        running loop (made on first use, closed when the loop ends or by `aclose`). Outside any
        event loop: a client made for inspection, closed by `aclose`.
        """
        if self._given is not None:
            return self._given
        loop = _current_loop()
        with self._lock:
            found = self._clients.get(loop)
            if found is None:
                self._forget_closed_loops()
                found = self._clients[loop] = self._make_client()
            return found

    def _forget_closed_loops(self) -> None:
        # A loop closed without finalizing its async generators (``loop.close()`` by hand)
        # leaves a client nothing can close any more: drop it rather than keep it forever.
        for loop in [k for k in self._clients if isinstance(k, asyncio.AbstractEventLoop)]:
            if loop.is_closed():
                del self._clients[loop]
                self._keepers.pop(loop, None)

    async def _loop_client(self) -> ClientT:
        """`client`, closed when the running loop ends if this model made it."""
        client = self.client
        loop = _current_loop()
        if self._given is not None or loop is None:
            return client
        with self._lock:
            keeper = None
            if loop not in self._keepers:
                keeper = self._keepers[loop] = self._close_at_loop_end(loop, client)
        if keeper is not None:
            await keeper.asend(None)  # runs to its `yield`, in this loop: the loop now owns it
        return client

    async def _close_at_loop_end(self, loop: object, client: ClientT) -> AsyncGenerator[None, None]:
        try:
            yield
        finally:
            with self._lock:
                if self._clients.get(loop) is client:  # else `aclose` already took both
                    del self._clients[loop]
                    self._keepers.pop(loop, None)
            await client.close()  # type: ignore[attr-defined]

    async def aclose(self) -> None:
        """Close the clients this model made that can be closed here.

        That is the running loop's client and one made outside any loop. A client made in
        another event loop closes when that loop ends; a client passed in stays open.
        """
        loop = _current_loop()
        with self._lock:
            keeper = self._keepers.pop(loop, None) if loop is not None else None
            keys = [None] if keeper is not None else list(dict.fromkeys([loop, None]))
            clients = [self._clients.pop(k) for k in keys if k in self._clients]
        if keeper is not None:
            await keeper.aclose()
        for client in clients:
            await client.close()  # type: ignore[attr-defined]

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
