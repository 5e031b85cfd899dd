"""Provenance through the tiered store's own writers: promotion and consolidation.

A promoted copy outside its user's namespaces names the user; a merged memory names
every user and session its sources named, so erasing any of them finds it.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from langgraph_tiered_memory import TieredMemoryStore
from langgraph_tiered_memory.privacy import erase_user, export_user
from langgraph_tiered_memory.privacy.provenance import PROVENANCE_FIELD, names_user
from langgraph_tiered_memory.store.maintenance import consolidate, promote
from tests.conftest import DIMS
from tests.fakes import Clock, HashingEmbeddings

TEAM = ("memories", "team")
INDEX = {"dims": DIMS, "embed": HashingEmbeddings(DIMS), "fields": ["content"]}


@pytest.fixture
def pstore(make_store: Callable[..., TieredMemoryStore], clock: Clock) -> TieredMemoryStore:
    """A memory-mode store with the default routing: `("short_term", ...)` on Redis."""
    return make_store(scoring=None, clock=clock, index=INDEX)


def test_a_copy_promoted_to_a_shared_namespace_names_its_user(pstore: TieredMemoryStore) -> None:
    pstore.put(("short_term", "u1", "s7"), "a", {"content": "Ana likes jazz.", "importance": 0.9})
    pstore.put(("short_term", "u2"), "b", {"importance": 0.9, "note": "no content field"})
    scoped = ("short_term", "users", "u3")  # the user after the "users" label
    pstore.put(scoped, "c", {"content": "Bo likes tea.", "importance": 0.9})
    moved = promote(pstore, ("short_term",), target=lambda ns: TEAM)
    assert sorted(moved) == [(TEAM, "a"), (TEAM, "b"), (TEAM, "c")]
    values = {key: pstore.get(TEAM, key).value for key in "abc"}  # type: ignore[union-attr]
    assert values["a"][PROVENANCE_FIELD] == {"user_ids": ["u1"]}
    assert values["b"][PROVENANCE_FIELD] == {"user_ids": ["u2"]}
    assert values["c"][PROVENANCE_FIELD] == {"user_ids": ["u3"]}
    assert names_user(values["b"], "u2") and not names_user(values["b"], "u1")
    # Reruns find the copies already stored (a value without content included).
    assert sorted(promote(pstore, ("short_term",), target=lambda ns: TEAM)) == sorted(moved)
    assert sorted(i.key for i in pstore.search(TEAM, limit=20)) == ["a", "b", "c"]
    # The default target is the user's own namespace: the copy is the item as it was.
    pstore.put(("short_term", "u4"), "d", {"content": "Cy swims.", "importance": 0.9})
    [(dest, key)] = promote(pstore, ("short_term", "u4"))
    assert dest == ("users", "u4", "memories")
    assert pstore.get(dest, key).value == {"content": "Cy swims.", "importance": 0.9}  # type: ignore[union-attr]


def test_a_merged_shared_memory_names_every_sources_user(mstore: TieredMemoryStore) -> None:
    fact = "The office opens at nine."
    mstore.put(TEAM, "a", {"content": fact, PROVENANCE_FIELD: {"user_ids": ["u1"]}})
    mstore.put(TEAM, "b", {"content": fact, PROVENANCE_FIELD: {"session_ids": ["t2"]}})
    mstore.put(TEAM, "c", {"content": fact, "user_id": "u3"})  # a caller's own field
    (record,) = consolidate(mstore, TEAM)
    merged = mstore.get(TEAM, record["key"])
    assert merged is not None
    assert merged.value[PROVENANCE_FIELD] == {"user_ids": ["u1", "u3"], "session_ids": ["t2"]}
    assert names_user(merged.value, "u3")
    assert names_user(merged.value, "u9", session_ids=["t2"])
    # Sources that record no more than the merged memory's own fields: nothing added.
    ns = ("users", "u1")
    for key in "ab":
        mstore.put(ns, key, {"content": "Ana is allergic to peanuts.", "thread_id": "t1"})
    (mine,) = consolidate(mstore, ns)
    plain = mstore.get(ns, mine["key"])
    assert plain is not None and PROVENANCE_FIELD not in plain.value
    assert plain.value["thread_id"] == "t1"


def test_private_memories_of_two_users_in_a_shared_namespace_are_never_merged(
    mstore: TieredMemoryStore,
) -> None:
    team = ("team",)  # no user: a shared namespace
    tool_value = {"memory_type": "preference"}
    mstore.put(team, "a1", {**tool_value, "content": "I like green tea", "user_id": "alice"})
    mstore.put(team, "a2", {**tool_value, "content": "I like green tea", "user_id": "alice"})
    address = "I like green tea; my home address is 5 Main St"
    mstore.put(team, "b1", {**tool_value, "content": address, "user_id": "bob"})
    for query in [None, "green tea"]:
        records = consolidate(mstore, team, query=query, min_similarity=0.0, threshold=0.0)
        for record in records:  # alice's two memories may merge; bob's never joins them
            assert "b1" not in record["sources"] and "Main St" not in record["content"]
    exported = [m["value"]["content"] for m in export_user(mstore, "alice")["shared_memories"]]
    assert exported and not any("Main St" in text for text in exported)
    erase_user(mstore, "alice")
    assert mstore.get(team, "b1") is not None
    # Shared types still merge across users: every user can read them anyway.
    fact = {"memory_type": "fact", "content": "The office opens at nine."}
    mstore.put(team, "f1", {**fact, "user_id": "carol"})
    mstore.put(team, "f2", {**fact, "user_id": "dan"})
    (merged,) = consolidate(mstore, team, threshold=0.99)
    assert sorted(merged["sources"]) == ["f1", "f2"]
