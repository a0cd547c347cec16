"""Schema inference: descriptions, definition-time errors, the context, BaseModel-like names."""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable
from typing import Annotated, Any

import pytest
from pydantic import Field
from typing_extensions import Doc

from kode import Tool, ToolContext, ToolDefinitionError, define_tool


def make(fn: Any, **options: Any) -> Tool[..., Any]:
    return define_tool(registry=None, **options)(fn)


# --- descriptions from docstrings ---------------------------------------------------------------

GOOGLE = """Find files whose names match a pattern.

    Walks the tree below `path`.

    Args:
        pattern: Glob pattern, e.g. "*.py".
        path (str): Directory to search
            from, recursively.

    Returns:
        The matching paths.

    Raises:
        ValueError: When the pattern is empty.
    """

NUMPY = """Find files whose names match a pattern.

    Walks the tree below `path`.

    Parameters
    ----------
    pattern : str
        Glob pattern, e.g. "*.py".
    path : str, optional
        Directory to search
        from, recursively.

    Returns
    -------
    list of str
        The matching paths.

    Raises
    ------
    ValueError
        When the pattern is empty.
    """

REST = """Find files whose names match a pattern.

    Walks the tree below `path`.

    :param pattern: Glob pattern, e.g. "*.py".
    :type pattern: str
    :param str path: Directory to search
        from, recursively.
    :returns: The matching paths.
    :rtype: list[str]
    :raises ValueError: When the pattern is empty.
    """

EPYDOC = """Find files whose names match a pattern.

    Walks the tree below `path`.

    @param pattern: Glob pattern, e.g. "*.py".
    @type pattern: str
    @param path: Directory to search
        from, recursively.
    @return: The matching paths.
    @rtype: list[str]
    @raise ValueError: When the pattern is empty.
    """

SEARCH_SCHEMA = {
    "additionalProperties": False,
    "properties": {
        "pattern": {"description": 'Glob pattern, e.g. "*.py".', "type": "string"},
        "path": {
            "default": ".",
            "description": "Directory to search from, recursively.",
            "type": "string",
        },
    },
    "required": ["pattern"],
    "type": "object",
}


def search_with(doc: str, **options: Any) -> Tool[..., Any]:
    def search(pattern: str, path: str = ".") -> list[str]:
        return []

    search.__doc__ = doc
    return make(search, **options)


@pytest.mark.parametrize(
    ("doc", "style"),
    [
        (GOOGLE, "google"),
        (NUMPY, "numpy"),
        (REST, "rest"),
        (REST, "sphinx"),
        (EPYDOC, "epydoc"),
    ],
)
@pytest.mark.parametrize("explicit", [False, True])
def test_docstring_styles(doc: str, style: str, explicit: bool) -> None:
    search = search_with(doc, **({"docstring_style": style} if explicit else {}))
    assert search.description == (
        "Find files whose names match a pattern.\n\nWalks the tree below `path`."
    )
    assert search.input_schema == SEARCH_SCHEMA
    assert search.spec.param_descriptions == {
        "pattern": 'Glob pattern, e.g. "*.py".',
        "path": "Directory to search from, recursively.",
    }


def test_a_docstring_read_in_the_wrong_style_keeps_its_text() -> None:
    search = search_with(REST, docstring_style="google")
    assert search.description.startswith("Find files whose names match a pattern.")
    assert ":param pattern:" in search.description
    assert "description" not in search.input_schema["properties"]["pattern"]


def test_numpy_parameters_sharing_a_line() -> None:
    def move(x: int, y: int) -> None:
        """Move the cursor.

        Parameters
        ----------
        x, y : int
            Where to, in pixels.
        """

    props = make(move).input_schema["properties"]
    assert props == {
        "x": {"description": "Where to, in pixels.", "type": "integer"},
        "y": {"description": "Where to, in pixels.", "type": "integer"},
    }


def test_description_is_summary_and_body_without_other_sections() -> None:
    def f(x: int) -> int:
        """Summary.

        First paragraph
        of the body.

        Second paragraph.

        Args:
            x: The x.

        Returns:
            x itself.

        Example:
            >>> f(1)
        """
        return x

    assert make(f).description == "Summary.\n\nFirst paragraph\nof the body.\n\nSecond paragraph."


