"""Finding tools by meaning: vectors from the static embedding model the wordllama package ships.

This module owns `Embedder`, the process's one loaded model (wordllama's 256-dimension
``l2_supercat`` weights and tokenizer, read from the package's own folder, never downloaded),
and `DenseIndex`: one unit vector per tool in a matrix, filled when first searched and kept up
to date after. A text's vector is the mean of its tokens' vectors (what wordllama computes),
made from a cache of each word's token vectors, so a word is tokenized once per process and a
description made of known words costs a few additions. It does not rank: `SearchIndex`
combines these similarities with BM25's scores. Without the ``search`` extra (no wordllama),
or with ``KODE_TOOL_SEARCH_DENSE=0``, nothing here is used and a search is BM25 alone.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import threading
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = ["DENSE_ENV", "DenseIndex", "Embedder", "Vectors", "dense_available", "embedder"]

DENSE_ENV = "KODE_TOOL_SEARCH_DENSE"
"""The environment variable that turns search by meaning off (``0``, ``off``, ``false``, ``no``)."""
DIMENSIONS = 256
"""The size of a vector (the dimension the wordllama wheel ships)."""
WORD_CACHE_LIMIT = 200_000
"""Words whose token vectors are kept; past it the cache starts again (about 1 KiB a word)."""

_BATCH = 512
_log = logging.getLogger("kode.search")
_OFF = frozenset({"0", "off", "false", "no"})


class Vectors(Protocol):
    """What makes vectors for an index.

    Wordllama's `Embedder`, or the accurate mode's model
    (`kode.registries.search_model.TransformerEmbedder`).
    """

    dimensions: int
    inline: bool
    """Whether a query is embedded in well under a millisecond (a search may run inline)."""
    mix: tuple[float, float, float] | None
    """The hybrid's (words' share, coverage power, agreement) for it; `None`: the defaults."""

    @property
    def loaded(self) -> bool:
        """Whether the model is in memory."""

    @property
    def usable(self) -> bool:
        """False once loading the model failed."""

    def load(self) -> bool:
        """Load the model if it is not yet; whether it is loaded."""

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Unit vectors of tools' texts, one row each."""

    def embed_query(self, text: str) -> NDArray[np.float32]:
        """The unit vector of one query."""


def dense_available() -> bool:
    """Whether searches use meaning.

    `DENSE_ENV` does not say off, and wordllama is installed, or ``KODE_TOOL_SEARCH_MODEL``
    names a model and numpy, safetensors and tokenizers are installed.
    """
    from kode.registries.search_model import model_folder

    if os.environ.get(DENSE_ENV, "").strip().lower() in _OFF:
        return False
    needed = ("numpy", "safetensors", "tokenizers") if model_folder() else ("wordllama",)
    return all(importlib.util.find_spec(name) for name in needed) and embedder().usable


