"""Schema corpus: facts from LangChain's tests of convert_to_openai_function and @tool."""

from __future__ import annotations

import enum
import functools
from typing import Annotated, Any, Literal

from corpus_case import LC_FC, LC_TOOLS, NO_OUTPUT, Cases
from pydantic import BaseModel, Field

from kode import ToolContext

CASES = Cases()


def chosen(first: int, second: Literal["left", "right"]) -> None:
    """Pick a side.

    Args:
        first: a number
        second: either 'left' or 'right'
    """


CHOSEN_SCHEMA = {
    "additionalProperties": False,
    "properties": {
        "first": {"description": "a number", "type": "integer"},
        "second": {
            "description": "either 'left' or 'right'",
            "enum": ["left", "right"],
            "type": "string",
        },
    },
    "required": ["first", "second"],
    "type": "object",
}

CASES.add(
    id="lc-google-literal",
    source=LC_FC + "test_convert_to_openai_function",
    fn=chosen,
    description="Pick a side.",
    schema=CHOSEN_SCHEMA,
    refused=(({"first": 1, "second": "up"}, "'second' should be 'left' or 'right'"),),
)


def chosen_annotated(
    first: Annotated[int, "a number"],
    second: Annotated[Literal["left", "right"], "either 'left' or 'right'"],
) -> None:
    """Pick a side."""


CASES.add(
    id="lc-annotated-literal",
    source=LC_FC + "test_convert_to_openai_function",
    fn=chosen_annotated,
    description="Pick a side.",
    schema=CHOSEN_SCHEMA,
)


class Sides:
    def chosen(self, first: int, second: Literal["left", "right"]) -> None:
        """Pick a side.

        Args:
            first: a number
            second: either 'left' or 'right'
        """

    @classmethod
    def chosen_by_class(cls, first: int, second: Literal["left", "right"]) -> None:
        """Pick a side.

        Args:
            first: a number
            second: either 'left' or 'right'
        """


CASES.add(
    id="lc-unbound-method",
    source=LC_FC + "test_convert_to_openai_function",
    fn=Sides.chosen,
    error="a method in a class body cannot be a tool: there is no instance to bind 'self'",
    differs="LangChain converts a method taken from the class, leaving self out; kode refuses "
    "it (there is nothing to call it on) and takes the bound method instead",
)

CASES.add(
    id="lc-bound-method",
    source=LC_FC + "test_convert_to_openai_function",
    fn=Sides().chosen,
    description="Pick a side.",
    schema=CHOSEN_SCHEMA,
)

CASES.add(
    id="lc-classmethod",
    source=LC_FC + "test_convert_to_openai_function",
    fn=Sides.chosen_by_class,
    description="Pick a side.",
    schema=CHOSEN_SCHEMA,
)


class Nested(BaseModel):
    nested_first: int = Field(..., description="a number")
    nested_second: Literal["left", "right"] = Field(..., description="a side")


def take_nested(arg: Nested) -> None:
    """Take a nested model."""


CASES.add(
    id="lc-nested-model",
    source=LC_FC + "test_convert_to_openai_function_nested",
    fn=take_nested,
    description="Take a nested model.",
    properties={"arg": {"$ref": "#/$defs/Nested"}},
    defs={
        "Nested": {
            "properties": {
                "nested_first": {"description": "a number", "type": "integer"},
                "nested_second": {
                    "description": "a side",
                    "enum": ["left", "right"],
                    "type": "string",
                },
            },
            "required": ["nested_first", "nested_second"],
            "type": "object",
        }
    },
    differs="LangChain inlines a nested model; kode refers to it in $defs (a dialect that "
    "needs it inline inlines it)",
)


class ChoiceA(BaseModel):
    foo: str


class ChoiceB(BaseModel):
    bar: int


class ChoiceC(BaseModel):
    baz: bool


def take_one_of(choice: ChoiceA | ChoiceB | ChoiceC) -> str:
    """Take one of three models."""
    return type(choice).__name__


CASES.add(
    id="lc-union-of-models",
    source=LC_FC + "test_convert_to_openai_function_strict_union_of_objects_arg_type",
    fn=take_one_of,
    properties={
        "choice": {
            "anyOf": [
                {"$ref": "#/$defs/ChoiceA"},
                {"$ref": "#/$defs/ChoiceB"},
                {"$ref": "#/$defs/ChoiceC"},
            ]
        }
    },
    calls=(({"choice": {"bar": 1}}, "ChoiceB"), ({"choice": {"baz": True}}, "ChoiceC")),
)


def nullary() -> None:
    """Take nothing."""


