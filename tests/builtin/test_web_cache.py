"""WebCache: entries expire, and the least recently used go first when it is full."""

from __future__ import annotations

import dataclasses

from kode.builtin.web import WebCache, WebConfig


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_entries_expire_after_the_ttl() -> None:
    clock = Clock()
    cache = WebCache(ttl=10, max_size=100, clock=clock)
    cache.put("a", "page")
    clock.now = 9.9
    assert cache.get("a") == "page"
    clock.now = 10
    assert cache.get("a") is None
    assert len(cache) == 0


def test_the_least_recently_used_go_first_when_full() -> None:
    cache = WebCache(ttl=60, max_size=10, clock=Clock())
    cache.put("a", 1, size=4)
    cache.put("b", 2, size=4)
    assert cache.get("a") == 1  # "b" is now the least recently used
    cache.put("c", 3, size=4)
    assert (cache.get("a"), cache.get("b"), cache.get("c")) == (1, None, 3)
    cache.put("huge", 4, size=11)  # larger than the whole cache: not kept
    assert cache.get("huge") is None and len(cache) == 2
    cache.put("a", 5, size=2)  # replacing an entry frees its old size
    cache.put("d", 6, size=4)
    assert (cache.get("a"), cache.get("c"), cache.get("d")) == (5, 3, 6)
    cache.clear()
    assert len(cache) == 0


def test_a_zero_ttl_keeps_nothing() -> None:
    cache = WebCache(ttl=0, max_size=10)
    cache.put("a", 1)
    assert cache.get("a") is None


def test_each_config_has_its_own_cache_even_when_copied() -> None:
    strict = WebConfig(cache_ttl=60, cache_max_chars=1000)
    lax = dataclasses.replace(strict, allow_private_networks=True)
    assert strict.cache is not lax.cache
    assert (lax.cache.ttl, lax.cache.max_size) == (60, 1000)
