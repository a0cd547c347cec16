"""Helpers for testing tools: an isolated global registry and calling a tool as a model would.

Shipped as a pytest plugin (the ``pytest11`` entry point ``kode``), so the fixtures are
available in any project that installs kode.
"""

from __future__ import annotations

from kode.testing.plugin import call_tool, isolated_registry

__all__ = ["call_tool", "isolated_registry"]
