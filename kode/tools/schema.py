"""Reading a function: its parameters, docstring and annotations become a validator and a schema.

This module owns schema inference. It builds one pydantic model per tool, at definition time
(or on first use, for kode's built-in tools: `LazyModel`), through pydantic's public API
(`create_model`), and collects every definition problem of one function into a single
`ToolDefinitionError`. It does not translate schemas into provider
dialects (`kode.tools.dialects`) and does not run anything.
"""

from __future__ import annotations

import functools
import inspect
import re
import reprlib
import threading
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, get_args, get_origin

from pydantic import AliasChoices, BaseModel, Field, ValidationError, create_model
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined
from typing_extensions import Doc

from kode.tools.context import ToolContext
from kode.tools.docstrings import STYLES, DocstringStyle, read_docstrings
from kode.tools.errors import ToolDefinitionError
from kode.tools.numbers import ArgumentsModel

__all__ = [
    "DocstringStyle",
    "FunctionSpec",
    "LazyModel",
    "inspect_function",
    "is_context_annotation",
]

_BASEMODEL_ATTRS = frozenset(dir(BaseModel))
# What the providers accept as a property name (Anthropic's rule, the strictest of the three).
_PARAM_NAME = re.compile(r"^[a-zA-Z0-9_.-]{1,64}$")


class LazyModel:
    """A tool's argument model, built once: at definition, or on first use.

    Building is thread-safe: concurrent first uses build the model once and all get it.
    """

    __slots__ = ("_build", "_lock", "_model")

    def __init__(self, build: Callable[[], type[BaseModel]]) -> None:
        self._build: Callable[[], type[BaseModel]] | None = build
        self._lock = threading.Lock()
        self._model: type[BaseModel] | None = None

    @property
    def built(self) -> bool:
        """Whether the model has been built."""
        return self._model is not None

    def get(self) -> type[BaseModel]:
        """The model, built now if it has not been."""
        model = self._model
        if model is None:
            with self._lock:
                model = self._model
                if model is None:
                    assert self._build is not None
                    model = self._model = self._build()
                    self._build = None
        return model


@dataclass(kw_only=True, frozen=True, slots=True)
class FunctionSpec:
    """What `inspect_function` learned about a function."""

    description: str
    """The docstring's summary and body, without its parameter sections."""
    field_to_param: dict[str, str] | None
    """Internal field name → parameter name, for the few names that clash with BaseModel."""
    param_names: tuple[str, ...]
    """The parameters shown to the model, in signature order."""
    context_param: str | None
    """The name of the parameter that receives the `ToolContext`, if any."""
    context_positional: bool
    """Whether the context parameter is positional-only (passed first, by position)."""
    deps_type: Any
    """The deps type the context must carry (``T`` of ``ToolContext[T]``); `None`: any."""
    return_annotation: Any
    """The return annotation (`inspect.Signature.empty` when there is none)."""
    param_descriptions: dict[str, str]
    """The description of each parameter, wherever it came from."""
    model_builder: LazyModel
    """Builds the argument model (at definition, or on first use for `build_later`)."""

    @property
    def args_model(self) -> type[BaseModel]:
        """The pydantic model that validates the model's arguments."""
        return self.model_builder.get()


def is_context_annotation(annotation: Any) -> bool:
    """Whether `annotation` asks for the `ToolContext`.

    True for `ToolContext`, `ToolContext[...]`, their `Annotated` forms, and the optional forms
    ``ToolContext | None`` / ``Optional[ToolContext]`` (so the function can still be called
    without a context, as a plain function).
    """
    if get_origin(annotation) is typing.Annotated:
        annotation = get_args(annotation)[0]
    if get_origin(annotation) in (typing.Union, types.UnionType):
        options = [a for a in get_args(annotation) if a is not type(None)]
        if len(options) != 1:
            return False
        return is_context_annotation(options[0])
    return annotation is ToolContext or get_origin(annotation) is ToolContext


