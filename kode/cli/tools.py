"""``kode tools ...`` and ``kode run``: look at tools, call them, lint them, run an agent.

This module owns the command-line side of tools and agents. Modules named on the command line
are imported (a dotted name, or a path to a ``.py`` file), which registers their tools; the
built-ins are available with ``--builtin``.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import logging
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

__all__ = ["register"]


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


def _load(args: argparse.Namespace) -> Any:
    from kode import registry

    if getattr(args, "builtin", False):
        importlib.import_module("kode.builtin")
    for target in getattr(args, "modules", None) or ():
        _import(target)
    return registry


def _get(reg: Any, name: str) -> Any:
    from kode import ToolNotFoundError

    try:
        return reg.get(name)
    except ToolNotFoundError as exc:
        raise CommandError(str(exc) + _hint_modules(reg)) from None


def _hint_modules(reg: Any) -> str:
    if len(reg) == 0:
        return (
            " No tools are registered: name the module that defines them (-m MODULE), or add "
            "--builtin for kode's built-in tools."
        )
    return f" Registered: {', '.join(reg.names())}."


def _deps(args: argparse.Namespace) -> Any:
    """The deps ``--deps module:factory`` makes (its factory is called once), or `None`."""
    from kode.registries.deps import DepsSpecError, load_deps

    spec = getattr(args, "deps", None)
    if spec is None:
        return None
    try:
        return load_deps(spec)
    except DepsSpecError as exc:
        raise CommandError(f"--deps: {exc}") from None


def _print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, ensure_ascii=False, default=str))


# --- kode tools list / show / call / check -----------------------------------------------


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


def _first_line(text: str, room: int) -> str:
    """The first line of `text` in at most `room` characters, cut between words.

    An ellipsis says that something was left out: the end of the line, or the lines after it.
    """
    lines = text.strip().splitlines() or [""]
    first = lines[0].rstrip()
    if len(first) > room:
        cut = first[: room - 1]
        space = cut.rfind(" ")
        if space > room // 2:  # a word boundary not too far back
            cut = cut[:space]
        return cut.rstrip() + "…"
    return first + " …" if len(lines) > 1 else first


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

    reg = _load(args)
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
        _print_json(rows)
        return 0
    if not rows:
        print(_hint_modules(reg).strip())
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

    reg = _load(args)
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
        _print_json(
            [
                {"name": h.name, "description": h.description, "score": h.score, "why": h.why}
                for h in hits
            ]
        )
        return 0
    if not hits:
        asked = f"--regex {args.regex!r}" if args.regex else repr(query)
        print(f"No tool matched {asked}.{_hint_modules(reg) if len(reg) == 0 else ''}")
        return 1
    width = max(len(h.name) for h in hits)
    for h in hits:
        print(f"{h.name:<{width}}  {h.description}")
        print(f"{'':<{width}}  matched {h.why}")
    return 0


def _cmd_show(args: argparse.Namespace) -> int:
    reg = _load(args)
    tool = _get(reg, args.name)
    if args.strict and args.dialect == "anthropic":
        # As AnthropicModel(strict_tools=True) sends it: strict when the schema allows.
        try:
            _print_json(tool.schema("anthropic", strict=True))
        except ValueError as exc:
            print(f"note: {exc}; it is sent without strict mode", file=sys.stderr)
            _print_json(tool.schema("anthropic"))
        return 0
    _print_json(tool.schema(args.dialect))
    return 0


def _cmd_call(args: argparse.Namespace) -> int:
    from kode import ToolContext, run_sync

    reg = _load(args)
    tool = _get(reg, args.name)
    raw = args.arguments if args.arguments is not None else "{}"
    if raw == "-":
        raw = sys.stdin.read()
    deps = _deps(args)
    ctx = ToolContext(tool_name=tool.name, deps=deps) if deps is not None else None
    result = run_sync(tool.run, raw, ctx)
    _print_json(result.to_block(args.id))
    return 1 if result.is_error else 0


def _check_tool(tool: Any) -> list[str]:
    from kode.tools.dialects import gemini_schema, openai_strict_schema

    problems = []
    if not tool.description.strip():
        problems.append("has no description (write a docstring or pass description=)")
    for name, prop in tool.input_schema.get("properties", {}).items():
        if not prop.get("description"):
            problems.append(f"parameter '{name}' has no description")
    try:
        for dialect in ("anthropic", "openai", "gemini"):
            tool.schema(dialect)
    except Exception as exc:  # a schema a dialect cannot render
        problems.append(f"its schema cannot be rendered: {type(exc).__name__}: {exc}")
    gemini = gemini_schema(tool.input_schema) if tool.input_schema.get("properties") else {}
    stack = [gemini]
    while stack:
        node = stack.pop()
        if node.get("type") == "object" and "properties" in node and not node["properties"]:
            problems.append("Gemini rejects an object with no properties in its schema")
        stack.extend(v for v in node.get("properties", {}).values() if isinstance(v, dict))
        if isinstance(node.get("items"), dict):
            stack.append(node["items"])
    if openai_strict_schema(tool.input_schema) is None:
        problems.append(
            "note: OpenAI strict mode is off for it (a free-form dict, a tuple or Any); "
            "models get no guarantee its arguments match"
        )
    return problems


def _import_problem(target: str, exc: Exception) -> str:
    """``file:line: cannot import 'target': Error: message`` (the place when it is known)."""
    from kode.cli.log import where_raised

    where = where_raised(exc)
    said = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return f"{where or target}: cannot import {target!r}: {said}"


def _permission_config(args: argparse.Namespace) -> Any:
    """The permission settings ``check --explain`` decides with.

    A template's (``--template``), with the rules files given per tier, and ``--mode``.
    """
    from kode.agent import AgentTemplate, PermissionConfig, TemplateError
    from kode.agent.rules import RuleError, load_rules

    config = PermissionConfig()
    if args.template:
        try:
            config = AgentTemplate.from_file(args.template).permission
        except (OSError, TemplateError) as exc:
            raise CommandError(str(exc)) from None
    tiers: dict[str, str] = {}
    for given in args.rules:
        tier, sep, path = given.partition("=")
        if not sep or tier not in ("defaults", "user", "project", "admin") or not path:
            raise CommandError(
                f"--rules {given!r}: give TIER=FILE, with TIER one of defaults, user, project, "
                "admin (e.g. --rules project=.kode/rules.toml)"
            )
        if not Path(path).is_file():
            raise CommandError(f"--rules {given!r}: no file {path}")
        tiers[tier] = path
    try:
        rules = [*config.rules, *load_rules(**{k: Path(v) for k, v in tiers.items()})]
    except RuleError as exc:
        raise CommandError(str(exc)) from None
    update: dict[str, Any] = {"rules": rules}
    if args.mode:
        update["mode"] = args.mode
    return config.model_copy(update=update)


def _explain(args: argparse.Namespace) -> int:
    """``kode tools check --explain NAME [ARGS]``: what the permission check decides, and why."""
    from kode.agent.approvals import call_details
    from kode.agent.permissions import check_permission
    from kode.tools import ToolResult

    reg = _load(args)
    if len(args.explain) > 2:
        raise CommandError(
            "--explain takes a tool's name and its arguments as one JSON object, e.g. "
            """--explain bash_run '{"command": "ls"}'"""
        )
    config = _permission_config(args)
    name, raw = args.explain[0], args.explain[1] if len(args.explain) > 1 else "{}"
    tool = _get(reg, name)
    prepared = tool.prepare(raw)
    if isinstance(prepared, ToolResult):
        print(f"{tool.name}: the arguments are not valid, so the call would not run:")
        print(prepared.text)
        return 1
    meta = reg.meta(tool.name)
    verdict = check_permission(
        tool,
        prepared.arguments,
        config,
        always_allowed=set(),
        source=meta.source.value,
        server=meta.server,
    )
    print(f"{tool.name}: {verdict.action}")
    print(f"  decided by: {verdict.rule}")
    print(f"  reason: {verdict.reason}")
    if verdict.action == "ask":
        details = call_details(tool, prepared.arguments, None, server=meta.server)
        if details.description:
            print(f"  the request says: {details.description}")
        if details.pattern is not None:
            print(f"  its pattern (for 'always'): {details.pattern}")
    return 0


def _helpers() -> int:
    """``kode tools check --helpers``: the executables kode would run, for this directory."""
    from kode.builtin.runtime import sandbox_support
    from kode.trust import executables

    roots = (Path.cwd(),)  # the workspace of a `kode run` started here
    for found in (
        executables.ripgrep(roots),
        executables.bubblewrap("bwrap", roots),
        executables.browser((), roots),
        executables.shell(roots),
        executables.python(roots),
    ):
        print(found.describe())
    support = sandbox_support()
    if support.available:
        print(f"sandbox: bubblewrap works here ({support.program})")
    else:
        print(f"sandbox: none: {support.reason}")
    return 0


def _cmd_check(args: argparse.Namespace) -> int:
    from kode import registry as reg
    from kode.registries.modules import import_tools_module

    if args.explain:
        return _explain(args)
    if args.helpers:
        return _helpers()

    if args.builtin:
        importlib.import_module("kode.builtin")
    # Every module is tried: one that fails is reported, and the others are still checked.
    unimported = []
    for target in args.modules:
        try:
            import_tools_module(target)
        except Exception as exc:  # anything the module raises at import time
            unimported.append(target)
            print(_import_problem(target, exc))
    failures = 0
    notes = 0
    for entry in reg.entries():
        tool = entry.tool or reg.get(entry.name)
        for problem in _check_tool(tool):
            if problem.startswith("note: "):
                notes += 1
                print(f"{tool.name}: {problem}")
            else:
                failures += 1
                print(f"{tool.name}: {problem}")
    for diagnostic in reg.diagnostics:
        if diagnostic.level != "info":
            failures += 1
            print(f"registry: {diagnostic}")
    count = len(reg)
    if unimported:
        problems = f"{failures} problem(s) in" if failures else "no problems in"
        print(
            f"{len(unimported)} of {len(args.modules)} module(s) could not be imported; "
            f"{problems} the {count} tool(s) checked."
        )
        return 2
    if failures:
        print(f"{failures} problem(s) in {count} tool(s).")
        return 1
    print(f"{count} tool(s) checked: no problems" + (f" ({notes} note(s))." if notes else "."))
    return 0


# --- kode run --------------------------------------------------------------------------------


def _model_from(spec: str | None) -> Any:
    from kode.models import model_from_environment

    try:  # the one reading of model strings, shared with Agent.create
        return model_from_environment(spec)
    except ValueError as exc:  # a ScriptError too
        raise CommandError(f"--model: {exc}" if spec else str(exc)) from None


def _ask(question: str) -> str:
    """A line from the terminal; the end of input (a closed stdin, Ctrl-D) answers no.

    The line is read from the file descriptor, not `sys.stdin`: a prompt abandoned on Ctrl-C
    must not hold the lock of stdin's buffer while the interpreter shuts down.
    """
    print(question, end="", flush=True)
    line = bytearray()
    while True:
        try:
            byte = os.read(sys.stdin.fileno(), 1)
        except (AttributeError, OSError, ValueError):  # no stdin at all: as at its end
            byte = b""
        if byte in (b"", b"\n"):
            break
        line += byte
    if not byte and not line:
        print("\n  (end of input: denied)", flush=True)
    return line.decode(errors="replace")


async def _prompt(question: str) -> str:
    """`_ask` in a daemon thread, so that Ctrl-C need not wait for an answer.

    input() cannot be cancelled: neither the interrupted run nor the exit of the process may
    wait for an answer that will not come.
    """
    import threading

    import anyio.from_thread
    import anyio.lowlevel

    answered = anyio.Event()
    answer: list[str] = []
    token = anyio.lowlevel.current_token()

    def ask() -> None:
        answer.append(_ask(question))
        try:
            anyio.from_thread.run_sync(answered.set, token=token)
        except RuntimeError:  # the event loop is gone: nobody waits for this answer
            pass

    threading.Thread(target=ask, name="kode approval prompt", daemon=True).start()
    await answered.wait()
    return answer[0]


def _field_value(text: str, spec: dict[str, Any]) -> Any:
    """A form field's answer typed as its schema says (``ValueError`` when it does not fit)."""
    kind = spec.get("type", "string")
    try:
        if kind == "integer":
            return int(text)
        if kind == "number":
            return float(text)
    except ValueError:
        raise ValueError("a whole number" if kind == "integer" else "a number") from None
    if kind == "boolean":
        if text.strip().lower() in ("y", "yes", "true", "1"):
            return True
        if text.strip().lower() in ("n", "no", "false", "0"):
            return False
        raise ValueError("answer y or n")
    if kind == "array":
        return [part.strip() for part in text.split(",") if part.strip()]
    choices = spec.get("enum") or [o.get("const") for o in spec.get("oneOf", [])]
    if choices and text not in choices:
        raise ValueError(f"one of {', '.join(map(str, choices))}")
    return text


