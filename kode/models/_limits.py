"""Bounds on one reply of a provider: its size, its longest line, and its silences.

A provider's reply is untrusted input: a broken or hostile endpoint (a proxy, a self-hosted
server, a ``base_url`` a configuration points elsewhere) can stream text without end, send one
line of hundreds of megabytes, or keep a connection open with keep-alive comments and never
say anything. This module owns the limits a provider model puts on each reply and the errors
that name them:

- ``max_reply_chars``: the characters of text, thinking and tool-call arguments one reply may
  hold (`ReplyBudget.add`, called by each model as its assembler takes a piece);
- ``idle_timeout``: the seconds the stream may go without progress, a piece that adds to the
  reply (`ReplyBudget.next`): keep-alive comments, pings and events that add nothing do not
  count, so a drip of them does not keep a reply alive;
- ``max_reply_bytes``: the bytes of the HTTP response body (decoded), and no line of it longer
  than `ReplyLimits.max_line_bytes`, counted as the SDK reads them (`guard_response`), before
  its server-sent-events decoder buffers a line: the only place a 200 MB line can be stopped.

A limit crossed raises a `ModelError` (not retried) that names the limit and how to raise it.
Inside an SDK the error may come back wrapped in the SDK's own connection error: `limit_error`
finds it again in the chain of causes.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn, TypeAlias, TypeVar

import anyio

from kode.models.base import ModelError, TextDelta, ThinkingDelta, ToolInputDelta

__all__ = [
    "DEFAULT_IDLE_TIMEOUT",
    "DEFAULT_MAX_REPLY_BYTES",
    "DEFAULT_MAX_REPLY_CHARS",
    "ReplyBudget",
    "ReplyLimits",
    "Guard",
    "WireLimits",
    "bounded_deltas",
    "give_up",
    "guard_response",
    "limit_error",
]

T = TypeVar("T")

Delta: TypeAlias = TextDelta | ThinkingDelta | ToolInputDelta
"""A piece of a reply a model yields as it streams."""

_ONE = (TextDelta, ThinkingDelta, ToolInputDelta)

DEFAULT_MAX_REPLY_CHARS = 4_000_000
"""The most characters of text, thinking and tool-call arguments in one reply: some 1 million
tokens, eight times the longest output a current model may write (128,000 tokens)."""

DEFAULT_MAX_REPLY_BYTES = 256 * 2**20
"""The most bytes (256 MiB) of one reply's HTTP body: a reply of `DEFAULT_MAX_REPLY_CHARS`
characters in one-token events, each wrapped in some 300 bytes of JSON, stays below it."""

DEFAULT_IDLE_TIMEOUT = 600.0
"""Seconds a reply may go without progress: the SDKs' own default read timeout (10 minutes),
which keep-alive comments reset and this does not."""

_BYTES_PER_CHAR = 12
"""The most bytes one character of a reply takes in a JSON event (``\\ud83d\\ude00``)."""

_LINE_SLACK = 2**20
"""Room in a line for an event's fields beside its text (ids, usage, signatures)."""


@dataclass(kw_only=True, frozen=True, slots=True)
class ReplyLimits:
    """The limits of one reply (a model's, or a request's ``settings.extra`` overriding them)."""

    max_chars: int
    """``max_reply_chars``."""
    max_bytes: int
    """``max_reply_bytes``."""
    idle_timeout: float
    """``idle_timeout``, seconds."""

    @property
    def max_line_bytes(self) -> int:
        """The longest line of the stream: one event holding the whole reply, and no more."""
        return min(self.max_bytes, self.max_chars * _BYTES_PER_CHAR + _LINE_SLACK)


def check_count(owner: str, name: str, value: object) -> int:
    """`value` as a positive whole number, else `ValueError` naming `owner` and `name`."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{owner}: {name} must be a whole number greater than 0, got {value!r}")
    return value


def check_seconds(owner: str, name: str, value: object) -> float:
    """`value` as a finite positive number of seconds, else `ValueError`."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not value > 0
        or not math.isfinite(value)
    ):
        raise ValueError(
            f"{owner}: {name} must be a finite number of seconds greater than 0, got {value!r}"
        )
    return float(value)


def _error(provider: str, message: str) -> ModelError:
    return ModelError(message, provider=provider, retryable=False)