def test_no_docstring_and_explicit_description() -> None:
    def f(x: int) -> None:
        """Docstring summary.

        Args:
            x: The x.
        """

    def bare(x: int) -> None:
        pass

    tool = make(f, description="Explicit.")
    assert tool.description == "Explicit."
    assert tool.input_schema["properties"]["x"] == {"description": "The x.", "type": "integer"}
    assert make(bare).description == ""
    assert make(bare).input_schema["properties"]["x"] == {"type": "integer"}


def test_annotations_win_over_the_docstring_in_a_fixed_order() -> None:
    def f(
        a: Annotated[int, "from str", Doc("from Doc"), Field(description="from Field")],
        b: Annotated[int, "from str", Doc("from Doc")],
        c: Annotated[int, "from str"],
        d: int = Field(default=1, description="from default Field"),
        e: Annotated[int, Doc("from Doc")] = Field(default=2, description="from default Field"),
        g: Annotated[int, Field(ge=0)] = 3,
    ) -> None:
        """F.

        Args:
            a: from docstring
            b: from docstring
            c: from docstring
            d: from docstring
            e: from docstring
            g: from docstring
        """

    tool = make(f)
    described = {k: v.get("description") for k, v in tool.input_schema["properties"].items()}
    assert described == {
        "a": "from Field",
        "b": "from Doc",
        "c": "from str",
        "d": "from default Field",
        "e": "from Doc",
        "g": "from docstring",
    }
    assert tool.spec.param_descriptions == described
    props = tool.input_schema["properties"]
    assert props["e"] == {"default": 2, "description": "from Doc", "type": "integer"}
    assert props["g"] == {
        "default": 3,
        "description": "from docstring",
        "minimum": 0,
        "type": "integer",
    }
    assert tool.run_sync({"a": 1, "b": 2, "c": 3, "g": -1}).is_error


def test_documented_parameter_that_does_not_exist() -> None:
    def f(x: int, ctx: ToolContext) -> None:
        """F.

        Args:
            x: The x.
            ctx: The context (documenting it is fine).
            y: Gone.
            z: Also gone.
        """

    with pytest.raises(ToolDefinitionError) as info:
        make(f)
    assert info.value.problems == [
        "the docstring documents parameter 'y', which the function does not have",
        "the docstring documents parameter 'z', which the function does not have",
    ]


def test_require_descriptions_reports_everything_missing() -> None:
    def f(a: int, b: Annotated[int, "B."], c: int, ctx: ToolContext) -> None:
        pass

    with pytest.raises(ToolDefinitionError) as info:
        make(f, require_descriptions=True)
    assert info.value.problems == [
        "parameter 'a' has no description",
        "parameter 'c' has no description",
        "the tool has no description: write a docstring or pass description=",
    ]

    def g(a: int) -> None:
        """G.

        Args:
            a: A.
        """

    assert make(g, require_descriptions=True).description == "G."


def test_unknown_docstring_style_is_reported_with_the_other_problems() -> None:
    def f(x) -> None:  # type: ignore[no-untyped-def]
        """F."""

    with pytest.raises(ToolDefinitionError) as info:
        make(f, docstring_style="javadoc")
    assert info.value.problems == [
        "docstring_style 'javadoc' is not one of 'auto', 'google', 'numpy', 'rest', "
        "'sphinx', 'epydoc'",
        "parameter 'x' has no type annotation",
    ]


# --- definition-time errors ---------------------------------------------------------------------


def test_every_problem_of_a_function_is_listed_once_with_its_qualname() -> None:
    def search(a, b: int, /, c: int, *args: int, d, **opts: Any) -> None:  # type: ignore[no-untyped-def]
        """Search.

        Args:
            e: Gone.
        """

    with pytest.raises(ToolDefinitionError) as info:
        make(search, name="bad name", kind="destroy", timeout=0, groups="group:fs")
    qualname = "test_every_problem_of_a_function_is_listed_once_with_its_qualname.<locals>.search"
    assert info.value.qualname == qualname
    assert info.value.problems == [
        "tool name 'bad name' is invalid: use 1-64 letters, digits, '_' or '-'",
        "kind 'destroy' is not one of read, edit, delete, move, search, execute, think, "
        "fetch, other",
        "groups must be a list of names, got the string 'group:fs'",
        "timeout must be a positive number of seconds or None, got 0",
        "parameter 'a' has no type annotation",
        "parameter 'b' is positional-only, so a model cannot name it; remove the '/' from "
        "the signature",
        "parameter '*args' cannot be shown to a model, which names every argument: take a "
        "list instead, `args: list[int]`",
        "parameter 'd' has no type annotation",
        "parameter '**opts' cannot be shown to a model, which passes only the parameters the "
        "schema names: make each option a parameter, or take `opts: dict[str, Any]`",
        "the docstring documents parameter 'e', which the function does not have",
    ]
    assert str(info.value) == f"{qualname}: " + "; ".join(info.value.problems)


