"""Schema corpus: facts from pydantic-ai's tests/test_tools.py."""

from __future__ import annotations

from typing import Annotated, Any

from corpus_case import NO_OUTPUT, PAI, Cases
from pydantic import BaseModel, Field, WithJsonSchema
from typing_extensions import TypedDict

from kode import ToolContext

CASES = Cases()


async def google_documented(count: int, label: str) -> str:
    """Do several things, and then some.

    Args:
        count: How many times.
        label: What to call it.
    """
    return f"{count} {label}"


GOOGLE_SCHEMA = {
    "additionalProperties": False,
    "properties": {
        "count": {"description": "How many times.", "type": "integer"},
        "label": {"description": "What to call it.", "type": "string"},
    },
    "required": ["count", "label"],
    "type": "object",
}

for _style in ("google", "auto"):
    CASES.add(
        id=f"pai-google-{_style}",
        source=PAI + "test_docstring_google",
        fn=google_documented,
        options={"docstring_style": _style},
        description="Do several things, and then some.",
        schema=GOOGLE_SCHEMA,
        calls=(({"count": 2, "label": "x"}, "2 x"),),
    )


def sphinx_documented(count: int) -> str:
    """A reST docstring.

    :param count: How many times.
    """
    return str(count)


for _style in ("sphinx", "rest", "auto"):
    CASES.add(
        id=f"pai-sphinx-{_style}",
        source=PAI + "test_docstring_sphinx",
        fn=sphinx_documented,
        options={"docstring_style": _style},
        description="A reST docstring.",
        params={"count": "How many times."},
        required=["count"],
    )


def positional_only(count: int, /) -> str:
    """Positional only.

    :param count: How many times.
    """
    return str(count)


CASES.add(
    id="pai-positional-only",
    source=PAI + "test_docstring_sphinx",
    fn=positional_only,
    error="parameter 'count' is positional-only, so a model cannot name it",
    differs="pydantic-ai accepts a positional-only parameter and passes it by position; kode "
    "refuses it, so that the function always receives what the model named",
)


def numpy_documented(*, count: int, label: str) -> str:
    """A NumPy docstring.

    Parameters
    ----------
    count : int
        How many times.
    label : str
        What to call it.
    """
    return f"{count} {label}"


for _style in ("numpy", "auto"):
    CASES.add(
        id=f"pai-numpy-keyword-only-{_style}",
        source=PAI + "test_docstring_numpy",
        fn=numpy_documented,
        options={"docstring_style": _style},
        description="A NumPy docstring.",
        params={"count": "How many times.", "label": "What to call it."},
        required=["count", "label"],
        calls=(({"count": 1, "label": "a"}, "1 a"),),
    )


def google_with_returns(value: int) -> str:
    """Turn a number into text.

    Args:
        value: The number.

    Returns:
        str: The number as text.
    """
    return str(value)


RETURNS_DIFFER = (
    "pydantic-ai adds the returns section to the description (as XML); kode leaves returns "
    "and raises sections out: the model sees what the tool returns when it calls it"
)

CASES.add(
    id="pai-google-returns",
    source=PAI + "test_google_style_with_returns",
    fn=google_with_returns,
    description="Turn a number into text.",
    params={"value": "The number."},
    differs=RETURNS_DIFFER,
)


def sphinx_with_returns(value: int) -> str:
    """Turn a number into text, reST style.

    :param value: The number.
    :rtype: str
    :return: The number as text.
    """
    return str(value)


CASES.add(
    id="pai-sphinx-returns",
    source=PAI + "test_sphinx_style_with_returns",
    fn=sphinx_with_returns,
    options={"docstring_style": "sphinx"},
    description="Turn a number into text, reST style.",
    params={"value": "The number."},
    differs=RETURNS_DIFFER,
)


def numpy_with_returns(value: int) -> str:
    """Turn a number into text, NumPy style.

    Parameters
    ----------
    value : int
        The number.

    Returns
    -------
    str
        The number as text.
    """
    return str(value)


CASES.add(
    id="pai-numpy-returns",
    source=PAI + "test_numpy_style_with_returns",
    fn=numpy_with_returns,
    options={"docstring_style": "numpy"},
    description="Turn a number into text, NumPy style.",
    params={"value": "The number."},
    differs=RETURNS_DIFFER,
)


