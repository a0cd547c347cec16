"""Resolution: from a template's list of names and patterns, and policy layers, to tools.

This module owns `resolve` and its report, `Resolution`. It asks factories for their tools
(a factory that raises or returns garbage is a diagnostic, never a failure of the others),
selects what the template names, includes optional tools only when named explicitly, applies
every policy layer, and orders the result: core, user, plugin, discovered, MCP by server,
client. Everything left out is listed with the reason.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from kode.registries.factories import ToolFactoryContext
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
from kode.tools.tool import Tool

if TYPE_CHECKING:
    from kode.registries.entries import FactoryRecord, RegisteredTool
    from kode.registries.registry import ToolRegistry

__all__ = ["Exclusion", "Resolution", "UnmatchedEntry", "factory_tools", "resolve"]


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


@dataclass(kw_only=True, slots=True)
class Resolution:
    """The tools chosen for an agent, and an account of everything else."""

    tools: list[Tool[..., Any]] = field(default_factory=list)
    """The chosen tools, in a stable order."""
    metas: dict[str, ToolMeta] = field(default_factory=dict)
    """What the registry knows about each chosen tool, by name."""
    excluded: list[Exclusion] = field(default_factory=list)
    """Available tools that were left out, with the reason."""
    unmatched: list[UnmatchedEntry] = field(default_factory=list)
    """Template entries that named nothing (an agent refuses to start with these)."""
    diagnostics: list[Diagnostic] = field(default_factory=list)
    """Warnings and errors met while resolving (factories, policy typos)."""

    @property
    def names(self) -> list[str]:
        """The chosen tools' names, in order."""
        return [t.name for t in self.tools]

    def explain(self) -> str:
        """A readable account: chosen tools with their source, exclusions, typos, problems."""
        count = len(self.tools)
        lines = [f"{count} tool{'' if count == 1 else 's'} chosen:"]
        for t in self.tools:
            meta = self.metas[t.name]
            extra = meta.plugin_id or meta.server
            lines.append(f"  + {t.name} ({meta.source.value}{': ' + extra if extra else ''})")
        if self.excluded:
            lines.append(f"{len(self.excluded)} left out:")
            lines += [f"  - {e.name}: {e.reason}" for e in self.excluded]
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


def _meta_key(meta: ToolMeta) -> tuple[int, str, str]:
    return (SOURCE_ORDER[meta.source], meta.server or "", meta.name.lower())


def _sort_key(pair: tuple[ToolMeta, Tool[..., Any]]) -> tuple[int, str, str]:
    return _meta_key(pair[0])


