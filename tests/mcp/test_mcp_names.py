"""The names of imported tools: ``mcp__<server>__<tool>``, safe, unique, at most 64 long."""

from __future__ import annotations

import re

import pytest

from kode.mcp.names import check_server_name, kode_tool_names, server_prefix

SAFE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def test_plain_names_get_the_server_prefix() -> None:
    assert kode_tool_names("github", ["list_issues", "create-pr"]) == {
        "list_issues": "mcp__github__list_issues",
        "create-pr": "mcp__github__create-pr",
    }
    assert server_prefix("github") == "mcp__github__"


def test_unsafe_characters_become_underscores_and_clashes_get_a_hash() -> None:
    names = kode_tool_names("fs", ["files.read", "files_read", "Files_Read", "a/b c", "ünï"])
    assert names["files.read"] == "mcp__fs__files_read"
    # the same name once made safe (providers and the registry ignore case): hashed, stable
    assert re.fullmatch(r"mcp__fs__files_read_[0-9a-f]{6}", names["files_read"])
    assert re.fullmatch(r"mcp__fs__Files_Read_[0-9a-f]{6}", names["Files_Read"])
    assert names["files_read"] != names["Files_Read"]
    assert names["a/b c"] == "mcp__fs__a_b_c"
    assert names["ünï"] == "mcp__fs___n_"
    assert all(SAFE.match(n) for n in names.values())
    assert kode_tool_names("fs", ["files.read", "files_read"]) == {
        k: names[k] for k in ("files.read", "files_read")
    }


def test_long_names_are_shortened_in_the_middle() -> None:
    long_a = "list_pull_request_review_comments_for_repository_" + "x" * 30 + "_with_reactions"
    long_b = long_a.replace("reactions", "emoji")
    names = kode_tool_names("github", [long_a, long_b, "short"])
    a, b = names[long_a], names[long_b]
    assert len(a) == len(b) == 64 and a != b
    assert a.startswith("mcp__github__list_pull_request_revi")
    assert a.endswith("_with_reactions") and b.endswith("x_with_emoji")
    assert re.search(r"_[0-9a-f]{6}_", a)
    assert names["short"] == "mcp__github__short"
    # the longest server name still leaves room
    longest = "s" * 32
    made = kode_tool_names(longest, ["t" * 100])["t" * 100]
    assert len(made) <= 64 and made.startswith(f"mcp__{longest}__t")


@pytest.mark.parametrize("name", ["github", "local-files", "a_b", "A1", "x" * 32])
def test_valid_server_names(name: str) -> None:
    assert check_server_name(name) == name


@pytest.mark.parametrize("name", ["", "git__hub", "_x", "x_", "has space", "dot.ted", "x" * 33, 3])
def test_invalid_server_names(name: object) -> None:
    with pytest.raises(ValueError, match="MCP server"):
        check_server_name(name)
