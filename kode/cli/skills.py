"""``kode skills ...``: the skills an agent could load, and one skill's front matter and body.

This module owns the command-line side of skills (`kode.tools.skills` reads them). It lists
every source: folders given on the command line (as a template's ``skills`` names them), the
user's ``$KODE_HOME/skills``, ``kode.skills`` plugins, and the workspace's ``.kode/skills``
(the current directory's, or ``--workspace``'s), which an agent reads only when its template
says ``skills_from_workspace=True``. Malformed skills and name clashes go to stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

__all__ = ["register"]

_DESCRIPTION_WIDTH = 72


class CommandError(Exception):
    """The command cannot go on: its message is printed and the exit code is 2."""


def _catalog(args: argparse.Namespace) -> Any:
    from kode.tools.skills import SkillError, skill_sources

    workspace = Path(args.workspace or ".").resolve()
    try:
        return skill_sources(
            [str(Path(f).expanduser().resolve()) for f in args.folders],
            workspace=workspace,
            from_workspace=True,
        )
    except SkillError as exc:
        raise CommandError(str(exc).replace("template skills entry", "--skills", 1)) from None


def _guard(handler: Any) -> Any:
    def run(args: argparse.Namespace) -> int:
        try:
            code: int = handler(args)
        except CommandError as exc:
            print(f"kode skills: {exc}", file=sys.stderr)
            return 2
        return code

    return run


def _report(catalog: Any) -> None:
    for line in catalog.clashes():
        print(f"kode skills: {line}", file=sys.stderr)
    for line in catalog.problems:
        print(f"kode skills: skipped: {line}", file=sys.stderr)


def _short(text: str) -> str:
    return text if len(text) <= _DESCRIPTION_WIDTH else text[: _DESCRIPTION_WIDTH - 1] + "…"


def _shown(path: Path) -> str:
    """`path` relative to the current directory when it is inside it, else absolute."""
    here = Path.cwd().resolve()
    return path.relative_to(here).as_posix() if here in path.parents else str(path)


def _cmd_list(args: argparse.Namespace) -> int:
    catalog = _catalog(args)
    skills = sorted(catalog.skills.values(), key=lambda s: s.name)
    if args.json:
        print(
            json.dumps(
                {
                    "skills": [
                        {
                            "name": s.name,
                            "source": s.source,
                            "description": s.description,
                            "path": str(s.path),
                        }
                        for s in skills
                    ],
                    "shadowed": catalog.clashes(),
                    "problems": catalog.problems,
                },
                indent=2,
                ensure_ascii=False,
            )
        )
        return 0
    if not skills:
        print("No skills found.")
    else:
        width = max(len(s.name) for s in skills)
        rows = [(s.name, s.source, _short(s.description)) for s in skills]
        print(f"{'NAME':<{width}}  {'SOURCE':<9}  DESCRIPTION")
        for name, source, description in rows:
            print(f"{name:<{width}}  {source:<9}  {description}")
    _report(catalog)
    return 0


def _cmd_show(args: argparse.Namespace) -> int:
    from kode.tools.skills import SkillError

    catalog = _catalog(args)
    try:
        found = catalog.get(args.name)
    except SkillError:
        print(
            f"kode skills: no skill named {args.name!r}; found: "
            f"{', '.join(sorted(catalog.skills)) or 'none'}",
            file=sys.stderr,
        )
        return 2
    files, count = found.files()
    front: dict[str, Any] = {"name": found.name, "description": found.description}
    for key, value in (
        ("license", found.license),
        ("compatibility", found.compatibility),
        ("metadata", found.metadata or None),
        ("allowed-tools", " ".join(found.allowed_tools) or None),
    ):
        if value is not None:
            front[key] = value
    if args.json:
        print(
            json.dumps(
                {
                    "front_matter": front,
                    "source": found.source,
                    "path": str(found.path),
                    "files": files,
                    "body": found.body,
                },
                indent=2,
                ensure_ascii=False,
            )
        )
        return 0
    print(f"{found.name} ({found.source}: {_shown(found.path)})")
    print("front matter:")
    for key, value in front.items():
        print(f"  {key}: {value}")
    print(
        f"files: {', '.join(files) or 'none'}"
        + (f" (+{count - len(files)})" if count > len(files) else "")
    )
    print()
    print(found.body)
    return 0


def register(commands: Any) -> None:
    """Add ``kode skills list`` and ``kode skills show`` to the ``kode`` command."""
    skills = commands.add_parser("skills", help="list skills and show one")
    sub = skills.add_subparsers(dest="skills_command", metavar="COMMAND")
    skills.set_defaults(handler=lambda a: (skills.print_help(), 2)[1])

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--skills",
            dest="folders",
            action="append",
            default=[],
            metavar="FOLDER",
            help="a folder that is a skill or holds skill folders (as a template names one); "
            "repeatable",
        )
        p.add_argument(
            "--workspace",
            metavar="DIR",
            help="the workspace whose .kode/skills is read (default: the current directory)",
        )
        p.add_argument("--json", action="store_true", help="print JSON")

    p = sub.add_parser("list", help="list skills: name, source, description")
    common(p)
    p.set_defaults(handler=_guard(_cmd_list))
    p = sub.add_parser("show", help="show one skill: front matter, files and body")
    p.add_argument("name", help="the skill's name")
    common(p)
    p.set_defaults(handler=_guard(_cmd_show))