CASES.add(
    id="lc-no-parameters",
    source=LC_FC + "test_function_no_params",
    fn=nullary,
    required=[],
    properties={},
)


def optional_without_defaults(a: str | None, b: str, c: list[str | None] | None) -> None:
    """Optional types without defaults."""


CASES.add(
    id="lc-optional-types-stay-required",
    source=LC_FC + "test_function_optional_param",
    fn=optional_without_defaults,
    required=["a", "b", "c"],
    properties={"a": {"anyOf": [{"type": "string"}, {"type": "null"}]}},
    calls=(({"a": None, "b": "x", "c": None}, NO_OUTPUT),),
    refused=(({"b": "x"}, "'a' is required but missing"),),
    differs="LangChain would like X | None to be optional (its test is an expected failure); "
    "in kode only a default makes a parameter optional, X | None means null is accepted",
)


def int_or_text(value: int | str) -> str:
    """Compute something."""
    return repr(value)


CASES.add(
    id="lc-union-type",
    source=LC_FC + "test_convert_union_type",
    fn=int_or_text,
    properties={"value": {"anyOf": [{"type": "integer"}, {"type": "string"}]}},
    calls=(({"value": 3}, "3"), ({"value": "3"}, "'3'")),
)


def no_args_described() -> str:
    """Nothing to give."""
    return "foo"


CASES.add(
    id="lc-no-arguments-described",
    source=LC_FC + "test_convert_to_openai_function_no_args",
    fn=no_args_described,
    description="Nothing to give.",
    schema={"additionalProperties": False, "properties": {}, "type": "object", "required": []},
)


def open_dicts(arg1: dict[str, Any], arg2: dict[str, Any] | None) -> None:
    """Take two open objects."""


CASES.add(
    id="lc-open-dicts",
    source=LC_FC + "test_convert_to_openai_function_nested_strict_2",
    fn=open_dicts,
    properties={
        "arg1": {"additionalProperties": True, "type": "object"},
        "arg2": {"anyOf": [{"additionalProperties": True, "type": "object"}, {"type": "null"}]},
    },
    required=["arg1", "arg2"],
    differs="LangChain's strict mode closes these objects; kode keeps dict[str, Any] open, as "
    "the annotation says",
)


def colon_in_continuation(query: str, top_k: int) -> None:
    """Search a knowledge base.

    Args:
        query: The query to search
            for, with details: important ones
        top_k: How many results
    """


CASES.add(
    id="lc-google-continuation-with-a-colon",
    source=LC_FC + "TestParseGoogleDocstring::test_continuation_line_with_colon",
    fn=colon_in_continuation,
    params={
        "query": "The query to search for, with details: important ones",
        "top_k": "How many results",
    },
)


def two_plain(x: int, y: int) -> None:
    """Do something.

    Args:
        x: The x value
        y: The y value
    """


CASES.add(
    id="lc-google-simple-arguments",
    source=LC_FC + "TestParseGoogleDocstring::test_simple_args_still_work",
    fn=two_plain,
    params={"x": "The x value", "y": "The y value"},
)


def continued_without_colon(name: str, age: int) -> None:
    """Do something.

    Args:
        name: A long description that
            runs over two lines
        age: The age
    """


CASES.add(
    id="lc-google-continuation-without-a-colon",
    source=LC_FC + "TestParseGoogleDocstring::test_continuation_line_without_colon",
    fn=continued_without_colon,
    params={"name": "A long description that runs over two lines", "age": "The age"},
)


def key_value_lines(config: str, verbose: bool) -> None:
    """Process data.

    Args:
        config: A configuration in the form
            first: one
            second: two
        verbose: Say more
    """


CASES.add(
    id="lc-google-several-colon-lines",
    source=LC_FC + "TestParseGoogleDocstring::test_multiple_continuation_lines_with_colons",
    fn=key_value_lines,
    params={"config": "A configuration in the form first: one second: two", "verbose": "Say more"},
)


def typed_google_args(query: str, k: int) -> None:
    """Run a query.

    Args:
        query (str): The query to run
            details: extra info
        k (int): Number of results
    """


CASES.add(
    id="lc-google-typed-argument-with-colon-continuation",
    source=LC_FC + "TestParseGoogleDocstring::test_annotated_arg_with_colon_continuation",
    fn=typed_google_args,
    params={"query": "The query to run details: extra info", "k": "Number of results"},
)


def args_then_returns(x: int) -> None:
    """Do work.

    Args:
        x: The x value

    Returns:
        result: yes
    """


CASES.add(
    id="lc-google-returns-after-args",
    source=LC_FC + "TestParseGoogleDocstring::test_returns_section_after_args_excluded",
    fn=args_then_returns,
    description="Do work.",
    params={"x": "The x value"},
)


