"""Discovered tools: a command lists tools as JSON, another command runs them.

This module owns kode's support for the discovery protocol Gemini CLI made common: a
*discovery command* prints a JSON array of function declarations (``name``, ``description``,
``parameters``); a *call command* runs one tool, given the tool's name as its last argument and
the arguments as JSON on stdin, printing the result on stdout. A non-zero exit or any output on
stderr makes an error result that includes both. A call that outlives its timeout is killed
with its whole process group.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import Process

from kode.registries.meta import ToolSource
from kode.registries.tool_registry import ToolRegistry
from kode.registries.tool_registry import registry as global_registry
from kode.tools.context import ToolContext
from kode.tools.declared import declare_tool
from kode.tools.errors import KodeError, ToolDefinitionError, ToolError, ToolErrorType

__all__ = ["DiscoveryError", "discover_tools"]

_MAX_OUTPUT = 200_000
_JSON_TYPES = frozenset({"object", "array", "string", "number", "integer", "boolean", "null"})


class DiscoveryError(KodeError):
    """The discovery command failed or printed something that is not a list of declarations."""


def _argv(command: str | Sequence[str]) -> list[str]:
    return shlex.split(command) if isinstance(command, str) else [str(c) for c in command]


def _declarations(payload: Any) -> list[Mapping[str, Any]]:
    """Flatten the accepted shapes: a list of declarations, or of ``{functionDeclarations}``."""
    if not isinstance(payload, list):
        raise DiscoveryError(
            f"the discovery command must print a JSON array, got {type(payload).__name__}"
        )
    out: list[Mapping[str, Any]] = []
    for item in payload:
        if isinstance(item, Mapping):
            nested = item.get("functionDeclarations", item.get("function_declarations"))
            if isinstance(nested, list):
                out.extend(d for d in nested if isinstance(d, Mapping))
            else:
                out.append(item)
    return out


def _lower_types(schema: Any) -> Any:
    """Gemini's declarations spell types in capitals (``"OBJECT"``); JSON Schema does not."""
    if isinstance(schema, Mapping):
        out = {k: _lower_types(v) for k, v in schema.items()}
        kind = schema.get("type")
        if isinstance(kind, str) and kind.lower() in _JSON_TYPES:
            out["type"] = kind.lower()
        elif isinstance(kind, list):
            out["type"] = [
                k.lower() if isinstance(k, str) and k.lower() in _JSON_TYPES else k for k in kind
            ]
        return out
    if isinstance(schema, list):
        return [_lower_types(item) for item in schema]
    return schema


async def _kill_group(process: Process) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    with anyio.CancelScope(shield=True):
        await process.wait()


def _clip(data: bytes) -> str:
    text = data.decode("utf-8", errors="replace")
    if len(text) > _MAX_OUTPUT:
        text = text[:_MAX_OUTPUT] + f"\n[… {len(text) - _MAX_OUTPUT} more characters cut]"
    return text


def _make_handler(
    tool_name: str, call_argv: list[str], cwd: Path | None, env: Mapping[str, str] | None
) -> Any:
    async def handler(arguments: dict[str, Any], ctx: ToolContext[Any]) -> str:
        payload = json.dumps(arguments).encode()
        process = await anyio.open_process(
            [*call_argv, tool_name],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=dict(env) if env is not None else None,
            start_new_session=True,  # its own process group, killed as a whole
        )
        chunks: dict[str, bytes] = {"out": b"", "err": b""}
        try:
            async with anyio.create_task_group() as tg:

                async def drain(name: str, stream: Any) -> None:
                    async for chunk in stream:
                        chunks[name] += chunk

                tg.start_soon(drain, "out", process.stdout)
                tg.start_soon(drain, "err", process.stderr)
                assert process.stdin is not None
                try:
                    await process.stdin.send(payload)
                    await process.stdin.aclose()
                except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                    pass  # it exited (or closed stdin) without reading its arguments
                await process.wait()
        except BaseException:
            await _kill_group(process)
            raise
        out, err = _clip(chunks["out"]), _clip(chunks["err"])
        if process.returncode != 0 or err.strip():
            how = "" if process.returncode != 0 else " but wrote to stderr"
            raise ToolError(
                f"Tool '{tool_name}' failed: the call command exited with code "
                f"{process.returncode}{how}.\nstdout:\n{out.strip() or '(empty)'}\n"
                f"stderr:\n{err.strip() or '(empty)'}",
                type=ToolErrorType.EXECUTION_FAILED,
                details={"exit_code": process.returncode, "stdout": out, "stderr": err},
            )
        return out

    # The call command is part of the tool's identity: the same name discovered through two
    # commands is a conflict, discovering again through one command a refresh.
    handler.__qualname__ = f"call[{shlex.join(call_argv)}]"
    return handler


