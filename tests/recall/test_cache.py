"""The search cache: keyed on the namespaces' generations, capped by bytes."""

from app.recall.cache import SearchCache


def test_entries_leave_oldest_first_once_the_bytes_are_spent():
    cache = SearchCache(ttl_seconds=60, max_bytes=100)
    for name in "abc":
        cache.put((name, ()), name, size=40)
    assert cache.get(("a", ())) is None  # 120 bytes: the oldest went
    assert cache.get(("b", ())) == "b" and cache.get(("c", ())) == "c"
    assert cache.size_bytes == 80
    cache.put(("huge", ()), "huge", size=101)  # larger than the whole cache: never kept
    assert cache.get(("huge", ())) is None and cache.size_bytes == 80


def test_a_new_generation_is_a_new_key():
    cache = SearchCache(ttl_seconds=60, max_bytes=1_000)
    cache.put(cache.key("q", {"user:a": 3}), "answer", size=10)
    assert cache.get(cache.key("q", {"user:a": 3})) == "answer"
    assert cache.get(cache.key("q", {"user:a": 4})) is None


def test_expired_entries_are_dropped(monkeypatch):
    cache = SearchCache(ttl_seconds=1, max_bytes=1_000)
    cache.put("k", "v", size=10)
    import app.recall.cache as module

    now = module.time.monotonic()
    monkeypatch.setattr(module.time, "monotonic", lambda: now + 5)
    assert cache.get("k") is None and cache.size_bytes == 0
