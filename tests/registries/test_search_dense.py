"""Tool search by meaning (``kode.registries.search_dense``) and its hybrid with BM25."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import Sequence
from typing import Any

import pytest
from paraphrase_corpus import DATA, HELD_OUT, catalogue
from search_corpus import QUERIES, corpus

from kode import Agent, AgentTemplate, Tool, ToolRegistry
from kode.models import ScriptedModel
from kode.registries import search_dense
from kode.registries.entries import normalize_name
from kode.registries.search import SearchIndex
from kode.registries.search_dense import DENSE_ENV, DenseIndex, Embedder, dense_available
from kode.registries.tool_search import TOOL_SEARCH_TOOL
from kode.tools.context import ToolContext

wordllama = pytest.importorskip("wordllama", reason="the search extra is not installed")

HELD_OUT_GATE = 0.6
"""recall@5 of the hybrid on the held-out set measured 0.645 (BM25 alone: 0.072); the issue's
target of 0.9 is not reached with this model (see bench/README.md), this keeps what is."""


def index_of(reg: ToolRegistry, *, dense: bool) -> SearchIndex:
    index = SearchIndex(dense=dense)
    for entry in reg.entries():
        index.add(normalize_name(entry.name), entry.tool, entry.meta)
    return index


def recall_at_5(index: SearchIndex, queries: list[tuple[str, list[str]]]) -> float:
    total = 0.0
    for query, wanted in queries:
        found = [hit.name for hit in index.search(query, limit=5)]
        total += sum(name in found for name in wanted) / len(wanted)
    return total / len(queries)


def test_vectors_are_those_wordllama_computes() -> None:
    from wordllama import WordLlama

    model = WordLlama.load(cache_dir=os.path.dirname(wordllama.__file__), disable_download=True)
    texts = [
        " ".join(spec["description"].split())
        for spec in json.loads((DATA / "paraphrase_tools.json").read_text())
    ]
    ours = search_dense.embedder().embed(texts)
    theirs = model.embed(texts, norm=True)
    assert ours.shape == (len(texts), search_dense.DIMENSIONS)
    assert abs(ours - theirs).max() < 1e-5
    assert not search_dense.embedder().embed([""]).any()  # no word: a row of zeros


def test_meaning_finds_a_tool_that_shares_no_word_with_the_query() -> None:
    reg = catalogue()
    query = "is it going to pour tomorrow"
    words = [h.name for h in index_of(reg, dense=False).search(query)]
    both = index_of(reg, dense=True).search(query)
    assert "weather_forecast" not in words
    assert both[0].name == "weather_forecast"
    assert both[0].why.startswith("meaning 0.")  # no shared word: meaning alone
    assert 0 < both[0].score < 1


def test_held_out_recall_stays_and_kode_set_is_no_worse_than_words_alone() -> None:
    reg = catalogue()
    hybrid, words = index_of(reg, dense=True), index_of(reg, dense=False)
    held_hybrid, held_words = recall_at_5(hybrid, HELD_OUT), recall_at_5(words, HELD_OUT)
    assert held_hybrid >= HELD_OUT_GATE, f"held-out recall@5 {held_hybrid:.3f}"
    assert held_hybrid >= held_words + 0.5, (held_hybrid, held_words)
    kode = corpus()
    kode_hybrid = recall_at_5(index_of(kode, dense=True), QUERIES)
    kode_words = recall_at_5(index_of(kode, dense=False), QUERIES)
    assert kode_hybrid >= kode_words >= 0.9, (kode_hybrid, kode_words)


class CountingEmbedder(Embedder):
    def __init__(self) -> None:
        super().__init__()
        self.embedded: list[str] = []

    def embed(self, texts: Sequence[str]) -> Any:
        self.embedded += texts
        return super().embed(texts)


def test_vectors_follow_registrations_and_only_new_texts_are_embedded() -> None:
    counting = CountingEmbedder()
    index = DenseIndex(counting)
    index.add("mail", "Send an email message.")
    index.add("sms", "Send a text message to a phone.")
    index.add("rain", "Weather forecast: rain, wind and temperature.")
    assert counting.embedded == []  # registering embeds nothing: the next search does
    first = index.similarities("will it be wet tomorrow")
    assert len(counting.embedded) == 3 + 1  # the three tools in one batch, then the query
    was = {key: index.row(key) for key in ("mail", "sms", "rain")}
    assert int(first.argmax()) == was["rain"]
    counting.embedded.clear()
    index.add("rain", "Weather forecast: rain, wind and temperature.")  # unchanged: kept
    index.remove("mail")  # the last row moves into its place
    index.add("cal", "Add an event to the calendar.")
    again = index.similarities("will it be wet tomorrow")
    assert counting.embedded == ["Add an event to the calendar.", "will it be wet tomorrow"]
    assert len(again) == 3 and index.row("mail") is None
    for key in ("sms", "rain"):
        now, before = index.row(key), was[key]
        assert now is not None and before is not None
        assert again[now] == pytest.approx(first[before], abs=1e-6)


def run_python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k != DENSE_ENV}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**environ, **env},
    )


TOOLS = """
from kode import Tool, ToolRegistry

