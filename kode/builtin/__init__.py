"""kode's built-in tools, each an ordinary `define_tool` module registered with source ``core``.

Importing ``kode.builtin`` registers them all from the table `TOOLS` (name, kind, group,
aliases) without importing any tool module: a tool's module is imported when the tool itself is
first needed (an agent choosing it, `ToolRegistry.get`, a search). Importing one module
(``kode.builtin.fs``) defines and registers its tools at once. Groups: ``group:fs``,
``group:runtime``, ``group:web``, ``group:think`` (todo), ``group:sessions`` (sub-agents, the
sessions of the agent's store), ``group:memory`` (facts kept across sessions), ``group:media``
(images drawn or generated), ``group:browser`` (a headless Chromium, extra ``browser``),
``group:skills`` (``skill``: the agent's skills, loaded on demand), ``group:code`` (``code_run``:
a sandboxed Python script calling the agent's tools; optional, so only an agent that names it
gets it).
See ``docs/builtin-tools.md``.

What configures them is importable from here too: `RuntimePolicy` (what ``bash_run`` may run)
with `set_default_runtime_policy` and `using_runtime_policy`.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING, Any

from kode.registries import registry

if TYPE_CHECKING:
    from kode.builtin._shared._policy import (
        RuntimePolicy,
        set_default_runtime_policy,
        using_runtime_policy,
    )

__all__ = ["MODULES", "RuntimePolicy", "set_default_runtime_policy", "using_runtime_policy"]

MODULES = (
    *("fs", "runtime", "web", "todo", "tasks", "sessions", "memory", "media", "browser"),
    "skills",
    "code",
)
"""The built-in tool modules, in registration order."""

# fmt: off
TOOLS: tuple[tuple[str, str, str, str, tuple[str, ...]], ...] = (
    # name, "module:attribute", kind, group, aliases -- in the order the modules register them
    ("fs_read", "kode.builtin.fs:fs_read", "read", "group:fs", ("read", "read_file")),
    ("fs_write", "kode.builtin.fs:fs_write", "edit", "group:fs", ("write", "write_file")),
    ("fs_edit", "kode.builtin.fs:fs_edit", "edit", "group:fs", ("edit", "edit_file")),
    ("fs_multi_edit", "kode.builtin.fs:fs_multi_edit", "edit", "group:fs",
     ("multi_edit", "multiedit")),
    ("fs_glob", "kode.builtin.fs.search:fs_glob", "search", "group:fs", ("glob",)),
    ("fs_grep", "kode.builtin.fs.search:fs_grep", "search", "group:fs", ("grep",)),
    ("fs_ls", "kode.builtin.fs:fs_ls", "read", "group:fs", ("ls", "list_directory")),
    ("apply_patch", "kode.builtin.fs.patch:apply_patch", "edit", "group:fs", ("patch",)),
    ("fs_read_many", "kode.builtin.fs.read_many:fs_read_many", "read", "group:fs",
     ("read_many_files",)),
    ("bash_run", "kode.builtin.runtime:bash_run", "execute", "group:runtime", ("bash", "exec")),
    ("bash_logs", "kode.builtin.runtime:bash_logs", "read", "group:runtime",
     ("bash_output", "bashoutput")),
    ("bash_kill", "kode.builtin.runtime:bash_kill", "execute", "group:runtime",
     ("kill_shell", "killshell")),
    ("bash_list", "kode.builtin.runtime:bash_list", "read", "group:runtime", ("list_shells",)),
    ("web_fetch", "kode.builtin.web:web_fetch", "fetch", "group:web", ("webfetch",)),
    ("web_search", "kode.builtin.web:web_search", "fetch", "group:web", ("websearch",)),
    ("todo_write", "kode.builtin.todo:todo_write", "think", "group:think", ("todowrite",)),
    ("todo_read", "kode.builtin.todo:todo_read", "think", "group:think", ("todoread",)),
    ("task_run", "kode.builtin.tasks:task_run", "other", "group:sessions", ("task",)),
    ("sessions_list", "kode.builtin.sessions:sessions_list", "read", "group:sessions", ()),
    ("sessions_history", "kode.builtin.sessions:sessions_history", "read", "group:sessions", ()),
    ("session_status", "kode.builtin.sessions:session_status", "read", "group:sessions", ()),
    ("sessions_send", "kode.builtin.sessions:sessions_send", "other", "group:sessions", ()),
    ("sessions_spawn", "kode.builtin.sessions:sessions_spawn", "other", "group:sessions", ()),
    ("agents_list", "kode.builtin.sessions:agents_list", "read", "group:sessions", ()),
    ("memory", "kode.builtin.memory:memory", "edit", "group:memory", ("save_memory",)),
    ("canvas", "kode.builtin.media:canvas", "edit", "group:media", ("draw",)),
    ("image_generate", "kode.builtin.media:image_generate", "fetch", "group:media",
     ("generate_image",)),
    ("browser", "kode.builtin.browser:browser", "fetch", "group:browser", ("browse",)),
    ("skill", "kode.builtin.skills:skill", "read", "group:skills", ("use_skill",)),
    ("code_run", "kode.builtin.code:code_run", "execute", "group:code", ()),
)
# fmt: on
"""Every built-in tool as the registry knows it before its module is imported: name, where it
is defined, kind, group and aliases (lower-cased). A test checks this table against the tools
the modules define, so a new built-in tool must be added here."""
OPTIONAL = frozenset({"code_run"})
"""The built-in tools an agent gets only when its template or a policy names them."""


def _import_tool_module(name: str) -> ModuleType:
    # Each tool's pydantic model and JSON Schema are made on its first use: importing the
    # tools costs less, and every other check of their functions still runs now.
    from kode.tools.define import building_later

    with building_later():
        return importlib.import_module(name)


# Importing kode.builtin imports none of the tool modules: the registry knows each tool's name,
# kind, group and aliases from TOOLS, and imports its module when the tool is first needed.
for _name, _target, _kind, _group, _aliases in TOOLS:
    registry.register_lazy(
        _name,
        _target,
        kind=_kind,
        groups=[_group],
        aliases=_aliases,
        optional=_name in OPTIONAL,
        source="core",
        importer=_import_tool_module,
    )

_POLICY = frozenset({"RuntimePolicy", "set_default_runtime_policy", "using_runtime_policy"})


def __getattr__(name: str) -> Any:
    """The tool modules (``kode.builtin.fs``) and the runtime policy, imported on first use."""
    if name in MODULES:
        return _import_tool_module(f"{__name__}.{name}")
    if name in _POLICY:
        return getattr(_import_tool_module(f"{__name__}._shared._policy"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
