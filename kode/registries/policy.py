"""Tool policy: profiles, allow / also-allow / deny patterns, layered.

This module owns matching a tool against patterns (``*``, ``fs_*``, ``group:web``, a plugin
id, ``mcp__github__*``) and the rules that combine them. It does not know where tools come
from; `kode.registries.resolve` feeds it `ToolMeta` records.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from kode.registries.meta import ToolMeta, ToolSource
from kode.tools.errors import KodeError

__all__ = [
    "BUILTIN_PROFILES",
    "PolicyError",
    "ToolPolicy",
    "entry_matches",
    "is_explicit_for_optional",
    "normalize_group",
    "normalize_pattern",
    "pattern_list",
]

BUILTIN_PROFILES: dict[str, tuple[str, ...]] = {
    "minimal": ("group:think",),
    "coding": ("group:fs", "group:runtime", "group:web", "group:think"),
    "messaging": ("group:sessions", "group:messaging", "group:think"),
    "full": ("*",),
}
"""The profiles every registry knows: named allow-lists."""


class PolicyError(KodeError, ValueError):
    """A policy names a profile that does not exist, or is malformed."""


def normalize_pattern(pattern: str) -> str:
    """A pattern as it is compared: trimmed and lower-cased."""
    return pattern.strip().lower()


def normalize_group(group: str) -> str:
    """A group name as a registry stores it: ``"Web"`` and ``"group:web"`` are ``"group:web"``.

    Without this a tool declared with ``groups=["web"]`` would silently never match the
    pattern ``group:web``.
    """
    key = normalize_pattern(group)
    return key if key.startswith("group:") else f"group:{key}"


def pattern_list(value: object, what: str) -> tuple[str, ...]:
    """`value` as a tuple of normalised patterns, empty ones dropped.

    Raises:
        PolicyError: `value` is a bare string, not iterable, or holds something not a string
            (the message names `what` and the offending entry).
    """
    if value is None:
        return ()
    if isinstance(value, str):
        keyword = f"{what.rsplit('.', 1)[-1]}=" if "." in what else ""
        raise PolicyError(
            f"{what} must be a list of patterns, got the string {value!r}; "
            f"write {keyword}[{value!r}]"
        )
    if not isinstance(value, Iterable):
        raise PolicyError(f"{what} must be a list of patterns, got {type(value).__name__}")
    out: list[str] = []
    for item in value:
        if not isinstance(item, str):
            raise PolicyError(
                f"{what} must hold strings (tool names or patterns), got {item!r} "
                f"({type(item).__name__})"
            )
        if item.strip():
            out.append(normalize_pattern(item))
    return tuple(out)


@lru_cache(maxsize=1024)
def _glob(pattern: str) -> re.Pattern[str]:
    return re.compile(fnmatch.translate(pattern))


def entry_matches(entry: str, meta: ToolMeta, aliases: Iterable[str] = ()) -> bool:
    """Whether one normalised pattern selects the tool described by `meta`.

    A pattern matches a tool's name or one of its aliases (exactly or as a glob), a
    ``group:...`` it belongs to, or the id of the plugin that registered it.
    """
    name = meta.name.lower()
    if entry.startswith("group:"):
        return entry in meta.groups
    if entry == name or entry in aliases:
        return True
    if meta.plugin_id is not None and entry == meta.plugin_id.lower():
        return True
    if any(ch in entry for ch in "*?["):
        glob = _glob(entry)
        return bool(glob.fullmatch(name)) or any(glob.fullmatch(a) for a in aliases)
    return False


def is_explicit_for_optional(entry: str, meta: ToolMeta, aliases: Iterable[str] = ()) -> bool:
    """Whether `entry` names an optional tool explicitly enough to include it.

    Only the tool's name or alias, its plugin's id, or ``group:plugins`` (for plugin tools)
    count; wildcards and other groups do not.
    """
    if entry == meta.name.lower() or entry in aliases:
        return True
    if meta.plugin_id is not None and entry == meta.plugin_id.lower():
        return True
    return entry == "group:plugins" and meta.source is ToolSource.PLUGIN


@dataclass(kw_only=True, frozen=True, slots=True)
class ToolPolicy:
    """Which tools one layer of configuration lets through.

    A tool passes when it is not denied, and it matches the profile's allow-list (if a profile
    is set) and the `allow` patterns (if any), or it matches `also_allow`. Deny always wins;
    an empty allow allows everything. Patterns are case-insensitive.

    Layers (global → agent → sandbox → sub-agent) are combined by passing a list of policies
    to `ToolRegistry.resolve`: a tool must pass every layer.

    Example:
        ```python
        from kode.registries import ToolPolicy

        policy = ToolPolicy(profile="coding", also_allow=["web_search"], deny=["bash_*"])
        ```
    """

    profile: str | None = None
    """A named allow-list (``minimal``, ``coding``, ``messaging``, ``full`` or a custom one)."""
    allow: Sequence[str] = ()
    """Patterns a tool must match (empty: everything)."""
    also_allow: Sequence[str] = ()
    """Patterns let through in addition to the profile and `allow`."""
    deny: Sequence[str] = ()
    """Patterns that are never let through."""
    name: str = "policy"
    """A label used in explanations, e.g. ``"agent"`` or ``"sandbox"``."""
    _norm: dict[str, tuple[str, ...]] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.profile is not None and not isinstance(self.profile, str):
            raise PolicyError(
                f"ToolPolicy.profile must be a profile name, got {type(self.profile).__name__}"
            )
        for attr in ("allow", "also_allow", "deny"):
            self._norm[attr] = pattern_list(getattr(self, attr), f"ToolPolicy.{attr}")

    def patterns(self, profiles: Mapping[str, Sequence[str]]) -> dict[str, tuple[str, ...]]:
        """The normalised pattern lists of this layer, with the profile expanded.

        Raises:
            PolicyError: the profile does not exist (the message lists those that do).
        """
        out = dict(self._norm)
        if self.profile is not None:
            key = normalize_pattern(self.profile)
            if key not in profiles:
                known = ", ".join(sorted(profiles))
                raise PolicyError(
                    f"{self.name}: unknown tool profile {self.profile!r}; known profiles: {known}"
                )
            out["profile"] = tuple(normalize_pattern(p) for p in profiles[key])
        return out

    @staticmethod
    def decide(
        patterns: Mapping[str, tuple[str, ...]], meta: ToolMeta, aliases: tuple[str, ...]
    ) -> str | None:
        """`None` if the tool passes this layer, else why not (a short phrase)."""
        for entry in patterns.get("deny", ()):
            if entry_matches(entry, meta, aliases):
                return f"denied by {entry!r}"
        for entry in patterns.get("also_allow", ()):
            if entry_matches(entry, meta, aliases):
                return None
        profile = patterns.get("profile")
        if profile is not None and not any(entry_matches(e, meta, aliases) for e in profile):
            return "not in the profile"
        allow = patterns.get("allow", ())
        if allow and not any(entry_matches(e, meta, aliases) for e in allow):
            return "not in allow"
        return None
