"""Plugins: packages that add tools through the ``kode.plugins`` entry-point group.

This module owns `PluginApi` (what a plugin receives), `load_plugin` (one plugin, from a module
or a callable) and `load_plugins` (every installed one). A plugin's registrations are staged
and committed only when the plugin returns: a plugin that raises adds nothing, and never stops
the others. Every decision is a `Diagnostic` on the registry.

A plugin is a callable taking a `PluginApi`::

    # my_plugin/__init__.py
    def register(api):
        api.register_tool(weather)

    # pyproject.toml
    [project.entry-points."kode.plugins"]
    weather = "my_plugin:register"
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from kode.registries.factories import ToolFactoryFunc
from kode.registries.meta import ToolSource
from kode.registries.tool_registry import ToolRegistry, normalize_name
from kode.registries.tool_registry import registry as global_registry
from kode.tools.core import Tool

__all__ = [
    "ENTRY_POINT_GROUP",
    "PluginApi",
    "PluginFunc",
    "PluginReport",
    "load_plugin",
    "load_plugins",
]

ENTRY_POINT_GROUP = "kode.plugins"
"""The entry-point group kode reads plugins from."""

PluginFunc = Callable[["PluginApi"], object]
"""A plugin: a callable that registers tools through the `PluginApi` it is given."""

_PLUGIN_ID = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,63}$")


@dataclass(kw_only=True, slots=True)
class _Staged:
    item: Tool[..., Any] | ToolFactoryFunc
    optional: bool
    names: tuple[str, ...] | None


class PluginApi:
    """What a plugin receives: its id and a way to register tools."""

    def __init__(self, plugin_id: str, registry: ToolRegistry) -> None:
        self.plugin_id = plugin_id
        """The plugin's id (its entry-point name, or the id given to `load_plugin`)."""
        self.registry = registry
        """The registry the plugin's tools go to."""
        self._staged: list[_Staged] = []

    def register_tool(
        self,
        tool_or_factory: Tool[..., Any] | ToolFactoryFunc,
        *,
        optional: bool = False,
        names: Iterable[str] | None = None,
    ) -> None:
        """Register a tool, or a factory of tools, as this plugin's.

        Args:
            tool_or_factory: A `Tool` (define it with ``registry=None``; a tool the plugin's
                own package registered with a bare ``@define_tool`` becomes the plugin's, while
                any other tool already registered keeps its registration, and this one is
                skipped with a diagnostic) or a factory (see `tool_factory`).
            optional: Leave it out unless a template or policy names it, its plugin, or
                ``group:plugins``.
            names: For a factory, the names of the tools it makes.

        Raises:
            TypeError: neither a tool nor a callable.
        """
        if not isinstance(tool_or_factory, Tool) and not callable(tool_or_factory):
            raise TypeError(
                f"plugin {self.plugin_id!r}: register_tool needs a Tool or a factory, got "
                f"{type(tool_or_factory).__name__}"
            )
        if isinstance(names, str):
            raise TypeError(f"plugin {self.plugin_id!r}: names must be a list, got {names!r}")
        self._staged.append(
            _Staged(
                item=tool_or_factory,
                optional=optional,
                names=tuple(names) if names is not None else None,
            )
        )


@dataclass(kw_only=True, slots=True)
class PluginReport:
    """What loading one plugin did."""

    plugin_id: str
    """The plugin's id."""
    registered: list[str] = field(default_factory=list)
    """The tool names it registered (factories without names are listed by nothing)."""
    loaded: bool = False
    """Whether the plugin ran and its registrations were committed."""


_PLUGIN_FUNCTIONS = ("register", "kode_plugin", "plugin")


def _resolve_callable(target: ModuleType | PluginFunc | str) -> PluginFunc:
    if isinstance(target, str):
        module_name, _, attr = target.partition(":")
        found: Any = importlib.import_module(module_name.strip())
        for part in attr.strip().split(".") if attr.strip() else ():
            found = getattr(found, part)
        return _resolve_callable(found)
    if isinstance(target, ModuleType):
        for attr in _PLUGIN_FUNCTIONS:
            func = getattr(target, attr, None)
            if callable(func):
                return func  # type: ignore[no-any-return]
        raise TypeError(f"module {target.__name__!r} has no plugin function: define register(api)")
    if not callable(target):
        raise TypeError(f"a plugin must be a module or a callable, got {type(target).__name__}")
    return target


def _default_id(target: ModuleType | PluginFunc | str) -> str:
    """``"pkg.weather:register"``, the module ``pkg.weather`` and its ``register`` → weather."""
    if isinstance(target, str):
        return target.partition(":")[0].strip().rsplit(".", 1)[-1]
    if isinstance(target, ModuleType):
        return target.__name__.rsplit(".", 1)[-1]
    name = str(getattr(target, "__name__", "plugin"))
    module = getattr(target, "__module__", None)
    if name in _PLUGIN_FUNCTIONS and isinstance(module, str):
        return module.rsplit(".", 1)[-1]
    return name


def _module_of(target: object) -> str | None:
    if isinstance(target, str):
        return target.partition(":")[0].strip() or None
    if isinstance(target, ModuleType):
        return target.__name__
    module = getattr(target, "__module__", None)
    return module if isinstance(module, str) else None


