"""Schema corpus: facts from FastMCP's tests/tools/test_tool.py."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from corpus_case import FMCP, Cases
from pydantic import BaseModel
from typing_extensions import TypedDict

CASES = Cases()


def add_two(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


CASES.add(
    id="fmcp-basic",
    source=FMCP + "TestToolFromFunction::test_basic_function",
    fn=add_two,
    description="Add two numbers.",
    properties={"a": {"type": "integer"}, "b": {"type": "integer"}},
    output_schema={"type": "integer"},
    calls=(({"a": 1, "b": 2}, "3"),),
    differs="FastMCP wraps a non-object return in {'result': ...} for its output schema; "
    "kode's output_schema is the return type's own schema",
)


async def fetch_text(url: str) -> str:
    """Fetch text from a URL."""
    return f"Text from {url}"


CASES.add(
    id="fmcp-async",
    source=FMCP + "TestToolFromFunction::test_async_function",
    fn=fetch_text,
    description="Fetch text from a URL.",
    properties={"url": {"type": "string"}},
    calls=(({"url": "u"}, "Text from u"),),
)


class Summer:
    """Sum two numbers (the class docstring)."""

    def __call__(self, x: int, y: int) -> int:
        """Not the description: the class has one."""
        return x + y


class AsyncSummer:
    """Sum two numbers, awaited."""

    async def __call__(self, x: int, y: int) -> int:
        """Not the description either."""
        return x + y


for _id, _obj, _text in [
    ("fmcp-callable-object", Summer(), "Sum two numbers (the class docstring)."),
    ("fmcp-async-callable-object", AsyncSummer(), "Sum two numbers, awaited."),
]:
    CASES.add(
        id=_id,
        source=FMCP + "TestToolFromFunction::test_callable_object",
        fn=_obj,
        options={"name": "summer"},
        description=_text,
        properties={"x": {"type": "integer"}, "y": {"type": "integer"}},
        calls=(({"x": 1, "y": 2}, "3"),),
        differs="FastMCP names the tool after the class; kode asks for name= (an object has "
        "no __name__)",
    )

CASES.add(
    id="fmcp-callable-object-without-a-name",
    source=FMCP + "TestToolFromFunction::test_callable_object",
    fn=Summer(),
    error="it has no __name__ to name the tool after: pass name=",
    differs="FastMCP names the tool after the class; kode asks for name=",
)


class NewUser(BaseModel):
    name: str
    age: int


def create_user(user: NewUser, flag: bool) -> dict[str, Any]:
    """Create a user."""
    return {"id": 1, **user.model_dump()}


CASES.add(
    id="fmcp-model-parameter",
    source=FMCP + "TestToolFromFunction::test_pydantic_model_function",
    fn=create_user,
    description="Create a user.",
    defs={
        "NewUser": {
            "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
            "required": ["name", "age"],
            "type": "object",
        }
    },
    properties={"flag": {"type": "boolean"}},
    calls=(({"user": {"name": "a", "age": 3}, "flag": True}, '{"id":1,"name":"a","age":3}'),),
)


def take_bytes(data: bytes) -> str:
    return repr(data)


CASES.add(
    id="fmcp-bytes-parameter",
    source=FMCP + "TestToolFromFunction::test_tool_with_image_return",
    fn=take_bytes,
    properties={"data": {"format": "binary", "type": "string"}},
    calls=(({"data": "test.png"}, "b'test.png'"),),
)

CASES.add(
    id="fmcp-lambda-with-a-name",
    source=FMCP + "TestToolFromFunction::test_lambda",
    fn=lambda: "x",
    options={"name": "my_tool"},
    properties={},
    calls=(({}, "x"),),
)

CASES.add(
    id="fmcp-lambda-without-a-name",
    source=FMCP + "TestToolFromFunction::test_lambda_with_no_name",
    fn=lambda: "x",
    error="tool name '<lambda>' is invalid: use 1-64 letters, digits, '_' or '-'; pass name=",
)


def underscored(_a: int, _b: int) -> int:
    """Add two numbers."""
    return _a + _b


CASES.add(
    id="fmcp-underscored-parameters",
    source=FMCP + "TestToolFromFunction::test_private_arguments",
    fn=underscored,
    error="parameter '_a' starts with an underscore, which pydantic cannot validate",
    differs="FastMCP accepts parameters starting with an underscore; kode refuses them (a "
    "pydantic model cannot have such fields, and the name reads as private)",
)


def with_varargs(a: int, b: int, *rest: int) -> int:
    """Add two numbers."""
    return a + b


def with_varkwargs(a: int, b: int, **rest: int) -> int:
    """Add two numbers."""
    return a + b


CASES.add(
    id="fmcp-varargs-refused",
    source=FMCP + "TestToolFromFunction::test_tool_with_varargs_not_allowed",
    fn=with_varargs,
    error="parameter '*rest' cannot be shown to a model",
)

CASES.add(
    id="fmcp-varkwargs-refused",
    source=FMCP + "TestToolFromFunction::test_tool_with_varkwargs_not_allowed",
    fn=with_varkwargs,
    error="parameter '**rest' cannot be shown to a model",
)


class Adders:
    def add(self, x: int, y: int) -> int:
        """Add two numbers."""
        return x + y

    def add_more(self, x: int, y: int, *more: int) -> int:
        """Add numbers."""
        return x + y

    @classmethod
    def call(cls, x: int, y: int) -> int:
        """Add two numbers, from the class."""
        return x + y


CASES.add(
    id="fmcp-instance-method",
    source=FMCP + "TestToolFromFunction::test_instance_method",
    fn=Adders().add,
    description="Add two numbers.",
    params={"x": None, "y": None},
)

CASES.add(
    id="fmcp-instance-method-varargs-refused",
    source=FMCP + "TestToolFromFunction::test_instance_method_with_varargs_not_allowed",
    fn=Adders().add_more,
    error="parameter '*more' cannot be shown to a model",
)

CASES.add(
    id="fmcp-classmethod",
    source=FMCP + "TestToolFromFunction::test_classmethod",
    fn=Adders.call,
    description="Add two numbers, from the class.",
    params={"x": None, "y": None},
    calls=(({"x": 1, "y": 2}, "3"),),
)


class Unserialisable:
    def __init__(self, data: Any) -> None:
        self.data = data


@dataclasses.dataclass
class PersonRecord:
    name: str
    age: int


class PersonModel(BaseModel):
    name: str
    age: int


class PersonDict(TypedDict):
    name: str
    age: int


PERSON_SCHEMA = {
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
    "type": "object",
}


def _returning(annotation: Any, name: str) -> Callable[[], Any]:
    def fn() -> None:
        return None

    fn.__annotations__ = {"return": annotation}
    fn.__name__ = fn.__qualname__ = name
    return fn


def no_return_annotation():  # type: ignore[no-untyped-def]
    pass


WRAP_DIFFERS = "FastMCP wraps it in an object {'result': ...}; kode does not wrap"
STR_DIFFERS = (
    "FastMCP gives a str return a wrapped output schema; kode gives none for text, which "
    "becomes the result's text as it is"
)

for _id, _fn, _schema, _differs in [
    ("fmcp-output-no-annotation", no_return_annotation, None, ""),
    ("fmcp-output-none", _returning(None, "returns_none"), None, ""),
    ("fmcp-output-any", _returning(Any, "returns_any"), None, ""),
    ("fmcp-output-int", _returning(int, "returns_int"), {"type": "integer"}, WRAP_DIFFERS),
    ("fmcp-output-str", _returning(str, "returns_str"), None, STR_DIFFERS),
    (
        "fmcp-output-list",
        _returning(list[int], "returns_list"),
        {"items": {"type": "integer"}, "type": "array"},
        WRAP_DIFFERS,
    ),
    (
        "fmcp-output-dict",
        _returning(dict[str, int], "returns_dict"),
        {"additionalProperties": {"type": "integer"}, "type": "object"},
        "",
    ),
    ("fmcp-output-dataclass", _returning(PersonRecord, "returns_dataclass"), PERSON_SCHEMA, ""),
    ("fmcp-output-model", _returning(PersonModel, "returns_model"), PERSON_SCHEMA, ""),
    ("fmcp-output-typeddict", _returning(PersonDict, "returns_typeddict"), PERSON_SCHEMA, ""),
    ("fmcp-output-unserialisable", _returning(Unserialisable, "returns_object"), None, ""),
    (
        "fmcp-output-unserialisable-union",
        _returning(Unserialisable | int, "returns_object_or_int"),
        None,
        "",
    ),
]:
    CASES.add(
        id=_id,
        source=FMCP + "TestToolFromFunctionOutputSchema",
        fn=_fn,
        properties={},
        output_schema=_schema,
        differs=_differs,
    )
