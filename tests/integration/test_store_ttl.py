"""TTL with real expiry on both tiers: default TTL, refresh on read, sweeping."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from langgraph_tiered_memory import TieredMemoryStore

pytestmark = pytest.mark.integration

TTL_MIN = 0.025  # 1.5 seconds


def test_supports_ttl_flag(store: TieredMemoryStore) -> None:
    assert store.supports_ttl is True


def test_item_expires_and_is_never_returned(store: TieredMemoryStore) -> None:
    ns = ("ttl", "a")
    store.put(ns, "short", {"v": 1}, ttl=TTL_MIN)
    store.put(ns, "forever", {"v": 2})
    store.put(("ttl", "only-short"), "x", {"v": 3}, ttl=TTL_MIN)
    assert store.get(ns, "short", refresh_ttl=False) is not None
    time.sleep(TTL_MIN * 60 + 0.6)
    assert store.get(ns, "short") is None
    assert [r.key for r in store.search(ns)] == ["forever"]
    assert store.search(("ttl", "only-short")) == []
    assert store.list_namespaces(prefix=("ttl",)) == [ns]


def test_reads_refresh_ttl_unless_told_not_to(store: TieredMemoryStore) -> None:
    ns = ("ttl", "r")
    store.put(ns, "g", {"v": 1}, ttl=TTL_MIN)
    store.put(ns, "s", {"v": 2}, ttl=TTL_MIN)
    store.put(ns, "n", {"v": 3}, ttl=TTL_MIN)
    for _ in range(3):
        time.sleep(TTL_MIN * 60 * 0.5)
        assert store.get(ns, "g") is not None  # refreshes
        assert {r.key for r in store.search(ns, filter={"v": 2})} == {"s"}  # refreshes "s"
        store.get(ns, "n", refresh_ttl=False)
    # 1.5 TTLs have passed: the refreshed items live on, the other one expired.
    assert store.get(ns, "n", refresh_ttl=False) is None
    assert store.get(ns, "g", refresh_ttl=False) is not None
    assert store.get(ns, "s", refresh_ttl=False) is not None
    time.sleep(TTL_MIN * 60 + 0.6)
    assert store.search(ns) == []


def test_default_ttl_and_refresh_on_read_config(
    make_store: Callable[..., TieredMemoryStore], tier: str
) -> None:
    store = make_store(tier, ttl={"default_ttl": TTL_MIN, "refresh_on_read": False})
    store.put(("d",), "a", {"v": 1})
    store.put(("d",), "b", {"v": 2}, ttl=None)  # explicit None: never expires
    time.sleep(TTL_MIN * 60 * 0.6)
    assert store.get(("d",), "a") is not None  # read does not refresh by default
    time.sleep(TTL_MIN * 60 * 0.6)
    assert store.get(("d",), "a") is None
    assert store.get(("d",), "b") is not None


def test_rewrite_without_ttl_makes_item_permanent(store: TieredMemoryStore) -> None:
    store.put(("p",), "k", {"v": 1}, ttl=TTL_MIN)
    store.put(("p",), "k", {"v": 2})
    time.sleep(TTL_MIN * 60 + 0.6)
    item = store.get(("p",), "k")
    assert item is not None and item.value == {"v": 2}


def test_sweep_deletes_expired_chroma_records(
    make_store: Callable[..., TieredMemoryStore],
) -> None:
    now = [1_000_000.0]
    store = make_store("long", clock=lambda: now[0])
    store.put(("s",), "old", {"v": 1}, ttl=1)
    store.put(("s",), "keep", {"v": 2})
    now[0] += 61
    col = store.tiers["long"]._collection(("s",), create=False)  # type: ignore[attr-defined]
    assert col.count() == 2  # expired but not yet swept: filtered on read
    assert [r.key for r in store.search(("s",))] == ["keep"]
    assert store.sweep_ttl() == 1
    assert col.count() == 1
    store.delete(("s",), "keep")
    assert store.list_namespaces() == []


def test_background_sweeper_removes_expired_items(
    make_store: Callable[..., TieredMemoryStore],
) -> None:
    store = make_store("long", ttl={"sweep_interval_minutes": 0.01})  # type: ignore[typeddict-item]
    store.put(("bg",), "k", {"v": 1}, ttl=0.005)
    col = store.tiers["long"]._collection(("bg",), create=False)  # type: ignore[attr-defined]
    deadline = time.time() + 10
    while col.count() and time.time() < deadline:
        time.sleep(0.2)
    assert col.count() == 0
    store.close()
    assert store._sweeper is not None and not store._sweeper.is_alive()
