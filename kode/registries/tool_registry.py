"""`ToolRegistry`: names to tools and tool factories, with sources, aliases, groups, profiles.

This module owns registration, conflict decisions, lookup by (normalised or aliased) name and
the diagnostics that explain every decision. Choosing an agent's tools is `resolve` (in
`kode.registries.resolve`), reached through `ToolRegistry.resolve`. A registry is thread-safe.

Conflicts are decided, never silent:

- a different tool defined in application code under a taken name raises
  `ToolDefinitionError` (unless ``replace=True``); re-running the same definition (same module
  and qualname, as a notebook cell re-run does) by the same owner replaces it quietly;
- a core tool wins over a plugin tool, whichever came first;
- any other duplicate from a later source (plugin, discovered, MCP, client) is skipped, and
  the first registration keeps its metadata (source, groups, kind, optional), even when both
  were made from the same function. (A plugin's own tool, defined in its package with a bare
  ``@define_tool``, is handed over to the plugin by `kode.registries.plugins`, not here.)

Every skip or replacement is a `Diagnostic` in `diagnostics` and a log record.
"""

from __future__ import annotations

import contextlib
import difflib
import importlib
import logging
import threading
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from dataclasses import replace as dc_replace
from types import ModuleType
from typing import TYPE_CHECKING, Any

from kode.registries.entries import (
    FactoryRecord,
    RegisteredTool,
    describe_entry,
    is_rerun,
    normalize_name,
    origin_of,
    same_factory,
)
from kode.registries.factories import ToolFactoryContext, ToolFactoryFunc
from kode.registries.index import NameIndex
from kode.registries.meta import Diagnostic, DiagnosticLevel, ToolMeta, ToolSource
from kode.registries.policy import (
    BUILTIN_PROFILES,
    PolicyError,
    normalize_group,
    normalize_pattern,
    pattern_list,
)
from kode.registries.resolve import Resolution, factory_tools, resolve
from kode.registries.search import SearchHit, SearchIndex
from kode.tools.core import Tool
from kode.tools.dialects import openai_strict_limit, strict_limit_message, strict_limit_said
from kode.tools.errors import ToolDefinitionError, ToolNotFoundError
from kode.tools.kinds import Kind

if TYPE_CHECKING:
    from kode.registries.policy import ToolPolicy

__all__ = ["RegisteredTool", "ToolRegistry", "normalize_name", "registry"]

_log = logging.getLogger("kode.registry")


def _default_source(tool: Tool[..., Any]) -> ToolSource:
    module = origin_of(tool.fn)[0]
    return ToolSource.CORE if module.startswith("kode.builtin") else ToolSource.USER


