"""Finding tools by words and meaning, or by a regular expression, over a registry's tools.

This module owns `SearchIndex`: one document per tool, made of its name (split at ``_``, ``-``,
``.`` and case changes), its description, its parameters' names and descriptions, its groups
and its MCP server, with the name weighted most. Words are lower-cased, stripped of common
endings (``issues`` and ``issue`` are one word) and of words that say nothing about a tool
(``a``, ``the``, ``please``), and a query word also looks for a few near synonyms (``remove``
finds ``delete``). They are ranked with BM25, and, when the ``search`` extra is installed, with
each tool's similarity in meaning to the query (`kode.registries.search_dense`; the accurate
mode's larger model: `kode.registries.search_model`). A registry
makes its index on the first search and keeps it up to date as tools are registered and
removed (`ToolRegistry.search_index`); a query never rebuilds it.

It does not decide which tools an agent may see: a search is given the keys it may return.
"""

from __future__ import annotations

import heapq
import math
import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kode.registries.meta import ToolMeta
from kode.registries.search_dense import DenseIndex, dense_available
from kode.tools.core import Tool

__all__ = ["SearchHit", "SearchIndex", "document_of", "one_line", "tokenize"]

K1 = 1.2
B = 0.75
FIELD_WEIGHTS = {"name": 3.0, "group": 1.5, "description": 1.0, "parameter": 0.6}
"""How much a word counts in each field of a tool's document."""
SYNONYM_WEIGHT = 0.5
"""How much a synonym of a query word counts against the word itself."""
BM25_SHARE = 0.6
"""With meaning on: the weight of the words a tool shares with the query (tuned, see
``bench/README.md``); the rest is the weight of its similarity in meaning."""
COVERAGE_POWER = 1.25
"""With meaning on: the share of the query's words a tool has is raised to this power (so a
tool sharing one common word with the query gains little)."""
AGREEMENT = 0.3
"""With meaning on: the similarity from which shared words count in full; below it they count
in proportion (``take`` in a medication reminder does not answer "take me to the stadium")."""
DENSE_CANDIDATES = 20
"""With meaning on: how many of the most similar tools are ranked besides those sharing a word."""

