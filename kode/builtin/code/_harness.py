"""The harness of ``code_run``: runs the model's script in the sandbox, its tools as functions.

kode passes this file's text to an isolated interpreter (``python -I -S -c``) inside the
sandbox; it uses the standard library only and imports nothing from the workspace. Its
arguments: the memory limit in bytes and the descriptor of the output pipe. On its stdin
(from kode) and stdout (to kode) it speaks JSON lines, never pickle:

- kode → harness, first: ``{"script": ..., "tools": {function name: tool name}}``;
- harness → kode, per call: ``{"call": tool name, "arguments": {...}, "id": n}``;
  kode → harness: ``{"id": n, "ok": bool, "text": ..., "error_type": ...}``;
- harness → kode, last: ``{"end": true, "result": JSON or null, "result_repr": ...}``.

Before the script runs, the channel moves to descriptors of its own, the script's stdout and
stderr go to the output pipe, its stdin is ``/dev/null``, and ``RLIMIT_AS`` caps its memory
(soft and hard: the script cannot raise it). A call that fails raises `ToolCallError` in the
script, with kode's message; so does a call once the channel is closed or broken (the script
can reach its descriptors). An answer whose id is not the call's is skipped.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import threading
import traceback
from typing import Any

__all__ = ["ToolCallError", "main"]


class ToolCallError(Exception):
    """A tool call the script made failed: kode's message, and the kind of error."""

    def __init__(self, message: str, error_type: str | None = None) -> None:
        super().__init__(message)
        self.error_type = error_type


class _Channel:
    def __init__(self, read_fd: int, write_fd: int) -> None:
        self._in = read_fd
        self._out = write_fd
        self._lock = threading.Lock()
        self._buffer = bytearray()
        self._serial = 0
        self._encode = json.JSONEncoder(ensure_ascii=False).encode

    def _send(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self._out, view) :]

    def _line(self) -> Any:
        buffer = self._buffer
        index = buffer.find(b"\n")
        while index < 0:  # (a long answer comes in many reads: each scans only what is new)
            scanned = len(buffer)
            chunk = os.read(self._in, 1 << 16)
            if not chunk:
                raise EOFError("kode closed the channel")
            buffer += chunk
            index = buffer.find(b"\n", scanned)
        line = buffer[:index]
        del buffer[: index + 1]
        return json.loads(line)

    def first(self) -> dict[str, Any]:
        try:
            first: dict[str, Any] = self._line()
        except (OSError, EOFError, ValueError) as exc:
            raise SystemExit(f"kode: no script came on the channel: {exc}") from None
        return first

    def _answer(self, serial: int) -> dict[str, Any]:
        """The answer to call `serial`; any other line is skipped.

        The script can write to its own channel: what it forged there answers none of its calls.
        """
        while True:
            try:
                answer = self._line()
            except ValueError:
                continue
            if isinstance(answer, dict) and answer.get("id") == serial:
                return answer

    def call(self, name: str, arguments: dict[str, Any]) -> str:
        with self._lock:  # one call at a time, from any thread of the script
            serial = self._serial + 1
            try:
                data = self._encode({"call": name, "arguments": arguments, "id": serial})
            except (TypeError, ValueError) as exc:
                raise TypeError(f"the arguments of {name} must be JSON data: {exc}") from None
            self._serial = serial
            try:
                self._send((data + "\n").encode())
                answer = self._answer(serial)
            except (OSError, EOFError) as exc:  # the script closed its channel, or broke it
                raise ToolCallError(
                    f"Tool '{name}' was not run, or its answer was lost: the channel to kode "
                    f"is closed or broken ({exc}); no tool call can be made any more.",
                    "execution_failed",
                ) from None
        if not answer.get("ok"):
            raise ToolCallError(str(answer.get("text", "")), answer.get("error_type"))
        return str(answer.get("text", ""))

    def end(self, result: Any) -> None:
        message: dict[str, Any] = {"end": True, "result": None, "result_repr": None}
        if result is not None:
            try:
                json.dumps(result)
                message["result"] = result
            except (TypeError, ValueError):
                message["result_repr"] = repr(result)[:100_000]
        try:
            self._send((self._encode(message) + "\n").encode())
        except OSError:  # the script closed its channel: kode goes without the result
            pass


def _function(channel: _Channel, tool: str) -> Any:
    def call(**arguments: Any) -> str:
        return channel.call(tool, arguments)

    call.__name__ = call.__qualname__ = tool
    return call


def main(argv: list[str]) -> None:
    """Run the script kode sends, as the module's notes say."""
    memory, output = int(argv[0]), int(argv[1])
    channel = _Channel(os.dup(0), os.dup(1))
    for fd in (1, 2):
        os.dup2(output, fd)
    os.close(output)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    sys.stdout = open(1, "w", encoding="utf-8", errors="replace", closefd=False)
    sys.stderr = open(2, "w", encoding="utf-8", errors="replace", closefd=False)
    first = channel.first()
    if memory > 0:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    names: dict[str, str] = first["tools"]
    namespace: dict[str, Any] = {"__name__": "__main__", "ToolCallError": ToolCallError}
    for function, tool in names.items():
        namespace[function] = _function(channel, tool)

    def call_tool(name: str, arguments: dict[str, Any] | None = None) -> str:
        """Call the tool `name` with `arguments` (a dict); its result's text."""
        return channel.call(name, dict(arguments or {}))

    namespace["call_tool"] = call_tool
    code = 0
    try:
        exec(compile(first["script"], "<script>", "exec"), namespace)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:
        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    channel.end(namespace.get("result"))
    os._exit(code)


if __name__ == "__main__":  # pragma: no cover - run in the sandbox
    main(sys.argv[1:])
