"""Resolution: from a template's list of names and patterns, and policy layers, to tools.

This module owns `resolve` and its report, `Resolution`. It asks factories for their tools
(a factory that raises or returns garbage is a diagnostic, never a failure of the others),
selects what the template names, includes optional tools only when named explicitly, applies
every policy layer, and orders the result: core, user, plugin, discovered, MCP by server,
client. Everything left out is listed with the reason, when asked (`Resolution.excluded`).

Its cost follows what is selected, not the registry's size: a name or alias is a dictionary
lookup, a group or plugin id reads the registry's index of its members, and a glob reads only
the names under its literal prefix (`kode.registries.index`). Only ``*``, a glob with no
literal start, and the report of tools left out read every registered tool.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from kode.registries.factories import ToolFactoryContext
from kode.registries.index import compiled_glob, is_glob
from kode.registries.meta import SOURCE_ORDER, Diagnostic, ToolMeta
from kode.registries.policy import (
    BUILTIN_PROFILES,
    PolicyError,
    ToolPolicy,
    entry_matches,
    is_explicit_for_optional,
    normalize_group,
    normalize_pattern,
    pattern_list,
)
from kode.tools.core import Tool

if TYPE_CHECKING:
    from kode.registries.entries import FactoryRecord, RegisteredTool
    from kode.registries.tool_registry import RegistryView, ToolRegistry

__all__ = ["Exclusion", "Resolution", "UnmatchedEntry", "factory_tools", "resolve"]

_NOT_LISTED = "not listed by the template"


@dataclass(kw_only=True, frozen=True, slots=True)
class Exclusion:
    """A tool that was available but left out."""

    name: str
    """The tool's name."""
    reason: str
    """Why, in a few words."""


@dataclass(kw_only=True, frozen=True, slots=True)
class UnmatchedEntry:
    """A template entry that selected no tool at all."""

    entry: str
    """The entry as written."""
    suggestions: tuple[str, ...]
    """Close tool names, group names or plugin ids, best first."""


_SortKey = tuple[int, str, str]


@dataclass(kw_only=True, slots=True)
class Resolution:
    """The tools chosen for an agent, and an account of everything else."""

    tools: list[Tool[..., Any]] = field(default_factory=list)
    """The chosen tools, in a stable order."""
    metas: dict[str, ToolMeta] = field(default_factory=dict)
    """What the registry knows about each chosen tool, by name."""
    aliases: dict[str, str] = field(default_factory=dict)
    """The registry's aliases of the chosen tools: alias → tool name."""
    deferred: frozenset[str] = frozenset()
    """Names of the chosen tools whose definitions wait until ``tool_search`` finds them."""
    unmatched: list[UnmatchedEntry] = field(default_factory=list)
    """Template entries that named nothing (an agent refuses to start with these)."""
    diagnostics: list[Diagnostic] = field(default_factory=list)
    """Warnings and errors met while resolving (factories, policy typos)."""
    left_out: list[tuple[_SortKey, Exclusion]] = field(default_factory=list, repr=False)
    """Tools the template named but that were left out (optional, denied, not made)."""
    denied: dict[str, str] = field(default_factory=dict)
    """Tools a policy layer left out, by lower-cased name and alias: the layer and why."""
    unlisted: Callable[[], list[tuple[_SortKey, Exclusion]]] | None = field(
        default=None, repr=False
    )
    """Lists the tools the template did not name, when asked (`None`: it named everything)."""

    @property
    def names(self) -> list[str]:
        """The chosen tools' names, in order."""
        return [t.name for t in self.tools]

    @property
    def excluded(self) -> list[Exclusion]:
        """Available tools that were left out, with the reason, in the order of `tools`.

        Worked out each time it is read, so an agent keeps no list of the registry's other
        tools: a tool registered after the resolution shows as not listed by the template.
        """
        pairs = list(self.left_out)
        if self.unlisted is not None:
            pairs += self.unlisted()
        pairs.sort(key=lambda pair: pair[0])
        return [exclusion for _, exclusion in pairs]

    def explain(self) -> str:
        """A readable account: chosen tools with their source, exclusions, typos, problems."""
        count = len(self.tools)
        lines = [f"{count} tool{'' if count == 1 else 's'} chosen:"]
        for t in self.tools:
            meta = self.metas[t.name]
            extra = meta.plugin_id or meta.server
            lines.append(f"  + {t.name} ({meta.source.value}{': ' + extra if extra else ''})")
        excluded = self.excluded
        if excluded:
            lines.append(f"{len(excluded)} left out:")
            lines += [f"  - {e.name}: {e.reason}" for e in excluded]
        for u in self.unmatched:
            hint = f"; did you mean {', '.join(u.suggestions)}?" if u.suggestions else ""
            lines.append(f"  ! {u.entry!r} matches no tool{hint}")
        lines += [f"  ! {d}" for d in self.diagnostics]
        return "\n".join(lines)


