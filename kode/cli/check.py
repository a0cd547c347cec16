"""``kode tools check``: lint tool definitions, explain a permission decision, list helpers.

This module owns what ``check`` reports: each registered tool's problems (a missing
description, a schema a provider cannot take) and the registry's diagnostics, with every module
tried even when one fails to import; ``--explain`` says what the permission check decides for
one call and which rule decided; ``--helpers`` says which programs kode would run itself here.
"""

from __future__ import annotations

import argparse
import importlib
from pathlib import Path
from typing import Any

from kode.cli.common import CommandError, get_tool, load_tools

__all__ = ["check"]


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

    reg = load_tools(args)
    if len(args.explain) > 2:
        raise CommandError(
            "--explain takes a tool's name and its arguments as one JSON object, e.g. "
            """--explain bash_run '{"command": "ls"}'"""
        )
    config = _permission_config(args)
    name, raw = args.explain[0], args.explain[1] if len(args.explain) > 1 else "{}"
    tool = get_tool(reg, name)
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


def check(args: argparse.Namespace) -> int:
    """``kode tools check``: the exit code is 1 for a problem, 2 for a module not imported."""
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
