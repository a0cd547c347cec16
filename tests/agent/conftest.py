from __future__ import annotations

import pytest

from kode.agent import TemplateRegistry
from kode.registries import ToolRegistry


@pytest.fixture
def reg() -> ToolRegistry:
    """A private registry for one test's tools."""
    return ToolRegistry(name="test")


@pytest.fixture
def template_registry(isolated_templates: TemplateRegistry) -> TemplateRegistry:
    """The global template registry, emptied for this test and restored after it."""
    return isolated_templates
