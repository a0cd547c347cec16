"""Testing tools and agents: fixtures (a pytest plugin), a fake provider server, helpers.

The pytest plugin is registered through the ``pytest11`` entry point, so installing kode
gives every project the fixtures `isolated_registry`, `scripted_model` and `tool_context`.
"""

from __future__ import annotations

from kode.testing.helpers import assert_error, assert_ok, call_tool, call_tool_sync

__all__ = ["assert_error", "assert_ok", "call_tool", "call_tool_sync"]