@pytest.mark.parametrize(
    ("name", "ok"),
    [
        ("a", True),
        ("search_files", True),
        ("web-fetch_2", True),
        ("x" * 64, True),
        ("x" * 65, False),
        ("", False),
        ("has space", False),
        ("dotted.name", False),
        ("ünïcode", False),
        ("slash/name", False),
    ],
)
def test_tool_names(name: str, ok: bool) -> None:
    def f() -> None:
        """F."""

    if ok:
        assert make(f, name=name).name == name
    else:
        with pytest.raises(ToolDefinitionError, match="is invalid: use 1-64 letters"):
            make(f, name=name)


@pytest.mark.parametrize("timeout", [0, -1, True, "5", float("nan")])
def test_bad_timeouts(timeout: Any) -> None:
    def f() -> None:
        """F."""

    with pytest.raises(ToolDefinitionError, match="timeout must be a positive number"):
        make(f, timeout=timeout)


def test_good_timeouts_are_floats() -> None:
    def f() -> None:
        """F."""

    assert make(f, timeout=2).timeout == 2.0
    assert make(f, timeout=0.5).timeout == 0.5
    assert make(f).timeout is None


def test_parameter_names_a_provider_refuses() -> None:
    def f(größe: int, _hidden: int = 0) -> None:
        """F."""

    with pytest.raises(ToolDefinitionError) as info:
        make(f)
    assert info.value.problems == [
        "parameter 'größe' cannot be shown to a model: provider APIs accept parameter names "
        "of 1-64 ASCII letters, digits and '_'; rename it",
        "parameter '_hidden' starts with an underscore, which pydantic cannot validate; rename it",
    ]


def test_a_type_pydantic_cannot_validate_is_one_short_problem() -> None:
    class Opaque:
        pass

    def f(x: Opaque) -> None:
        """F."""

    f.__annotations__["x"] = Opaque
    with pytest.raises(ToolDefinitionError) as info:
        make(f)
    [problem] = info.value.problems
    assert problem.startswith(
        "its parameters cannot be validated (PydanticSchemaGenerationError: Unable to "
        "generate pydantic-core schema for"
    )
    assert "\n" not in problem


def test_unresolvable_annotation() -> None:
    def f(x: NotDefinedAnywhere) -> None:  # type: ignore[name-defined]  # noqa: F821
        """F."""

    with pytest.raises(ToolDefinitionError, match="its annotations cannot be resolved"):
        make(f)


class Counter:
    def __init__(self) -> None:
        self.total = 0

    def add(self, amount: int) -> int:
        """Add.

        Args:
            amount: How much.
        """
        self.total += amount
        return self.total

    @staticmethod
    def double(x: int) -> int:
        """Double x."""
        return 2 * x

    @classmethod
    def name_of(cls, prefix: str) -> str:
        """The class name."""
        return prefix + cls.__name__


def test_methods() -> None:
    counter = Counter()
    add = make(counter.add)
    assert add.input_schema == {
        "additionalProperties": False,
        "properties": {"amount": {"description": "How much.", "type": "integer"}},
        "required": ["amount"],
        "type": "object",
    }
    assert add.run_sync({"amount": "2"}).text == "2" and counter.total == 2

    double = make(Counter.double)
    assert list(double.input_schema["properties"]) == ["x"]
    assert double.run_sync({"x": 4}).text == "8"

    name_of = make(Counter.name_of)  # a classmethod, bound to the class
    assert list(name_of.input_schema["properties"]) == ["prefix"]
    assert name_of.run_sync({"prefix": ">"}).text == ">Counter"

    with pytest.raises(ToolDefinitionError) as info:
        make(Counter.add)
    assert info.value.qualname == "Counter.add"
    assert info.value.problems == [
        "a method in a class body cannot be a tool: there is no instance to bind 'self' to "
        "yet; decorate the bound method instead, define_tool(instance.add), or make it a "
        "@staticmethod"
    ]