def deeper_second_argument(x: int, y: int) -> None:
    """Do work.

    Args:
        x: the x value
            y: the y value
    """


CASES.add(
    id="lc-google-deeper-line-folds-in",
    source=LC_FC + "TestParseGoogleDocstring::test_more_indented_second_arg_folds_into_previous",
    fn=deeper_second_argument,
    params={"x": "the x value y: the y value", "y": None},
)


def documented_both_ways(bar: int, baz: str) -> str:
    """The summary.

    Args:
        bar: the bar value
        baz: the baz value
    """
    raise NotImplementedError


CASES.add(
    id="lc-docstring-always-parsed",
    source=LC_TOOLS + "test_structured_tool_from_function_docstring",
    fn=documented_both_ways,
    description="The summary.",
    params={"bar": "the bar value", "baz": "the baz value"},
    differs="LangChain keeps the whole docstring as the description unless asked to parse "
    "it; kode always reads the parameter section out of it",
)


def two_paragraphs(bar: str, baz: int) -> str:
    """The summary.

    More about it here.

    Args:
        bar: The bar.
        baz: The baz.

    Returns:
        What it returns.
    """
    return bar


CASES.add(
    id="lc-parsed-two-paragraphs",
    source=LC_TOOLS + "test_docstring_parsing",
    fn=two_paragraphs,
    description="The summary.\n\nMore about it here.",
    params={"bar": "The bar.", "baz": "The baz."},
    differs="LangChain joins the paragraphs with a space; kode keeps them as paragraphs",
)


def single_documented(bar: str) -> str:
    """The summary.

    Args:
        bar: The bar.
    """
    return bar


CASES.add(
    id="lc-parsed-single-argument",
    source=LC_TOOLS + "test_docstring_parsing",
    fn=single_documented,
    description="The summary.",
    schema={
        "additionalProperties": False,
        "properties": {"bar": {"description": "The bar.", "type": "string"}},
        "required": ["bar"],
        "type": "object",
    },
)


def summary_only(bar: str, baz: int) -> str:
    """The summary."""
    return bar


CASES.add(
    id="lc-parsed-without-an-args-section",
    source=LC_TOOLS + "test_tool_invalid_docstrings",
    fn=summary_only,
    description="The summary.",
    params={"bar": None, "baz": None},
    differs="LangChain's parse_docstring refuses a docstring without Args; kode reads what "
    "is there (require_descriptions=True asks for every description)",
)


def no_blank_line_before_args(bar: str, baz: int) -> str:
    """The summary.
    Args:
        bar: The bar.
        baz: The baz.
    """
    return bar


CASES.add(
    id="lc-parsed-no-blank-line-before-args",
    source=LC_TOOLS + "test_tool_invalid_docstrings",
    fn=no_blank_line_before_args,
    description="The summary.",
    params={"bar": "The bar.", "baz": "The baz."},
    differs="LangChain refuses a Google docstring without a blank line before Args; kode reads it",
)


def documents_other_names(bar: str, baz: int) -> str:
    """The summary.

    Args:
        banana: The bar.
        monkey: The baz.
    """
    return bar


CASES.add(
    id="lc-docstring-names-missing-parameters",
    source=LC_TOOLS + "test_tool_invalid_docstrings",
    fn=documents_other_names,
    error="the docstring documents parameter 'banana', which the function does not have; "
    "the docstring documents parameter 'monkey'",
)


def annotated_with_returns(
    bar: Annotated[str, "this is the bar"], baz: Annotated[int, "this is the baz"]
) -> str:
    """The summary.

    Returns:
        The bar only.
    """
    return bar


CASES.add(
    id="lc-annotated-strings-with-returns",
    source=LC_TOOLS + "test_tool_annotated_descriptions",
    fn=annotated_with_returns,
    description="The summary.",
    params={"bar": "this is the bar", "baz": "this is the baz"},
    differs="LangChain keeps the Returns section in the description when not parsing; kode "
    "leaves it out",
)


def field_in_annotated_with_default(
    topic: Annotated[str, Field(description="The research topic")],
    depth: Annotated[int, Field(description="How deep to search")] = 3,
) -> str:
    """Research a topic."""
    return f"{topic} at depth {depth}"


CASES.add(
    id="lc-annotated-field-description-and-default",
    source=LC_TOOLS + "test_tool_field_description_preserved",
    fn=field_in_annotated_with_default,
    description="Research a topic.",
    properties={
        "topic": {"description": "The research topic", "type": "string"},
        "depth": {"default": 3, "description": "How deep to search", "type": "integer"},
    },
    required=["topic"],
    calls=(({"topic": "x"}, "x at depth 3"),),
)


