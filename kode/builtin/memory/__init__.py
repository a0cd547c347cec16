"""Built-in memory tool (``group:memory``): facts an agent keeps from one session to the next.

``memory`` saves a fact as one line of a Markdown file, lists the facts and forgets them. Two
files are kept: one per workspace, ``.kode/memory.md`` under the workspace root (resolved and
written like any file tool's path, so a ``.kode`` that leads outside the workspace is
refused), and one per user, ``memory.md`` in ``$KODE_HOME`` (``~/.kode`` when it is not set).
A fact is a line starting with ``- ``; anything else in the file (a heading, notes a person
wrote) is left as it is, so the files may be edited by hand. Each change re-reads the file
and writes it atomically under the file's lock, so an edit made meanwhile is kept.

An agent reads its memory through its system prompt: `memory_prompt` renders the facts of both
files as a prompt section, and `with_memory` returns a template whose system prompt ends with
it, read when it is called::

    from kode.builtin.memory import with_memory

    template = with_memory(template, workspace="/path/to/project")
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, Protocol, TypeVar

from pydantic import Field

from kode.builtin._shared._safe_open import write_at
from kode.builtin._shared._workspace_files import (
    Target,
    existing,
    file_lock,
    open_target,
    parent_dir,
    target,
)
from kode.tools.context import ToolContext
from kode.tools.define import define_tool
from kode.tools.errors import ToolError, ToolErrorType
from kode.tools.results import ToolResult, text_result
from kode.tools.workspace import Workspace
from kode.trust.protected import kode_home

__all__ = [
    "MAX_FACT_CHARS",
    "MAX_MEMORY_BYTES",
    "MEMORY_FILE",
    "memory",
    "memory_prompt",
    "user_memory_path",
    "with_memory",
]

MEMORY_FILE = ".kode/memory.md"
"""The workspace's memory file, relative to its root."""

MAX_FACT_CHARS = 1000
"""The longest fact `memory` saves, in characters (one line)."""

MAX_MEMORY_BYTES = 64 * 1024
"""The largest memory file: `memory` saves nothing more into a file this size, and
`memory_prompt` reads at most this much of each."""

_HEADER = (
    "# kode memory\n\n"
    'Facts an agent saved with the memory tool, one a line (lines starting with "- ").\n'
    "Edit freely: the agent reads this file when it starts.\n\n"
)

Scope = Literal["workspace", "user"]


def user_memory_path() -> Path:
    """The user's memory file: ``$KODE_HOME/memory.md``, or ``~/.kode/memory.md``."""
    return kode_home().resolve() / "memory.md"


def _user_target() -> Target:
    path = user_memory_path()
    return Target(path=path, shown=str(path), workspace=Workspace(root=path.parent))


def _where(ctx: ToolContext, scope: Scope) -> Target:
    return target(ctx, MEMORY_FILE) if scope == "workspace" else _user_target()


def _read(where: Target) -> str:
    """The file's text ("" when it does not exist)."""
    try:
        with open_target(where) as (fh, _):
            data = fh.read(MAX_MEMORY_BYTES + 1)
    except ToolError as exc:
        if exc.type is ToolErrorType.FILE_NOT_FOUND:
            return ""
        raise
    return data.decode("utf-8", errors="replace")


def _facts(text: str) -> list[str]:
    return [line.strip()[2:].strip() for line in text.splitlines() if _is_fact(line)]


def _is_fact(line: str) -> bool:
    return line.strip().startswith("- ") and bool(line.strip()[2:].strip())


def _write(where: Target, text: str) -> None:
    try:
        with parent_dir(where, create=True) as fd:
            old = existing(where, fd)
            write_at(
                fd,
                where.path.name,
                text.encode("utf-8"),
                mode=old.st_mode & 0o7777 if old else None,
            )
    except OSError as exc:
        raise ToolError(
            f"Could not write the memory file '{where.shown}': {exc.strerror or exc}.",
            details={"path": str(where.path)},
        ) from None


def _one_line(fact: str) -> str:
    text = " ".join(fact.split())
    return text[2:].strip() if text.startswith("- ") else text