class ToolRegistry:
    """A thread-safe map from tool names to tools and tool factories.

    Lookups normalise names (trim, lower-case) and follow aliases, so a model that sends
    ``" Fs_Read "`` or an alias such as ``"read"`` reaches ``fs_read``.

    Example:
        ```python
        from kode import ToolRegistry, define_tool

        tools = ToolRegistry()

        @define_tool(registry=tools, aliases=["pong"])
        def ping() -> str:
            \"\"\"Answer pong.\"\"\"
            return "pong"

        assert "PING" in tools and "pong" in tools and tools.names() == ["ping"]
        assert tools.meta("ping").source.value == "user"
        ```
    """

    MAX_DIAGNOSTICS = 1000
    """How many distinct diagnostics a registry keeps (the oldest go first)."""

    DEFER_MCP_ABOVE = 20
    """An MCP server with more tools than this has them deferred (see `defer_mcp_above`)."""

    def __init__(self, name: str = "default") -> None:
        self.name = name
        """A label for messages and reprs."""
        self._entries: dict[str, RegisteredTool] = {}
        self._aliases: dict[str, str] = {}
        self._factories: list[FactoryRecord] = []
        self._groups: dict[str, tuple[str, ...]] = {}
        self._profiles: dict[str, tuple[str, ...]] = dict(BUILTIN_PROFILES)
        self._diagnostics: list[Diagnostic] = []
        self._index = NameIndex()
        self._search: SearchIndex | None = None
        self._unindexed: set[str] = set()  # lazy entries registered since the index was made
        self._deferred: tuple[str, ...] = ()
        self.defer_mcp_above: int | None = self.DEFER_MCP_ABOVE
        """An MCP server registering more tools than this has all of them deferred: an agent
        sends their definitions only once ``tool_search`` has found them (`None`: never)."""
        self._lock = threading.RLock()

    def __repr__(self) -> str:
        return f"<ToolRegistry {self.name!r} with {len(self._entries)} tools>"

    # --- diagnostics -------------------------------------------------------------------------

    @property
    def diagnostics(self) -> list[Diagnostic]:
        """Every decision the registry made on its own, oldest first (a copy)."""
        with self._lock:
            return list(self._diagnostics)

    def report(
        self,
        level: DiagnosticLevel,
        message: str,
        *,
        source: ToolSource | None = None,
        plugin_id: str | None = None,
    ) -> Diagnostic:
        """Record a diagnostic and log it (``kode.registry`` logger).

        Every call logs; `diagnostics` keeps each distinct diagnostic once (a factory failing on
        every resolution is one entry, not one per agent), at most `MAX_DIAGNOSTICS` of them.
        """
        diagnostic = Diagnostic(level=level, source=source, plugin_id=plugin_id, message=message)
        with self._lock:
            if diagnostic not in self._diagnostics:
                self._diagnostics.append(diagnostic)
                del self._diagnostics[: -self.MAX_DIAGNOSTICS]
        log_level = {"info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}
        _log.log(log_level[level], "%s", diagnostic)
        return diagnostic

    # --- registration ------------------------------------------------------------------------

    def register(
        self,
        tool: Tool[..., Any],
        /,
        *,
        replace: bool = False,
        source: ToolSource | str | None = None,
        plugin_id: str | None = None,
        server: str | None = None,
        remote_name: str | None = None,
        optional: bool | None = None,
        groups: Iterable[str] = (),
        defer_loading: bool | None = None,
    ) -> Tool[..., Any]:
        """Register a tool; return it.

        Args:
            tool: The tool.
            replace: Replace another tool registered under the same name.
            source: Where it comes from (default: ``core`` for kode's built-ins, else ``user``).
            plugin_id: The plugin registering it (sets the source to ``plugin``).
            server: The MCP server it comes from.
            remote_name: Its own name on its server or command, when kode renamed it.
            optional: Override the tool's own `optional`.
            groups: Extra groups, in addition to the tool's own.
            defer_loading: Override the tool's own `defer_loading`: an agent sends a deferred
                tool's definition only once ``tool_search`` has found it.

        Raises:
            ToolDefinitionError: a ``user`` tool's name is taken by another tool and `replace`
                is false. Other sources never raise: their conflicts become diagnostics.
        """
        kind_source = (
            ToolSource(source)
            if source is not None
            else ToolSource.PLUGIN
            if plugin_id is not None
            else _default_source(tool)
        )
        if isinstance(groups, str):
            raise TypeError(f"groups must be a list of group names, got the string {groups!r}")
        all_groups = tuple(
            dict.fromkeys(normalize_group(g) for g in (*tool.groups, *groups) if g.strip())
        )
        if kind_source is ToolSource.PLUGIN and "group:plugins" not in all_groups:
            all_groups = (*all_groups, "group:plugins")
        meta = ToolMeta(
            name=tool.name,
            source=kind_source,
            plugin_id=plugin_id,
            server=server,
            remote_name=remote_name,
            optional=tool.optional if optional is None else optional,
            groups=all_groups,
            kind=tool.kind,
            aliases=tuple(normalize_name(a) for a in getattr(tool, "aliases", ())),
            defer_loading=tool.defer_loading if defer_loading is None else defer_loading,
        )
        entry = RegisteredTool(meta=meta, tool=tool, factory=None, origin=origin_of(tool.fn))
        # A built-in tool's schema is made on first read, not here (a test checks that none of
        # them has a limit).
        if self._add(entry, replace=replace) and tool.schema_made:
            limit = openai_strict_limit(tool.input_schema)
            if limit is not None:
                message = strict_limit_message(tool.name, limit)
                self.report("warning", message, source=kind_source, plugin_id=plugin_id)
                strict_limit_said(message)  # the declaration does not say it again
        return tool

    def register_lazy(
        self,
        name: str,
        target: str,
        /,
        *,
        kind: Kind | str,
        groups: Iterable[str] = (),
        aliases: Iterable[str] = (),
        optional: bool = False,
        defer_loading: bool = False,
        source: ToolSource | str = ToolSource.USER,
        importer: Callable[[str], ModuleType] = importlib.import_module,
    ) -> None:
        """Register a tool by where it is defined, importing that module on first use.

        Names, groups, kinds, aliases, policies and resolution see the tool at once; the
        module ``target`` names (``"package.module:attribute"``) is imported when the tool
        itself is first needed (`get`, `create`, resolution selecting it, a search), and the
        tool it defines takes the entry's place. What is given here must be what that tool
        declares (kode's built-ins are checked by a test). A name already registered by the
        same definition (its module was imported first) is left as it is.

        Args:
            name: The tool's name.
            target: ``"module:attribute"``: where the `Tool` is defined.
            kind: The tool's kind.
            groups: Its groups (``group:`` prefix optional).
            aliases: Its aliases.
            optional: Whether it is optional.
            defer_loading: Whether an agent sends its definition only once ``tool_search``
                found it.
            source: Where it comes from.
            importer: Imports the module (``importlib.import_module`` by default).

        Raises:
            ValueError: `target` is not ``"module:attribute"``.
            ToolDefinitionError: a ``user`` tool's name is taken (see `register`).
        """
        module, _, attribute = target.partition(":")
        if not module or not attribute:
            raise ValueError(f"target must be 'module:attribute', got {target!r}")
        if isinstance(groups, str) or isinstance(aliases, str):
            raise TypeError("groups and aliases must be lists of names, not a string")

        def load() -> Tool[..., Any]:
            made = getattr(importer(module), attribute)
            if not isinstance(made, Tool):
                raise TypeError(f"{target} is a {type(made).__name__}, not a tool")
            return made

        meta = ToolMeta(
            name=name,
            source=ToolSource(source),
            optional=optional,
            groups=tuple(dict.fromkeys(normalize_group(g) for g in groups if g.strip())),
            kind=Kind(kind),
            aliases=tuple(normalize_name(a) for a in aliases),
            defer_loading=defer_loading,
        )
        entry = RegisteredTool(
            meta=meta, tool=None, factory=None, origin=(module, attribute), load=load
        )
        with self._lock:
            existing = self._entries.get(normalize_name(name))
            if existing is not None and is_rerun(existing, entry):
                return
            self._add(entry, replace=False)

    def register_factory(
        self,
        factory: ToolFactoryFunc,
        /,
        *,
        names: Iterable[str] | None = None,
        optional: bool = False,
        groups: Iterable[str] = (),
        kind: Kind | str = Kind.OTHER,
        source: ToolSource | str = ToolSource.USER,
        plugin_id: str | None = None,
        replace: bool = False,
        defer_loading: bool = False,
    ) -> None:
        """Register a factory: a function of a `ToolFactoryContext` returning tools.

        With `names`, each name is registered now (visible to `names`, `meta`, policy and
        `create`); without, the factory's tools appear only when tools are resolved.

        Raises:
            ToolDefinitionError: a ``user`` factory's name is taken (see `register`).
            TypeError: `factory` is not callable, or `names` is a bare string.
        """
        if not callable(factory):
            raise TypeError(f"a tool factory must be callable, got {type(factory).__name__}")
        if isinstance(names, str):
            raise TypeError(f"names must be a list of tool names, got the string {names!r}")
        if isinstance(groups, str):
            raise TypeError(f"groups must be a list of group names, got the string {groups!r}")
        tool_source = ToolSource.PLUGIN if plugin_id is not None else ToolSource(source)
        group_names = tuple(dict.fromkeys(normalize_group(g) for g in groups if g.strip()))
        if tool_source is ToolSource.PLUGIN and "group:plugins" not in group_names:
            group_names = (*group_names, "group:plugins")
        record = FactoryRecord(
            factory=factory,
            names=tuple(names) if names is not None else None,
            optional=optional,
            groups=group_names,
            source=tool_source,
            plugin_id=plugin_id,
            origin=origin_of(factory),
        )
        with self._lock:
            # The same definition run again (a notebook cell) replaces its record; two factories
            # sharing a qualname (lambdas, closures made in a loop) for other names are both kept.
            self._factories = [f for f in self._factories if not same_factory(f, record)]
            self._factories.append(record)
        for name in record.names or ():
            meta = ToolMeta(
                name=name,
                source=tool_source,
                plugin_id=plugin_id,
                optional=optional,
                groups=group_names,
                kind=Kind(kind),
                factory=True,
                defer_loading=defer_loading,
            )
            self._add(
                RegisteredTool(meta=meta, tool=None, factory=factory, origin=record.origin),
                replace=replace,
            )

    def _add(self, entry: RegisteredTool, *, replace: bool) -> bool:
        """Add an entry, deciding conflicts; return whether it was added."""
        key = normalize_name(entry.name)
        new = entry.meta
        with self._lock:
            existing = self._entries.get(key)
            if existing is None and key in self._aliases:
                target = self._aliases[key]
                if not replace:
                    return self._conflict(entry, f"an alias of {target!r}")
                del self._aliases[key]
                self._index.remove_alias(key, target)
            if existing is not None and not replace and not is_rerun(existing, entry):
                old = existing.meta
                if new.source is ToolSource.CORE and old.source is ToolSource.PLUGIN:
                    self._drop_aliases(key)
                    self.report(
                        "warning",
                        f"core tool {new.name!r} replaces the tool of the same name from plugin "
                        f"{old.plugin_id!r}: core tools win over plugin tools",
                        source=old.source,
                        plugin_id=old.plugin_id,
                    )
                else:
                    where = describe_entry(existing)
                    return self._conflict(entry, where)
            if existing is not None:
                self._drop_aliases(key)
                self._index.remove(key, existing.meta)
            self._entries[key] = entry
            self._index.add(key, new)
            if self._search is not None:
                if entry.loaded:
                    self._search.add(key, entry.tool, new)
                    self._unindexed.discard(key)
                else:  # indexed by the next search, which imports its module outside the lock
                    self._search.remove(key)
                    self._unindexed.add(key)
            for alias in new.aliases:
                self._add_alias(alias, key, source=new)
            return True

    def _conflict(self, entry: RegisteredTool, where: str) -> bool:
        new = entry.meta
        if new.source is ToolSource.USER:
            raise ToolDefinitionError(
                entry.origin[1] or new.name,
                [
                    f"the tool name {new.name!r} is already registered in {self.name!r} by "
                    f"{where}; choose another name=, or pass replace=True to replace it"
                ],
            )
        with self._lock:
            existing = self._entries.get(normalize_name(new.name))
        rule = (
            "core tools win over plugin tools"
            if existing is not None
            and existing.meta.source is ToolSource.CORE
            and new.source is ToolSource.PLUGIN
            else "the tool registered first is kept"
        )
        self.report(
            "warning",
            f"{new.source.value} tool {new.name!r} skipped: the name is taken by {where} ({rule})",
            source=new.source,
            plugin_id=new.plugin_id,
        )
        return False

    def _drop_aliases(self, key: str) -> None:
        for alias in self._index.aliases_of(key):
            del self._aliases[alias]
            self._index.remove_alias(alias, key)

    def _add_alias(self, alias: str, key: str, *, source: ToolMeta | None = None) -> bool:
        if alias in self._entries or (alias in self._aliases and self._aliases[alias] != key):
            taken = self._aliases.get(alias, alias)
            self.report(
                "warning",
                f"alias {alias!r} of tool {self._entries[key].name!r} skipped: it already names "
                f"{taken!r}",
                source=source.source if source else None,
                plugin_id=source.plugin_id if source else None,
            )
            return False
        self._aliases[alias] = key
        self._index.add_alias(alias, key)
        return True

    def add_alias(self, alias: str, target: str) -> None:
        """Let `alias` reach the tool `target` (e.g. ``add_alias("bash", "exec")``).

        Raises:
            ToolNotFoundError: `target` is not registered.
            ValueError: `alias` already names another tool or alias.
        """
        with self._lock:
            key = self._key(target)
            if key is None:
                raise self._not_found(target)
            alias_key = normalize_name(alias)
            if alias_key in self._entries or self._aliases.get(alias_key, key) != key:
                raise ValueError(f"{alias!r} already names a tool or an alias; choose another")
            self._aliases[alias_key] = key
            self._index.add_alias(alias_key, key)

    def unregister(self, name: str) -> None:
        """Remove a tool (by name or alias) and its aliases.

        Raises:
            ToolNotFoundError: no tool has this name.
        """
        with self._lock:
            key = self._key(name)
            if key is None:
                raise self._not_found(name)
            entry = self._entries.pop(key)
            self._drop_aliases(key)
            self._index.remove(key, entry.meta)
            if self._search is not None:
                self._search.remove(key)
            self._unindexed.discard(key)
            if entry.factory is not None:
                kept: list[FactoryRecord] = []
                for record in self._factories:
                    if record.factory is entry.factory:
                        record = dc_replace(record, removed=record.removed | {key})
                        left = {normalize_name(n) for n in record.names or ()} - record.removed
                        if record.names is not None and not left:
                            continue  # none of its names is registered any more
                    kept.append(record)
                self._factories = kept

    def clear(self) -> None:
        """Remove every tool, factory, alias, custom group and diagnostic."""
        with self._lock:
            self._entries.clear()
            self._aliases.clear()
            self._factories.clear()
            self._groups.clear()
            self._profiles = dict(BUILTIN_PROFILES)
            self._diagnostics.clear()
            self._index = NameIndex()
            self._search = None
            self._unindexed = set()
            self._deferred = ()

    @contextlib.contextmanager
    def isolated(self) -> Iterator[ToolRegistry]:
        """Empty the registry for the block and restore it after (for tests).

        Example:
            ```python
            from kode import define_tool, registry

            with registry.isolated():
                @define_tool
                def scratch() -> str:
                    '''A tool that lives only in the block.'''
                    return "x"
                assert "scratch" in registry.names()
            assert "scratch" not in registry.names()
            ```
        """
        saved = self._swap_state()
        try:
            yield self
        finally:
            self._swap_state(saved)

    def _swap_state(self, state: dict[str, Any] | None = None) -> dict[str, Any]:
        """Replace the whole state at once; return the old one (for test isolation)."""
        fresh: dict[str, Any] = state or {
            "_entries": {},
            "_aliases": {},
            "_factories": [],
            "_groups": {},
            "_profiles": dict(BUILTIN_PROFILES),
            "_diagnostics": [],
            "_index": NameIndex(),
            "_search": None,
            "_unindexed": set(),
            "_deferred": (),
        }
        with self._lock:
            old = {k: getattr(self, k) for k in fresh}
            for k, v in fresh.items():
                setattr(self, k, v)
        return old

    # --- groups and profiles -----------------------------------------------------------------

    def define_group(self, name: str, members: Sequence[str]) -> None:
        """Define a custom group: ``group:<name>`` matches every tool matching `members`.

        Args:
            name: The group's name, with or without the ``group:`` prefix.
            members: Tool names and patterns (``fs_*``, other groups, plugin ids).
        """
        patterns = pattern_list(members, f"group {name!r}: members")
        key = normalize_group(name)
        if key == "group:":
            raise PolicyError("a group needs a name")
        with self._lock:
            self._groups[key] = patterns

    def groups(self) -> dict[str, tuple[str, ...]]:
        """Custom groups and their member patterns."""
        with self._lock:
            return dict(self._groups)

    def define_profile(self, name: str, allow: Sequence[str]) -> None:
        """Define (or redefine) a named allow-list for `ToolPolicy(profile=...)`."""
        patterns = pattern_list(allow, f"profile {name!r}")
        key = normalize_pattern(name)
        if not key:
            raise PolicyError("a profile needs a name")
        with self._lock:
            self._profiles[key] = patterns

    def defer(self, patterns: Sequence[str]) -> None:
        """Defer every tool matching `patterns`, now or registered later.

        An agent sends a deferred tool's definition only once ``tool_search`` has found it
        (the tool is still allowed: only its definition waits). Patterns are what a template
        lists: names, globs (``mcp__github__*``), ``group:...``, plugin ids.

        Example:
            ```python
            from kode import ToolRegistry

            tools = ToolRegistry()
            tools.defer(["group:github", "mcp__jira__*"])
            assert tools.deferred_patterns() == ("group:github", "mcp__jira__*")
            ```
        """
        added = pattern_list(patterns, "defer: patterns")
        with self._lock:
            self._deferred = tuple(dict.fromkeys((*self._deferred, *added)))

    def deferred_patterns(self) -> tuple[str, ...]:
        """The patterns given to `defer`."""
        with self._lock:
            return self._deferred

    def search_index(self) -> SearchIndex:
        """The index ``tool_search`` reads: made on first use, then kept up to date.

        Each registration and removal updates it; a search never rebuilds it. A lazily
        registered tool's module is imported to index it, never while the registry's lock is
        held: the module registers its tool here as it is imported, and a thread importing it
        at the same moment would wait for the lock while the lock's holder waited for the import.
        """
        while True:
            with self._lock:
                index = self._search
                if index is not None and not self._unindexed:
                    return index
                keys = self._entries.keys() if index is None else self._unindexed
                pending = [
                    e
                    for e in (self._entries.get(k) for k in keys)
                    if e is not None and not e.loaded
                ]
                if not pending:
                    if index is None:
                        index = SearchIndex()
                        for key, entry in self._entries.items():
                            index.add(key, entry.tool, entry.meta)
                        self._search = index
                    else:
                        for key in self._unindexed:
                            late = self._entries.get(key)
                            if late is not None:
                                index.add(key, late.tool, late.meta)
                    self._unindexed = set()
                    return index
            for lazy in pending:
                _ = lazy.tool  # imports the tool's module, outside the lock

    def search_ready(self) -> bool:
        """Whether a word search would answer at once.

        False while it would first have to import lazily registered tools, load the model of
        meaning or embed tools registered since the last search (async callers then search in
        a worker thread).
        """
        with self._lock:
            return self._search is not None and not self._unindexed and self._search.ready

    def search(
        self,
        query: str = "",
        *,
        regex: str | None = None,
        allowed: Collection[str] | None = None,
        limit: int = 5,
    ) -> list[SearchHit]:
        """Find tools by words and meaning (see `SearchIndex.search`) or by a regular expression.

        Args:
            query: Words, as a user or a model would ask (``"open a github issue"``).
            regex: A regular expression matched against names, descriptions and parameter
                names, case-insensitive (used instead of `query` when given).
            allowed: The normalised names a search may return (`None`: every tool).
            limit: At most this many hits, best first.

        Raises:
            re.error: `regex` is not a valid regular expression.
        """
        index = self.search_index()  # imports lazily registered tools: not under the lock
        if not regex:
            index.prepare()  # loads the model of meaning (once), not under the lock either
        with self._lock:
            if regex:
                return index.search_regex(regex, allowed=allowed, limit=limit)
            return index.search(query, allowed=allowed, limit=limit)

    def profiles(self) -> dict[str, tuple[str, ...]]:
        """Every profile (built-in and custom) and its allow-list."""
        with self._lock:
            return dict(self._profiles)

    # --- lookup ------------------------------------------------------------------------------

    def _key(self, name: str) -> str | None:
        key = normalize_name(name)
        if key in self._entries:
            return key
        return self._aliases.get(key)

    def meta(self, name: str) -> ToolMeta:
        """What the registry knows about a tool: source, plugin, server, groups, kind, aliases.

        Raises:
            ToolNotFoundError: no tool has this name or alias.
        """
        with self._lock:
            key = self._key(name)
            if key is None:
                raise self._not_found(name)
            meta = self._entries[key].meta
            aliases = self._index.aliases_of(key)
        return dc_replace(meta, aliases=aliases) if aliases != meta.aliases else meta

    def get(self, name: str) -> Tool[..., Any]:
        """The tool registered under `name` (normalised, or an alias).

        A factory-made tool is made with an empty `ToolFactoryContext`.

        Raises:
            ToolNotFoundError: no tool has this name (the message suggests close names).
        """
        return self.create(name, None)

    def create(self, name: str, ctx: ToolFactoryContext | None = None) -> Tool[..., Any]:
        """Make the tool `name` for `ctx`: the tool itself, or what its factory makes.

        Raises:
            ToolNotFoundError: no tool has this name, or its factory makes no tool of that
                name for this context.
            TypeError: the factory returned something other than tools.
        """
        with self._lock:
            key = self._key(name)
            entry = self._entries.get(key) if key is not None else None
        if entry is None:
            raise self._not_found(name)
        if entry.tool is not None:
            return entry.tool
        assert entry.factory is not None
        produced = entry.factory(ctx if ctx is not None else ToolFactoryContext())
        tools, problem = factory_tools(produced)
        if problem is not None:
            raise TypeError(f"the factory of tool {entry.name!r} returned {problem}")
        for made in tools:
            if normalize_name(made.name) == normalize_name(entry.name):
                return made
        raise ToolNotFoundError(entry.name, self.names(), [])

    def names(self) -> list[str]:
        """Every registered tool name, sorted."""
        with self._lock:
            return sorted(e.name for e in self._entries.values())

    def entries(self) -> list[RegisteredTool]:
        """Every entry, sorted by name."""
        with self._lock:
            return sorted(self._entries.values(), key=lambda e: e.name)

    def aliases(self) -> dict[str, str]:
        """Every alias and the tool name it reaches."""
        with self._lock:
            return {a: self._entries[k].name for a, k in self._aliases.items()}

    def suggest(self, name: str, limit: int = 3) -> list[str]:
        """Registered names and aliases close to `name`, best first."""
        with self._lock:
            keys = {normalize_name(e.name): e.name for e in self._entries.values()}
            keys.update({a: a for a in self._aliases})
        close = difflib.get_close_matches(normalize_name(name), list(keys), n=limit, cutoff=0.6)
        return [keys[k] for k in close]

    def _not_found(self, name: str) -> ToolNotFoundError:
        return ToolNotFoundError(name, self.names(), self.suggest(name))

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self._key(name) is not None

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._entries)

    # --- resolution --------------------------------------------------------------------------

    def resolve(
        self,
        names_or_patterns: Sequence[str] | None = None,
        policy: ToolPolicy | Sequence[ToolPolicy] | None = None,
        ctx: ToolFactoryContext | None = None,
        *,
        deferred: Sequence[str] = (),
    ) -> Resolution:
        """Choose an agent's tools: see `kode.registries.resolve.resolve`."""
        return resolve(self, names_or_patterns, policy, ctx, deferred)

    @contextlib.contextmanager
    def reading(self) -> Iterator[RegistryView]:
        """Hold the registry still for the block and show its tables and indexes.

        What the view shows is live: read it inside the block only. Resolution reads through
        it, so choosing tools never copies the whole registry.
        """
        with self._lock:
            yield RegistryView(
                entries=self._entries,
                aliases=self._aliases,
                index=self._index,
                factories=tuple(self._factories),
                groups=self._groups,
                profiles=self._profiles,
                deferred=self._deferred,
                defer_mcp_above=self.defer_mcp_above,
            )

    def snapshot(self) -> RegistrySnapshot:
        """Everything registered, copied at one instant (safe to read while others register)."""
        with self._lock:
            return RegistrySnapshot(
                entries=list(self._entries.values()),
                factories=list(self._factories),
                aliases=dict(self._aliases),
                groups=dict(self._groups),
                profiles=dict(self._profiles),
            )


