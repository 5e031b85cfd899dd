"""User profiles on the real store: grouping, model profiles, the cache and user isolation."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.store.base import InvalidNamespaceError

from langgraph_tiered_memory import AsyncTieredMemoryStore, TieredMemoryStore
from langgraph_tiered_memory.agent.profile import (
    PROFILE_CACHE_LABEL,
    UserProfile,
    aget_user_profile,
    get_user_profile,
)
from langgraph_tiered_memory.errors import ConfigurationError
from langgraph_tiered_memory.store.maintenance import forget, garbage_collect
from tests.fake_models import RecordedChatModel
from tests.fakes import Clock
from tests.memory_tools_support import indexed_store_options

DAY = 86_400.0


ProfileStore = TieredMemoryStore
AsyncProfileStore = AsyncTieredMemoryStore


_options = indexed_store_options


@pytest.fixture
def pstore(redis_url: str, key_prefix: str, tmp_path: Path, clock: Clock) -> Iterator[ProfileStore]:
    store = ProfileStore(**_options(redis_url, key_prefix, tmp_path, clock))
    store.setup()
    yield store
    store.close()


def _reply(**fields: list[str]) -> dict[str, list[str]]:
    base: dict[str, list[str]] = {
        "basics": [],
        "communication_preferences": [],
        "special_needs": [],
        "interaction_history": [],
    }
    base.update(fields)
    return base


def _prompt_text(model: RecordedChatModel, call: int = -1) -> str:
    return "\n".join(str(m.content) for m in model.structured_prompts[call])


def _put_in_turn(
    store: TieredMemoryStore,
    clock: Clock,
    ns: tuple[str, ...],
    memories: list[tuple[str, dict[str, Any]]],
    step: float,
) -> None:
    """Put `(key, value)` pairs in order, the clock moving `step` seconds between two."""
    for i, (key, value) in enumerate(memories):
        if i:
            clock.now += step
        store.put(ns, key, value)


def _put_alice(store: TieredMemoryStore, clock: Clock) -> None:
    brief = {"content": "Alice wants short answers", "memory_type": "preference", "importance": 0.9}
    memories: list[tuple[str, dict[str, Any]]] = [
        ("tea", {"content": "Alice drinks green tea", "memory_type": "preference"}),
        ("berlin", {"content": "Alice lives in Berlin", "memory_type": "fact"}),
        ("brief", brief),
        ("trip", {"content": "Alice planned a trip to Rome"}),
    ]
    _put_in_turn(store, clock, ("memories", "alice"), memories, 60)


# ---------------------------------------------------------------------------- no model


def test_profile_without_model_groups_memories_by_type_importance_then_recency(
    pstore: ProfileStore, clock: Clock
) -> None:
    ns = ("memories", "u1")
    key = {"content": "needs large fonts", "memory_type": "preference", "importance": 0.9}
    memories: list[tuple[str, dict[str, Any]]] = [
        ("old", {"content": "likes jazz", "memory_type": "preference"}),
        ("new", {"content": "likes techno", "memory_type": "preference"}),
        ("key", key),
    ]
    _put_in_turn(pstore, clock, ns, memories, 3600)
    pstore.put(ns, "lisbon", {"content": "lives in Lisbon", "memory_type": "fact"})
    pstore.put(ns, "chess", {"content": "plays chess", "memory_type": "skill"})
    pstore.put(ns, "met", {"content": "met the assistant on Monday"})  # experience
    pstore.put(ns, "raw", {"note": "not a memory text"})  # listed, but has no content

    profile = get_user_profile(pstore, "u1")

    assert profile.source == "memories" and profile.user_id == "u1"
    assert list(profile.memories_by_type) == ["preference", "fact", "experience", "skill"]
    # importance first, then the newest update
    assert profile.preferences == ["needs large fonts", "likes techno", "likes jazz"]
    assert profile.facts == ["lives in Lisbon"]
    assert profile.memories_by_type["experience"] == ["met the assistant on Monday"]
    assert profile.memories_by_type["skill"] == ["plays chess"]
    assert profile.basics == [] and profile.interaction_history == []
    assert profile.memory_count == 7
    capped = get_user_profile(pstore, "u1", max_per_type=2)
    assert capped.preferences == ["needs large fonts", "likes techno"]


def test_profile_of_a_user_without_memories_is_empty(pstore: ProfileStore) -> None:
    profile = get_user_profile(pstore, "nobody")
    assert profile.memory_count == 0
    assert all(texts == [] for texts in profile.memories_by_type.values())


# ---------------------------------------------------------------------------- model


def test_model_profile_comes_from_structured_output_over_the_users_memories(
    pstore: ProfileStore, clock: Clock
) -> None:
    _put_alice(pstore, clock)
    model = RecordedChatModel(
        structured=[
            _reply(
                basics=["Lives in Berlin"],
                communication_preferences=["Short answers"],
                interaction_history=["Planned a trip to Rome"],
            )
        ]
    )

    profile = get_user_profile(pstore, "alice", model=model)

    assert profile.source == "model"
    assert profile.basics == ["Lives in Berlin"]
    assert profile.communication_preferences == ["Short answers"]
    assert profile.special_needs == []
    assert profile.interaction_history == ["Planned a trip to Rome"]
    assert profile.preferences == ["Alice wants short answers", "Alice drinks green tea"]
    assert len(model.structured_prompts) == 1 and model.prompts == model.structured_prompts
    prompt = _prompt_text(model)
    for text in ("Alice drinks green tea", "Alice lives in Berlin", "Alice planned a trip"):
        assert text in prompt
    assert "Lives in Berlin" in profile.to_text() and "Alice drinks green tea" in profile.to_text()


def test_malformed_model_output_warns_and_returns_the_memories_profile(
    pstore: ProfileStore, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    _put_alice(pstore, clock)
    model = RecordedChatModel(
        structured=[
            {"basics": "not a list", "special_needs": [1, 2]},  # fails validation
            "this is not JSON",  # fails parsing
            _reply(basics=["Lives in Berlin"]),
        ]
    )
    with caplog.at_level(logging.WARNING, logger="langgraph_tiered_memory.agent.profile"):
        first = get_user_profile(pstore, "alice", model=model)
        second = get_user_profile(pstore, "alice", model=model)
    warnings = [r for r in caplog.records if "malformed" in r.getMessage()]
    assert len(warnings) == 2 and all(r.levelno == logging.WARNING for r in warnings)
    assert first.source == second.source == "memories"
    assert first.basics == [] and first.facts == ["Alice lives in Berlin"]
    # A fallback is not cached as the model's profile: the next read asks the model again.
    third = get_user_profile(pstore, "alice", model=model)
    assert third.source == "model" and third.basics == ["Lives in Berlin"]
    assert len(model.structured_prompts) == 3


def test_model_errors_other_than_malformed_output_propagate(
    pstore: ProfileStore, clock: Clock
) -> None:
    _put_alice(pstore, clock)
    model = RecordedChatModel(structured=[ConnectionError("provider down")])
    with pytest.raises(ConnectionError, match="provider down"):
        get_user_profile(pstore, "alice", model=model)


# ---------------------------------------------------------------------------- cache


def test_cached_profile_is_returned_without_calling_the_model_again(
    pstore: ProfileStore, clock: Clock
) -> None:
    _put_alice(pstore, clock)
    model = RecordedChatModel(structured=[_reply(basics=["Lives in Berlin"])])
    first = get_user_profile(pstore, "alice", model=model)
    clock.now += DAY
    second = get_user_profile(pstore, "alice", model=model)
    assert len(model.structured_prompts) == 1
    assert second == first
    # refresh=True rebuilds even though nothing changed
    model.structured.append(_reply(basics=["Lives in Berlin", "Drinks tea"]))
    third = get_user_profile(pstore, "alice", model=model, refresh=True)
    assert len(model.structured_prompts) == 2 and third.basics[-1] == "Drinks tea"
    # the profile without a model has its own cache entry
    assert get_user_profile(pstore, "alice").source == "memories"
    assert get_user_profile(pstore, "alice", model=model) == third
    assert len(model.structured_prompts) == 2


@pytest.mark.parametrize("change", ["put", "update", "delete", "forget"])
def test_profile_is_rebuilt_when_the_users_memories_change(
    pstore: ProfileStore, clock: Clock, change: str
) -> None:
    _put_alice(pstore, clock)
    ns = ("memories", "alice")
    pstore.put(ns, "trivial", {"content": "Alice saw a cloud", "importance": 0.1})
    model = RecordedChatModel(structured=[_reply(basics=["v1"]), _reply(basics=["v2"])])
    assert get_user_profile(pstore, "alice", model=model).basics == ["v1"]
    assert get_user_profile(pstore, "alice").memories_by_type["experience"] == [
        "Alice planned a trip to Rome",
        "Alice saw a cloud",
    ]
    # The clock does not move: the change alone must invalidate the cache.
    if change == "put":
        pstore.put(ns, "cat", {"content": "Alice has a cat named Rex", "memory_type": "fact"})
        expect_in, expect_out = "Alice has a cat named Rex", None
    elif change == "update":
        pstore.put(ns, "berlin", {"content": "Alice moved to Lisbon", "memory_type": "fact"})
        expect_in, expect_out = "Alice moved to Lisbon", "Alice lives in Berlin"
    elif change == "delete":
        pstore.delete(ns, "tea")
        expect_in, expect_out = "Alice wants short answers", "Alice drinks green tea"
    else:
        forgotten = forget(pstore, ns, ["trivial"])
        assert [row["id"] for row in forgotten] == ["trivial"]
        expect_in, expect_out = "Alice planned a trip to Rome", "Alice saw a cloud"

    rebuilt = get_user_profile(pstore, "alice", model=model)

    assert rebuilt.basics == ["v2"] and len(model.structured_prompts) == 2
    assert expect_in in _prompt_text(model)
    plain = get_user_profile(pstore, "alice")
    texts = [t for group in plain.memories_by_type.values() for t in group]
    assert expect_in in texts
    if expect_out is not None:
        assert expect_out not in _prompt_text(model) and expect_out not in texts


def test_profile_reads_do_not_count_as_memory_accesses(pstore: ProfileStore, clock: Clock) -> None:
    ns = ("memories", "u1")
    pstore.put(ns, "m", {"content": "likes jazz", "memory_type": "preference"})
    clock.now += 91 * DAY
    for _ in range(3):
        assert get_user_profile(pstore, "u1").preferences == ["likes jazz"]
    entry = pstore.get_memory(ns, "m")
    assert entry is not None and entry.access_count == 0 and entry.last_accessed is None
    # so reading the profile does not keep a never-used memory from being forgotten
    report = garbage_collect(pstore, ns)
    assert [row["id"] for row in report["details"]] == ["m"]


def test_cached_profile_stays_out_of_the_users_memory_searches(
    pstore: ProfileStore, clock: Clock
) -> None:
    _put_alice(pstore, clock)
    model = RecordedChatModel(structured=[_reply(basics=["Alice lives in Berlin"])])
    get_user_profile(pstore, "alice", model=model)
    get_user_profile(pstore, "alice")
    ns = ("memories", "alice")
    keys = {it.key for it in pstore.search(ns, limit=100)}
    assert keys == {"tea", "berlin", "brief", "trip"}
    hits = pstore.search(ns, query="Alice lives in Berlin", limit=100)
    assert {it.key for it in hits} <= keys
    cached = pstore.search((PROFILE_CACHE_LABEL, "alice"), limit=10)
    assert len(cached) == 2 and {it.value["user_id"] for it in cached} == {"alice"}


# ---------------------------------------------------------------------------- isolation


def test_a_users_profile_never_contains_another_users_memories(
    pstore: ProfileStore, clock: Clock
) -> None:
    _put_alice(pstore, clock)
    # Ids close to "alice" are other users with their own (empty or small) memories.
    neighbours = ["Alice", "alice ", "alic", "alice-2", "ALICE", "alice\u0301"]
    pstore.put(("memories", "alice-2"), "own", {"content": "plays the cello"})
    pstore.put(("memories", "alice", "archive"), "old", {"content": "Alice once lived in Oslo"})
    alice_texts = ["green tea", "Berlin", "short answers", "Rome", "Oslo"]
    get_user_profile(pstore, "alice", model=RecordedChatModel(structured=[_reply(basics=["x"])]))
    for uid in neighbours:
        model = RecordedChatModel(structured=[_reply(basics=["the model's summary"])])
        for profile in (get_user_profile(pstore, uid, model=model), get_user_profile(pstore, uid)):
            dumped = profile.model_dump_json()
            assert profile.user_id == uid
            assert not any(t in dumped for t in alice_texts), (uid, dumped)
        assert not any(t in _prompt_text(model) for t in alice_texts)
        for item in pstore.search((PROFILE_CACHE_LABEL, uid), limit=10):
            assert tuple(item.namespace) == (PROFILE_CACHE_LABEL, uid)
            assert not any(t in str(item.value) for t in alice_texts)
    assert get_user_profile(pstore, "alice-2").memories_by_type["experience"] == ["plays the cello"]
    # alice's own profile covers her sub-namespaces
    assert "Alice once lived in Oslo" in get_user_profile(pstore, "alice").to_text()


@pytest.mark.parametrize(
    "user_id",
    ["", "   ", "alice.bob", "*", "{user_id}", "a}b", "x" * 300, "bad\udcff", None, 42, ("a",)],
)
def test_crafted_user_ids_are_refused_before_anything_is_read(
    pstore: ProfileStore, user_id: Any
) -> None:
    model = RecordedChatModel()
    with pytest.raises(InvalidNamespaceError, match="user_id"):
        get_user_profile(pstore, user_id, model=model)
    with pytest.raises(InvalidNamespaceError, match="user_id"):
        get_user_profile(pstore, user_id)
    assert model.prompts == []
    assert pstore.list_namespaces(prefix=(PROFILE_CACHE_LABEL,)) == []


def test_namespaces_that_would_reach_the_cache_or_all_users_are_refused(
    pstore: ProfileStore, clock: Clock
) -> None:
    _put_alice(pstore, clock)
    get_user_profile(pstore, "alice")  # alice's cached profile now exists
    # With a namespace of just the user id, the user "profiles" would list every cache.
    with pytest.raises(ConfigurationError, match="profile cache"):
        get_user_profile(pstore, "profiles", namespace=("{user_id}",))
    with pytest.raises(ConfigurationError, match="user_id"):
        get_user_profile(pstore, "bob", namespace=("memories",))  # not scoped to a user
    with pytest.raises(ConfigurationError, match="placeholder"):
        get_user_profile(pstore, "bob", namespace=("{org}", "{user_id}"))
    with pytest.raises(ConfigurationError, match="max_per_type"):
        get_user_profile(pstore, "bob", max_per_type=0)
    # Another template works and gets its own cache entry.
    pstore.put(("users", "bob", "memories"), "m", {"content": "Bob likes rain"})
    bob = get_user_profile(pstore, "bob", namespace=("users", "{user_id}", "memories"))
    assert bob.memories_by_type["experience"] == ["Bob likes rain"]
    assert "green tea" not in bob.model_dump_json()


def test_the_public_function_works_on_the_store_and_shares_its_cache(
    pstore: ProfileStore, clock: Clock
) -> None:
    _put_alice(pstore, clock)
    model = RecordedChatModel(structured=[_reply(basics=["Lives in Berlin"])])
    built = get_user_profile(pstore, "alice", model=model)
    assert get_user_profile(pstore, "alice", model=model) == built
    assert len(model.structured_prompts) == 1
    # the function defers to the store's method, which does not count accesses
    entry = pstore.get_memory(("memories", "alice"), "tea")
    assert entry is not None and entry.access_count == 0


# ---------------------------------------------------------------------------- async


def test_async_profile_matches_sync_and_refreshes_after_aput(
    redis_url: str, key_prefix: str, tmp_path: Path, clock: Clock
) -> None:
    async def main() -> tuple[UserProfile, ...]:
        store = AsyncProfileStore(**_options(redis_url, key_prefix, tmp_path, clock))
        await store.asetup()
        try:
            ns = ("memories", "alice")
            await store.aput(ns, "tea", {"content": "drinks tea", "memory_type": "preference"})
            await store.aput(ns, "city", {"content": "lives in Berlin", "memory_type": "fact"})
            model = RecordedChatModel(
                structured=[_reply(basics=["Berlin"]), _reply(basics=["Lisbon"])]
            )
            first = await aget_user_profile(store, "alice", model=model)
            cached = await aget_user_profile(store, "alice", model=model)
            await store.aput(ns, "city", {"content": "moved to Lisbon", "memory_type": "fact"})
            rebuilt = await aget_user_profile(store, "alice", model=model)
            entry = await store.aget_memory(ns, "tea")
            assert entry is not None and entry.access_count == 0  # the store's reads
            plain = await aget_user_profile(store, "alice")  # defers to the store's method
            other = await aget_user_profile(store, "bob", model=RecordedChatModel(structured=[{}]))
            assert len(model.structured_prompts) == 2
            assert "moved to Lisbon" in _prompt_text(model)
            entry = await store.aget_memory(ns, "tea")
            assert entry is not None and entry.access_count == 0
            return first, cached, rebuilt, plain, other
        finally:
            await asyncio.to_thread(store.close)

    first, cached, rebuilt, plain, other = asyncio.run(main())
    assert first.basics == ["Berlin"] and cached == first
    assert rebuilt.basics == ["Lisbon"] and rebuilt.facts == ["moved to Lisbon"]
    assert plain.source == "memories" and plain.preferences == ["drinks tea"]
    assert other.user_id == "bob" and "tea" not in other.model_dump_json()
