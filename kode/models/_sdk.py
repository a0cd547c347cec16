"""What the provider models share: their SDK clients, settings, request options and retries.

`SDKModel` owns the clients' lives, the settings sent with every request, how a request's
settings combine with them, the options that are not request fields (``timeout``,
``max_retries``, and the bounds on a reply: ``max_reply_chars``, ``max_reply_bytes``,
``idle_timeout``, see `kode.models._limits`) and the retries of a request that failed before
its stream began (see `kode.models._retry`). Each provider module makes its own client and
translates the conversation.

kode retries, not the SDK: the clients a model makes are made with the SDK's own retries off,
and a client passed in is used through a copy with them off, so that every retry is seen (a
`ModelRetry` event) and follows one rule for every provider. Only the opening of a stream is
retried: once a response has started, a failure is raised, since what was already streamed
cannot be taken back.

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
import math
import sys
import threading
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, Self, TypeVar

import anyio

from kode.models._limits import (
    DEFAULT_IDLE_TIMEOUT,
    DEFAULT_MAX_REPLY_BYTES,
    DEFAULT_MAX_REPLY_CHARS,
    ReplyBudget,
    ReplyLimits,
    check_count,
    check_seconds,
)
from kode.models._retry import retry_event
from kode.models.base import ModelError, ModelRequest, ModelRetry

__all__ = ["DEFAULT_MAX_RETRIES", "SDKModel"]

ClientT = TypeVar("ClientT")
StreamT = TypeVar("StreamT")

DEFAULT_MAX_RETRIES = 2
"""How many times a model retries a request that failed in a way worth retrying."""

# Options a request's ``settings.extra`` may carry that are not request fields.
_OPTIONS = ("timeout", "max_retries", "max_reply_chars", "max_reply_bytes", "idle_timeout")


@dataclass(kw_only=True, frozen=True, slots=True)
class RequestOptions:
    """How one request is sent: not part of what is sent."""

    timeout: float | None
    """Seconds to wait for the connection and for each read (`None`: the SDK's default)."""
    max_retries: int
    """How many retries at most."""
    limits: ReplyLimits
    """The bounds on the reply."""


@dataclass(slots=True)
class Opened(Generic[StreamT]):
    """The stream a request opened (what `SDKModel._open` yields last)."""

    stream: StreamT


def _check_timeout(owner: str, value: object) -> float | None:
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not value > 0
        or not math.isfinite(value)
    ):
        raise ValueError(
            f"{owner}: timeout must be a finite number of seconds greater than 0 (or None for "
            f"the SDK's default), got {value!r}"
        )
    return float(value)


