from __future__ import annotations

from pathlib import Path

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


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A session store's URL: a SQLite file in the test's folder, then a PostgreSQL database
    (skipped where no PostgreSQL server can be had)."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'sessions.db'}"
    return str(request.getfixturevalue("postgres_url"))
