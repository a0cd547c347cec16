"""Tool search: how well it finds tools, how fast, and what deferring saves per request.

Run ``python bench/tool_search.py`` (``--quick`` for fewer rounds, ``--json`` for
machine-readable output, ``--check`` to exit 1 when a target is missed). Figures:

- ``recall_at_5``: mean recall@5 of `ToolRegistry.search` over the retrieval test set shipped
  in ``tests/registries/search_corpus.py`` (305 tools, 131 queries; target >= 0.9);
- ``search_ms_<n>``: the median time of one search (the test set's queries, in turn) in a
  registry of n tools (the test set plus generated back-office tools), for n = 1,000 and
  10,000; the index is made before timing (``build_ms_<n>``: making it on the first search,
  with the search extra embedding every tool too, the model already loaded:
  ``model_load_ms``); ``search_ms_10000_words_only``: the same searches by words alone (BM25)
  over the same 10,000 tools, in the same run; ``search_cpu_ms_*``: the same medians on the
  thread's CPU clock; ``index_words_ms_10000`` and ``embed_ms_10000``: the two parts of making
  the 10,000-tool index (words, then vectors), ``*_cpu_ms_*`` on the process's CPU clock;
- ``dense_bytes_per_tool``: what the search by meaning keeps per tool (its row of the matrix,
  with the matrix's spare rows, its text and its key), and ``dense_bytes_per_word`` per
  distinct word of the descriptions (its cached vector);
- ``register_ms_10000``: registering one more tool in the 10,000-tool registry while its
  search index exists (the index is updated, not rebuilt);
- ``tokens_*``: the size of the tool definitions one model request carries (Anthropic's form,
  JSON, estimated as characters / 4) for an agent allowed the 1,000 tools: every definition
  (``tokens_all``), with all but two deferred (``tokens_deferred_first``: the two,
  ``tool_search``), and after one search loaded five (``tokens_deferred_after_search``).

No network, no pytest: a plain script.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "registries"))

from search_corpus import QUERIES, corpus

from kode import Agent, AgentTemplate, Tool, ToolRegistry
from kode.models import ScriptedModel, tool_use
from kode.registries.entries import normalize_name
from kode.registries.search import SearchIndex
from kode.registries.search_dense import dense_available, embedder
from kode.registries.search_model import MODEL_ENV, model_folder

RECALL_TARGET = 0.9


def grown(size: int) -> ToolRegistry:
    """The test set's tools and generated back-office tools, `size` tools in all."""
    reg = corpus()
    resources = ["invoice", "report", "widget", "ticket", "order", "shipment", "coupon"]
    verbs = ["create", "get", "list", "update", "delete", "archive", "export"]
    i = 0
    while len(reg) < size:
        verb, resource = verbs[i % len(verbs)], resources[(i // len(verbs)) % len(resources)]
        office = i // 49
        reg.register(
            Tool.from_schema(
                f"gen{office}_{verb}_{resource}",
                description=f"{verb.capitalize()} a {resource} in back office {office}.",
                input_schema={
                    "type": "object",
                    "properties": {"id": {"type": "string", "description": f"The {resource}."}},
                },
            )
        )
        i += 1
    return reg


def recall_at_5(reg: ToolRegistry) -> float:
    total = 0.0
    for query, wanted in QUERIES:
        found = [hit.name for hit in reg.search(query, limit=5)]
        total += sum(name in found for name in wanted) / len(wanted)
    return total / len(QUERIES)


def index_10000(reg: ToolRegistry) -> dict[str, float]:
    """Making the 10,000-tool index, in two parts: the words (BM25 documents, and the texts
    to embed) and, with the search extra, the vectors (no word embedded before): wall clock
    and the process's CPU time (the tokenizer may use several threads)."""
    wall, cpu = time.perf_counter_ns(), time.process_time_ns()
    index = reg.search_index()
    rows = {
        "index_words_ms_10000": (time.perf_counter_ns() - wall) / 1e6,
        "index_words_cpu_ms_10000": (time.process_time_ns() - cpu) / 1e6,
    }
    if index._dense is not None:
        wall, cpu = time.perf_counter_ns(), time.process_time_ns()
        index._dense.similarities("warm up")
        rows["embed_ms_10000"] = (time.perf_counter_ns() - wall) / 1e6
        rows["embed_cpu_ms_10000"] = (time.process_time_ns() - cpu) / 1e6
    return rows


def dense_memory(reg: ToolRegistry) -> dict[str, int]:
    """Bytes the search by meaning keeps per tool (its row and text) and per distinct word."""
    index = reg.search_index()
    dense = index._dense
    if dense is None or dense._matrix is None:
        return {}
    texts = sum(sys.getsizeof(t) for t in dense._texts)
    keys = 8 * len(dense._keys) + 100 * len(dense._row)  # list slot, dict entry
    cache = embedder()
    assert cache._sums is not None
    return {
        "dense_bytes_per_tool": (dense._matrix.nbytes + texts + keys) // len(dense),
        "dense_words_cached": len(cache._row),
        "dense_bytes_per_word": (cache._sums.nbytes + 100 * len(cache._row)) // len(cache._row),
    }


def search_ms(reg: ToolRegistry | SearchIndex, rounds: int) -> tuple[float, float, float]:
    """Times in ms: making the index on the first search, and one search's median, on the
    wall clock and on the thread's CPU clock (which other work on busy cores does not move)."""
    start = time.perf_counter_ns()
    reg.search("warm up")
    build = (time.perf_counter_ns() - start) / 1e6
    times, cpu = [], []
    for _ in range(rounds):
        for query, _ in QUERIES:
            start, start_cpu = time.perf_counter_ns(), time.thread_time_ns()
            reg.search(query, limit=5)
            cpu.append((time.thread_time_ns() - start_cpu) / 1e6)
            times.append((time.perf_counter_ns() - start) / 1e6)
    return build, statistics.median(times), statistics.median(cpu)


def tokens(tools: list[Any]) -> int:
    return len(json.dumps([t.schema("anthropic") for t in tools])) // 4


def request_tokens(reg: ToolRegistry) -> dict[str, int]:
    everything = Agent.create(
        AgentTemplate(id="all", tools=["*"]), model=ScriptedModel(["ok"]), registry=reg
    )
    search = tool_use("tool_search", {"query": "open a github issue"})
    model = ScriptedModel([[search], "ok"])
    deferred = Agent.create(
        AgentTemplate(id="few", tools=["fs_read", "fs_ls"], deferred=["*"]),
        model=model,
        registry=reg,
    )
    first = tokens(deferred.request_tools())
    deferred.send_sync("file a bug")
    return {
        "tools_allowed": len(everything.tools),
        "tokens_all": tokens(everything.request_tools()),
        "tokens_deferred_first": first,
        "tokens_deferred_after_search": tokens(deferred.request_tools()),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds (noisier)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args()
    rounds = 1 if args.quick else 5
    if model_folder() is not None:  # its 10,000 tools would take most of an hour to embed
        sys.exit(f"{MODEL_ENV} is set: the accurate mode's costs are bench/search_accurate.py's")
    rows: dict[str, Any] = {"dense": dense_available()}
    if rows["dense"]:
        start = time.perf_counter_ns()
        embedder().load()
        rows["model_load_ms"] = (time.perf_counter_ns() - start) / 1e6
    small, big = grown(1_000), grown(10_000)
    rows.update(index_10000(big))
    for size, reg in ((10_000, big), (1_000, small)):
        build, median, cpu = search_ms(reg, rounds)
        rows[f"build_ms_{size}"] = build
        rows[f"search_ms_{size}"] = median
        rows[f"search_cpu_ms_{size}"] = cpu
    words = SearchIndex(dense=False)
    for entry in big.entries():
        words.add(normalize_name(entry.name), entry.tool, entry.meta)
    _, rows["search_ms_10000_words_only"], rows["search_cpu_ms_10000_words_only"] = search_ms(
        words, rounds
    )
    rows.update(dense_memory(big))
    rows["recall_at_5"] = round(recall_at_5(corpus()), 4)
    start = time.perf_counter_ns()
    big.register(Tool.from_schema("one_more", description="One more tool."))
    rows["register_ms_10000"] = (time.perf_counter_ns() - start) / 1e6
    small.defer_mcp_above = None  # every tool counts as allowed and not deferred below
    rows.update(request_tokens(small))
    missed = []
    if rows["recall_at_5"] < RECALL_TARGET:
        missed.append(f"recall_at_5 {rows['recall_at_5']} < {RECALL_TARGET}")
    if args.json:
        print(json.dumps({"figures": rows, "missed": missed}, indent=2))
    else:
        for key, value in rows.items():
            shown = f"{value:,.3f}" if isinstance(value, float) else f"{value:,}"
            print(f"{key:32} {shown}")
        for line in missed:
            print(f"MISSED: {line}")
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