_STOP = frozenset(
    """a an the to of for in on at by and or with from into onto as is are be been was were it
    its this that these those my me i we our you your he she they them their all any some
    please can could would should will shall may might do does did done how what which who
    whom where when why want need like just also then than so such use using tool tools
    there here let lets get gets""".split()
)
_SYNONYMS: dict[str, tuple[str, ...]] = {
    "remove": ("delete",),
    "erase": ("delete",),
    "rm": ("delete",),
    "drop": ("delete",),
    "delete": ("remove",),
    "make": ("create",),
    "new": ("create",),
    "add": ("create", "insert"),
    "open": ("create", "read"),
    "create": ("add", "new"),
    "modify": ("edit", "update"),
    "change": ("edit", "update"),
    "alter": ("edit", "update"),
    "update": ("edit", "set"),
    "edit": ("update", "write"),
    "rename": ("move",),
    "show": ("list", "read", "view"),
    "display": ("list", "read", "view"),
    "view": ("read", "list"),
    "look": ("search", "find"),
    "find": ("search",),
    "search": ("find", "query"),
    "lookup": ("search", "find"),
    "query": ("search",),
    "grep": ("search",),
    "fetch": ("get", "read", "download"),
    "download": ("fetch",),
    "retrieve": ("fetch", "read"),
    "read": ("fetch", "view"),
    "save": ("write",),
    "write": ("save",),
    "store": ("write", "save"),
    "run": ("execute",),
    "execute": ("run",),
    "launch": ("start", "run"),
    "start": ("run",),
    "stop": ("kill", "cancel"),
    "kill": ("stop",),
    "cancel": ("stop",),
    "folder": ("directory",),
    "directory": ("folder",),
    "dir": ("directory",),
    "doc": ("document",),
    "document": ("file",),
    "webpage": ("url", "web", "page"),
    "website": ("url", "web"),
    "page": ("url", "web"),
    "internet": ("web",),
    "online": ("web",),
    "email": ("mail", "message"),
    "mail": ("email", "message"),
    "message": ("send", "mail"),
    "text": ("message",),
    "ticket": ("issue",),
    "bug": ("issue",),
    "issue": ("ticket",),
    "pr": ("pull",),
    "merge": ("pull",),
    "repo": ("repository",),
    "repository": ("repo",),
    "commit": ("git",),
    "branch": ("git",),
    "schedule": ("event", "calendar"),
    "meeting": ("event", "calendar"),
    "appointment": ("event", "calendar"),
    "picture": ("image",),
    "photo": ("image",),
    "img": ("image",),
    "total": ("sum", "add"),
    "plus": ("add",),
    "count": ("list",),
    "time": ("date", "clock"),
    "date": ("time",),
    "sleep": ("wait", "delay"),
    "wait": ("sleep", "delay"),
    "table": ("database", "sql"),
    "sql": ("query", "database"),
    "db": ("database",),
    "weather": ("forecast",),
    "forecast": ("weather",),
    "todo": ("task",),
    "task": ("todo",),
    "note": ("memo",),
    "size": ("info", "stat"),
    "metadata": ("info", "stat"),
    "tree": ("directory",),
    "shell": ("bash", "command"),
    "command": ("bash", "shell", "run"),
    "terminal": ("bash", "shell"),
    "env": ("environment",),
    "variable": ("environment",),
    "similar": ("search",),
    "pay": ("payment", "charge"),
    "payment": ("charge",),
    "refund": ("payment",),
    "invoice": ("payment", "bill"),
    "customer": ("user", "client"),
    "person": ("user", "contact"),
    "contact": ("user",),
    "translate": ("language",),
    "summarize": ("summary",),
    "summary": ("summarize",),
    "remember": ("memory", "observation"),
    "recall": ("memory", "search"),
    "rain": ("weather", "precipitation"),
    "snow": ("weather", "precipitation"),
    "canned": ("macro",),
    "template": ("macro",),
    "several": ("multiple",),
    "many": ("multiple",),
    "column": ("describe", "schema"),
    "route": ("direction",),
    "navigate": ("direction", "url"),
    "readme": ("file",),
    "contents": ("read",),
}
_SPLIT = re.compile(r"[^0-9a-zA-Z]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def _stem(word: str) -> str:
    """A crude English stem: ``issues``, ``issue``; ``created``, ``creating``, ``create``."""
    if len(word) <= 3:
        return word
    for suffix, keep in (("ies", "y"), ("sses", "ss"), ("ing", ""), ("ed", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)] + keep
            if suffix in ("ing", "ed") and len(word) >= 4 and word[-1] == word[-2]:
                word = word[:-1]  # running → run, stopped → stop (but add stays add)
            break
    else:
        if word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
    if word.endswith("e") and len(word) > 3:
        word = word[:-1]
    return word


def _words(text: str) -> list[str]:
    words: list[str] = []
    for whole in _SPLIT.split(text):
        pieces = _CAMEL.sub(" ", whole).split()
        if len(pieces) > 1:  # createIssue: create, issue; GitHub: git, hub and github
            pieces.append(whole)
        for piece in pieces:
            word = piece.lower()
            if word and word not in _STOP and not (len(word) == 1 and word.isalpha()):
                words.append(word)
    return words


def tokenize(text: str) -> list[str]:
    """The words of `text` as the index sees them: split, lower-cased, stemmed, no stop words."""
    return [_stem(word) for word in _words(text)]


_STEMMED_SYNONYMS: dict[str, tuple[tuple[str, str], ...]] = {}
for _word, _others in _SYNONYMS.items():
    _STEMMED_SYNONYMS[_stem(_word)] = (
        *_STEMMED_SYNONYMS.get(_stem(_word), ()),
        *((_stem(o), o) for o in _others),
    )


def one_line(description: str, limit: int = 120) -> str:
    """The first sentence or line of a description, at most `limit` characters."""
    line = description.strip().split("\n", 1)[0].strip()
    match = re.match(r"(.+?[.!?])(\s+[A-Z]|$)", line)  # not at "e.g. `*.py`"
    if match:
        line = match.group(1)
    return line if len(line) <= limit else line[: limit - 1].rsplit(" ", 1)[0] + "…"


def _parameters(schema: Mapping[str, Any], depth: int = 0) -> Iterable[tuple[str, str]]:
    props = schema.get("properties")
    if not isinstance(props, Mapping) or depth > 1:
        return
    for name, sub in props.items():
        if not isinstance(sub, Mapping):
            continue
        description = sub.get("description")
        yield str(name), description if isinstance(description, str) else ""
        yield from _parameters(sub, depth + 1)
        items = sub.get("items")
        if isinstance(items, Mapping):
            yield from _parameters(items, depth + 1)


def document_of(
    name: str, tool: Tool[..., Any] | None, meta: ToolMeta | None
) -> dict[str, list[str]]:
    """The words of one tool, by field."""
    groups = [g.removeprefix("group:") for g in (meta.groups if meta else ())]
    if meta is not None and meta.server:
        groups.append(meta.server)
    fields: dict[str, list[str]] = {
        "name": tokenize(name),
        "group": tokenize(" ".join(groups)),
        "description": [],
        "parameter": [],
    }
    if tool is not None:
        fields["description"] = tokenize(tool.description)
        words: list[str] = []
        for param, description in _parameters(tool.input_schema):
            words += tokenize(param) + tokenize(description)
        fields["parameter"] = words
    return fields


def dense_text(name: str, tool: Tool[..., Any] | None) -> str:
    """What a tool's vector is made of: name, first paragraph of description, parameter names."""
    if tool is None:
        return " ".join(_words(name))
    first = tool.description.strip().split("\n\n", 1)[0]
    params = " ".join(param for param, _ in _parameters(tool.input_schema))
    return f"{' '.join(_words(name))}. {first} {params}"


@dataclass(kw_only=True, frozen=True, slots=True)
class SearchHit:
    """One tool a search found."""

    key: str
    """The tool's normalised name."""
    name: str
    """The tool's name."""
    description: str
    """The first sentence of its description."""
    score: float
    """How well it matched (higher is better): BM25 by words alone, 0..1 with meaning, 1.0
    for a regex match."""
    why: str
    """Which words (or which text, for a regex) matched in which fields."""


@dataclass(kw_only=True, slots=True)
class _Doc:
    name: str
    summary: str
    length: float
    terms: dict[str, tuple[float, tuple[str, ...]]]  # word → (weighted count, fields)
    text: str  # name, description and parameter names, for a regex


class SearchIndex:
    """BM25 over tool documents, and their vectors of meaning, updated one tool at a time.

    Args:
        dense: Rank by meaning too (`None`: when wordllama is installed, or
            ``KODE_TOOL_SEARCH_MODEL`` names the accurate mode's model, and
            ``KODE_TOOL_SEARCH_DENSE`` does not say ``0``; `False`: words alone).

    Example:
        ```python
        from kode.registries.search import SearchIndex
        from kode.tools.declared import declare_tool

        index = SearchIndex()
        index.add("gh_issue", declare_tool("gh_issue", description="Create a GitHub issue."))
        index.add("fs_read", declare_tool("fs_read", description="Read a file."))
        assert index.search("open a new ticket on github")[0].name == "gh_issue"
        assert [h.name for h in index.search_regex("^fs_")] == ["fs_read"]
        ```
    """

    def __init__(self, *, dense: bool | None = None) -> None:
        self._docs: dict[str, _Doc] = {}
        self._postings: dict[str, dict[str, float]] = {}
        self._total = 0.0
        use = dense_available() if dense is None else dense
        self._dense: DenseIndex | None = DenseIndex() if use else None

    @property
    def dense(self) -> bool:
        """Whether searches also rank by meaning (see `kode.registries.search_dense`)."""
        return self._dense is not None and self._dense.usable

    @property
    def ready(self) -> bool:
        """Whether a search would run at once: no model to load, no tool to embed first."""
        return self._dense is None or self._dense.ready or not self._dense.usable

    def prepare(self) -> None:
        """Load the model of meaning if this index uses it (the first time: about 0.3 s)."""
        if self._dense is not None:
            self._dense.load()

    def __len__(self) -> int:
        return len(self._docs)

    def __contains__(self, key: object) -> bool:
        return key in self._docs

    def add(
        self, key: str, tool: Tool[..., Any] | None, meta: ToolMeta | None = None, *, name: str = ""
    ) -> None:
        """Index a tool (replacing what `key` had)."""
        if key in self._docs:
            self.remove(key)
        shown = name or (tool.name if tool is not None else meta.name if meta else key)
        fields = document_of(shown, tool, meta)
        terms: dict[str, tuple[float, tuple[str, ...]]] = {}
        for field, words in fields.items():
            weight = FIELD_WEIGHTS[field]
            for word in words:
                count, where = terms.get(word, (0.0, ()))
                terms[word] = (count + weight, where if field in where else (*where, field))
        length = sum(count for count, _ in terms.values())
        description = tool.description if tool is not None else ""
        params = " ".join(p for p, _ in _parameters(tool.input_schema)) if tool else ""
        self._docs[key] = _Doc(
            name=shown,
            summary=one_line(description),
            length=length,
            terms=terms,
            text=f"{shown}\n{description}\n{params}",
        )
        self._total += length
        for word, (count, _) in terms.items():
            self._postings.setdefault(word, {})[key] = count
        if self._dense is not None:
            self._dense.add(key, dense_text(shown, tool))

    def remove(self, key: str) -> None:
        """Forget a tool (nothing happens if it is not indexed)."""
        doc = self._docs.pop(key, None)
        if doc is None:
            return
        if self._dense is not None:
            self._dense.remove(key)
        self._total -= doc.length
        for word in doc.terms:
            posting = self._postings.get(word)
            if posting is not None:
                posting.pop(key, None)
                if not posting:
                    del self._postings[word]

    def search(
        self, query: str, *, allowed: Collection[str] | None = None, limit: int = 5
    ) -> list[SearchHit]:
        """The `limit` best tools for `query`, among `allowed` keys (`None`: all).

        By words (BM25) and, when `dense`, by meaning too: the tools sharing a word with the
        query and the `DENSE_CANDIDATES` closest in meaning are ranked by `BM25_SHARE` times
        the share of the query's information (its words' idf) they have, raised to
        `COVERAGE_POWER` and scaled down below a similarity of `AGREEMENT`, plus the rest
        times their cosine similarity. With meaning on, a search always answers with the
        closest tools, even for words no tool has.
        """
        shown, weighted = self._query_words(query)
        dense = self._dense
        if dense is None or not self._docs or not query.strip() or not dense.load():
            scores = self._bm25(weighted, allowed)
            best = heapq.nlargest(limit, scores.items(), key=lambda item: (item[1], item[0]))
            return [self._hit(key, score, shown, weighted) for key, score in best]
        return self._hybrid(query, shown, weighted, dense, allowed, limit)

    def _hybrid(
        self,
        query: str,
        shown: dict[str, str],
        weighted: dict[str, tuple[float, str]],
        dense: DenseIndex,
        allowed: Collection[str] | None,
        limit: int,
    ) -> list[SearchHit]:
        import numpy as np

        similarities = dense.similarities(query)
        covered = self._coverage(weighted, allowed)
        keys = list(covered)  # every tool of this index has a row: both add and remove it
        share = np.fromiter(covered.values(), dtype=np.float32, count=len(covered))
        close = dense.best(similarities, allowed, max(limit, DENSE_CANDIDATES))
        keys += [key for key, _ in close if key not in covered]
        share = np.concatenate([share, np.zeros(len(keys) - len(share), dtype=np.float32)])
        sims = similarities[dense.rows(keys)]
        words, power, agreement = dense.mix or (BM25_SHARE, COVERAGE_POWER, AGREEMENT)
        agree = np.clip(sims / agreement, 0.0, 1.0)
        ranked = words * share**power * agree + (1 - words) * sims
        count = min(limit, len(keys))
        if count <= 0:
            return []
        top = np.argpartition(-ranked, count - 1)[:count]
        order = sorted(top.tolist(), key=lambda i: (-float(ranked[i]), keys[i]))
        return [
            self._hit(keys[i], float(ranked[i]), shown, weighted, similarity=float(sims[i]))
            for i in order
        ]

    def _hit(
        self,
        key: str,
        score: float,
        shown: dict[str, str],
        weighted: dict[str, tuple[float, str]],
        *,
        similarity: float | None = None,
    ) -> SearchHit:
        doc = self._docs[key]
        why = [
            f"{shown[word]} in {', '.join(doc.terms[word][1])}"
            for word, (weight, _) in weighted.items()
            if weight and word in doc.terms
        ]
        if similarity is not None:
            why.append(f"meaning {similarity:.2f}")
        return SearchHit(
            key=key,
            name=doc.name,
            description=doc.summary,
            score=round(score, 4),
            why="; ".join(why),
        )

    @staticmethod
    def _query_words(query: str) -> tuple[dict[str, str], dict[str, tuple[float, str]]]:
        """The query's stems as asked, and every word looked for: (weight, the stem it is for)."""
        shown = {_stem(word): word for word in reversed(_words(query))}  # stem → as asked
        weighted: dict[str, tuple[float, str]] = {stem: (1.0, stem) for stem in shown}
        for stem in list(shown):
            for synonym, spelled in _STEMMED_SYNONYMS.get(stem, ()):
                if synonym not in weighted:
                    weighted[synonym] = (SYNONYM_WEIGHT, stem)
                    shown[synonym] = f"{spelled} (for {shown[stem]})"
        return shown, weighted

    def _bm25(
        self, weighted: dict[str, tuple[float, str]], allowed: Collection[str] | None
    ) -> dict[str, float]:
        """BM25 scores of the tools sharing a word with the query."""
        scores: dict[str, float] = {}
        count = len(self._docs)
        average = self._total / count if count else 1.0
        for word, (query_weight, _) in weighted.items():
            posting = self._postings.get(word)
            if not posting or not query_weight:
                continue
            idf = math.log(1 + (count - len(posting) + 0.5) / (len(posting) + 0.5))
            for key, tf in posting.items():
                if allowed is not None and key not in allowed:
                    continue
                doc = self._docs[key]
                norm = tf * (K1 + 1) / (tf + K1 * (1 - B + B * doc.length / average))
                scores[key] = scores.get(key, 0.0) + query_weight * idf * norm
        return scores

    def _coverage(
        self, weighted: dict[str, tuple[float, str]], allowed: Collection[str] | None
    ) -> dict[str, float]:
        """The share of the query's information (its words' idf) each tool sharing one has.

        A word no tool has counts as the rarest; a synonym covers its word at its weight.
        """
        count = len(self._docs)
        rarest = math.log(1 + (count + 0.5) / 0.5)
        info: dict[str, float] = {}
        for stem, (_, origin) in weighted.items():
            if stem == origin:
                n = len(self._postings.get(stem, ()))
                info[stem] = math.log(1 + (count - n + 0.5) / (n + 0.5)) if n else rarest
        total = sum(info.values()) or 1.0
        covered: dict[str, float] = {}
        for origin, part in info.items():
            best: dict[str, float] = {}
            for word, (weight, of) in weighted.items():
                posting = self._postings.get(word) if of == origin and weight else None
                for key in posting or ():
                    if weight > best.get(key, 0.0) and (allowed is None or key in allowed):
                        best[key] = weight
            for key, weight in best.items():
                covered[key] = covered.get(key, 0.0) + weight * part / total
        return covered

    def search_regex(
        self, pattern: str, *, allowed: Collection[str] | None = None, limit: int = 5
    ) -> list[SearchHit]:
        """Tools whose name, description or parameter names match `pattern` (case-insensitive).

        Raises:
            re.error: `pattern` is not a valid regular expression.
        """
        regex = re.compile(pattern, re.IGNORECASE)
        keys = self._docs if allowed is None else [k for k in allowed if k in self._docs]
        hits: list[SearchHit] = []
        for key in sorted(keys):
            doc = self._docs[key]
            found = regex.search(doc.text)
            if found is None:
                continue
            where = "name" if regex.search(doc.name) else "description or parameters"
            hits.append(
                SearchHit(
                    key=key,
                    name=doc.name,
                    description=doc.summary,
                    score=1.0,
                    why=f"{found.group(0)[:40]!r} in {where}",
                )
            )
        hits.sort(key=lambda hit: 0 if hit.why.endswith("name") else 1)
        return hits[:limit]
