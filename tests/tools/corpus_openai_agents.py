"""Schema corpus: facts from the OpenAI Agents SDK's tests of function_schema and function_tool."""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal

from corpus_case import OAI_SCHEMA, OAI_TOOL, Cases
from pydantic import BaseModel, Field
from typing_extensions import TypedDict

from kode import ToolContext

CASES = Cases()


def takes_nothing() -> str:
    """Answer with a fixed word."""
    return "ok"


CASES.add(
    id="oai-no-arguments",
    source=OAI_SCHEMA + "test_no_args_function",
    fn=takes_nothing,
    description="Answer with a fixed word.",
    schema={"additionalProperties": False, "properties": {}, "type": "object", "required": []},
    calls=(({}, "ok"),),
)


def only_a_context(ctx: ToolContext[str]) -> str:
    return f"ok {ctx.deps}"


CASES.add(
    id="oai-only-a-context",
    source=OAI_SCHEMA + "test_no_args_function_with_context",
    fn=only_a_context,
    properties={},
    deps="deps",
    calls=(({}, "ok deps"),),
)


def sum_with_default(a: int, b: int = 5) -> int:
    """
    Args:
        a: The number to start from
        b: The number added to it

    Returns:
        The sum.
    """
    return a + b


CASES.add(
    id="oai-docstring-without-summary",
    source=OAI_SCHEMA + "test_simple_function",
    fn=sum_with_default,
    description="",
    params={"a": "The number to start from", "b": "The number added to it"},
    required=["a"],
    properties={
        "a": {"description": "The number to start from", "type": "integer"},
        "b": {"default": 5, "description": "The number added to it", "type": "integer"},
    },
    calls=(({"a": 3}, "8"), ({"a": 3, "b": 10}, "13")),
    refused=(({"a": "three"}, "'a' should be a valid integer"),),
)


def with_star_args(x: int, *numbers: float, flag: bool = False, **extra: Any) -> None:
    """Take anything."""


CASES.add(
    id="oai-star-args-and-kwargs",
    source=OAI_SCHEMA + "test_varargs_function",
    fn=with_star_args,
    error="parameter '*numbers' cannot be shown to a model, which names every argument: take a "
    "list instead, `numbers: list[float]`; parameter '**extra' cannot be shown to a model, "
    "which passes only the parameters the schema names: make each option a parameter, or take "
    "`extra: dict[str, Any]`",
    differs="the SDK turns *args into an array and **kwargs into an object property; kode "
    "refuses both, since a model cannot call them by the names the schema would show",
)


class Pair(TypedDict):
    left: int
    right: str


class Inner(BaseModel):
    count: int
    label: str


class Outer(BaseModel):
    inner: Inner
    pair: Pair


def take_outer(model: Outer) -> str:
    return f"{model.inner.count} {model.inner.label} {model.pair['left']} {model.pair['right']}"


CASES.add(
    id="oai-nested-model-and-typeddict",
    source=OAI_SCHEMA + "test_nested_data_function",
    fn=take_outer,
    properties={"model": {"$ref": "#/$defs/Outer"}},
    defs={
        "Inner": {
            "properties": {"count": {"type": "integer"}, "label": {"type": "string"}},
            "required": ["count", "label"],
            "type": "object",
        },
        # Inside a pydantic model, a TypedDict takes the model's config (extra keys ignored);
        # as a parameter of its own it is closed (see oai-tool-closed-object).
        "Pair": {
            "properties": {"left": {"type": "integer"}, "right": {"type": "string"}},
            "required": ["left", "right"],
            "type": "object",
        },
    },
    calls=(
        (
            {"model": {"inner": {"count": 1, "label": "a"}, "pair": {"left": 2, "right": "b"}}},
            "1 a 2 b",
        ),
    ),
)


def model_and_flag(model: Outer, flag: int = 0) -> str:
    """
    Report a model and a flag.

    Args:
        model: The nested model.
        flag: A flag, 0 unless given.

    Returns:
        What was received.
    """
    return f"{model.inner.count} {flag}"


OUTER = {"inner": {"count": 7, "label": "a"}, "pair": {"left": 2, "right": "b"}}

CASES.add(
    id="oai-summary-on-the-line-after-the-quotes",
    source=OAI_SCHEMA + "test_complex_args_and_docs_function",
    fn=model_and_flag,
    description="Report a model and a flag.",
    params={"model": "The nested model.", "flag": "A flag, 0 unless given."},
    required=["model"],
    calls=(({"model": OUTER}, "7 0"),),
    refused=(({"model": OUTER, "flag": "high"}, "'flag' should be a valid integer"),),
)


