"""Permission rules: a priority-ordered engine deciding allow, deny or ask for a call.

A `PermissionRule` matches a call on the tool's name (or a glob), its source, its MCP server,
the values of named arguments (a regex each) and the permission mode, and decides. Rules come
in tiers — ``defaults``, ``user``, ``project``, ``admin`` — and a rule of a higher tier always
wins over one of a lower tier; within a tier the higher ``priority`` wins, then the rule listed
first. `load_rules` reads them from TOML files, TOML text or dicts, one source per tier:

```toml
[[rule]]
name = "no-rm"
tool = "bash_run"
args = { command = "^rm " }
decision = "deny"
reason = "deleting files is for people"
```

`kode.agent.permissions.check_permission` runs the rules after the agent's ``deny`` list and
before everything else; each decision names the rule that made it.
"""

from __future__ import annotations

import fnmatch
import re
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, model_validator

from kode.tools.errors import KodeError

__all__ = ["TIERS", "PermissionRule", "RuleError", "Tier", "load_rules", "match_rule"]

Tier = Literal["defaults", "user", "project", "admin"]
"""Where a rule comes from; a higher tier wins."""

TIERS: tuple[Tier, ...] = ("defaults", "user", "project", "admin")
"""The tiers, lowest first."""


class RuleError(KodeError, ValueError):
    """A permission rule or rules file is malformed (the message says where and how)."""


