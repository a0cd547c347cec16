"""`define_tool` options, the `tool` alias, methods, and running in sync code and notebooks."""

from __future__ import annotations

import inspect
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from pydantic import BaseModel

from kode import Kind, Tool, ToolDefinitionError, ToolRegistry, define_tool, run_sync, tool


def test_options_are_kept_on_the_tool() -> None:
    @define_tool(
        registry=None,
        name="rm_file",
        description="Delete one file.",
        kind="delete",
        groups=["group:fs", " Group:Files "],
        optional=True,
        timeout=3,
        requires_approval=True,
    )
    def remove(path: str) -> str:
        """Ignored docstring."""
        return path

    assert remove.name == "rm_file"
    assert remove.description == "Delete one file."
    assert remove.kind is Kind.DELETE and remove.kind.is_mutating
    assert remove.groups == ("group:fs", "group:files")
    assert remove.optional is True
    assert remove.timeout == 3.0
    assert remove.requires_approval is True
    assert remove.schema("anthropic")["description"] == "Delete one file."


def test_defaults() -> None:
    @define_tool(registry=None)
    def plain(x: int) -> int:
        """Plain."""
        return x

    assert (plain.kind, plain.groups, plain.optional, plain.timeout) == (
        Kind.OTHER,
        (),
        False,
        None,
    )
    assert plain.requires_approval is None and plain.run_in_thread is True
    assert not Kind.READ.is_mutating and Kind.EXECUTE.is_mutating


def test_tool_alias_is_define_tool() -> None:
    assert tool is define_tool

    @tool(registry=None)
    def short(x: int) -> int:
        """Short."""
        return x

    assert isinstance(short, Tool)


def test_all_option_problems_are_reported_together() -> None:
    def f(x: int) -> int:
        """F."""
        return x

    with pytest.raises(ToolDefinitionError) as info:
        define_tool(
            f, registry=None, name="bad name!", kind="destroy", groups="group:fs", timeout=-1
        )
    problems = info.value.problems
    assert info.value.qualname.endswith("f")
    assert any("tool name 'bad name!' is invalid" in p for p in problems)
    assert any("kind 'destroy' is not one of read, edit" in p for p in problems)
    assert any("groups must be a list of names" in p for p in problems)
    assert any("timeout must be a positive number" in p for p in problems)


def test_lambda_needs_a_name() -> None:
    with pytest.raises(ToolDefinitionError, match=r"tool name '<lambda>' is invalid.*pass name="):
        define_tool(lambda x: x, registry=None)


def test_a_callable_object_or_partial_without_a_name_is_named_in_the_error() -> None:
    import functools

    class Adder:
        def __call__(self, x: int) -> int:
            return x

    with pytest.raises(ToolDefinitionError) as info:
        define_tool(Adder(), registry=None)
    assert info.value.qualname.endswith("<locals>.Adder object")
    assert info.value.problems == ["it has no __name__ to name the tool after: pass name="]

    def power(base: int, exponent: int) -> int:
        return base**exponent

    with pytest.raises(ToolDefinitionError) as info:
        define_tool(functools.partial(power, exponent=2), registry=None)
    assert info.value.qualname == (
        "partial(test_a_callable_object_or_partial_without_a_name_is_named_in_the_error"
        ".<locals>.power)"
    )
    assert define_tool(Adder(), name="adder", registry=None).run_sync({"x": 1}).text == "1"


def test_not_a_function() -> None:
    with pytest.raises(ToolDefinitionError, match="define_tool needs a function, got int"):
        define_tool(3, registry=None)  # type: ignore[call-overload]


class Counter:
    def __init__(self) -> None:
        self.total = 0

    def add(self, amount: int) -> int:
        """Add to the counter.

        Args:
            amount: How much to add.
        """
        self.total += amount
        return self.total

    @staticmethod
    def reset_value(default: int = 0) -> int:
        """The value a reset gives."""
        return default


def test_bound_methods_are_tools_without_self() -> None:
    counter = Counter()
    add = define_tool(counter.add, registry=None)
    assert list(add.input_schema["properties"]) == ["amount"]
    assert add.run_sync({"amount": "2"}).text == "2"
    assert add(3) == 5 and counter.total == 5
    assert add.description == "Add to the counter."


def test_staticmethods_are_tools() -> None:
    reset = define_tool(Counter.reset_value, registry=None)
    assert reset.run_sync({}).text == "0"


def test_methods_in_a_class_body_are_refused_with_advice() -> None:
    with pytest.raises(ToolDefinitionError) as info:

        class Bad:
            @define_tool(registry=None)
            def method(self, x: int) -> int:
                """M."""
                return x

    message = str(info.value)
    assert message.startswith(
        "test_methods_in_a_class_body_are_refused_with_advice.<locals>.Bad.method:"
    )
    assert "define_tool(instance.method)" in message


