"""An agent's skills: the `SkillCatalog` its template gives, checked when the agent is made.

This module owns the step of `Agent.create` that reads the template's skills: an agent has
skills when it has the ``skill`` tool (``tools=["skill"]`` or ``"group:skills"``); a
template that gives skills without that tool is an error, as is a template folder that holds a
malformed skill or a named skill found nowhere. Malformed skills of the shared folders
(``~/.kode/skills``, plugins, the workspace) and name clashes are logged as warnings and left
out. The skills' names and descriptions are added to the system prompt (`system_prompt`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kode.agent.template import AgentTemplate
from kode.tools.skills import SkillCatalog, skill_sources

__all__ = ["SKILL_TOOL", "agent_skills", "system_prompt"]

SKILL_TOOL = "skill"
"""The name of the tool that loads a skill."""

_log = logging.getLogger("kode.agent")


def agent_skills(
    template: AgentTemplate, tools: Sequence[Any], workspace: Path | None
) -> SkillCatalog | None:
    """The skills an agent made from `template` may load (`None`: it has no ``skill`` tool).

    Raises:
        ValueError: the template gives skills but not the ``skill`` tool.
        SkillError: a template folder is missing or malformed, or a named skill is not found.
    """
    has_tool = any(getattr(t, "name", None) == SKILL_TOOL for t in tools)
    if not has_tool:
        if template.skills or template.skills_from_workspace:
            raise ValueError(
                f"agent template {template.id!r} gives skills but not the {SKILL_TOOL!r} tool "
                f"that loads them; add {SKILL_TOOL!r} (or 'group:skills') to its tools"
            )
        return None
    catalog = skill_sources(
        template.skills, workspace=workspace, from_workspace=template.skills_from_workspace
    )
    for problem in [*catalog.problems, *catalog.clashes()]:
        _log.warning("agent template %r: %s", template.id, problem)
    return catalog


def system_prompt(template: AgentTemplate, catalog: SkillCatalog | None) -> str:
    """The template's system prompt, followed by the skills' names and descriptions."""
    listing = catalog.prompt() if catalog is not None else ""
    if not listing:
        return template.system_prompt
    if not template.system_prompt:
        return listing
    return f"{template.system_prompt.rstrip()}\n\n{listing}"
