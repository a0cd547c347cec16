"""Writing an image the media tools made into the workspace: a new file, never an overwrite."""

from __future__ import annotations

from typing import Any

from kode.builtin._shared._safe_open import write_at
from kode.builtin._shared._workspace_files import existing, parent_dir, target
from kode.tools.context import ToolContext
from kode.tools.errors import ToolError, ToolErrorType

__all__ = ["save_image"]


def save_image(ctx: ToolContext[Any], path: str, data: bytes) -> str:
    """Write `data` to the new file `path` in the context's workspace; return how it is shown.

    Raises:
        ToolError: the path leaves the workspace, the file exists already, or writing failed.
    """
    where = target(ctx, path)
    try:
        with parent_dir(where, create=True) as fd:
            if existing(where, fd) is not None:
                raise ToolError(
                    f"'{where.shown}' exists already; images are saved only as new files. "
                    "Choose another name for save_to.",
                    type=ToolErrorType.INVALID_TOOL_PARAMS,
                    details={"path": str(where.path), "reason": "exists"},
                )
            write_at(fd, where.path.name, data, mode=None)
    except OSError as exc:
        raise ToolError(
            f"Could not write '{where.shown}': {exc.strerror or exc}.",
            details={"path": str(where.path)},
        ) from None
    return where.shown
