"""Refusing JSON booleans where a tool's schema says integer or number.

pydantic's lax mode, which kode keeps for the conversions models need (``"20"`` and ``20.0``
for an ``int``), also turns ``true`` into ``1``. A model that sends ``true`` for a count has
misread the schema, and the function should not run with ``1``. This module rewrites a built
argument model's core schema so that every lax ``int`` and ``float`` first passes a gate that
lets through what JSON can hold except booleans (an int, a float, a string), then validates as
before: same conversions, same constraint errors, one extra union of strict scalar checks in
pydantic's core per number (no Python code runs, so validation stays pure). It owns nothing
else: the schema published to a model is the model's own and is not touched.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, GetCoreSchemaHandler
from pydantic_core import core_schema

__all__ = ["ArgumentsModel", "is_gate"]

_MARK = "kode_refuses_bool"

# What a JSON number may arrive as, booleans excepted (strict: `True` is not an int here). The
# error is pydantic's own for a value of the wrong type, so messages read as before.
_GATES = {
    kind: core_schema.custom_error_schema(
        core_schema.union_schema(
            [
                core_schema.int_schema(strict=True),
                core_schema.float_schema(strict=True),
                core_schema.str_schema(strict=True),
            ],
            mode="left_to_right",
        ),
        custom_error_type=error,
    )
    for kind, error in (("int", "int_type"), ("float", "float_type"))
}


# Keys of a core schema that hold values (a default, metadata), not schemas to walk into.
_VALUE_KEYS = frozenset(
    {"metadata", "serialization", "default", "expected", "cls", "members", "config", "ref"}
)


def _ours(definition: Mapping[str, Any]) -> bool:
    """Whether a referenced definition is made for this build alone, so it may be changed.

    A TypedDict's or a plain dataclass's is; a pydantic dataclass keeps its own schema (and
    rules), as a model does.
    """
    kind = definition.get("type")
    if kind == "typed-dict":
        return True
    cls = definition.get("cls")
    return kind == "dataclass" and "__pydantic_core_schema__" not in vars(cls or object)


def _gated(
    node: Any,
    own: type[BaseModel],
    resolve: Callable[[Any], Any] | None = None,
) -> Any:
    """A copy of core schema `node` with every lax int and float gated.

    Only dicts and lists are copied; other values (classes, functions) are shared. A nested
    model other than `own` is left whole: pydantic uses that model's own validator for it.
    The definitions `resolve` finds for a reference (a TypedDict's, a plain dataclass's) are
    gated where they are, being this build's own. Iterative over an explicit stack, so a deep
    schema does not exhaust Python's.
    """
    root: list[Any] = [node]
    stack: list[tuple[Any, Any]] = [(root, 0)]
    seen: set[str] = set()
    while stack:
        parent, key = stack.pop()
        value = parent[key]
        if isinstance(value, dict):
            kind = value.get("type")
            if kind in _GATES and not value.get("strict"):
                parent[key] = core_schema.chain_schema(
                    [_GATES[kind], dict(value)], metadata={_MARK: True}
                )
                continue
            if kind == "model" and value.get("cls") is not own:
                continue
            if kind == "definition-ref":
                ref = value.get("schema_ref")
                if resolve is not None and isinstance(ref, str) and ref not in seen:
                    seen.add(ref)
                    try:
                        target = resolve(value)
                    except LookupError:  # not made yet (pydantic makes it later): left as is
                        continue
                    if isinstance(target, dict) and _ours(target):
                        stack.extend(
                            (target, k)
                            for k, v in target.items()
                            if k not in _VALUE_KEYS and isinstance(v, dict | list)
                        )
                continue
            copied = dict(value)
            parent[key] = copied
            stack.extend(
                (copied, k)
                for k, v in copied.items()
                if k not in _VALUE_KEYS and isinstance(v, dict | list)
            )
        elif isinstance(value, list):
            copied_list = list(value)
            parent[key] = copied_list
            stack.extend(
                (copied_list, i) for i, v in enumerate(copied_list) if isinstance(v, dict | list)
            )
    return root[0]


class ArgumentsModel(BaseModel):
    """The base of every tool's argument model: lax ints and floats refuse booleans.

    pydantic calls this hook while it builds the subclass, so the validator it makes is built
    from the gated schema. A nested pydantic model or pydantic dataclass of the user's keeps
    its own validator (pydantic reuses it), and with it its own rules; a TypedDict or a plain
    dataclass, whose schema pydantic makes for this model alone, is gated too.
    """

    model_config = ConfigDict(
        extra="forbid",
        protected_namespaces=(),
        arbitrary_types_allowed=False,
        hide_input_in_errors=False,
        # Not built when kode is imported (pydantic's plugin scan and importlib.metadata wait
        # for a tool's first call); a tool's model is built when first used, as before.
        defer_build=True,
    )

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: type[BaseModel], handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        """The schema pydantic makes for the arguments, with booleans refused for numbers."""
        schema: core_schema.CoreSchema = _gated(handler(source), source, handler.resolve_ref_schema)
        return schema


def is_gate(schema: Mapping[str, Any]) -> bool:
    """Whether core schema `schema` is a number behind this module's gate."""
    metadata = schema.get("metadata")
    return isinstance(metadata, dict) and metadata.get(_MARK) is True
