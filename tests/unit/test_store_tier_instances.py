"""A tier instance passed to the constructor: a new backend with no edit of the store."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

from langgraph_tiered_memory import TieredMemoryStore
from langgraph_tiered_memory.errors import ConfigurationError
from langgraph_tiered_memory.store.tiers._items import ItemWrite, StoredItem


class DictTier:
    """The smallest short tier: items in a dict, no vectors, no filters, no TTLs."""

    name = "dict"

    def __init__(self) -> None:
        self.items: dict[tuple[tuple[str, ...], str], StoredItem] = {}
        self.calls: list[str] = []

    def setup(self) -> None:
        self.calls.append("setup")

    def get(
        self, namespace: tuple[str, ...], keys: Sequence[str], *, now: float
    ) -> dict[str, StoredItem]:
        return {k: self.items[(namespace, k)] for k in keys if (namespace, k) in self.items}

    def check_writes(self, namespaces: Sequence[tuple[str, ...]]) -> None:
        pass

    def write(self, writes: Sequence[ItemWrite], *, now: float) -> None:
        for w in writes:
            at = (w.namespace, w.key)
            if w.value is None:
                self.items.pop(at, None)
                continue
            created = self.items[at].created_at if at in self.items else now
            self.items[at] = StoredItem(w.namespace, w.key, w.value, created, now)

    def refresh(self, items: Sequence[StoredItem], *, now: float) -> None:
        pass

    def search(
        self,
        prefix: tuple[str, ...],
        *,
        query_vector: Sequence[float] | None,
        filter: dict[str, Any] | None,
        limit: int,
        now: float,
        namespace_filter: Callable[[tuple[str, ...]], bool] | None = None,
    ) -> list[tuple[StoredItem, float | None]]:
        found = [it for (ns, _), it in self.items.items() if ns[: len(prefix)] == prefix]
        found = [it for it in found if namespace_filter is None or namespace_filter(it.namespace)]
        found = [it for it in found if all(it.value.get(k) == v for k, v in (filter or {}).items())]
        return [(it, None) for it in found[:limit]]

    def namespaces(self, prefix: tuple[str, ...], *, now: float) -> list[tuple[str, ...]]:
        return sorted({ns for ns, _ in self.items if ns[: len(prefix)] == prefix})

    def sweep(self, *, now: float) -> int:
        return 0

    def close(self) -> None:
        self.calls.append("close")


def test_a_short_tier_instance_serves_put_get_search_and_delete() -> None:
    tier = DictTier()
    with TieredMemoryStore.from_conn_string(tiers={"default": "short"}, short=tier) as store:
        ns = ("users", "u1")
        store.put(ns, "a", {"content": "likes tea", "kind": "drink"})
        store.put(ns, "b", {"content": "walks daily", "kind": "habit"})
        assert tier.items[(ns, "a")].value == {"content": "likes tea", "kind": "drink"}
        got = store.get(ns, "a")
        assert got is not None and got.value["content"] == "likes tea"
        assert [i.key for i in store.search(("users",), filter={"kind": "habit"})] == ["b"]
        assert store.list_namespaces(prefix=("users",)) == [ns]
        store.delete(ns, "a")
        assert store.get(ns, "a") is None and (ns, "a") not in tier.items
    assert tier.calls == ["setup", "close"]


def test_a_tier_instance_must_be_routed_alone_and_complete() -> None:
    with pytest.raises(ConfigurationError, match="routes no namespace to the 'short' tier"):
        TieredMemoryStore(tiers={"default": "long"}, short=DictTier())
    with pytest.raises(ConfigurationError, match="short= .* or redis_url, not both"):
        TieredMemoryStore(tiers={"default": "short"}, short=DictTier(), redis_url="redis://x")
    with pytest.raises(ConfigurationError, match="lacks search"):
        incomplete = DictTier()
        incomplete.search = None  # type: ignore[assignment,method-assign]
        TieredMemoryStore(tiers={"default": "short"}, short=incomplete)