def test_staticmethod_decorated_in_the_class_body() -> None:
    class Maths:
        @define_tool(registry=None)
        @staticmethod
        def square(x: int) -> int:
            """Square x."""
            return x * x

    assert Maths.square.input_schema["required"] == ["x"]
    assert Maths.square.run_sync({"x": 3}).text == "9"
    assert Maths.square(4) == 16


# --- the context is injected, never shown -------------------------------------------------------


@dataclasses.dataclass
class Deps:
    greeting: str


def _first(ctx: ToolContext[Deps], /, name: str) -> str:
    return f"{ctx.deps.greeting} {name} ({ctx.tool_name})"


def _middle(name: str, ctx: ToolContext[Deps], punctuation: str = "!") -> str:
    return f"{ctx.deps.greeting} {name}{punctuation}"


def _keyword_only(name: str, *, ctx: ToolContext) -> str:
    return f"{ctx.deps.greeting} {name}"


def _annotated(name: str, ctx: Annotated[ToolContext[Deps], "the context"]) -> str:
    return f"{ctx.deps.greeting} {name}"


def _optional(name: str, ctx: ToolContext[Deps] | None = None) -> str:
    return f"{ctx.deps.greeting if ctx else 'no context'} {name}"


@pytest.mark.parametrize("fn", [_first, _middle, _keyword_only, _annotated, _optional])
def test_context_parameter_is_left_out_of_the_schema_and_injected(fn: Any) -> None:
    fn.__doc__ = "Greet."
    tool = make(fn)
    assert "ctx" not in tool.input_schema["properties"]
    assert "ctx" not in tool.input_schema["required"]
    assert tool.input_schema["properties"]["name"] == {"type": "string"}
    assert "ctx" not in str(tool.schema("openai")) + str(tool.schema("gemini"))
    ctx: ToolContext[Deps] = ToolContext(tool_name=tool.name, deps=Deps("hi"))
    assert tool.run_sync({"name": "Ada"}, ctx).text.startswith("hi Ada")


def test_optional_context_keeps_the_function_callable_without_one() -> None:
    tool = make(_optional)
    assert tool("Ada") == "no context Ada"
    standalone = tool.run_sync({"name": "Ada"})  # a standalone context, whose deps are None
    assert standalone.is_error and "AttributeError" not in standalone.text
    assert "needs deps of type Deps" in standalone.text
    assert "Pass deps= to Agent.create" in standalone.text


@pytest.mark.parametrize(
    ("annotation", "needs"),
    [
        ("ToolContext", False),
        ("ToolContext[Any]", False),
        ("ToolContext[Deps | None]", False),
        ("ToolContext[Deps]", True),
        ("ToolContext[Deps] | None", True),
    ],
)
def test_only_a_context_with_required_deps_refuses_to_run_without_them(
    annotation: str, needs: bool
) -> None:
    namespace: dict[str, Any] = {}
    source = (
        f"def greet(name: str, ctx: {annotation}) -> str:\n"
        '    """Greet."""\n'
        "    return 'hello ' + name\n"
    )
    exec(source, {"ToolContext": ToolContext, "Deps": Deps, "Any": Any}, namespace)
    tool = make(namespace["greet"])
    result = tool.run_sync({"name": "Ada"})
    assert result.is_error is needs
    assert ("needs deps of type Deps" in result.text) is needs
    given = tool.run_sync({"name": "Ada"}, ToolContext(tool_name="greet", deps=Deps("x")))
    assert given.text == "hello Ada"


def test_two_contexts_are_a_problem() -> None:
    def f(a: ToolContext, b: ToolContext) -> None:
        """F."""

    with pytest.raises(ToolDefinitionError, match="parameters 'a' and 'b' both ask for"):
        make(f)


# --- parameter names that BaseModel uses --------------------------------------------------------


