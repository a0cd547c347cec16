"""The ``kode`` command: inspect, call and check tools, run agents, serve tools over MCP.

Each command group is a module of this package that adds itself to the parser here:
``kode tools ...`` (`kode.cli.tools`, with ``check`` in `kode.cli.check`), ``kode run ...``
(`kode.cli.run`, with what it shows and asks at the terminal in `kode.cli.terminal`),
``kode skills ...`` (`kode.cli.skills`), ``kode mcp ...`` (`kode.cli.mcp`), ``kode worker`` and
``kode schedules ...`` (`kode.cli.durable`); what the tools and run commands share is in
`kode.cli.common`, and their log records go through `kode.cli.log`.
A group imports what it drives when it runs, not when the parser is built, so ``kode --help``
loads no provider SDK, no pydantic, no MCP and no DBOS.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

__all__ = ["build_parser", "main", "version"]

_GROUPS = (
    "kode.cli.tools",
    "kode.cli.run",
    "kode.cli.skills",
    "kode.cli.mcp",
    "kode.cli.durable",
)


def version() -> str:
    """The installed kode's version: its distribution's, else ``kode.__version__``."""
    from kode.version import installed_version

    return installed_version()


class _Version(argparse.Action):
    """``--version``: the version is read when asked for (importlib.metadata is slow to load)."""

    def __call__(self, parser: argparse.ArgumentParser, *args: object) -> None:
        print(f"kode {version()}")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    """The ``kode`` argument parser, with every available command group."""
    parser = argparse.ArgumentParser(
        prog="kode",
        description="Define typed, documented Python functions as LLM tools; inspect, call and "
        "check them, run agents, and serve them over MCP.",
    )
    parser.add_argument(
        "--version", action=_Version, nargs=0, help="show the installed kode's version and exit"
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module_name in _GROUPS:
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            if exc.name and module_name.startswith(exc.name):
                continue  # the group is not available in this installation
            raise
        module.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``kode`` command; return its exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    try:
        code: int = handler(args)
    except BrokenPipeError:  # the output was piped into a command that stopped reading
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:  # Ctrl-C where a command does not handle it itself
        print("\nkode: interrupted", file=sys.stderr)
        return 130
    return code