async def _elicit(request: Any) -> Any:
    """``kode run``'s answer to a question for the user: one prompt per field, or a page.

    A blank answer takes the field's default; a blank required field without one cancels the
    form; the end of input declines.
    """
    from kode.tools.asking import ElicitationReply

    who = f"MCP server '{request.server}'" if request.server else f"tool {request.tool_name}"
    print(f"\n? {who} asks: {request.message}", flush=True)
    if request.mode == "url":
        answer = await _prompt(f"  Open {request.url} and come back here. Done? [y/N] ")
        done = answer.strip()[:1].lower() == "y"
        return ElicitationReply(action="accept" if done else "decline")
    schema = request.schema or {}
    required = set(schema.get("required", ()))
    content: dict[str, Any] = {}
    for name, spec in (schema.get("properties") or {}).items():
        what = spec.get("description") or spec.get("title") or spec.get("type", "text")
        default = spec.get("default")
        shown = f" [{default}]" if default is not None else ""
        while True:
            text = await _prompt(f"  {name} ({what}){shown}: ")
            if not text.strip():
                if default is not None:
                    content[name] = default
                elif name in required:
                    print("  (no answer: the form is cancelled)", flush=True)
                    return ElicitationReply(action="cancel")
                break
            try:
                content[name] = _field_value(text.strip(), spec)
                break
            except ValueError as exc:
                print(f"  ({exc})", flush=True)
    return ElicitationReply(action="accept", content=content)


