"""Maintenance never loses a memory, never widens its scope and never shares a private one.

Consolidation, promotion and the forgetting graph run unattended; each test here is a
way they used to destroy or expose memories.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langgraph.store.base import PutOp

from langgraph_tiered_memory import TieredMemoryStore, create_forgetting_graph
from langgraph_tiered_memory.store.consolidation import merge_contents
from langgraph_tiered_memory.store.maintenance import consolidate, forget, garbage_collect, promote
from tests.conftest import DIMS
from tests.fakes import Clock, HashingEmbeddings

DAY = 86_400.0
INDEX = {"dims": DIMS, "embed": HashingEmbeddings(DIMS), "fields": ["content"]}


@pytest.fixture
def pstore(make_store: Callable[..., TieredMemoryStore], clock: Clock) -> TieredMemoryStore:
    """A memory-mode store with the default routing: `("short_term", ...)` on Redis."""
    return make_store(scoring=None, clock=clock, index=INDEX)


def _keys(store: TieredMemoryStore, ns: tuple[str, ...]) -> set[str]:
    return {item.key for item in store.search(ns, limit=100) if item.namespace == ns}


def _contextual(store: TieredMemoryStore, user: str, query: str) -> list[str]:
    options = {"$retrieval": "contextual", "$user": user}
    return [str(h.value.get("content")) for h in store.search((), query=query, filter=options)]


# ----------------------------------------------------------------- consolidation


def test_a_pinned_memory_is_never_merged_away(mstore: TieredMemoryStore) -> None:
    ns = ("users", "u1")
    pinned = {"content": "Ana is allergic to peanuts.", "importance": 0.9, "pinned": True}
    mstore.put(ns, "pin", pinned)
    mstore.put(ns, "a", {"content": "Ana is allergic to peanuts.", "importance": 0.5})
    mstore.put(ns, "b", {"content": "Ana is allergic to peanuts.", "importance": 0.4})
    (record,) = consolidate(mstore, ns)
    assert sorted(record["sources"]) == ["a", "b"]  # the pinned memory is no source
    kept = mstore.get(ns, "pin")
    assert kept is not None and kept.value == pinned
    assert consolidate(mstore, ns) == []  # the pinned memory and the merged one stay apart
    assert _keys(mstore, ns) == {"pin", record["key"]}


def test_merged_keys_never_collide_when_source_keys_are_reused(mstore: TieredMemoryStore) -> None:
    ns = ("users", "u1")
    mstore.put(ns, "m1", {"content": "Ana drives a blue van."})
    mstore.put(ns, "m2", {"content": "Ana drives a blue van."})
    (first,) = consolidate(mstore, ns)
    mstore.put(ns, "m1", {"content": "Ben plays the cello."})
    mstore.put(ns, "m2", {"content": "Ben plays the cello."})
    (planned,) = consolidate(mstore, ns, dry_run=True)
    (second,) = consolidate(mstore, ns)
    assert planned["key"] == second["key"] != first["key"]  # a dry run names the real key
    earlier = mstore.get_memory(ns, first["key"])
    assert earlier is not None and earlier.content == "Ana drives a blue van."
    later = mstore.get_memory(ns, second["key"])
    assert later is not None and later.content == "Ben plays the cello."


def test_a_rerun_after_a_crash_finishes_the_same_merge(
    mstore: TieredMemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    ns = ("users", "u1")
    mstore.put(ns, "a", {"content": "Eli is allergic to nuts.", "importance": 0.9})
    mstore.put(ns, "b", {"content": "Eli is allergic to nuts.", "importance": 0.3})
    real = mstore._run_batch

    def crash_on_delete(ops: Any, **kwargs: Any) -> Any:
        ops = list(ops)
        if any(isinstance(op, PutOp) and op.value is None for op in ops):
            raise RuntimeError("power cut")
        return real(ops, **kwargs)

    monkeypatch.setattr(mstore, "_run_batch", crash_on_delete)
    with pytest.raises(RuntimeError, match="power cut"):
        consolidate(mstore, ns)
    monkeypatch.undo()
    (merged_key,) = _keys(mstore, ns) - {"a", "b"}
    stored = mstore.get(ns, merged_key)
    assert stored is not None
    (record,) = consolidate(mstore, ns)
    assert record["key"] == merged_key  # the same merged memory, not a second one
    assert _keys(mstore, ns) == {merged_key}
    again = mstore.get(ns, merged_key)
    assert again is not None and again.value == stored.value


def test_downweight_reruns_add_no_duplicates(mstore: TieredMemoryStore) -> None:
    ns = ("users", "u1")
    mstore.put(ns, "a", {"content": "Cara swims on Fridays.", "importance": 0.8})
    mstore.put(ns, "b", {"content": "Cara swims on Fridays.", "importance": 0.6})
    (record,) = consolidate(mstore, ns, originals="downweight")
    before = {k: mstore.get(ns, k).value for k in _keys(mstore, ns)}  # type: ignore[union-attr]
    for _ in range(3):
        assert consolidate(mstore, ns, originals="downweight") == []
    after = {k: mstore.get(ns, k).value for k in _keys(mstore, ns)}  # type: ignore[union-attr]
    assert after == before and set(after) == {"a", "b", record["key"]}
    assert after["a"]["importance"] == 0.4  # halved once, not once per run


def test_memories_of_different_visibility_are_never_merged(pstore: TieredMemoryStore) -> None:
    shared = ("kb",)  # no user scope: facts are visible to every user, experiences to none
    pstore.put(shared, "f", {"content": "Dana likes green tea.", "memory_type": "fact"})
    secret = "Dana likes green tea and her door code is 4711."
    pstore.put(shared, "e", {"content": secret, "memory_type": "experience"})
    pstore.put(shared, "e2", {"content": secret, "memory_type": "experience"})
    records = consolidate(pstore, shared, threshold=0.5)
    assert [sorted(r["sources"]) for r in records] == [["e", "e2"]]
    merged = pstore.get_memory(shared, records[0]["key"])
    assert merged is not None and merged.memory_type == "experience"
    assert all("4711" not in text for text in _contextual(pstore, "u2", "Dana door code"))


def test_shared_and_private_types_stay_apart_in_a_user_namespace_too(
    mstore: TieredMemoryStore,
) -> None:
    ns = ("users", "u1")
    fact = {"content": "Eve owns a red kayak.", "memory_type": "fact"}
    mstore.put(ns, "f", fact)
    mstore.put(ns, "e", {"content": "Eve owns a red kayak.", "memory_type": "experience"})
    mstore.put(ns, "p", {"content": "Eve owns a red kayak.", "memory_type": "preference"})
    (record,) = consolidate(mstore, ns)
    assert sorted(record["sources"]) == ["e", "p"]
    merged = mstore.get_memory(ns, record["key"])
    assert merged is not None and merged.memory_type == "experience"
    kept = mstore.get(ns, "f")
    assert kept is not None and kept.value == fact


def test_merging_without_a_model_keeps_every_source_text() -> None:
    merged = merge_contents(["Meet Dr. Smith at noon.", "Ask Dr. Smith at noon."])
    assert "Meet Dr. Smith at noon." in merged and "Ask Dr. Smith at noon." in merged
    superset = merge_contents(["Ana likes tea.", "Ana likes tea. Ana has a cat called Mo."])
    assert superset == "Ana likes tea. Ana has a cat called Mo."  # nothing repeated
    assert merge_contents(["Bo sails.", "bo sails."]) == "Bo sails."


# ----------------------------------------------------------------- promotion


def test_promotion_never_overwrites_a_long_term_memory(pstore: TieredMemoryStore) -> None:
    session = ("short_term", "u1")
    allergy = {"content": "Ana is allergic to shellfish.", "importance": 0.9}
    pstore.put(session, "turn-1", allergy)
    (first,) = promote(pstore, ("short_term",), delete=True)
    dest, key = first
    assert key == "turn-1"
    jazz = {"content": "Ana likes jazz.", "importance": 0.9}
    pstore.put(session, "turn-1", jazz)  # the next session reuses the key
    (second,) = promote(pstore, ("short_term",))
    assert second[0] == dest and second[1] != "turn-1"
    kept = pstore.get(dest, "turn-1")
    assert kept is not None and kept.value == allergy
    renamed = pstore.get(dest, second[1])
    assert renamed is not None and renamed.value == jazz
    assert promote(pstore, ("short_term",)) == [second]  # idempotent: the same copy
    assert _keys(pstore, dest) == {"turn-1", second[1]}


def test_promotion_skips_and_reports_invalid_items(pstore: TieredMemoryStore) -> None:
    session = ("short_term", "u1")
    pstore.put(session, "a", {"content": "Ana lives in Porto.", "importance": 0.9})
    pstore.put(session, "bad", {"content": "Ana said hi.", "importance": 7})
    pstore.put(session, "c", {"content": "Ana works nights.", "importance": 0.8})
    result = promote(pstore, ("short_term",), delete=True, page_size=1)
    assert sorted(k for _, k in result) == ["a", "c"]
    (skipped,) = result.skipped
    assert skipped["key"] == "bad" and skipped["namespace"] == list(session)
    assert "importance" in skipped["reason"]
    assert pstore.get(session, "bad") is not None  # left where it was
    assert pstore.get(session, "a") is None and pstore.get(session, "c") is None
    again = promote(pstore, ("short_term",), delete=True)
    assert list(again) == [] and [s["key"] for s in again.skipped] == ["bad"]


def test_promoted_memories_stay_private_to_their_user(pstore: TieredMemoryStore) -> None:
    pin = {"content": "my bank PIN is 1234", "memory_type": "fact", "importance": 0.9}
    pstore.put(("short_term", "u1"), "pin", pin)
    pstore.put(("short_term", "u1", "s7"), "pin", pin)
    promoted = set(promote(pstore, ("short_term",)))
    assert len(promoted) == 2

    def found(user: str) -> set[tuple[tuple[str, ...], str]]:
        options = {"$retrieval": "contextual", "$user": user}
        hits = pstore.search((), query="bank PIN", filter=options, limit=50)
        return {(h.namespace, h.key) for h in hits}

    assert found("u2") & promoted == set()
    assert promoted <= found("u1")


def test_promotion_of_a_namespace_without_a_user_is_skipped(pstore: TieredMemoryStore) -> None:
    pstore.put(("short_term",), "k", {"content": "my bank PIN is 1234", "importance": 0.9})
    result = promote(pstore, ("short_term",))
    assert list(result) == [] and [s["key"] for s in result.skipped] == ["k"]
    assert "target=" in result.skipped[0]["reason"]
    moved = promote(pstore, ("short_term",), target=lambda ns: ("users", "ops", "memories"))
    assert list(moved) == [(("users", "ops", "memories"), "k")]


# ----------------------------------------------------------------- scope


def _snapshot(store: TieredMemoryStore, spaces: list[tuple[str, ...]]) -> dict[Any, Any]:
    out = {}
    for ns in spaces:
        for item in store.search(ns, limit=1000):
            if item.namespace == ns:
                out[(ns, item.key)] = item.value
    return out


def test_a_wildcard_label_is_literal_in_every_maintenance_path(
    pstore: TieredMemoryStore, clock: Clock
) -> None:
    users = [("users", "u1"), ("users", "u2")]
    for ns in users:
        pstore.put(ns, "typo", {"content": "said teh", "importance": 0.05})
        pstore.put(ns, "a", {"content": "Finn owns a kayak."})
        pstore.put(ns, "b", {"content": "Finn owns a kayak."})
    pstore.put(("short_term", "u1"), "s", {"content": "Finn sails.", "importance": 0.9})
    star = ("users", "*")
    pstore.put(star, "x", {"content": "Gus grows tomatoes."})
    pstore.put(star, "y", {"content": "Gus grows tomatoes."})
    spaces = [*users, ("short_term", "u1"), ("users", "u1", "memories")]
    before = _snapshot(pstore, spaces)
    clock.now += DAY
    graph = create_forgetting_graph(namespace=star, clock=clock).compile(store=pstore)
    report = graph.invoke({})["report"]
    assert [sorted(r["sources"]) for r in report["consolidated"]] == [["x", "y"]]
    assert {tuple(r["namespace"]) for r in report["consolidated"]} == {star}
    assert garbage_collect(pstore, star, dry_run=False)["scanned"] == 1  # the merged one
    assert forget(pstore, star, ["typo", "a"]) == []
    assert consolidate(pstore, star) == []
    assert list(promote(pstore, ("short_term", "*"))) == []
    assert _snapshot(pstore, spaces) == before


def test_promotion_scope_is_the_namespace_prefix(pstore: TieredMemoryStore) -> None:
    pstore.put(("short_term", "u1"), "k", {"content": "Ida hikes.", "importance": 0.9})
    pstore.put(("short_term", "u10"), "k", {"content": "Jo rows.", "importance": 0.9})
    promoted = promote(pstore, ("short_term", "u1"))
    assert list(promoted) == [(("users", "u1", "memories"), "k")]


# ----------------------------------------------------------------- property

USERS = ("u1", "u2")
LONG_SPACES = [("users", u, *rest) for u in USERS for rest in ((), ("notes",))] + [
    ("kb",),
    ("users", "*"),
]
SHORT_SPACES = [("short_term", u) for u in USERS]
TARGETS = [("users", u, "memories") for u in USERS]
ALL_SPACES = [*LONG_SPACES, *SHORT_SPACES, *TARGETS]
TEXTS = ["Ana likes tea.", "Ana likes tea.", "Bo owns a van.", "said teh", "Cy hikes."]
_counter = itertools.count()


def _under(ns: tuple[str, ...], prefix: tuple[str, ...]) -> bool:
    return ns[: len(prefix)] == prefix


memory = st.fixed_dictionaries(
    {
        "content": st.sampled_from(TEXTS),
        "importance": st.sampled_from([0.05, 0.5, 0.9]),
        "memory_type": st.sampled_from(["fact", "experience"]),
        "pinned": st.booleans(),
    }
)
ttl = st.sampled_from([None, None, 5 * 24 * 60.0, 100 * 24 * 60.0])  # minutes
step = st.tuples(
    st.sampled_from(
        ["gc", "gc_ahead", "forget", "consolidate", "downweight", "promote", "graph", "graph_ahead"]
    ),
    st.sampled_from([*LONG_SPACES, ("users",), ("users", "u1"), ("short_term", "*")]),
    st.booleans(),  # dry run
    st.sampled_from([0.0, 10 * DAY, 200 * DAY]),  # clock advance
)


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    st.lists(st.tuples(st.sampled_from(LONG_SPACES + SHORT_SPACES), memory, ttl), max_size=12),
    st.lists(step, min_size=1, max_size=3),
)
def test_maintenance_never_changes_anything_outside_its_scope(
    redis_url: str,
    key_prefix: str,
    tmp_path: Any,
    writes: list[tuple[tuple[str, ...], dict[str, Any], float | None]],
    steps: list[tuple[str, tuple[str, ...], bool, float]],
) -> None:
    run = next(_counter)
    clock = Clock()
    with TieredMemoryStore.from_conn_string(
        redis_url,
        chroma_path=str(tmp_path / f"h{run}"),
        key_prefix=f"{key_prefix}h{run}",
        clock=clock,
        index=INDEX,
    ) as store:
        try:
            _random_maintenance(store, clock, writes, steps)
        finally:
            client = redis.Redis.from_url(redis_url)
            try:
                for key in client.scan_iter(match=f"{key_prefix}h{run}:*", count=1000):
                    client.delete(key)
            finally:
                client.close()


def _raw(store: TieredMemoryStore) -> dict[Any, tuple[Any, float | None]]:
    """Every stored item (value, expiry) of `ALL_SPACES`, expired or not.

    Read below the store's read rules, so a dry run that deleted an expired item, or
    a rewrite that changed an expiry, shows.
    """
    out: dict[Any, tuple[Any, float | None]] = {}
    for ns in ALL_SPACES:
        tier: Any = store._tiers[store.tier_for(ns)]
        if store.tier_for(ns) == "long":
            keys = [k for page in tier.iter_memory_stats(ns) for k, _ in page]
        else:
            (keys,) = tier._live_keys([ns], 0.0)
        for key, item in tier.get(ns, keys, now=0.0).items():
            out[(ns, key)] = (item.value, item.expires_at)
    return out


def _random_maintenance(
    store: TieredMemoryStore,
    clock: Clock,
    writes: list[tuple[tuple[str, ...], dict[str, Any], float | None]],
    steps: list[tuple[str, tuple[str, ...], bool, float]],
) -> None:
    for i, (ns, value, minutes) in enumerate(writes):
        store.put(ns, f"k{i}", value, ttl=minutes)
    pinned = {
        (ns, f"k{i}")
        for i, (ns, v, minutes) in enumerate(writes)
        if v["pinned"] and ns in LONG_SPACES
    }
    for op, scope, dry, advance in steps:
        clock.now += advance
        before = _raw(store)
        if op in ("gc", "gc_ahead"):
            ahead = clock.now + 30 * DAY if op == "gc_ahead" else None
            garbage_collect(store, scope, dry_run=dry, now=ahead)
        elif op == "forget" and not dry and store.tier_for(scope) == "long":
            forget(store, scope, [f"k{i}" for i in range(len(writes))])
        elif op in ("consolidate", "downweight") and store.tier_for(scope) == "long":
            originals: Any = "delete" if op == "consolidate" else "downweight"
            consolidate(store, scope, threshold=0.8, dry_run=dry, originals=originals)
        elif op == "promote" and not dry:
            promote(store, ("short_term", *scope[1:2]) if scope[0] == "users" else scope)
        elif op in ("graph", "graph_ahead"):
            shift = 30 * DAY if op == "graph_ahead" else 0.0
            graph = create_forgetting_graph(
                namespace=scope, dry_run=dry, clock=lambda s=shift: clock.now + s
            )
            graph.compile(store=store).invoke({})
        after = _raw(store)
        if dry:
            assert after == before, "a dry run changed the store"
        if op == "promote":
            source = ("short_term", *scope[1:2]) if scope[0] == "users" else scope
            allowed = [ns for ns in SHORT_SPACES if _under(ns, source)]
            allowed += [("users", ns[1], "memories") for ns in allowed]
            outside = [ns for ns in ALL_SPACES if ns not in allowed]
        elif op in ("forget", "consolidate", "downweight"):
            outside = [ns for ns in ALL_SPACES if ns != scope]
        else:
            outside = [ns for ns in ALL_SPACES if not _under(ns, scope)]
        assert {k: v for k, v in after.items() if k[0] in outside} == {
            k: v for k, v in before.items() if k[0] in outside
        }
        for key, (_, expires) in before.items():
            if key in after and key[1].startswith("k"):
                assert after[key][1] == expires, f"{key} changed its expiry"
        for ns, key in pinned:
            live = before.get((ns, key))
            if live is not None and (live[1] is None or live[1] > clock.now):
                assert (ns, key) in after, f"pinned memory {ns}/{key} is gone"


def test_maintenance_refuses_text_utf8_cannot_encode_before_touching_anything(
    mstore: TieredMemoryStore,
) -> None:
    from langgraph.store.base import InvalidNamespaceError

    from langgraph_tiered_memory.errors import InvalidFilterError, InvalidItemError

    ns = ("users", "u1", "memories")
    mstore.put(ns, "a", {"content": "Ana likes tea.", "importance": 0.0})
    before = mstore.search(ns, limit=10)
    with pytest.raises(InvalidItemError, match="UTF-8"):
        forget(mstore, ns, ["a", "\ud800"])
    with pytest.raises(InvalidNamespaceError, match="UTF-8"):
        garbage_collect(mstore, ("users", "\ud800"), dry_run=False)
    with pytest.raises(InvalidFilterError, match="UTF-8"):
        consolidate(mstore, ns, query="tea \ud800")
    assert [i.key for i in mstore.search(ns, limit=10)] == [i.key for i in before]


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_reinforcing_never_brings_back_a_memory_deleted_meanwhile(
    pstore: TieredMemoryStore, monkeypatch: pytest.MonkeyPatch, use_async: bool
) -> None:
    import asyncio
    import threading

    from langgraph_tiered_memory.store import maintenance

    ns = ("users", "u1")
    pstore.put(ns, "secret", {"content": "a secret to delete", "importance": 0.5})
    deleted = threading.Event()
    read = maintenance._reinforced

    def read_then_delete(*args: Any) -> Any:
        found = read(*args)
        # Another thread deletes the memory right after the read; it must wait for
        # the rewrite instead of landing before it (where the rewrite would undo it).
        deleter = threading.Thread(target=lambda: (pstore.delete(ns, "secret"), deleted.set()))
        deleter.start()
        deleter.join(timeout=0.5)
        assert not deleted.is_set()
        return found

    monkeypatch.setattr(maintenance, "_reinforced", read_then_delete)
    if use_async:
        got = asyncio.run(pstore.aupdate_importance(ns, "secret", 0.1))
    else:
        got = pstore.update_importance(ns, "secret", 0.1)
    assert got == pytest.approx(0.6)
    assert deleted.wait(timeout=10)
    assert pstore.get(ns, "secret") is None


@pytest.mark.parametrize("newer", [{"content": "now prefers coffee", "importance": 0.9}, None])
def test_promotion_never_deletes_a_short_term_item_written_after_its_read(
    pstore: TieredMemoryStore,
    monkeypatch: pytest.MonkeyPatch,
    clock: Clock,
    newer: dict[str, Any] | None,
) -> None:
    from langgraph_tiered_memory.store import promotion

    short = ("short_term", "u1", "s1")
    pstore.put(short, "fact", {"content": "likes tea", "importance": 0.9})
    pstore.put(short, "other", {"content": "likes jazz", "importance": 0.9})
    placed = promotion._placed

    def placed_then_a_write(*args: Any) -> Any:
        out = placed(*args)
        clock.now += 1  # a session writes the same key while the copies are made
        if newer is None:
            pstore.put(short, "fact", {"content": "likes tea", "importance": 0.9}, ttl=5)
        else:
            pstore.put(short, "fact", newer)
        return out

    monkeypatch.setattr(promotion, "_placed", placed_then_a_write)
    moved = promote(pstore, ("short_term",), delete=True)
    dest = ("users", "u1", "memories", "s1")
    assert sorted(moved) == [(dest, "fact"), (dest, "other")]
    kept = pstore.get(short, "fact", refresh_ttl=False)
    assert kept is not None and kept.value == (newer or {"content": "likes tea", "importance": 0.9})
    assert pstore.get(short, "other") is None  # unchanged: moved as asked
    copy = pstore.get(dest, "fact")
    assert copy is not None and copy.value["content"] == "likes tea"
