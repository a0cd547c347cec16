"""A server's resources and prompts: listing, reading, subscribing, and tools that read them.

This module owns the requests behind `MCPConnection`'s resource and prompt methods (every
page of a listing, a resource read as a kode `ToolResult`, a prompt as kode `Message`
objects, subscriptions), the `MCPEvent` a subscription's update becomes, and the two tools a
connection can add for an agent (``mcp__<server>__read_resource``,
``mcp__<server>__get_prompt``), whose descriptions list what there is to read.
"""

from __future__ import annotations

import base64
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import mcp_types as types
from mcp.client.session import ClientSession

from kode.mcp.convert import BlobFiles, resource_block
from kode.models.messages import ContentBlock, ImageContent, ImageSource, Message, TextContent
from kode.tools.results import ImageBlock, TextBlock, ToolResult

__all__ = [
    "MCPEvent",
    "MCPEventFunc",
    "list_all",
    "prompt_messages",
    "read_result",
    "tool_description",
]

T = TypeVar("T")
_PAGES = 1000  # a server whose cursor never ends cannot hang kode
_LISTED = 30  # resources or prompts named in a tool's description


@dataclass(kw_only=True, frozen=True, slots=True)
class MCPEvent:
    """Something a server said happened (its notifications)."""

    server: str
    """The server's name in kode."""
    kind: Literal["resource_updated", "resources_changed", "prompts_changed", "tools_changed"]
    """``resource_updated`` (a subscribed resource changed), or which list changed."""
    uri: str | None = None
    """The resource, for ``resource_updated``."""


MCPEventFunc = Callable[[MCPEvent], None]
"""Receives a server's events (called from the connection's thread: keep it short)."""


async def list_all(
    fetch: Callable[[types.PaginatedRequestParams | None], Awaitable[Any]],
    field: str,
) -> list[Any]:
    """Every item of a paginated listing (``resources``, ``resourceTemplates``, ``prompts``)."""
    items: list[Any] = []
    cursor: str | None = None
    for _ in range(_PAGES):
        params = types.PaginatedRequestParams(cursor=cursor) if cursor is not None else None
        page = await fetch(params)
        items.extend(getattr(page, field))
        cursor = page.next_cursor
        if cursor is None:
            break
    return items


async def list_resources(session: ClientSession) -> list[types.Resource]:
    """The server's resources, every page."""
    return await list_all(lambda p: session.list_resources(params=p), "resources")


async def list_templates(session: ClientSession) -> list[types.ResourceTemplate]:
    """The server's resource templates, every page."""
    return await list_all(lambda p: session.list_resource_templates(params=p), "resource_templates")


async def list_prompts(session: ClientSession) -> list[types.Prompt]:
    """The server's prompts, every page."""
    return await list_all(lambda p: session.list_prompts(params=p), "prompts")


def read_result(result: types.ReadResourceResult, files: BlobFiles | None) -> ToolResult:
    """A resource's contents as a `ToolResult` (text, images, saved files; see `convert`)."""
    blocks = tuple(resource_block(c, files) for c in result.contents)
    if not blocks:
        blocks = (TextBlock(text="(the resource is empty)"),)
    return ToolResult(
        content=blocks,
        details=[
            c.model_dump(by_alias=True, mode="json", exclude_none=True) for c in result.contents
        ],
    )


def _message_content(item: Any, files: BlobFiles | None) -> ContentBlock:
    if isinstance(item, types.TextContent):
        return TextContent(text=item.text)
    if isinstance(item, types.ImageContent):
        return ImageContent(source=ImageSource(media_type=item.mime_type, data=item.data))
    if isinstance(item, types.EmbeddedResource):
        block = resource_block(item.resource, files)
        if isinstance(block, ImageBlock):
            data = base64.b64encode(block.data).decode("ascii")
            return ImageContent(source=ImageSource(media_type=block.media_type, data=data))
        return TextContent(text=block.text)
    if isinstance(item, types.ResourceLink):
        return TextContent(text=f"[resource link {item.uri} ({item.name})]")
    return TextContent(text=f"[{type(item).__name__}, which kode does not pass to a model]")


def prompt_messages(result: types.GetPromptResult, files: BlobFiles | None) -> list[Message]:
    """A prompt's messages as kode messages (one after another of the same role merged)."""
    messages: list[Message] = []
    for message in result.messages:
        content = [_message_content(message.content, files)]
        if messages and messages[-1].role == message.role:
            messages[-1] = Message(role=message.role, content=[*messages[-1].content, *content])
        else:
            messages.append(Message(role=message.role, content=content))
    return messages


def prompt_text(messages: list[Message]) -> str:
    """A prompt's messages as text, for a tool's result."""
    return "\n\n".join(f"[{m.role}]\n{m.text}" for m in messages)


def tool_description(kind: Literal["resources", "prompts"], server: str, items: list[Any]) -> str:
    """The description of a connection's resource or prompt tool, naming what there is."""
    lines = []
    for item in items[:_LISTED]:
        if isinstance(item, types.Resource):
            what = item.description or item.name
            lines.append(f"- {item.uri}" + (f": {what}" if what else ""))
        elif isinstance(item, types.ResourceTemplate):
            what = item.description or item.name
            lines.append(f"- {item.uri_template} (a template)" + (f": {what}" if what else ""))
        elif isinstance(item, types.Prompt):
            args = ", ".join(a.name + ("" if a.required else "?") for a in (item.arguments or []))
            lines.append(
                f"- {item.name}({args})" + (f": {item.description}" if item.description else "")
            )
    more = f"\n(and {len(items) - _LISTED} more)" if len(items) > _LISTED else ""
    listing = "\n".join(lines) + more if lines else "(none listed yet)"
    if kind == "resources":
        return f"Read a resource of MCP server '{server}' by its URI. Resources:\n{listing}"
    return (
        f"Get a prompt of MCP server '{server}' by its name, with its arguments (strings). "
        f"Prompts:\n{listing}"
    )
