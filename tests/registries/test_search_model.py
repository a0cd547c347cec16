"""The accurate mode of tool search by meaning (``kode.registries.search_model``).

The model is all-mpnet-base-v2 read from a folder (``KODE_TOOL_SEARCH_MODEL``). No package
installs it cleanly (see bench/README.md), so these tests run the real loading, encoder and
disk cache on a small MPNet they write themselves (random weights, a word-level tokenizer);
the recall on the held-out paraphrase set is checked with the real model when
``KODE_TEST_SEARCH_MODEL`` names its folder, and skipped otherwise.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from paraphrase_corpus import HELD_OUT, catalogue
from search_corpus import QUERIES, corpus

from kode import ToolRegistry
from kode.registries import search_dense
from kode.registries.entries import normalize_name
from kode.registries.search import SearchIndex
from kode.registries.search_dense import DENSE_ENV, dense_available
from kode.registries.search_model import CACHE_ENV, MODEL_ENV, TransformerEmbedder

np = pytest.importorskip("numpy")
pytest.importorskip("safetensors")
pytest.importorskip("tokenizers")

WORDS = """weather forecast rain tomorrow city days send email message recipients subject body
stop background shell job running is it going to pour a the of""".split()
TEXTS = [
    "is it going to pour tomorrow",
    "send email message to recipients subject body",
    "a",
    "weather forecast of the city days",
]


def write_tiny_mpnet(folder: Path, *, hidden: int = 16, heads: int = 2, layers: int = 2) -> Path:
    """An MPNet folder as sentence-transformers lays it out, with random weights."""
    from safetensors.numpy import save_file
    from tokenizers import Tokenizer, models, pre_tokenizers

    folder.mkdir(parents=True, exist_ok=True)
    vocab = {"<s>": 0, "<pad>": 1, "</s>": 2, "[UNK]": 3}
    vocab.update({w: i + 4 for i, w in enumerate(dict.fromkeys(WORDS))})
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.save(str(folder / "tokenizer.json"))
    config = {
        "model_type": "mpnet",
        "hidden_size": hidden,
        "num_attention_heads": heads,
        "num_hidden_layers": layers,
        "intermediate_size": hidden * 2,
        "layer_norm_eps": 1e-5,
        "pad_token_id": 1,
    }
    (folder / "config.json").write_text(json.dumps(config))
    rng = np.random.default_rng(7)

    def r(*shape: int) -> object:
        return rng.normal(0, 0.5, shape).astype(np.float32)

    w = {
        "embeddings.word_embeddings.weight": r(len(vocab), hidden),
        "embeddings.position_embeddings.weight": r(64, hidden),
        "embeddings.LayerNorm.weight": 1 + r(hidden),
        "embeddings.LayerNorm.bias": r(hidden),
        "encoder.relative_attention_bias.weight": r(32, heads),
    }
    for i in range(layers):
        p = f"encoder.layer.{i}."
        for part in "qkvo":
            w[p + f"attention.attn.{part}.weight"] = r(hidden, hidden)
            w[p + f"attention.attn.{part}.bias"] = r(hidden)
        for norm in ("attention.LayerNorm", "output.LayerNorm"):
            w[p + norm + ".weight"], w[p + norm + ".bias"] = 1 + r(hidden), r(hidden)
        w[p + "intermediate.dense.weight"] = r(hidden * 2, hidden)
        w[p + "intermediate.dense.bias"] = r(hidden * 2)
        w[p + "output.dense.weight"] = r(hidden, hidden * 2)
        w[p + "output.dense.bias"] = r(hidden)
    save_file(w, str(folder / "model.safetensors"))  # type: ignore[arg-type]
    return folder


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    return write_tiny_mpnet(tmp_path / "tiny-mpnet")


class Counting(TransformerEmbedder):
    """Counts the texts the encoder runs on (a vector from the cache is not counted)."""

    encoded = 0

    def _forward(self, texts: list[str]) -> object:  # type: ignore[override]
        self.encoded += len(texts)
        return super()._forward(texts)


def test_a_batch_gives_each_text_the_vector_it_has_alone(tiny: Path) -> None:
    batch = TransformerEmbedder(tiny).embed(TEXTS)  # padded to the longest text
    alone = np.stack([TransformerEmbedder(tiny).embed([text])[0] for text in TEXTS])
    assert batch.shape == (len(TEXTS), 16)
    assert np.allclose(np.linalg.norm(batch, axis=1), 1.0, atol=1e-5)
    assert abs(batch - alone).max() < 1e-5
    assert abs(batch[0] - batch[1]).max() > 1e-3  # different texts, different vectors
    query = TransformerEmbedder(tiny).embed_query(TEXTS[0])
    assert abs(query - batch[0]).max() < 1e-5


def test_tools_vectors_are_kept_on_disk_and_queries_are_not(tiny: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = Counting(tiny, cache)
    vectors = first.embed(TEXTS + TEXTS[:2])  # a text twice is encoded once
    assert first.encoded == len(TEXTS)
    first.embed_query("stop the background job")
    [db] = cache.glob("mpnet-*.sqlite")
    with sqlite3.connect(db) as conn:
        keys = {bytes(k) for (k,) in conn.execute("select k from v")}
    assert keys == {hashlib.sha256(t.encode()).digest() for t in TEXTS}  # not the query

    again = Counting(tiny, cache)  # another process, the same machine
    assert abs(again.embed(TEXTS) - vectors[: len(TEXTS)]).max() == 0
    assert again.encoded == 0
    again.embed(["weather forecast rain"])
    assert again.encoded == 1  # a new tool text: only it

    os.utime(tiny / "model.safetensors", ns=(1, 1))  # other weights: other vectors
    changed = Counting(tiny, cache)
    changed.embed(TEXTS)
    assert changed.encoded == len(TEXTS)
    assert len(list(cache.glob("mpnet-*.sqlite"))) == 2


def test_the_environment_chooses_the_model_and_the_hybrid_uses_its_mix(
    tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(MODEL_ENV, str(tiny))
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.delenv(DENSE_ENV, raising=False)
    model = search_dense.embedder()
    assert isinstance(model, TransformerEmbedder) and model.mix is not None
    assert dense_available()
    reg = catalogue()
    hits = reg.search("is it going to pour tomorrow")
    assert len(hits) == 5 and all("meaning" in hit.why for hit in hits)
    assert model.loaded and list((tmp_path / "cache").glob("mpnet-*.sqlite"))
    index = reg.search_index()
    assert index.dense and not index.ready and not reg.search_ready()  # never run inline
    monkeypatch.setenv(DENSE_ENV, "0")  # the switch that turns meaning off still does
    assert not dense_available()


def test_a_folder_that_does_not_load_leaves_search_by_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv(MODEL_ENV, str(tmp_path / "no-such-model"))
    monkeypatch.delenv(DENSE_ENV, raising=False)
    reg = ToolRegistry("words")
    reg.register(catalogue().get("weather_forecast"))
    with caplog.at_level(logging.WARNING, logger="kode.search"):
        hits = reg.search("weather forecast")
        again = reg.search("weather")
    assert [h.name for h in hits] == [h.name for h in again] == ["weather_forecast"]
    assert "meaning" not in hits[0].why
    warnings = [r for r in caplog.records if MODEL_ENV in r.getMessage()]
    assert len(warnings) == 1 and "no-such-model" in warnings[0].getMessage()
    assert not dense_available()


def test_kode_tools_search_uses_the_model_the_environment_names(tiny: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", DENSE_ENV)}
    env |= {MODEL_ENV: str(tiny), CACHE_ENV: str(tmp_path / "cache")}
    query = ["--builtin", "halt", "the", "job", "--json"]
    out = subprocess.run(
        [sys.executable, "-m", "kode.cli", "tools", "search", *query],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert out.returncode == 0, out.stderr
    assert all("meaning" in hit["why"] for hit in json.loads(out.stdout))
    assert list((tmp_path / "cache").glob("mpnet-*.sqlite"))  # the tools' vectors, kept


REAL = os.environ.get("KODE_TEST_SEARCH_MODEL", "")


@pytest.mark.skipif(not REAL, reason="KODE_TEST_SEARCH_MODEL names no all-mpnet-base-v2 folder")
def test_the_real_model_finds_the_held_out_paraphrases(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(MODEL_ENV, REAL)
    monkeypatch.setenv(CACHE_ENV, os.environ.get("KODE_TEST_SEARCH_CACHE", str(tmp_path)))
    monkeypatch.delenv(DENSE_ENV, raising=False)

    def recall(reg: ToolRegistry, queries: list[tuple[str, list[str]]], dense: bool) -> float:
        index = SearchIndex(dense=dense)
        for entry in reg.entries():
            index.add(normalize_name(entry.name), entry.tool, entry.meta)
        total = 0.0
        for query, wanted in queries:
            found = [hit.name for hit in index.search(query, limit=5)]
            total += sum(name in found for name in wanted) / len(wanted)
        return total / len(queries)

    assert recall(catalogue(), HELD_OUT, True) >= 0.9  # measured 0.904 (wordllama: 0.645)
    assert recall(corpus(), QUERIES, True) >= recall(corpus(), QUERIES, False)


def test_the_bench_encoder_and_kodes_agree(tiny: Path) -> None:
    """bench/search_models.py's MPNet (one text at a time) gives kode's vectors (batched)."""
    import importlib.util

    bench = Path(__file__).resolve().parents[2] / "bench" / "search_models.py"
    spec = importlib.util.spec_from_file_location("bench_search_models_mpnet", bench)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
        theirs = module.MPNet(tiny).embed(TEXTS)
    finally:
        sys.modules.pop("bench_search_models_mpnet", None)
    assert abs(TransformerEmbedder(tiny).embed(TEXTS) - theirs).max() < 1e-5


def test_a_cache_that_cannot_be_written_keeps_vectors_in_memory(
    tiny: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the cache folder would be")
    model = Counting(tiny, blocked)
    with caplog.at_level(logging.WARNING, logger="kode.search"):
        first = model.embed(TEXTS)
        again = model.embed(TEXTS)
    assert model.encoded == len(TEXTS) and abs(first - again).max() == 0
    assert any("no disk cache" in r.getMessage() for r in caplog.records)

    cache = tmp_path / "cache"
    Counting(tiny, cache).embed(TEXTS[:1])
    [db] = cache.glob("mpnet-*.sqlite")
    db.write_bytes(b"not a database" * 100)  # broken after it was made
    broken = Counting(tiny, cache)
    with caplog.at_level(logging.WARNING, logger="kode.search"):
        vectors = broken.embed(TEXTS)
    assert broken.encoded == len(TEXTS) and abs(vectors - first).max() < 1e-6
    broken.embed(TEXTS)
    assert broken.encoded == len(TEXTS)  # kept in memory since


def test_the_cost_bench_runs_on_a_small_model(
    tiny: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """bench/search_accurate.py on the small model: its figures are there and sensible."""
    import importlib.util

    bench = Path(__file__).resolve().parents[2] / "bench"
    monkeypatch.syspath_prepend(str(bench))
    monkeypatch.setenv(MODEL_ENV, str(tiny))
    monkeypatch.setenv(CACHE_ENV, "off")  # main() sets its own; this restores the test's after
    monkeypatch.delenv(DENSE_ENV, raising=False)
    monkeypatch.setattr(sys, "argv", ["search_accurate.py", "--tools", "8", "--json"])
    spec = importlib.util.spec_from_file_location(
        "bench_search_accurate", bench / "search_accurate.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
        assert module.main() == 0
    finally:
        sys.modules.pop("bench_search_accurate", None)
        sys.modules.pop("tool_search", None)
    row = json.loads(capsys.readouterr().out)
    assert row["memory_bytes_per_tool"] == 16 * 4  # the small model's 16 dimensions
    assert 0 < row["disk_bytes_per_tool"] < 1024
    assert {"load_s", "tool_ms", "index_10000_warm_s", "search_ms_10000"} <= set(row)


@pytest.mark.parametrize(
    "stored",
    [
        b"\x00" * 63,  # cut short, not a whole number of float32s
        np.full(16, np.nan, dtype=np.float32).tobytes(),
        np.full(16, np.inf, dtype=np.float32).tobytes(),
        np.full(16, 7.0, dtype=np.float32).tobytes(),  # not a unit vector
        np.ones(8, dtype=np.float64).tobytes(),  # the right size, written as float64
        np.ones(32, dtype=np.float32).tobytes(),  # another model's length
        "text, not a vector",
    ],
    ids=["short", "nan", "inf", "not-unit", "float64", "wrong-length", "text"],
)
def test_a_vector_in_the_cache_that_is_not_a_unit_vector_is_computed_again(
    tiny: Path, tmp_path: Path, stored: object
) -> None:
    # the cache is a file on disk: whatever is in it, a search gets the model's vector
    cache = tmp_path / "cache"
    right = Counting(tiny, cache).embed(TEXTS)
    [db] = cache.glob("mpnet-*.sqlite")
    with sqlite3.connect(db) as conn:
        conn.execute("update v set v = ?", (stored,))
    again = Counting(tiny, cache)
    assert abs(again.embed(TEXTS) - right).max() < 1e-6
    assert again.encoded == len(TEXTS)
    assert Counting(tiny, cache).embed(TEXTS[:1]) is not None  # and written right again
    with sqlite3.connect(db) as conn:
        [(blob,)] = conn.execute(
            "select v from v where k = ?", (hashlib.sha256(TEXTS[0].encode()).digest(),)
        )
    assert np.frombuffer(blob, dtype=np.float32).tolist() == right[0].tolist()


_WRITER = """
import logging, sys
from pathlib import Path
from kode.registries.search_model import TransformerEmbedder

