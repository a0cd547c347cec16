"""Schema corpus: Epydoc docstrings, which none of the four projects tests."""

from __future__ import annotations

from typing import Annotated

from corpus_case import KODE, Cases
from pydantic import Field
from typing_extensions import Doc

CASES = Cases()


def epydoc_listing(path: str, depth: int = 1, hidden: bool = False) -> list[str]:
    """List a directory.

    Hidden entries are skipped unless asked for.

    @param path: The directory,
        relative to the workspace.
    @type path: str
    @param depth: How many levels to descend.
    @keyword hidden: Include hidden entries.
    @return: The entries.
    @rtype: list of str
    @raise ValueError: When the path leaves the workspace.
    """
    return [path] * depth


EPYDOC_PARAMS = {
    "path": "The directory, relative to the workspace.",
    "depth": "How many levels to descend.",
    "hidden": "Include hidden entries.",
}

for _style in ("auto", "epydoc"):
    CASES.add(
        id=f"epydoc-full-{_style}",
        source=KODE + "every field",
        fn=epydoc_listing,
        options={"docstring_style": _style},
        description="List a directory.\n\nHidden entries are skipped unless asked for.",
        params=EPYDOC_PARAMS,
        required=["path"],
        calls=(({"path": "a", "depth": 2}, '["a","a"]'),),
    )


def epydoc_no_summary(path: str) -> None:
    """
    @param path: The directory.
    """


CASES.add(
    id="epydoc-without-summary",
    source=KODE + "no summary line",
    fn=epydoc_no_summary,
    options={"docstring_style": "epydoc"},
    description="",
    params={"path": "The directory."},
)


def epydoc_wrapped_summary(path: str) -> None:
    """List a directory, one entry a line,
    directories first.

    @param path: The directory.
    """


CASES.add(
    id="epydoc-wrapped-summary",
    source=KODE + "summary over two lines",
    fn=epydoc_wrapped_summary,
    description="List a directory, one entry a line,\ndirectories first.",
    params={"path": "The directory."},
)


def epydoc_optional_marker(path: str, depth: int = 1) -> None:
    """List a directory.

    @param path: The directory.
    @param depth?: How deep to go.
    """


CASES.add(
    id="epydoc-optional-marker",
    source=KODE + "an optional parameter marked '?'",
    fn=epydoc_optional_marker,
    params={"path": "The directory.", "depth": "How deep to go."},
)


def epydoc_missing_parameter(path: str) -> None:
    """List a directory.

    @param folder: The directory.
    """


CASES.add(
    id="epydoc-documents-a-missing-parameter",
    source=KODE + "a parameter the function does not have",
    fn=epydoc_missing_parameter,
    error="the docstring documents parameter 'folder', which the function does not have",
)


def epydoc_type_only(path: str, depth: int) -> None:
    """List a directory.

    @type path: str
    @param depth: How deep to go.
    """


CASES.add(
    id="epydoc-type-without-description",
    source=KODE + "@type alone gives no description",
    fn=epydoc_type_only,
    params={"path": None, "depth": "How deep to go."},
)


def epydoc_attributes(path: str) -> None:
    """List a directory.

    @ivar cache: Entries seen before.
    @cvar limit: The most entries listed.
    @param path: The directory.
    """


CASES.add(
    id="epydoc-attributes-are-not-parameters",
    source=KODE + "@ivar and @cvar",
    fn=epydoc_attributes,
    params={"path": "The directory."},
)


def epydoc_with_annotations(
    path: Annotated[str, Field(description="From Field")],
    depth: Annotated[int, Doc("From Doc")] = 1,
    hidden: bool = False,
) -> None:
    """List a directory.

    @param path: From the docstring.
    @param depth: From the docstring.
    @param hidden: From the docstring.
    """


CASES.add(
    id="epydoc-annotations-win",
    source=KODE + "Field and Doc over the docstring",
    fn=epydoc_with_annotations,
    params={"path": "From Field", "depth": "From Doc", "hidden": "From the docstring."},
)


def epydoc_without_colon(path: str) -> None:
    """List a directory.

    @param path The directory, but no colon after the name.
    """


CASES.add(
    id="epydoc-malformed-field-auto",
    source=KODE + "a field without its colon, detected style",
    fn=epydoc_without_colon,
    description="List a directory.\n\n@param path The directory, but no colon after the name.",
    params={"path": None},
)

CASES.add(
    id="epydoc-malformed-field-forced",
    source=KODE + "a field without its colon, Epydoc style",
    fn=epydoc_without_colon,
    options={"docstring_style": "epydoc"},
    error="docstring cannot be read as epydoc style (Error parsing meta information near",
)


def epydoc_required_descriptions(path: str, depth: int) -> None:
    """List a directory.

    @param path: The directory.
    """


CASES.add(
    id="epydoc-require-descriptions",
    source=KODE + "require_descriptions",
    fn=epydoc_required_descriptions,
    options={"require_descriptions": True},
    error="parameter 'depth' has no description",
)


class EpydocCounter:
    """Count entries.

    @ivar seen: How many were counted so far.
    """

    def __call__(self, path: str, step: int = 1) -> int:
        """Count the entries of a directory.

        @param path: The directory.
        @param step: How much each entry counts.
        """
        return step


CASES.add(
    id="epydoc-callable-object",
    source=KODE + "a callable object's class and __call__",
    fn=EpydocCounter(),
    options={"name": "count_entries"},
    description="Count entries.",
    params={"path": "The directory.", "step": "How much each entry counts."},
    calls=(({"path": "."}, "1"),),
)


def epydoc_wrong_style(path: str) -> None:
    """List a directory.

    @param path: The directory.
    """


CASES.add(
    id="epydoc-read-as-google",
    source=KODE + "Epydoc read in another style",
    fn=epydoc_wrong_style,
    options={"docstring_style": "google"},
    description="List a directory.\n\n@param path: The directory.",
    params={"path": None},
)
