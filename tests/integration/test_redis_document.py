"""Short-tier documents: expiry kept by the key set, older documents still read and refresh."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
import redis

from langgraph_tiered_memory import TieredMemoryStore
from langgraph_tiered_memory.store.tiers._items import ItemWrite, to_datetime
from langgraph_tiered_memory.store.tiers._namespaces import encode_namespace, namespace_id
from tests.fakes import Clock

NS = ("legacy", "s1")


def _base(store: TieredMemoryStore) -> str:
    return f"{store.key_prefix}:{{{namespace_id(NS)}}}"


@pytest.mark.parametrize("spacing", ["compact", "spaced"])
def test_documents_of_the_older_format_still_read_and_refresh(
    make_store: Callable[..., TieredMemoryStore], clock: Clock, redis_url: str, spacing: str
) -> None:
    store = make_store("short", clock=clock)
    t0 = clock.now
    # Written as the older version did: the expiry inside the document (any JSON
    # spelling), the key set scored by it in milliseconds.
    doc = {"c": t0 - 10, "u": t0 - 5, "t": 1.0, "e": t0 + 60, "value": {"text": "old"}}
    raw = json.dumps(doc, separators=(",", ":")) if spacing == "compact" else json.dumps(doc)
    base = _base(store)
    with redis.Redis.from_url(redis_url) as client:
        client.zadd(f"{store.key_prefix}:{{registry}}:ns", {encode_namespace(NS): 0})
        client.set(f"{base}:i:k", raw, px=60_000)
        client.zadd(f"{base}:z", {"k": (t0 + 60) * 1000})
        item = store.get(NS, "k", refresh_ttl=False)
        assert item is not None and item.value == {"text": "old"}
        assert item.created_at == to_datetime(t0 - 10) and item.updated_at == to_datetime(t0 - 5)
        assert store.list_namespaces() == [NS]
        assert [r.key for r in store.search(("legacy",), refresh_ttl=False)] == ["k"]
        clock.now += 50
        assert store.get(NS, "k") is not None  # refreshes: 60 s from now again
        assert client.pttl(f"{base}:i:k") > 50_000  # native TTL restarted too
        clock.now += 50  # past the expiry written in the document
        assert store.get(NS, "k", refresh_ttl=False) is not None
        assert [r.key for r in store.search(("legacy",), refresh_ttl=False)] == ["k"]
        clock.now += 11
        assert store.get(NS, "k") is None
        assert store.search(("legacy",)) == [] and store.list_namespaces() == []


def test_a_refresh_leaves_the_document_alone_and_reads_report_the_key_set(
    make_store: Callable[..., TieredMemoryStore], redis_url: str
) -> None:
    clock = Clock(1_700_000_000.123456)  # a fraction finer than a millisecond
    store = make_store("short", clock=clock)
    store.put(NS, "k", {"text": "x"}, ttl=0.7)
    tier = store.tiers["short"]
    base = _base(store)
    with redis.Redis.from_url(redis_url) as client:
        written = client.get(f"{base}:i:k")
        clock.now += 30
        assert store.get(NS, "k") is not None  # refreshes the TTL
        assert client.get(f"{base}:i:k") == written  # the document is not rewritten
        item = tier.get(NS, ["k"], now=clock.now)["k"]
        score = client.zscore(f"{base}:z", "k")
        assert score is not None and item.expires_at == score / 1000
        assert item.expires_at == pytest.approx(clock.now + 42, abs=1e-3)
        # A rewrite that keeps the expiry (as maintenance does) keeps it exactly.
        rewrite = ItemWrite(
            NS, "k", {"text": "y"}, '{"text":"y"}', ttl=item.ttl, expires_at=item.expires_at
        )
        tier.write([rewrite], now=clock.now + 1)
        again = tier.get(NS, ["k"], now=clock.now)["k"]
        assert again.value == {"text": "y"} and again.expires_at == item.expires_at
