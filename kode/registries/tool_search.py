"""Deferred tools for one agent, and the ``tool_search`` tool that loads them.

This module owns `ToolSearch` (an agent's deferred tools: which are loaded, what a model
request carries, searching among them) and `TOOL_SEARCH_TOOL`, the built-in tool an agent
gets when its template has deferred tools. A search sees only the agent's own deferred tools
(what its template and policy allowed), reads the registry's index (`ToolRegistry.search`)
and loads what it returns: those definitions go with every later model request of the
session. A tool is also loaded once the model calls it. The search is kode's own unless the
agent's model searches natively (``AnthropicModel(tool_search=...)``,
``OpenAIResponsesModel(tool_search="hosted")``): then the provider's search finds the deferred
tools (`waiting` lists those it may load) and the tools its results name count as loaded.

What is loaded is read from the history (``tool_search`` results, calls, and the results of a
provider's tool search kept as `ProviderContent`), so a resumed
session keeps its loaded tools without storing anything more.
"""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Coroutine, Sequence
from typing import TYPE_CHECKING, Annotated, Any

import anyio.to_thread
from pydantic import Field

from kode.registries.entries import normalize_name
from kode.registries.search import SearchHit, SearchIndex
from kode.tools.context import ToolContext
from kode.tools.core import Tool
from kode.tools.define import define_tool
from kode.tools.errors import ToolError, ToolErrorType
from kode.tools.services import ServiceKey

if TYPE_CHECKING:
    from kode.registries.tool_registry import ToolRegistry

__all__ = [
    "TOOL_SEARCH",
    "TOOL_SEARCH_NAME",
    "TOOL_SEARCH_TOOL",
    "ToolSearch",
    "found_by_provider",
]

TOOL_SEARCH_NAME = "tool_search"
_LOADED_LINE = "Loaded for your next turn: "
_LOADED = re.compile(rf"^{_LOADED_LINE}(.+)$", re.MULTILINE)


class ToolSearch:
    """An agent's deferred tools: searching them, loading them, and what a request carries.

    Args:
        deferred: The agent's deferred tools.
        registry: The registry they came from (its index answers searches).
    """

    def __init__(self, deferred: Sequence[Tool[..., Any]], registry: ToolRegistry) -> None:
        self.registry = registry
        """Where the tools came from."""
        self.deferred: dict[str, Tool[..., Any]] = {normalize_name(t.name): t for t in deferred}
        """The deferred tools, by normalised name."""
        self.loaded: dict[str, None] = {}
        """Normalised names of the deferred tools loaded so far, in the order they were."""
        self._own: SearchIndex | None = None  # tools not in the registry (made by factories)
        self._seen = 0  # messages read for loads
        self._searches: set[str] = set()  # ids of tool_search calls
        self._shown: tuple[int, int, list[Tool[..., Any]]] | None = None  # the tools not deferred
        self._lock = threading.Lock()

    def _index_of_others(self) -> SearchIndex:
        if self._own is None:
            own = SearchIndex()
            with self.registry.reading() as view:
                for key, made in self.deferred.items():
                    entry = view.entries.get(key)
                    # an entry not loaded is not `made`: reading it would import under the lock
                    if entry is None or not entry.loaded or entry.tool is not made:
                        own.add(key, made, entry.meta if entry else None)
            self._own = own
        return self._own

    def ready(self) -> bool:
        """Whether a word search would answer at once (no import, model load or embedding)."""
        own = self._own
        return self.registry.search_ready() and (own is None or own.ready)

    def search(
        self, query: str = "", *, regex: str | None = None, limit: int = 5
    ) -> list[SearchHit]:
        """The agent's deferred tools best matching `query` (or `regex`), best first.

        Raises:
            re.error: `regex` is not a valid regular expression.
        """
        allowed = self.deferred.keys()
        hits = self.registry.search(query, regex=regex, allowed=allowed, limit=limit)
        own = self._index_of_others()
        if len(own):
            if not regex:
                own.prepare()
            more = own.search_regex(regex, limit=limit) if regex else own.search(query, limit=limit)
            hits = sorted([*hits, *more], key=lambda h: -h.score)[:limit]
        return [h for h in hits if self.deferred.get(h.key) is not None]

    def load(self, names: Sequence[str]) -> list[str]:
        """Load deferred tools by name; return the names that were deferred and not loaded."""
        new = []
        with self._lock:
            for name in names:
                key = normalize_name(name)
                if key in self.deferred and key not in self.loaded:
                    self.loaded[key] = None
                    new.append(self.deferred[key].name)
        return new

    def visible(
        self, tools: Sequence[Tool[..., Any]], messages: Sequence[Any]
    ) -> list[Tool[..., Any]]:
        """The tools a model request carries: the others, then the loaded ones in load order.

        Loaded ones come last so that the start of the list stays the same from one request
        to the next (providers cache a request's prefix).
        """
        self._read(messages)
        if self._shown is None or self._shown[:2] != (id(tools), len(tools)):
            shown = [t for t in tools if normalize_name(t.name) not in self.deferred]
            self._shown = (id(tools), len(tools), shown)  # worked out once, not every turn
        return self._shown[2] + [self.deferred[key] for key in list(self.loaded)]

    def waiting(self, messages: Sequence[Any]) -> list[Tool[..., Any]]:
        """The deferred tools not loaded yet (a provider's own search may load them)."""
        self._read(messages)
        return [tool for key, tool in self.deferred.items() if key not in self.loaded]

    def _read(self, messages: Sequence[Any]) -> None:
        """Load what the history says was found or called (a resumed session's loads)."""
        start = max(0, min(self._seen, len(messages)) - 1)  # the last one may have grown
        for message in messages[start:]:
            for block in message.content:
                kind = getattr(block, "type", "")
                if kind == "tool_use":
                    name = normalize_name(block.name)
                    if name == TOOL_SEARCH_NAME:
                        self._searches.add(block.id)
                    else:
                        self.load([name])
                elif kind == "tool_result" and block.tool_use_id in self._searches:
                    for part in block.content:
                        text = getattr(part, "text", "")
                        for found in _LOADED.finditer(text):
                            self.load([n.strip() for n in found.group(1).split(",")])
                elif kind == "provider":
                    self.load(found_by_provider(block.data))
        self._seen = len(messages)


