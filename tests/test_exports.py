"""The public API is exactly `kode.__all__`, sorted, and every name resolves."""

from __future__ import annotations

import subprocess
import sys

import kode


def test_all_is_sorted_and_unique() -> None:
    assert list(kode.__all__) == sorted(set(kode.__all__))


def test_every_public_name_resolves() -> None:
    for name in kode.__all__:
        assert getattr(kode, name) is not None, name
    assert set(dir(kode)) >= set(kode.__all__)


def test_registry_is_the_global_registry_object() -> None:
    from kode.registries import ToolRegistry

    assert isinstance(kode.registry, ToolRegistry)


def test_unknown_attribute_is_an_attribute_error() -> None:
    try:
        kode.no_such_thing  # noqa: B018
    except AttributeError as exc:
        assert "no attribute 'no_such_thing'" in str(exc)
    else:  # pragma: no cover
        raise AssertionError("expected AttributeError")


def test_import_kode_is_lazy() -> None:
    code = (
        "import sys, kode; "
        "print(any(m.startswith(('kode.tools', 'anyio', 'docstring_parser')) for m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_tools_layer_does_not_import_the_layers_above_at_import_time() -> None:
    code = (
        "import sys, kode.tools; "
        "print(sorted(m for m in sys.modules if m.startswith('kode.registries')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_what_users_look_for_is_exported_where_they_look() -> None:
    import kode.builtin
    import kode.registries
    from kode.builtin._shared import _policy
    from kode.registries import plugins
    from kode.tools import workspace

    assert (kode.Workspace, kode.FilePool) == (workspace.Workspace, workspace.FilePool)
    for name in ("PluginApi", "PluginReport", "load_plugin", "load_plugins"):
        assert getattr(kode.registries, name) is getattr(plugins, name), name
        assert name in kode.registries.__all__, name
    for name in ("PluginApi", "load_plugin", "load_plugins"):
        assert getattr(kode, name) is getattr(plugins, name), name
    for name in ("RuntimePolicy", "set_default_runtime_policy", "using_runtime_policy"):
        assert getattr(kode.builtin, name) is getattr(_policy, name), name
        assert name in kode.builtin.__all__, name


def test_the_api_reference_lists_the_public_names() -> None:
    from pathlib import Path

    import kode.mcp

    page = (Path(__file__).parent.parent / "docs" / "api.md").read_text()
    listed = {line.rsplit(".", 1)[-1] for line in page.splitlines() if line.startswith("::: ")}
    wanted = {name for name in kode.__all__ if name != "__version__"}
    wanted |= set(kode.mcp.__all__)
    wanted |= {"RuntimePolicy", "AgentStream", "isolated_templates", "PluginReport"}
    assert sorted(wanted - listed) == []


def test_mcp_connection_error_is_importable_without_the_mcp_sdk() -> None:
    code = (
        "import sys, kode.mcp; error = kode.mcp.MCPConnectionError; "
        "print(issubclass(error, kode.KodeError), "
        "any(m.split('.')[0] in ('mcp', 'mcp_types') for m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True False"