def test_parameters_named_like_basemodel_attributes_work_end_to_end() -> None:
    def export(
        json: str,
        copy: bool,
        schema: int = 1,
        model_config: Annotated[str, "How to configure."] = "default",
        dict: list[int] | None = None,
        model_fields: int = Field(default=0, ge=0),
    ) -> Any:
        """Export.

        Args:
            json: The JSON text.
            copy: Whether to copy.
        """
        return [json, copy, schema, model_config, dict, model_fields]

    tool = make(export)
    assert tool.input_schema == {
        "additionalProperties": False,
        "properties": {
            "json": {"description": "The JSON text.", "type": "string"},
            "copy": {"description": "Whether to copy.", "type": "boolean"},
            "schema": {"default": 1, "type": "integer"},
            "model_config": {
                "default": "default",
                "description": "How to configure.",
                "type": "string",
            },
            "dict": {
                "anyOf": [{"items": {"type": "integer"}, "type": "array"}, {"type": "null"}],
                "default": None,
            },
            "model_fields": {"default": 0, "minimum": 0, "type": "integer"},
        },
        "required": ["json", "copy"],
        "type": "object",
    }
    assert tool.spec.param_names == (
        "json",
        "copy",
        "schema",
        "model_config",
        "dict",
        "model_fields",
    )
    ok = tool.run_sync({"json": "{}", "copy": "yes", "schema": "2", "dict": "[1]"})
    assert ok.details == ["{}", True, 2, "default", [1], 0]
    assert tool.run_sync({"json": "{}", "copy": False}).details == [
        "{}",
        False,
        1,
        "default",
        None,
        0,
    ]
    bad = tool.run_sync({"json": 1, "copy": True, "model_fields": -1, "kode_arg_json": "x"})
    assert bad.is_error
    assert "'json' should be a valid string, got 1" in bad.text
    assert "'model_fields' should be greater than or equal to 0" in bad.text
    assert "'kode_arg_json' is not a parameter of this tool" in bad.text
    # Each dialect shows the real names.
    for dialect in ("anthropic", "openai", "gemini"):
        assert "kode_arg" not in str(tool.schema(dialect))


# --- defaults given in Annotated[T, Field(...)] -------------------------------------------------


def test_a_default_given_only_in_an_annotated_field_makes_the_parameter_optional() -> None:
    def f(required_param: str, optional_param: Annotated[float, Field(default=5.0, ge=0.0)]) -> str:
        return f"{required_param} {optional_param}"

    tool = make(f)
    assert tool.input_schema["required"] == ["required_param"]
    assert tool.input_schema["properties"]["optional_param"] == {
        "default": 5.0,
        "minimum": 0.0,
        "type": "number",
    }
    assert tool.run_sync({"required_param": "x"}).text == "x 5.0"
    assert tool.run_sync({"required_param": "x", "optional_param": 1}).text == "x 1.0"
    assert (
        "greater than or equal to 0"
        in tool.run_sync({"required_param": "x", "optional_param": -1}).text
    )


def test_a_default_factory_given_only_in_an_annotated_field_makes_the_parameter_optional() -> None:
    def f(
        items: Annotated[list[int], Field(default_factory=list, description="The items.")],
        label: Annotated[str | None, Field(default=None)],
    ) -> Any:
        return [items, label]

    tool = make(f)
    assert tool.input_schema["required"] == []
    assert tool.input_schema["properties"]["items"] == {
        "description": "The items.",
        "items": {"type": "integer"},
        "type": "array",
    }
    assert tool.input_schema["properties"]["label"]["default"] is None
    assert tool.run_sync({}).details == [[], None]


def test_an_annotated_default_survives_a_renamed_or_aliased_parameter() -> None:
    def f(json: Annotated[int, Field(default=3)], path: Annotated[str, Field(default=".")]) -> Any:
        return [json, path]

    tool = make(f, param_aliases={"file_path": "path"})
    assert tool.input_schema["required"] == []
    assert tool.run_sync({}).details == [3, "."]
    assert tool.run_sync({"file_path": "x"}).details == [3, "x"]


def test_the_same_default_in_annotated_and_after_equals_is_accepted() -> None:
    # Repeating it keeps the default when the function is called directly.
    def f(limit: Annotated[int, Field(default=100, ge=1)] = 100) -> int:
        return limit

    tool = make(f)
    assert tool.input_schema["properties"]["limit"] == {
        "default": 100,
        "minimum": 1,
        "type": "integer",
    }
    assert tool.run_sync({}).text == "100"
    assert f() == 100


