"""The ``kode mcp`` commands: ``kode mcp serve my_module [--tools ...] [--skills ...]``.

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

from kode.extras import install_hint

__all__ = ["load_module", "register"]


def load_module(spec: str) -> None:
    """Import `spec`, a module name or a ``.py`` file's path (see `import_tools_module`)."""
    # Imported here: `kode --help` builds this group's parser, and needs no tool machinery.
    from kode.registries.modules import import_tools_module

    import_tools_module(spec)


def _patterns(values: list[str] | None) -> list[str] | None:
    if values is None:
        return None
    return [p.strip() for value in values for p in value.split(",") if p.strip()]


def _serve(args: argparse.Namespace) -> int:
    from kode.cli.log import LogFileError, logging_for

    try:
        with logging_for(args):
            return _serve_logged(args)
    except LogFileError as exc:
        print(f"kode mcp serve: {exc}", file=sys.stderr)
        return 2


_HTTP_ONLY = (
    ("allowed_hosts", "--allowed-host"),
    ("allowed_origins", "--allowed-origin"),
    ("token_env", "--token-env"),
    ("token_file", "--token-file"),
    ("allow_unauthenticated", "--allow-unauthenticated"),
    ("header_timeout", "--header-timeout"),
)


def _tokens(args: argparse.Namespace) -> list[str] | str:
    """The bearer tokens from --token-env and --token-file, or an error message."""
    import os
    from pathlib import Path

    tokens: list[str] = []
    if args.token_env is not None:
        value = os.environ.get(args.token_env, "").strip()
        if not value:
            return f"--token-env {args.token_env}: the environment variable is not set or empty"
        tokens.append(value)
    if args.token_file is not None:
        try:
            text = Path(args.token_file).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            return f"--token-file {args.token_file}: cannot read it: {exc}"
        found: list[str] = []
        for number, line in enumerate(text.splitlines(), 1):
            token = line.strip()
            if not token or line.startswith("#"):
                continue
            if token.startswith("#"):  # else a long enough comment would be a valid token
                return (
                    f"--token-file {args.token_file}: line {number} is a '#' comment after "
                    "spaces: start a comment at the beginning of its line (a token cannot "
                    "start with '#')"
                )
            if any(character.isspace() for character in token):
                return (
                    f"--token-file {args.token_file}: line {number} has spaces inside: write "
                    "one token per line, and comments on lines of their own starting with '#'"
                )
            found.append(token)
        if not found:
            return f"--token-file {args.token_file}: the file holds no token (one per line)"
        tokens.extend(found)
    return tokens


def _access(args: argparse.Namespace) -> Any:
    """The `HTTPAccess` the options ask for, or an error message (a string)."""
    from kode.mcp.http import HTTPAccess, StaticTokenVerifier, check_exposure, transport_security

    tokens = _tokens(args)
    if isinstance(tokens, str):
        return tokens
    try:
        access = HTTPAccess(
            allowed_hosts=args.allowed_hosts or (),
            allowed_origins=args.allowed_origins or (),
            token_verifier=StaticTokenVerifier(tokens) if tokens else None,
            allow_unauthenticated=args.allow_unauthenticated,
        )
        transport_security(
            args.host, allowed_hosts=access.allowed_hosts, allowed_origins=access.allowed_origins
        )
    except ValueError as exc:
        return str(exc)
    try:
        check_exposure(
            args.host,
            authenticated=bool(tokens),
            allow_unauthenticated=args.allow_unauthenticated,
        )
    except ValueError:
        return (
            f"--host {args.host} listens beyond this machine, and without authentication "
            "anyone who can reach the port can run the tools: require a bearer token with "
            "--token-env NAME or --token-file PATH, or pass --allow-unauthenticated when "
            "something in front of the server authenticates the clients"
        )
    return access


def _no_sdk(exc: ModuleNotFoundError) -> int:
    print(
        f"kode mcp serve needs the MCP SDK ({exc.name} is missing): {install_hint('mcp')}",
        file=sys.stderr,
    )
    return 2


def _skills(entries: list[str]) -> Any:
    """The `SkillCatalog` --skills asks for, or an error message (a string).

    Entries are read as a template's ``skills``: folders (relative ones from the current
    directory) and names of skills in ``$KODE_HOME/skills`` or a plugin; without names, every
    skill of those is served too. Malformed shared skills and clashes are reported on stderr.
    """
    from kode.tools.skills import SkillError, skill_sources

    try:
        catalog = skill_sources(entries)
    except SkillError as exc:
        return str(exc).replace("template skills entry", "entry", 1)
    for line in [*catalog.clashes(), *catalog.problems]:
        print(f"kode mcp serve: --skills: {line}", file=sys.stderr)
    return catalog


