"""web_fetch decodes Content-Encoding itself, with every layer bounded, against a real server."""

from __future__ import annotations

import functools
import gzip
import random
import struct
import tracemalloc
import zlib
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler

import pytest
from test_web_fetch import context, respond, serve

from kode.builtin.web import web_fetch
from kode.builtin.web._content_encoding import BodyDecoder, EncodingError, content_encodings
from kode.tools.errors import ToolErrorType

pytestmark = pytest.mark.anyio

MB = 1024 * 1024
# Text that compresses like prose, not like zeros: random bytes mapped onto a few letters.
TEXT = (
    random.Random(7)
    .randbytes(300_000)
    .translate(bytes(b"abcdefghijklmno \n"[i % 17] for i in range(256)))
)


def gzipped(chunks: Iterable[bytes]) -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    return b"".join(packer.compress(chunk) for chunk in chunks) + packer.flush()


@functools.cache
def bomb(megabytes: int) -> bytes:
    """`megabytes` MB of zeros, gzipped twice: a few hundred bytes on the wire.

    The inner stream repeats one fully flushed deflate segment of a megabyte of zeros (a full
    flush resets the compressor, so every segment is the same), which builds in a blink.
    """
    packer = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    segment = packer.compress(bytes(MB)) + packer.flush(zlib.Z_FULL_FLUSH)
    crc = 0
    for _ in range(megabytes):
        crc = zlib.crc32(bytes(MB), crc)
    inner = (
        b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"
        + segment * megabytes
        + packer.flush()
        + struct.pack("<II", crc, (megabytes * MB) & 0xFFFFFFFF)
    )
    return gzipped([inner])


def raw_deflate(data: bytes) -> bytes:
    packer = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
    return packer.compress(data) + packer.flush()


def chunked(body: bytes, content_type: str, **headers: str) -> object:
    """A route answering without Content-Length, in chunks, as long as the client reads."""

    def route(handler: BaseHTTPRequestHandler) -> None:
        handler.protocol_version = "HTTP/1.1"
        handler.send_response(200)
        handler.send_header("Content-Type", content_type)
        handler.send_header("Transfer-Encoding", "chunked")
        handler.send_header("Connection", "close")
        for name, value in headers.items():
            handler.send_header(name, value)
        handler.end_headers()
        for start in range(0, len(body), 16_384):
            piece = body[start : start + 16_384]
            handler.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
        handler.wfile.write(b"0\r\n\r\n")

    return route


async def test_a_gzip_inside_gzip_bomb_is_capped_while_streaming() -> None:
    body = bomb(256)
    assert len(body) < 1000  # 256 MB of zeros in 684 bytes
    with serve(
        {"/bomb": respond(200, "text/plain", body, **{"Content-Encoding": "gzip, gzip"})}
        | {"/warm": respond(200, "text/plain", b"warm")}
    ) as srv:
        # A first fetch imports httpx and the HTML converters, which is not what is measured.
        assert not (await web_fetch.run({"url": srv.url("/warm")}, context())).is_error
        tracemalloc.start()
        try:
            result = await web_fetch.run(
                {"url": srv.url("/bomb"), "format": "raw"},
                context(max_response_bytes=MB, max_chars=100),
            )
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert not result.is_error, result.text
    assert result.details["bytes_read"] == MB
    assert result.details["truncated_bytes"] is True
    assert "[The response was larger than 1 MB; only that much was read.]" in result.text
    # The 1 MB body, its text and a few pieces in flight: nowhere near the 256 MB it inflates to.
    print(f"peak traced memory: {peak / MB:.1f} MB")
    assert peak < 24 * MB, f"peak {peak / MB:.1f} MB"


@pytest.mark.parametrize(
    ("encoding", "encode"),
    [
        ("gzip", gzip.compress),
        ("x-gzip", gzip.compress),
        ("deflate", zlib.compress),
        ("deflate", raw_deflate),  # what some servers send as deflate
        ("gzip, deflate", lambda data: zlib.compress(gzip.compress(data))),
        ("deflate, gzip", lambda data: gzip.compress(zlib.compress(data))),
        ("identity, gzip", gzip.compress),
        ("gzip", lambda data: gzip.compress(data[:1000]) + gzip.compress(data[1000:])),
    ],
)
async def test_every_supported_encoding_is_decoded(encoding: str, encode: object) -> None:
    assert callable(encode)
    body = encode(TEXT)
    with serve(
        {"/page": chunked(body, "text/plain; charset=utf-8", **{"Content-Encoding": encoding})}
    ) as srv:
        result = await web_fetch.run(
            {"url": srv.url("/page"), "format": "raw"}, context(max_chars=1_000_000)
        )
        sent = srv.seen[0].headers.get("Accept-Encoding")
    assert not result.is_error, result.text
    assert result.details["bytes_read"] == len(TEXT)
    assert result.details["truncated_bytes"] is False
    assert TEXT.decode() in result.text
    assert sent == "gzip, deflate"  # only what can be decoded with a bound is asked for


