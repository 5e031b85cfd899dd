"""A store layout with one Redis and one Chroma namespace, and a snapshot of everything.

Batch-atomicity tests write to both tiers in one batch and compare `store_state`
before and after a refused batch: nothing of it may be written.
"""

from __future__ import annotations

from typing import Any

import redis

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
