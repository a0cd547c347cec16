"""Built-in code mode (``group:code``): ``code_run`` runs a Python script that calls the tools.

The model answers with one script instead of one tool call at a time: the agent's other tools
are functions in it (keyword arguments, the names and types of their schemas, each returning
its result's text; the agent's system prompt lists them as Python stubs, `agent_stubs`), so
intermediate results stay in the script instead of passing through the model.

- **Every call from the script is a call of the agent.** It crosses back to kode over a JSON
  channel and goes through the agent's own pipeline (`kode.agent.inner_calls`): validation, the
  permission rules and approvals (a call that needs approval waits for it, or fails when nobody
  can give it), hooks, ``tool_start``/``tool_end`` events carrying ``parent_call_id`` (the
  ``code_run`` call's id), a tracing span inside ``code_run``'s, the session's records. A call
  that fails raises ``ToolCallError`` in the script with kode's message; the script may catch
  it. Its results go to the script, never to the model.
- **The script runs confined**: an isolated interpreter (``python -I -S``, kode's harness, no
  import from the workspace) inside the bubblewrap sandbox of `kode.trust.sandbox` with the
  whole file system read-only, the workspace too (``CodePolicy.workspace``: an effect goes
  through a tool call, where permissions apply), a private ``/tmp``, credentials hidden, no
  network, its own PID namespace, and limits (`CodePolicy`): time, memory (``RLIMIT_AS``),
  output kept (head and tail), tool calls. Everything it started is killed when it ends, times
  out, or kode dies (kill -9 included). Where no sandbox can be had, ``code_run`` refuses to
  run: it never runs a script bare.
- **The result** is what the script printed, then the value of its variable ``result``, if it
  set one (as JSON, or its ``repr``), cut like any result.

Served over MCP (``kode mcp serve code_run ...``) there is no agent: a script may call only the
served tools that change nothing and never ask for approval (`kode.mcp.inner`).
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import anyio.to_thread
from pydantic import Field

from kode.builtin._shared._environment import command_environment
from kode.builtin._shared._policy import runtime_policy_for
from kode.builtin.code._host import run_script
from kode.builtin.code._stubs import function_name, stubs
from kode.tools.context import ToolContext
from kode.tools.core import Tool
from kode.tools.define import define_tool
from kode.tools.errors import ToolError, ToolErrorType
from kode.tools.results import TextBlock, ToolResult
from kode.tools.services import INNER_CALLS, InnerAnswer, InnerCaller, ServiceKey
from kode.trust.sandbox import Sandbox, sandbox_support

__all__ = ["CODE_POLICY", "GROUP", "CodePolicy", "agent_stubs", "callable_tools", "code_run"]

GROUP = "group:code"
"""The group of ``code_run``."""

_log = logging.getLogger("kode.builtin.code")
_NOT_FROM_SCRIPTS = frozenset({"code_run", "tool_search"})
"""Tools a script cannot call: code_run itself (no script inside a script), tool_search."""


@dataclass(kw_only=True, frozen=True, slots=True)
class CodePolicy:
    """The limits of ``code_run``'s scripts (one agent's: ``CODE_POLICY.set(agent.services, p)``).

    Its sandbox (hidden paths, home paths, the bubblewrap program) is the runtime policy's
    (`kode.builtin.runtime.RuntimePolicy`), but never with network.

    Raises:
        ValueError: a limit is not positive, `timeout` is longer than `max_timeout`,
            `max_output_chars` is under 100, `max_calls` is negative, or `workspace` is
            neither ``"read-only"`` nor ``"workspace-write"``.
    """

    timeout: float = 60.0
    """Seconds a script may run when the call gives no ``timeout`` (tool calls included)."""
    max_timeout: float = 300.0
    """The longest ``timeout`` a call may ask for."""
    memory_mb: int = 1024
    """Its address space, in MiB (``RLIMIT_AS`` of the interpreter and what it starts)."""
    max_output_chars: int = 30_000
    """How much of what it prints is kept: the first and last halves, a marker between."""
    max_calls: int = 100
    """How many tool calls one script may make; the next ones raise ``ToolCallError``."""
    workspace: Literal["read-only", "workspace-write"] = "read-only"
    """Whether the script may write the workspace itself (never: files change through the
    tools it calls, under the permission rules; a runtime policy with a ``read-only``
    sandbox keeps it read-only whatever this says)."""

    def __post_init__(self) -> None:
        if not (self.timeout > 0 and self.max_timeout > 0 and self.memory_mb > 0):
            raise ValueError("a CodePolicy's timeout, max_timeout and memory_mb must be positive")
        if self.timeout > self.max_timeout:
            raise ValueError(
                f"a CodePolicy's timeout ({self.timeout} s) is longer than its max_timeout "
                f"({self.max_timeout} s), the longest a call may ask for: raise max_timeout too"
            )
        if self.max_output_chars < 100 or self.max_calls < 0:
            raise ValueError(
                "a CodePolicy's max_output_chars must be at least 100 and max_calls not negative"
            )
        if self.workspace not in ("read-only", "workspace-write"):
            # Anything else would read as read-only, silently.
            raise ValueError(
                f"a CodePolicy's workspace is 'read-only' or 'workspace-write', "
                f"not {self.workspace!r}"
            )


CODE_POLICY: ServiceKey[CodePolicy] = ServiceKey(
    "code_policy", CodePolicy, doc="the limits of code_run's scripts", passed_on=True
)
"""The service holding an agent's own `CodePolicy` (else the defaults)."""