_ASKED = "asked:"
"""`_show`'s key prefix for the seconds a call waited at its approval prompt."""


async def _show(agent: Any, event: Any, started: dict[str, float]) -> int:
    """Print one event of ``kode run``; return 1 for an error event.

    `started` holds when each call started, and (under ``asked:<call id>``) how long it waited
    for an approval, left out of the duration shown.
    """
    from kode.agent import events as ev

    if isinstance(event, ev.TextDelta):
        print(event.text, end="", flush=True)
    elif isinstance(event, ev.ToolStart):
        started[event.call_id] = time.monotonic()
        shown = json.dumps(event.input, default=str, ensure_ascii=False)
        print(f"\n→ {event.name} {shown}", flush=True)
    elif isinstance(event, ev.ToolProgress):
        done = f" {event.fraction:.0%}" if event.fraction is not None else ""
        elapsed = time.monotonic() - started.get(event.call_id, time.monotonic())
        print(f"  … {event.message}{done} ({elapsed:.1f} s)", flush=True)
    elif isinstance(event, ev.ToolEnd):
        mark = "✗" if event.is_error else "✓"
        first = _first_line(event.result.text, 100)
        # The call's own time: not the time a person took to answer its approval prompt.
        took = max(0.0, event.duration - started.pop(_ASKED + event.call_id, 0.0))
        print(f"  {mark} {event.name} ({took:.2f} s) {first}", flush=True)
        if event.display is not None and event.display.text:
            print(_indented(event.display.text), flush=True)
    elif isinstance(event, ev.ApprovalRequired):
        asked = time.monotonic()
        try:
            await _approve(agent, event)
        finally:
            key = _ASKED + event.call_id
            started[key] = started.get(key, 0.0) + time.monotonic() - asked
    elif isinstance(event, ev.Compaction):
        if event.error is None:
            print(
                f"\n⋯ compacted: {event.messages} messages summarised "
                f"({event.tokens_before:,} → {event.tokens_after:,} tokens)",
                flush=True,
            )
        else:
            print(f"\n⋯ not compacted: {event.error}", file=sys.stderr, flush=True)
    elif isinstance(event, ev.Done):
        print()
    elif isinstance(event, ev.ErrorEvent):
        print(f"\nerror: {event.message}", file=sys.stderr)
        return 1
    return 0