def resolve(
    registry: ToolRegistry,
    names_or_patterns: Sequence[str] | None = None,
    policy: ToolPolicy | Sequence[ToolPolicy] | None = None,
    ctx: ToolFactoryContext | None = None,
) -> Resolution:
    """Choose tools from `registry` for one agent.

    Args:
        registry: Where the tools are.
        names_or_patterns: The template's list: tool names, aliases, globs (``fs_*``),
            ``group:...``, plugin ids, ``mcp__server__*``. `None` means every non-optional tool.
        policy: One `ToolPolicy` or layers of them (global → agent → sandbox → sub-agent); a
            tool must pass every layer.
        ctx: Passed to factories (an empty `ToolFactoryContext` when omitted).

    Raises:
        PolicyError: a layer names an unknown profile, or an entry is not a list of strings.
    """
    wanted = (
        ("*",)
        if names_or_patterns is None
        else pattern_list(names_or_patterns, "the template's tools")
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
    snap = registry.snapshot()
    entries, factories, aliases = snap.entries, snap.factories, snap.aliases
    groups, profiles = snap.groups, snap.profiles
    layer_patterns = [layer.patterns(profiles) for layer in layers]
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

    # 1. every candidate tool, static or made by a factory for this context
    candidates, missing = _candidates(entries, factories, factory_ctx, diag)

    # custom groups: a tool is in group:x when it matches one of its member patterns (members
    # may name other custom groups, so repeat until nothing changes)
    def with_groups(meta: ToolMeta, tool_aliases: tuple[str, ...]) -> ToolMeta:
        current = meta
        changed = True
        while changed:
            extra = tuple(
                g
                for g, members in groups.items()
                if g not in current.groups
                and any(entry_matches(m, current, tool_aliases) for m in members)
            )
            changed = bool(extra)
            if extra:
                current = replace(current, groups=(*current.groups, *extra))
        return current

    alias_of: dict[str, list[str]] = {}
    for alias, target in aliases.items():
        alias_of.setdefault(target, []).append(alias)

    def aliases_of(meta: ToolMeta) -> tuple[str, ...]:
        return tuple(alias_of.get(normalize_pattern(meta.name), ()))

    prepared = [
        (with_groups(meta, aliases_of(meta)), made, aliases_of(meta)) for meta, made in candidates
    ]
    absent = [
        (with_groups(meta, aliases_of(meta)), reason, aliases_of(meta)) for meta, reason in missing
    ]

    # 2. selection by the template's entries
    explicit_allow = [
        e for layer in layer_patterns for key in ("allow", "also_allow") for e in layer.get(key, ())
    ]
    matched_entries: set[str] = set()
    excluded: list[tuple[ToolMeta, str]] = []
    selected: list[tuple[ToolMeta, Tool[..., Any], tuple[str, ...]]] = []
    for meta, made, tool_aliases in prepared:
        hits = [e for e in wanted if entry_matches(e, meta, tool_aliases)]
        matched_entries.update(hits)
        if not hits:
            if names_or_patterns is not None:
                excluded.append((meta, "not listed by the template"))
            continue
        if meta.optional and not any(
            is_explicit_for_optional(e, meta, tool_aliases) for e in (*hits, *explicit_allow)
        ):
            excluded.append((meta, "optional: name it, its plugin or group:plugins to include it"))
            continue
        selected.append((meta, made, tool_aliases))
    # a factory's declared tool it did not make here: a known name, not a typo
    for meta, reason, tool_aliases in absent:
        hits = [e for e in wanted if entry_matches(e, meta, tool_aliases)]
        if hits:
            matched_entries.update(hits)
            excluded.append((meta, reason))
    known = [(m, a) for m, _, a in prepared] + [(m, a) for m, _, a in absent]
    pool = {normalize_pattern(m.name) for m, _ in known} | set(aliases)
    pool |= {normalize_pattern(m.plugin_id) for m, _ in known if m.plugin_id}
    all_groups = set(groups) | {g for m, _ in known for g in m.groups}
    servers = {normalize_pattern(m.server) for m, _ in known if m.server}
    for entry in wanted:
        if entry not in matched_entries and entry != "*":
            suggestions = _suggest(entry, pool, all_groups, servers)
            out.unmatched.append(UnmatchedEntry(entry=entry, suggestions=suggestions))

    # 3. policy layers: a tool must pass every one; a pattern that matches nothing is reported
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
                if pattern == "*" or any(entry_matches(pattern, m, a) for m, a in known):
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
    # a custom group the template or a policy uses, with a member that matches nothing
    used = set(wanted) | {p for layer in layer_patterns for ps in layer.values() for p in ps}
    for group, members in groups.items():
        for member in members if group in used else ():
            if member != "*" and not any(entry_matches(member, m, a) for m, a in known):
                diag(
                    "warning",
                    f"{group}: member {member!r} matches no registered tool — a typo here "
                    "leaves the group short",
                )
    chosen: list[tuple[ToolMeta, Tool[..., Any]]] = []
    for meta, made, tool_aliases in selected:
        for layer, patterns in zip(layers, layer_patterns, strict=True):
            why = ToolPolicy.decide(patterns, meta, tool_aliases)
            if why is not None:
                excluded.append((meta, f"{layer.name}: {why}"))
                break
        else:
            chosen.append((meta, made))

    chosen.sort(key=_sort_key)
    excluded.sort(key=lambda pair: _meta_key(pair[0]))
    out.excluded = [Exclusion(name=meta.name, reason=reason) for meta, reason in excluded]
    out.tools = [t for _, t in chosen]
    out.metas = {m.name: m for m, _ in chosen}
    return out


def _candidates(
    entries: list[RegisteredTool],
    factories: list[FactoryRecord],
    ctx: ToolFactoryContext,
    diag: Callable[..., None],
) -> tuple[list[tuple[ToolMeta, Tool[..., Any]]], list[tuple[ToolMeta, str]]]:
    """Every tool available in `ctx`, and the factory-declared names not made there (and why).

    A factory's tool takes a name only if the registry gave that name to this factory (its
    ``names=``) or nobody else has it: a plugin factory never overrides a core tool by making a
    tool of the same name.
    """
    candidates: dict[str, tuple[ToolMeta, Tool[..., Any]]] = {}
    owners: dict[str, RegisteredTool] = {}
    for registered in entries:
        key = normalize_pattern(registered.meta.name)
        if registered.tool is not None:
            candidates[key] = (registered.meta, registered.tool)
        else:
            owners[key] = registered
    failed: set[int] = set()
    for record in factories:
        label = record.plugin_id or ".".join(p for p in record.origin if p)
        who = ToolMeta(name=label, source=record.source, plugin_id=record.plugin_id)
        try:
            produced = record.factory(ctx)
        except Exception as exc:
            failed.add(id(record.factory))
            diag(
                "error",
                f"tool factory {label} raised {type(exc).__name__}: {exc}; its tools were skipped",
                who,
            )
            continue
        tools, problem = factory_tools(produced)
        if problem is not None:
            failed.add(id(record.factory))
            diag("error", f"tool factory {label} returned {problem}; its tools were skipped", who)
            continue
        for made in tools:
            key = normalize_pattern(made.name)
            if key in record.removed:
                continue
            owner = owners.get(key)
            if owner is not None and owner.factory is not record.factory:
                diag(
                    "warning",
                    f"tool {made.name!r} from factory {label} skipped: the name belongs to "
                    f"another factory",
                    who,
                )
                continue
            if owner is None and key in candidates:
                taken = candidates[key][0]
                by = (
                    f"plugin {taken.plugin_id!r}"
                    if taken.plugin_id
                    else f"a {taken.source.value} tool"
                )
                diag(
                    "warning",
                    f"tool {made.name!r} from factory {label} skipped: the name is taken by {by}",
                    who,
                )
                continue
            made_groups = tuple(
                dict.fromkeys(normalize_group(g) for g in (*made.groups, *record.groups))
            )
            meta = ToolMeta(
                name=made.name,
                source=record.source,
                plugin_id=record.plugin_id,
                optional=record.optional or made.optional,
                groups=made_groups,
                kind=made.kind,
                factory=True,
            )
            candidates[key] = (meta, made)
    missing = [
        (
            owner.meta,
            "its factory failed (see the diagnostics)"
            if id(owner.factory) in failed
            else "its factory made no tool of this name in this context",
        )
        for key, owner in owners.items()
        if key not in candidates
    ]
    return list(candidates.values()), missing