def factory_tools(produced: Any) -> tuple[list[Tool[..., Any]], str | None]:
    """The tools a factory returned, or a description of what it returned instead."""
    if produced is None:
        return [], None
    if isinstance(produced, Tool):
        return [produced], None
    if isinstance(produced, str | bytes | dict) or not isinstance(produced, Iterable):
        return [], f"{type(produced).__name__}, not a Tool, a list of tools or None"
    items = list(produced)
    bad = [type(x).__name__ for x in items if not isinstance(x, Tool)]
    if bad:
        return [], f"a list containing {', '.join(sorted(set(bad)))}, not only tools"
    return items, None


def _suggest(entry: str, names: set[str], groups: set[str], servers: set[str]) -> tuple[str, ...]:
    """Close names for a template entry that matched nothing, best first.

    Group names are compared without their common ``group:`` prefix, which would otherwise
    make every group look close to any ``group:...`` typo; a server pattern
    (``mcp__gitlab__*``) is compared with the MCP servers' names; another glob gets none.
    """
    by_bare = {g.removeprefix("group:"): g for g in groups}
    server = re.fullmatch(r"mcp__(.+?)__\*", entry)
    if server is not None:
        close = difflib.get_close_matches(server.group(1), sorted(servers), n=3, cutoff=0.6)
        return tuple(f"mcp__{c}__*" for c in close)
    if any(ch in entry for ch in "*?["):
        return ()
    if entry.startswith("group:"):
        close = difflib.get_close_matches(entry[6:], sorted(by_bare), n=3, cutoff=0.6)
        return tuple(by_bare[c] for c in close)
    close = difflib.get_close_matches(entry, sorted(names), n=3, cutoff=0.6)
    if entry in by_bare:  # "web" for "group:web"
        close = [by_bare[entry], *close][:3]
    return tuple(close)


def _meta_key(meta: ToolMeta) -> _SortKey:
    return (SOURCE_ORDER[meta.source], meta.server or "", meta.name.lower())


def _sort_text(meta: ToolMeta) -> str:
    """`_meta_key` as one string: the same order, and a string is no work for the collector."""
    return f"{SOURCE_ORDER[meta.source]:03d}{meta.server or ''}\x00{meta.name.lower()}"


MadeTools = dict[str, tuple[ToolMeta, Tool[..., Any]]]


