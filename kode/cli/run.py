"""``kode run``: run an agent from a template file on a prompt, at the terminal.

This module owns the command: the model (from ``--model`` or the environment, its SDK imported
while the tools and the template load), the template and the tools it names, the agent, the
status line, tracing with ``--otel``, and Ctrl-C (the first interrupts the run, keeping its
history valid; a second stops waiting; threads of sync tools still running are abandoned).
What it prints and asks as the run goes is `kode.cli.terminal`'s.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

from kode.cli.common import (
    CommandError,
    add_deps_argument,
    add_tool_arguments,
    deps_from,
    guarded,
    load_tools,
)

__all__ = ["register"]


def register(commands: Any) -> None:
    """Add ``run`` to the ``kode`` command."""
    run = commands.add_parser("run", help="run an agent from a template file on a prompt")
    run.add_argument("template", help="a .toml or .json agent template")
    run.add_argument("prompt", help="what to ask")
    run.add_argument(
        "--model", help="a model name, or scripted:TURNS.json (default: from the environment)"
    )
    run.add_argument("--workspace", help="the directory tools may touch")
    run.add_argument(
        "--otel",
        action="store_true",
        help="trace the run with OpenTelemetry: to OTEL_EXPORTER_OTLP_ENDPOINT over OTLP/HTTP "
        "when set, else as JSON on stderr",
    )
    run.add_argument(
        "--status",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="say on stderr what was loaded before the model's first reply (the agent, its "
        "tool count, the model); default: when stderr is a terminal",
    )
    add_tool_arguments(run)
    add_deps_argument(run)
    run.set_defaults(handler=guarded(_cmd_run))


def _model_from(spec: str | None) -> Any:
    from kode.models import model_from_environment

    try:  # the one reading of model strings, shared with Agent.create
        return model_from_environment(spec)
    except ValueError as exc:  # a ScriptError too
        raise CommandError(f"--model: {exc}" if spec else str(exc)) from None


def _builtin_hint(reg: Any, entries: list[str]) -> str:
    """Which of `entries` only kode's built-in tools would match: the hint to add --builtin."""
    try:
        before = {u.entry for u in reg.resolve(entries).unmatched}
        if not before:
            return ""
        importlib.import_module("kode.builtin")
        after = {u.entry for u in reg.resolve(entries).unmatched}
    except Exception:  # a hint only: the error it would add to is reported as it is
        return ""
    builtin = [e for e in entries if e in before and e not in after]
    if not builtin:
        return ""
    listed = ", ".join(repr(e) for e in builtin)
    return f" {listed} {'is' if len(builtin) == 1 else 'are'} built into kode: add --builtin."


def _otel() -> Any:
    """Trace the run (``--otel``): OTLP/HTTP with an endpoint set, else JSON on stderr."""
    from kode.tracing.setup import configure_sdk

    try:
        return configure_sdk(service_name="kode-run")
    except ImportError as exc:
        raise CommandError(str(exc)) from None


