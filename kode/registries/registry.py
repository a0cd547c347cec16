"""Former home of `ToolRegistry`, which lives in `kode.registries.tool_registry` now (deprecated).

``from kode.registries.registry import ToolRegistry`` still works and warns with a
`DeprecationWarning` naming `kode.registries.tool_registry`. The attribute
``kode.registries.registry`` is the global registry, not this module: the package loads this
module before it binds the registry, so the import system, which binds a submodule on its
package only when it loads it, never binds it over the registry. For the same reason
``import kode.registries.registry as m`` gives the registry; read the names from
`kode.registries.tool_registry`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kode.registries import tool_registry
from kode.tools.moved import moved_attribute

if TYPE_CHECKING:
    # What a type checker reads for ``from kode.registries.registry import ToolRegistry``.
    from kode.registries.tool_registry import RegisteredTool as RegisteredTool
    from kode.registries.tool_registry import RegistrySnapshot as RegistrySnapshot
    from kode.registries.tool_registry import RegistryView as RegistryView
    from kode.registries.tool_registry import ToolRegistry as ToolRegistry
    from kode.registries.tool_registry import normalize_name as normalize_name
    from kode.registries.tool_registry import registry as registry

__all__ = ["RegisteredTool", "ToolRegistry", "normalize_name", "registry"]


def __getattr__(name: str) -> Any:
    """A name of `kode.registries.tool_registry`, with a `DeprecationWarning` that says so."""
    return moved_attribute(__name__, tool_registry, name)