class ReplyBudget:
    """What one reply has used of its limits: characters, and time since its last progress."""

    def __init__(self, limits: ReplyLimits, *, provider: str, label: str, owner: str) -> None:
        self.limits = limits
        self.chars = 0
        """Characters of text, thinking and tool-call arguments so far."""
        self._provider = provider
        self._label = label  # "Anthropic", "OpenAI", "Gemini"
        self._owner = owner  # "AnthropicModel", ...
        self._deadline = anyio.current_time() + limits.idle_timeout

    def add(self, count: int) -> None:
        """Count `count` more characters of the reply (progress, when more than 0).

        Raises:
            ModelError: the reply is now longer than ``max_reply_chars``.
        """
        if count <= 0:
            return
        self.chars += count
        if self.chars > self.limits.max_chars:
            raise _error(
                self._provider,
                f"{self._label} reply is longer than max_reply_chars "
                f"({self.limits.max_chars:,} characters of text, thinking and tool input); "
                "the stream was cut off there. If a reply this long is expected, raise it: "
                f"{self._owner}(..., max_reply_chars=N), or settings.extra"
                '["max_reply_chars"] for one request.',
            )
        self._deadline = anyio.current_time() + self.limits.idle_timeout

    def took(self, delta: TextDelta | ThinkingDelta | ToolInputDelta) -> None:
        """Count a delta the model is about to yield (see `add`)."""
        if isinstance(delta, TextDelta):
            self.add(len(delta.text))
        elif isinstance(delta, ThinkingDelta):
            self.add(len(delta.thinking))
        else:
            self.add(len(delta.text))

    def idle(self) -> ModelError:
        """The error for a stream that made no progress for ``idle_timeout`` seconds."""
        seconds = f"{self.limits.idle_timeout:g}"
        return _error(
            self._provider,
            f"{self._label} stream made no progress for {seconds} s (idle_timeout): no text, "
            "thinking or tool input arrived, and keep-alive comments, pings and empty events "
            "do not count; the stream was given up. For a model that may think silently "
            f"longer, raise it: {self._owner}(..., idle_timeout=SECONDS), or "
            'settings.extra["idle_timeout"] for one request.',
        )

    async def next(self, iterator: AsyncIterator[T]) -> T:
        """The next item of `iterator`, waited for until the idle deadline at most.

        Raises:
            StopAsyncIteration: `iterator` ended.
            ModelError: no progress before the deadline (`idle`).
        """
        with anyio.move_on_after(max(self._deadline - anyio.current_time(), 0)) as scope:
            return await iterator.__anext__()
        if scope.cancelled_caught:
            raise self.idle()
        raise AssertionError("unreachable: the wait returned or was cut off")  # pragma: no cover

    def wire(self) -> WireLimits:
        """The byte limits for `guard_response`, with this budget's names."""
        return WireLimits(limits=self.limits, provider=self._provider, label=self._label)


@dataclass(kw_only=True, frozen=True, slots=True)
class WireLimits:
    """What `guard_response` needs: the limits and how to name them."""

    limits: ReplyLimits
    provider: str
    label: str


class Guard:
    """What `guard_response` put on a response: `stop` makes the SDK's next read fail."""

    def __init__(self, wire: WireLimits) -> None:
        self.wire = wire
        self.stopped = False

    def stop(self) -> None:
        """Fail the SDK's next read of the body (so its generators end, rather than linger)."""
        self.stopped = True


async def _fail_reads(response: Any, parts: AsyncIterator[bytes]) -> None:
    """Close the connection under the SDK's reads, then read on until a read fails.

    Each generator between the SDK and the socket (the SDK's, httpx's, httpcore's) then ends
    by that failure rather than being left suspended for the garbage collector (which trio
    reports as a `ResourceWarning`).
    """
    await response.aclose()
    with contextlib.suppress(Exception):
        for _ in range(100_000):  # what httpx decoded and kept, then the failing read
            await parts.__anext__()


async def give_up(events: Any, guard: Guard | None) -> None:
    """End an SDK's stream `events` early: stop its body, then read it to the failure.

    Closing the SDK's iterator alone leaves the generators under it (the SDK's decoders,
    httpx's, httpcore's) suspended for the garbage collector; with the guard stopped, the
    next read fails at once and every one of them ends. Without a guard (a client kode did
    not make), nothing is read.
    """
    if guard is None:
        return
    guard.stop()
    with contextlib.suppress(Exception):
        for _ in range(100_000):  # what the SDK decoded and kept, then the failing read
            await events.__anext__()