@dataclass(kw_only=True, frozen=True, slots=True)
class RegistrySnapshot:
    """What a `ToolRegistry` held at one instant: see `ToolRegistry.snapshot`."""

    entries: list[RegisteredTool]
    """Every registered tool, in registration order."""
    factories: list[FactoryRecord]
    """Every tool factory."""
    aliases: dict[str, str]
    """Alias → tool name."""
    groups: dict[str, tuple[str, ...]]
    """Group name → member names."""
    profiles: dict[str, tuple[str, ...]]
    """Profile name → its entries."""


@dataclass(kw_only=True, frozen=True, slots=True)
class RegistryView:
    """A `ToolRegistry`'s live tables, held still by `ToolRegistry.reading`."""

    entries: Mapping[str, RegisteredTool]
    """Normalised name → entry."""
    aliases: Mapping[str, str]
    """Alias → normalised name."""
    index: NameIndex
    """Names by group, by plugin and in sorted order."""
    factories: tuple[FactoryRecord, ...]
    """Every tool factory."""
    groups: Mapping[str, tuple[str, ...]]
    """Custom group → member patterns."""
    profiles: Mapping[str, tuple[str, ...]]
    """Profile → its entries."""
    deferred: tuple[str, ...]
    """Patterns of deferred tools (`ToolRegistry.defer`)."""
    defer_mcp_above: int | None
    """MCP servers with more tools than this have them deferred."""


registry = ToolRegistry("global")
"""The global registry: `define_tool` registers here unless given ``registry=``."""
