"""Memory records and memory ranking on the long-term tier (real Chroma + SQLite index)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

import pytest
from langgraph.store.base import PutOp

from langgraph_tiered_memory import (
    ConfigurationError,
    InvalidFilterError,
    InvalidItemError,
    MemoryEntry,
    TieredMemoryStore,
)
from langgraph_tiered_memory.store.maintenance import consolidate, garbage_collect, promote
from tests.conftest import DIMS
from tests.fakes import Clock, HashingEmbeddings

DAY = 86_400.0


def _keys(hits: list[Any]) -> list[str]:
    return [h.key for h in hits]


def test_default_scoring_is_memory_and_stats_start_empty(
    mstore: TieredMemoryStore, clock: Clock
) -> None:
    assert mstore.scoring.mode == "memory" and mstore.scoring.retrieval == "hybrid"
    mstore.put(("m",), "a", {"content": "green tea in the morning", "tag": "x"})
    entry = mstore.get_memory(("m",), "a")
    assert isinstance(entry, MemoryEntry)
    assert entry.content == "green tea in the morning"
    assert entry.memory_type == "experience" and entry.importance == 0.5
    assert entry.access_count == 0 and entry.last_accessed is None
    assert entry.metadata == {"tag": "x"}
    assert entry.created_at.timestamp() == pytest.approx(clock.now)


def test_each_retrieval_counts_an_access_and_put_keeps_the_stats(
    mstore: TieredMemoryStore, clock: Clock
) -> None:
    mstore.put(("m",), "a", {"content": "green tea in the morning"})
    clock.now += 60
    assert _keys(mstore.search(("m",), query="green tea")) == ["a"]
    clock.now += 60
    assert mstore.get(("m",), "a") is not None
    entry = mstore.get_memory(("m",), "a")
    assert entry is not None and entry.access_count == 2
    assert entry.last_accessed is not None and entry.last_accessed.timestamp() == clock.now
    # A user put rewrites the value but never the statistics.
    mstore.put(("m",), "a", {"content": "green tea at noon", "importance": 0.9})
    entry = mstore.get_memory(("m",), "a")
    assert entry is not None and entry.access_count == 2 and entry.importance == 0.9
    mstore.delete(("m",), "a")
    assert mstore.get_memory(("m",), "a") is None


def test_concurrent_searches_never_lose_an_increment(mstore: TieredMemoryStore) -> None:
    mstore.put(("m",), "a", {"content": "green tea"})
    threads, per_thread = 4, 10

    def run() -> None:
        for _ in range(per_thread):
            assert _keys(mstore.search(("m",), query="green tea", limit=1)) == ["a"]

    workers = [threading.Thread(target=run) for _ in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    entry = mstore.get_memory(("m",), "a")
    assert entry is not None and entry.access_count == threads * per_thread


def test_two_stores_on_one_directory_share_access_counts(
    make_store: Callable[..., TieredMemoryStore], clock: Clock
) -> None:
    index = {"dims": DIMS, "embed": HashingEmbeddings(DIMS), "fields": ["content"]}
    one = make_store("long", scoring=None, clock=clock, index=index)
    two = make_store("long", scoring=None, clock=clock, index=index)
    one.put(("m",), "a", {"content": "green tea"})
    for store in (one, two, one):
        assert _keys(store.search(("m",), query="green tea")) == ["a"]
    entry = two.get_memory(("m",), "a")
    assert entry is not None and entry.access_count == 3


@pytest.mark.parametrize(
    "value, field",
    [
        ({"content": "x", "importance": 1.5}, "importance"),
        ({"content": "x", "importance": float("nan")}, "importance"),
        ({"content": "x", "importance": True}, "importance"),
        ({"content": "x", "memory_type": "dream"}, "memory_type"),
        ({"content": "x", "occurred_at": "yesterday-ish"}, "occurred_at"),
        ({"content": 3}, "content"),
    ],
)
def test_bad_memory_fields_fail_without_writing(
    mstore: TieredMemoryStore, value: dict[str, Any], field: str
) -> None:
    mstore.put(("m",), "keep", {"content": "stays"})
    with pytest.raises(InvalidItemError, match=field):
        mstore.batch([PutOp(("m",), "ok", {"content": "fine"}), PutOp(("m",), "bad", value)])
    assert mstore.get(("m",), "ok") is None and mstore.get(("m",), "bad") is None
    assert mstore.get(("m",), "keep") is not None


def test_importance_orders_items_of_equal_similarity(mstore: TieredMemoryStore) -> None:
    for key, importance in (("low", 0.1), ("high", 0.9), ("mid", 0.5)):
        mstore.put(("m",), key, {"content": "green tea", "importance": importance})
    hits = mstore.search(("m",), query="green tea", limit=3)
    assert _keys(hits) == ["high", "mid", "low"]
    assert hits[0].score is not None and hits[0].score > hits[1].score  # type: ignore[operator]


def test_recency_orders_items_of_equal_importance(mstore: TieredMemoryStore, clock: Clock) -> None:
    for key in ("old", "new"):
        mstore.put(("m",), key, {"content": "green tea"})
        clock.now += 90 * DAY
    hits = mstore.search_memories(("m",), "green tea", limit=2)
    assert [h.entry.id for h in hits] == ["new", "old"]
    assert hits[0].breakdown.recency > hits[1].breakdown.recency
    assert hits[0].breakdown.relevance == hits[1].breakdown.relevance


def test_access_count_boosts(mstore: TieredMemoryStore, clock: Clock) -> None:
    for key in ("a", "b"):
        mstore.put(("m",), key, {"content": "green tea"})
    for _ in range(5):
        mstore.get(("m",), "b")  # accessed at the same time as the search below
    hits = mstore.search_memories(("m",), "green tea", limit=2)
    assert [h.entry.id for h in hits] == ["b", "a"]
    assert hits[0].breakdown.access > hits[1].breakdown.access == 0.0


def test_min_score_cuts_off(mstore: TieredMemoryStore) -> None:
    mstore.put(("m",), "tea", {"content": "green tea"})
    mstore.put(("m",), "car", {"content": "red sports car engine"})
    everything = mstore.search(("m",), query="green tea", limit=5)
    assert set(_keys(everything)) == {"tea", "car"}
    cut = (everything[0].score + everything[1].score) / 2  # type: ignore[operator]
    assert _keys(mstore.search(("m",), query="green tea", filter={"$min_score": cut})) == ["tea"]
    hits = mstore.search_memories(("m",), "green tea", min_score=cut)
    assert [h.entry.id for h in hits] == ["tea"]


def test_filters_combine_with_ranking(mstore: TieredMemoryStore) -> None:
    mstore.put(("m",), "a", {"content": "green tea", "kind": "drink", "importance": 0.2})
    mstore.put(("m",), "b", {"content": "green tea leaves", "kind": "plant", "importance": 1})
    mstore.put(("m",), "c", {"content": "green tea", "kind": "drink", "importance": 0.9})
    hits = mstore.search(("m",), query="green tea", filter={"kind": "drink"}, limit=5)
    assert _keys(hits) == ["c", "a"]


def test_scoping_never_returns_a_prefix_confusable_users_items(mstore: TieredMemoryStore) -> None:
    mstore.put(("users", "u1"), "mine", {"content": "green tea"})
    mstore.put(("users", "u10"), "theirs", {"content": "green tea"})
    mstore.put(("users", "u1", "deep"), "deeper", {"content": "green tea"})
    for mode in ("semantic", "keyword", "hybrid"):
        hits = mstore.search(("users", "u1"), query="green tea", filter={"$retrieval": mode})
        assert {h.namespace[1] for h in hits} == {"u1"}, mode
        assert set(_keys(hits)) == {"mine", "deeper"}, mode


def test_contextual_prefers_own_memories_and_keeps_shared_facts(
    mstore: TieredMemoryStore,
) -> None:
    mstore.put(("mem", "users", "u1"), "mine", {"content": "green tea"})
    mstore.put(("mem", "users", "u2"), "theirs", {"content": "green tea", "importance": 1.0})
    mstore.put(("mem", "shared"), "fact", {"content": "green tea", "memory_type": "fact"})
    mstore.put(("mem", "shared"), "story", {"content": "green tea"})  # an experience
    hits = mstore.search_memories(("mem",), "green tea", retrieval="contextual", user_id="u1")
    assert [h.entry.id for h in hits] == ["mine", "fact"]
    assert hits[0].breakdown.user == 1.0 and hits[1].breakdown.user == 0.0
    with pytest.raises(InvalidFilterError, match=r"\$user"):
        mstore.search(("mem",), query="green tea", filter={"$retrieval": "contextual"})


def test_keyword_mode_finds_exact_words_dense_misses(mstore: TieredMemoryStore) -> None:
    mstore.put(("m",), "a", {"content": "The invoice number is XK-4471."})
    mstore.put(("m",), "b", {"content": "Our invoices are paid monthly."})
    hits = mstore.search(("m",), query="XK-4471", filter={"$retrieval": "keyword"}, limit=1)
    assert _keys(hits) == ["a"]
    explained = mstore.search_memories(("m",), "XK-4471", retrieval="keyword", limit=1)
    assert explained[0].breakdown.keyword is not None and explained[0].breakdown.relevance == 1


def test_breakdown_adds_up_to_the_score(mstore: TieredMemoryStore) -> None:
    mstore.put(("m",), "a", {"content": "green tea", "importance": 0.7})
    (hit,) = mstore.search_memories(("m",), "green tea", limit=1)
    b, cfg = hit.breakdown, mstore.scoring
    total = (
        cfg.relevance_weight * b.relevance
        + cfg.importance_weight * b.importance
        + cfg.recency_weight * b.recency
        + cfg.access_weight * b.access
        + cfg.user_weight * b.user
        + cfg.time_weight * b.time
    )
    assert hit.score == pytest.approx(total) == pytest.approx(b.score)
    assert b.importance == 0.7 and 0 < b.relevance <= 1


def test_old_memories_do_not_underflow_to_ties(mstore: TieredMemoryStore, clock: Clock) -> None:
    mstore.put(("m",), "weak", {"content": "tea"})
    mstore.put(("m",), "strong", {"content": "green tea ceremony"})
    clock.now += 3_650 * DAY  # ten years later
    hits = mstore.search(("m",), query="green tea ceremony", limit=2)
    assert _keys(hits) == ["strong", "weak"]
    assert hits[0].score > hits[1].score > 0  # type: ignore[operator]


def test_search_options_need_memory_scoring(
    make_store: Callable[..., TieredMemoryStore],
) -> None:
    store = make_store("long")  # similarity scoring
    with pytest.raises(InvalidFilterError, match="memory"):
        store.search(("m",), query="x", filter={"$retrieval": "keyword"})
    with pytest.raises(InvalidFilterError, match=r"\$nope"):
        make_store("long", scoring=None).search(("m",), query="x", filter={"$nope": 1})


def test_keyword_index_survives_reopen_and_is_rebuilt_when_missing(
    make_store: Callable[..., TieredMemoryStore], clock: Clock, tmp_path: Any
) -> None:
    index = {"dims": DIMS, "embed": HashingEmbeddings(DIMS), "fields": ["content"]}
    path = str(tmp_path / "kw")
    store = make_store("long", scoring=None, clock=clock, index=index, chroma_path=path)
    store.put(("m",), "a", {"content": "invoice XK-4471"})
    store.search(("m",), query="XK-4471")
    store.close()
    again = make_store("long", scoring=None, clock=clock, index=index, chroma_path=path)
    hits = again.search(("m",), query="XK-4471", filter={"$retrieval": "keyword"})
    assert _keys(hits) == ["a"]
    entry = again.get_memory(("m",), "a")
    assert entry is not None and entry.access_count == 2


def test_recency_runs_from_occurred_at_or_from_last_access(
    make_store: Callable[..., TieredMemoryStore], clock: Clock
) -> None:
    index = {"dims": DIMS, "embed": HashingEmbeddings(DIMS), "fields": ["content"]}
    base = {"context_keys": False, "access_weight": 0.0}  # isolate recency
    by_event = make_store("long", scoring=base, clock=clock, index=index, key_prefix="ev1")
    by_access = make_store(
        "long",
        scoring={**base, "recency_from": "last_access"},
        clock=clock,
        index=index,
        key_prefix="ev2",
    )
    clock.now = datetime(2023, 6, 1, tzinfo=timezone.utc).timestamp()
    for store in (by_event, by_access):
        store.put(("m",), "trip2019", {"content": "trip to Rome", "occurred_at": "2019-05-01"})
        store.put(("m",), "trip2023", {"content": "trip to Rome", "occurred_at": "2023-05-01"})
    clock.now += 20 * DAY
    for store in (by_event, by_access):
        store.get(("m",), "trip2019")  # the old trip was just looked at
    clock.now += 1
    hits = by_event.search(("m",), query="trip to Rome", limit=2)
    assert _keys(hits) == ["trip2023", "trip2019"]
    hits = by_access.search(("m",), query="trip to Rome", limit=2)
    assert _keys(hits) == ["trip2019", "trip2023"]


def test_reinforcement_clamps_importance_and_keeps_the_stats(mstore: TieredMemoryStore) -> None:
    mstore.put(("m",), "a", {"content": "green tea", "importance": 0.7, "tag": "x"})
    mstore.search(("m",), query="green tea")
    assert mstore.update_importance(("m",), "a", 0.2) == pytest.approx(0.9)
    assert mstore.update_importance(("m",), "a", 0.5) == 1.0
    assert mstore.update_importance(("m",), "a", -2) == 0.0
    entry = mstore.get_memory(("m",), "a")
    assert entry is not None and entry.importance == 0.0 and entry.access_count == 1
    assert entry.metadata == {"tag": "x"}
    assert mstore.update_importance(("m",), "missing", 0.1) is None
    with pytest.raises(ValueError, match="delta"):
        mstore.update_importance(("m",), "a", float("nan"))


def test_garbage_collection_dry_run_then_real_run(mstore: TieredMemoryStore, clock: Clock) -> None:
    from langgraph_tiered_memory.ranking.forgetting import GARBAGE_COLLECT_POLICY

    mstore.put(("g", "a"), "trivial", {"content": "invoice XK-1 is trivial", "importance": 0.1})
    mstore.put(("g", "a"), "old", {"content": "invoice XK-2 from long ago"})
    mstore.put(("g", "b"), "pinned", {"content": "invoice XK-3", "importance": 0.0, "pinned": True})
    clock.now += 100 * DAY
    mstore.put(("g", "b"), "fresh", {"content": "invoice XK-4 is fresh", "importance": 0.9})
    seen: list[int] = []
    report = garbage_collect(mstore, ("g",), progress=seen.append, page_size=2)
    assert report["dry_run"] is True and report["scanned"] == 4 and sum(seen) == 4
    assert {d["id"] for d in report["details"]} == {"trivial", "old"}
    assert report["forgotten_count"] == 2
    reasons = {d["id"]: d["reason"] for d in report["details"]}
    assert "importance 0.1" in reasons["trivial"] or "decay" in reasons["trivial"]
    assert mstore.get_memory(("g", "a"), "old") is not None  # dry run deleted nothing
    real = garbage_collect(mstore, ("g",), dry_run=False)
    assert real["forgotten_count"] == 2 and real["details"] == report["details"]
    assert mstore.get(("g", "a"), "old") is None and mstore.get_memory(("g", "a"), "old") is None
    hits = mstore.search(("g",), query="XK-2", filter={"$retrieval": "keyword"})
    assert "old" not in [h.key for h in hits]  # gone from the keyword index too
    assert mstore.get(("g", "b"), "pinned") is not None
    preset = garbage_collect(mstore, ("g",), policy=GARBAGE_COLLECT_POLICY)
    assert {d["id"] for d in preset["details"]} == set()  # fresh is young and important


def test_consolidation_merges_near_duplicates_and_keeps_provenance(
    mstore: TieredMemoryStore,
) -> None:
    mstore.put(("c",), "a", {"content": "Ana lives in Porto. She has a cat.", "importance": 0.4})
    mstore.put(("c",), "b", {"content": "Ana lives in Porto.", "importance": 0.8})
    mstore.put(("c",), "x", {"content": "The invoice XK-9 was paid on Monday."})
    plan = consolidate(mstore, ("c",), threshold=0.85, dry_run=True)
    assert [sorted(r["sources"]) for r in plan] == [["a", "b"]]
    assert mstore.get_memory(("c",), "a") is not None  # dry run writes nothing
    (record,) = consolidate(mstore, ("c",), threshold=0.85)
    merged = mstore.get_memory(("c",), record["key"])
    assert merged is not None and merged.importance == 0.8
    assert merged.content == "Ana lives in Porto. She has a cat."
    assert sorted(merged.metadata["consolidated_from"]) == ["a", "b"]
    assert merged.metadata["source_count"] == 2
    assert mstore.get_memory(("c",), "a") is None and mstore.get_memory(("c",), "b") is None
    assert mstore.get_memory(("c",), "x") is not None


def test_consolidation_can_downweight_originals_and_use_a_model(
    mstore: TieredMemoryStore,
) -> None:
    from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
    from langchain_core.messages import AIMessage

    mstore.put(("d",), "a", {"content": "Ben likes green tea.", "importance": 0.6})
    mstore.put(("d",), "b", {"content": "Ben likes green tea a lot.", "importance": 0.2})
    model = FakeMessagesListChatModel(responses=[AIMessage(content="Ben loves green tea.")])
    (record,) = consolidate(mstore, ("d",), threshold=0.7, model=model, originals="downweight")
    assert record["content"] == "Ben loves green tea."
    assert mstore.get_memory(("d",), record["key"]).importance == 0.6  # type: ignore[union-attr]
    kept = mstore.get_memory(("d",), "a")
    assert kept is not None and kept.importance == 0.3
    assert kept.metadata["consolidated_into"] == record["key"]
    with pytest.raises(ValueError, match="originals"):
        consolidate(mstore, ("d",), originals="archive")


def test_promotion_copies_worthy_short_term_items_to_long_term(
    make_store: Callable[..., TieredMemoryStore], clock: Clock
) -> None:
    index = {"dims": DIMS, "embed": HashingEmbeddings(DIMS), "fields": ["content"]}
    store = make_store(scoring=None, clock=clock, index=index)  # default routing
    store.put(("short_term", "s1"), "pref", {"content": "likes jazz", "importance": 0.9}, ttl=5)
    store.put(("short_term", "s1"), "again", {"content": "lives in Porto", "mentions": 2}, ttl=5)
    store.put(("short_term", "s1"), "noise", {"content": "ok thanks"}, ttl=5)
    promoted = promote(store, ("short_term",), page_size=2)
    assert sorted(k for _, k in promoted) == ["again", "pref"]
    assert {ns for ns, _ in promoted} == {("users", "s1", "memories")}  # the user's own
    entry = store.get_memory(("users", "s1", "memories"), "pref")
    assert entry is not None and entry.content == "likes jazz"
    assert store.get(("short_term", "s1"), "pref") is not None  # copied, not moved
    moved = promote(
        store,
        ("short_term",),
        predicate=lambda item: item.key == "noise",
        target=lambda ns: ("archive", *ns[1:]),
        delete=True,
        page_size=1,
    )
    assert moved == [(("archive", "s1"), "noise")]
    assert store.get(("short_term", "s1"), "noise") is None
    with pytest.raises(ConfigurationError, match="short-term"):
        promote(store, ("short_term",), target=lambda ns: ns)


def test_clock_may_return_numpy_numbers_but_not_text(
    make_store: Callable[..., TieredMemoryStore],
) -> None:
    import numpy as np

    index = {"dims": DIMS, "embed": HashingEmbeddings(DIMS), "fields": ["content"]}
    store = make_store("long", scoring=None, index=index, clock=lambda: np.float64(1.7e9))
    store.put(("m",), "a", {"content": "green tea"})
    assert store.get(("m",), "a").created_at.timestamp() == 1.7e9  # type: ignore[union-attr]
    assert store.get_memory(("m",), "a") is not None
    bad = make_store("long", scoring=None, index=index, clock=lambda: "noon")
    with pytest.raises(ConfigurationError, match="epoch seconds"):
        bad.put(("m",), "a", {"content": "green tea"})


def test_consolidation_with_e5_merges_a_rephrasing_but_not_different_facts(tmp_path: Any) -> None:
    """Raw e5 vectors rank; consolidation compares them in the threshold space.

    Compared raw, "My sister lives in Porto" and "My brother lives in Lisbon" score 0.91
    and the default threshold (0.9) would merge them; a theme's query scores at least
    0.7 against every memory there.
    """
    index: Any = {"dims": 384, "embed": "local", "fields": ["content"]}
    store = TieredMemoryStore(
        chroma_path=str(tmp_path / "chroma"), tiers={"default": "long"}, index=index
    )
    try:
        for key, text in (
            ("a", "Dana plays the cello."),
            ("b", "Dana plays the cello!"),
            ("s", "My sister lives in Porto"),
            ("t", "My brother lives in Lisbon"),
            ("x", "The boiler was serviced in May."),
        ):
            store.put(("u",), key, {"content": text})
        plan = consolidate(store, ("u",), dry_run=True)
        assert [sorted(r["sources"]) for r in plan] == [["a", "b"]]
        # The default min_similarity finds a theme's memories, and only them.
        themed = consolidate(store, ("u",), query="where my family lives", dry_run=True)
        assert [sorted(r["sources"]) for r in themed] == [["s", "t"]]
    finally:
        store.close()