async def bounded_deltas(
    items: AsyncIterator[T],
    feed: Callable[[T], Delta | Sequence[Delta] | None],
    budget: ReplyBudget,
    guard: Guard | None,
    *,
    read: tuple[T, ...] = (),
    counted: Callable[[], int] | None = None,
) -> AsyncGenerator[Delta, None]:
    """The deltas of an SDK's stream `items`, within `budget`: every provider model's loop.

    Each item is waited for until the idle deadline at most (`ReplyBudget.next`), given to
    `feed` (a model's assembler: it returns the item's deltas, one delta, or `None`), and each
    delta is counted (`ReplyBudget.took`) before it is yielded. `counted`, if given, is asked
    after each item for characters the assembler took without a delta to show for them (a
    Gemini function call arrives whole). When anything fails, or the consumer stops early (a
    `GeneratorExit`: close this generator, e.g. with `contextlib.aclosing`), the SDK's stream
    is given up (`give_up`) before the error goes on. `read` holds items already read from
    `items` (Gemini reads the first while it opens the request), fed before the rest.

    Raises:
        ModelError: a limit was crossed (or whatever `feed` or the SDK raised).
    """
    pending = list(read)
    step = items.__anext__
    try:
        while True:
            if pending:
                item = pending.pop(0)
            else:
                # `ReplyBudget.next`, written out: this runs for every event of every reply,
                # and a coroutine less per event is what the shared loop's layer costs.
                try:
                    with anyio.move_on_after(
                        max(budget._deadline - anyio.current_time(), 0)
                    ) as scope:
                        item = await step()
                except StopAsyncIteration:
                    return
                if scope.cancelled_caught:
                    raise budget.idle()
            out = feed(item)
            if out is None:
                pass
            elif isinstance(out, _ONE):
                budget.took(out)
                yield out
            else:
                for delta in out:
                    budget.took(delta)
                    yield delta
            if counted is not None:
                budget.add(counted())
    except (Exception, GeneratorExit):
        await give_up(items, guard)
        raise


def guard_response(response: Any, wire: WireLimits) -> Guard:
    """Count the bytes an SDK reads from `response` (an ``httpx`` response), and stop it.

    The SDKs read a streamed body through ``response.aiter_bytes()`` (decoded: a compressed
    body is counted as it expands); this wraps that method of this one response. A body over
    ``max_reply_bytes``, or a line longer than `ReplyLimits.max_line_bytes`, raises a
    `ModelError` from inside the SDK's read, before the SDK buffers any more of it; so does
    any read after `Guard.stop`.
    """
    original = response.aiter_bytes
    guard = Guard(wire)

    def aiter_bytes(chunk_size: int | None = None) -> _GuardedBytes:
        return _GuardedBytes(response, original(chunk_size), guard)

    response.aiter_bytes = aiter_bytes
    return guard


class _GuardedBytes:
    """The body's chunks as `guard_response` lets them through.

    An iterator object, not an async generator: an SDK that stops reading before the end
    (OpenAI's stops at ``data: [DONE]``) drops it unfinished, which trio reports for an async
    generator.
    """

    def __init__(self, response: Any, parts: AsyncIterator[bytes], guard: Guard) -> None:
        self._response = response
        self._parts = parts
        self._guard = guard
        self._total = 0
        self._run = 0

    def __aiter__(self) -> _GuardedBytes:
        return self

    async def __anext__(self) -> bytes:
        guard, wire = self._guard, self._guard.wire
        if guard.stopped:  # before waiting for the network, which may say nothing
            await self._fail(_error(wire.provider, f"{wire.label} stream was given up."))
        chunk = await self._parts.__anext__()
        self._total += len(chunk)
        end = max(chunk.rfind(b"\n"), chunk.rfind(b"\r"))
        self._run = self._run + len(chunk) if end < 0 else len(chunk) - end - 1
        limits = wire.limits
        if self._total > limits.max_bytes:
            await self._fail(
                _error(
                    wire.provider,
                    f"{wire.label} reply is larger than max_reply_bytes ({limits.max_bytes:,} "
                    "bytes of HTTP body); the stream was cut off there. If a reply this large "
                    "is expected, raise max_reply_bytes (a model option, or "
                    'settings.extra["max_reply_bytes"] for one request).',
                )
            )
        if self._run > limits.max_line_bytes:
            await self._fail(
                _error(
                    wire.provider,
                    f"{wire.label} stream sent a line longer than {limits.max_line_bytes:,} "
                    "bytes (the longest one event of a reply within max_reply_chars can be); "
                    "the stream was cut off there. If so long a line is expected, raise "
                    'max_reply_chars (a model option, or settings.extra["max_reply_chars"] '
                    "for one request).",
                )
            )
        return chunk

    async def _fail(self, error: ModelError) -> NoReturn:
        await _fail_reads(self._response, self._parts)
        raise error

    async def aclose(self) -> None:
        closer = getattr(self._parts, "aclose", None)
        if closer is not None:
            await closer()


def limit_error(exc: BaseException) -> ModelError | None:
    """The `ModelError` a limit raised under `exc` (an SDK may wrap it), or `None`."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, ModelError):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None
