"""`Tool.prepare`, the one way input is checked, and the public ways to make a tool."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kode import Tool, ToolContext, ToolDefinitionError, ToolErrorType, define_tool
from kode.tools import PreparedCall
from kode.tools.declared import DeclaredTool
from kode.tools.services import SUBAGENTS, TODOS, ServiceKey
from kode.tools.validation import MAX_DESCRIBED_ERRORS, MAX_INPUT_DEPTH, MAX_INPUT_VALUES


def add(a: int, b: int = 1) -> int:
    """Add two numbers.

    Args:
        a: The first.
        b: The second.
    """
    return a + b


@pytest.fixture
def adder() -> Tool[..., Any]:
    return Tool.from_function(add)


def test_prepare_gives_a_call_or_the_result_to_send(adder: Tool[..., Any]) -> None:
    call = adder.prepare({"a": "2"})
    assert isinstance(call, PreparedCall)
    assert call.tool is adder and call.arguments == {"a": 2, "b": 1}
    assert not call.takes_context
    refused = adder.prepare({"a": "two"})
    assert not isinstance(refused, PreparedCall)
    assert refused.is_error and refused.error_type is ToolErrorType.INVALID_TOOL_PARAMS
    assert "'a' should be a valid integer" in refused.text
    assert isinstance(adder.prepare('{"a": 3}'), PreparedCall)
    assert adder.prepare("not json").text.startswith("Invalid arguments for tool 'add'")


@pytest.mark.anyio
async def test_a_prepared_call_runs(adder: Tool[..., Any]) -> None:
    call = adder.prepare({"a": 2, "b": 5})
    assert isinstance(call, PreparedCall)
    assert (await call.execute()).text == "7"


def test_from_function_does_not_register() -> None:
    from kode import registry

    made = Tool.from_function(add, name="add_unregistered", kind="read")
    assert made.name == "add_unregistered" and made.kind.value == "read"
    assert "add_unregistered" not in registry
    assert made(2, 3) == 5
    assert made.input_schema["properties"]["a"]["description"] == "The first."
    with pytest.raises(ToolDefinitionError, match="no type annotation"):
        Tool.from_function(lambda x: x, name="bad")


@pytest.mark.anyio
async def test_from_schema_makes_a_tool_through_the_constructor() -> None:
    async def handler(arguments: dict[str, Any], ctx: ToolContext[Any]) -> str:
        return f"hi {arguments['who']} from {ctx.tool_name}"

    made = Tool.from_schema(
        "greet",
        description="Greet someone.",
        input_schema={"type": "object", "properties": {"who": {"type": "string"}}},
        handler=handler,
    )
    assert isinstance(made, DeclaredTool) and isinstance(made, Tool)
    assert made.context_param == "ctx" and made.spec is None
    assert made.output_schema is None
    assert (await made.run({"who": "Ada"})).text == "hi Ada from greet"
    refused = made.prepare({"who": 3})
    assert not isinstance(refused, PreparedCall)
    assert "'who' should be of type string" in refused.text


# --- input that used to be reported as the tool failing -------------------------------------


@define_tool(registry=None)
def anything(
    data: Any = None, text: str = "", items: list[int | str | dict[str, int]] | None = None
) -> str:
    """Take anything."""
    return "ok"


def test_json_nested_too_deeply_is_invalid_input_not_a_failure() -> None:
    deep = "[" * 5000 + "]" * 5000
    result = anything.prepare('{"data": ' + deep + "}")
    assert not isinstance(result, PreparedCall)
    assert result.error_type is ToolErrorType.INVALID_TOOL_PARAMS
    assert "nested more than 128 levels deep" in result.text


def test_an_integer_too_long_to_show_is_invalid_input_not_a_failure() -> None:
    result = anything.prepare({"text": 10**5000})
    assert not isinstance(result, PreparedCall)
    assert result.error_type is ToolErrorType.INVALID_TOOL_PARAMS
    assert "'text' should be a valid string" in result.text
    too_long = anything.prepare('{"text": ' + "9" * 5000 + "}")
    assert not isinstance(too_long, PreparedCall)
    assert too_long.error_type is ToolErrorType.INVALID_TOOL_PARAMS


def test_very_many_errors_are_described_from_a_trimmed_copy() -> None:
    bad = {"items": [None] * 15_000}
    started = time.perf_counter()
    result = anything.prepare(bad)
    elapsed = time.perf_counter() - started
    assert not isinstance(result, PreparedCall)
    assert "'items[0]'" in result.text
    assert "(45,000 errors in all.)" in result.text
    # Describing 60,000 errors one by one took seconds; the trimmed copy has a few dozen.
    assert elapsed < 2.0
    few = anything.prepare({"items": [None, 1]})
    assert not isinstance(few, PreparedCall)
    assert "errors in all" not in few.text and MAX_DESCRIBED_ERRORS > 3


@pytest.mark.parametrize(
    "raw",
    [
        {"items": [None] * MAX_INPUT_VALUES},
        {"items": [1] * MAX_INPUT_VALUES},
        {"data": [[1, 2, 3]] * (MAX_INPUT_VALUES // 4)},
        json.dumps({"data": {str(i): i for i in range(MAX_INPUT_VALUES)}}),
    ],
    ids=["invalid-list", "valid-list", "nested", "json-object"],
)
def test_input_with_too_many_values_is_refused_before_validation(raw: Any) -> None:
    started = time.perf_counter()
    result = anything.prepare(raw)
    elapsed = time.perf_counter() - started
    assert not isinstance(result, PreparedCall)
    assert result.error_type is ToolErrorType.INVALID_TOOL_PARAMS
    assert f"more than {MAX_INPUT_VALUES:,} values" in result.text
    assert elapsed < 1.0  # counting stops at the cap; generous for a shared machine


def test_input_just_under_the_cap_is_validated() -> None:
    ok = anything.prepare({"items": [1] * (MAX_INPUT_VALUES - 10)})
    assert isinstance(ok, PreparedCall)
    declared = Tool.from_schema(
        "take", input_schema={"type": "object", "properties": {"xs": {"type": "array"}}}
    )
    assert isinstance(declared.prepare({"xs": [1] * (MAX_INPUT_VALUES - 10)}), PreparedCall)
    refused = declared.prepare({"xs": [1] * MAX_INPUT_VALUES})
    assert not isinstance(refused, PreparedCall)
    assert f"more than {MAX_INPUT_VALUES:,} values" in refused.text


def _lists(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize("kind", ["function", "declared"])
def test_input_deeper_than_the_limit_is_refused_before_validation(kind: str) -> None:
    tool = (
        anything
        if kind == "function"
        else Tool.from_schema("take", input_schema={"type": "object", "properties": {}})
    )
    # the arguments object is level 1
    assert isinstance(tool.prepare({"data": _lists(MAX_INPUT_DEPTH - 1)}), PreparedCall)
    for raw in (
        {"data": _lists(MAX_INPUT_DEPTH)},
        {"data": {"a": _lists(MAX_INPUT_DEPTH)}},
        {"data": _lists(600)},
        '{"data": ' + "[" * 990 + "1" + "]" * 990 + "}",
        '{"data": ' + "[" * 5000 + "]" * 5000 + "}",
    ):
        result = tool.prepare(raw)
        assert not isinstance(result, PreparedCall)
        assert result.error_type is ToolErrorType.INVALID_TOOL_PARAMS
        assert f"nested more than {MAX_INPUT_DEPTH} levels deep" in result.text


@pytest.mark.parametrize(
    "text",
    [
        '{"data": "\\ud800 lone"}',  # an escaped lone surrogate: json reads it
        '{"data": NaN, "text": "x"}',
        '{"data": 1e400}',
        '{"data": 123456789012345678901234567890}',
        '{"data": [1, 2.5, null, true, {"k": "\\u00e9"}], "data": "last wins"}',
        ' {"text": "\\n"} ',
        b'{"data": [1]}',
        '{"data": 01}',
        '{"data": 1,}',
        '{"text": "x\ty"}',
    ],
)
def test_json_text_means_what_json_loads_reads(text: str | bytes) -> None:
    """JSON text is read as `json.loads` reads it (whichever parser does the work)."""
    from_text = anything.prepare(text)
    try:
        parsed = json.loads(text)
    except ValueError as exc:
        assert not isinstance(from_text, PreparedCall)
        assert from_text.text == (
            "Invalid arguments for tool 'anything': the arguments are not valid JSON "
            f"({exc}). Send a JSON object."
        )
        return
    from_dict = anything.prepare(parsed)
    assert isinstance(from_text, PreparedCall) and isinstance(from_dict, PreparedCall)
    assert repr(from_text.arguments) == repr(from_dict.arguments)


def test_short_json_text_is_within_both_input_limits() -> None:
    """Text of up to 256 characters is not counted: it cannot pass either limit."""
    deepest = '{"data":' + "[" * (MAX_INPUT_DEPTH - 1) + "]" * (MAX_INPUT_DEPTH - 1) + "}"
    assert isinstance(anything.prepare(deepest), PreparedCall)
    too_deep = '{"data":' + "[" * MAX_INPUT_DEPTH + "]" * MAX_INPUT_DEPTH + "}"
    assert len(too_deep) > 2 * MAX_INPUT_DEPTH  # so it is counted, and refused
    refused = anything.prepare(too_deep)
    assert not isinstance(refused, PreparedCall)
    assert f"nested more than {MAX_INPUT_DEPTH} levels deep" in refused.text


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
        lambda inner: st.lists(inner, max_size=40) | st.dictionaries(st.text(max_size=3), inner),
        max_leaves=400,
    )
)
def test_no_input_escapes_prepare(value: Any) -> None:
    for raw in ({"items": value}, {"data": value, "text": value}, value):
        result = anything.prepare(raw)
        if not isinstance(result, PreparedCall):
            assert result.error_type is ToolErrorType.INVALID_TOOL_PARAMS
            json.dumps(result.text)


# --- typed service keys --------------------------------------------------------------------------


def test_service_keys_check_types_with_clear_errors() -> None:
    services: dict[str, Any] = {}
    assert TODOS.get(services) is None
    todos = TODOS.get_or_set(services, list)
    assert services["todos"] is todos
    services["agent"] = "not a runner"
    with pytest.raises(TypeError, match=r"services\['agent'\] must be a SubagentRunner"):
        SUBAGENTS.get(services)
    key: ServiceKey[int] = ServiceKey("n", int)
    with pytest.raises(TypeError, match=r"services\['n'\] must be a int, got str"):
        key.set(services, "x")  # type: ignore[arg-type]
    assert repr(key) == "ServiceKey('n', int)"


def test_the_refusal_texts_of_one_and_of_several_bad_fields() -> None:
    """The words the model reads, whole: one bad field, a nested one, several at once."""

    @define_tool(registry=None)
    def place(count: int, items: list[dict[str, int]], note: str = "") -> str:
        """Place an order."""
        return note

    tail = " Fix the arguments and call the tool again."
    cases: list[tuple[Any, str]] = [
        (
            {"count": "twenty", "items": []},
            "'count' should be a valid integer, unable to parse string as an integer, "
            'got "twenty".',
        ),
        ({"items": []}, "'count' is required but missing."),
        (
            {"count": 1, "items": [], "colour": "red"},
            "'colour' is not a parameter of this tool (parameters: count, items, note).",
        ),
        (
            {"count": 1, "items": [{"a": "x"}]},
            "'items[0].a' should be a valid integer, unable to parse string as an integer, "
            'got "x".',
        ),
        (
            {"count": "x", "note": 5},
            "'count' should be a valid integer, unable to parse string as an integer, "
            "got \"x\"; 'items' is required but missing; 'note' should be a valid string, "
            "got 5.",
        ),
    ]
    for raw, said in cases:
        result = place.prepare(raw)
        assert not isinstance(result, PreparedCall)
        assert result.text == f"Invalid arguments for tool 'place': {said}{tail}", raw
        assert result.error_type == ToolErrorType.INVALID_TOOL_PARAMS
