"""Reading docstrings (kode/tools/docstrings.py): which docstrings document a callable, and
how a docstring without a summary or with a wrapped summary is read."""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import pytest

from kode import Tool, ToolDefinitionError, define_tool


def make(fn: Any, **options: Any) -> Tool[..., Any]:
    return define_tool(registry=None, **options)(fn)


def descriptions(tool: Tool[..., Any]) -> dict[str, str | None]:
    return {k: v.get("description") for k, v in tool.input_schema["properties"].items()}


# --- a docstring that starts with its parameter section ------------------------------------------


def only_args(foo: int, bar: str) -> None:
    """
    Args:
        foo: The foo thing.
        bar: The bar thing.
    """


def only_parameters(foo: int, bar: str) -> None:
    """
    Parameters
    ----------
    foo : int
        The foo thing.
    bar : str
        The bar thing.
    """


def only_params(foo: int, bar: str) -> None:
    """
    :param foo: The foo thing.
    :param bar: The bar thing.
    """


def only_epydoc(foo: int, bar: str) -> None:
    """
    @param foo: The foo thing.
    @param bar: The bar thing.
    """


@pytest.mark.parametrize(
    ("fn", "styles"),
    [
        (only_args, ["auto", "google"]),
        (only_parameters, ["auto", "numpy"]),
        (only_params, ["auto", "rest", "sphinx"]),
        (only_epydoc, ["auto", "epydoc"]),
    ],
)
def test_a_docstring_without_a_summary_gives_an_empty_description_and_its_parameters(
    fn: Any, styles: list[str]
) -> None:
    for style in styles:
        tool = make(fn, docstring_style=style)
        assert tool.description == ""
        assert descriptions(tool) == {"foo": "The foo thing.", "bar": "The bar thing."}


def test_a_google_docstring_without_a_summary_is_not_refused_in_google_style() -> None:
    # It used to be: the parameter lines were dedented twice and read as no parameter at all.
    tool = make(only_args, docstring_style="google", require_descriptions=False)
    assert tool.input_schema["properties"]["foo"]["description"] == "The foo thing."


# --- a summary wrapped over several lines --------------------------------------------------------


def wrapped(a: int) -> None:
    """Multi-line summary
    continues on the next line.

    A body paragraph.

    Args:
        a: The a.
    """


def wrapped_numpy(a: int) -> None:
    """Multi-line summary
    continues on the next line.

    Parameters
    ----------
    a : int
        The a.
    """


def wrapped_rest(a: int) -> None:
    """Multi-line summary
    continues on the next line.

    :param a: The a.
    """


def wrapped_epydoc(a: int) -> None:
    """Multi-line summary
    continues on the next line.

    @param a: The a.
    """


def test_a_wrapped_summary_stays_one_paragraph() -> None:
    tool = make(wrapped)
    assert (
        tool.description == "Multi-line summary\ncontinues on the next line.\n\nA body paragraph."
    )
    assert descriptions(tool) == {"a": "The a."}


@pytest.mark.parametrize("fn", [wrapped_numpy, wrapped_rest, wrapped_epydoc])
def test_a_wrapped_summary_stays_one_paragraph_in_every_style(fn: Any) -> None:
    tool = make(fn)
    assert tool.description == "Multi-line summary\ncontinues on the next line."
    assert descriptions(tool) == {"a": "The a."}


def test_a_summary_followed_by_a_blank_line_keeps_its_paragraphs() -> None:
    def f(a: int) -> None:
        """Summary.

        Body
        on two lines.
        """

    assert make(f).description == "Summary.\n\nBody\non two lines."


# --- callable objects ----------------------------------------------------------------------------


class Doubler:
    def __call__(self, x: int, times: int = 2) -> int:
        """Multiply a number.

        Args:
            x: The number.
            times: How many times.
        """
        return x * times


class DocumentedDoubler:
    """Doubles numbers (the class docstring).

    Args:
        times: The factor given to the constructor, not a parameter of the tool.
        x: The number, as the class says it.
    """

    def __call__(self, x: int, times: int = 2) -> int:
        """Multiply a number (the docstring of __call__).

        Args:
            times: How many times, as __call__ says it.
        """
        return x * times


def test_a_callable_object_without_a_class_docstring_reads_its_call_docstring() -> None:
    tool = make(Doubler(), name="doubler")
    assert tool.description == "Multiply a number."
    assert descriptions(tool) == {"x": "The number.", "times": "How many times."}
    assert tool.run_sync({"x": 4}).text == "8"


