"""bench/search_models.py ranks by meaning as a search does: its figures for wordllama's model
are those of `SearchIndex` with the words' share at zero (bench/search_quality.py's "dense").

No timing is asserted: the machine is shared.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

pytest.importorskip("wordllama", reason="the search extra is not installed")

BENCH = Path(__file__).resolve().parent.parent / "bench"


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def scripts() -> Iterator[tuple[ModuleType, ModuleType]]:
    try:
        yield _load("search_models"), _load("search_quality")
    finally:
        for name in ("bench_search_models", "bench_search_quality"):
            sys.modules.pop(name, None)


def test_wordllama_figures_are_those_of_the_search_by_meaning_alone(
    scripts: tuple[ModuleType, ModuleType], monkeypatch: pytest.MonkeyPatch
) -> None:
    import kode.registries.search as search_module
    from kode.registries.search_dense import embedder

    models, quality = scripts
    reg = models.catalogue()
    model = embedder()
    by_bench = models.quality((model.embed, model.embed), reg, models.TUNING)
    monkeypatch.setattr(search_module, "BM25_SHARE", 0.0)
    by_search = quality.measure(quality.index_of(reg, dense=True), models.TUNING)
    assert by_bench["recall_at_5"] == pytest.approx(by_search["recall_at_5"])
    assert by_bench["mrr"] == pytest.approx(by_search["mrr"])
    assert by_bench["recall_at_5"] > 0.5  # meaning finds paraphrases that words do not


def test_minilm_is_skipped_without_its_folder_and_the_output_has_one_row(
    scripts: tuple[ModuleType, ModuleType],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import json

    models, _ = scripts
    monkeypatch.setattr(sys, "argv", ["search_models.py", "--json"])
    assert models.main() == 0
    rows = json.loads(capsys.readouterr().out)
    assert [row["model"] for row in rows] == ["wordllama"]
    assert set(rows[0]) == {"model", "load_s", "tuning", "kode", "query", "tool"}