def context_deps_type(annotation: Any) -> Any:
    """The deps type a context annotation requires: ``T`` for ``ToolContext[T]``.

    `None` when the tool accepts a context without deps: a bare ``ToolContext``, deps typed
    ``Any``, ``object`` or optional (``ToolContext[Db | None]``).
    """
    if get_origin(annotation) is typing.Annotated:
        annotation = get_args(annotation)[0]
    if get_origin(annotation) in (typing.Union, types.UnionType):
        options = [a for a in get_args(annotation) if a is not type(None)]
        return context_deps_type(options[0]) if len(options) == 1 else None
    if get_origin(annotation) is not ToolContext:
        return None
    (deps,) = get_args(annotation) or (None,)
    if deps in (None, Any, object, type(None)) or isinstance(deps, typing.TypeVar):
        return None
    if get_origin(deps) in (typing.Union, types.UnionType) and type(None) in get_args(deps):
        return None
    return deps


def _annotated_description(annotation: Any) -> str | None:
    """The description carried by `Annotated` metadata: Field > Doc > a plain string."""
    if get_origin(annotation) is not typing.Annotated:
        return None
    metadata = annotation.__metadata__
    for item in metadata:
        if isinstance(item, FieldInfo) and item.description:
            return item.description
    for item in metadata:
        if isinstance(item, Doc):
            return item.documentation
    for item in metadata:
        if isinstance(item, str) and item.strip():
            return item.strip()
    return None


def _stated_defaults(annotation: Any, default: Any, empty: Any) -> list[tuple[str, Any, bool]]:
    """Each place a parameter states its default: (where, value, whether it is a factory)."""
    stated: list[tuple[str, Any, bool]] = []
    fields = [default] if isinstance(default, FieldInfo) else []
    if get_origin(annotation) is typing.Annotated:
        fields = [m for m in annotation.__metadata__ if isinstance(m, FieldInfo)] + fields
    for info in fields:
        where = "in Annotated" if info is not default else "after '='"
        if info.default_factory is not None:
            stated.append((f"Field(default_factory=...) {where}", info.default_factory, True))
        elif not info.is_required():
            stated.append(
                (f"Field(default={reprlib.repr(info.default)}) {where}", info.default, False)
            )
    if default is not empty and not isinstance(default, FieldInfo):
        stated.append((f"'= {reprlib.repr(default)}'", default, False))
    return stated


def _same_value(a: Any, b: Any) -> bool:
    try:
        return a is b or (type(a) is type(b) and bool(a == b))
    except Exception:  # an __eq__ that refuses to answer (arrays, ...): not known to be equal
        return False


def _default_problem(pname: str, annotation: Any, default: Any, empty: Any) -> str | None:
    """A parameter whose default is given twice, differently; `None` when it is given once.

    The same value in ``Annotated[T, Field(default=v)]`` and after ``= v`` is accepted: the
    repeat keeps the default when the function is called directly.
    """
    stated = _stated_defaults(annotation, default, empty)
    if len(stated) < 2:
        return None
    (first, value, factory), *others = stated
    if not factory and not any(f or not _same_value(value, v) for _, v, f in others):
        return None
    return f"parameter '{pname}' has two defaults, {first} and {others[0][0]}: give it once" + (
        "" if factory or others[0][2] else ", or give the same value in both places"
    )


def _misfit_defaults(model: type[BaseModel], field_to_param: Mapping[str, str]) -> list[str]:
    """A problem for each parameter whose default does not fit its own type.

    A default is not validated when the function is called (pydantic leaves it as written), so
    ``count: int = "1"`` would be published and passed on as the string. Each default is checked
    once, here, in strict mode: a default is written in Python, where ``"1"`` for an int or a
    member's value for an enum is a slip, not a model's habit. Default factories are not called.
    """
    problems: list[str] = []
    validator = model.__pydantic_validator__
    instance: BaseModel | None = None
    for fname, info in model.model_fields.items():
        if info.is_required() or info.default_factory is not None:
            continue
        if instance is None:
            instance = model.model_construct()
        try:
            validator.validate_assignment(instance, fname, info.default, strict=True)
        except ValidationError as exc:
            error = exc.errors(include_url=False)[0]
            where = "".join(f"[{p!r}]" for p in error["loc"][1:])
            problems.append(
                f"parameter '{field_to_param.get(fname, fname)}' has the default "
                f"{reprlib.repr(info.default)}, which does not fit its type"
                f"{' at ' + where if where else ''} ({error['msg'][:1].lower()}{error['msg'][1:]}):"
                + (
                    " say the parameter may be None, `X | None = None`"
                    if info.default is None
                    else " give a default of the parameter's type"
                )
            )
    return problems


