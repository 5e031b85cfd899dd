"""Pure ranking functions: fusion, smoothing, recency, the weighted score."""

from __future__ import annotations

import math
import sqlite3

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from langgraph_tiered_memory.errors import ConfigurationError, InvalidFilterError
from langgraph_tiered_memory.ranking.scoring import (
    MemoryCandidate,
    Scoring,
    UserScope,
    fold,
    fuse,
    keyword_terms,
    rank_memories,
    recency,
    split_search_options,
    user_scope,
)
from langgraph_tiered_memory.ranking.terms import FTS_TOKENIZE

NOW = 1_700_000_000.0
DAY = 86_400.0

scores = st.one_of(st.none(), st.floats(min_value=-1, max_value=1, allow_nan=False))
candidate = st.builds(
    MemoryCandidate,
    semantic=scores,
    keyword=st.one_of(st.none(), st.floats(min_value=0, max_value=50, allow_nan=False)),
    importance=st.floats(min_value=0, max_value=1),
    last_touched=st.floats(min_value=0, max_value=NOW),
    access_count=st.integers(min_value=0, max_value=10_000),
    own_semantic=scores,
    context_semantic=scores,
    namespace=st.sampled_from([("a",), ("b",)]),
    seq=st.one_of(st.none(), st.integers(min_value=1, max_value=20)),
)


@given(st.lists(candidate, max_size=30), st.sampled_from(["semantic", "keyword", "hybrid"]))
def test_relevance_stays_in_unit_range(cands: list[MemoryCandidate], mode: str) -> None:
    for rel, _, _ in fuse(cands, Scoring(), mode):
        assert 0.0 <= rel <= 1.0 + 1e-9


@given(st.lists(candidate, min_size=1, max_size=30))
def test_scores_are_sorted_finite_and_add_up(cands: list[MemoryCandidate]) -> None:
    cfg = Scoring()
    ranked = rank_memories(cands, scoring=cfg, retrieval="hybrid", now=NOW)
    assert len(ranked) == len(cands)
    values = [b.score for _, b in ranked]
    assert values == sorted(values, reverse=True)
    for _, b in ranked:
        assert math.isfinite(b.score)
        assert b.score == pytest.approx(
            b.relevance
            + cfg.importance_weight * b.importance
            + cfg.recency_weight * b.recency
            + cfg.access_weight * b.access
        )


def _cand(**kw: object) -> MemoryCandidate:
    base: dict[str, object] = {
        "semantic": 0.8,
        "keyword": None,
        "importance": 0.5,
        "last_touched": NOW,
        "access_count": 0,
    }
    base.update(kw)
    return MemoryCandidate(**base)  # type: ignore[arg-type]


def test_equal_similarities_share_a_rank_so_other_factors_decide() -> None:
    cands = [_cand(importance=0.2), _cand(importance=0.9)]
    ranked = rank_memories(cands, scoring=Scoring(), retrieval="hybrid", now=NOW)
    assert [i for i, _ in ranked] == [1, 0]
    assert ranked[0][1].relevance == ranked[1][1].relevance


def test_recency_never_underflows_to_a_tie() -> None:
    old = recency(NOW - 10 * 365 * DAY, NOW, 30.0)
    older = recency(NOW - 11 * 365 * DAY, NOW, 30.0)
    assert 0.0 <= older < old < 1e-30
    assert recency(NOW + DAY, NOW, 30.0) == 1.0
    cands = [_cand(semantic=0.9, last_touched=0.0), _cand(semantic=0.5, last_touched=0.0)]
    ranked = rank_memories(cands, scoring=Scoring(), retrieval="semantic", now=NOW)
    assert [i for i, _ in ranked] == [0, 1] and ranked[0][1].score > ranked[1][1].score


def test_neighbour_smoothing_lifts_the_memory_after_a_strong_hit() -> None:
    ns = ("c",)
    cands = [
        _cand(semantic=0.9, keyword=5.0, namespace=ns, seq=1),
        _cand(semantic=0.5, namespace=ns, seq=2),  # the answer after the question
        _cand(semantic=0.5, namespace=ns, seq=9),  # as relevant, but alone
    ]
    fused = fuse(cands, Scoring(), "hybrid")
    assert fused[1][0] > fused[2][0]
    flat = fuse(cands, Scoring(neighbor_weight=0.0), "hybrid")
    assert flat[1][0] == pytest.approx(flat[2][0])


