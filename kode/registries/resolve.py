"""Resolution: from a template's list of names and patterns, and policy layers, to tools.

This module owns `resolve` and its report, `Resolution`. It asks factories for their tools
(a factory that raises or returns garbage is a diagnostic, never a failure of the others),
selects what the template names, includes optional tools only when named explicitly, applies
every policy layer, and orders the result: core, user, plugin, discovered, MCP by server,
client. Everything left out is listed with the reason.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kode.registries.factories import ToolFactoryContext
from kode.registries.meta import SOURCE_ORDER, Diagnostic, ToolMeta
from kode.registries.policy import (
    ToolPolicy,
    entry_matches,
    is_explicit_for_optional,
    normalize_pattern,
)
from kode.tools.tool import Tool

if TYPE_CHECKING:
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
        lines = [f"{len(self.tools)} tools chosen:"]
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


def _sort_key(pair: tuple[ToolMeta, Tool[..., Any]]) -> tuple[int, str, str]:
    meta = pair[0]
    return (SOURCE_ORDER[meta.source], meta.server or "", meta.name.lower())


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
        PolicyError: a layer names an unknown profile, or an entry is not a list.
    """
    if isinstance(names_or_patterns, str):
        from kode.registries.policy import PolicyError

        raise PolicyError(
            f"tools must be a list of names or patterns, got the string {names_or_patterns!r}"
        )
    layers: list[ToolPolicy] = (
        [] if policy is None else [policy] if isinstance(policy, ToolPolicy) else list(policy)
    )
    entries, factories, aliases, groups, profiles = registry._snapshot()
    layer_patterns = [layer.patterns(profiles) for layer in layers]
    factory_ctx = ctx if ctx is not None else ToolFactoryContext()
    out = Resolution()

    def diag(level: Any, message: str, meta: ToolMeta | None = None) -> None:
        out.diagnostics.append(
            registry.report(
                level,
                message,
                source=meta.source if meta else None,
                plugin_id=meta.plugin_id if meta else None,
            )
        )

    # 1. every candidate tool, static or made by a factory for this context
    candidates: list[tuple[ToolMeta, Tool[..., Any]]] = []
    taken: set[str] = set()
    for registered in entries:
        if registered.tool is not None:
            candidates.append((registered.meta, registered.tool))
            taken.add(registered.meta.name.lower())
    for record in factories:
        label = record.plugin_id or ".".join(p for p in record.origin if p)
        try:
            produced = record.factory(factory_ctx)
        except Exception as exc:
            diag(
                "error",
                f"tool factory {label} raised {type(exc).__name__}: {exc}; its tools were skipped",
                ToolMeta(name=label, source=record.source, plugin_id=record.plugin_id),
            )
            continue
        tools, problem = factory_tools(produced)
        if problem is not None:
            diag(
                "error",
                f"tool factory {label} returned {problem}; its tools were skipped",
                ToolMeta(name=label, source=record.source, plugin_id=record.plugin_id),
            )
            continue
        for made in tools:
            key = made.name.lower()
            declared = record.names is not None and key in {n.lower() for n in record.names}
            if key in taken and not declared:
                diag(
                    "warning",
                    f"tool {made.name!r} from factory {label} skipped: the name is taken",
                )
                continue
            made_groups = tuple(dict.fromkeys((*made.groups, *record.groups)))
            meta = ToolMeta(
                name=made.name,
                source=record.source,
                plugin_id=record.plugin_id,
                optional=record.optional or made.optional,
                groups=made_groups,
                kind=made.kind,
                factory=True,
            )
            candidates = [c for c in candidates if c[0].name.lower() != key]
            candidates.append((meta, made))
            taken.add(key)

    # custom groups: a tool is in group:x when it matches one of its member patterns
    def with_groups(meta: ToolMeta, tool_aliases: tuple[str, ...]) -> ToolMeta:
        extra = tuple(
            g
            for g, members in groups.items()
            if g not in meta.groups and any(entry_matches(m, meta, tool_aliases) for m in members)
        )
        if not extra:
            return meta
        from dataclasses import replace

        return replace(meta, groups=(*meta.groups, *extra))

    alias_of: dict[str, list[str]] = {}
    for alias, target in aliases.items():
        alias_of.setdefault(target, []).append(alias)
    prepared = []
    for meta, made in candidates:
        tool_aliases = tuple(alias_of.get(meta.name.lower(), ()))
        prepared.append((with_groups(meta, tool_aliases), made, tool_aliases))

    # 2. selection by the template's entries
    wanted = (
        ["*"]
        if names_or_patterns is None
        else [normalize_pattern(e) for e in names_or_patterns if e.strip()]
    )
    explicit_allow = [
        e for layer in layer_patterns for key in ("allow", "also_allow") for e in layer.get(key, ())
    ]
    matched_entries: set[str] = set()
    selected: list[tuple[ToolMeta, Tool[..., Any], tuple[str, ...]]] = []
    for meta, made, tool_aliases in prepared:
        hits = [e for e in wanted if entry_matches(e, meta, tool_aliases)]
        matched_entries.update(hits)
        if not hits:
            if names_or_patterns is not None:
                out.excluded.append(Exclusion(name=meta.name, reason="not listed by the template"))
            continue
        if meta.optional and not any(
            is_explicit_for_optional(e, meta, tool_aliases) for e in (*hits, *explicit_allow)
        ):
            out.excluded.append(
                Exclusion(
                    name=meta.name,
                    reason="optional: name it, its plugin or group:plugins to include it",
                )
            )
            continue
        selected.append((meta, made, tool_aliases))
    for entry in wanted:
        if entry not in matched_entries and entry != "*":
            pool = {m.name.lower() for m, _, _ in prepared} | set(aliases) | set(groups)
            pool |= {g for m, _, _ in prepared for g in m.groups}
            pool |= {m.plugin_id.lower() for m, _, _ in prepared if m.plugin_id}
            close = difflib.get_close_matches(entry, sorted(pool), n=3, cutoff=0.6)
            out.unmatched.append(UnmatchedEntry(entry=entry, suggestions=tuple(close)))

    # 3. policy layers: a tool must pass every one
    for layer, patterns in zip(layers, layer_patterns, strict=True):
        for key in ("allow", "also_allow", "deny", "profile"):
            for pattern in patterns.get(key, ()):
                if pattern == "*":
                    continue
                if not any(entry_matches(pattern, m, a) for m, _, a in prepared):
                    label = f"profile {layer.profile!r}" if key == "profile" else key
                    diag(
                        "warning",
                        f"{layer.name}: {label} entry {pattern!r} matches no registered tool"
                        + (
                            " — a typo here can leave an agent without tools"
                            if key != "deny"
                            else ""
                        ),
                    )
    chosen: list[tuple[ToolMeta, Tool[..., Any]]] = []
    for meta, made, tool_aliases in selected:
        for layer, patterns in zip(layers, layer_patterns, strict=True):
            why = ToolPolicy.decide(patterns, meta, tool_aliases)
            if why is not None:
                out.excluded.append(Exclusion(name=meta.name, reason=f"{layer.name}: {why}"))
                break
        else:
            chosen.append((meta, made))

    chosen.sort(key=_sort_key)
    out.tools = [t for _, t in chosen]
    out.metas = {m.name: m for m, _ in chosen}
    return out
