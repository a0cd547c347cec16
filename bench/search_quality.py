"""Tool search quality: words (BM25), meaning (dense) and both (hybrid), on three query sets.

Run ``python bench/search_quality.py`` (``--json`` for machine-readable output, ``--check`` to
exit 1 when the held-out target is missed). For each set and each way of ranking it prints
recall@5, recall@1 and MRR (the mean of 1 / the rank of the first right tool, 0 past ten):

- ``tuning``: 78 paraphrased queries over the 135-tool catalogue of
  ``tests/registries/paraphrase_corpus.py``, the set `BM25_SHARE` and `COVERAGE_POWER` were
  tuned on;
- ``heldout``: 83 more queries over the same catalogue, written with the tuning set, never tuned
  on (target: recall@5 of the hybrid at least 0.9);
- ``kode``: kode's own retrieval set (``tests/registries/search_corpus.py``: 305 tools, 131
  queries), which the hybrid must not do worse on than BM25 alone.

``bm25`` is `SearchIndex(dense=False)`, ``dense`` ranks by similarity alone (`BM25_SHARE` = 0)
and ``hybrid`` is what a search does with the ``search`` extra installed. With
``KODE_TOOL_SEARCH_MODEL`` naming an all-mpnet-base-v2 folder (the accurate mode,
`kode.registries.search_model`) the figures are that model's. No network.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "registries"))

from paraphrase_corpus import HELD_OUT, TUNING, catalogue
from search_corpus import QUERIES, corpus

import kode.registries.search as search_module
from kode import ToolRegistry
from kode.registries.entries import normalize_name
from kode.registries.search import SearchIndex
from kode.registries.search_dense import embedder

HELD_OUT_TARGET = 0.9


def index_of(reg: ToolRegistry, *, dense: bool) -> SearchIndex:
    index = SearchIndex(dense=dense)
    for entry in reg.entries():
        index.add(normalize_name(entry.name), entry.tool, entry.meta)
    return index


def measure(index: SearchIndex, queries: list[tuple[str, list[str]]]) -> dict[str, float]:
    """Mean recall@5, recall@1 and MRR (first right tool in the top ten) over `queries`."""
    at5 = at1 = mrr = 0.0
    for query, wanted in queries:
        found = [hit.name for hit in index.search(query, limit=10)]
        at5 += sum(name in found[:5] for name in wanted) / len(wanted)
        at1 += bool(found) and found[0] in wanted
        mrr += next((1 / (i + 1) for i, name in enumerate(found) if name in wanted), 0.0)
    n = len(queries)
    return {"recall_at_5": at5 / n, "recall_at_1": at1 / n, "mrr": mrr / n}


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args()
    sets = {
        "tuning": (catalogue(), TUNING),
        "heldout": (catalogue(), HELD_OUT),
        "kode": (corpus(), QUERIES),
    }
    rows: dict[str, dict[str, dict[str, float]]] = {}
    share, model = search_module.BM25_SHARE, embedder()
    mix = model.mix  # the accurate mode's own (share, power, agreement)
    for name, (reg, queries) in sets.items():
        words, meaning = index_of(reg, dense=False), index_of(reg, dense=True)
        if not meaning.dense:
            sys.exit("search by meaning is off: install kode-sdk[search] (wordllama)")
        rows[name] = {"bm25": measure(words, queries), "hybrid": measure(meaning, queries)}
        search_module.BM25_SHARE = 0.0
        if mix is not None:
            model.mix = (0.0, *mix[1:])
        try:
            rows[name]["dense"] = measure(meaning, queries)
        finally:
            search_module.BM25_SHARE = share
            model.mix = mix
    missed = []
    held = rows["heldout"]["hybrid"]["recall_at_5"]
    if held < HELD_OUT_TARGET:
        missed.append(f"heldout hybrid recall_at_5 {held:.3f} < {HELD_OUT_TARGET}")
    kode_words, kode_both = (rows["kode"][m]["recall_at_5"] for m in ("bm25", "hybrid"))
    if kode_both < kode_words:
        missed.append(f"kode hybrid recall_at_5 {kode_both:.3f} < bm25 {kode_words:.3f}")
    if args.json:
        print(json.dumps({"figures": rows, "missed": missed}, indent=2))
    else:
        print(f"{'set':8} {'ranking':7} {'recall@5':>9} {'recall@1':>9} {'MRR':>6}")
        for name, by_mode in rows.items():
            for mode in ("bm25", "dense", "hybrid"):
                f = by_mode[mode]
                print(
                    f"{name:8} {mode:7} {f['recall_at_5']:9.3f} {f['recall_at_1']:9.3f}"
                    f" {f['mrr']:6.3f}"
                )
        for line in missed:
            print(f"MISSED: {line}")
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