@pytest.mark.parametrize(
    ("annotation_field", "default", "message"),
    [
        (
            Field(default=1),
            2,
            "parameter 'x' has two defaults, Field(default=1) in Annotated and '= 2': give it "
            "once, or give the same value in both places",
        ),
        (
            Field(default=1),
            Field(default=3),
            "parameter 'x' has two defaults, Field(default=1) in Annotated and "
            "Field(default=3) after '=': give it once, or give the same value in both places",
        ),
        (
            Field(default_factory=list),
            None,
            "parameter 'x' has two defaults, Field(default_factory=...) in Annotated and "
            "'= None': give it once",
        ),
        (
            Field(default=None),
            Field(default_factory=list),
            "parameter 'x' has two defaults, Field(default=None) in Annotated and "
            "Field(default_factory=...) after '=': give it once",
        ),
    ],
)
def test_two_different_defaults_are_a_definition_error(
    annotation_field: Any, default: Any, message: str
) -> None:
    def f(x: Any = None) -> None:
        """Take x."""

    f.__annotations__ = {"x": Annotated[list[int] | int | None, annotation_field], "return": None}
    f.__defaults__ = (default,)
    with pytest.raises(ToolDefinitionError) as info:
        make(f)
    assert info.value.problems == [message]


def test_a_field_after_equals_without_a_default_keeps_the_annotated_default() -> None:
    def f(x: Annotated[int, Field(default=1)] = Field(description="The x.")) -> int:
        return x

    tool = make(f)
    assert tool.input_schema["properties"]["x"] == {
        "default": 1,
        "description": "The x.",
        "type": "integer",
    }
    assert tool.run_sync({}).text == "1"


# --- defaults are checked against their parameter's type, once, at definition -------------------


class Role(enum.Enum):
    ADMIN = "admin"
    USER = "user"


def test_a_default_that_does_not_fit_its_type_is_refused() -> None:
    def grant(role: Role = "WRONG_ENUM", count: int = "1", ratio: float = 1) -> str:  # type: ignore[assignment]
        """Grant."""
        return "ok"

    with pytest.raises(ToolDefinitionError) as caught:
        make(grant)
    message = str(caught.value)
    assert "parameter 'role' has the default 'WRONG_ENUM', which does not fit its type" in message
    assert "parameter 'count' has the default '1', which does not fit its type" in message
    assert "'ratio'" not in message  # an int for a float is a float's value

    def implicit(name: str = None) -> str:  # type: ignore[assignment]  # noqa: RUF013
        """Implicit Optional."""
        return name

    with pytest.raises(ToolDefinitionError, match=r"say the parameter may be None, `X \| None"):
        make(implicit)


def test_a_default_outside_its_constraints_is_refused() -> None:
    def page(size: Annotated[int, Field(ge=1)] = 0, tags: list[str] = [1]) -> str:  # type: ignore[list-item]  # noqa: B006
        """Page."""
        return "ok"

    with pytest.raises(ToolDefinitionError) as caught:
        make(page)
    message = str(caught.value)
    assert "parameter 'size' has the default 0" in message
    assert "greater than or equal to 1" in message
    assert "parameter 'tags' has the default [1], which does not fit its type at [0]" in message


def test_defaults_that_fit_are_accepted() -> None:
    def fine(
        role: Role = Role.USER,
        ratio: float = 1,
        names: tuple[str, ...] = (),
        size: Annotated[int, Field(ge=1)] = 5,
        note: str | None = None,
        renamed: Annotated[int, Field(default=3)] = 3,
    ) -> str:
        """Fine."""
        return "ok"

    tool = make(fine)
    assert tool.validate({}) == {
        "role": Role.USER,
        "ratio": 1,
        "names": (),
        "size": 5,
        "note": None,
        "renamed": 3,
    }


def test_a_callable_parameter_is_named() -> None:
    def apply(callback: Callable[[int], str], n: int = 1) -> str:
        """Apply."""
        return callback(n)

    with pytest.raises(ToolDefinitionError) as caught:
        make(apply)
    message = str(caught.value)
    assert message.startswith("test_a_callable_parameter_is_named.<locals>.apply: ")
    assert "parameter 'callback' cannot be shown to a model" in message
    assert "has no JSON schema" in message
    assert "'n'" not in message
