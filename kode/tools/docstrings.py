"""Reading docstrings: the description of a tool and of each of its parameters.

This module owns finding the docstrings that document a callable (a function, a method, a
`functools.partial`, a callable object's class and its ``__call__``) and reading them with
docstring-parser in Google, NumPy, reST or Epydoc style. It does not decide whether an
annotation's description wins over the docstring's (`kode.tools.schema` does) and does not
check that documented parameters exist (it says which ones must).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["DocstringStyle", "Docstrings", "read_docstrings"]

DocstringStyle = Literal["auto", "google", "numpy", "rest", "sphinx", "epydoc"]
"""The docstring styles kode reads; ``auto`` detects the style (``sphinx`` means ``rest``)."""

STYLES: dict[str, str] = {
    "auto": "AUTO",
    "google": "GOOGLE",
    "numpy": "NUMPYDOC",
    "rest": "REST",
    "sphinx": "REST",
    "epydoc": "EPYDOC",
}
"""Each accepted ``docstring_style`` and the name of the docstring-parser style it means
(docstring-parser is imported when a docstring is first read)."""


def _parser() -> Any:
    import docstring_parser  # on first use: importing kode stays cheaper

    return docstring_parser


# What docstring-parser also reads as parameters: attributes (Google and NumPy "Attributes",
# reST ":ivar:", Epydoc "@ivar", "@cvar", "@var") document the object, not the call.
_NOT_PARAMETERS = frozenset({"attribute", "ivar", "cvar", "var"})


@dataclass(kw_only=True, frozen=True, slots=True)
class Docstrings:
    """What the docstrings of a callable say."""

    description: str
    """The summary and body (without parameter, returns or raises sections); may be empty."""
    params: dict[str, str]
    """Each documented parameter's description (empty when documented without text)."""
    checked: frozenset[str]
    """Documented parameters that must be parameters of the callable: those of its own
    docstring, or of ``__call__``'s; not those of a class docstring, which may document the
    constructor, nor those of a partial's function, whose bound parameters are gone."""
    problems: tuple[str, ...]
    """Docstrings that could not be read in the style asked for."""


@dataclass(kw_only=True, frozen=True, slots=True)
class _Source:
    text: str
    checked: bool
    label: str


def _own_doc(obj: Any) -> str | None:
    """A callable object's own docstring: its instance's or its class's, never inherited.

    A dataclass without a docstring is given one made of its name and signature
    (``Adder(k: int = 1)``), which describes nothing: that one is ignored.
    """
    doc = getattr(obj, "__doc__", None)
    if not isinstance(doc, str) or not doc.strip():
        return None
    cls = type(obj)
    if dataclasses.is_dataclass(cls):
        try:
            generated = cls.__name__ + str(inspect.signature(cls)).replace(" -> None", "")
        except (TypeError, ValueError):
            generated = None
        if doc == generated:
            return None
    return inspect.cleandoc(doc)


def _sources(fn: Any) -> list[_Source]:
    """The docstrings that document `fn`, the most specific last."""
    if isinstance(fn, functools.partial):
        # The wrapped function documents the parameters; those the partial binds are gone.
        return [dataclasses.replace(s, checked=False) for s in _sources(fn.func)]
    if isinstance(fn, staticmethod | classmethod):
        return _sources(fn.__func__)
    if inspect.isroutine(fn) or inspect.isclass(fn):
        doc = inspect.getdoc(fn)
        return [_Source(text=doc, checked=True, label="the docstring")] if doc else []
    # A callable object: its class describes the tool, its __call__ the call.
    call = getattr(type(fn), "__call__", None)  # noqa: B004 - the class's, not the instance's
    python_call = inspect.isfunction(call)
    sources: list[_Source] = []
    own = _own_doc(fn)
    if own:
        # Without a Python __call__ (lru_cache and other C wrappers copy the function's
        # docstring onto the object), the object's docstring is the only one: checked.
        sources.append(_Source(text=own, checked=not python_call, label="the class docstring"))
    if python_call:
        doc = inspect.getdoc(call)
        if doc:
            sources.append(_Source(text=doc, checked=True, label="the docstring of __call__"))
    return sources


def _parse(text: str, style: DocstringStyle) -> tuple[str, dict[str, str]]:
    # docstring-parser cleans the text again, which dedents a docstring that starts with its
    # section ("Args:" on the first line) a second time and loses its parameters; after a
    # leading newline, the first line is no longer special and the text stays as it is.
    parser = _parser()
    parsed = parser.parse("\n" + text, style=parser.DocstringStyle[STYLES[style]])
    short = (parsed.short_description or "").strip()
    long = (parsed.long_description or "").strip()
    # A summary wrapped over several lines is one paragraph: docstring-parser splits it after
    # its first line, and says there was no blank line there.
    between = "\n\n" if parsed.blank_after_short_description else "\n"
    description = between.join(p for p in (short, long) if p)
    params: dict[str, str] = {}
    for p in parsed.params:
        if p.args and p.args[0] in _NOT_PARAMETERS:
            continue
        text_ = " ".join((p.description or "").split())
        # NumPy documents several parameters on one line ("x, y : int"); reST and Epydoc may
        # put a type before the name (":param int x:"); Epydoc marks an optional one "x?".
        for part in p.arg_name.split(","):
            name = part.strip().lstrip("*").rstrip("?").split(" ")[-1]
            if not name:
                continue
            if text_:
                params[name] = text_
            else:
                params.setdefault(name, "")
    return description, params


def read_docstrings(fn: Callable[..., Any], style: DocstringStyle) -> Docstrings:
    """Read every docstring that documents `fn`.

    For a callable object, the description is its class docstring's, or ``__call__``'s when
    the class has none; parameter descriptions come from both, ``__call__``'s winning.

    Args:
        fn: A function, method, `functools.partial`, class or callable object.
        style: How to read the docstrings (a key of `STYLES`).
    """
    description = ""
    params: dict[str, str] = {}
    checked: set[str] = set()
    problems: list[str] = []
    sources = _sources(fn)
    for source in sources:
        try:
            text, documented = _parse(source.text, style)
        except _parser().ParseError as exc:
            label = source.label if len(sources) > 1 else "docstring"
            problems.append(f"{label} cannot be read as {style} style ({exc})")
            text, documented = source.text.strip(), {}
        description = description or text
        for name, value in documented.items():
            if value or name not in params:
                params[name] = value
        if source.checked:
            checked.update(documented)
    return Docstrings(
        description=description,
        params=params,
        checked=frozenset(checked),
        problems=tuple(problems),
    )