def discover_tools(
    discovery_command: str | Sequence[str],
    call_command: str | Sequence[str],
    *,
    registry: ToolRegistry | None = None,
    timeout: float | None = 60.0,
    discovery_timeout: float = 30.0,
    cwd: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    groups: Sequence[str] = ("group:discovered",),
) -> list[str]:
    """Run the discovery command and register each tool it declares (source ``discovered``).

    Args:
        discovery_command: Prints a JSON array of function declarations.
        call_command: Runs one tool: gets the tool name as its last argument and the arguments
            as JSON on stdin; prints the result.
        registry: Where to register (default: the global registry).
        timeout: Seconds one call may take before it is killed (`None`: no limit).
        discovery_timeout: Seconds the discovery command may take.
        cwd: Working directory for both commands.
        env: Environment for both commands (default: inherited).
        groups: Groups the discovered tools join.

    Returns:
        The names registered. A declaration that is invalid or whose name is taken is skipped
        and reported as a diagnostic on the registry.

    Raises:
        DiscoveryError: the discovery command failed, timed out, or printed something that is
            not a JSON array.
    """
    reg = registry if registry is not None else global_registry
    argv = _argv(discovery_command)
    where = Path(cwd) if cwd is not None else None
    try:
        done = subprocess.run(
            argv,
            capture_output=True,
            timeout=discovery_timeout,
            cwd=where,
            env=dict(env) if env is not None else None,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise DiscoveryError(f"discovery command {argv!r} could not run: {exc}") from exc
    if done.returncode != 0:
        raise DiscoveryError(
            f"discovery command {argv!r} exited with code {done.returncode}: "
            f"{_clip(done.stderr).strip() or '(no stderr)'}"
        )
    try:
        payload = json.loads(done.stdout)
    except ValueError as exc:
        raise DiscoveryError(
            f"discovery command {argv!r} did not print JSON ({exc}); first bytes: "
            f"{done.stdout[:80]!r}"
        ) from exc
    call_argv = _argv(call_command)
    names: list[str] = []
    for decl in _declarations(payload):
        name = decl.get("name")
        if not isinstance(name, str):
            reg.report(
                "warning",
                f"discovered declaration skipped: it has no string 'name' "
                f"(got {json.dumps(name)}): {json.dumps(decl)[:120]}",
                source=ToolSource.DISCOVERED,
            )
            continue
        parameters = decl.get("parameters")
        if parameters is None:
            parameters = decl.get("parametersJsonSchema")
        try:
            made = declare_tool(
                name,
                description=str(decl.get("description") or ""),
                input_schema=_lower_types(parameters),
                handler=_make_handler(str(name), call_argv, where, env),
                timeout=timeout,
                groups=groups,
            )
        except ToolDefinitionError as exc:
            reg.report(
                "warning",
                f"discovered tool {name!r} skipped: {exc}",
                source=ToolSource.DISCOVERED,
            )
            continue
        reg.register(made, source=ToolSource.DISCOVERED)
        if reg.get(made.name) is made:  # not skipped for a name taken by another tool
            names.append(made.name)
    return names
