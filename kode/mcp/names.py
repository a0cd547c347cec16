"""How an MCP server's tools are named in kode: ``mcp__<server>__<tool>``, within 64 characters.

This module owns the naming rule of imported tools and nothing else (it does not import the
``mcp`` SDK). Providers accept tool names of 1-64 letters, digits, ``_`` and ``-``; an MCP tool
may be called anything (``files.read``, ``admin/reset``, a 90-character name). So:

1. the server's name is checked, not changed: it is what templates write (``mcp__github__*``);
2. every character of the tool's name outside ``[A-Za-z0-9_-]`` becomes ``_``;
3. a name longer than 64 characters is shortened in the middle, where a hash of the remote name
   keeps it unique: ``mcp__github__list_pull_requests_for_…_a1b2c3_…_review_comments``;
4. two remote names that would give the same kode name (``a.b`` and ``a_b``) are told apart the
   same way: the first keeps the plain name, the next gets the hashed one.

The remote name is kept in the registry (``registry.meta(name).remote_name``), so the rule never
has to be reversed by parsing.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

__all__ = ["MAX_NAME_LENGTH", "check_server_name", "kode_tool_names", "server_prefix"]

MAX_NAME_LENGTH = 64
"""The longest tool name every provider accepts."""

MAX_SERVER_NAME_LENGTH = 32
"""The longest server name: it leaves at least 25 characters for the tool's own name."""

_SERVER_NAME = re.compile(r"^[A-Za-z0-9-]+(?:_[A-Za-z0-9-]+)*$")
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def check_server_name(name: object) -> str:
    """`name` if it can name an MCP server in kode; else a `ValueError` saying why.

    A server name is 1-32 letters, digits, ``-`` and single ``_`` (not at either end): the
    double underscore separates it from the tool's name, so ``mcp__a__b__c`` stays readable
    and ``mcp__<server>__*`` selects exactly that server's tools.
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"an MCP server needs a name (a non-empty string), got {name!r}")
    if len(name) > MAX_SERVER_NAME_LENGTH or not _SERVER_NAME.match(name):
        raise ValueError(
            f"MCP server name {name!r} is invalid: use 1-{MAX_SERVER_NAME_LENGTH} letters, "
            "digits, '-' and single '_' (not first or last), e.g. 'github' or 'local-files'"
        )
    return name


def server_prefix(server: str) -> str:
    """``mcp__<server>__``: the start of every tool name imported from `server`."""
    return f"mcp__{server}__"


def _digest(remote: str, length: int) -> str:
    return hashlib.sha256(remote.encode("utf-8")).hexdigest()[:length]


def _hashed(prefix: str, safe: str, remote: str, length: int) -> str:
    """``prefix + head + _<hash>_ + tail`` (or ``prefix + safe + _<hash>``), at most 64 long."""
    tag = _digest(remote, length)
    if len(prefix) + len(safe) + 1 + len(tag) <= MAX_NAME_LENGTH:
        return f"{prefix}{safe}_{tag}"
    room = MAX_NAME_LENGTH - len(prefix) - len(tag) - 2
    head = room - room // 2
    tail = room // 2
    return f"{prefix}{safe[:head]}_{tag}_{safe[len(safe) - tail :] if tail else ''}".rstrip("_")


def kode_tool_names(server: str, remote_names: Iterable[str]) -> dict[str, str]:
    """The kode name of each of `server`'s tools, in the order given: ``{remote: kode}``.

    Deterministic: the same server and list give the same names on every connection.

    Raises:
        ValueError: `server` is not a valid server name (see `check_server_name`).
    """
    prefix = server_prefix(check_server_name(server))
    out: dict[str, str] = {}
    taken: set[str] = set()
    for remote in remote_names:
        if remote in out:
            continue
        safe = _UNSAFE.sub("_", remote) or "_"
        name = prefix + safe
        length = 6
        while len(name) > MAX_NAME_LENGTH or name.lower() in taken:
            name = _hashed(prefix, safe, remote, length)
            length += 2  # a clash of hashes: a longer one (never in practice)
        out[remote] = name
        taken.add(name.lower())
    return out
