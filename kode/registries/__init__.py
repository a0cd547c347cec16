"""Tool registries: name → tool factory, and the global `registry` that `define_tool` fills."""

from __future__ import annotations

from kode.registries.registry import (
    RegisteredTool,
    ToolFactoryFunc,
    ToolRegistry,
    normalize_name,
    registry,
)

__all__ = ["RegisteredTool", "ToolFactoryFunc", "ToolRegistry", "normalize_name", "registry"]
