"""kode's ends of the channel to a ``code_run`` script's harness: two non-blocking pipes.

This module owns `Channel`. Each inner call is a round trip (a JSON line from the harness,
one back), so what each trip costs the event loop counts: the line is read with ``os.read``
when it is there and the loop is asked to wait only when it is not (an asyncio subprocess
stream takes a pass through the loop to hand over the bytes, and another to wake the reader),
and the answer is written with ``os.write`` while the pipe has room (an anyio stream's send
passes through the loop after each write). The pipes are made as large as the system lets
(1 MiB), so that a long message takes few reads. A script that writes to the channel faster
than kode reads it (it may write to the descriptor directly) cannot hold the event loop: after
a few lines read without waiting, `receive_line` lets the loop run once.
"""

from __future__ import annotations

import contextlib
import fcntl
import os

import anyio
import anyio.lowlevel

__all__ = ["Channel", "MessageTooLong", "channel_pipes"]

_READ = 1 << 16  # below malloc's mmap threshold: a read of a short line stays cheap
_PIPE_SIZE = 1 << 20
_STREAK = 16  # lines read without waiting before the loop runs once


class MessageTooLong(Exception):
    """The harness sent a line longer than the limit."""


def _enlarge(fd: int) -> None:
    setter = getattr(fcntl, "F_SETPIPE_SZ", None)  # Linux
    if setter is not None:
        with contextlib.suppress(OSError):  # over the user's pipe quota: the default size
            fcntl.fcntl(fd, setter, _PIPE_SIZE)


def channel_pipes() -> tuple[tuple[int, int], tuple[int, int]]:
    """Two pipes, to the harness and from it, kode's ends non-blocking.

    They come as ``(its stdin, kode's end)`` and ``(kode's end, its stdout)``. Every end is
    non-inheritable (``os.pipe``): a child gets the harness's ends as its stdin and stdout only.
    """
    to_read, to_write = os.pipe()
    try:
        from_read, from_write = os.pipe()
    except BaseException:
        os.close(to_read)
        os.close(to_write)
        raise
    for fd in (to_write, from_read):
        os.set_blocking(fd, False)
        _enlarge(fd)
    return (to_read, to_write), (from_read, from_write)


class Channel:
    """Lines from the harness and answers to it, on kode's ends of the two pipes.

    `close` closes them.
    """

    __slots__ = ("_buffer", "_read", "_scanned", "_streak", "_write")

    def __init__(self, read_fd: int, write_fd: int) -> None:
        self._read = read_fd
        self._write = write_fd
        self._buffer = bytearray()
        self._scanned = 0  # how much of the buffer holds no newline
        self._streak = 0

    async def receive_line(self, limit: int) -> bytes | None:
        """The next line without its newline; `None` once the harness's side is closed.

        Raises:
            MessageTooLong: the line is longer than `limit` bytes.
        """
        buffer = self._buffer
        while True:
            index = buffer.find(b"\n", self._scanned)
            if index >= 0:
                line = bytes(buffer[:index])
                del buffer[: index + 1]
                self._scanned = 0
                self._streak += 1
                if self._streak >= _STREAK:  # a flood: let the loop (and a deadline) run
                    self._streak = 0
                    await anyio.lowlevel.checkpoint()
                return line
            self._scanned = len(buffer)
            if self._scanned > limit:
                raise MessageTooLong
            try:
                chunk = os.read(self._read, _READ)
            except BlockingIOError:
                self._streak = 0
                await anyio.wait_readable(self._read)
                continue
            if not chunk:
                return None
            buffer += chunk

    async def send(self, data: bytes) -> bool:
        """Write `data` whole; whether it was (not when the harness's side is closed)."""
        view = memoryview(data)
        while view:
            try:
                written = os.write(self._write, view)
            except BlockingIOError:
                await anyio.wait_writable(self._write)
                continue
            except (BrokenPipeError, ConnectionResetError):
                return False
            view = view[written:]
        return True

    def close(self) -> None:
        """Close kode's ends (no task may be waiting on them)."""
        for fd in (self._read, self._write):
            with contextlib.suppress(OSError):
                os.close(fd)