_SHOWN_LINES = 60
"""The most lines of a diff or a display ``kode run`` prints (more are counted)."""


def _indented(text: str, prefix: str = "    ") -> str:
    lines = text.splitlines()
    if len(lines) > _SHOWN_LINES:
        lines = [*lines[:_SHOWN_LINES], f"… ({len(lines) - _SHOWN_LINES} more lines)"]
    return "\n".join(prefix + line for line in lines)


async def _approve(agent: Any, event: Any) -> None:
    """Ask whoever runs ``kode run`` about a call: what it does, its diff, and the choices."""
    from kode.agent import AgentError

    print(f"\n{event.name} needs approval: {event.reason} ({event.rule})")
    if event.description:
        print(f"  {event.description}")
    else:
        print(f"  {event.name} {json.dumps(event.input, default=str, ensure_ascii=False)}")
    if event.diff:
        print(_indented(event.diff))
    choices = ["[y]es once", f"[a]lways for {event.name}"]
    if event.server:
        choices.append(f"[s]erver: always for MCP server {event.server}")
    if event.pattern:
        choices.append(f"[p]attern: always for calls starting with {event.pattern!r}")
    choices.append("[e]dit (e JSON: run with this input)")
    choices.append("[n]o (n NOTE: say why)")
    while True:
        answer = (await _prompt(f"Allow? {', '.join(choices)}: ")).strip()
        try:
            _answer(agent, event, answer)
        except (AgentError, ValueError) as exc:
            if not answer.lower().startswith("e"):
                raise
            print(f"  {exc}", flush=True)  # an input that is not valid: ask again
            continue
        return