logging.basicConfig(level=logging.WARNING)
model = TransformerEmbedder(Path(sys.argv[1]), Path(sys.argv[2]))
n = int(sys.argv[3])
words = "weather forecast rain tomorrow city days send email message".split()
for i in range(30):  # a commit each: the processes' writes interleave
    model.embed([f"{words[i % 9]} {words[(i * n) % 9]} {i} {n}", f"shared {i}"])
"""


def test_processes_writing_one_cache_at_once_keep_every_vector(tiny: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(tiny), str(cache), str(n)],
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(4)
    ]
    for writer in writers:
        _, err = writer.communicate(timeout=120)
        assert writer.returncode == 0 and "cache" not in err, err  # none fell back to memory
    [db] = cache.glob("mpnet-*.sqlite")
    with sqlite3.connect(db) as conn:
        assert conn.execute("select count(*) from v").fetchone() == (4 * 30 + 30,)
    again = Counting(tiny, cache)
    again.embed([f"shared {i}" for i in range(30)])
    assert again.encoded == 0


def test_a_text_longer_than_the_models_positions_is_cut_where_they_end(tiny: Path) -> None:
    # the tiny model has 64 positions, 62 after the padding id: an enormous description is
    # cut there (as all-mpnet-base-v2 cuts at 256 tokens), not an error out of every search
    words = [WORDS[i % len(WORDS)] for i in range(62)]
    model = TransformerEmbedder(tiny)
    enormous = " ".join(words + ["rain"] * 100_000)
    cut, kept = model.embed([enormous, " ".join(words)])
    assert abs(cut - kept).max() < 1e-6
