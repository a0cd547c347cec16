"""The ``kode mcp`` commands: ``kode mcp serve my_module [--tools ...] [--http PORT]``.

This module owns the command line of the MCP layer and nothing else: it imports the modules
that define tools (a module name, or a path to a ``.py`` file) and hands over to
`kode.mcp.server.serve`. It does not import the MCP SDK until a command runs, so ``kode``
works without the ``mcp`` extra.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from typing import Any

from kode.registries.modules import import_tools_module

__all__ = ["load_module", "register"]


def load_module(spec: str) -> None:
    """Import `spec`, a module name or a ``.py`` file's path (see `import_tools_module`)."""
    import_tools_module(spec)


def _patterns(values: list[str] | None) -> list[str] | None:
    if values is None:
        return None
    return [p.strip() for value in values for p in value.split(",") if p.strip()]


def _serve(args: argparse.Namespace) -> int:
    from kode.cli_log import LogFileError, logging_for

    try:
        with logging_for(args):
            return _serve_logged(args)
    except LogFileError as exc:
        print(f"kode mcp serve: {exc}", file=sys.stderr)
        return 2


def _serve_logged(args: argparse.Namespace) -> int:
    transport = "http" if args.http is not None else "stdio"
    # Over stdio, stdout is the protocol: whatever the modules print while loading goes to
    # stderr instead (while serving, the SDK keeps tools' output off stdout itself).
    quiet: Any = contextlib.redirect_stdout(sys.stderr) if transport == "stdio" else None
    with quiet or contextlib.nullcontext():
        for spec in args.modules:
            try:
                load_module(spec)
            except Exception as exc:
                print(f"kode mcp serve: cannot import {spec!r}: {exc}", file=sys.stderr)
                return 2
        deps = None
        if args.deps is not None:
            from kode.registries.deps import DepsSpecError, load_deps

            try:
                deps = load_deps(args.deps)  # once: every call of every client shares it
            except DepsSpecError as exc:
                print(f"kode mcp serve: --deps: {exc}", file=sys.stderr)
                return 2
    try:
        from kode.mcp.server import ToolServer
    except ModuleNotFoundError as exc:
        print(
            f"kode mcp serve needs the MCP SDK ({exc.name} is missing): "
            "pip install 'kode-sdk[mcp]'",
            file=sys.stderr,
        )
        return 2
    server = ToolServer(
        _patterns(args.tools),
        name=args.name,
        poll_interval=args.poll_interval,
        tool_timeout=args.tool_timeout,
        deps=deps,
    )
    for entry in server.unmatched:
        print(f"kode mcp serve: --tools {entry!r} matches no tool (yet)", file=sys.stderr)
    if not server.tools:
        print(
            "kode mcp serve: no tools to serve (yet): define tools in the modules given, or "
            "fix --tools; tools defined later will be announced to clients",
            file=sys.stderr,
        )
    import functools

    import anyio

    if transport == "http":
        print(
            f"kode mcp serve: {len(server.tools)} tools at "
            f"http://{args.host}:{args.http}{args.path}",
            file=sys.stderr,
        )
        runner: Any = functools.partial(
            server.run_http, host=args.host, port=args.http, path=args.path
        )
    else:
        runner = server.run_stdio
    try:
        anyio.run(runner, backend="asyncio")
    except KeyboardInterrupt:
        return 130
    return 0


def register(subparsers: Any) -> None:
    """Add ``kode mcp ...`` to the ``kode`` command's subparsers."""
    from kode.cli_log import add_log_arguments

    mcp = subparsers.add_parser(
        "mcp",
        help="serve tools over MCP",
        description="Serve registered tools to MCP clients (Claude Desktop, IDEs, other agents).",
    )
    commands = mcp.add_subparsers(dest="mcp_command", metavar="COMMAND")
    serve = commands.add_parser(
        "serve",
        help="serve the tools a module defines, over stdio or streamable HTTP",
        description="Import the modules (names or .py files), then serve their registered "
        "tools over MCP: over stdin/stdout by default, or over streamable HTTP with --http.",
    )
    serve.add_argument("modules", nargs="+", metavar="MODULE", help="module name or .py file")
    serve.add_argument(
        "--tools",
        action="extend",
        nargs="+",
        metavar="PATTERN",
        help="tool names and patterns to serve, as a template writes them (fs_*, group:web); "
        "default: every non-optional tool",
    )
    serve.add_argument("--http", type=int, metavar="PORT", help="serve streamable HTTP on PORT")
    serve.add_argument("--host", default="127.0.0.1", help="HTTP interface (default: loopback)")
    serve.add_argument("--path", default="/mcp", help="HTTP endpoint path (default: /mcp)")
    serve.add_argument("--name", default="kode", help="the server's name shown to clients")
    serve.add_argument(
        "--tool-timeout",
        type=float,
        metavar="SECONDS",
        help="limit for a call of a tool without a timeout of its own (default: none)",
    )
    serve.add_argument(
        "--deps",
        metavar="MODULE:FACTORY",
        help="make the deps tools get as ctx.deps: FACTORY() from MODULE (a dotted name or "
        ".py path), called once at the start",
    )
    serve.add_argument(
        "--poll-interval",
        type=float,
        default=0.5,
        metavar="SECONDS",
        help="how often to look for tools defined after the start (default: 0.5)",
    )
    add_log_arguments(serve)
    serve.set_defaults(handler=_serve)

    def show_help(_args: argparse.Namespace) -> int:
        mcp.print_help()
        return 2

    mcp.set_defaults(handler=show_help)
