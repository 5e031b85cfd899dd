"""`ranking.bm25` scores and orders rows exactly as SQLite FTS5's `bm25()` and today's search."""

from __future__ import annotations

import math
import sqlite3
from collections import Counter
from collections.abc import Callable

from hypothesis import given, settings
from hypothesis import strategies as st

from langgraph_tiered_memory.ranking.bm25 import FTS_WEIGHTS, bm25, kept_terms, phrase_counts, rank
from langgraph_tiered_memory.ranking.terms import FTS_TOKENIZE, _fts_terms
from langgraph_tiered_memory.store.tiers.doc_mirror import DocMirror
from langgraph_tiered_memory.store.tiers.sqlite_stats import MemoryRow

# Words sharing stems (run/running/runs), a term whose PyStemmer stem is empty ("s"),
# stems PyStemmer and FTS5 spell differently ("ies"), folded letters, digits.
_WORDS = ["run", "running", "runs", "s", "ies", "cafe", "café", "2023", "june", "dog", "dogs"]
_WORDS += ["the", "a", "trip", "camping", "camped", "zürich", "x"]

_text = st.lists(st.sampled_from(_WORDS), max_size=8).map(" ".join)
_rows = st.lists(st.tuples(_text, _text, _text), min_size=1, max_size=25)
_query = st.lists(st.sampled_from(_WORDS), min_size=1, max_size=5, unique=True)


def _sqlite_ranking(rows: list[tuple[str, str, str]], terms: list[str]) -> list[tuple[int, float]]:
    db = sqlite3.connect(":memory:")
    db.execute(f"CREATE VIRTUAL TABLE f USING fts5(text, context, time, tokenize='{FTS_TOKENIZE}')")
    db.executemany(
        "INSERT INTO f (rowid, text, context, time) VALUES (?, ?, ?, ?)",
        [(i + 1, *r) for i, r in enumerate(rows)],
    )
    match = " OR ".join(f'"{t}"' for t in terms)
    weights = ", ".join(map(str, FTS_WEIGHTS))
    got = db.execute(
        f"SELECT rowid, -bm25(f, {weights}) AS s FROM f WHERE f MATCH ?"
        f" ORDER BY bm25(f, {weights})",
        (match,),
    ).fetchall()
    return [(int(r), float(s)) for r, s in got]


def _stats(rows: list[tuple[str, str, str]]) -> tuple[list[list[list[str]]], int, Counter[str]]:
    tokens = [[_fts_terms(c) for c in r] for r in rows]
    total = sum(len(c) for r in tokens for c in r)
    df: Counter[str] = Counter()
    for r in tokens:
        df.update({t for c in r for t in c})
    return tokens, total, df


def _rows_of(
    tokens: list[list[list[str]]], phrases: list[str], key: Callable[[int], str]
) -> list[tuple[str, int, int, list[int]]]:
    return [
        (key(i + 1), i + 1, sum(map(len, t)), phrase_counts(t, phrases))
        for i, t in enumerate(tokens)
    ]


@settings(max_examples=300, deadline=None)
@given(rows=_rows, terms=_query)
def test_bm25_equals_sqlite_fts5_bm25_on_every_matching_row(
    rows: list[tuple[str, str, str]], terms: list[str]
) -> None:
    expected = _sqlite_ranking(rows, terms)
    tokens, total, df = _stats(rows)
    phrases = [_fts_terms(t)[0] for t in terms]
    for rowid, score in expected:
        mine = bm25(tokens[rowid - 1], phrases, len(rows), total, df)
        assert math.isclose(mine, score, rel_tol=1e-9), (rowid, mine, score)
    ranked = rank(_rows_of(tokens, phrases, str), phrases, len(rows), total, df, 99)
    assert [int(k) for k, _ in ranked] == [r for r, _ in expected]
    assert [s for _, s in ranked] == [s for _, s in expected]


def _search_like_today(
    rows: list[tuple[str, str, str]], terms: list[str], limit: int
) -> list[tuple[str, float]]:
    tokens, total, df = _stats(rows)
    keep = kept_terms(terms, df, len(rows))
    phrases = [_fts_terms(t)[0] for t in keep]
    return rank(
        _rows_of(tokens, phrases, lambda i: f"k{i - 1}"), phrases, len(rows), total, df, limit
    )


@settings(max_examples=150, deadline=None)
@given(rows=_rows, terms=_query, limit=st.integers(1, 30))
def test_kept_terms_and_rank_reproduce_the_sqlite_keyword_search(
    rows: list[tuple[str, str, str]], terms: list[str], limit: int
) -> None:
    mirror = DocMirror(":memory:")
    try:
        memories = {
            f"k{i}": MemoryRow(a, b, c, "fact", 0.5, None, 1.0) for i, (a, b, c) in enumerate(rows)
        }
        mirror.commit("p", "n" * 32, memories=memories, docs=False)
        expected = mirror.keyword_search("p", "n" * 32, terms, limit)
    finally:
        mirror.close()
    assert _search_like_today(rows, terms, limit) == expected


def test_terms_in_half_the_rows_are_dropped_from_a_thousand_memories() -> None:
    rows = [("dog walk" if i % 2 else "cat", "", "") for i in range(1000)]
    df = {"dog": 500, "walk": 500, "cat": 500}
    assert kept_terms(["dog", "cat"], df, 999) == ["dog", "cat"]
    assert kept_terms(["dog", "cat"], df, 1000) == []
    assert kept_terms(["dog", "cat"], {"dog": 499, "cat": 500}, 1000) == ["dog"]
    mirror = DocMirror(":memory:")
    try:
        memories = {
            f"k{i}": MemoryRow(a, b, c, "fact", 0.5, None, 1.0) for i, (a, b, c) in enumerate(rows)
        }
        mirror.commit("p", "n" * 32, memories=memories, docs=False)
        assert mirror.keyword_search("p", "n" * 32, ["dog", "cat"], 5) == []
        assert _search_like_today(rows, ["dog", "cat"], 5) == []
    finally:
        mirror.close()


def test_a_term_whose_stem_is_empty_is_dropped() -> None:
    assert kept_terms(["caroline", "s"], {"carolin": 1, "s": 1}, 1) == ["caroline"]