def context_then_numbers(ctx: ToolContext[str], a: int, b: int = 5) -> int:
    return a + b


CASES.add(
    id="oai-context-first",
    source=OAI_SCHEMA + "test_function_with_context",
    fn=context_then_numbers,
    required=["a"],
    params={"a": None, "b": None},
    deps="d",
    calls=(({"a": 1, "b": 2}, "3"),),
)


class Calculator:
    def add(self, a: int, b: int = 5) -> int:
        return a + b

    def add_in_context(self, ctx: ToolContext, a: int, b: int = 5) -> int:
        return a + b

    @classmethod
    def class_add(cls, a: int, b: int = 5) -> int:
        return a + b

    @classmethod
    def class_add_in_context(cls, ctx: ToolContext, a: int, b: int = 5) -> int:
        return a + b

    @staticmethod
    def static_add(a: int, b: int = 5) -> int:
        return a + b

    @staticmethod
    def static_add_in_context(ctx: ToolContext, a: int, b: int = 5) -> int:
        return a + b


CALCULATOR = Calculator()
ADD_SCHEMA = {
    "additionalProperties": False,
    "properties": {"a": {"type": "integer"}, "b": {"default": 5, "type": "integer"}},
    "required": ["a"],
    "type": "object",
}

for _id, _fn in [
    ("oai-bound-method", CALCULATOR.add),
    ("oai-bound-method-with-context", CALCULATOR.add_in_context),
    ("oai-classmethod", Calculator.class_add),
    ("oai-classmethod-with-context", Calculator.class_add_in_context),
    ("oai-staticmethod", Calculator.static_add),
    ("oai-staticmethod-with-context", Calculator.static_add_in_context),
]:
    CASES.add(
        id=_id,
        source=OAI_SCHEMA + "test_class_based_functions",
        fn=_fn,
        schema=ADD_SCHEMA,
        calls=(({"a": 1, "b": 2}, "3"), ({"a": 1}, "6")),
    )


class Flavour(str, enum.Enum):  # noqa: UP042 - the str mixin is the fact
    SWEET = "sweet"
    SOUR = "sour"
    BITTER = "bitter"


def taste(flavour: Flavour, grade: Literal["x", "y", "z"]) -> str:
    return f"{flavour.value} {grade}"


CASES.add(
    id="oai-enum-and-literal",
    source=OAI_SCHEMA + "test_enum_and_literal_function",
    fn=taste,
    properties={
        "flavour": {"$ref": "#/$defs/Flavour"},
        "grade": {"enum": ["x", "y", "z"], "type": "string"},
    },
    defs={"Flavour": {"enum": ["sweet", "sour", "bitter"], "type": "string"}},
    calls=(({"flavour": "sour", "grade": "y"}, "sour y"),),
    refused=(
        ({"flavour": "salty", "grade": "y"}, "'flavour' should be 'sweet', 'sour' or 'bitter'"),
        ({"flavour": "sour", "grade": "w"}, "'grade' should be 'x', 'y' or 'z'"),
    ),
)


def context_second(a: int, ctx: ToolContext) -> int:
    return a


CASES.add(
    id="oai-context-not-first",
    source=OAI_SCHEMA + "test_run_context_in_non_first_position_raises_value_error",
    fn=context_second,
    schema={
        "additionalProperties": False,
        "properties": {"a": {"type": "integer"}},
        "required": ["a"],
        "type": "object",
    },
    calls=(({"a": 4}, "4"),),
    differs="the SDK refuses a context that is not the first parameter; kode finds the "
    "context parameter by its annotation wherever it is",
)


def star_tuples(*groups: tuple[int, ...]) -> int:
    return 0


CASES.add(
    id="oai-star-args-of-tuples",
    source=OAI_SCHEMA + "test_var_positional_tuple_annotation",
    fn=star_tuples,
    error="parameter '*groups' cannot be shown to a model",
    differs="the SDK shows *args as an array property 'args'; kode refuses it",
)


def star_star_dicts(**options: dict[str, int]) -> None:
    pass


CASES.add(
    id="oai-kwargs-of-dicts",
    source=OAI_SCHEMA + "test_var_keyword_dict_annotation",
    fn=star_star_dicts,
    error="parameter '**options' cannot be shown to a model",
    differs="the SDK shows **kwargs as an object property 'kwargs'; kode refuses it",
)


def take_mapping(scores: Mapping[str, int]) -> int:
    return sum(scores.values())