def test_neighbours_smooth_only_within_one_conversation() -> None:
    ns = ("c",)

    def fused_answer(gap_seconds: float | None, **scoring: float) -> float:
        cands = [
            _cand(semantic=0.9, keyword=5.0, namespace=ns, seq=1, event_at=NOW),
            _cand(
                semantic=0.5,
                namespace=ns,
                seq=2,
                event_at=None if gap_seconds is None else NOW + gap_seconds,
            ),
        ]
        return fuse(cands, Scoring(**scoring), "hybrid")[1][0]  # type: ignore[arg-type]

    alone = fused_answer(10 * DAY)  # days apart: no smoothing (same normalisation)
    assert fused_answer(0.0) > alone  # same moment: one conversation
    assert fused_answer(29 * 60.0) > alone
    assert fused_answer(31 * 60.0) == pytest.approx(alone)  # written one after the other, apart
    assert fused_answer(10 * DAY, neighbor_gap_minutes=11 * 24 * 60) > alone
    assert fused_answer(None) > alone  # an unknown time does not split


@given(gap=st.floats(min_value=0, max_value=1e7), limit=st.floats(min_value=0, max_value=1e5))
@settings(max_examples=50, deadline=None)
def test_a_neighbour_counts_exactly_when_it_happened_within_the_gap(
    gap: float, limit: float
) -> None:
    ns = ("c",)
    cands = [
        _cand(semantic=0.9, keyword=5.0, namespace=ns, seq=1, event_at=NOW),
        _cand(semantic=0.5, namespace=ns, seq=2, event_at=NOW + gap),
    ]
    smoothed = fuse(cands, Scoring(neighbor_gap_minutes=limit), "hybrid")[1][0]
    flat = fuse(cands, Scoring(neighbor_gap_minutes=limit, neighbor_weight=0.0), "hybrid")[1][0]
    # Smoothing leaves the normalisation alone: any lift shows.
    assert (smoothed > flat + 1e-12) == (abs((NOW + gap) - NOW) <= limit * 60.0)


def test_smoothing_reaches_the_turn_two_places_away() -> None:
    ns = ("c",)
    cands = [
        _cand(semantic=0.9, keyword=5.0, namespace=ns, seq=1),  # a question to the other
        _cand(semantic=0.2, namespace=ns, seq=2),  # their reply
        _cand(semantic=0.5, namespace=ns, seq=3),  # the asker's next turn
        _cand(semantic=0.5, namespace=ns, seq=9),  # as relevant, but alone
    ]
    reach2 = fuse(cands, Scoring(), "hybrid")
    assert Scoring().neighbor_reach == 2
    assert reach2[2][0] > reach2[3][0]
    # Reach 1 stops at the reply: moving the question far away changes nothing for seq 3.
    far = [_cand(semantic=0.9, keyword=5.0, namespace=ns, seq=40), *cands[1:]]
    for reach, moved in ((1, False), (2, True)):
        near_q = fuse(cands, Scoring(neighbor_reach=reach), "hybrid")[2][0]
        far_q = fuse(far, Scoring(neighbor_reach=reach), "hybrid")[2][0]
        assert (near_q != pytest.approx(far_q)) is moved


smoothing_cands = st.lists(
    st.builds(
        MemoryCandidate,
        semantic=scores,
        keyword=st.one_of(st.none(), st.floats(min_value=0, max_value=50, allow_nan=False)),
        importance=st.just(0.5),
        last_touched=st.just(NOW),
        access_count=st.just(0),
        namespace=st.sampled_from([("a",), ("b",)]),
        seq=st.one_of(st.none(), st.integers(min_value=1, max_value=12)),
        event_at=st.one_of(st.none(), st.sampled_from([NOW, NOW + 600.0, NOW + DAY])),
    ),
    max_size=20,
)