@pytest.mark.parametrize("encoding", ["gzip", "gzip, gzip, deflate"])
async def test_each_layer_stops_at_the_limit(encoding: str) -> None:
    layers = [e.strip() for e in encoding.split(",")]
    body = TEXT
    for layer in layers:
        body = gzip.compress(body) if layer == "gzip" else zlib.compress(body)
    with serve({"/page": chunked(body, "text/plain", **{"Content-Encoding": encoding})}) as srv:
        result = await web_fetch.run(
            {"url": srv.url("/page"), "format": "raw"},
            context(max_response_bytes=50_000, max_chars=1_000_000),
        )
    assert not result.is_error, result.text
    assert result.details["bytes_read"] == 50_000
    assert result.details["truncated_bytes"] is True
    assert TEXT[:50_000].decode() in result.text


async def test_a_plain_body_without_a_length_is_capped() -> None:
    with serve({"/big": chunked(bytes(5 * MB), "application/octet-stream")}) as srv:
        result = await web_fetch.run({"url": srv.url("/big")}, context(max_response_bytes=MB))
    # Binary content is refused after reading at most the limit.
    assert result.is_error
    assert f"({MB} bytes read)" in result.text


@pytest.mark.parametrize(
    ("encoding", "body", "message"),
    [
        (
            "br",
            b"\x0b\x02\x80hello\x03",
            "its Content-Encoding is 'br', and web_fetch decodes only",
        ),
        ("zstd", b"\x28\xb5\x2f\xfd", "its Content-Encoding is 'zstd'"),
        (
            "gzip, gzip, gzip, gzip",
            b"",
            "it has 4 Content-Encoding layers (gzip, gzip, gzip, gzip), and web_fetch decodes "
            "at most 3",
        ),
        ("gzip", b"\x1f\x8bnot really gzip", "its gzip data is corrupt"),
    ],
)
async def test_what_cannot_be_decoded_is_a_clear_error(
    encoding: str, body: bytes, message: str
) -> None:
    with serve({"/x": respond(200, "text/plain", body, **{"Content-Encoding": encoding})}) as srv:
        result = await web_fetch.run({"url": srv.url("/x")}, context())
    assert result.is_error and result.error_type is ToolErrorType.TOOL_ERROR
    assert result.text.startswith(f"web_fetch cannot read the response from {srv.url('/x')}: ")
    assert message in result.text
    assert result.details == {"url": srv.url("/x"), "reason": "content_encoding"}


def test_the_bomb_is_what_it_claims() -> None:
    # Streamed through zlib with a bound, the two layers give as many megabytes of zeros as asked.
    outer, total = zlib.decompressobj(zlib.MAX_WBITS | 16), 0
    inner = outer.decompress(bomb(16))
    unpacker = zlib.decompressobj(zlib.MAX_WBITS | 16)
    while inner and not unpacker.eof:
        piece = unpacker.decompress(inner, 4 * MB)
        assert not piece.strip(b"\0")
        total, inner = total + len(piece), unpacker.unconsumed_tail
    assert total == 16 * MB and unpacker.eof


def test_the_decoder_bounds_the_wire_and_every_layer() -> None:
    # Many empty gzip members inside one: the middle layer grows while the body stays empty.
    inner = gzip.compress(b"") * 50_000
    decoder = BodyDecoder(content_encodings(["gzip, gzip"]), limit=100_000)
    wire = gzip.compress(inner)
    for start in range(0, len(wire), 4096):
        if not decoder.feed(wire[start : start + 4096]):
            break
    assert decoder.truncated and decoder.body == b""
    # Bytes on the wire count too, whatever the encoding.
    plain = BodyDecoder([], limit=10)
    assert plain.feed(b"12345") and not plain.feed(b"678901234")
    assert plain.body == b"1234567890" and plain.truncated
    with pytest.raises(EncodingError, match="'compress'"):
        content_encodings(["compress"])
