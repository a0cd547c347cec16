"""Agent templates: what an agent is — prompt, tools, policy, permissions, limits — as data.

This module owns `AgentTemplate` (loadable from a dict, JSON or TOML, so templates can live in
config files) and the template registry agents are created from by id. Hooks are Python
callables and can only be given in code.
"""

from __future__ import annotations

import contextlib
import json
import threading
import tomllib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from kode.agent.context import ContextPolicy
from kode.agent.hooks import AgentHooks
from kode.agent.limits import RunLimits
from kode.agent.output import OutputSpec
from kode.agent.permissions import PermissionConfig
from kode.models.base import ModelSettings
from kode.registries.policy import ToolPolicy
from kode.tools.errors import KodeError

__all__ = [
    "AgentTemplate",
    "PolicyConfig",
    "SessionAccess",
    "TemplateError",
    "TemplateRegistry",
    "templates",
]


class TemplateError(KodeError, ValueError):
    """A template is malformed, or no template has the requested id."""


class PolicyConfig(BaseModel):
    """A template's tool policy (see `ToolPolicy`)."""

    model_config = ConfigDict(extra="forbid")
    profile: str | None = None
    """A named allow-list."""
    allow: list[str] = Field(default_factory=list)
    """Patterns a tool must match (empty: all)."""
    also_allow: list[str] = Field(default_factory=list)
    """Patterns let through in addition."""
    deny: list[str] = Field(default_factory=list)
    """Patterns never let through."""

    def to_policy(self, name: str) -> ToolPolicy:
        """The `ToolPolicy` layer this config describes."""
        return ToolPolicy(
            profile=self.profile,
            allow=self.allow,
            also_allow=self.also_allow,
            deny=self.deny,
            name=name,
        )


