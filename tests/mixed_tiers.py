"""A store layout with one Redis and one Chroma namespace, and a snapshot of everything.

Batch-atomicity tests write to both tiers in one batch and compare `store_state`
before and after a refused batch: nothing of it may be written.
"""

from __future__ import annotations

from typing import Any

import redis
from langgraph.store.base import Op, PutOp

MIXED = {"default": "long", "short": [("s",)]}
"""Tiers: namespaces under `("s",)` go to Redis, the rest to Chroma."""
SHORT_NS, LONG_NS = ("s", "a"), ("l",)
"""One namespace on each tier of `MIXED`."""


def store_state(store: Any, redis_url: str, key_prefix: str) -> list[Any]:
    """Every namespace and item (value, timestamps) the store shows, and its Redis keys."""
    namespaces = store.list_namespaces(limit=10_000)
    items = sorted(
        (tuple(it.namespace), it.key, it.value, it.created_at, it.updated_at)
        for ns in namespaces
        for it in store.search(ns, limit=10_000)
        if tuple(it.namespace) == ns
    )
    client = redis.Redis.from_url(redis_url)
    try:
        keys = sorted(client.scan_iter(match=f"{key_prefix}:*"))
    finally:
        client.close()
    return [namespaces, items, keys]


def seed(store: Any) -> Any:
    """Put the item `"keep"` on each tier (`{"text": "old short" / "old long"}`)."""
    store.put(SHORT_NS, "keep", {"text": "old short"})
    store.put(LONG_NS, "keep", {"text": "old long"})
    return store


def batch_around(bad: Op) -> list[Op]:
    """Writes to both tiers (an update and a new item on each), then `bad`."""
    return [
        PutOp(LONG_NS, "keep", {"text": "new long"}),
        PutOp(SHORT_NS, "keep", {"text": "new short"}),
        PutOp(LONG_NS, "fresh", {"text": "fresh long"}),
        PutOp(SHORT_NS, "fresh", {"text": "fresh short"}),
        bad,
    ]


def assert_untouched(store: Any, before: list[Any], redis_url: str, key_prefix: str) -> None:
    """Nothing of a refused `batch_around` was written (compared with `store_state`)."""
    assert store_state(store, redis_url, key_prefix) == before
    assert store.get(SHORT_NS, "keep").value == {"text": "old short"}
    assert store.get(LONG_NS, "keep").value == {"text": "old long"}
    for ns in (SHORT_NS, LONG_NS):
        assert store.get(ns, "fresh") is None
        assert store.get(ns, "bad") is None
