"""TTL on both tiers: expiry, default TTL, refresh on read, sweeping.

Expiry is judged by the store's clock on both tiers (each item carries its expiry time),
so most tests move a settable clock instead of sleeping, and hold on a busy machine.
Redis also expires the keys natively, in real time: one test shows that with a TTL of
seconds and a generous deadline.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
import redis

from langgraph_tiered_memory import TieredMemoryStore
from tests.fakes import Clock

TTL_MIN = 1.0  # one minute of the settable clock
TTL_S = TTL_MIN * 60


@pytest.fixture
def cstore(
    make_store: Callable[..., TieredMemoryStore], tier: str, clock: Clock
) -> TieredMemoryStore:
    """A store on the tier under test whose clock the test moves."""
    return make_store(tier, clock=clock)


def test_supports_ttl_flag(store: TieredMemoryStore) -> None:
    assert store.supports_ttl is True


def test_item_expires_and_is_never_returned(cstore: TieredMemoryStore, clock: Clock) -> None:
    ns = ("ttl", "a")
    cstore.put(ns, "short", {"v": 1}, ttl=TTL_MIN)
    cstore.put(ns, "forever", {"v": 2})
    cstore.put(("ttl", "only-short"), "x", {"v": 3}, ttl=TTL_MIN)
    clock.now += TTL_S - 1
    assert cstore.get(ns, "short", refresh_ttl=False) is not None
    assert sorted(r.key for r in cstore.search(ns, refresh_ttl=False)) == ["forever", "short"]
    assert cstore.list_namespaces(prefix=("ttl",)) == [ns, ("ttl", "only-short")]
    clock.now += 2
    assert cstore.get(ns, "short") is None
    assert [r.key for r in cstore.search(ns)] == ["forever"]
    assert cstore.search(("ttl", "only-short")) == []
    assert cstore.list_namespaces(prefix=("ttl",)) == [ns]


def test_reads_refresh_ttl_unless_told_not_to(cstore: TieredMemoryStore, clock: Clock) -> None:
    ns = ("ttl", "r")
    cstore.put(ns, "g", {"v": 1}, ttl=TTL_MIN)
    cstore.put(ns, "s", {"v": 2}, ttl=TTL_MIN)
    cstore.put(ns, "n", {"v": 3}, ttl=TTL_MIN)
    for step in range(3):
        clock.now += TTL_S * 0.5
        assert cstore.get(ns, "g") is not None  # refreshes
        assert {r.key for r in cstore.search(ns, filter={"v": 2})} == {"s"}  # refreshes "s"
        if step == 0:
            assert cstore.get(ns, "n", refresh_ttl=False) is not None  # does not refresh
    # 1.5 TTLs have passed: the refreshed items live on, the other one expired.
    assert cstore.get(ns, "n", refresh_ttl=False) is None
    assert cstore.get(ns, "g", refresh_ttl=False) is not None
    assert cstore.get(ns, "s", refresh_ttl=False) is not None
    clock.now += TTL_S - 1  # last refreshed 1 s less than a TTL ago
    assert {r.key for r in cstore.search(ns, refresh_ttl=False)} == {"g", "s"}
    clock.now += 2
    assert cstore.search(ns) == []


def test_default_ttl_and_refresh_on_read_config(
    make_store: Callable[..., TieredMemoryStore], tier: str, clock: Clock, tmp_path: Path
) -> None:
    store = make_store(tier, clock=clock, ttl={"default_ttl": TTL_MIN, "refresh_on_read": False})
    store.put(("d",), "a", {"v": 1})
    store.put(("d",), "b", {"v": 2}, ttl=None)  # explicit None: never expires
    clock.now += TTL_S * 0.6
    assert store.get(("d",), "a") is not None  # read does not refresh by default
    clock.now += TTL_S * 0.6
    assert store.get(("d",), "a") is None
    assert store.get(("d",), "b") is not None
    refreshing = make_store(
        tier, clock=clock, chroma_path=str(tmp_path / "chroma-r"), ttl={"default_ttl": TTL_MIN}
    )
    refreshing.put(("r",), "a", {"v": 1})
    clock.now += TTL_S * 0.6
    assert refreshing.get(("r",), "a") is not None  # refresh_on_read defaults to True
    clock.now += TTL_S * 0.6
    assert refreshing.get(("r",), "a") is not None


def test_rewrite_without_ttl_makes_item_permanent(cstore: TieredMemoryStore, clock: Clock) -> None:
    cstore.put(("p",), "k", {"v": 1}, ttl=TTL_MIN)
    cstore.put(("p",), "k", {"v": 2})
    clock.now += 1000 * TTL_S
    item = cstore.get(("p",), "k")
    assert item is not None and item.value == {"v": 2}


def test_redis_expires_keys_in_real_time(
    make_store: Callable[..., TieredMemoryStore], redis_url: str
) -> None:
    """Redis drops an expired item's keys by itself (real clock, wide margins)."""
    store = make_store("short")  # the wall clock
    ttl_min = 0.05  # 3 seconds: far more than a put and a get take on a busy machine
    store.put(("real",), "k", {"text": "soon gone"}, ttl=ttl_min)
    store.put(("real",), "keep", {"text": "stays"})
    assert store.get(("real",), "k", refresh_ttl=False) is not None
    client = redis.Redis.from_url(redis_url)
    try:
        item_keys = [k for k in client.scan_iter(match=f"{store.key_prefix}:*:i:k")]
        assert len(item_keys) == 1
        assert 0 < client.pttl(item_keys[0]) <= ttl_min * 60_000
        deadline = time.monotonic() + 60
        while client.exists(*item_keys) and time.monotonic() < deadline:
            time.sleep(0.25)
        assert not client.exists(*item_keys)
    finally:
        client.close()
    assert store.get(("real",), "k") is None
    assert [r.key for r in store.search(("real",))] == ["keep"]


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


