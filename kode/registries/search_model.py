"""The accurate mode of tool search by meaning: all-mpnet-base-v2 from a folder, run in numpy.

Opt-in: ``KODE_TOOL_SEARCH_MODEL`` names a sentence-transformers folder of all-mpnet-base-v2
(``config.json``, ``model.safetensors``, ``tokenizer.json``). `TransformerEmbedder` then takes
the place of wordllama's `kode.registries.search_dense.Embedder` for every index of the
process: a 12-layer transformer (768 dimensions) whose vectors find paraphrases far better
(recall@5 on the held-out paraphrase set 0.904 against 0.645) at a far higher cost: about
0.1 s a query and 0.25 s a short tool, so each tool's vector is kept on disk
(`CACHE_ENV`, by default ``~/.cache/kode/tool-search``), keyed by its text, and a tool is
embedded once per machine. Nothing is downloaded: the folder is read as it is. It needs
numpy, safetensors and tokenizers (the ``search-accurate`` extra). When the folder cannot be
read, searches go on by words alone (a warning is logged once).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = [
    "CACHE_ENV",
    "MIX",
    "MODEL_ENV",
    "TransformerEmbedder",
    "cache_folder",
    "model_folder",
]

MODEL_ENV = "KODE_TOOL_SEARCH_MODEL"
"""The environment variable naming the all-mpnet-base-v2 folder (unset: wordllama's model)."""
CACHE_ENV = "KODE_TOOL_SEARCH_CACHE"
"""The folder where tools' vectors are kept (``off``: in memory only)."""
MIX = (0.6, 2.0, 0.3)
"""The hybrid's words' share, coverage power and agreement with this model (tuned on the tuning
set with kode's set as the bound, see ``bench/README.md``)."""
MAX_TOKENS = 256
"""Longer texts are cut here (a tool's name, first paragraph and parameter names fit), or
where the model's positions end, if sooner."""
_BATCH = 16
_QUERY_CACHE = 1024
_log = logging.getLogger("kode.search")


def model_folder() -> Path | None:
    """The folder `MODEL_ENV` names, or `None` when it is unset or empty."""
    value = os.environ.get(MODEL_ENV, "").strip()
    return Path(value).expanduser() if value else None


def cache_folder() -> Path | None:
    """The folder `CACHE_ENV` names (its default when unset; `None`: ``off``)."""
    value = os.environ.get(CACHE_ENV, "").strip()
    if value.lower() in {"0", "off", "false", "no"}:
        return None
    if value:
        return Path(value).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kode/tool-search"


def _bucket(relative: NDArray[np.intp], buckets: int = 32, far: int = 128) -> NDArray[np.intp]:
    """MPNet's bucket of each relative position: one per distance up to 8, logarithmic after."""
    import numpy as np

    half = buckets // 2
    n = -relative
    out = (n < 0).astype(np.intp) * half
    n = np.abs(n)
    exact = half // 2
    log = np.log(np.maximum(n, 1) / exact) / math.log(far / exact) * (half - exact)
    return out + np.where(n < exact, n, np.minimum(exact + log.astype(np.intp), half - 1))


class TransformerEmbedder:
    """all-mpnet-base-v2 in numpy, with its tools' vectors kept on disk. Thread-safe.

    Args:
        folder: The sentence-transformers folder of the model.
        cache: Where vectors are kept (`None`: in memory only).
    """

    mix: tuple[float, float, float] | None = MIX
    inline = False  # a query takes about 0.1 s: an agent's tool_search runs it in a thread

    def __init__(self, folder: Path, cache: Path | None = None) -> None:
        self._folder = folder
        self._cache_root = cache
        self._lock = threading.Lock()
        self._weights: dict[str, NDArray[np.float32]] | None = None
        self._tokenizer: Any = None
        self._config: dict[str, Any] = {}
        self._failed = False
        self._db: sqlite3.Connection | None = None
        self._queries: dict[str, NDArray[np.float32]] = {}  # query → vector
        self._memory: dict[bytes, NDArray[np.float32]] = {}  # without a disk cache
        self.dimensions = 768

    @property
    def loaded(self) -> bool:
        """Whether the model is in memory."""
        return self._weights is not None

    @property
    def usable(self) -> bool:
        """False once loading the model failed."""
        return not self._failed

    def load(self) -> bool:
        """Load the model if it is not yet; whether it is loaded."""
        with self._lock:
            if self._weights is None and not self._failed:
                try:
                    self._load()
                except Exception as exc:  # a bad folder must not break searching by words
                    self._failed = True
                    _log.warning(
                        "tool search by meaning is off: %s=%s did not load: %s",
                        MODEL_ENV,
                        self._folder,
                        exc,
                    )
            return self._weights is not None

    def _load(self) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        config = json.loads((self._folder / "config.json").read_text())
        if config.get("model_type") != "mpnet":
            raise ValueError(f"model_type is {config.get('model_type')!r}, not 'mpnet'")
        weights = load_file(str(self._folder / "model.safetensors"))
        tokenizer = Tokenizer.from_file(str(self._folder / "tokenizer.json"))
        tokenizer.no_padding()
        # Positions start at 2 (after the padding id): a model with fewer positions than
        # MAX_TOKENS + 2 cuts texts where its positions end, never past them.
        positions = len(weights["embeddings.position_embeddings.weight"]) - 2
        tokenizer.enable_truncation(max(1, min(MAX_TOKENS, positions)))
        self._config, self._tokenizer = config, tokenizer
        self.dimensions = int(config["hidden_size"])
        if self._cache_root is not None:
            # One file per model: its weights' path, size and time name it.
            stat = (self._folder / "model.safetensors").stat()
            key = f"{self._folder.resolve()}:{stat.st_size}:{stat.st_mtime_ns}"
            name = "mpnet-" + hashlib.sha256(key.encode()).hexdigest()[:16] + ".sqlite"
            try:
                self._cache_root.mkdir(parents=True, exist_ok=True)
                db = sqlite3.connect(self._cache_root / name, check_same_thread=False)
                db.execute("create table if not exists v (k blob primary key, v blob)")
                self._db = db
            except (OSError, sqlite3.Error) as exc:  # vectors are then kept in memory only
                _log.warning("tool search: no disk cache at %s: %s", self._cache_root, exc)
        self._weights = weights

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Unit vectors of tools' `texts`, one row each, kept on disk once computed.

        Raises:
            RuntimeError: The model could not be loaded (see `usable`).
        """
        import numpy as np

        if not self.load():
            raise RuntimeError(f"the model of {MODEL_ENV} could not be loaded")
        keys = [hashlib.sha256(t.encode()).digest() for t in texts]
        found = self._cached(keys)
        missing = list({k: i for i, k in enumerate(keys) if k not in found}.values())
        # Texts of like length together: a batch pads to its longest.
        missing.sort(key=lambda i: len(texts[i]))
        for first in range(0, len(missing), _BATCH):
            rows = missing[first : first + _BATCH]
            vectors = self._forward([texts[i] for i in rows])
            pairs = [(keys[i], v) for i, v in zip(rows, vectors, strict=True)]
            found.update(pairs)
            self._store(pairs)
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        for i, key in enumerate(keys):
            out[i] = found[key]
        return out

    def embed_query(self, text: str) -> NDArray[np.float32]:
        """The unit vector of a query: kept in memory (the last 1,024), never on disk."""
        if not self.load():
            raise RuntimeError(f"the model of {MODEL_ENV} could not be loaded")
        with self._lock:
            vector = self._queries.get(text)
        if vector is None:
            vector = self._forward([text])[0]
            with self._lock:
                if len(self._queries) >= _QUERY_CACHE:
                    self._queries.clear()
                self._queries[text] = vector
        return vector

    def _cached(self, keys: list[bytes]) -> dict[bytes, NDArray[np.float32]]:
        import numpy as np

        wanted = list(dict.fromkeys(keys))
        with self._lock:
            found = {k: self._memory[k] for k in wanted if k in self._memory}
            wanted = [k for k in wanted if k not in found]
            if self._db is None or not wanted:
                return found
            try:
                for first in range(0, len(wanted), 500):  # SQLite's bound on parameters
                    part = wanted[first : first + 500]
                    marks = ",".join("?" * len(part))
                    query = f"select k, v from v where k in ({marks})"
                    for key, blob in self._db.execute(query, part):
                        # A file on disk: a row that is not this model's unit vector (cut
                        # short, NaN, another model's) is computed again, never used.
                        if not isinstance(blob, bytes) or len(blob) != 4 * self.dimensions:
                            continue
                        vector = np.frombuffer(blob, dtype=np.float32)
                        norm = float(np.linalg.norm(vector))
                        if math.isfinite(norm) and abs(norm - 1.0) < 1e-3:
                            found[bytes(key)] = vector
            except sqlite3.Error as exc:
                self._drop_cache(exc)
        return found

    def _drop_cache(self, exc: Exception) -> None:
        """Go on without the disk cache (a broken or locked file): vectors kept in memory."""
        _log.warning("tool search: the disk cache failed, vectors kept in memory: %s", exc)
        self._db = None

    def _store(self, pairs: list[tuple[bytes, NDArray[np.float32]]]) -> None:
        import numpy as np

        with self._lock:
            if self._db is not None:
                rows = [(k, v.astype(np.float32).tobytes()) for k, v in pairs]
                try:
                    self._db.executemany("insert or replace into v values (?, ?)", rows)
                    self._db.commit()
                    return
                except sqlite3.Error as exc:
                    self._drop_cache(exc)
            self._memory.update(pairs)

    def _forward(self, texts: list[str]) -> NDArray[np.float32]:
        """MPNet's encoder over a padded batch, mean-pooled over each text's tokens."""
        import numpy as np

        w, config = self._weights, self._config
        assert w is not None
        heads, layers = int(config["num_attention_heads"]), int(config["num_hidden_layers"])
        eps = float(config.get("layer_norm_eps", 1e-5))
        encoded = [self._tokenizer.encode(t).ids for t in texts]
        size, n = self.dimensions, max(len(ids) for ids in encoded)
        ids = np.full((len(texts), n), int(config.get("pad_token_id", 1)), dtype=np.intp)
        mask = np.zeros((len(texts), n), dtype=np.float32)
        for i, row in enumerate(encoded):
            ids[i, : len(row)], mask[i, : len(row)] = row, 1.0

        def norm(x: Any, name: str) -> Any:
            mean = x.mean(-1, keepdims=True)
            var = ((x - mean) ** 2).mean(-1, keepdims=True)
            return (x - mean) / np.sqrt(var + eps) * w[name + ".weight"] + w[name + ".bias"]

        def dense(x: Any, name: str) -> Any:
            # As one 2-D product: numpy runs a stack of them (3-D @ 2-D) without BLAS.
            weight = w[name + ".weight"]
            flat = x.reshape(-1, x.shape[-1]) @ weight.T + w[name + ".bias"]
            return flat.reshape(*x.shape[:-1], weight.shape[0])

        # Positions start after the padding id, as in RoBERTa.
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][np.arange(n) + 2]
        )
        x = norm(x, "embeddings.LayerNorm")
        relative = np.arange(n)[None, :] - np.arange(n)[:, None]
        bias = w["encoder.relative_attention_bias.weight"][_bucket(relative)].transpose(2, 0, 1)
        bias = bias[None] + ((mask - 1.0) * 1e9)[:, None, None, :]  # padding is never attended
        d = size // heads
        for i in range(layers):
            p = f"encoder.layer.{i}."
            q, k, v = (
                dense(x, p + f"attention.attn.{part}")
                .reshape(-1, n, heads, d)
                .transpose(0, 2, 1, 3)
                for part in "qkv"
            )
            a = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d) + bias
            a = np.exp(a - a.max(-1, keepdims=True))
            a /= a.sum(-1, keepdims=True)
            c = (a @ v).transpose(0, 2, 1, 3).reshape(-1, n, size)
            x = norm(x + dense(c, p + "attention.attn.o"), p + "attention.LayerNorm")
            h = dense(x, p + "intermediate.dense")
            h = 0.5 * h * (1 + np.tanh(math.sqrt(2 / math.pi) * (h + 0.044715 * h**3)))
            x = norm(x + dense(h, p + "output.dense"), p + "output.LayerNorm")
        pooled = (x * mask[:, :, None]).sum(1) / mask.sum(1, keepdims=True)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        result: NDArray[np.float32] = (pooled / np.where(norms > 0, norms, 1.0)).astype(np.float32)
        return result
