"""Two parts of an Anthropic request: strict tool declarations, and prompt-cache breakpoints.

This module owns which of a request's tools are declared with ``strict: true`` (each one whose
schema allows it, in order, while the request stays within Anthropic's request-wide limits,
`ANTHROPIC_STRICT_LIMITS`) and where ``cache_control`` breakpoints go (the last tool, the
system prompt, the last message), and only where the prefix they close is long enough for
Anthropic to cache it. It does not build the rest of the request (`kode.models.anthropic`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Sequence
from typing import Any

from kode.tools import Tool
from kode.tools.anthropic_strict import ANTHROPIC_STRICT_LIMITS, anthropic_strict_counts

__all__ = ["CACHE_MINIMUM_TOKENS", "add_cache_breakpoints", "cache_minimum", "declarations"]

_logger = logging.getLogger("kode.models")

EPHEMERAL = {"type": "ephemeral"}

CACHE_MINIMUM_TOKENS: tuple[tuple[str, int], ...] = (
    ("opus-4-5", 4096),
    ("opus-4-6", 4096),
    ("haiku-4-5", 4096),
    ("3-haiku", 2048),
    ("3-5-haiku", 2048),
)
"""The shortest prompt Anthropic caches, by a part of the model's name, as Anthropic documents
it; any other model: 1,024 tokens. A breakpoint on a shorter prefix is not cached, so kode
leaves it out."""

_DEFAULT_MINIMUM = 1024
# Characters per token when estimating a prefix's length: JSON and code run at about three,
# prose at about four. The low figure errs towards marking a prefix Anthropic then finds too
# short, which costs nothing (it is simply not cached), rather than missing one it would cache.
_CHARS_PER_TOKEN = 3
# Blocks a cache_control may be put on (thinking blocks refuse it).
_MARKABLE = frozenset({"text", "image", "tool_use", "tool_result", "document"})


def cache_minimum(model: str) -> int:
    """The shortest prompt, in tokens, that Anthropic caches for `model`."""
    for part, tokens in CACHE_MINIMUM_TOKENS:
        if part in model:
            return tokens
    return _DEFAULT_MINIMUM


def declarations(
    tools: Sequence[Tool[..., Any]],
    *,
    strict: bool,
    warned: set[str],
    counts: dict[int, tuple[Tool[..., Any], int, int]] | None = None,
) -> list[Any]:
    """The tools' Anthropic declarations, strict where allowed when `strict` is set.

    A tool is strict when its schema can be made strict and the strict tools before it leave
    room under `ANTHROPIC_STRICT_LIMITS`. The tools left plain for lack of room are named in
    one warning on the ``kode.models`` logger, once for each such set of tools (kept in
    `warned`), not on every request. `counts` keeps each tool's `anthropic_strict_counts`
    between requests (by the tool's identity; the tool is kept with them, so the identity
    stays its own).
    """
    if not strict:
        return [tool.schema("anthropic") for tool in tools]
    limits = ANTHROPIC_STRICT_LIMITS
    out: list[Any] = []
    crowded: list[str] = []
    count = optional = unions = 0
    for tool in tools:
        try:
            decl = tool.schema("anthropic", strict=True)
        except ValueError:  # the schema cannot be strict: plain, as OpenAI's would be
            out.append(tool.schema("anthropic"))
            continue
        known = counts.get(id(tool)) if counts is not None else None
        if known is None:
            known = (tool, *anthropic_strict_counts(decl["input_schema"]))
            if counts is not None:
                counts[id(tool)] = known
        _, more_optional, more_unions = known
        if (
            count + 1 > limits["tools"]
            or optional + more_optional > limits["optional"]
            or unions + more_unions > limits["unions"]
        ):
            crowded.append(tool.name)
            out.append(tool.schema("anthropic"))
            continue
        count += 1
        optional += more_optional
        unions += more_unions
        out.append(decl)
    key = ",".join(crowded)
    if crowded and key not in warned:
        warned.add(key)
        shown = ", ".join(repr(name) for name in crowded[:10])
        more = f" and {len(crowded) - 10} more" if len(crowded) > 10 else ""
        _logger.warning(
            "%d tools are sent to Anthropic without strict mode (%s%s): the strict tools before "
            "them reach Anthropic's limits for one request (%d tools, %d optional parameters, "
            "%d parameters with a union type)",
            len(crowded),
            shown,
            more,
            limits["tools"],
            limits["optional"],
            limits["unions"],
        )
    return out


def _length(items: Iterable[Any], enough: int) -> int:
    """The JSON length of `items`, counted until it reaches `enough`."""
    total = 0
    for item in items:
        total += len(item) if isinstance(item, str) else len(json.dumps(item, default=str))
        if total >= enough:
            break
    return total


def add_cache_breakpoints(params: dict[str, Any], model: str) -> None:
    """Put ``cache_control`` on the last tool, the system prompt and the last message.

    Each breakpoint closes a prefix (tools, then the system prompt, then the messages); it is
    put only where that prefix is estimated to reach `cache_minimum` tokens. At most three
    breakpoints are used, of the four Anthropic allows.
    """
    needed = cache_minimum(model) * _CHARS_PER_TOKEN
    length = 0
    tools = params.get("tools") or []
    if tools:
        length = _length(tools, needed)
        if length >= needed:
            last = next((t for t in reversed(tools) if not t.get("defer_loading")), None)
            if last is not None:
                last["cache_control"] = dict(EPHEMERAL)
    system = params.get("system")
    if system:
        length += len(system) if isinstance(system, str) else _length(system, needed)
        if length >= needed and isinstance(system, str):
            params["system"] = [{"type": "text", "text": system, "cache_control": dict(EPHEMERAL)}]
    messages = params.get("messages") or []
    if not messages:
        return
    if length < needed:
        length += _length((m["content"] for m in messages), needed - length)
    if length < needed:
        return
    block = next((b for b in reversed(messages[-1]["content"]) if b.get("type") in _MARKABLE), None)
    if block is not None:
        block["cache_control"] = dict(EPHEMERAL)