def _save(ctx: ToolContext, fact: str, scope: Scope) -> ToolResult:
    text = _one_line(fact)
    if not text:
        raise ToolError(
            'The fact is empty: give the fact to remember, e.g. fact="The tests run with '
            '`make check`".',
            type=ToolErrorType.INVALID_TOOL_PARAMS,
        )
    if len(text) > MAX_FACT_CHARS:
        raise ToolError(
            f"The fact is {len(text):,} characters long; a fact is at most {MAX_FACT_CHARS:,}. "
            "Save the essential part, or several shorter facts.",
            type=ToolErrorType.INVALID_TOOL_PARAMS,
        )
    where = _where(ctx, scope)
    with file_lock(where.path):
        current = _read(where)
        if text in _facts(current):
            return text_result(
                f"Already remembered in the {scope} memory ({where.shown}): {text}",
                details={"scope": scope, "path": where.shown, "saved": False},
            )
        if len(current.encode("utf-8")) + len(text) + 3 > MAX_MEMORY_BYTES:
            raise ToolError(
                f"The {scope} memory ({where.shown}) is full ({MAX_MEMORY_BYTES // 1024} KB); "
                'forget facts that no longer hold (action="forget") before saving more.',
                details={"scope": scope, "path": where.shown, "reason": "full"},
            )
        base = current if current else _HEADER
        if base and not base.endswith("\n"):
            base += "\n"
        _write(where, f"{base}- {text}\n")
    return text_result(
        f"Remembered in the {scope} memory ({where.shown}): {text}",
        details={"scope": scope, "path": where.shown, "saved": True},
    )


def _scopes(scope: Scope | None) -> list[Scope]:
    return ["workspace", "user"] if scope is None else [scope]


def _list(ctx: ToolContext, scope: Scope | None) -> ToolResult:
    lines: list[str] = []
    found: dict[str, list[str]] = {}
    for one in _scopes(scope):
        where = _where(ctx, one)
        facts = _facts(_read(where))
        found[one] = facts
        if facts:
            lines.append(f"{one.capitalize()} memory ({where.shown}):")
            lines += [f"- {fact}" for fact in facts]
        else:
            lines.append(f"{one.capitalize()} memory ({where.shown}): no facts.")
    return text_result("\n".join(lines), details={"facts": found})


def _forget(ctx: ToolContext, fact: str, scope: Scope | None) -> ToolResult:
    wanted = _one_line(fact)
    if not wanted:
        raise ToolError(
            "Say which fact to forget: its text, or a part of it that only it contains "
            '(list the facts with action="list").',
            type=ToolErrorType.INVALID_TOOL_PARAMS,
        )
    matches: list[tuple[Scope, Target, str]] = []
    for one in _scopes(scope):
        where = _where(ctx, one)
        facts = _facts(_read(where))
        exact = [f for f in facts if f == wanted]
        some = exact or [f for f in facts if wanted.lower() in f.lower()]
        matches += [(one, where, f) for f in dict.fromkeys(some)]
    if not matches:
        raise ToolError(
            f'No remembered fact contains {wanted!r}; list them with action="list".',
            type=ToolErrorType.INVALID_TOOL_PARAMS,
        )
    if len(matches) > 1:
        listed = "; ".join(f"{s}: {f}" for s, _, f in matches[:10])
        raise ToolError(
            f"{len(matches)} facts contain {wanted!r} ({listed}); give more of the one to "
            "forget, or its whole text.",
            type=ToolErrorType.INVALID_TOOL_PARAMS,
        )
    one, where, chosen = matches[0]
    with file_lock(where.path):
        current = _read(where)
        kept = [
            line
            for line in current.splitlines(keepends=True)
            if not (_is_fact(line) and line.strip()[2:].strip() == chosen)
        ]
        _write(where, "".join(kept))
    return text_result(
        f"Forgot from the {one} memory ({where.shown}): {chosen}",
        details={"scope": one, "path": where.shown, "forgotten": chosen},
    )


def _approval(arguments: dict[str, Any]) -> bool | None:
    """Listing needs no approval; saving and forgetting are decided by kind (``edit``)."""
    return False if arguments.get("action") == "list" else None