@given(
    cands=smoothing_cands,
    reach=st.integers(min_value=1, max_value=4),
    weight=st.sampled_from([0.0, 0.25, 0.4, 1.0, 3.0]),
)
@settings(max_examples=200, deadline=None)
def test_smoothing_lifts_toward_the_best_neighbour_at_each_distance(
    cands: list[MemoryCandidate], reach: int, weight: float
) -> None:
    """The rule written out independently: at each distance 1..reach, the better
    neighbour there, when stronger, adds weight x the difference; a neighbour counts
    only within the gap (30 minutes) or when either time is unknown; the result is
    capped at the higher of the memory's own score and its best neighbour's."""
    raw = [r for r, _, _ in fuse(cands, Scoring(neighbor_weight=0.0), "hybrid")]
    by_pos: dict[tuple[tuple[str, ...], int], int] = {}
    for i, c in enumerate(cands):
        if c.seq is not None:
            by_pos[(c.namespace, c.seq)] = i  # the last one at a position, as a dict keeps

    def neighbour(c: MemoryCandidate, seq: int) -> float:
        j = by_pos.get((c.namespace, seq))
        if j is None:
            return 0.0
        a, b = cands[j].event_at, c.event_at
        if a is not None and b is not None and abs(a - b) > 30 * 60.0:
            return 0.0
        return raw[j]

    expected = []
    for c, f in zip(cands, raw, strict=True):
        if c.seq is not None:
            best = [
                max(neighbour(c, c.seq - d), neighbour(c, c.seq + d)) for d in range(1, reach + 1)
            ]
            lifted = f + weight * sum(max(0.0, b - f) for b in best)
            f = min(lifted, max([f, *best]))
        expected.append(f)
    got = [
        r
        for r, _, _ in fuse(cands, Scoring(neighbor_weight=weight, neighbor_reach=reach), "hybrid")
    ]
    assert got == pytest.approx(expected, abs=1e-12)
    # Nothing passes the memory that lifts it, so the best-fused memory keeps its score
    # and stays first; nothing falls.
    assert all(g >= f - 1e-12 for g, f in zip(got, raw, strict=True))
    if raw:
        assert max(got) == pytest.approx(max(raw), abs=1e-12)
        assert all(0.0 <= r <= 1.0 + 1e-9 for r in got)


def test_smoothing_never_puts_a_neighbour_above_an_exact_match() -> None:
    # Three memories that match the query in every list (a small namespace): the one
    # ranked first everywhere stays first, wherever it sits in write order.
    ns = ("u",)
    for pos in range(3):
        cands = [
            _cand(
                semantic=1.0 if i == pos else 0.1 * (i + 1),
                keyword=9.0 if i == pos else 1.0 + i,
                namespace=ns,
                seq=i + 1,
            )
            for i in range(3)
        ]
        ranked = rank_memories(cands, scoring=Scoring(), retrieval="hybrid", now=NOW)
        assert ranked[0][0] == pos


@pytest.mark.parametrize("bad", [0, -1, True, 1.5, "2"])
def test_neighbor_reach_must_be_a_positive_int(bad: object) -> None:
    with pytest.raises(ConfigurationError, match="neighbor_reach must be an int >= 1"):
        Scoring.from_config({"neighbor_reach": bad})


def test_min_score_drops_weak_candidates() -> None:
    cands = [_cand(semantic=0.9), _cand(semantic=0.1)]
    ranked = rank_memories(cands, scoring=Scoring(), retrieval="semantic", now=NOW, min_score=0.5)
    assert [i for i, _ in ranked] == [0]


def test_keyword_terms_drop_stopwords_but_never_everything() -> None:
    assert keyword_terms("What did Caroline research?") == ["caroline", "research"]
    assert keyword_terms("who are you") == ["who", "are", "you"]
    assert keyword_terms('"x" OR y*') == ["x", "y"]  # FTS5 syntax is not passed through


def test_keyword_terms_fold_accents_and_case_like_the_keyword_index() -> None:
    assert keyword_terms("Café in Zürich?") == ["cafe", "zurich"]
    assert keyword_terms("naïve NAÏVE naive") == ["naive"]
    assert keyword_terms("cafe\u0301") == ["cafe"]  # a decomposed accent is dropped too
    assert keyword_terms("άλφα") == ["άλφα"]  # the index keeps Greek tonos: so does the query
    assert keyword_terms("snake_case") == ["snake", "case"]  # "_" separates words in FTS5
    for text in ("???", "!!!", " - ", "", "«»…"):
        assert keyword_terms(text) == [], text