class _Finder:
    """Which tools a pattern selects, through the registry's index and the factories' tools."""

    def __init__(self, view: RegistryView, made: MadeTools, failed: set[int]) -> None:
        self.view = view
        self.made = made
        self.failed = failed
        self._visiting: set[str] = set()

    def keys(self, entry: str) -> set[str]:
        """The keys (normalised names) of every known tool `entry` matches."""
        view, made = self.view, self.made
        if entry in view.entries and not made and not view.index.plugin(entry):
            return {entry}  # a name: the common case, kept to one lookup
        if entry == "*":
            return set(view.entries) | set(made)
        if entry.startswith("group:"):
            found = set(view.index.group(entry))
            found |= {k for k, (m, _) in made.items() if entry in m.groups}
            members = view.groups.get(entry)
            if members is not None and entry not in self._visiting:
                self._visiting.add(entry)  # custom groups may name each other, even in a loop
                try:
                    for member in members:
                        found |= self.keys(member)
                finally:
                    self._visiting.discard(entry)
            return found
        if is_glob(entry):
            found = {view.aliases.get(name, name) for name in view.index.glob(entry)}
            glob = compiled_glob(entry)
            found |= {k for k, (m, _) in made.items() if glob.fullmatch(m.name.lower())}
            return found
        found = set(view.index.plugin(entry))
        if entry in view.entries or entry in made:
            found.add(entry)
        elif entry in view.aliases:
            found.add(view.aliases[entry])
        found |= {k for k, (m, _) in made.items() if (m.plugin_id or "").lower() == entry}
        return found

    def candidate(self, key: str) -> tuple[ToolMeta, Tool[..., Any] | None, str] | None:
        """A known tool: its meta, the tool (`None` when its factory did not make it), why not."""
        if key in self.made:
            meta, made = self.made[key]
            return meta, made, ""
        entry = self.view.entries.get(key)
        if entry is None:
            return None
        if entry.tool is not None:
            return entry.meta, entry.tool, ""
        reason = (
            "its factory failed (see the diagnostics)"
            if id(entry.factory) in self.failed
            else "its factory made no tool of this name in this context"
        )
        return entry.meta, None, reason

    def aliases(self, key: str) -> tuple[str, ...]:
        return self.view.index.aliases_of(key)

    def with_groups(self, meta: ToolMeta, tool_aliases: tuple[str, ...]) -> ToolMeta:
        """`meta` with the custom groups it belongs to (members may name other custom groups)."""
        if not self.view.groups:
            return meta
        current = meta
        changed = True
        while changed:
            extra = tuple(
                g
                for g, members in self.view.groups.items()
                if g not in current.groups
                and any(entry_matches(m, current, tool_aliases) for m in members)
            )
            changed = bool(extra)
            if extra:
                current = replace(current, groups=(*current.groups, *extra))
        return current

    def suggestion_pools(self) -> tuple[set[str], set[str], set[str]]:
        """Names, groups and servers to suggest from (reads every tool: for typos only)."""
        view = self.view
        metas = [e.meta for e in view.entries.values()] + [m for m, _ in self.made.values()]
        pool = {normalize_pattern(m.name) for m in metas} | set(view.aliases)
        pool |= {normalize_pattern(m.plugin_id) for m in metas if m.plugin_id}
        groups = set(view.groups) | set(view.index.declared_groups())
        groups |= {g for m, _ in self.made.values() for g in m.groups}
        servers = {normalize_pattern(m.server) for m in metas if m.server}
        return pool, groups, servers