def callable_tools(tools: Sequence[Tool[..., Any]]) -> list[Tool[..., Any]]:
    """The tools a script may call: the agent's, but ``code_run`` and ``tool_search``."""
    return [t for t in tools if t.name not in _NOT_FROM_SCRIPTS]


def agent_stubs(tools: Sequence[Tool[..., Any]]) -> str:
    """The Python stubs of the tools a script may call, sorted by name."""
    return stubs((t.name, t.description, t.input_schema) for t in callable_tools(tools))


def _instructions(tools: Sequence[Tool[..., Any]], ctx: ToolContext[Any]) -> str:
    """What the system prompt says of ``code_run``: the functions a script has.

    The agent's tools as its `INNER_CALLS` service gives them (without those its permission
    settings deny by name), else `tools`.
    """
    with contextlib.suppress(TypeError):
        caller = INNER_CALLS.get(ctx.services)
        if caller is not None:
            tools = caller.tools()
    shown = agent_stubs(tools)
    if not shown:
        return ""
    return (
        "## code_run: the tools as Python functions\n\n"
        "A code_run script has these functions (each returns the tool's result text and "
        "raises ToolCallError, with kode's message, when the call fails; call_tool(name, "
        "arguments) calls any tool by name). Set a variable `result` to return a value.\n\n"
        f"```python\n{shown}\n```"
    )


def _policy_of(ctx: ToolContext[Any]) -> CodePolicy:
    try:
        return CODE_POLICY.get(ctx.services) or CodePolicy()
    except TypeError as exc:
        raise ToolError(f"{exc}.", type=ToolErrorType.EXECUTION_FAILED) from None


def _roots(ctx: ToolContext[Any]) -> tuple[Path, ...]:
    space = ctx.workspace
    if space is None:
        return (Path.cwd().resolve(),)
    return (space.root, *space.extra_paths)


def _sandbox(ctx: ToolContext[Any], policy: CodePolicy) -> Sandbox:
    """The sandbox of the script (a worker thread's work: it may probe bubblewrap)."""
    try:
        runtime = runtime_policy_for(ctx.services)
    except TypeError as exc:
        raise ToolError(str(exc), type=ToolErrorType.EXECUTION_FAILED) from None
    support = sandbox_support(runtime.bwrap)
    if not support.available or support.program is None:
        raise ToolError(
            f"code_run runs scripts only in an OS sandbox, and there is none here "
            f"({support.reason}); nothing was run. Install bubblewrap (the 'bubblewrap' "
            "package, or kode's 'sandbox' extra), or call the tools one at a time.",
            type=ToolErrorType.PERMISSION_DENIED,
        )
    write = policy.workspace == "workspace-write" and runtime.sandbox == "workspace-write"
    return Sandbox(
        program=support.program,
        mode="workspace-write" if write else "read-only",
        roots=_roots(ctx),
        network=False,
        hidden=runtime.hidden_paths,
        home_paths=runtime.home_paths,
        user_namespace=support.user_namespace,
    )


def _caller(ctx: ToolContext[Any]) -> InnerCaller:
    try:
        caller = INNER_CALLS.get(ctx.services)
    except TypeError as exc:
        raise ToolError(f"{exc}.", type=ToolErrorType.EXECUTION_FAILED) from None
    if caller is None:
        raise ToolError(
            "code_run runs only inside an agent (its script calls the agent's tools); nothing "
            "was run.",
            type=ToolErrorType.EXECUTION_FAILED,
        )
    return caller


