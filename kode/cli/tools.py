"""``kode tools ...``: list, search, show and call registered tools, and check them.

This module owns the ``tools`` command group: its parser and the commands that look at tools
and call one (``list``, ``search``, ``show``, ``call``). Linting (``check``) is
`kode.cli.check`'s, imported when it runs; ``kode run`` is `kode.cli.run`'s. Modules named on the
command line are imported (a dotted name, or a path to a ``.py`` file), which registers their
tools; the built-ins are available with ``--builtin`` (`kode.cli.common`).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from kode.cli.common import (
    CommandError,
    add_deps_argument,
    add_tool_arguments,
    deps_from,
    get_tool,
    guarded,
    hint_modules,
    load_tools,
    merged,
    print_json,
)

__all__ = ["register"]


def _description(reg: Any, entry: Any) -> str:
    tool = entry.tool
    if tool is None:  # a factory's tool: made for a default context, as `check` does
        try:
            tool = reg.get(entry.name)
        except Exception:  # a factory that needs a real context: no description to show
            return ""
    return str(tool.description or "")


def _cut(text: str, room: int) -> str:
    """`text` in at most `room` characters, with an ellipsis when it was cut."""
    if len(text) <= room:
        return text
    return text[: room - 1].rstrip() + "…" if room > 1 else ""


def _deferred(reg: Any, entry: Any, meta: Any) -> bool:
    """Whether an agent listing the tool gets it deferred (a template may defer more)."""
    from kode.registries.entries import normalize_name
    from kode.registries.policy import entry_matches

    if meta.defer_loading or entry.tool.defer_loading:
        return True
    above = reg.defer_mcp_above
    if meta.server is not None and above is not None:
        with reg.reading() as view:
            if view.index.server_size(meta.server) > above:
                return True
    aliases = tuple(normalize_name(a) for a in meta.aliases)
    return any(entry_matches(p, meta, aliases) for p in reg.deferred_patterns())


def _cmd_list(args: argparse.Namespace) -> int:
    import shutil

    reg = load_tools(args)
    rows = []
    for entry in reg.entries():
        meta = reg.meta(entry.name)
        rows.append(
            {
                "name": meta.name,
                "description": _description(reg, entry),
                "source": meta.source.value,
                "plugin_id": meta.plugin_id,
                "server": meta.server,
                "kind": meta.kind.value,
                "groups": list(meta.groups),
                "optional": meta.optional,
                "aliases": list(meta.aliases),
                "defer_loading": _deferred(reg, entry, meta),
            }
        )
    if args.json:
        print_json(rows)
        return 0
    if not rows:
        print(hint_modules(reg).strip())
        return 0
    columns = shutil.get_terminal_size((80, 24)).columns  # COLUMNS, the terminal, or 80
    width = max(len(r["name"]) for r in rows)
    groups_width = max(len(",".join(r["groups"]) or "-") for r in rows)
    for r in rows:
        source = r["source"] + (
            f":{r['plugin_id'] or r['server']}" if r["plugin_id"] or r["server"] else ""
        )
        groups = ",".join(r["groups"]) or "-"
        line = f"{r['name']:<{width}}  {source:<10} {r['kind']:<8} {groups:<{groups_width}}"
        first = (r["description"].strip().splitlines() or [""])[0].strip()
        described = _cut(first, columns - len(line) - 2)
        print(f"{line}  {described}" if described else line.rstrip())
    return 0


def _cmd_search(args: argparse.Namespace) -> int:
    import re

    reg = load_tools(args)
    query = " ".join(args.query)
    if not query.strip() and not args.regex:
        raise CommandError("give words to search for (kode tools search create issue), or --regex")
    try:
        hits = reg.search(query, regex=args.regex, limit=args.limit)
    except re.error as exc:
        raise CommandError(
            f"--regex {args.regex!r} is not a valid regular expression: {exc}"
        ) from None
    if args.json:
        print_json(
            [
                {"name": h.name, "description": h.description, "score": h.score, "why": h.why}
                for h in hits
            ]
        )
        return 0
    if not hits:
        asked = f"--regex {args.regex!r}" if args.regex else repr(query)
        print(f"No tool matched {asked}.{hint_modules(reg) if len(reg) == 0 else ''}")
        return 1
    width = max(len(h.name) for h in hits)
    for h in hits:
        print(f"{h.name:<{width}}  {h.description}")
        print(f"{'':<{width}}  matched {h.why}")
    return 0


def _cmd_show(args: argparse.Namespace) -> int:
    reg = load_tools(args)
    tool = get_tool(reg, args.name)
    if args.strict and args.dialect == "anthropic":
        # As AnthropicModel(strict_tools=True) sends it: strict when the schema allows.
        try:
            print_json(tool.schema("anthropic", strict=True))
        except ValueError as exc:
            print(f"note: {exc}; it is sent without strict mode", file=sys.stderr)
            print_json(tool.schema("anthropic"))
        return 0
    print_json(tool.schema(args.dialect))
    return 0


def _cmd_call(args: argparse.Namespace) -> int:
    from kode import ToolContext, run_sync

    reg = load_tools(args)
    tool = get_tool(reg, args.name)
    raw = args.arguments if args.arguments is not None else "{}"
    if raw == "-":
        raw = sys.stdin.read()
    deps = deps_from(args)
    ctx = ToolContext(tool_name=tool.name, deps=deps) if deps is not None else None
    result = run_sync(tool.run, raw, ctx)
    print_json(result.to_block(args.id))
    return 1 if result.is_error else 0


def _cmd_check(args: argparse.Namespace) -> int:
    from kode.cli.check import check

    return check(args)


def register(commands: Any) -> None:
    """Add ``tools`` and its commands to the ``kode`` command."""
    tools = commands.add_parser("tools", help="list, search, show, call and check tools")
    sub = tools.add_subparsers(dest="tools_command", metavar="COMMAND")
    tools.set_defaults(handler=lambda a: (tools.print_help(), 2)[1])

    p = sub.add_parser("list", help="list registered tools: name, source, kind, groups")
    p.add_argument("modules_pos", nargs="*", metavar="MODULE", help="modules to import")
    add_tool_arguments(p)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=guarded(lambda a: _cmd_list(merged(a))))

    p = sub.add_parser(
        "search",
        help="find tools by words and meaning (KODE_TOOL_SEARCH_DENSE=0: words alone) or "
        "--regex, as an agent's tool_search does",
    )
    p.add_argument("query", nargs="*", help="words saying what the tool should do")
    p.add_argument("--regex", help="a regular expression over names and descriptions instead")
    p.add_argument("--limit", type=int, default=5, help="how many tools at most (default 5)")
    p.add_argument("--json", action="store_true", help="print JSON")
    add_tool_arguments(p)
    p.set_defaults(handler=guarded(_cmd_search))

    p = sub.add_parser("show", help="print a tool's declaration in a provider's format")
    p.add_argument("name", help="the tool's name")
    p.add_argument("--dialect", choices=["anthropic", "openai", "gemini"], default="anthropic")
    p.add_argument(
        "--strict",
        action="store_true",
        help="Anthropic: as AnthropicModel(strict_tools=True) sends it (strict: true where the "
        "schema allows); OpenAI's declaration is strict where it allows already",
    )
    add_tool_arguments(p)
    p.set_defaults(handler=guarded(_cmd_show))

    p = sub.add_parser(
        "call", help="validate arguments, run a tool, print the tool_result (exit 1 on error)"
    )
    p.add_argument("name", help="the tool's name")
    p.add_argument("arguments", nargs="?", help="JSON arguments ('-' reads stdin)")
    p.add_argument("--id", default="toolu_cli", help="the tool_use id to answer")
    add_tool_arguments(p)
    add_deps_argument(p)
    p.set_defaults(handler=guarded(_cmd_call))

    p = sub.add_parser(
        "check", help="lint tool definitions (missing descriptions, schemas, collisions)"
    )
    p.add_argument("modules_pos", nargs="*", metavar="MODULE", help="modules to import")
    p.add_argument(
        "--explain",
        nargs="+",
        metavar=("NAME", "ARGS"),
        help="say what the permission check decides for a call of NAME with JSON ARGS, and "
        "which rule decided",
    )
    p.add_argument(
        "--rules",
        action="append",
        default=[],
        metavar="TIER=FILE",
        help="with --explain: a TOML rules file for a tier (defaults, user, project, admin); "
        "repeatable",
    )
    p.add_argument(
        "--mode", choices=["auto", "approval", "readonly"], help="with --explain: the mode"
    )
    p.add_argument("--template", help="with --explain: a template whose permission settings apply")
    p.add_argument(
        "--helpers",
        action="store_true",
        help="say which programs kode would run itself here (rg, bwrap, chromium, bash, "
        "python), from where, and which it refused and why",
    )
    add_tool_arguments(p)
    p.set_defaults(handler=guarded(lambda a: _cmd_check(merged(a))))