def _serve_logged(args: argparse.Namespace) -> int:
    transport = "http" if args.http is not None else "stdio"
    if transport == "stdio":
        given = [flag for name, flag in _HTTP_ONLY if getattr(args, name)]
        if given:
            print(
                f"kode mcp serve: {', '.join(given)} only apply with --http PORT",
                file=sys.stderr,
            )
            return 2
    access: Any = None
    if transport == "http":  # checked first: a refused exposure imports nothing
        try:
            access = _access(args)
        except ModuleNotFoundError as exc:
            return _no_sdk(exc)
        if isinstance(access, str):
            print(f"kode mcp serve: {access}", file=sys.stderr)
            return 2
        if args.header_timeout is not None and not args.header_timeout > 0:
            print(
                f"kode mcp serve: --header-timeout {args.header_timeout}: give a number of "
                "seconds above 0",
                file=sys.stderr,
            )
            return 2
    if args.task_idle_timeout is not None and not args.task_idle_timeout > 0:
        print(
            f"kode mcp serve: --task-idle-timeout {args.task_idle_timeout}: give a number of "
            "seconds above 0",
            file=sys.stderr,
        )
        return 2
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
    skills = None
    if args.skills:
        skills = _skills(args.skills)
        if isinstance(skills, str):
            print(f"kode mcp serve: --skills: {skills}", file=sys.stderr)
            return 2
    try:
        from kode.mcp.server import ToolServer
    except ModuleNotFoundError as exc:
        return _no_sdk(exc)
    server = ToolServer(
        _patterns(args.tools),
        name=args.name,
        poll_interval=args.poll_interval,
        tool_timeout=args.tool_timeout,
        deps=deps,
        skills=skills,
        **({} if args.task_idle_timeout is None else {"task_idle_timeout": args.task_idle_timeout}),
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
        shown_host = f"[{args.host}]" if ":" in args.host else args.host
        how = "bearer token required" if access.token_verifier else "no authentication"

        def announce(port: int) -> None:  # once bound: --http 0 gets a port of the system's
            print(
                f"kode mcp serve: {len(server.tools)} tools at "
                f"http://{shown_host}:{port}{args.path} ({how})",
                file=sys.stderr,
                flush=True,
            )

        runner: Any = functools.partial(
            server.run_http,
            host=args.host,
            port=args.http,
            path=args.path,
            access=access,
            **({} if args.header_timeout is None else {"header_timeout": args.header_timeout}),
            on_listening=announce,
        )
    else:
        runner = server.run_stdio
    flush: Any = None
    if args.otel:  # trace calls, continuing each client's trace (params._meta)
        from kode.tracing.setup import configure_sdk

        try:
            flush = configure_sdk(service_name="kode-mcp-serve")
        except ImportError as exc:
            print(f"kode mcp serve: {exc}", file=sys.stderr)
            return 2
    try:
        anyio.run(runner, backend="asyncio")
    except KeyboardInterrupt:
        return 130
    except OSError as exc:  # the address cannot be bound
        print(
            f"kode mcp serve: cannot listen on {args.host}:{args.http}: {exc.strerror or exc}",
            file=sys.stderr,
        )
        return 2
    finally:
        if flush is not None:
            flush()
    return 0


def register(subparsers: Any) -> None:
    """Add ``kode mcp ...`` to the ``kode`` command's subparsers."""
    from kode.cli.log import add_log_arguments

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
    serve.add_argument(
        "--skills",
        action="extend",
        nargs="+",
        metavar="ENTRY",
        help="offer skills, as a template's skills names them: folders (a skill, or folders "
        "of skills) and names of skills in $KODE_HOME/skills or a plugin (without names, all "
        "of those too); serves the skill tool and each skill's files as skill:// resources",
    )
    serve.add_argument("--http", type=int, metavar="PORT", help="serve streamable HTTP on PORT")
    serve.add_argument("--host", default="127.0.0.1", help="HTTP interface (default: loopback)")
    serve.add_argument("--path", default="/mcp", help="HTTP endpoint path (default: /mcp)")
    serve.add_argument(
        "--allowed-host",
        dest="allowed_hosts",
        action="append",
        metavar="HOST",
        help="accept this Host header besides the loopback names and --host (a name a proxy "
        "or clients use; HOST, HOST:PORT or HOST:*); repeatable",
    )
    serve.add_argument(
        "--allowed-origin",
        dest="allowed_origins",
        action="append",
        metavar="ORIGIN",
        help="accept this Origin header (https://app.example.com); repeatable",
    )
    serve.add_argument(
        "--token-env",
        metavar="NAME",
        help="require 'Authorization: Bearer <token>', the token being the value of the "
        "environment variable NAME",
    )
    serve.add_argument(
        "--token-file",
        metavar="PATH",
        help="require a bearer token, any of those in the file PATH (one per line)",
    )
    serve.add_argument(
        "--header-timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="close a connection that has not sent a request's headers SECONDS after it "
        "connected or after the previous response (default 10)",
    )
    serve.add_argument(
        "--allow-unauthenticated",
        action="store_true",
        help="serve on a non-loopback --host without a token (when a proxy in front "
        "authenticates); refused otherwise",
    )
    serve.add_argument("--name", default="kode", help="the server's name shown to clients")
    serve.add_argument(
        "--tool-timeout",
        type=float,
        metavar="SECONDS",
        help="limit for a call of a tool without a timeout of its own (default: none)",
    )
    serve.add_argument(
        "--task-idle-timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="cancel a 2026-07-28 task (the tasks extension) that no client asked about for "
        "SECONDS (default 300)",
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
    serve.add_argument(
        "--otel",
        action="store_true",
        help="trace calls with OpenTelemetry: to OTEL_EXPORTER_OTLP_ENDPOINT over OTLP/HTTP "
        "when set, else as JSON on stderr",
    )
    add_log_arguments(serve)
    serve.set_defaults(handler=_serve)

    def show_help(_args: argparse.Namespace) -> int:
        mcp.print_help()
        return 2

    mcp.set_defaults(handler=show_help)
