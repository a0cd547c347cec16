"""Skills served over MCP: each skill's files as resources, and the ``skill`` tool's catalog.

This module owns what `ToolServer` offers when it is given a `SkillCatalog`: the ``skill``
tool (the built-in's answer, `kode.tools.skills.skill_text`, for the catalog's skills), the
resources
``skill://<name>/SKILL.md`` (the skill's front matter and instructions) and
``skill://<name>/<path>`` for each file beside it (`resources/list`, `resources/read`), and the
text added to the server's instructions naming each skill. It does not choose the skills
(`kode.tools.skills.skill_sources` does) and does not run their scripts: a client reads them.

A read is confined to the skill's folder: the path is resolved (links followed) and must
stay inside it, and a file larger than `MAX_RESOURCE_BYTES` is refused. What is listed and
read are the files `Skill.files` names (hidden folders left out).
"""

from __future__ import annotations

import base64
import mimetypes
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import quote, unquote

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from pydantic import Field

from kode.tools.core import Tool
from kode.tools.define import define_tool
from kode.tools.errors import ToolError, ToolErrorType
from kode.tools.skills import SKILL_FILE, SkillCatalog, SkillError, skill_text

__all__ = ["MAX_RESOURCE_BYTES", "SCHEME", "ServedSkills", "skill_uri"]

SCHEME = "skill"
"""The URI scheme of a skill's resources: ``skill://<name>/<path>``."""
MAX_RESOURCE_BYTES = 1024 * 1024
"""The largest file of a skill a client may read (bytes)."""
RESOURCE_NOT_FOUND = -32002
"""The JSON-RPC error code MCP gives a resource that does not exist."""


def skill_uri(name: str, path: str = SKILL_FILE) -> str:
    """The URI of a skill's file (`path` relative to its folder, ``/``-separated)."""
    return f"{SCHEME}://{name}/{quote(path)}"


def _mime(path: str) -> str:
    if path.endswith(".md"):
        return "text/markdown"
    guessed, _ = mimetypes.guess_type(path)
    return guessed or "application/octet-stream"


class ServedSkills:
    """A catalog's skills as MCP resources (installed on a server by `install`)."""

    def __init__(self, catalog: SkillCatalog) -> None:
        self.catalog = catalog
        """The skills served."""

    def tool(self) -> Tool[..., Any]:
        """The ``skill`` tool for these skills (kode's built-in, bound to this catalog)."""
        catalog = self.catalog

        @define_tool(registry=None, kind="read", groups=["group:skills"])
        def skill(
            name: Annotated[
                str, Field(min_length=1, max_length=64, description="The skill's name.")
            ],
        ) -> str:
            """Load a skill: its instructions, its folder and the files in it.

            Call it with the name of a skill listed in the server's instructions when a task
            matches its description, and follow what it says. Its files are also the
            resources skill://<name>/<path>.

            Args:
                name: The skill's name.
            """
            try:
                found = catalog.get(name)
            except SkillError as exc:
                raise ToolError(str(exc), type=ToolErrorType.INVALID_TOOL_PARAMS) from None
            return skill_text(found)

        return skill

    def install(self, server: Any) -> None:
        """Handle ``resources/list`` and ``resources/read`` on `server` (the SDK's)."""
        server.add_request_handler(
            "resources/list", types.PaginatedRequestParams, self._list_resources
        )
        server.add_request_handler(
            "resources/read", types.ReadResourceRequestParams, self._read_resource
        )

    def instructions(self) -> str:
        """What the server's instructions say about the skills (their names, how to read)."""
        listing = self.catalog.prompt()
        if not listing:
            return ""
        return (
            f"{listing}\n\nEach skill's instructions are also the resource "
            f"{SCHEME}://<name>/{SKILL_FILE}, and its other files {SCHEME}://<name>/<path>."
        )

    def resources(self) -> list[types.Resource]:
        """Every skill's ``SKILL.md``, then its other files."""
        out: list[types.Resource] = []
        for found in self.catalog.skills.values():
            out.append(
                types.Resource(
                    name=f"{found.name}/{SKILL_FILE}",
                    title=f"Skill {found.name}",
                    uri=skill_uri(found.name),
                    description=found.description,
                    mime_type="text/markdown",
                )
            )
            files, _ = found.files()
            out += [
                types.Resource(
                    name=f"{found.name}/{path}",
                    uri=skill_uri(found.name, path),
                    mime_type=_mime(path),
                )
                for path in files
            ]
        return out

    async def _list_resources(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=self.resources())

    async def _read_resource(
        self, ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        return self.read(str(params.uri))

    def read(self, uri: str) -> types.ReadResourceResult:
        """The contents of a skill's file.

        Raises:
            MCPError: the URI names no skill or no file of it (code -32002), or a file too
                large, or one outside the skill's folder.
        """
        path = self._locate(uri)
        try:
            size = path.stat().st_size
            if size > MAX_RESOURCE_BYTES:
                raise MCPError(
                    code=types.INVALID_PARAMS,
                    message=f"Resource {uri} is {size:,} bytes, more than the "
                    f"{MAX_RESOURCE_BYTES:,} a skill's file may be when read over MCP.",
                )
            data = path.read_bytes()
        except OSError as exc:
            raise MCPError(
                code=RESOURCE_NOT_FOUND, message=f"Resource {uri} cannot be read: {exc.strerror}."
            ) from None
        mime = _mime(path.name)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            blob = base64.b64encode(data).decode("ascii")
            contents: Any = types.BlobResourceContents(uri=uri, mime_type=mime, blob=blob)
        else:
            contents = types.TextResourceContents(uri=uri, mime_type=mime, text=text)
        return types.ReadResourceResult(contents=[contents])

    def _locate(self, uri: str) -> Path:
        prefix = f"{SCHEME}://"
        name, _, relative = uri.removeprefix(prefix).partition("/")
        found = self.catalog.skills.get(name) if uri.startswith(prefix) else None
        if found is None:
            raise MCPError(
                code=RESOURCE_NOT_FOUND,
                message=f"Resource {uri} names no skill served here; the skills are: "
                f"{', '.join(sorted(self.catalog.skills)) or 'none'} "
                f"({SCHEME}://<name>/{SKILL_FILE}).",
            )
        relative = unquote(relative)
        folder = found.path.resolve()
        path = (folder / relative).resolve()
        files, _ = found.files()
        if not path.is_relative_to(folder) or (relative != SKILL_FILE and relative not in files):
            raise MCPError(
                code=RESOURCE_NOT_FOUND,
                message=f"Resource {uri} is not a file of skill {name!r}; its files are "
                f"{SKILL_FILE}{''.join(', ' + f for f in files[:20])}"
                f"{', ...' if len(files) > 20 else ''}.",
            )
        return path
