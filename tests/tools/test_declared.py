"""declare_tool: tools made from a JSON schema, validated before their handler (or client) runs."""

from __future__ import annotations

import sys
from typing import Any

import anyio
import pytest

from kode import Kind, ToolContext, ToolDefinitionError, ToolError, ToolErrorType
from kode.tools.declared import DeclaredTool, declare_tool

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "The file."},
        "lines": {"type": "integer"},
        "ratio": {"type": "number"},
        "follow": {"type": "boolean"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "options": {"type": "object"},
        "mode": {"type": "string", "enum": ["read", "tail"]},
        "note": {"type": ["string", "null"]},
        "anything": {},
    },
    "required": ["path"],
    "additionalProperties": False,
}


async def _echo(arguments: dict[str, Any], ctx: ToolContext[Any]) -> dict[str, Any]:
    return arguments


@pytest.fixture(params=["jsonschema", "builtin"])
def read_file(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> DeclaredTool:
    """The same declared tool validated with jsonschema installed, and without it."""
    if request.param == "builtin":
        monkeypatch.setitem(sys.modules, "jsonschema", None)  # import fails: built-in checks
    return declare_tool("read_file", description="Read a file.", input_schema=SCHEMA, handler=_echo)


def _invalid(tool: DeclaredTool, *problems: str) -> str:
    return (
        f"Invalid arguments for tool '{tool.name}': {'; '.join(problems)}. "
        "Fix the arguments and call the tool again."
    )


def test_valid_arguments_pass_unchanged(read_file: DeclaredTool) -> None:
    arguments = {
        "path": "a.txt",
        "lines": 3,
        "ratio": 0.5,
        "follow": True,
        "tags": ["x"],
        "options": {"k": 1},
        "mode": "tail",
        "note": None,
        "anything": [1, "two"],
    }
    assert read_file.validate(arguments) == arguments
    assert read_file.validate({"path": "a", "ratio": 2}) == {"path": "a", "ratio": 2}
    result = read_file.run_sync(arguments)
    assert not result.is_error and result.details == arguments


@pytest.mark.parametrize(
    ("arguments", "problems"),
    [
        ({}, ["'path' is required but missing"]),
        (
            {"path": "a", "colour": "red"},
            [
                "'colour' is not a parameter of this tool (parameters: path, lines, ratio, "
                "follow, tags, options, mode, note, anything)"
            ],
        ),
        ({"path": 3}, ["'path' should be of type string, got 3"]),
        ({"path": "a", "lines": "3"}, ["'lines' should be of type integer, got \"3\""]),
        ({"path": "a", "lines": True}, ["'lines' should be of type integer, got true"]),
        ({"path": "a", "lines": 2.5}, ["'lines' should be of type integer, got 2.5"]),
        ({"path": "a", "ratio": "x"}, ["'ratio' should be of type number, got \"x\""]),
        ({"path": "a", "follow": 1}, ["'follow' should be of type boolean, got 1"]),
        ({"path": "a", "tags": "x"}, ["'tags' should be of type array, got \"x\""]),
        ({"path": "a", "options": [1]}, ["'options' should be of type object, got [1]"]),
        ({"path": "a", "note": 1}, ["'note' should be of type string or null, got 1"]),
        ({"path": "a", "mode": "write"}, ['\'mode\' should be one of "read", "tail", got "write"']),
        ({"path": None}, ["'path' should be of type string, got null"]),
        (
            {"lines": "x", "follow": "yes"},
            [
                "'lines' should be of type integer, got \"x\"",
                "'follow' should be of type boolean, got \"yes\"",
                "'path' is required but missing",
            ],
        ),
    ],
)
def test_bad_arguments_are_refused_with_every_problem(
    read_file: DeclaredTool, arguments: dict[str, Any], problems: list[str]
) -> None:
    result = read_file.run_sync(arguments)
    assert result.is_error and result.error_type is ToolErrorType.INVALID_TOOL_PARAMS
    assert result.text == _invalid(read_file, *problems)
    with pytest.raises(ToolError) as info:
        read_file.validate(arguments)
    assert info.value.message == result.text
    assert info.value.type is ToolErrorType.INVALID_TOOL_PARAMS


def test_json_string_containers_are_decoded(read_file: DeclaredTool) -> None:
    assert read_file.validate({"path": "a", "tags": '["x", "y"]', "options": ' {"k": 1}'}) == {
        "path": "a",
        "tags": ["x", "y"],
        "options": {"k": 1},
    }
    # a string that is not JSON stays a string, and is refused as one
    assert read_file.run_sync({"path": "a", "tags": "[x"}).text == _invalid(
        read_file, "'tags' should be of type array, got \"[x\""
    )


def test_null_for_an_optional_parameter_is_left_out(read_file: DeclaredTool) -> None:
    assert read_file.validate({"path": "a", "lines": None, "tags": None, "note": None}) == {
        "path": "a",
        "note": None,  # null is one of its types: kept
    }


def test_the_arguments_may_come_as_json_text_or_nothing(read_file: DeclaredTool) -> None:
    assert read_file.validate('{"path": "a"}') == {"path": "a"}
    optional = declare_tool("ping", handler=_echo)
    assert optional.validate(None) == {} and optional.validate("  ") == {}
    assert optional.run_sync("{oops").text == (
        "Invalid arguments for tool 'ping': the arguments are not valid JSON (Expecting "
        "property name enclosed in double quotes: line 1 column 2 (char 1)). Send a JSON object."
    )
    assert optional.run_sync("[1, 2]").text == (
        "Invalid arguments for tool 'ping': expected a JSON object with the parameters by "
        "name, got list [1, 2]."
    )


def test_an_open_schema_accepts_unknown_keys() -> None:
    tool = declare_tool(
        "open", input_schema={"properties": {"a": {"type": "string"}}}, handler=_echo
    )
    assert tool.input_schema == {"type": "object", "properties": {"a": {"type": "string"}}}
    assert tool.validate({"a": "x", "extra": 1}) == {"a": "x", "extra": 1}


def test_many_problems_are_cut_after_eight(read_file: DeclaredTool) -> None:
    tool = declare_tool(
        "many",
        input_schema={
            "type": "object",
            "properties": {f"p{i}": {"type": "integer"} for i in range(10)},
            "required": [f"p{i}" for i in range(10)],
        },
    )
    text = tool.run_sync({}).text
    assert text.endswith(
        "'p7' is required but missing; and 2 more. Fix the arguments and call the tool again."
    )
    assert "'p8'" not in text


def test_jsonschema_checks_what_the_builtin_checks_do_not() -> None:
    pytest.importorskip("jsonschema")
    tool = declare_tool(
        "nested",
        input_schema={
            "type": "object",
            "properties": {
                "limit": {"type": "integer", "minimum": 1},
                "user": {"type": "object", "properties": {"id": {"type": "integer"}}},
            },
        },
    )
    assert tool.run_sync({"limit": 0, "user": {"id": "x"}}).text == _invalid(
        tool, "'limit' 0 is less than the minimum of 1", "'user.id' 'x' is not of type 'integer'"
    )


# --- handlers ---------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_the_handler_gets_the_validated_arguments_and_a_context() -> None:
    seen: list[tuple[dict[str, Any], ToolContext[Any]]] = []

    async def handler(arguments: dict[str, Any], ctx: ToolContext[Any]) -> str:
        seen.append((arguments, ctx))
        return f"{arguments['n'] * 2}"

    tool = declare_tool(
        "double",
        input_schema={"type": "object", "properties": {"n": {"type": "integer"}}},
        handler=handler,
        kind="think",
    )
    ctx = ToolContext(tool_name="double")
    result = await tool.run({"n": 21, "x": None}, ctx)
    assert result.text == "42"
    assert seen == [({"n": 21, "x": None}, ctx)]
    assert tool.kind is Kind.THINK and tool.is_async
    assert await tool(n=2) == "4"  # calling the tool calls the handler
    with pytest.raises(TypeError, match="tool 'double' takes its arguments by keyword only"):
        tool(2)


@pytest.mark.anyio
async def test_handler_errors_become_error_results() -> None:
    async def refuse(arguments: dict[str, Any], ctx: ToolContext[Any]) -> str:
        raise ToolError("No such ticket; list tickets first.", type="file_not_found")

    async def crash(arguments: dict[str, Any], ctx: ToolContext[Any]) -> str:
        raise OSError("disk")

    async def slow(arguments: dict[str, Any], ctx: ToolContext[Any]) -> str:
        await anyio.sleep(10)
        return ""

    refused = await declare_tool("ticket", handler=refuse).run({})
    assert (refused.is_error, refused.error_type, refused.text) == (
        True,
        ToolErrorType.FILE_NOT_FOUND,
        "No such ticket; list tickets first.",
    )
    crashed = await declare_tool("crash", handler=crash).run({})
    assert (crashed.error_type, crashed.text) == (
        ToolErrorType.EXECUTION_FAILED,
        "Tool 'crash' failed: OSError: disk",
    )
    timed_out = await declare_tool("slow", handler=slow, timeout=0.05).run({})
    assert (timed_out.error_type, timed_out.text) == (
        ToolErrorType.TIMEOUT,
        "Tool 'slow' timed out after 0.05 s.",
    )


def test_a_declared_tool_has_schemas_in_every_dialect() -> None:
    schema = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    tool = declare_tool(
        "search", description="Search.", input_schema=schema, output_schema={"type": "array"}
    )
    assert tool.schema("anthropic") == {
        "name": "search",
        "description": "Search.",
        "input_schema": schema,
    }
    assert tool.schema("openai")["function"]["name"] == "search"
    assert tool.schema("gemini")["name"] == "search"
    assert tool.output_schema == {"type": "array"}
    schema["properties"]["q"]["type"] = "integer"  # the caller's dict is copied, not kept
    assert tool.input_schema["properties"]["q"]["type"] == "string"
    assert declare_tool("x").output_schema is None


# --- bad declarations -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "problems"),
    [
        (
            {"name": "bad name"},
            ["tool name 'bad name' is invalid: use 1-64 letters, digits, '_' or '-'"],
        ),
        ({"name": ""}, ["tool name '' is invalid: use 1-64 letters, digits, '_' or '-'"]),
        (
            {"input_schema": {"type": "array"}},
            ["input_schema must describe an object, got type 'array'"],
        ),
        ({"input_schema": ["a"]}, ["input_schema must be a JSON schema object (a dict), got list"]),
        ({"input_schema": {"properties": []}}, ["input_schema.properties must be an object"]),
        (
            {"input_schema": {"properties": {"a": "string"}}},
            ["input_schema.properties 'a' must be schema objects"],
        ),
        (
            {"input_schema": {"required": "a"}},
            ["input_schema.required must be a list of property names, got 'a'"],
        ),
        (
            {"kind": "explode"},
            [
                "kind 'explode' is not one of read, edit, delete, move, search, execute, think, "
                "fetch, other"
            ],
        ),
        ({"handler": 3}, ["handler must be an async function, got int"]),
        ({"timeout": 0}, ["timeout must be a positive number of seconds or None, got 0"]),
        ({"timeout": True}, ["timeout must be a positive number of seconds or None, got True"]),
        ({"groups": "group:web"}, ["groups must be a list of names, got the string 'group:web'"]),
        ({"description": None}, ["description must be a string, got NoneType"]),
    ],
)
def test_bad_declarations_are_definition_errors(
    options: dict[str, Any], problems: list[str]
) -> None:
    name = options.pop("name", "tool")
    with pytest.raises(ToolDefinitionError) as info:
        declare_tool(name, **options)
    assert info.value.problems == problems
    assert info.value.qualname == name
    assert str(info.value) == f"{name}: {'; '.join(problems)}"