def test_async_bound_method() -> None:
    class Service:
        async def ping(self, n: int) -> str:
            """Ping."""
            await anyio.lowlevel.checkpoint()
            return "pong" * n

    ping = define_tool(Service().ping, registry=None)
    assert ping.is_async
    assert ping.run_sync({"n": 2}).text == "pongpong"


def test_callable_object_with_async_call() -> None:
    class Doubler:
        __name__ = "doubler"
        __qualname__ = "Doubler"

        async def __call__(self, n: int) -> int:
            """Double."""
            return 2 * n

    doubler = define_tool(Doubler(), registry=None)
    assert doubler.is_async
    assert doubler.run_sync({"n": 4}).text == "8"


def test_signature_is_kept_for_introspection() -> None:
    async def fetch(url: str, *, retries: int = 2) -> str:
        """Fetch."""
        return url

    t = define_tool(fetch, registry=None)
    assert inspect.signature(t) == inspect.signature(fetch)
    assert inspect.iscoroutinefunction(t.fn)


class Summary(BaseModel):
    words: int
    title: str


def test_output_schema() -> None:
    def summarise(text: str) -> Summary:
        """S."""
        return Summary(words=len(text.split()), title=text[:10])

    def say(text: str) -> str:
        """S."""
        return text

    async def count(text: str) -> list[int]:
        """S."""
        return [len(text)]

    def untyped(text: str):  # type: ignore[no-untyped-def]
        """S."""
        return text

    assert define_tool(summarise, registry=None).output_schema == {
        "type": "object",
        "properties": {"words": {"type": "integer"}, "title": {"type": "string"}},
        "required": ["words", "title"],
    }
    assert define_tool(say, registry=None).output_schema is None
    assert define_tool(count, registry=None).output_schema == {
        "type": "array",
        "items": {"type": "integer"},
    }
    assert define_tool(untyped, registry=None).output_schema is None


def test_run_sync_in_a_script() -> None:
    @define_tool(registry=None)
    def inc(n: int) -> int:
        """Inc."""
        return n + 1

    assert inc.run_sync({"n": 1}).text == "2"


@pytest.mark.anyio
async def test_run_sync_inside_a_running_event_loop() -> None:
    # As in Jupyter: a loop is already running in this thread.
    @define_tool(registry=None)
    async def inc(n: int) -> int:
        """Inc."""
        await anyio.lowlevel.checkpoint()
        return n + 1

    assert inc.run_sync({"n": 1}).text == "2"


def test_run_sync_propagates_exceptions() -> None:
    async def fail() -> Any:
        raise RuntimeError("bad")

    with pytest.raises(RuntimeError, match="bad"):
        run_sync(fail)


def test_define_in_custom_registry() -> None:
    tools = ToolRegistry()

    @define_tool(registry=tools)
    def mine() -> str:
        """Mine."""
        return "m"

    assert tools.names() == ["mine"]


def test_inline_sync_tool_with_timeout_is_refused() -> None:
    def f(x: int) -> int:
        """F."""
        return x

    with pytest.raises(ToolDefinitionError, match="a timeout cannot stop it"):
        define_tool(f, registry=None, timeout=1, run_in_thread=False)

    async def g(x: int) -> int:
        """G."""
        return x

    assert define_tool(g, registry=None, timeout=1, run_in_thread=False).timeout == 1.0


def test_param_aliases_accept_other_names_for_a_parameter() -> None:
    @define_tool(registry=None, param_aliases={"file_path": "path", "filePath": "path"})
    def read(path: str, limit: int = 10) -> str:
        """Read."""
        return f"{path}:{limit}"

    assert list(read.input_schema["properties"]) == ["path", "limit"]
    assert read.run_sync({"file_path": "a.txt"}).text == "a.txt:10"
    assert read.run_sync({"filePath": "b.txt", "limit": 2}).text == "b.txt:2"
    assert read.run_sync({"path": "c.txt"}).text == "c.txt:10"
    both = read.run_sync({"path": "c.txt", "file_path": "d.txt"})
    assert both.is_error and "'file_path' is not a parameter of this tool" in both.text


def test_param_aliases_must_name_parameters() -> None:
    def read(path: str, limit: int = 10) -> str:
        """Read."""
        return path

    with pytest.raises(ToolDefinitionError) as info:
        define_tool(read, registry=None, param_aliases={"x": "nope", "limit": "path"})
    assert info.value.problems == [
        "param_aliases maps 'x' to 'nope', which is not a parameter shown to the model",
        "param_aliases maps 'limit', which is itself a parameter",
    ]


def test_a_class_is_refused_for_what_it_is() -> None:
    class SearchQuery(BaseModel):
        """A query."""

        query: str

    with pytest.raises(ToolDefinitionError) as caught:
        define_tool(registry=None)(SearchQuery)
    message = str(caught.value)
    assert "define_tool takes a function; got the class SearchQuery" in message
    assert "no type annotation" not in message