def optional_arguments(bar: str, baz: int | None = 3, buzz: str | None = "buzz") -> dict[str, Any]:
    """Return the arguments."""
    return {"bar": bar, "baz": baz, "buzz": buzz}


CASES.add(
    id="lc-invoke-optional-arguments",
    source=LC_TOOLS + "test_tool_invoke_optional_args",
    fn=optional_arguments,
    required=["bar"],
    calls=(
        ({"bar": "bar"}, '{"bar":"bar","baz":3,"buzz":"buzz"}'),
        ({"bar": "bar", "baz": 4, "buzz": "not-buzz"}, '{"bar":"bar","baz":4,"buzz":"not-buzz"}'),
        ({"bar": "bar", "baz": None}, '{"bar":"bar","baz":null,"buzz":"buzz"}'),
    ),
    refused=(
        ({}, "'bar' is required but missing"),
        ({"bar": "bar", "baz": "not-an-int"}, "'baz' should be a valid integer"),
    ),
)


def constant() -> str:
    """Return a constant."""
    return "the empty result"


CASES.add(
    id="lc-empty-arguments",
    source=LC_TOOLS + "test_empty_args_decorator",
    fn=constant,
    properties={},
    calls=(({}, "the empty result"),),
)


def defaults_of_each_kind(arg_0: str, arg_1: float = 4.3, ping: str = "hi") -> str:
    """Search for something."""
    return f"arg_0={arg_0}, arg_1={arg_1}, ping={ping}"


CASES.add(
    id="lc-defaults",
    source=LC_TOOLS + "test_tool_with_kwargs",
    fn=defaults_of_each_kind,
    properties={
        "arg_1": {"default": 4.3, "type": "number"},
        "ping": {"default": "hi", "type": "string"},
    },
    calls=(
        ({"arg_0": "foo", "arg_1": 3.2, "ping": "pong"}, "arg_0=foo, arg_1=3.2, ping=pong"),
        ({"arg_0": "foo"}, "arg_0=foo, arg_1=4.3, ping=hi"),
    ),
    refused=(("foobar", "the arguments are not valid JSON"),),  # type: ignore[arg-type]
    differs="LangChain accepts a bare string for a tool's first argument; kode's arguments are "
    "always an object",
)


def undocumented(query: str) -> str:
    return "API result"


CASES.add(
    id="lc-missing-docstring",
    source=LC_TOOLS + "test_missing_docstring",
    fn=undocumented,
    description="",
    calls=(({"query": "q"}, "API result"),),
    differs="LangChain's @tool refuses a function without a docstring; kode accepts it with "
    "an empty description unless require_descriptions=True",
)

CASES.add(
    id="lc-missing-docstring-required",
    source=LC_TOOLS + "test_missing_docstring",
    fn=undocumented,
    options={"require_descriptions": True},
    error="the tool has no description: write a docstring or pass description=",
)


def join_two(tool_input: str, other_arg: str) -> str:
    """Join two strings.

    Args:
        tool_input: The first.
        other_arg: The second.
    """
    return tool_input + other_arg


CASES.add(
    id="lc-partial",
    source=LC_TOOLS + "test_tool_partial_function_args_schema",
    fn=functools.partial(join_two, other_arg="foo"),
    options={"name": "join"},
    description="Join two strings.",
    properties={
        "tool_input": {"description": "The first.", "type": "string"},
        "other_arg": {"default": "foo", "description": "The second.", "type": "string"},
    },
    calls=(({"tool_input": "bar"}, "barfoo"),),
)


class Letter(enum.Enum):
    A = "a"
    B = "b"


class Wrapped(BaseModel):
    foo: str


def typed_arguments(letter: Letter, wrapped: Wrapped) -> str:
    """Return what the arguments became."""
    return f"{letter!r} {wrapped!r}"


CASES.add(
    id="lc-arguments-become-their-types",
    source=LC_TOOLS + "test_structured_tool_types_parsed",
    fn=typed_arguments,
    calls=(({"letter": "a", "wrapped": {"foo": "bar"}}, "<Letter.A: 'a'> Wrapped(foo='bar')"),),
)


def with_runtime(bar: str, baz: int, ctx: ToolContext) -> str:
    """The summary.

    Args:
        bar: The bar.
        baz: The baz.
    """
    return bar


CASES.add(
    id="lc-undocumented-injected-parameter",
    source=LC_TOOLS + "test_tool_arg_descriptions",
    fn=with_runtime,
    options={"require_descriptions": True},
    params={"bar": "The bar.", "baz": "The baz."},
)