@define_tool(
    kind="edit",
    groups=["group:memory"],
    aliases=["save_memory"],
    requires_approval=_approval,
)
def memory(
    action: Literal["save", "list", "forget"] = "save",
    fact: Annotated[str, Field(max_length=4 * MAX_FACT_CHARS)] = "",
    scope: Scope | None = None,
    *,
    ctx: ToolContext,
) -> ToolResult:
    """Remember a fact across sessions, list what is remembered, or forget a fact.

    Save short, lasting facts the user states or that will matter next time (preferences,
    project conventions, commands that work), not the task at hand. Facts are loaded into the
    agent's instructions when a session starts. Scope "workspace" (the default for save) is
    .kode/memory.md in this project; "user" is the user's own file, for every project.

    Limits and errors: a fact is one line of at most 1,000 characters (line breaks become
    spaces); each memory file holds at most 64 KB. Saving a fact that is already there
    changes nothing. forget takes the fact's text or a part only one fact contains, in the
    given scope (or both when none is given); more than one match is refused with the list.

    Args:
        action: "save" a fact, "list" the facts, or "forget" one.
        fact: The fact to save, or (for forget) its text or a unique part of it.
        scope: "workspace" or "user" (default: workspace for save, both for list and forget).
        ctx: Injected by kode (not shown to the model).
    """
    if action == "list":
        return _list(ctx, scope)
    if action == "forget":
        return _forget(ctx, fact, scope)
    return _save(ctx, fact, scope or "workspace")


@dataclass(frozen=True, slots=True)
class _Section:
    title: str
    facts: list[str]


def memory_prompt(
    workspace: str | os.PathLike[str] | Workspace | None = None, *, user: bool = True
) -> str:
    """The facts of the memory files as a section of a system prompt ("" when there are none).

    Args:
        workspace: The workspace whose ``.kode/memory.md`` to read (a path or a `Workspace`;
            `None`: the current directory).
        user: Also read the user's file (`user_memory_path`).
    """
    space = Workspace.of(workspace) or Workspace(root=Path.cwd())
    ctx: ToolContext = ToolContext(workspace=space)
    sections: list[_Section] = []
    places: list[tuple[str, Scope]] = [("This workspace", "workspace")]
    if user:
        places.append(("The user, in every project", "user"))
    for title, scope in places:
        try:
            facts = _facts(_read(_where(ctx, scope))[:MAX_MEMORY_BYTES])
        except ToolError:
            facts = []  # refused (e.g. .kode leads outside the workspace): nothing to load
        if facts:
            sections.append(_Section(title=title, facts=facts))
    if not sections:
        return ""
    lines = [
        "## Memory",
        "",
        "Facts saved in earlier sessions (the memory tool lists, saves and forgets them):",
    ]
    for section in sections:
        lines += ["", f"{section.title}:", *(f"- {fact}" for fact in section.facts)]
    return "\n".join(lines)


class _Template(Protocol):
    system_prompt: str

    def model_copy(self, *, update: dict[str, Any] | None = ..., deep: bool = ...) -> Any: ...


T = TypeVar("T", bound=_Template)


def with_memory(
    template: T, workspace: str | os.PathLike[str] | Workspace | None = None, *, user: bool = True
) -> T:
    """`template` with the memory files' facts, as they are now, ending its system prompt.

    `template` is an `AgentTemplate` (or any frozen model with a ``system_prompt``); it comes
    back unchanged when no fact is remembered.

    Example:
        ```python
        import tempfile
        from kode import AgentTemplate
        from kode.builtin.memory import with_memory

        project = tempfile.mkdtemp()
        template = AgentTemplate(id="coder", system_prompt="You write code.", tools=["memory"])
        template = with_memory(template, workspace=project, user=False)
        ```
    """
    section = memory_prompt(workspace, user=user)
    if not section:
        return template
    prompt = (
        f"{template.system_prompt.rstrip()}\n\n{section}" if template.system_prompt else section
    )
    copied: T = template.model_copy(update={"system_prompt": prompt})
    return copied
