"""One way each: `Tool.from_function` makes a tool, `define_tool` is it plus registration."""

from __future__ import annotations

import inspect

from kode import Tool, ToolRegistry, define_tool
from kode.tools.declared import declare_tool


def _options(fn: object) -> dict[str, object]:
    found = {}
    for name, parameter in inspect.signature(fn).parameters.items():  # type: ignore[arg-type]
        if parameter.kind is inspect.Parameter.KEYWORD_ONLY:
            found[name] = parameter.default
    return found


def test_define_tool_takes_from_function_s_options_and_where_to_register() -> None:
    made = _options(Tool.from_function)
    registering = _options(define_tool)
    assert set(registering) - set(made) == {"registry", "replace"}
    assert set(made) <= set(registering)
    for name, default in made.items():
        assert registering[name] == default, name


def test_from_schema_takes_declare_tool_s_options() -> None:
    assert _options(Tool.from_schema) == _options(declare_tool)


def test_a_declared_tool_may_be_idempotent_and_deferred_as_a_defined_one() -> None:
    for make in (declare_tool, Tool.from_schema):
        made = make("lookup", description="Look up.", idempotent=True, defer_loading=True)
        assert (made.idempotent, made.defer_loading) == (True, True)
    plain = declare_tool("lookup", description="Look up.")
    assert (plain.idempotent, plain.defer_loading) == (False, False)


def test_from_function_sets_what_define_tool_sets_and_registers_nothing() -> None:
    tools = ToolRegistry()

    def ping(times: int = 1) -> str:
        """Answer pong."""
        return "pong" * times

    made = Tool.from_function(
        ping, idempotent=True, retries=3, defer_loading=True, transient=(OSError,)
    )
    registered = define_tool(
        ping,
        registry=tools,
    )
    assert (made.idempotent, made.retries, made.defer_loading) == (True, 3, True)
    assert made.runs is not made.fn  # transient= wraps the run in retries
    assert made.input_schema == registered.input_schema
    assert tools.get("ping") is registered


def test_from_function_sees_a_class_defined_beside_the_function() -> None:
    """A string annotation naming a class of the defining function resolves, as it does for
    `define_tool` (the defining frames are read while the tool is made)."""
    from dataclasses import dataclass

    @dataclass
    class Point:
        x: int

    def where(point: Point) -> int:
        """Where it is."""
        return point.x

    assert Tool.from_function(where).input_schema["required"] == ["point"]
