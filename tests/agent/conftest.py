from __future__ import annotations

from collections.abc import Iterator

import pytest

from kode.agent import TemplateRegistry, templates
from kode.registries import ToolRegistry


@pytest.fixture
def reg() -> ToolRegistry:
    """A private registry for one test's tools."""
    return ToolRegistry(name="test")


@pytest.fixture
def template_registry() -> Iterator[TemplateRegistry]:
    """The global template registry, emptied for this test and restored after it."""
    saved = dict(templates._templates)
    templates._templates.clear()
    try:
        yield templates
    finally:
        templates._templates.clear()
        templates._templates.update(saved)
