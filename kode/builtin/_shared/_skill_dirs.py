"""Writes into a skill's folder ask first: a skill's body is instructions a model will follow.

The folders are the agent's skills (``ctx.services["skills"]``) and the workspace's
``.kode/skills``, where a model could otherwise leave instructions for a later session.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from kode.tools.context import ToolContext
from kode.tools.errors import ToolError
from kode.tools.skills import SKILLS, workspace_skills_dir
from kode.tools.workspace import Workspace

__all__ = ["SKILL_WRITE_REASON", "in_skill_dir"]

SKILL_WRITE_REASON = (
    "writes into a skill's folder (a skill's instructions are followed by the models that load it)"
)
"""Why the writing tools ask for approval for a path inside a skill's folder."""


def in_skill_dir(path: str, space: Workspace, ctx: ToolContext[Any] | None) -> str | None:
    """`SKILL_WRITE_REASON` if `path` (as the model gave it) is inside a skill's folder."""
    try:
        resolved = space.resolve(path)
    except (ToolError, ValueError):
        resolved = Path(space.root, path).resolve()
    folders = [workspace_skills_dir(space.root)]
    if ctx is not None:
        with contextlib.suppress(TypeError):  # a value of another type: no skills known
            catalog = SKILLS.get(ctx.services)
            if catalog is not None:
                folders += catalog.folders()
    for folder in folders:
        if resolved == folder or folder in resolved.parents:
            return SKILL_WRITE_REASON
    return None