def _on_agent_create(ctx: ToolContext[Any]) -> None:
    """Say once, when an agent gets ``code_run``, if scripts cannot be sandboxed here."""
    with contextlib.suppress(TypeError):
        support = sandbox_support(runtime_policy_for(ctx.services).bwrap)
        if not support.available:
            _log.warning(
                "kode: code_run will refuse every script: there is no OS sandbox here (%s).",
                support.reason,
            )


@define_tool(kind="execute", groups=[GROUP], optional=True)
async def code_run(
    script: Annotated[str, Field(min_length=1, max_length=200_000)],
    timeout: Annotated[float | None, Field(gt=0)] = None,  # noqa: ASYNC109 - the model's knob
    *,
    ctx: ToolContext,
) -> ToolResult:
    """Run a Python script in which the agent's tools are functions; return what it prints.

    Use it for several tool calls whose intermediate results you do not need to see
    (lookups to combine, loops, filtering): the system prompt lists the functions. Each
    returns the tool's result text and raises ToolCallError when the call fails; every call
    is checked and approved like a direct one. Print what you want to see, or set a variable
    `result`. The script runs in a sandbox: no network, the file system read-only but a
    private /tmp, limits on time, memory, output and number of calls.

    Args:
        script: The Python 3 code to run.
        timeout: Seconds before the script and everything it started are killed (default
            60, at most 300), its tool calls included.
        ctx: Injected by kode (not shown to the model).
    """
    policy = _policy_of(ctx)
    caller = _caller(ctx)
    sandbox = await anyio.to_thread.run_sync(_sandbox, ctx, policy)
    allowed = callable_tools(caller.tools())
    functions = {function_name(t.name): t.name for t in sorted(allowed, key=lambda t: t.name)}
    parent = ctx.tool_call_id or "code_run"
    serial = 0

    async def call(name: str, arguments: dict[str, Any]) -> InnerAnswer:
        nonlocal serial
        serial += 1
        if name.strip().lower() in _NOT_FROM_SCRIPTS:
            return InnerAnswer(
                text=f"Tool '{name}' cannot be called from a script; nothing was run.",
                is_error=True,
                status="failed",
                error_type=ToolErrorType.POLICY_VIOLATION.value,
            )
        answer = await caller.call(
            name, arguments, call_id=f"{parent}.{serial}", parent_call_id=parent
        )
        if answer.status == "pending":
            return InnerAnswer(
                text=f"Tool '{name}' is run by the client, which a script cannot wait for.",
                is_error=True,
                status="failed",
                error_type=ToolErrorType.EXECUTION_FAILED.value,
            )
        return answer

    limit = policy.timeout if timeout is None else min(timeout, policy.max_timeout)
    outcome = await run_script(
        script,
        functions=functions,
        sandbox=sandbox,
        cwd=_roots(ctx)[0],
        env=command_environment(confined=True),
        seconds=limit,
        memory=policy.memory_mb << 20,
        max_chars=policy.max_output_chars,
        max_calls=policy.max_calls,
        call=call,
    )
    parts = [outcome.output.rstrip("\n")] if outcome.output else []
    if outcome.result is not None:
        parts.append(f"result = {json.dumps(outcome.result, ensure_ascii=False)}")
    elif outcome.result_repr is not None:
        parts.append(f"result = {outcome.result_repr}")
    error: ToolErrorType | None = None
    if outcome.timed_out:
        parts.append(
            f"[the script timed out after {limit:g} s: it and everything it started were killed]"
        )
        error = ToolErrorType.TIMEOUT
    elif outcome.broken is not None:
        parts.append(f"[the script was killed: {outcome.broken}]")
        error = ToolErrorType.EXECUTION_FAILED
    elif outcome.exit_code not in (0, None):
        parts.append(f"[the script exited with code {outcome.exit_code}]")
        error = ToolErrorType.EXECUTION_FAILED
    if outcome.leftovers_killed:
        parts.append("[the script left processes running; they were killed]")
    if outcome.calls > policy.max_calls:
        parts.append(
            f"[{outcome.calls - policy.max_calls} tool calls were refused: at most "
            f"{policy.max_calls} per script]"
        )
    text = "\n".join(parts) or "(no output)"
    return ToolResult(
        content=(TextBlock(text=text),),
        details={
            "exit_code": outcome.exit_code,
            "calls": outcome.calls,
            "timed_out": outcome.timed_out,
            "leftovers_killed": outcome.leftovers_killed,
            "output_chars": outcome.total_chars,
            "truncated": outcome.truncated,
            "result": outcome.result,
        },
        is_error=error is not None,
        error_type=error,
    )


code_run.on_agent_create = _on_agent_create
code_run.agent_instructions = _instructions
