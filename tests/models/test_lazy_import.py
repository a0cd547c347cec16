"""Provider SDKs are optional: importing kode.models must not import them."""

from __future__ import annotations

import subprocess
import sys

import pytest


def run(code: str) -> str:
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    return result.stdout.strip()


def test_importing_kode_models_imports_no_sdk() -> None:
    code = (
        "import sys, kode.models, kode.models.translate; "
        "print(sorted(m for m in ('anthropic', 'openai', 'httpx2') if m in sys.modules))"
    )
    assert run(code) == "[]"


@pytest.mark.parametrize(
    ("name", "sdk"), [("AnthropicModel", "anthropic"), ("OpenAIModel", "openai")]
)
def test_each_model_loads_its_sdk_on_first_use(name: str, sdk: str) -> None:
    other = "openai" if sdk == "anthropic" else "anthropic"
    code = (
        f"import sys, kode.models; model = kode.models.{name}; "
        f"print(model.__name__, {sdk!r} in sys.modules, {other!r} in sys.modules)"
    )
    assert run(code) == f"{name} True False"


@pytest.mark.parametrize(("module", "extra"), [("anthropic", "anthropic"), ("openai", "openai")])
def test_a_missing_sdk_says_which_extra_to_install(module: str, extra: str) -> None:
    code = (
        f"import sys; sys.modules[{module!r}] = None\n"
        "try:\n"
        f"    import kode.models.{module}\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    assert f"pip install 'kode-sdk[{extra}]'" in run(code)


def test_unknown_attribute() -> None:
    import kode.models

    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        kode.models.Nope  # noqa: B018