def found_by_provider(data: dict[str, Any]) -> list[str]:
    """The tools a provider's tool search result names (none for other blocks).

    They are the ``tool_reference`` entries of an Anthropic ``tool_search_tool_result``, and
    the tools of a Responses API ``tool_search_output``.
    """
    kind = data.get("type")
    if kind == "tool_search_tool_result":
        content = data.get("content")
        refs = content.get("tool_references", ()) if isinstance(content, dict) else ()
        return [r["tool_name"] for r in refs if isinstance(r, dict) and "tool_name" in r]
    if kind == "tool_search_output":
        tools = data.get("tools") or ()
        return [t["name"] for t in tools if isinstance(t, dict) and isinstance(t.get("name"), str)]
    return []


TOOL_SEARCH: ServiceKey[ToolSearch] = ServiceKey(
    "tool_search", ToolSearch, doc="the agent's deferred tools"
)
"""The agent's `ToolSearch`, in ``ctx.services`` of its calls."""


async def _tool_search(
    ctx: ToolContext,
    query: Annotated[str, Field(description="Words saying what the tool should do.")] = "",
    regex: Annotated[
        str,
        Field(description="A regular expression over tool names and descriptions instead."),
    ] = "",
    limit: Annotated[int, Field(ge=1, le=20, description="How many tools at most.")] = 5,
) -> str:
    """Find tools you can use that are not loaded yet, by what they do or by a regex.

    More tools are available than are shown. Describe the action you need (for example
    "create a github issue" or "delete a file"); the tools found are loaded and you can call
    them from your next turn.
    """
    search = TOOL_SEARCH.get(ctx.services)
    if search is None:
        raise ToolError(
            "tool_search works only inside an agent with deferred tools",
            type=ToolErrorType.INVALID_TOOL_PARAMS,
        )
    if not query.strip() and not regex.strip():
        raise ToolError(
            "give query= (words saying what the tool should do) or regex= (a pattern over "
            "tool names and descriptions)",
            type=ToolErrorType.INVALID_TOOL_PARAMS,
        )
    find = functools.partial(search.search, query, regex=regex or None, limit=limit)
    try:
        # The first search loads the model of meaning and embeds the tools (up to a second):
        # never in the event loop. Later ones take well under a millisecond: inline.
        hits = find() if regex or search.ready() else await anyio.to_thread.run_sync(find)
    except re.error as exc:
        raise ToolError(
            f"regex {regex!r} is not a valid regular expression: {exc}",
            type=ToolErrorType.INVALID_TOOL_PARAMS,
        ) from None
    if not hits:
        asked = f"regex {regex!r}" if regex else f"{query!r}"
        return f"No tool matched {asked}. Try other words, or fewer."
    search.load([h.name for h in hits])
    lines = [_LOADED_LINE + ", ".join(h.name for h in hits)]
    lines += [f"- {h.name}: {h.description} (matched {h.why})" for h in hits]
    return "\n".join(lines)


TOOL_SEARCH_TOOL: Tool[..., Coroutine[Any, Any, str]] = define_tool(
    name=TOOL_SEARCH_NAME, kind="search", registry=None
)(_tool_search)
"""The ``tool_search`` tool an agent with deferred tools gets (not in any registry)."""
