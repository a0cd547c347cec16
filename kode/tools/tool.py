"""Former home of `Tool` and `PreparedCall`, which live in `kode.tools.core` now (deprecated).

``from kode.tools.tool import Tool`` still works and warns with a `DeprecationWarning` naming
`kode.tools.core`. The attribute ``kode.tools.tool`` is the `tool` decorator, not this module:
the package loads this module as it starts, so the import system, which binds a submodule on
its package only when it loads it, never binds it over the decorator. For the same reason
``import kode.tools.tool as m`` gives the decorator; read the names from `kode.tools.core`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kode.tools import core
from kode.tools.moved import moved_attribute

if TYPE_CHECKING:
    # What a type checker reads for ``from kode.tools.tool import Tool`` in a user's code.
    from kode.tools.core import JsonSchemaGenerator as JsonSchemaGenerator
    from kode.tools.core import PreparedCall as PreparedCall
    from kode.tools.core import Tool as Tool

__all__ = ["PreparedCall", "Tool"]


def __getattr__(name: str) -> Any:
    """A name of `kode.tools.core`, with a `DeprecationWarning` that says so."""
    return moved_attribute(__name__, core, name)