class Embedder:
    """The loaded model, shared by every index of the process, and its cache of word vectors.

    The model is loaded by the first `embed` (about 0.3 s of CPU and 100 MB), never at import or
    registration. Thread-safe.
    """

    dimensions = DIMENSIONS
    inline = True
    mix: tuple[float, float, float] | None = None

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._table: NDArray[np.float32] | None = None  # token id → vector
        self._tokenizer: Any = None
        self._failed = False
        self._row: dict[str, int] = {}  # word → row of _sums
        self._sums: NDArray[np.float32] | None = None  # the sum of each word's token vectors
        self._counts: NDArray[np.float32] | None = None  # how many tokens each word has

    @property
    def loaded(self) -> bool:
        """Whether the model is in memory (a search will not wait for it)."""
        return self._table is not None

    @property
    def usable(self) -> bool:
        """False once loading the model failed (the searches go on with BM25 alone)."""
        return not self._failed

    def load(self) -> bool:
        """Load the model if it is not yet; whether it is loaded."""
        with self._lock:
            if self._table is None and not self._failed:
                try:
                    import wordllama  # type: ignore[import-untyped]
                    from wordllama import WordLlama

                    # The package's own folder: its default lookup misses the bundled tokenizer
                    # and would try to download it.
                    model = WordLlama.load(
                        cache_dir=Path(wordllama.__file__).parent, disable_download=True
                    )
                except Exception as exc:  # a broken install must not break searching by words
                    self._failed = True
                    _log.warning("tool search by meaning is off: wordllama did not load: %s", exc)
                    return False
                model.tokenizer.no_padding()
                self._tokenizer = model.tokenizer
                self._table = model.embedding
            return self._table is not None

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Unit vectors of `texts`, one row each (a text with no word gives a row of zeros).

        Raises:
            RuntimeError: The model could not be loaded (see `usable`).
        """
        import numpy as np

        if not self.load():
            raise RuntimeError("the wordllama model could not be loaded")
        out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        for first in range(0, len(texts), _BATCH):  # a batch's word rows stay a few MB
            split = [text.split() for text in texts[first : first + _BATCH]]
            with self._lock:
                self._learn({word for words in split for word in words})
                assert self._sums is not None and self._counts is not None
                row = self._row
                rows = [row[w] for words in split for w in words]
                sums, counts = self._sums[rows], self._counts[rows]
            sizes = np.fromiter((len(words) for words in split), dtype=np.intp, count=len(split))
            ends = np.cumsum(sizes)
            running = np.concatenate([[0.0], np.cumsum(counts, dtype=np.float64)])
            tokens = running[ends] - running[ends - sizes]
            vectors = _segment_sums(sums, sizes) / np.maximum(tokens, 1.0)[:, None]
            norms = np.linalg.norm(vectors, axis=1, keepdims=True)
            out[first : first + len(split)] = vectors / np.where(norms > 0, norms, 1.0)
        return out

    def embed_query(self, text: str) -> NDArray[np.float32]:
        """The unit vector of one query."""
        vector: NDArray[np.float32] = self.embed([text])[0]
        return vector

    def _learn(self, words: set[str]) -> None:
        """Tokenize the words not seen yet and keep the sum of their token vectors."""
        import numpy as np

        new = [w for w in words if w not in self._row]
        if not new:
            return
        if len(self._row) + len(new) > WORD_CACHE_LIMIT:
            self._row, self._sums, self._counts = {}, None, None
            new = list(words)
        assert self._table is not None
        table = self._table
        encoded = self._tokenizer.encode_batch(new, add_special_tokens=False)
        sizes = np.fromiter((len(enc.ids) for enc in encoded), dtype=np.intp, count=len(new))
        ids = np.fromiter((i for enc in encoded for i in enc.ids), dtype=np.intp)
        np.clip(ids, 0, len(table) - 1, out=ids)
        sums = _segment_sums(table[ids], sizes)
        counts = sizes.astype(np.float32)
        start = len(self._row)
        end = start + len(new)
        if self._sums is None or self._counts is None or len(self._sums) < end:
            size = max(1024, end * 3 // 2)  # grown by half: adding words is amortised O(1)
            grown = np.zeros((size, DIMENSIONS), dtype=np.float32)
            grown_counts = np.zeros(size, dtype=np.float32)
            if self._sums is not None and self._counts is not None:
                grown[:start], grown_counts[:start] = self._sums[:start], self._counts[:start]
            self._sums, self._counts = grown, grown_counts
        self._sums[start:end], self._counts[start:end] = sums, counts
        for i, word in enumerate(new):
            self._row[word] = start + i


def _segment_sums(values: NDArray[Any], sizes: NDArray[np.intp]) -> NDArray[np.float32]:
    """The sums of consecutive runs of `values` (rows, or items), `sizes[i]` long each.

    One small sum a run: faster here than `np.add.reduceat` or a running total over rows, and
    an empty run gives zero.
    """
    import numpy as np

    out = np.zeros((len(sizes), *values.shape[1:]), dtype=np.float32)
    end = 0
    for i, size in enumerate(sizes.tolist()):
        if size:
            out[i] = values[end : end + size].sum(axis=0)
            end += size
    return out


_EMBEDDER: Embedder | None = None
_MODEL: tuple[Path, Vectors] | None = None
_EMBEDDER_LOCK = threading.Lock()


def embedder() -> Vectors:
    """The process's model of meaning (made, not loaded, on first call).

    The model ``KODE_TOOL_SEARCH_MODEL`` names, else wordllama's `Embedder`.
    """
    from kode.registries.search_model import TransformerEmbedder, cache_folder, model_folder

    global _EMBEDDER, _MODEL
    folder = model_folder()
    with _EMBEDDER_LOCK:
        if folder is not None:
            if _MODEL is None or _MODEL[0] != folder:
                _MODEL = (folder, TransformerEmbedder(folder, cache_folder()))
            return _MODEL[1]
        if _EMBEDDER is None:
            _EMBEDDER = Embedder()
        return _EMBEDDER


class DenseIndex:
    """One unit vector per tool, as rows of a matrix; similarities to a query in one product.

    `add` and `remove` only note the text (no model is needed to register a tool); the next
    `similarities` embeds what was added since, in one batch, and writes those rows.
    Not thread-safe: its `SearchIndex`'s owner serialises calls (the registry's lock).
    """

    def __init__(self, source: Vectors | None = None) -> None:
        self._embedder = source or embedder()
        self._keys: list[str] = []  # row → key
        self._texts: list[str] = []  # row → the text embedded
        self._row: dict[str, int] = {}  # key → row
        self._pending: set[str] = set()  # keys whose row is not written yet
        self._matrix: NDArray[np.float32] | None = None  # at least len(_keys) rows

    def __len__(self) -> int:
        return len(self._keys)

    @property
    def ready(self) -> bool:
        """Whether a search would run at once.

        No model to load, no tool to embed, and a query embedded in well under a millisecond
        (not so with the accurate mode's model).
        """
        return not self._pending and self._embedder.loaded and self._embedder.inline

    @property
    def usable(self) -> bool:
        """False once its model failed to load (searches then go on by words alone)."""
        return self._embedder.usable

    @property
    def mix(self) -> tuple[float, float, float] | None:
        """The hybrid's (words' share, coverage power, agreement) for its model.

        `None`: the defaults of `kode.registries.search`.
        """
        return self._embedder.mix

    def load(self) -> bool:
        """Load the model if it is not yet; whether it is loaded."""
        return self._embedder.load()

    def add(self, key: str, text: str) -> None:
        """Note the text of `key` (embedded by the next search, unless it is unchanged)."""
        text = " ".join(text.split())
        row = self._row.get(key)
        if row is None:
            self._row[key] = len(self._keys)
            self._keys.append(key)
            self._texts.append(text)
        elif self._texts[row] == text:
            return
        else:
            self._texts[row] = text
        self._pending.add(key)

    def remove(self, key: str) -> None:
        """Forget `key`: the last row takes its place."""
        row = self._row.pop(key, None)
        if row is None:
            return
        self._pending.discard(key)
        last = len(self._keys) - 1
        if row != last:
            moved = self._keys[last]
            self._keys[row], self._texts[row] = moved, self._texts[last]
            self._row[moved] = row
            if self._matrix is not None and moved not in self._pending:
                self._matrix[row] = self._matrix[last]
        self._keys.pop()
        self._texts.pop()

    def similarities(self, query: str) -> NDArray[np.float32]:
        """The cosine similarity of every row to `query` (index it with `row`)."""
        import numpy as np

        self._fill()
        vector = self._embedder.embed_query(" ".join(query.split()))
        assert self._matrix is not None
        # vecdot runs one dot product a row in the calling thread; `matrix @ vector` goes to
        # BLAS, whose threads wake up for it: 30 ms instead of 0.5 ms when the cores are busy.
        found: NDArray[np.float32] = np.vecdot(self._matrix[: len(self._keys)], vector)
        return found

    def row(self, key: str) -> int | None:
        """The row of `key` in what `similarities` returns (`None`: not indexed)."""
        return self._row.get(key)

    def rows(self, keys: Sequence[str]) -> NDArray[np.intp]:
        """The rows of `keys`, every one indexed, in what `similarities` returns."""
        import numpy as np

        return np.fromiter(map(self._row.__getitem__, keys), dtype=np.intp, count=len(keys))

    def best(
        self, similarities: NDArray[np.float32], allowed: Collection[str] | None, count: int
    ) -> list[tuple[str, float]]:
        """The `count` most similar keys among `allowed` (`None`: all), most similar first."""
        import numpy as np

        if allowed is None:
            rows = None
            picked = similarities
        else:
            found = [r for r in (self._row.get(k) for k in allowed) if r is not None]
            rows = np.fromiter(found, dtype=np.intp, count=len(found))
            picked = similarities[rows]
        count = min(count, len(picked))
        if count <= 0:
            return []
        top = np.argpartition(-picked, count - 1)[:count]
        top = top[np.argsort(-picked[top], kind="stable")]
        at = top if rows is None else rows[top]
        return [(self._keys[r], float(similarities[r])) for r in at.tolist()]

    def _fill(self) -> None:
        import numpy as np

        size = len(self._keys)
        if self._matrix is None or len(self._matrix) < size:
            columns = self._embedder.dimensions
            grown = np.zeros((max(64, size * 3 // 2), columns), dtype=np.float32)
            if self._matrix is not None:
                kept = min(len(self._matrix), size)
                grown[:kept] = self._matrix[:kept]
            self._matrix = grown
        if self._pending:
            keys = list(self._pending)
            rows = [self._row[k] for k in keys]
            self._matrix[rows] = self._embedder.embed([self._texts[r] for r in rows])
            self._pending.clear()
