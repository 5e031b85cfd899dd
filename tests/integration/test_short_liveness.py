"""Listing short-tier namespaces: exact, and without one Redis call per namespace.

`list_namespaces` on the short tier trusts a per-namespace bound of the latest expiry
(see `store.tiers.redis_liveness`) unless a write is in flight or items were deleted.
These tests compare it with a brute-force reference, count the commands the server runs
(`INFO commandstats`), and interrupt writes halfway.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from langgraph_tiered_memory import TieredMemoryStore
from langgraph_tiered_memory.store.tiers.redis_liveness import Liveness
from tests.fakes import Clock

NS = ("short_term",)


def _store(make_store: Callable[..., TieredMemoryStore], clock: Clock) -> TieredMemoryStore:
    return make_store("short", index=None, clock=clock)


def _calls(client: redis.Redis, command: str) -> int:
    stats = client.info("commandstats")
    return int(stats.get(f"cmdstat_{command}", {}).get("calls", 0))


def test_listing_needs_no_call_per_namespace(
    make_store: Callable[..., TieredMemoryStore], redis_url: str, clock: Clock
) -> None:
    store = _store(make_store, clock)
    for i in range(150):
        store.put((*NS, f"s{i}"), "k", {"v": i})
    client = redis.Redis.from_url(redis_url)
    try:
        assert len(store.list_namespaces(prefix=NS, limit=1000)) == 150
        before = _calls(client, "zcount")
        assert len(store.list_namespaces(prefix=NS, limit=1000)) == 150
        assert _calls(client, "zcount") == before  # no key set was asked
    finally:
        client.close()


def test_a_deleted_item_that_held_the_bound_is_not_trusted(
    make_store: Callable[..., TieredMemoryStore], clock: Clock
) -> None:
    store = _store(make_store, clock)
    ns = (*NS, "a")
    store.put(ns, "forever", {"v": 1})  # bound: +inf
    store.put(ns, "brief", {"v": 2}, ttl=1.0)
    store.delete(ns, "forever")
    assert store.list_namespaces(prefix=NS) == [ns]
    clock.now += 120  # the TTL item is gone too; the old bound (+inf) must not list it
    assert store.list_namespaces(prefix=NS) == []
    store.put(ns, "again", {"v": 3})
    assert store.list_namespaces(prefix=NS) == [ns]


def test_an_emptied_namespace_is_settled_and_skipped(
    make_store: Callable[..., TieredMemoryStore], redis_url: str, clock: Clock
) -> None:
    store = _store(make_store, clock)
    ns = (*NS, "gone")
    store.put(ns, "k", {"v": 1})
    store.put((*NS, "kept"), "k", {"v": 1})
    store.delete(ns, "k")
    assert store.list_namespaces(prefix=NS) == [(*NS, "kept")]
    client = redis.Redis.from_url(redis_url)
    try:
        before = _calls(client, "zcount")
        assert store.list_namespaces(prefix=NS) == [(*NS, "kept")]
        assert _calls(client, "zcount") == before  # settled: its bound says empty
    finally:
        client.close()


def test_a_write_interrupted_before_it_finishes_is_still_listed(
    make_store: Callable[..., TieredMemoryStore],
    clock: Clock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store = _store(make_store, clock)
    ns = (*NS, "crash")
    store.put(ns, "old", {"v": 1}, ttl=1.0)
    assert store.list_namespaces(prefix=NS) == [ns]

    def crash(self: Liveness, *args: object, **kwargs: object) -> None:
        raise ConnectionError("lost the connection after the write")

    monkeypatch.setattr(Liveness, "finish_all", crash)
    with pytest.raises(ConnectionError):
        store.put(ns, "new", {"v": 2})  # no TTL: the bound was never raised to +inf
    monkeypatch.undo()
    clock.now += 120  # past the old bound
    assert store.list_namespaces(prefix=NS) == [ns]
    assert store.get(ns, "new") is not None


def test_stores_written_before_the_index_are_listed_and_repaired(
    make_store: Callable[..., TieredMemoryStore], redis_url: str, key_prefix: str, clock: Clock
) -> None:
    store = _store(make_store, clock)
    for i in range(20):
        store.put((*NS, f"s{i}"), "k", {"v": i})
    store.delete((*NS, "s3"), "k")
    client = redis.Redis.from_url(redis_url)
    try:
        index = Liveness(client, key_prefix)
        client.delete(*index.keys[1:])  # as if written by a version without the index
        want = sorted((*NS, f"s{i}") for i in range(20) if i != 3)
        assert sorted(store.list_namespaces(prefix=NS, limit=100)) == want
        before = _calls(client, "zcount")
        assert sorted(store.list_namespaces(prefix=NS, limit=100)) == want
        assert _calls(client, "zcount") == before
    finally:
        client.close()


OPS = st.lists(
    st.tuples(
        st.sampled_from(["put", "put_ttl", "delete", "get", "tick"]),
        st.integers(0, 3),  # namespace
        st.integers(0, 2),  # key
    ),
    min_size=1,
    max_size=25,
)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(ops=OPS)
def test_listing_matches_a_brute_force_reference(
    make_store: Callable[..., TieredMemoryStore], ops: list[tuple[str, int, int]]
) -> None:
    clock = Clock()
    store = _store(make_store, clock)
    prefix = (*NS, uuid.uuid4().hex[:10])
    store.batch([])  # the store is ready
    expiry: dict[tuple[str, ...], dict[str, float]] = {}
    for op, n, k in ops:
        ns, key = (*prefix, f"n{n}"), f"k{k}"
        if op == "put":
            store.put(ns, key, {"v": 1})
            expiry.setdefault(ns, {})[key] = float("inf")
        elif op == "put_ttl":
            store.put(ns, key, {"v": 1}, ttl=1.0)
            expiry.setdefault(ns, {})[key] = clock.now + 60
        elif op == "delete":
            store.delete(ns, key)
            expiry.get(ns, {}).pop(key, None)
        elif op == "get":
            if store.get(ns, key, refresh_ttl=True) is not None:
                if expiry[ns][key] != float("inf"):
                    expiry[ns][key] = clock.now + 60
        else:
            clock.now += 45
        want = sorted(
            ns for ns, keys in expiry.items() if any(e > clock.now for e in keys.values())
        )
        assert sorted(store.list_namespaces(prefix=prefix, limit=100)) == want
    for ns in expiry:
        for key in list(expiry[ns]):
            store.delete(ns, key)