def resolve(
    registry: ToolRegistry,
    names_or_patterns: Sequence[str] | None = None,
    policy: ToolPolicy | Sequence[ToolPolicy] | None = None,
    ctx: ToolFactoryContext | None = None,
    deferred: Sequence[str] = (),
) -> Resolution:
    """Choose tools from `registry` for one agent.

    Args:
        registry: Where the tools are.
        names_or_patterns: The template's list: tool names, aliases, globs (``fs_*``),
            ``group:...``, plugin ids, ``mcp__server__*``. `None` means every non-optional tool.
        policy: One `ToolPolicy` or layers of them (global → agent → sandbox → sub-agent); a
            tool must pass every layer.
        ctx: Passed to factories (an empty `ToolFactoryContext` when omitted).
        deferred: More entries like `names_or_patterns` whose tools are chosen deferred: their
            definitions wait until ``tool_search`` finds them (`Resolution.deferred`). Tools
            defined or registered with ``defer_loading=True``, matching `ToolRegistry.defer`,
            or from an MCP server with more tools than `ToolRegistry.defer_mcp_above` are
            deferred too.

    Raises:
        PolicyError: a layer names an unknown profile, or an entry is not a list of strings.
    """
    later = pattern_list(deferred, "the template's deferred tools")
    wanted = (
        ("*",)
        if names_or_patterns is None
        else tuple(
            dict.fromkeys((*pattern_list(names_or_patterns, "the template's tools"), *later))
        )
    )
    if policy is None:
        layers: list[ToolPolicy] = []
    elif isinstance(policy, ToolPolicy):
        layers = [policy]
    else:
        layers = list(policy)
        for layer in layers:
            if not isinstance(layer, ToolPolicy):
                raise PolicyError(
                    f"policy layers must be ToolPolicy objects, got {type(layer).__name__}"
                )
    factory_ctx = ctx if ctx is not None else ToolFactoryContext()
    out = Resolution()

    def diag(
        level: Any, message: str, meta: ToolMeta | None = None, plugin_id: str | None = None
    ) -> None:
        out.diagnostics.append(
            registry.report(
                level,
                message,
                source=meta.source if meta else None,
                plugin_id=plugin_id or (meta.plugin_id if meta else None),
            )
        )

    # 1. what the factories make in this context (called outside the registry's lock)
    with registry.reading() as view:
        records = view.factories
    produced = [(record, _call_factory(record, factory_ctx, diag)) for record in records]
    # 2. selection, under the registry's lock. A lazily registered tool it would select is
    # imported first, with the lock released: its module registers into this registry as it is
    # imported, and another thread importing that module at the same moment waits for the lock.
    while True:
        with registry.reading() as view:
            pending = _unloaded(view, wanted)
            if not pending:
                made, failed = _place_factory_tools(view, produced, diag)
                layer_patterns = [layer.patterns(view.profiles) for layer in layers]
                finder = _Finder(view, made, failed)
                selected, left_out, hits = _select(finder, wanted, layer_patterns, out)
                _warn_unused_patterns(finder, wanted, layers, layer_patterns, view, diag)
                defer_patterns = (*view.deferred, *later)
                mcp_above = view.defer_mcp_above
                server_size = view.index.server_size
                break
        for lazy in pending:
            _ = lazy.tool  # imports the tool's module, outside the lock
    # 3. policy layers: a tool must pass every one
    chosen: list[tuple[ToolMeta, Tool[..., Any], tuple[str, ...]]] = [] if layers else selected
    for meta, made_tool, tool_aliases in selected if layers else ():
        for layer, patterns in zip(layers, layer_patterns, strict=True):
            why = ToolPolicy.decide(patterns, meta, tool_aliases)
            if why is not None:
                left_out.append((meta, f"{layer.name}: {why}"))
                for key in (meta.name, *tool_aliases):
                    out.denied.setdefault(key.strip().lower(), f"{layer.name}: {why}")
                break
        else:
            chosen.append((meta, made_tool, tool_aliases))
    chosen.sort(key=lambda item: _sort_text(item[0]))
    out.tools = [t for _, t, _ in chosen]
    out.metas = {m.name: m for m, _, _ in chosen}
    out.aliases = {alias: m.name for m, _, tool_aliases in chosen for alias in tool_aliases}
    out.deferred = frozenset(
        m.name
        for m, t, tool_aliases in chosen
        if m.defer_loading
        or t.defer_loading
        or (m.server is not None and mcp_above is not None and server_size(m.server) > mcp_above)
        or (defer_patterns and any(entry_matches(p, m, tool_aliases) for p in defer_patterns))
    )
    out.left_out = [(_meta_key(m), Exclusion(name=m.name, reason=r)) for m, r in left_out]
    if names_or_patterns is not None:
        handled = frozenset(hits)
        unlisted_made = [m for key, (m, _) in made.items() if key not in handled]
        out.unlisted = _unlisted(registry, handled, frozenset(made), unlisted_made)
    return out


def _unloaded(view: RegistryView, wanted: tuple[str, ...]) -> list[RegisteredTool]:
    """The lazily registered entries `wanted` selects whose modules are not imported yet."""
    finder = _Finder(view, {}, set())
    pending: dict[str, RegisteredTool] = {}
    for entry in wanted:
        for key in finder.keys(entry):
            registered = view.entries.get(key)
            if registered is not None and not registered.loaded:
                pending[key] = registered
    return list(pending.values())


