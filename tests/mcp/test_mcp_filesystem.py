"""The published filesystem server (``@modelcontextprotocol/server-filesystem``, run with node).

Every one of its tools keeps OpenAI strict mode once imported, in the form the server sends
today (open objects) and in the closed form older releases and other zod-based servers send
(``additionalProperties: false`` on every object), where an unknown key gets kode's own message.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from npm_servers import npm_server

from kode import ToolRegistry, ToolResult
from kode.mcp import connect
from kode.mcp.schemas import clean_remote_schema
from kode.tools.declared import declare_tool

pytestmark = pytest.mark.anyio


def closed(node: Any) -> Any:
    """`node` with ``additionalProperties: false`` on every object, as zod-to-json-schema wrote."""
    if isinstance(node, dict):
        out = {k: closed(v) for k, v in node.items()}
        if out.get("type") == "object":
            out["additionalProperties"] = False
        return out
    if isinstance(node, list):
        return [closed(v) for v in node]
    return node


async def test_every_filesystem_tool_keeps_strict_mode(tmp_path: Path) -> None:
    command = [npm_server("mcp-server-filesystem"), str(tmp_path)]
    reg = ToolRegistry("fs")
    async with connect("fs", command=command, registry=reg) as server:
        assert len(server.tools) == 14, server.skipped
        for name, remote_name in server.tools.items():
            tool = reg.get(name)
            assert tool.schema("openai")["function"]["strict"] is True, name

            raw = server.remote_tools[remote_name].input_schema
            shut = declare_tool(
                "t", description="x", input_schema=clean_remote_schema(closed(copy.deepcopy(raw)))
            )
            assert shut.input_schema["additionalProperties"] is False
            assert shut.schema("openai")["function"]["strict"] is True, name
            refused = shut.prepare({"extra": 1})
            assert isinstance(refused, ToolResult)
            text = refused.content[0].text  # type: ignore[union-attr]
            assert "'extra' is not a parameter of this tool" in text, (name, text)
            assert "should not be valid" not in text


def test_a_closed_object_stays_closed() -> None:
    schema = {
        "type": "object",
        "properties": {
            "path": {"type": "string"},
            "open": {"type": "object", "properties": {}, "additionalProperties": True},
            "never": False,
        },
        "required": ["path"],
        "additionalProperties": False,
    }
    cleaned = clean_remote_schema(schema)
    assert cleaned["additionalProperties"] is False
    assert cleaned["properties"]["open"]["additionalProperties"] is True
    assert cleaned["properties"]["never"] == {
        "not": {}
    }  # other boolean schemas still become objects
    plain = {**schema, "properties": {"path": {"type": "string"}}}
    tool = declare_tool("t", description="x", input_schema=clean_remote_schema(plain))
    assert tool.schema("openai")["function"]["strict"] is True
    result = tool.prepare({"path": "a", "extra": 1})
    assert "'extra' is not a parameter of this tool (parameters: path)" in result.content[0].text  # type: ignore[union-attr]