def _hint_target(fn: Callable[..., Any]) -> Any:
    """What `typing.get_type_hints` can read for `fn`: itself, a partial's function, or __call__."""
    if isinstance(fn, functools.partial):
        return _hint_target(fn.func)
    if isinstance(fn, staticmethod | classmethod):  # @define_tool above @staticmethod
        return _hint_target(fn.__func__)
    if inspect.isfunction(fn) or inspect.ismethod(fn) or inspect.isbuiltin(fn):
        return fn
    class_call = getattr(type(fn), "__call__", None)  # noqa: B004 - the class's, not the instance's
    if hasattr(fn, "__wrapped__") and not inspect.isfunction(class_call):
        # A wrapper made by functools.update_wrapper (lru_cache, ...): it carries the
        # function's annotations; its __call__ is C code with none.
        return fn
    call = getattr(fn, "__call__", None)  # noqa: B004 - a callable object
    return call if call is not None else fn


def _annotate(annotation: Any, *metadata: Any) -> Any:
    """``Annotated[annotation, *metadata]``, built at run time."""
    return typing.Annotated[(annotation, *metadata)]


def inspect_function(
    fn: Callable[..., Any],
    *,
    name: str,
    description: str | None,
    docstring_style: DocstringStyle,
    require_descriptions: bool,
    localns: Callable[[], dict[str, Any]] | None = None,
    param_aliases: Mapping[str, str] | None = None,
    build_later: bool = False,
) -> FunctionSpec:
    """Read `fn` and build its argument model, or raise `ToolDefinitionError` with every problem.

    Args:
        fn: The function (or bound method) to read.
        name: The tool's name, used to name the argument model.
        description: An explicit tool description that replaces the docstring's.
        docstring_style: How to read the docstring.
        require_descriptions: Report the tool and every parameter that has no description.
        localns: Called when some annotations are strings: returns the locals visible where
            the function was defined, so they can name classes defined in a function body.
        param_aliases: Other accepted names for parameters, ``{alias: parameter}``.
        build_later: Build the argument model on first use instead of now (for tools whose
            parameters tests have shown pydantic can validate: kode's built-in tools). Every
            other check still runs now.
    """
    qualname = getattr(fn, "__qualname__", repr(fn))
    problems: list[str] = []
    if docstring_style not in STYLES:
        problems.append(
            f"docstring_style {docstring_style!r} is not one of {', '.join(map(repr, STYLES))}"
        )
        docstring_style = "auto"
    docs = read_docstrings(fn, docstring_style)
    problems.extend(docs.problems)

    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError) as exc:
        raise ToolDefinitionError(qualname, [f"its signature cannot be read ({exc})"]) from exc
    try:
        names = None
        if localns is not None and any(
            isinstance(a, str) for a in getattr(_hint_target(fn), "__annotations__", {}).values()
        ):
            names = localns() or None
        hints = typing.get_type_hints(_hint_target(fn), localns=names, include_extras=True)
    except Exception as exc:  # a NameError from a forward reference, most often
        raise ToolDefinitionError(
            qualname,
            [
                f"its annotations cannot be resolved ({type(exc).__name__}: {exc}); define the "
                "names they use before the function, at module level"
            ],
        ) from exc

    fields: dict[str, Any] = {}
    field_to_param: dict[str, str] = {}
    param_names: list[str] = []
    descriptions: dict[str, str] = {}
    context_param: str | None = None
    context_positional = False
    deps_type: Any = None
    for param in signature.parameters.values():
        pname = param.name
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            # What to write instead, with the annotation the function gave (else `str`).
            hint = hints.get(pname, str)
            item = getattr(hint, "__name__", None) or str(hint).replace("typing.", "")
            problems.append(
                f"parameter '*{pname}' cannot be shown to a model, which names every argument: "
                f"take a list instead, `{pname}: list[{item}]`"
                if param.kind is param.VAR_POSITIONAL
                else f"parameter '**{pname}' cannot be shown to a model, which passes only the "
                f"parameters the schema names: make each option a parameter, or take "
                f"`{pname}: dict[str, {item}]`"
            )
            continue
        if pname not in hints:
            problems.append(f"parameter '{pname}' has no type annotation")
            continue
        annotation = hints[pname]
        if is_context_annotation(annotation):
            if context_param is not None:
                problems.append(
                    f"parameters '{context_param}' and '{pname}' both ask for a ToolContext; "
                    "keep one"
                )
            context_param = pname
            context_positional = param.kind is param.POSITIONAL_ONLY
            deps_type = context_deps_type(annotation)
            continue
        if param.kind is param.POSITIONAL_ONLY:
            problems.append(
                f"parameter '{pname}' is positional-only, so a model cannot name it; "
                "remove the '/' from the signature"
            )
            continue
        if pname.startswith("_"):
            problems.append(
                f"parameter '{pname}' starts with an underscore, which pydantic cannot "
                "validate; rename it"
            )
            continue
        if not _PARAM_NAME.match(pname):
            problems.append(
                f"parameter '{pname}' cannot be shown to a model: provider APIs accept "
                "parameter names of 1-64 ASCII letters, digits and '_'; rename it"
            )
            continue
        text = _annotated_description(annotation)
        default = param.default
        if isinstance(default, FieldInfo) and default.description:
            text = text or default.description
        if text is None:
            text = docs.params.get(pname) or None
        if text:
            descriptions[pname] = text
        elif require_descriptions:
            problems.append(f"parameter '{pname}' has no description")
        fname = pname
        override: dict[str, Any] = {}
        if text:
            override["description"] = text
        if pname in _BASEMODEL_ATTRS:
            # A field cannot be named like a BaseModel attribute: rename it, alias it back.
            fname = f"kode_arg_{pname}"
            field_to_param[fname] = pname
            override["alias"] = pname
        other_names = [a for a, target in (param_aliases or {}).items() if target == pname]
        if other_names:
            # The schema shows the first choice (the parameter's own name); the others are
            # accepted from a model that uses another system's name for it.
            override["validation_alias"] = AliasChoices(pname, *other_names)
        default_problem = _default_problem(pname, annotation, default, param.empty)
        if default_problem:
            problems.append(default_problem)
        # Metadata is merged left to right, so `override` (made with `Field()`, which sets
        # the validation and serialization aliases too) wins over the user's own `Field`.
        if isinstance(default, FieldInfo):
            fields[fname] = _annotate(annotation, default, Field(**override))
        else:
            # No default after '=' leaves pydantic to find one in an `Annotated` Field
            # (`...` would make the parameter required whatever that Field says).
            fields[fname] = (
                _annotate(annotation, Field(**override)) if override else annotation,
                PydanticUndefined if default is param.empty else default,
            )
        param_names.append(pname)

    seen = set(signature.parameters)
    for alias, target in (param_aliases or {}).items():
        if target not in param_names:
            problems.append(
                f"param_aliases maps {alias!r} to {target!r}, which is not a parameter shown "
                "to the model"
            )
        elif alias in seen:
            problems.append(f"param_aliases maps {alias!r}, which is itself a parameter")
    for documented in sorted(docs.checked, key=list(docs.params).index):
        if documented not in seen:
            problems.append(
                f"the docstring documents parameter '{documented}', which the function does "
                "not have"
            )
    if description is None:
        description = docs.description
    if require_descriptions and not description:
        problems.append("the tool has no description: write a docstring or pass description=")

    if problems:
        raise ToolDefinitionError(qualname, problems)

    def build() -> type[BaseModel]:
        try:
            model = create_model(f"{name}_arguments", __base__=ArgumentsModel, **fields)
            model.model_rebuild(force=True)  # the base defers its build; this one is due now
        except Exception as exc:  # pydantic's PydanticSchemaGenerationError, TypeError, ...
            # pydantic's messages run to several paragraphs of advice; the first line says what.
            first_line = str(exc).strip().split("\n", 1)[0]
            raise ToolDefinitionError(
                qualname,
                [f"its parameters cannot be validated ({type(exc).__name__}: {first_line})"],
            ) from exc
        misfits = _misfit_defaults(model, field_to_param)
        if misfits:
            raise ToolDefinitionError(qualname, misfits)
        return model

    model_builder = LazyModel(build)
    if not build_later:
        model_builder.get()
    return FunctionSpec(
        description=description,
        field_to_param=field_to_param or None,
        param_names=tuple(param_names),
        context_param=context_param,
        context_positional=context_positional,
        deps_type=deps_type,
        return_annotation=hints.get("return", signature.return_annotation),
        param_descriptions=descriptions,
        model_builder=model_builder,
    )
