"""BM25 exactly as SQLite FTS5's `bm25()` scores the long tier's keyword index.

The keyword index keeps three columns per memory: its own text, the text of the memory
before it and its time in words (weights `FTS_WEIGHTS`). FTS5 scores a row with

    sum over query phrases p of  idf(p) * f * (k1 + 1) / (f + k1 * (1 - b + b * D / avgdl))

where f is the column-weighted count of p in the row, D the row's token count over all
columns, avgdl the table's tokens per row and idf(p) = log((N - n(p) + 0.5) / (n(p) + 0.5)),
set to 1e-6 when it is not positive (n(p): rows holding p). The sum is made in the same
order with the same operations as FTS5's C code, so scores are equal to the last bit (ties
stay ties). FTS5 returns the negated sum; here scores are positive, higher better.

`kept_terms` reproduces which query terms today's SQLite search keeps: a term whose
PyStemmer stem the namespace does not hold is dropped (so one whose stem is empty, like the
"s" of "Caroline's", always is), and from 1,000 memories on, terms held by at least half the
rows are dropped too. Any engine that finds candidate rows can rank them with `rank`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from itertools import chain

import numpy as np
import Stemmer

__all__ = [
    "BM25_PARAMS",
    "FTS_WEIGHTS",
    "PRUNE_FROM",
    "bm25",
    "ceiling",
    "kept_terms",
    "phrase_counts",
    "query_stems",
    "rank",
]

FTS_WEIGHTS = (1.0, 0.5, 1.0)
"""BM25 weights of the keyword index's columns: the memory's own text, the text of the
memory before it, its time in words."""

PRUNE_FROM = 1000
"""From this write position on, terms found in at least half the rows are dropped."""

_K1 = 1.2
_B = 0.75
BM25_PARAMS = (_K1, _B, *FTS_WEIGHTS)
"""k1, b and the column weights, for an engine that bounds scores itself."""
_STEMMER = Stemmer.Stemmer("porter")  # the stems today's search looks document counts up by


def query_stems(terms: Sequence[str]) -> list[str]:
    """PyStemmer's Porter stems of `terms`, by which `kept_terms` looks counts up."""
    return list(_STEMMER.stemWords(list(terms)))


def kept_terms(terms: Sequence[str], df: Mapping[str, int], last_seq: int | None) -> list[str]:
    """The distinct query terms the search matches, in query order.

    Args:
        terms: Lower-cased query words (not stemmed).
        df: Rows of the namespace holding each PyStemmer stem (`query_stems`); a stem
            held by none may be absent.
        last_seq: Highest write position in the namespace (None: no memory).
    """
    keep = []
    for term, stem in zip(terms, query_stems(terms), strict=True):
        n = df.get(stem, 0)
        if n and (last_seq is None or last_seq < PRUNE_FROM or n * 2 < last_seq):
            keep.append(term)
    return list(dict.fromkeys(keep))


def _idf(n_rows: int, hits: int) -> float:
    idf = math.log((n_rows - hits + 0.5) / (hits + 0.5))
    return 1e-6 if idf <= 0.0 else idf


def ceiling(n_rows: int, hits: int) -> float:
    """What one phrase held by `hits` of `n_rows` rows adds to a row's score, at most.

    (k1 + 1) * idf, never reached: a row holding only phrases whose ceilings sum to less
    than a score already found ranks below it.
    """
    return (_K1 + 1.0) * _idf(n_rows, hits)


def phrase_counts(columns: Sequence[Sequence[str]], phrases: Sequence[str]) -> list[int]:
    """Occurrences of each phrase in each column of a row, as `rank` takes them.

    Args:
        columns: The row's tokens per column.
        phrases: The query's phrase tokens.

    Returns:
        Phrase-major counts: the count of `phrases[i]` in column c is at
        `i * len(columns) + c`.
    """
    return [column.count(p) for p in phrases for column in columns]


def _score(
    counts: Sequence[int],
    size: int,
    idfs: Sequence[float],
    avgdl: float,
    weights: Sequence[float],
) -> float:
    # freq sums the column weights of the phrase's hits. FTS5 adds one weight per hit;
    # the weights (1 and 0.5) and the counts are small, so count * weight sums are exact.
    norm = _K1 * (1 - _B + _B * size / avgdl)
    score, i, width = 0.0, 0, len(weights)
    for idf in idfs:
        freq = 0.0
        for weight, n in zip(weights, counts[i : i + width], strict=True):
            freq += n * weight
        score += idf * ((freq * (_K1 + 1.0)) / (freq + norm))
        i += width
    return score


def bm25(
    columns: Sequence[Sequence[str]],
    phrases: Sequence[str],
    n_rows: int,
    n_tokens: int,
    df: Mapping[str, int],
    weights: Sequence[float] = FTS_WEIGHTS,
) -> float:
    """FTS5's `bm25()` of one row, negated (positive, higher is better).

    Args:
        columns: The row's tokens per column, as the index's tokenizer made them.
        phrases: The query's phrases, one token each (repeats count again, as in FTS5).
        n_rows: Rows of the table (the namespace).
        n_tokens: Tokens of all its rows and columns.
        df: Rows holding each phrase token.
        weights: Column weights.
    """
    idfs = [_idf(n_rows, df.get(p, 0)) for p in phrases]
    size = sum(len(c) for c in columns)
    return _score(phrase_counts(columns, phrases), size, idfs, n_tokens / n_rows, weights)


def rank(
    rows: Iterable[tuple[str, int, int, Sequence[int]]],
    phrases: Sequence[str],
    n_rows: int,
    n_tokens: int,
    df: Mapping[str, int],
    limit: int,
) -> list[tuple[str, float]]:
    """The `limit` best (key, score) of candidate rows holding a phrase, best first.

    Args:
        rows: (key, write position, token count over all columns, `phrase_counts`) of
            candidates; rows holding no phrase are left out, as FTS5's MATCH leaves
            them out.
        phrases: The query's phrase tokens (repeats count again, as in FTS5).
        n_rows: Rows of the namespace.
        n_tokens: Tokens of the namespace.
        df: Rows holding each phrase token.
        limit: Most results.

    Ties keep write order, as SQLite returns them. The rows are scored together with
    numpy, in the same order of the same operations as `_score` (so to the same bits).
    """
    rows = [r for r in rows if any(r[3])]
    if not rows:
        return []
    width, n = len(FTS_WEIGHTS), len(rows)
    flat = chain.from_iterable(r[3] for r in rows)
    counts = np.fromiter(flat, np.float64, n * width * len(phrases)).reshape(n, -1)
    size = np.fromiter((r[2] for r in rows), np.float64, n)
    norm = _K1 * (1 - _B + _B * size / (float(n_tokens) / float(n_rows)))
    score = np.zeros(n)
    for i, p in enumerate(phrases):
        freq = np.zeros(n)
        for c, weight in enumerate(FTS_WEIGHTS):
            freq += counts[:, i * width + c] * weight
        score += _idf(n_rows, df.get(p, 0)) * ((freq * (_K1 + 1.0)) / (freq + norm))
    order = np.lexsort((np.fromiter((r[1] for r in rows), np.int64, n), -score))
    return [(rows[i][0], float(score[i])) for i in order[: max(0, limit)]]
