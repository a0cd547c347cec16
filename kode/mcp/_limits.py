"""The longest message kode reads from an MCP server, over stdio and over HTTP.

A server's message is untrusted input: one resource, tool result or notification of hundreds
of megabytes costs the memory to hold it, and over stdio far more than that in time, since the
SDK's reader joins each chunk of a line to all it holds so far (a 20 MB line took 22 s, a
100 MB one had not ended after 115 s). This module owns the bound, ``max_message_bytes``:

- over stdio, the SDK's reader gets its text from `BoundedLines`, which hands it whole lines
  (joined once, so reading is linear) and, for a line longer than the bound, reads the rest
  of it without keeping it and hands over instead a JSON-RPC error answering the request the
  line answered (its ``id`` is read from the line's first or last characters, where
  JSON-RPC encoders put it): the call fails at once with an error naming the bound, and the
  connection stays usable;
- over streamable HTTP, the SDK's own limit on one server-sent event is set to the bound,
  and a JSON response body longer than it fails as an unreadable response (`guard_json`).

`BoundedLines` takes the place of the SDK's ``TextReceiveStream`` in ``mcp.client.stdio``
(`install`); it behaves exactly as that class unless the task reading was started by kode's
own connection, which sets the bound in a context variable first (`reading_with`).
"""

from __future__ import annotations

import contextvars
import json
import re
from typing import Any

import anyio
from anyio.streams.text import TextReceiveStream

__all__ = [
    "MAX_MESSAGE_BYTES",
    "BoundedLines",
    "done_reading",
    "guard_json",
    "install",
    "reading_with",
    "too_long",
]

MAX_MESSAGE_BYTES = 32 * 2**20
"""The longest message (32 MiB) kode reads from an MCP server by default: a JSON-RPC line
over stdio, one server-sent event or one JSON body over HTTP."""

_KEPT = 512  # characters kept of each end of a line too long, to find its id in
_INTERNAL_ERROR = -32603

# The id of a JSON-RPC message, as the first member after "jsonrpc" (the Python SDK's order)
# or as the last member (the TypeScript SDK's).
_ID = r'(-?\d+|"(?:[^"\\]|\\.)*")'
_ID_FIRST = re.compile(r'^\s*\{\s*"jsonrpc"\s*:\s*"2\.0"\s*,\s*"id"\s*:\s*' + _ID)
_ID_LAST = re.compile(r'"id"\s*:\s*' + _ID + r"\s*\}\s*$")


def too_long(limit: int) -> str:
    """What a call answered with a message over `limit` fails with."""
    return (
        f"the MCP server's answer is longer than max_message_bytes ({limit:,}), so kode did "
        "not read it; pass a larger max_message_bytes to connect() if answers this large "
        "are expected"
    )


_BOUND: contextvars.ContextVar[int | None] = contextvars.ContextVar(
    "kode_mcp_message_bound", default=None
)


def reading_with(limit: int) -> contextvars.Token[int | None]:
    """Set the bound for the stdio readers started from here on (see `BoundedLines`)."""
    return _BOUND.set(limit)


def done_reading(token: contextvars.Token[int | None]) -> None:
    """Undo `reading_with`."""
    _BOUND.reset(token)


def _answer_for(head: str, tail: str, limit: int) -> str:
    """The JSON-RPC error line answering the message whose ends are `head` and `tail`."""
    found = _ID_FIRST.match(head) or _ID_LAST.search(tail)
    if found is None:
        return ""  # a notification, or no id where encoders put it: nothing to answer
    error = {"code": _INTERNAL_ERROR, "message": too_long(limit)}
    return json.dumps({"jsonrpc": "2.0", "id": json.loads(found.group(1)), "error": error})


class BoundedLines(TextReceiveStream):
    """The SDK's stdio text stream, handing out whole lines up to a bound (see the module).

    Without a bound in the context it is the SDK's ``TextReceiveStream``.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._limit = _BOUND.get()
        self._pending: list[str] = []  # the start of a line not ended yet
        self._run = 0  # its length
        self._ended = False

    async def receive(self) -> str:
        limit = self._limit
        if limit is None:
            return await super().receive()
        if self._ended:
            raise anyio.EndOfStream
        while True:
            try:
                piece = await super().receive()
            except anyio.EndOfStream:
                if not self._pending:
                    raise
                self._ended = True
                return self._take()
            end = piece.rfind("\n")
            if end >= 0:
                whole = "".join([*self._pending, piece[: end + 1]])
                self._keep(piece[end + 1 :])
                return whole
            self._pending.append(piece)
            self._run += len(piece)
            if self._run > limit:
                return await self._skip(self._take(), limit)

    def _take(self) -> str:
        text = "".join(self._pending)
        self._pending, self._run = [], 0
        return text

    def _keep(self, start: str) -> None:
        self._pending, self._run = ([start] if start else []), len(start)

    async def _skip(self, line: str, limit: int) -> str:
        """Read the rest of a line too long without keeping it; return the answer to it."""
        head, tail = line[:_KEPT], line[-_KEPT:]
        while True:
            try:
                piece = await super().receive()
            except anyio.EndOfStream:
                self._ended = True
                answer = _answer_for(head, tail, limit)
                return f"{answer}\n" if answer else ""
            end = piece.find("\n")
            if end < 0:
                tail = (tail + piece)[-_KEPT:]
                continue
            tail = (tail + piece[:end])[-_KEPT:]
            rest = piece[end + 1 :]
            last = rest.rfind("\n")
            self._keep(rest[last + 1 :])
            answer = _answer_for(head, tail, limit)
            return (f"{answer}\n" if answer else "") + rest[: last + 1]


def install() -> None:
    """Make the SDK's stdio client read through `BoundedLines` (idempotent)."""
    import mcp.client.stdio as stdio

    if getattr(stdio, "TextReceiveStream", None) is not BoundedLines:
        setattr(stdio, "TextReceiveStream", BoundedLines)  # noqa: B010 - the SDK's own name


def guard_json(limit: int) -> Any:
    """An httpx response hook: a JSON body longer than `limit` fails as unreadable.

    Server-sent events are left to the SDK's own limit (set to the same bound); a JSON body
    (one message) is counted as the SDK reads it, and fails with an ``httpx`` stream error,
    which the SDK turns into an error answer to the request.
    """
    import httpx2

    async def hook(response: Any) -> None:
        kind = response.headers.get("content-type", "")
        if not kind.startswith("application/json"):
            return
        original = response.aiter_bytes

        async def aiter_bytes(chunk_size: int | None = None) -> Any:
            total = 0
            parts = original(chunk_size)
            try:
                async for chunk in parts:
                    total += len(chunk)
                    if total > limit:
                        raise httpx2.StreamError(too_long(limit))
                    yield chunk
            finally:
                await parts.aclose()

        response.aiter_bytes = aiter_bytes

    return hook
