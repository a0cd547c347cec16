"""`kode mcp serve --skills`: the ``skill`` tool and each skill's files as ``skill://``
resources, through the official MCP client over stdio, with `kode mcp serve` a real
subprocess."""

from __future__ import annotations

import base64
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import mcp.types as types
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError
from mcp_peers import serve_command, subprocess_env, write

pytestmark = pytest.mark.anyio

SKILL = """\
---
name: release-notes
description: Write the release notes of a version from the merged pull requests.
---
# Release notes

1. Run `scripts/collect.sh VERSION` to list the merged pull requests.
2. Group them under Added, Changed and Fixed.
"""
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe"


@pytest.fixture
def served(tmp_path: Path) -> Path:
    """A tools module, a folder of skills (with a link out of it), an empty KODE_HOME."""
    folder = tmp_path / "skills" / "release-notes"
    (folder / "scripts").mkdir(parents=True)
    (folder / "SKILL.md").write_text(SKILL)
    (folder / "scripts" / "collect.sh").write_text("#!/bin/sh\ngit log --merges\n")
    (folder / "logo.png").write_bytes(PNG)
    (tmp_path / "secret.txt").write_text("the launch codes")
    (folder / "secret").symlink_to(tmp_path / "secret.txt")
    (tmp_path / "home").mkdir()
    return write(
        tmp_path / "few_tools.py",
        '''
        from kode import define_tool

        @define_tool
        def add(a: int, b: int) -> int:
            """Add two numbers."""
            return a + b
        ''',
    )


@asynccontextmanager
async def session_of(
    module: Path, *extra: str
) -> AsyncIterator[tuple[ClientSession, types.InitializeResult]]:
    command = serve_command(module, *extra)
    env = {**subprocess_env(), "KODE_HOME": str(module.parent / "home")}
    params = StdioServerParameters(
        command=command[0], args=command[1:], cwd=str(module.parent), env=env
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        started = await session.initialize()
        yield session, started


def text(result: types.CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))


async def test_skills_are_a_tool_resources_and_instructions(served: Path) -> None:
    async with session_of(served, "--tools", "add", "--skills", "./skills") as (session, started):
        assert started.instructions is not None
        assert (
            "- release-notes: Write the release notes of a version from the merged pull "
            "requests." in started.instructions
        )
        assert "skill://<name>/SKILL.md" in started.instructions
        capabilities = session.server_capabilities
        assert capabilities is not None and capabilities.resources is not None

        tools = {t.name for t in (await session.list_tools()).tools}
        assert tools == {"add", "skill"}
        loaded = await session.call_tool("skill", {"name": "release-notes"})
        assert not loaded.is_error
        shown = text(loaded)
        assert shown.startswith("# Skill: release-notes\n")
        assert "- scripts/collect.sh" in shown
        assert "2. Group them under Added, Changed and Fixed." in shown
        missing = await session.call_tool("skill", {"name": "changelog"})
        assert missing.is_error
        assert "No skill named 'changelog' is available" in text(missing)
        assert "available: release-notes" in text(missing)

        listed = {r.uri: r for r in (await session.list_resources()).resources}
        assert set(listed) == {
            "skill://release-notes/SKILL.md",
            "skill://release-notes/logo.png",
            "skill://release-notes/scripts/collect.sh",
            "skill://release-notes/secret",  # listed as the folder holds it; never read
        }
        main = listed["skill://release-notes/SKILL.md"]
        assert main.mime_type == "text/markdown"
        assert main.description == (
            "Write the release notes of a version from the merged pull requests."
        )

        read = await session.read_resource("skill://release-notes/SKILL.md")
        assert isinstance(read, types.ReadResourceResult)
        body = read.contents[0]
        assert isinstance(body, types.TextResourceContents) and body.text == SKILL
        script = await session.read_resource("skill://release-notes/scripts/collect.sh")
        assert isinstance(script, types.ReadResourceResult)
        assert isinstance(script.contents[0], types.TextResourceContents)
        assert script.contents[0].text.startswith("#!/bin/sh")
        image = await session.read_resource("skill://release-notes/logo.png")
        assert isinstance(image, types.ReadResourceResult)
        blob = image.contents[0]
        assert isinstance(blob, types.BlobResourceContents)
        assert blob.mime_type == "image/png" and base64.b64decode(blob.blob) == PNG

        # Reads stay inside the skill's folder: a link out of it, a path climbing out, an
        # unknown skill.
        for uri, said in [
            ("skill://release-notes/secret", "is not a file of skill 'release-notes'"),
            ("skill://release-notes/..%2F..%2Fsecret.txt", "is not a file of skill"),
            ("skill://release-notes/../../secret.txt", "is not a file of skill"),
            ("skill://changelog/SKILL.md", "names no skill served here"),
        ]:
            with pytest.raises(MCPError) as caught:
                await session.read_resource(uri)
            assert said in caught.value.error.message
            assert "launch codes" not in caught.value.error.message


async def test_without_skills_nothing_is_offered(served: Path) -> None:
    async with session_of(served, "--tools", "add") as (session, started):
        assert not started.instructions
        capabilities = session.server_capabilities
        assert capabilities is not None and capabilities.resources is None
        assert [t.name for t in (await session.list_tools()).tools] == ["add"]


def test_a_skills_entry_that_is_no_folder_is_refused(served: Path) -> None:
    done = subprocess.run(
        serve_command(served, "--skills", "./no-such-folder"),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=served.parent,
        env={**subprocess_env(), "KODE_HOME": str(served.parent / "home")},
        check=False,
    )
    assert done.returncode == 2
    assert "kode mcp serve: --skills: entry './no-such-folder': no folder at" in done.stderr
    assert done.stdout == ""
