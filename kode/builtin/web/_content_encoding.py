"""Decoding a response body's ``Content-Encoding`` with every layer's output bounded.

This module owns the decompression of ``web_fetch``'s bodies. httpx decodes each chunk it
receives in one call, so a few hundred bytes of ``Content-Encoding: gzip, gzip`` become
hundreds of megabytes in memory before any size check sees them. Here the body is decoded
from the raw bytes, layer by layer, with zlib's ``max_length``: no layer ever produces more
than one piece (`PIECE` bytes) at a time, and reading stops as soon as the bytes received or
any layer's output would pass the limit. Memory stays near the limit plus one piece per
layer, whatever the compression ratio. It decodes gzip (and ``x-gzip``, several members
included) and deflate (zlib-wrapped or raw), the encodings zlib can bound; it does not fetch
(see `kode.builtin.web._fetch`).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator, Sequence

__all__ = [
    "ACCEPT_ENCODING",
    "MAX_LAYERS",
    "PIECE",
    "BodyDecoder",
    "EncodingError",
    "content_encodings",
]

ACCEPT_ENCODING = "gzip, deflate"
"""The ``Accept-Encoding`` ``web_fetch`` sends: only what it can decode with a bound."""

MAX_LAYERS = 3
"""The most ``Content-Encoding`` layers (other than ``identity``) a response may have."""

PIECE = 64 * 1024
"""The most bytes one layer produces at a time."""

_GZIP_MAGIC = b"\x1f\x8b"
_KNOWN = {"gzip": "gzip", "x-gzip": "gzip", "deflate": "deflate"}


class EncodingError(ValueError):
    """A ``Content-Encoding`` that cannot be decoded: unknown, too many layers, or corrupt."""


def content_encodings(values: Sequence[str]) -> list[str]:
    """The encodings named by ``Content-Encoding`` header values, in the order applied.

    ``identity`` and empty entries are dropped; ``x-gzip`` reads as ``gzip``.

    Raises:
        EncodingError: for an encoding other than gzip or deflate, or more than `MAX_LAYERS`.
    """
    names = [part.strip().lower() for value in values for part in value.split(",") if part.strip()]
    encodings = []
    for name in names:
        if name == "identity":
            continue
        if name not in _KNOWN:
            raise EncodingError(
                f"its Content-Encoding is {name!r}, and web_fetch decodes only gzip and deflate"
            )
        encodings.append(_KNOWN[name])
    if len(encodings) > MAX_LAYERS:
        raise EncodingError(
            f"it has {len(encodings)} Content-Encoding layers ({', '.join(names)}), "
            f"and web_fetch decodes at most {MAX_LAYERS}"
        )
    return encodings


class _Inflate:
    """One gzip or deflate layer, decoded a bounded piece at a time."""

    def __init__(self, encoding: str) -> None:
        self._gzip = encoding == "gzip"
        # deflate is meant to be zlib-wrapped, but servers send raw deflate too: try the
        # wrapped form, and on an error before any output start over raw with what was kept.
        self._raw = False
        self._kept: bytearray | None = None if self._gzip else bytearray()
        self._inflater: zlib._Decompress | None = self._new()
        self._between = b""  # after a gzip member: the start of what follows, up to 2 bytes
        self._finished = False

    def _new(self) -> zlib._Decompress:
        if self._gzip:
            return zlib.decompressobj(zlib.MAX_WBITS | 16)
        return zlib.decompressobj(-zlib.MAX_WBITS if self._raw else zlib.MAX_WBITS)

    def decode(self, data: bytes) -> Iterator[bytes]:
        """`data`'s decoded bytes, in pieces of at most `PIECE` bytes."""
        pending = data
        if self._kept is not None:
            self._kept += data
        while not self._finished:
            if self._inflater is None:  # between gzip members
                head = self._between + pending
                if len(head) < len(_GZIP_MAGIC):
                    self._between, pending = head, b""
                    return
                if not head.startswith(_GZIP_MAGIC):
                    self._finished = True  # trailing bytes after the last member: ignored
                    return
                self._between, pending = b"", head
                self._inflater = self._new()
            try:
                out = self._inflater.decompress(pending, PIECE)
            except zlib.error as exc:
                if self._kept is not None and not self._raw:
                    self._raw, pending, self._kept = True, bytes(self._kept), None
                    self._inflater = self._new()
                    continue
                kind = "gzip" if self._gzip else "deflate"
                raise EncodingError(f"its {kind} data is corrupt ({exc})") from None
            if out:
                self._kept = None
                yield out
            pending = self._inflater.unconsumed_tail
            if self._inflater.eof:
                pending = self._inflater.unused_data + pending
                if not self._gzip:
                    self._finished = True
                    return
                self._inflater = None
                if not pending:
                    return
            elif not pending and not out:
                return


class _Full(Exception):
    pass


class BodyDecoder:
    """Decodes a body's layers as its raw bytes arrive, stopping at `limit` bytes.

    The limit holds for the raw bytes received, for every intermediate layer's output and for
    the decoded body: whichever passes it first ends the reading, and the body is what was
    decoded up to then.
    """

    def __init__(self, encodings: Sequence[str], *, limit: int) -> None:
        """A decoder for `encodings` (as `content_encodings` gives them), up to `limit` bytes."""
        self._layers = [_Inflate(encoding) for encoding in reversed(encodings)]
        self._produced = [0] * len(self._layers)
        self._limit = limit
        self._received = 0
        self.body = bytearray()
        """The body decoded so far."""
        self.truncated = False
        """Whether reading stopped at the limit."""

    def feed(self, raw: bytes) -> bool:
        """Decode `raw`; `False` when the limit is reached and nothing more should be read.

        Raises:
            EncodingError: when the data is corrupt.
        """
        if self.truncated:
            return False
        room = self._limit - self._received
        self._received += len(raw)
        try:
            self._push(0, raw[:room])
            if len(raw) > room:
                raise _Full
        except _Full:
            self.truncated = True
            return False
        return True

    def _push(self, layer: int, data: bytes) -> None:
        if layer == len(self._layers):
            room = self._limit - len(self.body)
            self.body += data[:room]
            if len(data) > room:
                raise _Full
            return
        for piece in self._layers[layer].decode(data):
            self._produced[layer] += len(piece)
            if layer + 1 < len(self._layers) and self._produced[layer] > self._limit:
                raise _Full
            self._push(layer + 1, piece)
