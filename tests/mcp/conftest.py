"""Fixtures for the MCP tests: tool modules and servers written to tmp_path, a live HTTP server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kode.extras import install_hint

pytest.importorskip("mcp", reason=f"the MCP tests need the mcp extra: {install_hint('mcp')}")

from mcp_peers import KODE_TOOLS, SDK_SERVER, HttpServer, free_port, write


@pytest.fixture
def marks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A directory the test servers touch files in (inherited through the environment)."""
    path = tmp_path / "marks"
    path.mkdir()
    monkeypatch.setenv("KODE_TEST_MARKS", str(path))
    return path


@pytest.fixture
def kode_tools(tmp_path: Path, marks: Path) -> Path:
    """A module of kode tools, written to ``tmp_path/served_tools.py``."""
    return write(tmp_path / "served_tools.py", KODE_TOOLS)


@pytest.fixture
def sdk_server(tmp_path: Path, marks: Path) -> Path:
    """A script serving tools with the official SDK's MCPServer over stdio."""
    return write(tmp_path / "sdk_server.py", SDK_SERVER)


@pytest.fixture
def http_server(kode_tools: Path, tmp_path: Path) -> Iterator[str]:
    """`kode mcp serve --http` on a free loopback port; yields its URL."""
    server = HttpServer(kode_tools, free_port())
    try:
        yield server.start()
    finally:
        server.stop()
