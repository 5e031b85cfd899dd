"""Keyword-index terms of a text, exactly as the long tier's FTS5 index makes them.

Query terms (`keyword_terms`) and the terms a triple shares with a query
(`index_terms`) must fold and stem like the index itself, so both go through the
index's own tokenizer in an in-memory SQLite. Nothing here touches a store.
"""

from __future__ import annotations

import functools
import sqlite3
import threading
from collections.abc import Sequence

__all__ = ["FTS_TOKENIZE", "fold", "fts_terms_many", "index_terms", "keyword_terms"]

FTS_TOKENIZE = "porter unicode61 remove_diacritics 2"
"""The keyword index's FTS5 tokenizer: Porter stems over Unicode words, diacritics folded."""

# Short function words that carry no topic (query side only; documents keep them so
# phrase structure and BM25 length normalisation stay intact).
_STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it
    its itself just me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself
    yourselves""".split()
)
_FOLD_LOCK = threading.Lock()
_fold_db: sqlite3.Connection | None = None


def _fts_terms(text: str) -> list[str]:
    """The terms the keyword index's tokenizer makes of `text`, in order."""
    return fts_terms_many([text])[0]


def fts_terms_many(texts: Sequence[str]) -> list[list[str]]:
    """The terms of each of `texts`, as `_fts_terms` makes them, in one SQLite pass."""
    global _fold_db
    with _FOLD_LOCK:
        if _fold_db is None:
            db = sqlite3.connect(":memory:", check_same_thread=False)
            db.execute(
                f"CREATE VIRTUAL TABLE fold USING fts5(t, content='', tokenize='{FTS_TOKENIZE}')"
            )
            db.execute("CREATE VIRTUAL TABLE fold_terms USING fts5vocab(fold, instance)")
            _fold_db = db
        _fold_db.execute("INSERT INTO fold (fold) VALUES ('delete-all')")  # contentless: fast
        _fold_db.executemany("INSERT INTO fold (rowid, t) VALUES (?, ?)", enumerate(texts, 1))
        out: list[list[str]] = [[] for _ in texts]
        for doc, term in _fold_db.execute("SELECT doc, term FROM fold_terms ORDER BY doc, offset"):
            out[doc - 1].append(term)
        return out


@functools.lru_cache(maxsize=8192)
def _fold_char(ch: str) -> str:
    """One character as the keyword index's tokenizer folds it.

    Returns its folded form, `""` for a mark the tokenizer drops inside a word
    (a combining accent), or `" "` for a separator.
    """
    if ch.isascii():
        return ch.lower() if ch.isalnum() else " "
    # Between two x's: one token "x?x" means ch is part of words; two mean a separator.
    terms = _fts_terms(f"x{ch}x")
    if len(terms) == 1 and terms[0].startswith("x") and terms[0].endswith("x"):
        return terms[0][1:-1]
    return " "


@functools.lru_cache(maxsize=8192)
def index_terms(text: str) -> frozenset[str]:
    """The distinct terms the keyword index makes of `text`: folded, Porter-stemmed.

    `"camping trips"` and `"camped"` share the term `camp`, as they do in BM25.
    """
    return frozenset(_fts_terms(text))


def fold(text: str) -> str:
    """Fold case and diacritics of `text` exactly as the keyword index does.

    Each character goes through the index's own FTS5 tokenizer (`unicode61
    remove_diacritics 2`, in an in-memory SQLite, cached per character), so
    `"Café Zürich"` becomes `"cafe zurich"` while what the index keeps (Greek
    tonos, `ß`, ligatures) is kept too; a fold by Unicode decomposition alone
    differs from the index on hundreds of letters. Separators (punctuation,
    symbols, `_`) become spaces, so the index's words are `fold(text).split()`.
    """
    return "".join(_fold_char(ch) for ch in text)


def keyword_terms(text: str) -> list[str]:
    """The keyword-search terms of a query: its distinct content words, folded.

    Words are folded like the index folds them (`fold`: lower case, no
    diacritics), so `café` finds `cafe` and `Cafe`. Stopwords are dropped (all of
    them when the query has nothing else). The index's Porter stemming applies to
    each term; they are quoted, so FTS5 operators in user text are taken literally.
    A text without letters or digits (`"???"`) has no terms.
    """
    words = fold(text).split()
    terms = list(dict.fromkeys(w for w in words if w not in _STOPWORDS))
    return terms or list(dict.fromkeys(words))
