"""The retrieval-mode table and the pure selection steps of memory search."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, get_args

import pytest

from langgraph_tiered_memory.errors import InvalidFilterError
from langgraph_tiered_memory.ranking.modes import MODES, RetrievalMode, mode_spec
from langgraph_tiered_memory.ranking.scoring import RETRIEVAL_MODES, ScoreBreakdown, Scoring, fuse
from langgraph_tiered_memory.ranking.select import (
    ChannelHits,
    CutCandidate,
    DenseHit,
    KeywordHit,
    best_first,
    cut_channels,
    memory_candidates,
    needs_larger_pool,
    recency_origin,
    search_mode,
    top_n,
    user_scope_for,
    visible,
)


@dataclass
class Stats:
    seq: int = 0
    memory_type: str = "experience"
    importance: float = 0.5
    occurred_at: float | None = None
    created_at: float = 100.0
    access_count: int = 0
    last_accessed: float | None = None


@dataclass
class Item:
    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any] = field(default_factory=dict)
    created_at: float = 50.0


@dataclass
class Cand:
    item: Item
    semantic: float | None = None
    keyword: float | None = None
    own: float | None = None
    context: float | None = None
    stats: Stats | None = None
    graph: float | None = None


def test_every_mode_has_one_row_and_the_literal_is_declared_once() -> None:
    assert set(MODES) == set(RETRIEVAL_MODES) == set(get_args(RetrievalMode))
    with pytest.raises(ValueError, match="Unknown retrieval mode"):
        mode_spec("fuzzy")


@pytest.mark.parametrize("mode", RETRIEVAL_MODES)
@pytest.mark.parametrize("indexed", [True, False])
def test_the_table_keeps_the_rules_of_each_mode(mode: str, indexed: bool) -> None:
    spec = mode_spec(mode)
    # The rules the store used to spell out as string comparisons.
    assert spec.keyword_only(indexed) == (
        mode == "keyword" or (mode == "contextual" and not indexed)
    )
    assert (not indexed and spec.lists_without_index) == (
        not indexed and mode in ("hybrid", "semantic")
    )
    assert spec.dense == (mode != "keyword")
    assert spec.keyword == (mode != "semantic")
    assert spec.user_scoped == (mode == "contextual")
    assert spec.pool_factor == (2 if mode == "contextual" else 1)


def test_contextual_fuses_like_hybrid() -> None:
    from langgraph_tiered_memory.ranking.scoring import MemoryCandidate

    cands = [
        MemoryCandidate(semantic=0.9, keyword=None, importance=0.5, last_touched=0, access_count=0),
        MemoryCandidate(semantic=0.2, keyword=3.0, importance=0.5, last_touched=0, access_count=0),
    ]
    assert fuse(cands, Scoring(), "contextual") == fuse(cands, Scoring(), "hybrid")
    assert fuse(cands, Scoring(), "keyword") != fuse(cands, Scoring(), "hybrid")


def test_the_search_option_overrides_the_store_mode() -> None:
    assert search_mode({}, Scoring(retrieval="keyword")) is MODES["keyword"]
    assert search_mode({"$retrieval": "semantic"}, Scoring()) is MODES["semantic"]


def test_user_scope_is_required_only_by_user_scoped_modes_in_memory_mode() -> None:
    ctx = {"$retrieval": "contextual"}
    with pytest.raises(InvalidFilterError, match="user id"):
        user_scope_for(ctx, Scoring(), memory_mode=True)
    assert user_scope_for(ctx, Scoring(), memory_mode=False) is None
    assert user_scope_for({}, Scoring(), memory_mode=True) is None
    scope = user_scope_for({"$user": "u1"}, Scoring(user_label="people"), memory_mode=True)
    assert scope is not None and (scope.user, scope.label) == ("u1", "people")


def test_recency_runs_from_the_event_time_or_the_last_access() -> None:
    assert recency_origin(None, 7.0, "occurred_at") == 7.0
    assert recency_origin(Stats(occurred_at=3.0), 7.0, "occurred_at") == 3.0
    assert recency_origin(Stats(), 7.0, "occurred_at") == 100.0
    assert recency_origin(Stats(last_accessed=9.0), 7.0, "last_access") == 9.0
    assert recency_origin(Stats(), 7.0, "last_access") == 100.0


def test_visible_uses_the_indexed_memory_type_before_the_value() -> None:
    scope = user_scope_for({"$user": "u1"}, Scoring(), memory_mode=True)
    mine = Cand(Item(("users", "u1", "m"), "a"))
    theirs = Cand(Item(("users", "u2", "m"), "b"))
    shared_by_index = Cand(
        Item(("kb",), "c", {"memory_type": "experience"}), stats=Stats(memory_type="fact")
    )
    shared_by_value = Cand(Item(("kb",), "d", {"memory_type": "skill"}))
    private = Cand(Item(("kb",), "e", {}))
    found = [mine, theirs, shared_by_index, shared_by_value, private]
    assert visible(found, scope) == [mine, shared_by_index, shared_by_value]
    assert visible(found, None) == found


def test_a_larger_pool_is_needed_only_when_a_full_channel_lost_candidates() -> None:
    found = [Cand(Item(("a",), str(i)), semantic=0.5) for i in range(4)]
    assert needs_larger_pool(found, found[:2], pool=4, want=4)
    assert not needs_larger_pool(found, found, pool=4, want=4)
    assert not needs_larger_pool(found, found[:2], pool=5, want=4)  # channel not full
    own_only = [Cand(Item(("a",), str(i)), own=0.5) for i in range(4)]
    assert needs_larger_pool(own_only, own_only[:1], pool=4, want=2)


def test_candidates_carry_stats_channels_and_ownership() -> None:
    kept = [
        Cand(
            Item(("users", "u1"), "a"),
            semantic=0.8,
            own=0.7,
            context=0.6,
            stats=Stats(seq=4, importance=0.9, access_count=2, occurred_at=5.0),
        ),
        Cand(Item(("kb",), "b", created_at=11.0), keyword=2.0),
    ]
    a, b = memory_candidates(kept, recency_from="occurred_at", owns=lambda ns: ns[:1] == ("users",))
    assert (a.semantic, a.own_semantic, a.context_semantic) == (0.8, 0.7, 0.6)
    assert (a.importance, a.access_count, a.seq, a.last_touched, a.own) == (0.9, 2, 4, 5.0, True)
    assert (b.keyword, b.importance, b.seq, b.last_touched, b.own) == (2.0, 0.5, None, 11.0, False)
    assert b.namespace == ("kb",)
    assert not memory_candidates(kept, recency_from="occurred_at")[0].own


def _bd(score: float) -> ScoreBreakdown:
    return ScoreBreakdown(score, 0, None, None, 0, 0, 0, 0)


def test_top_n_orders_by_score_then_namespace_then_key() -> None:
    kept = [
        Cand(Item(("b",), "k")),
        Cand(Item(("a",), "z")),
        Cand(Item(("a",), "y")),
        Cand(Item(("c",), "k")),
    ]
    ranked = [(0, _bd(0.5)), (1, _bd(0.5)), (2, _bd(0.5)), (3, _bd(0.9))]
    assert [i for i, _ in top_n(ranked, kept, 3)] == [3, 2, 1]


def test_best_first_puts_scored_hits_before_unscored_ones_in_their_order() -> None:
    hits = [
        (Item(("b",), "1"), None),
        (Item(("a",), "2"), 0.4),
        (Item(("b",), "0"), 0.4),
        (Item(("a",), "3"), None),
        (Item(("c",), "4"), 0.9),
    ]
    out = best_first(hits, lambda h: h[1], lambda h: h[0])
    assert [h[0].key for h in out] == ["4", "2", "0", "1", "3"]


def _keys(cut: list[CutCandidate[Item]]) -> list[tuple[tuple[str, ...], str]]:
    return [(c.item.namespace, c.item.key) for c in cut]


def test_cut_keeps_the_best_of_each_dense_column_ties_by_namespace_then_key() -> None:
    # Pooled from two namespaces in no order; equal scores tie on (namespace, key).
    b_k = DenseHit(Item(("b",), "k"), 0.5, None, None)
    a_z = DenseHit(Item(("a",), "z"), 0.5, 0.1, 0.4)
    a_y = DenseHit(Item(("a",), "y"), 0.5, None, None)
    c_k = DenseHit(Item(("c",), "k"), 0.9, None, None)
    # Weak overall, but the best own-vector match: the own column keeps it.
    d_o = DenseHit(Item(("d",), "o"), 0.2, 0.3, None)
    cut = cut_channels(ChannelHits([b_k, a_z, a_y, c_k, d_o], []), 3)
    assert _keys(cut) == [(("c",), "k"), (("a",), "y"), (("a",), "z"), (("d",), "o")]
    assert cut[2] == CutCandidate(a_z.item, 0.5, None, 0.1, 0.4)
    assert cut[3] == CutCandidate(d_o.item, 0.2, None, 0.3, None)
    # The own column ranks only hits with an own-vector score, by it.
    assert _keys(cut_channels(ChannelHits([b_k, a_z, d_o], []), 1)) == [
        (("a",), "z"),
        (("d",), "o"),
    ]


def test_cut_merges_keyword_hits_into_dense_ones_and_appends_the_rest() -> None:
    x = Item(("b",), "x")
    dense = [DenseHit(x, 0.8, 0.8, None), DenseHit(Item(("b",), "w"), 0.7, None, None)]
    keyword = [
        KeywordHit(Item(("b",), "y"), 2.0),
        KeywordHit(Item(("a",), "z"), 2.0),
        KeywordHit(x, 1.0),
        KeywordHit(Item(("a",), "low"), 0.5),  # cut: fourth best of limit 3
    ]
    cut = cut_channels(ChannelHits(dense, keyword), 3)
    assert _keys(cut) == [(("b",), "x"), (("b",), "w"), (("a",), "z"), (("b",), "y")]
    assert cut[0] == CutCandidate(x, 0.8, 1.0, 0.8, None)
    assert cut[1].keyword is None
    assert cut[2] == CutCandidate(Item(("a",), "z"), None, 2.0, None, None)
    assert cut_channels(ChannelHits([], []), 5) == []
