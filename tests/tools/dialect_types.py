"""Types and helpers shared by the dialect tests (a module, so both files use one copy)."""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Iterator
from typing import Annotated, Any, Literal, NotRequired

from pydantic import BaseModel, Field
from typing_extensions import TypedDict

from kode import Tool, define_tool

__all__ = [
    "Box",
    "Cat",
    "Color",
    "Dog",
    "Level",
    "Node",
    "Options",
    "Pet",
    "Point",
    "make",
    "schema_nodes",
]


def make(fn: Any, **options: Any) -> Tool[..., Any]:
    return define_tool(registry=None, **options)(fn)


def schema_nodes(node: dict[str, Any], path: str = "#") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every schema node below `node` (property names and $defs names are not nodes)."""
    yield path, node
    for key in ("properties", "$defs", "definitions", "patternProperties"):
        for name, sub in node.get(key, {}).items():
            yield from schema_nodes(sub, f"{path}/{key}/{name}")
    for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
        for i, sub in enumerate(node.get(key, [])):
            yield from schema_nodes(sub, f"{path}/{key}/{i}")
    for key in ("items", "additionalProperties", "not"):
        if isinstance(node.get(key), dict):
            yield from schema_nodes(node[key], f"{path}/{key}")


# --- the types --------------------------------------------------------------------------------


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Level(enum.IntEnum):
    """How loud."""

    LOW = 1
    HIGH = 2


class Point(BaseModel):
    """A point."""

    x: int
    y: int = 0


@dataclasses.dataclass
class Box:
    width: float
    height: float = 1.0


class Options(TypedDict):
    depth: int
    label: NotRequired[str]


class Node(BaseModel):
    """A tree node."""

    value: int
    children: list[Node] = []
    parent: Node | None = None


class Cat(BaseModel):
    kind: Literal["cat"]
    lives: int = 9


class Dog(BaseModel):
    kind: Literal["dog"]
    good: bool = True


Pet = Annotated[Cat | Dog, Field(discriminator="kind")]