CASES.add(
    id="oai-mapping-parameter",
    source=OAI_SCHEMA + "test_schema_with_mapping_raises_strict_mode_error",
    fn=take_mapping,
    properties={"scores": {"additionalProperties": {"type": "integer"}, "type": "object"}},
    calls=(({"scores": {"a": 1, "b": 2}}, "3"),),
    differs="the SDK refuses a mapping in its strict mode (every object closed); kode's one "
    "schema allows open objects, and dialects that need strictness translate at the edge",
)


def echo_number(x: int) -> int:
    return x


CASES.add(
    id="oai-name-given",
    source=OAI_SCHEMA + "test_name_override_without_docstring",
    fn=echo_number,
    options={"name": "custom"},
    description="",
    calls=(({"x": 2}, "2"),),
)


def field_default_required(value: int = Field(..., gt=10, le=100)) -> int:
    return value * 2


CASES.add(
    id="oai-field-default-required-with-bounds",
    source=OAI_SCHEMA + "test_function_with_field_required_constraints",
    fn=field_default_required,
    properties={"value": {"exclusiveMinimum": 10, "maximum": 100, "type": "integer"}},
    required=["value"],
    calls=(({"value": 50}, "100"),),
    refused=(
        ({"value": 5}, "'value' should be greater than 10"),
        ({"value": 150}, "'value' should be less than or equal to 100"),
    ),
)


def field_default_optional(label: str, weight: float = Field(default=5.0, ge=0.0)) -> str:
    return f"{label}: {weight}"


CASES.add(
    id="oai-field-default-optional-with-bound",
    source=OAI_SCHEMA + "test_function_with_field_optional_with_default",
    fn=field_default_optional,
    properties={"weight": {"default": 5.0, "minimum": 0.0, "type": "number"}},
    required=["label"],
    calls=(({"label": "t"}, "t: 5.0"), ({"label": "t", "weight": 10.5}, "t: 10.5")),
    refused=(({"label": "t", "weight": -1.0}, "'weight' should be greater than or equal to 0"),),
)


def plain_string_annotations(
    a: Annotated[int, "The first addend"], b: Annotated[int, "The second addend"]
) -> int:
    return a + b


CASES.add(
    id="oai-annotated-plain-strings",
    source=OAI_SCHEMA + "test_function_uses_annotated_descriptions_without_docstring",
    fn=plain_string_annotations,
    params={"a": "The first addend", "b": "The second addend"},
)


def annotation_and_docstring(
    a: Annotated[int, "From the annotation (a)"], b: Annotated[int, "From the annotation (b)"]
) -> int:
    """Add two integers.

    Args:
        a: From the docstring.
    """
    return a + b


CASES.add(
    id="oai-annotated-string-against-docstring",
    source=OAI_SCHEMA + "test_function_prefers_docstring_descriptions_over_annotated_metadata",
    fn=annotation_and_docstring,
    description="Add two integers.",
    params={"a": "From the annotation (a)", "b": "From the annotation (b)"},
    differs="the SDK lets the docstring win over Annotated metadata; in kode what is written "
    "next to the parameter wins (Field > Doc > a plain string > the docstring)",
)


def field_against_docstring(
    first: int = Field(..., description="From Field"),
    second: str = Field(default="hello", description="From Field"),
) -> str:
    """
    Compare Field and docstring descriptions.

    Args:
        first: From the docstring
        second: From the docstring
    """
    return f"{first}: {second}"


CASES.add(
    id="oai-field-description-against-docstring",
    source=OAI_SCHEMA + "test_function_with_field_description_merge",
    fn=field_against_docstring,
    description="Compare Field and docstring descriptions.",
    params={"first": "From Field", "second": "From Field"},
    properties={"second": {"default": "hello", "description": "From Field", "type": "string"}},
    differs="the SDK lets the docstring win over Field(description=...); kode lets the Field win",
)


def field_description_only(
    described: int = Field(..., description="Only Field says this"),
    plain: str = Field(default="hello"),
) -> str:
    return f"{described}: {plain}"


CASES.add(
    id="oai-field-description-without-docstring",
    source=OAI_SCHEMA + "test_function_with_field_description_only",
    fn=field_description_only,
    params={"described": "Only Field says this", "plain": None},
    required=["described"],
)


def field_string_bounds(
    name: str = Field(..., min_length=3, max_length=20, pattern=r"^[A-Za-z]+$"),
) -> str:
    return f"Hello, {name}!"


STRING_BOUNDS = {"maxLength": 20, "minLength": 3, "pattern": "^[A-Za-z]+$", "type": "string"}
STRING_REFUSALS = (
    ({"name": "Al"}, "'name' should have at least 3 characters"),
    ({"name": "A" * 25}, "'name' should have at most 20 characters"),
    ({"name": "Alice123"}, "'name' should match pattern '^[A-Za-z]+$'"),
)

