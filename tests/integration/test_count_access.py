"""`"$count_access": False` reads memories without counting an access."""

from __future__ import annotations

import pytest

from langgraph_tiered_memory import InvalidFilterError, TieredMemoryStore

NS = ("memories", "u1")


def _count(store: TieredMemoryStore) -> int:
    entry = store.get_memory(NS, "m1")
    assert entry is not None
    return entry.access_count


def test_a_search_that_does_not_count_leaves_the_statistics(mstore: TieredMemoryStore) -> None:
    mstore.put(NS, "m1", {"content": "the user lives in Berlin", "memory_type": "fact"})
    for _ in range(3):
        hits = mstore.search(NS, query="Berlin", filter={"$count_access": False})
        assert [h.key for h in hits] == ["m1"]
        found = mstore.search_memories(NS, "Berlin", filter={"$count_access": False})
        assert [h.entry.id for h in found] == ["m1"]
    assert _count(mstore) == 0
    mstore.search(NS, query="Berlin")
    mstore.search_memories(NS, "Berlin")
    assert _count(mstore) == 2


def test_count_access_must_be_a_bool(mstore: TieredMemoryStore) -> None:
    with pytest.raises(InvalidFilterError, match="count_access"):
        mstore.search(NS, query="Berlin", filter={"$count_access": "no"})


def test_extraction_does_not_count_its_comparisons(mstore: TieredMemoryStore) -> None:
    from langgraph_tiered_memory import extract_memories

    first = extract_memories(mstore, NS, [("user", "I live in Berlin.")])
    (key,) = first.added
    extract_memories(mstore, NS, [("user", "I live in Berlin.")])
    extract_memories(mstore, NS, [("user", "I love green tea.")])
    entry = mstore.get_memory(NS, key)
    assert entry is not None and entry.access_count == 0