def test_a_sweep_of_a_reopened_store_before_any_other_call_deletes_expired_items(
    tmp_path: Path,
) -> None:
    """The first call of a fresh process may be the sweeper's (the tier opens lazily)."""
    now = [1_000_000.0]
    path = str(tmp_path / "chroma")

    def open_store() -> TieredMemoryStore:
        return TieredMemoryStore(chroma_path=path, tiers={"default": "long"}, clock=lambda: now[0])

    first = open_store()
    first.put(("s",), "old", {"v": 1}, ttl=1)
    first.put(("s",), "keep", {"v": 2})
    first.close()
    now[0] += 61
    again = open_store()
    try:
        assert again.sweep_ttl() == 1
        assert [r.key for r in again.search(("s",))] == ["keep"]
    finally:
        again.close()


def test_background_sweeper_removes_expired_items(
    make_store: Callable[..., TieredMemoryStore],
) -> None:
    store = make_store("long", ttl={"sweep_interval_minutes": 0.01})  # type: ignore[typeddict-item]
    store.put(("bg",), "k", {"v": 1}, ttl=0.005)
    col = store.tiers["long"]._collection(("bg",), create=False)  # type: ignore[attr-defined]
    deadline = time.monotonic() + 60
    while col.count() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert col.count() == 0
    store.close()
    assert store._sweeper is not None and not store._sweeper.is_alive()


def test_a_refresh_of_a_stale_read_leaves_a_newer_write_alone(
    cstore: TieredMemoryStore, clock: Clock
) -> None:
    # A read refreshes the TTL of the version it read; when a write lands between the
    # read and its refresh, the refresh must not give the newer version an expiry.
    ns = ("race",)
    cstore.put(ns, "a", {"v": "session"}, ttl=TTL_MIN)
    cstore.put(ns, "b", {"v": "session"}, ttl=TTL_MIN)
    tier = cstore._tier(cstore.tier_for(ns))
    stale = tier.get(ns, ["a", "b"], now=clock.now)  # what the read saw
    cstore.put(ns, "a", {"v": "permanent"})  # the write in between: no TTL
    clock.now += 1
    cstore.put(ns, "b", {"v": "longer"}, ttl=100 * TTL_MIN)
    tier.refresh(list(stale.values()), now=clock.now)
    clock.now += 10 * TTL_S
    cstore.sweep_ttl()
    kept = cstore.get(ns, "a", refresh_ttl=False)
    assert kept is not None and kept.value == {"v": "permanent"}
    longer = cstore.get(ns, "b", refresh_ttl=False)
    assert longer is not None and longer.value == {"v": "longer"}
    # The version that was read is still refreshed.
    cstore.put(ns, "c", {"v": "session"}, ttl=TTL_MIN)
    fresh = tier.get(ns, ["c"], now=clock.now)
    clock.now += TTL_S / 2
    tier.refresh(list(fresh.values()), now=clock.now)
    clock.now += TTL_S * 0.75
    assert cstore.get(ns, "c", refresh_ttl=False) is not None