CASES.add(
    id="oai-field-string-constraints",
    source=OAI_SCHEMA + "test_function_with_field_string_constraints",
    fn=field_string_bounds,
    properties={"name": STRING_BOUNDS},
    calls=(({"name": "Alice"}, "Hello, Alice!"),),
    refused=STRING_REFUSALS,
)


def field_many_constraints(
    score: int = Field(..., ge=0, le=100, description="Score out of 100"),
    name: str = Field(default="Nobody", min_length=1, max_length=50),
    factor: float = Field(default=1.0, gt=0.0, description="A positive factor"),
) -> str:
    return f"{name} scored {score * factor}"


MANY_PROPERTIES = {
    "score": {"description": "Score out of 100", "maximum": 100, "minimum": 0, "type": "integer"},
    "name": {"default": "Nobody", "maxLength": 50, "minLength": 1, "type": "string"},
    "factor": {
        "default": 1.0,
        "description": "A positive factor",
        "exclusiveMinimum": 0.0,
        "type": "number",
    },
}
MANY_CALLS = (
    ({"score": 85}, "Nobody scored 85.0"),
    ({"score": 90, "name": "Alice", "factor": 1.5}, "Alice scored 135.0"),
)
MANY_REFUSALS = (
    ({"score": 150}, "'score' should be less than or equal to 100"),
    ({"score": 50, "name": ""}, "'name' should have at least 1 character"),
    ({"score": 50, "factor": 0.0}, "'factor' should be greater than 0"),
)

CASES.add(
    id="oai-field-several-constraints",
    source=OAI_SCHEMA + "test_function_with_field_multiple_constraints",
    fn=field_many_constraints,
    properties=MANY_PROPERTIES,
    required=["score"],
    calls=MANY_CALLS,
    refused=MANY_REFUSALS,
)


def annotated_required_bounds(value: Annotated[int, Field(..., gt=10, le=100)]) -> int:
    return value * 2


CASES.add(
    id="oai-annotated-field-required-with-bounds",
    source=OAI_SCHEMA + "test_function_with_annotated_field_required_constraints",
    fn=annotated_required_bounds,
    properties={"value": {"exclusiveMinimum": 10, "maximum": 100, "type": "integer"}},
    required=["value"],
    calls=(({"value": 50}, "100"),),
    refused=(({"value": 5}, "greater than 10"), ({"value": 150}, "less than or equal to 100")),
)


def annotated_optional_bound(
    label: str, weight: Annotated[float, Field(default=5.0, ge=0.0)]
) -> str:
    return f"{label}: {weight}"


CASES.add(
    id="oai-annotated-field-default",
    source=OAI_SCHEMA + "test_function_with_annotated_field_optional_with_default",
    fn=annotated_optional_bound,
    properties={"weight": {"default": 5.0, "minimum": 0.0, "type": "number"}},
    required=["label"],
    calls=(({"label": "t"}, "t: 5.0"), ({"label": "t", "weight": 10.5}, "t: 10.5")),
    refused=(({"label": "t", "weight": -1.0}, "'weight' should be greater than or equal to 0"),),
)


def annotated_string_bounds(
    name: Annotated[str, Field(..., min_length=3, max_length=20, pattern=r"^[A-Za-z]+$")],
) -> str:
    return f"Hello, {name}!"


CASES.add(
    id="oai-annotated-field-string-constraints",
    source=OAI_SCHEMA + "test_function_with_annotated_field_string_constraints",
    fn=annotated_string_bounds,
    properties={"name": STRING_BOUNDS},
    calls=(({"name": "Alice"}, "Hello, Alice!"),),
    refused=STRING_REFUSALS,
)


def annotated_many_constraints(
    score: Annotated[int, Field(..., ge=0, le=100, description="Score out of 100")],
    name: Annotated[str, Field(default="Nobody", min_length=1, max_length=50)],
    factor: Annotated[float, Field(default=1.0, gt=0.0, description="A positive factor")],
) -> str:
    return f"{name} scored {score * factor}"


CASES.add(
    id="oai-annotated-field-several-constraints",
    source=OAI_SCHEMA + "test_function_with_annotated_field_multiple_constraints",
    fn=annotated_many_constraints,
    properties=MANY_PROPERTIES,
    required=["score"],
    calls=MANY_CALLS,
    refused=MANY_REFUSALS,
)


