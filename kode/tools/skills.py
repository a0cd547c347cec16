"""Agent skills: folders with a ``SKILL.md``, read and checked, and where an agent finds them.

This module owns the skill format (`parse_skill`: YAML front matter with ``name`` and
``description``, a Markdown body, files beside it, as the Agent Skills specification publishes
it), the places skills come from (`find_skills`, `skill_sources`: the folders a template names,
``kode.skills`` entry points, the user's ``$KODE_HOME/skills`` and the workspace's
``.kode/skills``) and `SkillCatalog`, the skills one agent may load. It does not decide which
sources an agent reads (the agent, from its template) and does not show a skill to a model
(the ``skill`` tool, `kode.builtin.skills`).

When two skills share a name the more trusted source wins, in this order: the template's
folders, the user's folder, plugins, the workspace. The skill left out is recorded in
`SkillCatalog.shadowed` and reported, never dropped silently.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from kode.tools.errors import KodeError
from kode.tools.services import ServiceKey

__all__ = [
    "ENTRY_POINT_GROUP",
    "SKILLS",
    "SKILL_FILE",
    "Skill",
    "SkillCatalog",
    "SkillError",
    "SkillSource",
    "find_skills",
    "parse_skill",
    "skill_sources",
    "skill_text",
    "user_skills_dir",
    "workspace_skills_dir",
]

SKILL_FILE = "SKILL.md"
"""The file that makes a folder a skill."""

ENTRY_POINT_GROUP = "kode.skills"
"""The entry-point group installed packages add skills through."""

SkillSource = Literal["template", "user", "plugin", "workspace"]
"""Where a skill was found (most trusted first)."""

_RANK: dict[str, int] = {"template": 0, "user": 1, "plugin": 2, "workspace": 3}

MAX_NAME = 64
"""The longest skill name (characters)."""
MAX_DESCRIPTION = 1024
"""The longest description (characters)."""
MAX_COMPATIBILITY = 500
"""The longest ``compatibility`` field (characters)."""
MAX_SKILL_FILE = 256 * 1024
"""The largest ``SKILL.md`` read (bytes)."""
MAX_FILES = 200
"""The most files of a skill listed (more are counted, not named)."""

_NAME = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_XML_TAG = re.compile(r"</?[A-Za-z][^<>]*>")
_FIELDS = ("name", "description", "license", "compatibility", "metadata", "allowed-tools")
_RIGHT_NAME = (
    "1-64 lower-case letters, digits and single hyphens, not starting or ending with a hyphen"
)


class SkillError(KodeError, ValueError):
    """A skill is malformed, cannot be read, or is not available."""


@dataclass(kw_only=True, frozen=True, slots=True)
class Skill:
    """One skill: its front matter, its body and its folder."""

    name: str
    """Its name (the name of its folder)."""
    description: str
    """What it does and when to use it: all a model sees before loading it."""
    body: str
    """The Markdown after the front matter: the instructions the ``skill`` tool returns."""
    path: Path
    """Its folder (absolute, symlinks resolved)."""
    source: SkillSource
    """Where it was found."""
    origin: str = ""
    """The template entry, plugin id or folder it came from."""
    license: str | None = None
    """The ``license`` field."""
    compatibility: str | None = None
    """The ``compatibility`` field (what it needs to run)."""
    metadata: dict[str, str] = field(default_factory=dict)
    """The ``metadata`` field."""
    allowed_tools: tuple[str, ...] = ()
    """The ``allowed-tools`` field, as written: recorded, never granted (a skill cannot widen
    what the agent may do)."""

    def files(self) -> tuple[list[str], int]:
        """Its files other than ``SKILL.md``, as sorted relative paths, and how many there are.

        At most `MAX_FILES` are named; symlinks are listed but not followed.
        """
        found: list[str] = []
        for dirpath, dirnames, filenames in os.walk(self.path):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            base = Path(dirpath).relative_to(self.path)
            for name in filenames:
                relative = (base / name).as_posix()
                if relative != SKILL_FILE:
                    found.append(relative)
        found.sort()
        return found[:MAX_FILES], len(found)


def _where(path: Path) -> str:
    return str(path / SKILL_FILE)


def _load_yaml(text: str, file: str) -> Any:
    try:
        import yaml  # type: ignore[import-untyped]
    except ImportError:  # pragma: no cover - the extra is part of every test install
        from kode.extras import install_hint

        raise SkillError(f"{file}: reading skills needs PyYAML: {install_hint('skills')}") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise SkillError(
            f"{file}: the front matter is not valid YAML ({' '.join(str(exc).split())}); write "
            "'key: value' lines, quoting values that contain ': '"
        ) from None


def _split(text: str, file: str) -> tuple[str, str]:
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        raise SkillError(
            f"{file}: it does not start with front matter; the first line must be '---', then "
            "'name: ...' and 'description: ...' lines, then '---' and the instructions"
        )
    for end in range(1, len(lines)):
        if lines[end].strip() == "---":
            return "\n".join(lines[1:end]), "\n".join(lines[end + 1 :]).strip("\n")
    raise SkillError(f"{file}: the front matter is not closed; end it with a '---' line")


def _text_field(data: dict[str, Any], key: str, file: str, *, limit: int | None) -> str | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise SkillError(
            f"{file}: '{key}' must be a string, not {type(value).__name__} ({value!r})"
        )
    if limit is not None and len(value) > limit:
        raise SkillError(
            f"{file}: '{key}' is {len(value)} characters long; at most {limit} are allowed"
        )
    return value


def parse_skill(folder: str | os.PathLike[str], *, source: SkillSource, origin: str = "") -> Skill:
    """Read and check the skill in `folder`.

    Args:
        folder: The skill's folder (it holds ``SKILL.md``).
        source: Where it was found.
        origin: The template entry, plugin id or folder it came from.

    Raises:
        SkillError: naming the file, what is wrong and what would be right.
    """
    path = Path(folder).expanduser().resolve()
    file = _where(path)
    if not (path / SKILL_FILE).is_file():
        raise SkillError(f"{file}: no such file; a skill is a folder holding a {SKILL_FILE}")
    size = (path / SKILL_FILE).stat().st_size
    if size > MAX_SKILL_FILE:
        raise SkillError(
            f"{file}: it is {size} bytes; at most {MAX_SKILL_FILE} are read (move details into "
            "files beside it)"
        )
    try:
        text = (path / SKILL_FILE).read_bytes().decode("utf-8").replace("\r\n", "\n")
    except UnicodeDecodeError:
        raise SkillError(f"{file}: it is not UTF-8 text") from None
    text = text.removeprefix("\ufeff")
    head, body = _split(text, file)
    data = _load_yaml(head, file)
    if not isinstance(data, dict):
        raise SkillError(
            f"{file}: the front matter must be a mapping of 'key: value' lines, not "
            f"{type(data).__name__}"
        )
    unknown = sorted(str(k) for k in data if k not in _FIELDS)
    if unknown:
        raise SkillError(
            f"{file}: unknown front matter field{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(repr(k) for k in unknown)}; the fields are {', '.join(_FIELDS)}"
        )
    for key in ("name", "description"):
        if key not in data or data[key] in (None, ""):
            raise SkillError(f"{file}: the front matter has no '{key}'; add '{key}: ...'")
    name = _text_field(data, "name", file, limit=None) or ""
    if len(name) > MAX_NAME or not _NAME.match(name):
        raise SkillError(f"{file}: name {name!r} is invalid; use {_RIGHT_NAME}")
    if name != path.name:
        raise SkillError(
            f"{file}: name {name!r} is not the name of its folder {path.name!r}; rename one "
            "so they are the same"
        )
    description = _text_field(data, "description", file, limit=MAX_DESCRIPTION) or ""
    if not description.strip():
        raise SkillError(f"{file}: the description is empty; say what the skill does and when")
    if _XML_TAG.search(description):
        raise SkillError(
            f"{file}: the description contains an XML tag "
            f"({_XML_TAG.search(description).group(0)!r}); write it as plain text"  # type: ignore[union-attr]
        )
    metadata = data.get("metadata") or {}
    if not isinstance(metadata, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()
    ):
        raise SkillError(f"{file}: 'metadata' must map strings to strings (quote numbers)")
    allowed = _text_field(data, "allowed-tools", file, limit=None) or ""
    return Skill(
        name=name,
        description=" ".join(description.split()),
        body=body,
        path=path,
        source=source,
        origin=origin,
        license=_text_field(data, "license", file, limit=None),
        compatibility=_text_field(data, "compatibility", file, limit=MAX_COMPATIBILITY),
        metadata=dict(metadata),
        allowed_tools=tuple(allowed.split()),
    )


def find_skills(
    folder: str | os.PathLike[str], *, source: SkillSource, origin: str = ""
) -> tuple[list[Skill], list[str]]:
    """The skills in `folder`: itself if it holds a ``SKILL.md``, else each folder in it that does.

    Returns:
        The skills, by name, and a problem for each malformed one (a `SkillError`'s message).
        A folder that does not exist holds no skills.
    """
    path = Path(folder).expanduser()
    if (path / SKILL_FILE).is_file():
        try:
            return [parse_skill(path, source=source, origin=origin)], []
        except SkillError as exc:
            return [], [str(exc)]
    skills: list[Skill] = []
    problems: list[str] = []
    if not path.is_dir():
        return skills, problems
    for child in sorted(path.iterdir()):
        if child.is_dir() and (child / SKILL_FILE).is_file():
            try:
                skills.append(parse_skill(child, source=source, origin=origin))
            except SkillError as exc:
                problems.append(str(exc))
    return skills, problems


def user_skills_dir() -> Path:
    """The user's skills: ``$KODE_HOME/skills``, or ``~/.kode/skills``."""
    home = os.environ.get("KODE_HOME")
    base = Path(home).expanduser() if home else Path.home() / ".kode"
    return base.resolve() / "skills"


def workspace_skills_dir(root: str | os.PathLike[str]) -> Path:
    """The workspace's skills: ``.kode/skills`` under its root."""
    return Path(root).resolve() / ".kode" / "skills"


def _plugin_folders() -> Iterable[tuple[str, list[Path], str | None]]:
    """(plugin id, folders, problem) for each ``kode.skills`` entry point, in name order.

    An entry point names a folder (a `str` or `Path`), a list of folders, or a callable
    returning either; each folder is a skill or holds skill folders.
    """
    from importlib.metadata import entry_points  # here: importing it costs ~10 ms

    for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        try:
            value = ep.load()
            if callable(value):
                value = value()
            items = [value] if isinstance(value, str | os.PathLike) else list(value)
            yield ep.name, [Path(os.fspath(item)) for item in items], None
        except Exception as exc:  # whatever the plugin raises: reported, never fatal
            yield (
                ep.name,
                [],
                f"skill plugin {ep.name!r} ({ep.value}) could not be loaded: "
                f"{type(exc).__name__}: {exc}; it must name a folder, a list of folders, or a "
                "function returning them",
            )


def _is_path(entry: str) -> bool:
    return "/" in entry or os.sep in entry or entry.startswith((".", "~"))


@dataclass(kw_only=True, slots=True)
class SkillCatalog:
    """The skills one agent may load, and what was found on the way."""

    skills: dict[str, Skill] = field(default_factory=dict)
    """The skills, by name."""
    shadowed: list[tuple[Skill, Skill]] = field(default_factory=list)
    """(left out, the skill of the same name kept), for each clash."""
    problems: list[str] = field(default_factory=list)
    """Malformed skills and plugins that failed, each a sentence naming the file."""

    def add(self, skill: Skill) -> None:
        """Add a skill; on a clash keep the more trusted one and record the other."""
        kept = self.skills.get(skill.name)
        if kept is None:
            self.skills[skill.name] = skill
        elif _RANK[skill.source] < _RANK[kept.source]:
            self.skills[skill.name] = skill
            self.shadowed.append((kept, skill))
        else:
            self.shadowed.append((skill, kept))

    def clashes(self) -> list[str]:
        """A sentence for each skill left out because another has its name."""
        return [
            f"skill {left.name!r} from {left.source} ({left.path}) is shadowed by the one from "
            f"{kept.source} ({kept.path})"
            for left, kept in self.shadowed
        ]

    def get(self, name: str) -> Skill:
        """The skill called `name`.

        Raises:
            SkillError: no skill of that name is available (the message lists those that are).
        """
        found = self.skills.get(name.strip())
        if found is None:
            raise SkillError(
                f"No skill named {name.strip()!r} is available to this agent; available: "
                f"{', '.join(sorted(self.skills)) or 'none'}."
            )
        return found

    def folders(self) -> list[Path]:
        """The folders of its skills."""
        return [s.path for s in self.skills.values()]

    def prompt(self) -> str:
        """The part of the system prompt that names each skill and says how to load one."""
        if not self.skills:
            return ""
        lines = [
            "## Skills",
            "",
            "These skills hold instructions for particular tasks. When a task matches a skill's "
            "description, call the `skill` tool with its name to read its instructions before "
            "you start.",
            "",
        ]
        lines += [f"- {s.name}: {s.description}" for s in self.skills.values()]
        return "\n".join(lines)


def skill_text(found: Skill) -> str:
    """What the ``skill`` tool answers for `found`: its folder, its files, its instructions."""
    files, count = found.files()
    lines = [
        f"# Skill: {found.name}",
        "",
        f"Folder: {found.path}",
        "(read-only; run its scripts with bash_run by this absolute path, from the workspace)",
        "",
    ]
    if files:
        lines.append("Files (relative to the folder):")
        lines += [f"- {f}" for f in files]
        if count > len(files):
            lines.append(f"- ... and {count - len(files)} more")
    else:
        lines.append("Files: none besides SKILL.md")
    if found.compatibility:
        lines += ["", f"Needs: {found.compatibility}"]
    lines += ["", "## Instructions", "", found.body or "(the skill has no instructions)"]
    return "\n".join(lines)


def skill_sources(
    entries: Sequence[str],
    *,
    workspace: str | os.PathLike[str] | None = None,
    from_workspace: bool = False,
    base: str | os.PathLike[str] | None = None,
    user: bool = True,
    plugins: bool = True,
) -> SkillCatalog:
    """Find the skills one agent may load.

    Args:
        entries: The template's ``skills``: folders (a path with a ``/``, or starting with
            ``.`` or ``~``; relative ones are taken from `base`) that are a skill or hold skill
            folders, and names of skills in the user's folder or a plugin (or the workspace's,
            with `from_workspace`). Without names, every skill of those sources is available;
            with names, only the named ones (and the folders' skills).
        workspace: The agent's workspace root (its ``.kode/skills``).
        from_workspace: Whether the workspace's skills may load.
        base: Where relative folders are taken from (default: the workspace, else the
            current directory).
        user: Whether to read the user's folder (`user_skills_dir`).
        plugins: Whether to read ``kode.skills`` entry points.

    Raises:
        SkillError: a template folder does not exist or holds a malformed skill, two template
            folders give skills of the same name, or a named skill is found nowhere.
    """
    catalog = SkillCatalog()
    root = Path(base or workspace or Path.cwd())
    names = [e.strip() for e in entries if not _is_path(e)]
    for entry in entries:
        if not _is_path(entry):
            continue
        folder = Path(entry).expanduser()
        folder = folder if folder.is_absolute() else root / folder
        if not folder.is_dir():
            raise SkillError(f"template skills entry {entry!r}: no folder at {folder}")
        found, problems = find_skills(folder, source="template", origin=entry)
        if problems:
            raise SkillError(f"template skills entry {entry!r}: {problems[0]}")
        if not found:
            raise SkillError(
                f"template skills entry {entry!r}: {folder} holds no {SKILL_FILE}, neither "
                "itself nor in a folder inside it"
            )
        for skill in found:
            if skill.name in catalog.skills:
                raise SkillError(
                    f"template skills entries give two skills named {skill.name!r}: "
                    f"{catalog.skills[skill.name].path} and {skill.path}; keep one"
                )
            catalog.add(skill)
    shared = SkillCatalog()
    if user:
        found, problems = find_skills(user_skills_dir(), source="user")
        shared.problems += problems
        for skill in found:
            shared.add(skill)
    if plugins:
        for plugin_id, folders, problem in _plugin_folders():
            if problem:
                shared.problems.append(problem)
            for folder in folders:
                found, problems = find_skills(folder, source="plugin", origin=plugin_id)
                shared.problems += problems
                for skill in found:
                    shared.add(skill)
    if from_workspace and workspace is not None:
        inside = workspace_skills_dir(workspace)
        found, problems = find_skills(inside, source="workspace")
        shared.problems += problems
        for skill in found:
            if inside in skill.path.parents:
                shared.add(skill)
            else:  # a link out of the workspace: its author cannot vouch for what it points at
                shared.problems.append(
                    f"{inside / skill.name}: it is a link to {skill.path}, outside the "
                    "workspace's skills; a workspace skill must be a folder inside .kode/skills"
                )
    catalog.problems += shared.problems
    catalog.shadowed += shared.shadowed
    for name in names:
        if name not in shared.skills and name not in catalog.skills:
            raise SkillError(
                f"template skills entry {name!r} names no skill found; found: "
                f"{', '.join(sorted({*shared.skills, *catalog.skills})) or 'none'} (a folder "
                "must be given as a path: './skills' or an absolute path)"
            )
    for skill in shared.skills.values():
        if not names or skill.name in names:
            catalog.add(skill)
    return catalog


SKILLS: ServiceKey[SkillCatalog] = ServiceKey(
    "skills", SkillCatalog, doc="the skills the agent may load"
)
"""The agent's `SkillCatalog`, in ``ctx.services`` of its calls."""