def only_returns() -> str:
    """

    Returns:
        str: A fixed word.
    """
    return "word"


CASES.add(
    id="pai-only-a-returns-section",
    source=PAI + "test_only_returns_type",
    fn=only_returns,
    description="",
    properties={},
    differs=RETURNS_DIFFER,
)


def keyword_arguments_only(**options: int) -> str:
    """A docstring in no particular style."""
    return str(options)


CASES.add(
    id="pai-kwargs-only",
    source=PAI + "test_docstring_unknown",
    fn=keyword_arguments_only,
    error="parameter '**options' cannot be shown to a model",
    differs="pydantic-ai shows **kwargs as an open object; kode refuses it",
)


async def google_without_summary(
    count: int, label: Annotated[str, Field(description="From Field")]
) -> str:
    """
    Args:
        count: How many times.
        label: What to call it.
    """
    return f"{count} {label}"


for _style in ("google", "auto"):
    CASES.add(
        id=f"pai-google-without-summary-{_style}",
        source=PAI + "test_docstring_google_no_body",
        fn=google_without_summary,
        options={"docstring_style": _style},
        description="",
        params={"count": "How many times.", "label": "From Field"},
        required=["count", "label"],
    )


class Point(BaseModel):
    x: int
    y: str


def only_a_model(point: Point) -> str:
    return f"{point.x} {point.y}"


CASES.add(
    id="pai-a-model-as-the-only-parameter",
    source=PAI + "test_takes_just_model",
    fn=only_a_model,
    description="",
    schema={
        "$defs": {
            "Point": {
                "properties": {"x": {"type": "integer"}, "y": {"type": "string"}},
                "required": ["x", "y"],
                "type": "object",
            }
        },
        "additionalProperties": False,
        "properties": {"point": {"$ref": "#/$defs/Point"}},
        "required": ["point"],
        "type": "object",
    },
    calls=(({"point": {"x": 0, "y": "a"}}, "0 a"),),
    differs="pydantic-ai shows a function whose only parameter is a model as that model's "
    "fields; kode keeps the parameter, so the schema reads like the signature",
)


def a_model_and_a_number(point: Point, z: int) -> str:
    return f"{point.x} {point.y} {z}"


CASES.add(
    id="pai-a-model-and-a-number",
    source=PAI + "test_takes_model_and_int",
    fn=a_model_and_a_number,
    properties={"point": {"$ref": "#/$defs/Point"}, "z": {"type": "integer"}},
    required=["point", "z"],
    calls=(({"point": {"x": 0, "y": "a"}, "z": 0}, "0 a 0"),),
)


def context_later(x: int, ctx: ToolContext) -> str:
    return "Hello"


CASES.add(
    id="pai-context-second",
    source=PAI + "test_tool_ctx_second",
    fn=context_later,
    required=["x"],
    params={"x": None},
    differs="pydantic-ai requires the context to be the first parameter; kode accepts it in "
    "any position",
)


async def undocumented_parameters(foo: int, bar: str) -> str:
    """Say what it does, but not what its parameters are."""
    return f"{foo} {bar}"


CASES.add(
    id="pai-require-parameter-descriptions",
    source=PAI + "test_enforce_parameter_descriptions",
    fn=undocumented_parameters,
    options={"require_descriptions": True},
    error="parameter 'foo' has no description; parameter 'bar' has no description",
)


async def documents_a_missing_parameter(ctx: ToolContext, foo: int) -> str:
    """Document foo, and bar which does not exist.

    :param foo: The foo.
    :param bar: The bar.
    """
    return f"{foo}"


CASES.add(
    id="pai-docstring-names-a-missing-parameter",
    source=PAI + "test_enforce_parameter_descriptions_noraise",
    fn=documents_a_missing_parameter,
    options={"require_descriptions": True},
    error="the docstring documents parameter 'bar', which the function does not have",
    differs="pydantic-ai accepts a docstring that documents a parameter the function lacks; "
    "kode refuses it, since it is a renamed parameter or a typo",
)


def required_before_optional(ctx: ToolContext, a: int, b: int = 1) -> int:
    return a + b