class Greeter:
    def greet(self, name: str) -> str:
        return f"Hello, {name}"

    def greet_in_context(self, ctx: ToolContext, name: str) -> str:
        return f"Hello, {name}"


CASES.add(
    id="oai-bound-method-without-self",
    source=OAI_SCHEMA + "test_method_self_param_skipped",
    fn=Greeter().greet,
    required=["name"],
    params={"name": None},
    calls=(({"name": "Ada"}, "Hello, Ada"),),
)

CASES.add(
    id="oai-bound-method-context-second",
    source=OAI_SCHEMA + "test_method_self_with_context_second_param",
    fn=Greeter().greet_in_context,
    required=["name"],
    params={"name": None},
    calls=(({"name": "Ada"}, "Hello, Ada"),),
)


def _made_with_cls() -> Callable[..., str]:
    namespace: dict[str, Any] = {}
    exec("def greet(cls, name: str) -> str:\n    return name\n", namespace)
    fn: Callable[..., str] = namespace["greet"]
    return fn


CASES.add(
    id="oai-unannotated-cls-first",
    source=OAI_SCHEMA + "test_classmethod_cls_param_skipped",
    fn=_made_with_cls(),
    error="parameter 'cls' has no type annotation",
    differs="the SDK drops an unannotated first parameter named cls; kode does not guess that "
    "a plain function's first parameter is bound, and asks for an annotation",
)


def unannotated_first(data, flag: bool = False) -> str:  # type: ignore[no-untyped-def]
    return str(data)


CASES.add(
    id="oai-unannotated-parameter",
    source=OAI_SCHEMA + "test_regular_unannotated_first_param_still_included",
    fn=unannotated_first,
    error="parameter 'data' has no type annotation",
    differs="the SDK shows an unannotated parameter as any value; kode refuses it, since a "
    "schema without a type tells the model nothing",
)


def no_arguments_tool() -> str:
    return "ok"


CASES.add(
    id="oai-tool-no-arguments-extra-json",
    source=OAI_TOOL + "test_argless_with_context",
    fn=no_arguments_tool,
    calls=(({}, "ok"), (None, "ok")),  # type: ignore[arg-type]
    refused=(({"a": 1}, "'a' is not a parameter of this tool"),),
    differs="the SDK ignores extra arguments to a tool without parameters; kode refuses every "
    "unknown argument (additionalProperties is false)",
)


def simple_sum(a: int, b: int = 5) -> int:
    return a + b


CASES.add(
    id="oai-tool-default-used",
    source=OAI_TOOL + "test_simple_function",
    fn=simple_sum,
    calls=(({"a": 1}, "6"), ({"a": 1, "b": 2}, "3")),
    refused=(({}, "'a' is required but missing"),),
)


class Box(BaseModel):
    a: int
    b: int = 5


class Tag(TypedDict):
    x: str
    y: int


def unpack(box: Box, tag: Tag, word: str = "hello") -> str:
    return f"{box.a + box.b} {tag['x']}{tag['y']} {word}"


CASES.add(
    id="oai-tool-model-typeddict-default",
    source=OAI_TOOL + "test_complex_args_function",
    fn=unpack,
    required=["box", "tag"],
    properties={"word": {"default": "hello", "type": "string"}},
    calls=(
        ({"box": {"a": 1}, "tag": {"x": "hello", "y": 10}}, "6 hello10 hello"),
        ({"box": {"a": 1, "b": 2}, "tag": {"x": "hello", "y": 10}}, "3 hello10 hello"),
        ({"box": {"a": 1, "b": 2}, "tag": {"x": "h", "y": 1}, "word": "world"}, "3 h1 world"),
    ),
    refused=(({"box": {"a": 1}}, "'tag' is required but missing"),),
)

CASES.add(
    id="oai-tool-name-and-description-given",
    source=OAI_TOOL + "test_function_config_overrides",
    fn=simple_sum,
    options={"name": "custom_name", "description": "custom description"},
    description="custom description",
)

CASES.add(
    id="oai-tool-closed-object",
    source=OAI_TOOL + "test_func_schema_is_strict",
    fn=unpack,
    defs={
        "Tag": {
            "additionalProperties": False,
            "properties": {"x": {"type": "string"}, "y": {"type": "integer"}},
            "required": ["x", "y"],
            "type": "object",
        }
    },
)


def failing(a: int, b: int = 5) -> int:
    raise ValueError("broken")


CASES.add(
    id="oai-tool-raising-function",
    source=OAI_TOOL + "test_function_tool_default_error_works",
    fn=failing,
    refused=(
        ({}, "'a' is required but missing"),
        ({"a": 1}, "ValueError: broken"),
    ),
)