class PermissionRule(BaseModel):
    """One rule: which calls it matches and what it decides."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str = Field(min_length=1)
    """How decisions name the rule."""
    decision: Literal["allow", "deny", "ask"]
    """What a matching call gets."""
    tool: str = "*"
    """The tool's name, a glob (``fs_*``, ``mcp__github__*``) or a group (``group:fs``), any
    case."""
    source: str | None = None
    """Where the tool comes from (``builtin``, ``user``, ``mcp``, ``plugin``, ...); `None`: any."""
    server: str | None = None
    """The MCP server (a name or glob); `None`: any tool, MCP or not."""
    args: dict[str, str] = Field(default_factory=dict)
    """Argument name → regex searched in its value (a string as is, anything else as JSON);
    all must match, and a missing argument does not."""
    modes: list[Literal["auto", "approval", "readonly"]] = Field(default_factory=list)
    """The permission modes it applies in; empty: all."""
    priority: int = 0
    """Higher first, within a tier."""
    tier: Tier = "user"
    """Where it comes from; a higher tier wins whatever the priority."""
    reason: str = ""
    """Why, in a few words (shown with the decision)."""
    _compiled: tuple[tuple[str, re.Pattern[str]], ...] = PrivateAttr(default=())

    @model_validator(mode="after")
    def _compile(self) -> PermissionRule:
        compiled = []
        for arg, pattern in self.args.items():
            try:
                compiled.append((arg, re.compile(pattern)))
            except re.error as exc:
                raise ValueError(
                    f"rule {self.name!r}: args.{arg} is not a valid regex ({exc}): {pattern!r}"
                ) from None
        self._compiled = tuple(compiled)
        return self

    @property
    def label(self) -> str:
        """How a decision names it: ``rule 'no-rm' (project)``."""
        return f"rule {self.name!r} ({self.tier})"

    def matches(
        self,
        tool: str,
        arguments: Mapping[str, Any],
        *,
        mode: str,
        source: str | None = None,
        server: str | None = None,
        groups: Sequence[str] = (),
    ) -> bool:
        """Whether a call of `tool` with `arguments` in `mode` is one this rule decides.

        `groups` are the tool's groups (``group:fs``), which a ``tool = "group:..."`` matches.
        """
        if self.modes and mode not in self.modes:
            return False
        wanted = self.tool.strip().lower()
        if wanted.startswith("group:"):
            if wanted not in (g.lower() for g in groups):
                return False
        elif not fnmatch.fnmatchcase(tool.lower(), wanted):
            return False
        if self.source is not None and (source or "").lower() != self.source.lower():
            return False
        if self.server is not None and (
            server is None or not fnmatch.fnmatchcase(server.lower(), self.server.lower())
        ):
            return False
        for arg, regex in self._compiled:
            if arg not in arguments:
                return False
            value = arguments[arg]
            text = value if isinstance(value, str) else _json(value)
            if regex.search(text) is None:
                return False
        return True


def _json(value: Any) -> str:
    import json

    return json.dumps(value, default=str, ensure_ascii=False)


def ordered(rules: Sequence[PermissionRule]) -> list[PermissionRule]:
    """`rules` in the order they are tried: higher tier, then higher priority, then listed first."""
    rank = {tier: i for i, tier in enumerate(TIERS)}
    indexed = sorted(enumerate(rules), key=lambda p: (-rank[p[1].tier], -p[1].priority, p[0]))
    return [rule for _, rule in indexed]


def match_rule(
    rules: Sequence[PermissionRule],
    tool: str,
    arguments: Mapping[str, Any],
    *,
    mode: str,
    source: str | None = None,
    server: str | None = None,
    groups: Sequence[str] = (),
) -> PermissionRule | None:
    """The rule that decides a call: the first of `ordered(rules)` that matches, or `None`."""
    for rule in ordered(rules):
        if rule.matches(tool, arguments, mode=mode, source=source, server=server, groups=groups):
            return rule
    return None


RuleSource = str | Path | Mapping[str, Any] | Sequence[Mapping[str, Any]]
"""A tier's rules: a TOML file's path, TOML text, a dict with a ``rule`` list, or a list."""


def _rules_of(source: RuleSource, tier: Tier) -> list[PermissionRule]:
    where = f"the {tier} rules"
    data: Any
    if isinstance(source, Path) or (
        isinstance(source, str) and "\n" not in source and source.strip().endswith(".toml")
    ):
        path = Path(source).expanduser()
        where = f"{tier} rules file {path}"
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return []  # a tier with no file has no rules
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise RuleError(f"{where}: {exc}") from None
    elif isinstance(source, str):
        try:
            data = tomllib.loads(source)
        except tomllib.TOMLDecodeError as exc:
            raise RuleError(f"{where}: not valid TOML: {exc}") from None
    else:
        data = source
    if isinstance(data, Mapping):
        unknown = set(data) - {"rule", "rules"}
        if unknown:
            raise RuleError(
                f"{where}: unknown key(s) {sorted(unknown)}; rules go in [[rule]] tables"
            )
        data = list(data.get("rule", [])) + list(data.get("rules", []))
    rules = []
    for i, item in enumerate(data):
        if not isinstance(item, Mapping):
            raise RuleError(f"{where}: rule {i + 1} is {type(item).__name__}, not a table")
        if "tier" in item and item["tier"] != tier:
            raise RuleError(
                f"{where}: rule {i + 1} says tier {item['tier']!r}; a rule's tier is the "
                f"source it is loaded from ({tier!r}): leave 'tier' out"
            )
        try:
            rules.append(PermissionRule.model_validate({**item, "tier": tier}))
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'rule'}: {e['msg']}" for e in exc.errors()
            )
            raise RuleError(
                f"{where}: rule {i + 1} ({item.get('name', '?')}): {problems}"
            ) from None
    return rules


def load_rules(
    *,
    defaults: RuleSource | None = None,
    user: RuleSource | None = None,
    project: RuleSource | None = None,
    admin: RuleSource | None = None,
) -> list[PermissionRule]:
    """The rules of every tier given, each marked with its tier (a missing file has none).

    Raises:
        RuleError: a file is not valid TOML, or a rule is malformed (which, and why).
    """
    given = {"defaults": defaults, "user": user, "project": project, "admin": admin}
    rules: list[PermissionRule] = []
    for tier in TIERS:
        source = given[tier]
        if source is not None:
            rules.extend(_rules_of(source, tier))
    return rules