def _check_max_retries(owner: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(
            f"{owner}: max_retries must be a whole number of retries, 0 or more, got {value!r}"
        )
    return value


def _refuse_stream(owner: str, settings: dict[str, Any]) -> None:
    if "stream" in settings:
        raise ValueError(
            f"{owner}: 'stream' cannot be set in model settings: kode always streams the "
            f"response (remove stream={settings['stream']!r})"
        )


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

    # The provider's name in errors (``ModelError.provider``), and how messages name it.
    _provider = ""
    _label = ""

    @property
    def provider(self) -> str:
        """The provider's name, as errors name it (``anthropic``, ``openai``, ``gemini``)."""
        return self._provider

    def __init__(
        self,
        model: str,
        *,
        client: ClientT | None,
        api_key: str | None,
        base_url: str | None,
        max_tokens: int | None,
        settings: dict[str, Any],
        timeout: float | None = None,
        max_retries: int = DEFAULT_MAX_RETRIES,
        max_reply_chars: int = DEFAULT_MAX_REPLY_CHARS,
        max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES,
        idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
    ) -> None:
        owner = type(self).__name__
        if client is not None and (api_key is not None or base_url is not None):
            raise ValueError(f"{owner}: pass either client or api_key/base_url, not both")
        _refuse_stream(owner, settings)
        self.timeout = _check_timeout(owner, timeout)
        """Seconds to wait for the connection and for each read of the response (`None`: the
        SDK's default). A request's ``settings.extra["timeout"]`` takes precedence."""
        self.max_retries = _check_max_retries(owner, max_retries)
        """How many times a request that failed in a way worth retrying is retried (a
        `ModelRetry` event before each). A request's ``settings.extra["max_retries"]`` takes
        precedence."""
        self.limits = ReplyLimits(
            max_chars=check_count(owner, "max_reply_chars", max_reply_chars),
            max_bytes=check_count(owner, "max_reply_bytes", max_reply_bytes),
            idle_timeout=check_seconds(owner, "idle_timeout", idle_timeout),
        )
        """The bounds on each reply (``max_reply_chars``, ``max_reply_bytes``,
        ``idle_timeout``); a request's ``settings.extra`` takes precedence, key by key."""
        self.name = model
        """The model name."""
        self.max_tokens = max_tokens
        """The most tokens per response (`None`: the request's ``settings.max_tokens``)."""
        self.settings: dict[str, Any] = dict(settings)
        """Request fields sent with every request."""
        self._given = client
        self._given_for_requests: ClientT | None = None
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

    @property
    def base_url(self) -> str | None:
        """The API's address this model was given (`None`: the SDK's default, or a client's)."""
        return self._base_url

    def _make_client(self) -> ClientT:
        raise NotImplementedError

    def _without_retries(self, client: ClientT) -> ClientT:
        """`client` with the SDK's own retries off (a client passed in keeps its settings)."""
        return client

    async def _close_client(self, client: ClientT) -> None:
        await client.close()  # type: ignore[attr-defined]

    def _model_error(self, exc: Exception) -> ModelError:
        """`exc` (an SDK's or a transport's failure) as a `ModelError`."""
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
        """`client` for a request, closed when the running loop ends if this model made it."""
        if self._given is not None:
            if self._given_for_requests is None:
                self._given_for_requests = self._without_retries(self._given)
            return self._given_for_requests
        client = self.client
        loop = _current_loop()
        if loop is None:
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
            await self._close_client(client)

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
            await self._close_client(client)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def _extra_body(self, request: ModelRequest) -> dict[str, Any]:
        """`settings`, then the request's temperature and extra fields (which win).

        ``timeout``, ``max_retries`` and the reply limits in the request's extra fields are
        options (see `_options`), not request fields: they are left out.

        Raises:
            ModelError: the request's settings set ``stream``.
        """
        extra: dict[str, Any] = dict(self.settings)
        if request.settings.temperature is not None:
            extra["temperature"] = request.settings.temperature
        given = request.settings.extra
        if "stream" in given:
            raise ModelError(
                f"{type(self).__name__}: 'stream' cannot be set in model settings: kode always "
                f"streams the response (remove stream={given['stream']!r} from the settings)"
            )
        extra.update((k, v) for k, v in given.items() if k not in _OPTIONS)
        return extra

    def _options(self, request: ModelRequest) -> RequestOptions:
        """The timeout, retries and reply limits for `request` (the model's, or ``extra``'s).

        Raises:
            ModelError: an option in the request's settings is invalid.
        """
        given = request.settings.extra
        if not any(k in given for k in _OPTIONS):
            return RequestOptions(
                timeout=self.timeout, max_retries=self.max_retries, limits=self.limits
            )
        owner = f"{type(self).__name__} (model settings)"
        mine = self.limits
        try:
            timeout = _check_timeout(owner, given.get("timeout", self.timeout))
            retries = _check_max_retries(owner, given.get("max_retries", self.max_retries))
            limits = ReplyLimits(
                max_chars=check_count(
                    owner, "max_reply_chars", given.get("max_reply_chars", mine.max_chars)
                ),
                max_bytes=check_count(
                    owner, "max_reply_bytes", given.get("max_reply_bytes", mine.max_bytes)
                ),
                idle_timeout=check_seconds(
                    owner, "idle_timeout", given.get("idle_timeout", mine.idle_timeout)
                ),
            )
        except ValueError as exc:
            raise ModelError(str(exc)) from None
        return RequestOptions(timeout=timeout, max_retries=retries, limits=limits)

    def _budget(self, options: RequestOptions) -> ReplyBudget:
        """A fresh budget for one reply, named for this model's provider."""
        return ReplyBudget(
            options.limits, provider=self._provider, label=self._label, owner=type(self).__name__
        )

    async def _open(
        self,
        options: RequestOptions,
        open_stream: Callable[[ClientT], Awaitable[StreamT]],
    ) -> AsyncIterator[ModelRetry | Opened[StreamT]]:
        """Open a response stream, retrying as `options` allow.

        Yields a `ModelRetry` before each retry, then the `Opened` stream.

        Raises:
            ModelError: the request failed and is not retried (any more).
        """
        retries = 0
        while True:
            try:
                client = await self._loop_client()
                stream = await open_stream(client)
            except Exception as exc:
                error = self._model_error(exc)
                event = retry_event(error, retries, options.max_retries)
                if event is None:
                    if error is exc:
                        raise
                    raise error from exc
            else:
                yield Opened(stream)
                return
            retries += 1
            yield event
            await anyio.sleep(event.delay)

    def _max_tokens(self, request: ModelRequest) -> int:
        return request.settings.max_tokens if self.max_tokens is None else self.max_tokens