def test_every_problem_of_a_declaration_is_listed_at_once() -> None:
    with pytest.raises(ToolDefinitionError) as info:
        declare_tool("no good", input_schema={"type": "string"}, kind="nope", timeout=-1)
    assert len(info.value.problems) == 4


def test_an_invalid_json_schema_is_a_definition_error() -> None:
    pytest.importorskip("jsonschema")
    with pytest.raises(ToolDefinitionError, match=r"^typo: its input schema is invalid: 'strng'"):
        declare_tool("typo", input_schema={"properties": {"a": {"type": "strng"}}})


def test_groups_are_normalised() -> None:
    assert declare_tool("g", groups=[" Group:Web ", "fs"]).groups == ("group:web", "fs")


def test_parameter_aliases() -> None:
    tool = declare_tool(
        "fs_read",
        input_schema={
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
            "additionalProperties": False,
        },
        handler=_echo,
        param_aliases={"file_path": "path"},
    )
    assert list(tool.input_schema["properties"]) == ["path"]  # the model sees one name
    assert tool.validate({"file_path": "a.txt"}) == {"path": "a.txt"}
    assert tool.validate({"path": "b.txt"}) == {"path": "b.txt"}
    assert tool.run_sync({"file_path": "a", "path": "b"}).text == _invalid(
        tool, "'file_path' and 'path' are the same parameter; send one"
    )
    with pytest.raises(ToolDefinitionError) as info:
        declare_tool(
            "bad",
            input_schema={"properties": {"path": {"type": "string"}, "p": {}}},
            param_aliases={"file": "nope", "p": "path", "x": 3},  # type: ignore[dict-item]
        )
    assert info.value.problems == [
        "param_aliases maps 'file' to 'nope', which is not a parameter",
        "param_aliases maps 'p', which is itself a parameter",
        "param_aliases maps 'x' to 3: use strings",
    ]