def keyword_only_optional_first(*, a: int = 1, b: int) -> int:
    return a * b


CASES.add(
    id="pai-required-with-context",
    source=PAI + "test_json_schema_required_parameters",
    fn=required_before_optional,
    schema={
        "additionalProperties": False,
        "properties": {"a": {"type": "integer"}, "b": {"default": 1, "type": "integer"}},
        "required": ["a"],
        "type": "object",
    },
    differs="pydantic-ai leaves defaults out of the schema; kode shows them, so the model "
    "knows what leaving a parameter out means",
)

CASES.add(
    id="pai-keyword-only-optional-first",
    source=PAI + "test_json_schema_required_parameters",
    fn=keyword_only_optional_first,
    properties={"a": {"default": 1, "type": "integer"}, "b": {"type": "integer"}},
    required=["b"],
)


def context_with_default(ctx: ToolContext, a: int, b: int = 2) -> int:
    return a + b


def keyword_only_with_default(*, a: int = 3, b: int) -> int:
    return a * b


def returns_nothing() -> None:
    return None


CASES.add(
    id="pai-call-without-optional-parameters",
    source=PAI + "test_call_tool_without_unrequired_parameters",
    fn=context_with_default,
    calls=(({"a": 13}, "15"), ({"a": 13, "b": 4}, "17")),
)

CASES.add(
    id="pai-call-keyword-only-without-optional",
    source=PAI + "test_call_tool_without_unrequired_parameters",
    fn=keyword_only_with_default,
    calls=(({"b": 17}, "51"), ({"a": 4, "b": 17}, "68")),
)

CASES.add(
    id="pai-call-no-arguments-empty-input",
    source=PAI + "test_call_tool_without_unrequired_parameters",
    fn=returns_nothing,
    calls=(("", NO_OUTPUT), ({}, NO_OUTPUT)),  # type: ignore[arg-type]
)


def with_json_schema(x: Annotated[str | None, WithJsonSchema({"type": "string"})] = None) -> Any:
    return x


CASES.add(
    id="pai-with-json-schema",
    source=PAI + "test_schema_generator",
    fn=with_json_schema,
    properties={"x": {"default": None, "type": "string"}},
    required=[],
    calls=(({}, NO_OUTPUT), ({"x": "a"}, "a")),
)


class Scores(TypedDict):
    a: int
    """The first score"""
    b: int
    """The second score"""


def scored(data: Scores) -> int:
    return data["a"] + data["b"]


CASES.add(
    id="pai-typeddict-attribute-docstrings",
    source=PAI + "test_tool_parameters_with_attribute_docstrings",
    fn=scored,
    properties={"data": {"$ref": "#/$defs/Scores"}},
    defs={
        "Scores": {
            "additionalProperties": False,
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
            "type": "object",
        }
    },
    calls=(({"data": {"a": 1, "b": 2}}, "3"),),
    differs="pydantic-ai shows the only TypedDict parameter as the schema itself and reads "
    "its attribute docstrings; kode keeps the parameter and, like pydantic by default, does "
    "not read attribute docstrings (Annotated descriptions work there)",
)

CASES.add(
    id="pai-builtin-without-signature",
    source=PAI + "test_builtin_tool_registration",
    fn=min,
    error="its signature cannot be read (no signature found for builtin",
)


def rename_me(arg: str) -> str:
    return arg


CASES.add(
    id="pai-name-given",
    source=PAI + "test_plain_tool_name",
    fn=rename_me,
    options={"name": "foo_tool"},
    calls=(({"arg": "a"}, "a"),),
)


def add_deps(ctx: ToolContext[int], x: int) -> int:
    return x + ctx.deps


CASES.add(
    id="pai-string-annotations-with-context",
    source=PAI + "test_future_run_context",
    fn=add_deps,
    params={"x": None},
    deps=5,
    calls=(({"x": 0}, "5"),),
)


async def documents_its_return_without_a_section() -> str:
    """A tool that mentions what it returns, with no returns section."""
    return ""


CASES.add(
    id="pai-description-mentioning-returns",
    source=PAI + "test_suppress_griffe_logging",
    fn=documents_its_return_without_a_section,
    description="A tool that mentions what it returns, with no returns section.",
    properties={},
)
