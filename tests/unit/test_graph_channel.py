"""The knowledge-graph retrieval channel: its scores, its cut and its place in the fusion."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import pytest

from langgraph_tiered_memory.errors import ConfigurationError
from langgraph_tiered_memory.graph.types import GraphHit, TripleRecord
from langgraph_tiered_memory.ranking.scoring import MemoryCandidate, Scoring, fuse, rank_memories
from langgraph_tiered_memory.ranking.select import (
    CHANNELS,
    ChannelHits,
    CutCandidate,
    DenseHit,
    GraphListHit,
    KeywordHit,
    cut_channels,
    graph_scores,
    memory_candidates,
    needs_larger_pool,
)

NS = ("users", "u1")


@dataclass(frozen=True)
class Item:
    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    created_at: float = 50.0


def _cand(**kw: Any) -> MemoryCandidate:
    base: dict[str, Any] = {
        "semantic": None,
        "keyword": None,
        "importance": 0.5,
        "last_touched": 0.0,
        "access_count": 0,
    }
    base.update(kw)
    return MemoryCandidate(**base)


def _pool() -> list[MemoryCandidate]:
    return [
        _cand(semantic=0.9, own_semantic=0.9, keyword=3.0, namespace=NS, seq=1),
        _cand(semantic=0.7, own_semantic=0.7, namespace=NS, seq=2),
        _cand(keyword=5.0, namespace=NS, seq=7),
        _cand(semantic=0.2, own_semantic=0.2, keyword=1.0, namespace=NS, seq=9),
    ]


def _with_graph(cands: list[MemoryCandidate], graph: list[float | None]) -> list[MemoryCandidate]:
    return [
        MemoryCandidate(**{**{f: getattr(c, f) for f in c.__slots__}, "graph": g})  # type: ignore[attr-defined]
        for c, g in zip(cands, graph, strict=True)
    ]


# ----------------------------------------------------------------------------- fusion


def test_weight_zero_or_no_graph_hit_ranks_bit_for_bit_as_without_the_channel() -> None:
    plain = _pool()
    graphed = _with_graph(plain, [None, 2.0, 1.0, None])
    base = rank_memories(plain, scoring=Scoring(), retrieval="hybrid", now=0.0)
    off = rank_memories(graphed, scoring=Scoring(graph_weight=0.0), retrieval="hybrid", now=0.0)
    assert off == base  # same order, same floats, graph_rank None
    assert all(b.graph_rank is None for _, b in off)
    # Weight > 0 but the graph reached nothing: the normalisation is unchanged too.
    empty = rank_memories(plain, scoring=Scoring(graph_weight=1.0), retrieval="hybrid", now=0.0)
    assert [(i, b.score, b.relevance) for i, b in empty] == [
        (i, b.score, b.relevance) for i, b in base
    ]


def test_the_graph_list_adds_weight_over_rrf_k_plus_its_rank() -> None:
    scoring = Scoring(graph_weight=0.8, neighbor_weight=0.0)
    plain = _pool()
    graphed = _with_graph(plain, [None, 2.0, 3.0, None])
    before = [rel for rel, _, _ in fuse(plain, scoring, "hybrid")]
    after = [rel for rel, _, _ in fuse(graphed, scoring, "hybrid")]
    k = scoring.rrf_k
    # No index keys: the one dense list carries the whole dense weight.
    dense = scoring.semantic_weight + scoring.context_weight
    old_top = (dense + scoring.keyword_weight) / (k + 1)
    new_top = (dense + scoring.keyword_weight + 0.8) / (k + 1)
    # Candidate 2 is first in the graph list, candidate 1 second; 0 and 3 are absent.
    assert after[2] == pytest.approx((before[2] * old_top + 0.8 / (k + 1)) / new_top)
    assert after[1] == pytest.approx((before[1] * old_top + 0.8 / (k + 2)) / new_top)
    assert after[0] == pytest.approx(before[0] * old_top / new_top)
    assert after[3] == pytest.approx(before[3] * old_top / new_top)


def test_breakdown_shows_the_graph_rank_and_relevance_stays_within_one() -> None:
    # One memory first in every list, with a neighbour first everywhere too.
    cands = [
        _cand(semantic=0.9, own_semantic=0.9, keyword=4.0, graph=3.0, namespace=NS, seq=1),
        _cand(semantic=0.9, own_semantic=0.9, keyword=4.0, graph=3.0, namespace=NS, seq=2),
        _cand(semantic=0.1, own_semantic=0.1, graph=1.0, namespace=NS, seq=5),
        _cand(keyword=1.0, namespace=NS, seq=8),
    ]
    scoring = Scoring(graph_weight=1.0)
    ranked = dict(rank_memories(cands, scoring=scoring, retrieval="hybrid", now=0))
    assert [ranked[i].graph_rank for i in range(4)] == [1, 1, 3, None]
    assert all(0.0 <= b.relevance <= 1.0 for b in ranked.values())
    solo = [
        _cand(semantic=0.9, own_semantic=0.9, keyword=4.0, graph=3.0, namespace=NS, seq=1),
        _cand(semantic=0.8, own_semantic=0.8, keyword=3.0, graph=2.0, namespace=NS, seq=2),
    ]
    rel = [r for r, _, _ in fuse(solo, Scoring(graph_weight=1.0, neighbor_weight=0.0), "hybrid")]
    assert rel[0] == pytest.approx(1.0)


def test_memories_tied_in_the_graph_list_share_their_mean_position() -> None:
    # Three memories tie first in the graph list, one comes fourth; no other list.
    cands = _with_graph([_cand(namespace=NS, seq=s) for s in (1, 3, 5, 7)], [2.0, 2.0, 2.0, 1.0])
    scoring = Scoring(graph_weight=1.0, neighbor_weight=0.0)
    k = scoring.rrf_k
    dense = scoring.semantic_weight + scoring.context_weight  # one dense list: no index keys
    top = (dense + scoring.keyword_weight + 1.0) / (k + 1)
    rel = [r for r, _, _ in fuse(cands, scoring, "hybrid")]
    assert rel[:3] == [pytest.approx(1.0 / (k + 2) / top)] * 3  # positions 1-3: mean 2
    assert rel[3] == pytest.approx(1.0 / (k + 4) / top)
    ranked = dict(rank_memories(cands, scoring=scoring, retrieval="hybrid", now=0))
    assert [ranked[i].graph_rank for i in range(4)] == [1, 1, 1, 4]


def test_a_memory_only_the_graph_found_can_outrank_a_weak_dense_hit() -> None:
    cands = [
        _cand(semantic=0.3, own_semantic=0.3, namespace=NS, seq=1),
        _cand(semantic=0.2, own_semantic=0.2, namespace=NS, seq=4),
        _cand(graph=1.0, namespace=NS, seq=9),
    ]
    off = rank_memories(cands, scoring=Scoring(), retrieval="hybrid", now=0.0)
    on = rank_memories(cands, scoring=Scoring(graph_weight=1.0), retrieval="hybrid", now=0.0)
    assert [i for i, _ in off][-1] == 2  # relevance 0 without the channel
    assert [i for i, _ in on][:2] == [0, 2]


@pytest.mark.parametrize("mode", ["semantic", "keyword"])
def test_other_fusions_ignore_the_graph_list(mode: str) -> None:
    plain = _pool()
    graphed = _with_graph(plain, [3.0, 2.0, 1.0, 0.5])
    scoring = Scoring(graph_weight=2.0)
    assert fuse(graphed, scoring, mode) == fuse(plain, scoring, mode)
    ranked = rank_memories(graphed, scoring=scoring, retrieval=mode, now=0.0)
    assert ranked == rank_memories(plain, scoring=scoring, retrieval=mode, now=0.0)
    assert all(b.graph_rank is None for _, b in ranked)


def test_contextual_fuses_the_graph_list_like_hybrid() -> None:
    graphed = _with_graph(_pool(), [None, 2.0, 1.0, None])
    scoring = Scoring(graph_weight=1.0)
    assert fuse(graphed, scoring, "contextual") == fuse(graphed, scoring, "hybrid")


# ----------------------------------------------------------------------------- config


def test_scoring_defaults_and_validation_of_the_graph_keys() -> None:
    s = Scoring.from_config({"graph_weight": 0.5, "graph_hops": 0})
    assert (s.graph_weight, s.graph_hops) == (0.5, 0)
    assert Scoring().graph_hops == 1
    with pytest.raises(ConfigurationError, match="graph_weight must be >= 0"):
        Scoring.from_config({"graph_weight": -1})
    with pytest.raises(ConfigurationError, match="graph_weight must be a finite number"):
        Scoring.from_config({"graph_weight": math.inf})
    for bad in (2, -1, True, "1", 0.5):
        with pytest.raises(ConfigurationError, match="graph_hops must be 0 .* or 1"):
            Scoring.from_config({"graph_hops": bad})


# ----------------------------------------------------------------------------- scores


def _hit(key: str, entity: str, hops: int, s: str, r: str, o: str) -> GraphHit:
    rec = TripleRecord(s, r, o, NS, "u1", (key,))
    return GraphHit(NS, key, hops, entity, rec)


def test_graph_scores_prefer_direct_triples_specific_entities_and_query_words() -> None:
    hits = [
        _hit("direct", "tomas", 0, "tomas", "paints", "sunsets"),
        _hit("hop", "tomas", 1, "sunsets", "seen_from", "the lake"),
        _hit("worded", "anna", 0, "anna", "adopted", "a dog"),
        _hit("plain", "anna", 0, "anna", "visited", "rome"),
    ]
    scores = graph_scores(hits, ["tomas", "anna", "dog"])
    # "dog" is the one query term beyond the entities: the triple holding it doubles.
    assert scores[(NS, "worded")] == pytest.approx(2 / (1 + math.log(2)))
    assert scores[(NS, "direct")] == pytest.approx(1.0)  # tomas names one memory
    assert scores[(NS, "hop")] == pytest.approx(0.5)
    # A bare mention by an entity several memories mention adds nothing to keyword
    # search (the name is in the text): such a memory is left out of the list.
    assert (NS, "plain") not in scores
    # An entity whose own triples name many memories is worth less per memory.
    common = [_hit(f"m{i}", "caroline", 0, "caroline", "said", f"dog {i}") for i in range(9)]
    rare = [_hit("r", "adoption agency", 0, "caroline", "contacted", "adoption agency")]
    both = graph_scores(common + rare, ["dog"])
    assert both[(NS, "r")] == pytest.approx(1.0)
    assert both[(NS, "m0")] == pytest.approx(2 / (1 + math.log(9)))


def test_a_memory_reached_from_several_query_entities_scores_their_sum() -> None:
    hits = [
        _hit("both", "anna", 0, "anna", "met", "bob"),
        _hit("both", "bob", 0, "anna", "met", "bob"),
        _hit("one", "anna", 0, "anna", "likes", "tea"),
        _hit("one", "anna", 1, "tea", "grown_in", "assam"),  # anna's best hit counts once
    ]
    scores = graph_scores(hits, [])
    n_anna = 2  # memories whose own triples name anna
    assert scores[(NS, "one")] == pytest.approx(1 / (1 + math.log(n_anna)))
    assert scores[(NS, "both")] == pytest.approx(1 / (1 + math.log(n_anna)) + 1.0)


# ----------------------------------------------------------------------------- selection


def test_cut_channels_cuts_the_graph_list_and_merges_it_by_item() -> None:
    a, b, c, d = (Item(NS, k) for k in "abcd")
    hits = ChannelHits(
        [DenseHit(a, 0.9, 0.9, None)],
        [KeywordHit(b, 2.0)],
        [GraphListHit(d, 0.5), GraphListHit(a, 3.0), GraphListHit(c, 1.0)],
    )
    cut = cut_channels(hits, 2)
    assert cut == [
        CutCandidate(a, 0.9, None, 0.9, None, 3.0),
        CutCandidate(b, None, 2.0, None, None),
        CutCandidate(c, None, None, None, None, 1.0),
    ]
    # Existing callers: two lists, no graph field set.
    assert ChannelHits([], []).graph == ()
    assert cut_channels(ChannelHits([DenseHit(a, 0.9, None, None)], []), 5)[0].graph is None


@dataclass
class _Cand:
    item: Item
    semantic: float | None = None
    keyword: float | None = None
    own: float | None = None
    context: float | None = None
    stats: Any = None
    graph: float | None = None


def test_candidates_carry_the_graph_score_and_a_full_graph_list_can_grow_the_pool() -> None:
    kept = [_cand_item("a", graph=2.5), _cand_item("b")]
    cands = memory_candidates(kept, recency_from="occurred_at")
    assert [c.graph for c in cands] == [2.5, None]
    assert "graph" in CHANNELS
    found = [_cand_item(str(i), graph=1.0) for i in range(4)]
    assert needs_larger_pool(found, found[:1], pool=4, want=2)
    assert not needs_larger_pool(found, found[:2], pool=4, want=2)


def _cand_item(key: str, **kw: Any) -> _Cand:
    return _Cand(Item(NS, key), **kw)


def test_query_words_meet_triple_words_as_the_keyword_index_stems_them() -> None:
    from langgraph_tiered_memory.ranking.scoring import index_terms

    assert index_terms("camping trips") & index_terms("camped") == {"camp"}
    hits = [
        _hit("camp", "melanie", 0, "melanie", "camped_at", "the beach"),
        _hit("paint", "melanie", 0, "melanie", "painted", "a sunrise"),
        _hit("pottery", "melanie", 0, "melanie", "likes", "painting pottery"),
    ]
    scores = graph_scores(hits, ["melanie", "camping", "paint"])
    assert scores[(NS, "camp")] == pytest.approx(1.5 / (1 + math.log(3)))
    assert scores[(NS, "paint")] == scores[(NS, "camp")] == scores[(NS, "pottery")]


def test_a_hop_onto_a_query_entitys_own_triple_is_not_counted_twice() -> None:
    # "melanie's kid" reaches melanie's own triple over one hop (via has_kid): that
    # triple is melanie's direct hit already, so it adds nothing for the kid.
    hits = [
        _hit("kids", "melanie's kid", 0, "melanie", "has_kid", "melanie's kid"),
        _hit("kids", "melanie", 0, "melanie", "has_kid", "melanie's kid"),
        _hit("music", "melanie", 0, "melanie", "likes", "live music"),
        _hit("music", "melanie's kid", 1, "melanie", "likes", "live music"),
    ]
    scores = graph_scores(hits, ["melanie", "kid", "music"])
    n = 2  # memories naming melanie; "kid" is an entity word, "music" the one term
    assert scores[(NS, "music")] == pytest.approx(2 / (1 + math.log(n)))
    assert scores[(NS, "kids")] == pytest.approx(1 / (1 + math.log(n)) + 1.0)