def _index_words(tokenizer: str, text: str) -> list[str]:
    db = sqlite3.connect(":memory:")
    try:
        db.execute(f"CREATE VIRTUAL TABLE t USING fts5(x, tokenize='{tokenizer}')")
        db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, instance)")
        db.execute("INSERT INTO t (x) VALUES (?)", (text,))
        return [w for (w,) in db.execute("SELECT term FROM v ORDER BY offset")]
    finally:
        db.close()


# Latin, Latin-1 and Extended-A/B, IPA, combining marks, Greek (with unassigned points),
# Cyrillic, Latin Extended Additional, punctuation and digits.
_FOLD_ALPHABET = st.characters(
    codec="utf-8",
    categories=None,
    min_codepoint=0x20,
    max_codepoint=0x1EFF,
    exclude_characters="'",
)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=_FOLD_ALPHABET, max_size=20))
def test_fold_splits_and_folds_words_exactly_as_the_keyword_index(text: str) -> None:
    assert FTS_TOKENIZE.startswith("porter ")  # stemming is applied later, to each term
    assert fold(text).split() == _index_words(FTS_TOKENIZE.removeprefix("porter "), text)


def test_user_scope_compares_whole_ids_and_shares_only_facts_and_skills() -> None:
    scope = UserScope("u1")
    assert scope.allows(("users", "u1"), {}) and scope.owns(("users", "u1", "notes"))
    assert scope.allows(("users", "u1", "notes"), {"memory_type": "experience"})
    for other in (
        ("users", "u10"),
        ("users", "u"),
        ("users", "U1"),
        ("users", "u2", "users", "u1"),
    ):
        assert not scope.may_hold(other) and not scope.owns(other)
        assert not scope.allows(other, {"memory_type": "fact"})
    for shared in (("shared",), ("users",), ("org", "users")):
        assert scope.may_hold(shared) and not scope.owns(shared)
        assert scope.allows(shared, {"memory_type": "fact"})
        assert scope.allows(shared, {"memory_type": "skill"})
        assert not scope.allows(shared, {})  # an experience, by default
        assert not scope.allows(shared, {"memory_type": "preference"})
        assert not scope.allows(shared, {"memory_type": ["fact"]})
    assert scope.allows(("shared",), {}, memory_type="fact")  # the index's record decides
    assert not UserScope("u1", shared_types=()).allows(("shared",), {"memory_type": "fact"})


def test_search_options_are_validated() -> None:
    opts, rest = split_search_options({"$retrieval": "keyword", "kind": "a"})
    assert opts == {"$retrieval": "keyword"} and rest == {"kind": "a"}
    for bad in ({"$retrieval": "fuzzy"}, {"$user": ""}, {"$min_score": float("nan")}, {"$x": 1}):
        with pytest.raises(InvalidFilterError):
            split_search_options(bad)


def test_scoring_config_is_validated() -> None:
    assert Scoring.from_config(None).mode == "memory"
    assert Scoring.from_config({"mode": "similarity"}).mode == "similarity"
    for bad in (
        {"mode": "bm25"},
        {"retrieval": "fuzzy"},
        {"half_life_days": 0},
        {"importance_weight": -1},
        {"rrf_k": float("inf")},
        {"candidates": 0},
        {"context_keys": "yes"},
        {"shared_types": ["dream"]},
        {"unknown": 1},
    ):
        with pytest.raises(ConfigurationError):
            Scoring.from_config(bad)


def test_user_scope_reads_the_label_after_users() -> None:
    assert user_scope(("mem", "users", "u1", "notes"), "users") == "u1"
    assert user_scope(("mem", "shared"), "users") is None
    assert user_scope(("users",), "users") is None


def test_without_index_keys_the_one_dense_list_carries_the_whole_dense_weight() -> None:
    pool = [_cand(semantic=0.9 - i / 10, keyword=float(i)) for i in range(5)]  # no key vectors
    split = fuse(pool, Scoring(semantic_weight=0.5, context_weight=0.5), "hybrid")
    whole = fuse(pool, Scoring(semantic_weight=1.0, context_weight=0.0), "hybrid")
    assert [r for r, _, _ in split] == pytest.approx([r for r, _, _ in whole])
    # ... and dense and keyword then weigh the same: mirrored lists tie.
    assert split[0][0] == pytest.approx(split[-1][0])
