"""What the ``kode tools`` and ``kode run`` commands share.

This module owns the error a command stops with (`CommandError`, exit code 2, printed by
`guarded`), the options that name modules of tools and a deps factory, and loading what they
name: importing a module (a dotted name, or a path to a ``.py`` file) registers its tools, and
``--builtin`` adds kode's own. It does not run any command.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from collections.abc import Callable
from typing import Any

__all__ = [
    "CommandError",
    "add_deps_argument",
    "add_tool_arguments",
    "deps_from",
    "get_tool",
    "guarded",
    "hint_modules",
    "load_tools",
    "merged",
    "print_json",
]


class CommandError(Exception):
    """A command cannot go on; its message is printed and the exit code is 2."""


def _import(target: str) -> None:
    from kode.registries.modules import import_tools_module

    try:
        import_tools_module(target)
    except Exception as exc:  # anything the user's module raises at import time
        raise CommandError(
            f"could not import module {target!r}: {type(exc).__name__}: {exc}"
        ) from exc


def load_tools(args: argparse.Namespace) -> Any:
    """The global registry, with the modules ``args`` names imported (and ``--builtin``)."""
    from kode import registry

    if getattr(args, "builtin", False):
        importlib.import_module("kode.builtin")
    for target in getattr(args, "modules", None) or ():
        _import(target)
    return registry


def get_tool(reg: Any, name: str) -> Any:
    """The tool `name` of `reg`; a `CommandError` that says what is registered if none."""
    from kode import ToolNotFoundError

    try:
        return reg.get(name)
    except ToolNotFoundError as exc:
        raise CommandError(str(exc) + hint_modules(reg)) from None


def hint_modules(reg: Any) -> str:
    """What to add to a message about a tool that is not there: the names there are."""
    if len(reg) == 0:
        return (
            " No tools are registered: name the module that defines them (-m MODULE), or add "
            "--builtin for kode's built-in tools."
        )
    return f" Registered: {', '.join(reg.names())}."


def deps_from(args: argparse.Namespace) -> Any:
    """The deps ``--deps module:factory`` makes (its factory is called once), or `None`."""
    from kode.registries.deps import DepsSpecError, load_deps

    spec = getattr(args, "deps", None)
    if spec is None:
        return None
    try:
        return load_deps(spec)
    except DepsSpecError as exc:
        raise CommandError(f"--deps: {exc}") from None


def print_json(value: Any) -> None:
    """Print `value` as indented JSON (what JSON cannot hold, as its ``str``)."""
    print(json.dumps(value, indent=2, ensure_ascii=False, default=str))


def guarded(func: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """`func` as a command's handler: its logging set up, a `CommandError` printed (exit 2)."""
    from kode.cli.log import LogFileError, logging_for

    def run(args: argparse.Namespace) -> int:
        try:
            with logging_for(args):
                code: int = func(args)
            return code
        except (CommandError, LogFileError) as exc:
            print(f"kode: {exc}", file=sys.stderr)
            return 2

    return run


def add_tool_arguments(p: argparse.ArgumentParser) -> None:
    """``-m MODULE``, ``--builtin`` and the logging options, which every such command takes."""
    from kode.cli.log import add_log_arguments

    p.add_argument(
        "-m",
        "--module",
        dest="modules",
        action="append",
        default=[],
        help="a module (dotted name or .py path) to import first; repeatable",
    )
    p.add_argument("--builtin", action="store_true", help="load kode's built-in tools")
    add_log_arguments(p)


def add_deps_argument(p: argparse.ArgumentParser) -> None:
    """``--deps MODULE:FACTORY``: the deps tools get as ``ctx.deps``."""
    p.add_argument(
        "--deps",
        metavar="MODULE:FACTORY",
        help="make the deps tools get as ctx.deps: FACTORY() from MODULE (a dotted name "
        "or .py path), called once with no arguments",
    )


def merged(args: argparse.Namespace) -> argparse.Namespace:
    """`args` with the modules given as positional arguments before those given with ``-m``."""
    args.modules = [*getattr(args, "modules_pos", []), *args.modules]
    return args