def test_a_callable_object_merges_its_class_and_call_docstrings() -> None:
    tool = make(DocumentedDoubler(), name="doubler")
    # The class describes the tool; __call__ wins for a parameter both document.
    assert tool.description == "Doubles numbers (the class docstring)."
    assert descriptions(tool) == {
        "x": "The number, as the class says it.",
        "times": "How many times, as __call__ says it.",
    }


def test_a_class_docstring_may_document_constructor_arguments() -> None:
    class Scaled:
        """Scale numbers.

        Args:
            factor: Given to the constructor; not a parameter of __call__.
        """

        def __init__(self, factor: int) -> None:
            self.factor = factor

        def __call__(self, x: int) -> int:
            return x * self.factor

    tool = make(Scaled(3), name="scaled")
    assert tool.description == "Scale numbers."
    assert tool.run_sync({"x": 2}).text == "6"


def test_a_call_docstring_documenting_a_missing_parameter_is_refused() -> None:
    class Wrong:
        def __call__(self, x: int) -> int:
            """Return x.

            Args:
                y: Not a parameter.
            """
            return x

    with pytest.raises(ToolDefinitionError, match="documents parameter 'y'"):
        make(Wrong(), name="wrong")


def test_a_dataclass_without_a_docstring_is_not_described_by_its_signature() -> None:
    @dataclasses.dataclass
    class Adder:
        k: int = 1

        def __call__(self, x: int) -> int:
            """Add k to x."""
            return x + self.k

    assert make(Adder(), name="adder").description == "Add k to x."

    @dataclasses.dataclass
    class Bare:
        def __call__(self, x: int) -> int:
            return x

    assert make(Bare(), name="bare").description == ""


def test_an_instance_docstring_set_on_the_object_is_read() -> None:
    class Configured:
        def __call__(self, x: int) -> int:
            return x

    obj = Configured()
    obj.__doc__ = "Described by its instance."
    assert make(obj, name="configured").description == "Described by its instance."


def test_a_cached_function_keeps_its_docstring() -> None:
    @functools.lru_cache
    def square(x: int) -> int:
        """Square a number.

        Args:
            x: The number.
        """
        return x * x

    tool = make(square)
    assert tool.description == "Square a number."
    assert descriptions(tool) == {"x": "The number."}


# --- partials ------------------------------------------------------------------------------------


def add(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: The first.
        b: The second.
    """
    return a + b


def test_a_partial_is_described_by_its_function_not_by_functools() -> None:
    tool = make(functools.partial(add, b=2), name="add_two")
    assert tool.description == "Add two numbers."
    assert descriptions(tool) == {"a": "The first.", "b": "The second."}
    assert tool.input_schema["properties"]["b"]["default"] == 2


def test_a_partial_that_binds_a_documented_parameter_is_not_refused() -> None:
    tool = make(functools.partial(add, 1), name="add_one")
    assert list(tool.input_schema["properties"]) == ["b"]
    assert tool.run_sync({"b": 4}).text == "5"


def test_a_docstring_that_cannot_be_read_names_which_one() -> None:
    class Odd:
        """Odd.

        Args:
        """

        def __call__(self, x: int) -> int:
            """Return x.

            Args:
            """
            return x

    with pytest.raises(ToolDefinitionError) as info:
        make(Odd(), name="odd", docstring_style="google")
    reason = 'cannot be read as google style (No specification for "Args": "")'
    assert info.value.problems == [
        f"the class docstring {reason}",
        f"the docstring of __call__ {reason}",
    ]


# --- what is not a parameter ---------------------------------------------------------------------


def test_an_epydoc_optional_marker_is_not_part_of_the_name() -> None:
    def f(path: str, depth: int = 1) -> None:
        """List a directory.

        @param path: The directory.
        @param depth?: How deep to go.
        """

    assert descriptions(make(f)) == {"path": "The directory.", "depth": "How deep to go."}


@pytest.mark.parametrize(
    "section",
    [
        "Attributes:\n            cache: Kept between calls.",
        "Attributes\n        ----------\n        cache : dict\n            Kept between calls.",
        ":ivar cache: Kept between calls.",
        "@ivar cache: Kept between calls.",
        "@cvar cache: Kept between calls.",
    ],
)
def test_attributes_are_not_parameters(section: str) -> None:
    def f(x: int) -> None:
        pass

    f.__doc__ = f"""Do it.

        {section}
        """
    tool = make(f)
    assert tool.description == "Do it."
    assert descriptions(tool) == {"x": None}


def test_a_class_attribute_named_like_a_parameter_does_not_describe_it() -> None:
    class Counter:
        """Count things.

        Attributes:
            step: The step the counter was made with.
        """

        def __call__(self, step: int) -> int:
            return step

    assert descriptions(make(Counter(), name="counter")) == {"step": None}