def _cmd_run(args: argparse.Namespace) -> int:
    import anyio

    from kode.agent import Agent, AgentError, AgentTemplate, TemplateError
    from kode.cli.terminal import elicit, show

    # The model first: its provider's SDK (seconds for anthropic) is imported in a thread while
    # the tools and the template load. A wrong --model is still reported where it was, after
    # a template that cannot be read.
    try:
        model: Any = _model_from(args.model)
        wrong_model: CommandError | None = None
    except CommandError as exc:
        model, wrong_model = None, exc
    if model is not None:
        from kode.models.resolve import import_sdk_soon

        import_sdk_soon(model)
    reg = load_tools(args)
    try:
        template = AgentTemplate.from_file(args.template)
    except FileNotFoundError:
        raise CommandError(
            f"the template {args.template} does not exist: give the path of a .toml or .json "
            "agent template"
        ) from None
    except OSError as exc:
        raise CommandError(
            f"the template {args.template} cannot be read ({exc.strerror or exc})"
        ) from None
    except TemplateError as exc:
        raise CommandError(str(exc)) from None
    if args.workspace is not None and not Path(args.workspace).is_dir():
        raise CommandError(
            f"--workspace {args.workspace}: "
            + ("not a directory" if Path(args.workspace).exists() else "no such directory")
            + "; give an existing directory for the tools to work in"
        )
    if wrong_model is not None:
        raise wrong_model
    deps = deps_from(args)
    flush = _otel() if args.otel else None  # before the agent: it is made traced
    try:
        agent = Agent.create(
            template, model=model, workspace=args.workspace, deps=deps, elicitation=elicit
        )
    except AgentError as exc:
        hint = "" if args.builtin else _builtin_hint(reg, list(template.tools or ()))
        raise CommandError(str(exc) + hint) from None
    if _shows_status(args):
        print(_status_line(agent, args.model), file=sys.stderr, flush=True)
    started: dict[str, float] = {}
    code = 0
    interrupted = False

    async def on_interrupt(showing: list[anyio.CancelScope], everything: anyio.CancelScope) -> None:
        """Ctrl-C interrupts the run (its history stays valid); a second one stops waiting."""
        nonlocal interrupted
        import signal

        try:
            receiver = anyio.open_signal_receiver(signal.SIGINT)
        except NotImplementedError:  # no signal handlers here: KeyboardInterrupt, in main()
            return
        with receiver as signals:
            async for _signal in signals:
                if interrupted:
                    everything.cancel()
                    return
                interrupted = True
                agent.interrupt()
                for scope in showing:
                    scope.cancel()  # an approval prompt waiting for its answer

    async def main() -> None:
        nonlocal code
        async with agent, anyio.create_task_group() as tg:
            showing: list[anyio.CancelScope] = []
            tg.start_soon(on_interrupt, showing, tg.cancel_scope)
            async for event in agent.stream(args.prompt):
                with anyio.CancelScope() as scope:
                    showing[:] = [scope]
                    code = max(code, await show(agent, event, started))
                showing.clear()
            tg.cancel_scope.cancel()

    try:
        anyio.run(main)
    finally:
        if flush is not None:
            flush()  # the spans still batched are sent before the command ends
    if interrupted:
        import signal

        signal.signal(signal.SIGINT, signal.SIG_IGN)  # already ending: no traceback for another
        busy = _busy_threads()
        if busy:
            _abandon(busy)
        print("kode: interrupted", file=sys.stderr)
        return 130
    return code


def _shows_status(args: argparse.Namespace) -> bool:
    """``--status``, ``--no-status``, else whether stderr is a terminal."""
    if args.status is not None:
        return bool(args.status)
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # no stderr, or a closed one
        return False


def _status_line(agent: Any, spec: str | None) -> str:
    """What ``kode run`` says on stderr before the model's first reply: what was loaded."""
    from kode.models.resolve import PROVIDERS

    named = spec or os.environ.get("KODE_MODEL") or ""
    if named.partition(":")[0] not in PROVIDERS:  # a name the environment gave a provider
        provider = getattr(agent.model, "provider", "")
        name = getattr(agent.model, "name", type(agent.model).__name__)
        named = f"{provider}:{name}" if provider else str(name)
    count = len(agent.tools)
    return (
        f"kode: agent {agent.template.id!r} with {count} tool{'' if count == 1 else 's'}; "
        f"asking {named}"
    )


def _busy_threads() -> list[threading.Thread]:
    """Threads still running a sync tool's call (idle worker threads end within moments)."""
    deadline = time.monotonic() + 0.5
    busy = []
    for thread in threading.enumerate():
        if thread is threading.main_thread() or thread.daemon:
            continue
        thread.join(max(0.0, deadline - time.monotonic()))
        if thread.is_alive():
            busy.append(thread)
    return busy


def _abandon(busy: list[threading.Thread]) -> None:
    """End the process now: Python would wait for `busy` to return before exiting.

    They are the threads of sync tool calls (kode's own threads are daemons), or threads a
    tool started. A thread cannot be stopped from outside; the interrupted call's result would
    be discarded anyway, and its history already says it was interrupted. What the tool had
    done stays done.
    """
    count = f"{len(busy)} thread{'s' if len(busy) > 1 else ''}"
    print(
        f"kode: interrupted ({count} of a tool still running, abandoned: what it had done "
        "stays done)",
        file=sys.stderr,
    )
    sys.stdout.flush()
    sys.stderr.flush()
    logging.shutdown()  # --log-file's records are written
    os._exit(130)