class SessionAccess(BaseModel):
    """Which sessions of its store an agent's session tools reach.

    The tools are ``sessions_list``, ``sessions_history``, ``session_status`` and
    ``sessions_send``. An agent always reaches its own session and the sessions it spawned;
    these settings let it reach more. A session it does not reach is neither listed nor
    shown, and no message can be sent into it.

    Example:
        ```python
        from kode.agent import AgentTemplate, SessionAccess

        lead = AgentTemplate(
            id="lead",
            tools=["group:sessions"],
            session_access=SessionAccess(templates=["reviewer"], labels=["team"]),
        )
        ```
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    templates: list[str] = Field(default_factory=list)
    """Also the sessions made from these template ids."""
    labels: list[str] = Field(default_factory=list)
    """Also the sessions with these labels."""
    all: bool = False
    """Every session of the store."""

    def reaches(self, template: str, label: str | None) -> bool:
        """Whether a session of `template` with `label` is reached (one not its own or spawned)."""
        return (
            self.all or template in self.templates or (label is not None and label in self.labels)
        )


class AgentTemplate(BaseModel):
    """What an agent is. Tools are listed by name, group or pattern and resolved from a registry.

    Example:
        ```python
        from kode import AgentTemplate

        template = AgentTemplate(
            id="researcher",
            system_prompt="You find files and summarise them.",
            tools=["search_files", "group:web"],
            permission={"mode": "approval", "require_approval": ["fs_write"]},
        )
        ```
    """

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True, frozen=True)
    id: str = Field(min_length=1)
    """The template's id."""
    system_prompt: str = ""
    """The system prompt."""
    tools: list[str] = Field(default_factory=list)
    """Tool names, aliases, globs (``fs_*``), ``group:...``, plugin ids, ``mcp__server__*``."""
    deferred: list[str] = Field(default_factory=list)
    """Entries like `tools` whose tools the agent has deferred: their definitions are sent
    only once the agent's ``tool_search`` has found them (see the "Many tools" page)."""
    skills: list[str] = Field(default_factory=list)
    """Skills the agent may load with its ``skill`` tool: folders (a path with a ``/``, or
    starting with ``.`` or ``~``) that are a skill or hold skill folders, and names of skills
    in ``~/.kode/skills`` or a plugin (without names, all of those; see the "Skills" page)."""
    skills_from_workspace: bool = False
    """Whether the workspace's ``.kode/skills`` may load too (whoever controls the workspace,
    the model included, wrote them)."""
    policy: PolicyConfig | None = None
    """A policy layer applied on top of the tool list."""
    permission: PermissionConfig = Field(default_factory=PermissionConfig)
    """Who may run what."""
    session_access: SessionAccess = Field(default_factory=SessionAccess)
    """Which sessions of the store its session tools reach besides its own and those it
    spawned (none by default)."""
    hooks: AgentHooks | None = Field(default=None, exclude=True)
    """Pre- and post-tool-use hooks (code only; not part of the serialised template)."""
    model_settings: dict[str, Any] = Field(default_factory=dict)
    """Generation settings: ``max_tokens``, ``temperature``, ``timeout`` and ``max_retries``
    (options of the request, never sent in it), and provider extras. ``stream`` is refused:
    kode always streams."""
    max_turns: int = Field(default=25, ge=1)
    """The most model responses one run may take."""
    context: ContextPolicy | None = None
    """Which tool results each request sends whole (`ContextPolicy`); `None`: all of them.
    The stored history keeps everything either way."""
    limits: RunLimits = Field(default_factory=RunLimits)
    """Limits on one run besides `max_turns`: tool calls, tokens and a cost budget (none by
    default); reaching one ends the run with a `RunLimitError`."""
    tool_timeout: float | None = Field(default=None, gt=0)
    """Seconds a call may take when its tool has no `timeout` of its own."""
    max_concurrent_tools: int = Field(default=8, ge=1)
    """How many tool calls of one turn run at once."""
    max_result_chars: int = Field(default=100_000, ge=100)
    """Longer tool results are cut, with a marker saying how much was left out."""
    output_type: Any = Field(default=None, exclude=True)
    """The type of the run's final output (code only): a pydantic model, a dataclass, a
    TypedDict, or another type pydantic validates (``int``, ``list[str]``, a ``Literal``).
    ``reply.output`` is then the validated value; `None` (the default): no typed output, and
    ``str``: the final text. See ``docs/models.md``."""
    output_mode: Literal["tool", "native"] = "tool"
    """How the output is asked for: ``"tool"``, a ``final_result`` tool the model calls (every
    model, with or without other tools), or ``"native"``, the provider's own structured output
    where the model supports it (the tool otherwise)."""
    output_retries: int = Field(default=1, ge=0)
    """How many times invalid (or missing) output goes back to the model with what was wrong
    before the run fails."""

    @field_validator("tools", mode="before")
    @classmethod
    def _tools_is_a_list(cls, value: Any) -> Any:
        if isinstance(value, str):
            raise ValueError(f"tools must be a list of names, got the string {value!r}")
        return value

    @field_validator("skills", mode="before")
    @classmethod
    def _skills_is_a_list(cls, value: Any) -> Any:
        if isinstance(value, str):
            raise ValueError(f"skills must be a list of folders or names, got the string {value!r}")
        return value

    @field_validator("output_type")
    @classmethod
    def _output_type_validates(cls, value: Any) -> Any:
        if value is not None:
            try:
                OutputSpec.of(value)
            except TypeError as exc:
                raise ValueError(str(exc)) from None
        return value

    @field_validator("model_settings")
    @classmethod
    def _settings_do_not_stream(cls, value: dict[str, Any]) -> dict[str, Any]:
        if "stream" in value:
            raise ValueError(
                "'stream' cannot be set in model_settings: kode always streams the response "
                f"(remove stream={value['stream']!r})"
            )
        return value

    def settings(self) -> ModelSettings:
        """The `ModelSettings` for this template's requests."""
        extra = dict(self.model_settings)
        max_tokens = int(extra.pop("max_tokens", 4096))
        temperature = extra.pop("temperature", None)
        return ModelSettings(max_tokens=max_tokens, temperature=temperature, extra=extra)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AgentTemplate:
        """A template from a dict (as read from a config file).

        Raises:
            TemplateError: naming every invalid field.
        """
        try:
            return cls.model_validate(dict(data))
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or '(template)'}: {e['msg']}"
                for e in exc.errors(include_url=False)
            )
            raise TemplateError(f"invalid agent template: {problems}") from None

    @classmethod
    def from_json(cls, text: str) -> AgentTemplate:
        """A template from JSON text."""
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise TemplateError(f"agent template is not valid JSON: {exc}") from None
        if not isinstance(data, dict):
            raise TemplateError("an agent template must be a JSON object")
        return cls.from_dict(data)

    @classmethod
    def from_toml(cls, text: str) -> AgentTemplate:
        """A template from TOML text (a ``[template]`` table, or the whole document)."""
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise TemplateError(f"agent template is not valid TOML: {exc}") from None
        table = data.get("template", data)
        return cls.from_dict(table)

    @classmethod
    def from_file(cls, path: str | Path) -> AgentTemplate:
        """A template from a ``.json`` or ``.toml`` file."""
        file = Path(path)
        text = file.read_text(encoding="utf-8")
        if file.suffix == ".toml":
            return cls.from_toml(text)
        if file.suffix == ".json":
            return cls.from_json(text)
        raise TemplateError(f"{file}: use a .toml or .json file for an agent template")


class TemplateRegistry:
    """Templates by id, so agents can be created (and rebuilt from state) by template id."""

    def __init__(self) -> None:
        self._templates: dict[str, AgentTemplate] = {}
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def isolated(self) -> Iterator[TemplateRegistry]:
        """Empty the registry for the block and restore it after (for tests)."""
        with self._lock:
            saved = dict(self._templates)
            self._templates.clear()
        try:
            yield self
        finally:
            with self._lock:
                self._templates.clear()
                self._templates.update(saved)

    def register(self, template: AgentTemplate, *, replace: bool = True) -> AgentTemplate:
        """Register a template; return it."""
        with self._lock:
            if not replace and template.id in self._templates:
                raise TemplateError(f"a template with id {template.id!r} is already registered")
            self._templates[template.id] = template
        return template

    def get(self, template_id: str) -> AgentTemplate:
        """The template with this id.

        Raises:
            TemplateError: none has it (the message lists the ids there are).
        """
        with self._lock:
            found = self._templates.get(template_id)
            known = sorted(self._templates)
        if found is None:
            raise TemplateError(
                f"no agent template with id {template_id!r}; registered: "
                f"{', '.join(known) or 'none'}"
            )
        return found

    def __contains__(self, template_id: object) -> bool:
        return template_id in self._templates

    def ids(self) -> list[str]:
        """Every registered id, sorted."""
        with self._lock:
            return sorted(self._templates)


templates = TemplateRegistry()
"""The global template registry."""