def _answer(agent: Any, event: Any, answer: str) -> None:
    """Decide a call by what was typed at ``kode run``'s approval prompt."""
    key, _, rest = answer.partition(" ")
    key = key[:1].lower()
    if key == "y":
        agent.decide(event.call_id, "allow")
    elif key == "a":
        agent.decide(event.call_id, "allow_always")
    elif key == "s" and event.server:
        agent.decide(event.call_id, "allow_always", scope="server")
    elif key == "p" and event.pattern:
        agent.decide(event.call_id, "allow_always", scope="pattern", pattern=rest.strip())
    elif key == "e":
        try:
            value = json.loads(rest)
        except json.JSONDecodeError as exc:
            raise ValueError(f"e takes the new input as a JSON object: {exc}") from None
        if not isinstance(value, dict):
            raise ValueError('e takes the new input as a JSON object, e.g. e {"path": "a"}')
        agent.decide(event.call_id, "allow", input=value)
    else:
        agent.decide(event.call_id, "deny", rest.strip() if key == "n" else "")


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
    reg = _load(args)
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
    deps = _deps(args)
    flush = _otel() if args.otel else None  # before the agent: it is made traced
    try:
        agent = Agent.create(
            template, model=model, workspace=args.workspace, deps=deps, elicitation=_elicit
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
                    code = max(code, await _show(agent, event, started))
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


# --- wiring ----------------------------------------------------------------------------------


def _guard(func: Any) -> Any:
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


def register(commands: Any) -> None:
    """Add ``tools`` and ``run`` to the ``kode`` command."""
    from kode.cli.log import add_log_arguments

    tools = commands.add_parser("tools", help="list, search, show, call and check tools")
    sub = tools.add_subparsers(dest="tools_command", metavar="COMMAND")
    tools.set_defaults(handler=lambda a: (tools.print_help(), 2)[1])

    def common(p: argparse.ArgumentParser) -> None:
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

    def deps(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--deps",
            metavar="MODULE:FACTORY",
            help="make the deps tools get as ctx.deps: FACTORY() from MODULE (a dotted name "
            "or .py path), called once with no arguments",
        )

    p = sub.add_parser("list", help="list registered tools: name, source, kind, groups")
    p.add_argument("modules_pos", nargs="*", metavar="MODULE", help="modules to import")
    common(p)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=_guard(lambda a: _cmd_list(_merge(a))))

    p = sub.add_parser(
        "search",
        help="find tools by words and meaning (KODE_TOOL_SEARCH_DENSE=0: words alone) or "
        "--regex, as an agent's tool_search does",
    )
    p.add_argument("query", nargs="*", help="words saying what the tool should do")
    p.add_argument("--regex", help="a regular expression over names and descriptions instead")
    p.add_argument("--limit", type=int, default=5, help="how many tools at most (default 5)")
    p.add_argument("--json", action="store_true", help="print JSON")
    common(p)
    p.set_defaults(handler=_guard(_cmd_search))

    p = sub.add_parser("show", help="print a tool's declaration in a provider's format")
    p.add_argument("name", help="the tool's name")
    p.add_argument("--dialect", choices=["anthropic", "openai", "gemini"], default="anthropic")
    p.add_argument(
        "--strict",
        action="store_true",
        help="Anthropic: as AnthropicModel(strict_tools=True) sends it (strict: true where the "
        "schema allows); OpenAI's declaration is strict where it allows already",
    )
    common(p)
    p.set_defaults(handler=_guard(_cmd_show))

    p = sub.add_parser(
        "call", help="validate arguments, run a tool, print the tool_result (exit 1 on error)"
    )
    p.add_argument("name", help="the tool's name")
    p.add_argument("arguments", nargs="?", help="JSON arguments ('-' reads stdin)")
    p.add_argument("--id", default="toolu_cli", help="the tool_use id to answer")
    common(p)
    deps(p)
    p.set_defaults(handler=_guard(_cmd_call))

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
    common(p)
    p.set_defaults(handler=_guard(lambda a: _cmd_check(_merge(a))))

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
    common(run)
    deps(run)
    run.set_defaults(handler=_guard(_cmd_run))


def _merge(args: argparse.Namespace) -> argparse.Namespace:
    args.modules = [*getattr(args, "modules_pos", []), *args.modules]
    return args
