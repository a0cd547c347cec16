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
