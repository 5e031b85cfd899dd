"""A TTL above `MAX_TTL_MINUTES` fails the whole batch before any write, on both tiers.

Before the bound, Redis refused the `PX` of a TTL above ~1.5e14 minutes inside the
short tier's MULTI/EXEC, after the long tier and earlier ops of the batch were written.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import redis
from langgraph.store.base import PutOp

from langgraph_tiered_memory import ConfigurationError, InvalidItemError, TieredMemoryStore
from langgraph_tiered_memory.store._validate import MAX_TTL_MINUTES
from tests.fakes import Clock
from tests.mixed_tiers import (
    LONG_NS,
    MIXED,
    SHORT_NS,
    assert_untouched,
    batch_around,
    seed,
    store_state,
)

TOO_LONG = [MAX_TTL_MINUTES + 1, 1.5e14, 1e15]


@pytest.mark.parametrize("ttl", TOO_LONG)
@pytest.mark.parametrize("bad_tier", ["short", "long"])
def test_a_ttl_above_the_maximum_fails_a_mixed_batch_before_any_write(
    make_store: Callable[..., TieredMemoryStore],
    redis_url: str,
    key_prefix: str,
    bad_tier: str,
    ttl: float,
) -> None:
    store = seed(make_store(tiers=MIXED))
    before = store_state(store, redis_url, key_prefix)
    bad_ns = SHORT_NS if bad_tier == "short" else LONG_NS
    with pytest.raises(InvalidItemError, match="longer than the maximum") as err:
        store.batch(batch_around(PutOp(bad_ns, "bad", {"text": "x"}, ttl=ttl)))
    assert "ttl=None for no expiry" in str(err.value)
    assert_untouched(store, before, redis_url, key_prefix)


@pytest.mark.parametrize("ttl", TOO_LONG)
def test_put_refuses_a_ttl_above_the_maximum_on_each_tier(
    store: TieredMemoryStore, ttl: float
) -> None:
    with pytest.raises(InvalidItemError, match="ttl=None"):
        store.put(("t",), "k", {"v": 1}, ttl=ttl)
    assert store.get(("t",), "k") is None
    assert store.list_namespaces() == []


def test_the_maximum_ttl_is_stored_and_expires_on_each_tier(
    make_store: Callable[..., TieredMemoryStore],
    tier: str,
    clock: Clock,
    redis_url: str,
    key_prefix: str,
) -> None:
    store = make_store(tier, clock=clock)
    store.put(("t",), "k", {"v": 1}, ttl=MAX_TTL_MINUTES)
    assert store.get(("t",), "k", refresh_ttl=False).value == {"v": 1}  # type: ignore[union-attr]
    if tier == "short":  # Redis holds the expiry natively, in milliseconds
        client = redis.Redis.from_url(redis_url)
        try:
            ttls = [client.pttl(k) for k in client.scan_iter(match=f"{key_prefix}:*:i:k")]
        finally:
            client.close()
        assert len(ttls) == 1 and MAX_TTL_MINUTES * 60_000 - 60_000 < ttls[0]
    clock.now += MAX_TTL_MINUTES * 60 - 60
    assert store.get(("t",), "k", refresh_ttl=False) is not None
    clock.now += 120
    assert store.get(("t",), "k") is None


def test_default_ttl_above_the_maximum_is_refused(redis_url: str, tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match=r"default_ttl.*maximum.*ttl=None"):
        TieredMemoryStore(redis_url=redis_url, chroma_path=str(tmp_path), ttl={"default_ttl": 1e15})
