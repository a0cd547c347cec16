"""The built-in ``skill`` tool: one skill's instructions and files, loaded when the model asks.

The model sees only each skill's name and description (the agent adds them to its system
prompt); ``skill`` returns one skill's body, its folder's absolute path and its files. The
skills are the agent's `SkillCatalog` (``ctx.services["skills"]``, made from its template):
a name outside it is refused. A skill's scripts run through ``bash_run`` like any command,
under its policy and sandbox, where the skill's folder is read-only. See the Skills page
(``docs/skills.md``).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from kode.tools.context import ToolContext
from kode.tools.define import define_tool
from kode.tools.errors import ToolError, ToolErrorType
from kode.tools.skills import SKILLS, SkillError, skill_text

__all__ = ["skill"]


@define_tool(kind="read", groups=["group:skills"], aliases=["use_skill"])
def skill(
    name: Annotated[str, Field(min_length=1, max_length=64, description="The skill's name.")],
    *,
    ctx: ToolContext,
) -> str:
    """Load a skill: its instructions, its folder and the files in it.

    Call it with the name of a skill listed in your instructions when a task matches its
    description, and follow what it says. Run its scripts with bash_run, by the absolute
    folder path this tool gives.

    Args:
        name: The skill's name.
        ctx: Injected by kode (not shown to the model).
    """
    catalog = SKILLS.get(ctx.services)
    if catalog is None:
        raise ToolError(
            "No skills are available: the skill tool works inside an agent whose template "
            "gives skills (AgentTemplate(skills=[...]), or skills in ~/.kode/skills).",
            type=ToolErrorType.INVALID_TOOL_PARAMS,
        )
    try:
        found = catalog.get(name)
    except SkillError as exc:
        raise ToolError(str(exc), type=ToolErrorType.INVALID_TOOL_PARAMS) from None
    return skill_text(found)