reg = ToolRegistry("t")
reg.register(Tool.from_schema("weather_forecast", description="Get the weather forecast."))
reg.register(Tool.from_schema("send_sms", description="Send an SMS text message."))
"""


def test_the_model_loads_on_the_first_search_not_at_import_or_registration() -> None:
    out = run_python(
        TOOLS
        + """
import sys
from kode.registries.search_dense import embedder
reg.search_index()
assert "wordllama" not in sys.modules and not embedder().loaded
assert reg.search("send a letter", regex="sms")  # a regex search needs no model
assert "wordllama" not in sys.modules
print([h.name for h in reg.search("is it going to pour tomorrow")][0], embedder().loaded)
"""
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["weather_forecast", "True"]


@pytest.mark.parametrize("how", ["not installed", "turned off"])
def test_without_the_model_a_search_is_words_alone(how: str) -> None:
    hide = "import sys; sys.modules['wordllama'] = None\n" if how == "not installed" else ""
    out = run_python(
        hide
        + TOOLS
        + """
from kode.registries.search_dense import dense_available
assert not dense_available() and not reg.search_index().dense
print([h.name for h in reg.search("is it going to pour tomorrow")])
print([(h.name, h.why) for h in reg.search("send a text")])
""",
        **({DENSE_ENV: "0"} if how == "turned off" else {}),
    )
    assert out.returncode == 0, out.stderr
    nothing, found = out.stdout.splitlines()
    assert nothing == "[]"  # no word in common, and no meaning to find it by
    assert found.startswith("[('send_sms', ") and "meaning" not in found


def test_a_model_that_does_not_load_leaves_words_alone(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise FileNotFoundError("Weights file 'l2_supercat_256.safetensors' not found")

    monkeypatch.setattr(search_dense, "_EMBEDDER", Embedder())
    monkeypatch.setattr(wordllama.WordLlama, "load", broken)
    index = index_of(catalogue(), dense=True)
    hits = index.search("send a text message")
    assert hits[0].name == "send_sms" and "meaning" not in hits[0].why
    assert not index.dense and index.ready and not dense_available()
    assert "tool search by meaning is off: wordllama did not load" in caplog.text


def test_the_word_cache_starts_again_when_full(monkeypatch: pytest.MonkeyPatch) -> None:
    texts = ["send a text message", "weather forecast for tomorrow", "book a table for two"]
    expected = search_dense.embedder().embed(texts)
    monkeypatch.setattr(search_dense, "WORD_CACHE_LIMIT", 6)
    fresh = Embedder()
    got = fresh.embed(texts[:1]), fresh.embed(texts[1:])  # 4 words, then 7 new: past 6
    assert set(fresh._row) == set(" ".join(texts[1:]).split())  # the second batch's words
    assert abs(got[0] - expected[:1]).max() < 1e-6 and abs(got[1] - expected[1:]).max() < 1e-6


def test_the_switch_is_read_when_an_index_is_made(monkeypatch: pytest.MonkeyPatch) -> None:
    assert dense_available() and SearchIndex().dense
    monkeypatch.setenv(DENSE_ENV, "off")
    assert not dense_available() and not SearchIndex().dense
    assert SearchIndex(dense=True).dense  # asked for by name: the switch is the default's


@pytest.mark.anyio
async def test_the_first_tool_search_runs_off_the_event_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fresh = Embedder()  # as in a new process: the model not loaded yet
    monkeypatch.setattr(search_dense, "_EMBEDDER", fresh)
    loaded_in: list[int] = []
    load = fresh.load

    def recording_load() -> bool:
        loaded_in.append(threading.get_ident())
        return load()

    monkeypatch.setattr(fresh, "load", recording_load)
    reg = ToolRegistry("off-loop")
    reg.register(
        Tool.from_schema("weather_forecast", description="Get the weather forecast."),
        defer_loading=True,
    )
    reg.register(Tool.from_schema("send_sms", description="Send an SMS."), defer_loading=True)
    agent = Agent.create(
        AgentTemplate(id="t", tools=["weather_forecast", "send_sms"]),
        model=ScriptedModel(["ok"]),
        registry=reg,
    )
    assert agent.tool_search is not None and not agent.tool_search.ready()
    ctx = ToolContext(tool_name="tool_search", services=agent.services)
    loop = threading.get_ident()
    result = await TOOL_SEARCH_TOOL.run({"query": "is it going to pour tomorrow"}, ctx)
    assert result.text.startswith("Loaded for your next turn: weather_forecast")
    assert loaded_in and loop not in loaded_in  # the model was loaded in a worker thread
    assert agent.tool_search.ready()  # the next searches run inline