def _unlisted(
    registry: ToolRegistry,
    handled: frozenset[str],
    made_keys: frozenset[str],
    unlisted_made: list[ToolMeta],
) -> Callable[[], list[tuple[_SortKey, Exclusion]]]:
    def unlisted() -> list[tuple[_SortKey, Exclusion]]:
        with registry.reading() as view:
            metas = [
                entry.meta
                for key, entry in view.entries.items()
                if not entry.is_factory and key not in handled and key not in made_keys
            ]
        metas += unlisted_made
        return [(_meta_key(m), Exclusion(name=m.name, reason=_NOT_LISTED)) for m in metas]

    return unlisted


def _select(
    finder: _Finder,
    wanted: tuple[str, ...],
    layer_patterns: list[dict[str, tuple[str, ...]]],
    out: Resolution,
) -> tuple[
    list[tuple[ToolMeta, Tool[..., Any], tuple[str, ...]]],
    list[tuple[ToolMeta, str]],
    dict[str, str | list[str]],
]:
    """2. Selection by the template's entries: what is selected, what is left out and why.

    A plain name, the common case, allocates nothing of its own: thousands of names must not
    start a full garbage collection of a registry's worth of objects.
    """
    hits: dict[str, str | list[str]] = {}  # key → the entry that selected it, or the entries
    matched_entries: set[str] = set()
    entries, plugin = finder.view.entries, finder.view.index.plugin
    plain = not finder.made
    for entry in wanted:
        if plain and entry in entries and not plugin(entry):
            matched_entries.add(entry)
            before = hits.setdefault(entry, entry)
            if before is not entry:
                hits[entry] = [*([before] if isinstance(before, str) else before), entry]
            continue
        for key in finder.keys(entry):
            matched_entries.add(entry)
            before = hits.setdefault(key, entry)
            if before is not entry:
                hits[key] = [*([before] if isinstance(before, str) else before), entry]
    explicit_allow = [
        e for layer in layer_patterns for key in ("allow", "also_allow") for e in layer.get(key, ())
    ]
    selected: list[tuple[ToolMeta, Tool[..., Any], tuple[str, ...]]] = []
    left_out: list[tuple[ToolMeta, str]] = []
    for key, entry_hits in hits.items():
        registered = entries.get(key) if plain else None
        made: Tool[..., Any] | None
        if registered is not None and registered.tool is not None:
            meta, made, reason = registered.meta, registered.tool, ""
        else:
            found = finder.candidate(key)
            if found is None:
                continue
            meta, made, reason = found
        tool_aliases = finder.aliases(key)
        meta = finder.with_groups(meta, tool_aliases)
        if made is None:
            left_out.append((meta, reason))  # a factory's declared tool not made here
            continue
        named = (entry_hits,) if isinstance(entry_hits, str) else entry_hits
        if meta.optional and not any(
            is_explicit_for_optional(e, meta, tool_aliases) for e in (*named, *explicit_allow)
        ):
            left_out.append((meta, "optional: name it, its plugin or group:plugins to include it"))
            continue
        selected.append((meta, made, tool_aliases))
    missing = [e for e in wanted if e not in matched_entries and e != "*"]
    if missing:
        pool, all_groups, servers = finder.suggestion_pools()
        for entry in missing:
            suggestions = _suggest(entry, pool, all_groups, servers)
            out.unmatched.append(UnmatchedEntry(entry=entry, suggestions=suggestions))
    return selected, left_out, hits