def _rollback(
    registries: Iterable[ToolRegistry], before: dict[int, set[str]], module: str | None
) -> None:
    """Take back the tools a failed plugin's own module registered while it was loading.

    A plugin module may define tools with a bare ``@define_tool``, which registers them as user
    tools when it is imported; a plugin that fails adds nothing, so those go too. Tools of
    other modules (kode's built-ins imported on the way) stay.
    """
    if module is None or module in ("builtins", "__main__"):
        return
    for reg in registries:
        old = before.get(id(reg), set())
        for entry in reg.entries():
            origin = entry.origin[0]
            if entry.name not in old and (origin == module or origin.startswith(module + ".")):
                try:
                    reg.unregister(entry.name)
                except KeyError:  # pragma: no cover - another thread removed it
                    pass


def _own_user_tool(reg: ToolRegistry, tool: Tool[..., Any], module: str | None) -> bool:
    """Whether `tool` is registered as a user tool because the plugin's own package defined it.

    A bare ``@define_tool`` in the plugin's package registers the tool as a user tool when the
    package is imported; registering that very tool through the `PluginApi` hands it over to the
    plugin. Anything else (a tool of the application, another tool made from the same
    function, a plugin written in ``__main__``) is a conflict the registry reports.
    """
    if module is None or module in ("builtins", "__main__"):
        return False
    key = normalize_name(tool.name)
    entry = next((e for e in reg.entries() if normalize_name(e.name) == key), None)
    if entry is None or entry.tool is not tool or entry.meta.source is not ToolSource.USER:
        return False
    package = module.partition(".")[0]
    origin = entry.origin[0]
    return origin == package or origin.startswith(package + ".")


def load_plugin(
    target: ModuleType | PluginFunc | str,
    *,
    plugin_id: str | None = None,
    registry: ToolRegistry | None = None,
) -> PluginReport:
    """Run one plugin and register its tools.

    Args:
        target: A module (its ``register`` function is called), a callable taking a
            `PluginApi`, or ``"module:function"``.
        plugin_id: The plugin's id (default: the last part of the module's name).
        registry: Where its tools go (default: the global registry).

    Never raises for what the plugin does: an invalid id, a plugin that cannot be imported,
    raises, registers nothing, or collides with core tools is reported as a diagnostic on the
    registry, and `PluginReport.loaded` says whether it was committed.
    """
    return _load(lambda: _resolve_callable(target), target, plugin_id, registry)


def _load(
    loader: Callable[[], PluginFunc],
    target: object,
    plugin_id: str | None,
    registry: ToolRegistry | None,
    *,
    default_id: str | None = None,
) -> PluginReport:
    reg = registry if registry is not None else global_registry
    if plugin_id is not None:
        pid = normalize_name(str(plugin_id))
    else:
        pid = normalize_name(default_id or _default_id(target))  # type: ignore[arg-type]
    report = PluginReport(plugin_id=pid)

    def fail(level: Any, message: str) -> PluginReport:
        reg.report(level, message, source=ToolSource.PLUGIN, plugin_id=pid or None)
        return report

    if not _PLUGIN_ID.match(pid):
        return fail(
            "error",
            f"plugin id {pid!r} is invalid: use 1-64 lower-case letters, digits, '_', '.' or '-', "
            "starting with a letter or digit",
        )
    if pid in reg and reg.meta(pid).source is ToolSource.CORE:
        return fail(
            "error",
            f"plugin {pid!r} blocked: its id is the name of a core tool, so its patterns "
            "would be ambiguous; rename the plugin",
        )
    touched = {id(r): r for r in (reg, global_registry)}.values()
    before = {id(r): set(r.names()) for r in touched}
    module = _module_of(target)
    try:
        func = loader()
    except Exception as exc:
        _rollback(touched, before, module)
        return fail("error", f"plugin {pid!r} could not be loaded: {type(exc).__name__}: {exc}")
    module = module or _module_of(func)
    api = PluginApi(pid, reg)
    try:
        func(api)
    except Exception as exc:
        _rollback(touched, before, _module_of(func) or module)
        return fail(
            "error",
            f"plugin {pid!r} raised {type(exc).__name__}: {exc}; none of its tools were registered",
        )
    if not api._staged:
        return fail("warning", f"plugin {pid!r} registered no tools")
    for staged in api._staged:
        if isinstance(staged.item, Tool):
            reg.register(
                staged.item,
                plugin_id=pid,
                optional=staged.optional or staged.item.optional,
                replace=_own_user_tool(reg, staged.item, module),
            )
            if reg.meta(staged.item.name).plugin_id == pid:
                report.registered.append(staged.item.name)
        else:
            reg.register_factory(
                staged.item, names=staged.names, optional=staged.optional, plugin_id=pid
            )
            for name in staged.names or ():
                if name in reg and reg.meta(name).plugin_id == pid:
                    report.registered.append(name)
    report.loaded = True
    return report


def load_plugins(
    *, registry: ToolRegistry | None = None, group: str = ENTRY_POINT_GROUP
) -> list[PluginReport]:
    """Load every plugin installed under the entry-point group (``kode.plugins``).

    Each entry point's name is its plugin id. Plugins load in name order; one that fails is
    reported and skipped.
    """
    from importlib.metadata import entry_points  # here: importing it costs ~10 ms

    reports = []
    for ep in sorted(entry_points(group=group), key=lambda e: e.name):
        reports.append(_load(ep.load, ep.value, ep.name, registry, default_id=ep.name))
    return reports
