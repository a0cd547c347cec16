"""Retrieval quality of tool search on the shipped test set (see ``search_corpus.py``)."""

from __future__ import annotations

from search_corpus import QUERIES, corpus

from kode.registries import ToolSource

RECALL_AT_5 = 0.9


def recall_at_5() -> tuple[float, list[str]]:
    """Mean recall@5 over the queries, and a line for each query not fully answered."""
    reg = corpus()
    total, misses = 0.0, []
    for query, wanted in QUERIES:
        found = [hit.name for hit in reg.search(query, limit=5)]
        recall = sum(name in found for name in wanted) / len(wanted)
        total += recall
        if recall < 1:
            misses.append(f"{recall:.2f} {query!r}: wanted {wanted}, found {found}")
    return total / len(QUERIES), misses


def test_the_test_set_is_large_and_every_answer_exists() -> None:
    reg = corpus()
    sources = {reg.meta(name).source for name in reg.names()}
    assert len(reg) >= 300 and len(QUERIES) >= 100
    assert {ToolSource.CORE, ToolSource.MCP} <= sources
    assert {reg.meta(n).server for n in reg.names()} >= {"everything", "filesystem"}
    missing = [name for _, wanted in QUERIES for name in wanted if name not in reg]
    assert missing == []


def test_recall_at_5_is_at_least_0_9() -> None:
    recall, misses = recall_at_5()
    assert recall >= RECALL_AT_5, "\n".join([f"recall@5 = {recall:.3f}", *misses])