def _warn_unused_patterns(
    finder: _Finder,
    wanted: tuple[str, ...],
    layers: list[ToolPolicy],
    layer_patterns: list[dict[str, tuple[str, ...]]],
    view: RegistryView,
    diag: Callable[..., None],
) -> None:
    """A policy pattern, or a used custom group's member, that matches no registered tool."""
    profiles = view.profiles
    for layer, patterns in zip(layers, layer_patterns, strict=True):
        profile_key = normalize_pattern(layer.profile) if layer.profile is not None else None
        builtin_profile = (
            profile_key in BUILTIN_PROFILES
            and tuple(profiles[profile_key]) == BUILTIN_PROFILES[profile_key]
        )
        for key in ("allow", "also_allow", "deny", "profile"):
            if key == "profile" and builtin_profile:
                continue  # kode's own profiles name groups an application may not use
            for pattern in patterns.get(key, ()):
                if pattern == "*" or finder.keys(pattern):
                    continue
                label = f"profile {layer.profile!r}" if key == "profile" else key
                tail = (
                    " — a typo here would let the tool through"
                    if key == "deny"
                    else " — a typo here can leave an agent without tools"
                )
                diag(
                    "warning",
                    f"{layer.name}: {label} entry {pattern!r} matches no registered tool{tail}",
                )
    used = set(wanted) | {p for layer in layer_patterns for ps in layer.values() for p in ps}
    for group, members in view.groups.items():
        for member in members if group in used else ():
            if member != "*" and not finder.keys(member):
                diag(
                    "warning",
                    f"{group}: member {member!r} matches no registered tool — a typo here "
                    "leaves the group short",
                )


def _call_factory(
    record: FactoryRecord, ctx: ToolFactoryContext, diag: Callable[..., None]
) -> list[Tool[..., Any]] | None:
    """The tools one factory makes for `ctx`, or `None` when it failed (a diagnostic says why)."""
    label = record.plugin_id or ".".join(p for p in record.origin if p)
    who = ToolMeta(name=label, source=record.source, plugin_id=record.plugin_id)
    try:
        produced = record.factory(ctx)
    except Exception as exc:
        diag(
            "error",
            f"tool factory {label} raised {type(exc).__name__}: {exc}; its tools were skipped",
            who,
        )
        return None
    tools, problem = factory_tools(produced)
    if problem is not None:
        diag("error", f"tool factory {label} returned {problem}; its tools were skipped", who)
        return None
    return tools


def _place_factory_tools(
    view: RegistryView,
    produced: list[tuple[FactoryRecord, list[Tool[..., Any]] | None]],
    diag: Callable[..., None],
) -> tuple[MadeTools, set[int]]:
    """The factories' tools that take their names, and the ids of the factories that failed.

    A factory's tool takes a name only if the registry gave that name to this factory (its
    ``names=``) or nobody else has it: a plugin factory never overrides a core tool by making a
    tool of the same name.
    """
    made: MadeTools = {}
    failed: set[int] = set()
    for record, tools in produced:
        if tools is None:
            failed.add(id(record.factory))
            continue
        label = record.plugin_id or ".".join(p for p in record.origin if p)
        who = ToolMeta(name=label, source=record.source, plugin_id=record.plugin_id)
        for tool in tools:
            key = normalize_pattern(tool.name)
            if key in record.removed:
                continue
            registered = view.entries.get(key)
            owner = registered if registered is not None and registered.is_factory else None
            if owner is not None and owner.factory is not record.factory:
                diag(
                    "warning",
                    f"tool {tool.name!r} from factory {label} skipped: the name belongs to "
                    f"another factory",
                    who,
                )
                continue
            if owner is None and (key in made or registered is not None):
                taken = made[key][0] if key in made else registered.meta  # type: ignore[union-attr]
                by = (
                    f"plugin {taken.plugin_id!r}"
                    if taken.plugin_id
                    else f"a {taken.source.value} tool"
                )
                diag(
                    "warning",
                    f"tool {tool.name!r} from factory {label} skipped: the name is taken by {by}",
                    who,
                )
                continue
            made_groups = tuple(
                dict.fromkeys(normalize_group(g) for g in (*tool.groups, *record.groups))
            )
            meta = ToolMeta(
                name=tool.name,
                source=record.source,
                plugin_id=record.plugin_id,
                optional=record.optional or tool.optional,
                groups=made_groups,
                kind=tool.kind,
                factory=True,
            )
            made[key] = (meta, tool)
    return made, failed
