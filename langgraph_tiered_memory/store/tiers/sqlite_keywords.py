"""Keyword index: one FTS5 table for every prefix and namespace, ranked per namespace.

The FTS5 table `kw` keeps each memory's own text, the text of the memory written before
it (its contextual key) and its event time in words; `kw_t` the terms FTS5 makes of them
(`toks`: each term padded with spaces, columns parted by `|`) and their number (`n`).
Each namespace has a number in `kw_ns`, beside its row and token counts; its entries have
rowids `num << 32 | seq` (`seq`: write position in `mem`), so a namespace is one rowid
range, in write order. When a memory is deleted, its successor's context column is
rewritten from its new predecessor, so the deleted text leaves the index.

BM25 must use the statistics of the memory's own namespace (row count, tokens per row,
rows holding each term), while FTS5's `bm25()` uses those of the whole table. So FTS5 only
finds the matches within the namespace's range and counts its rows holding each term;
`ranking_bm25.rank` scores the matches from their stored terms, exactly as FTS5 ranks a
table holding the namespace alone.

Files written before kept small namespaces' entries in `kw_docs` and an FTS5 table per
large namespace (`kw_own`, `kw_retired`; older ones a table per namespace): opening such a
file copies their entries into `kw` and drops them, in one transaction (`_convert`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from langgraph_tiered_memory.ranking_bm25 import ceiling, kept_terms, query_stems, rank
from langgraph_tiered_memory.ranking_terms import FTS_TOKENIZE, fts_terms_many
from langgraph_tiered_memory.store.tiers.sqlite_db import SqliteFile, ident, marks
from langgraph_tiered_memory.store.tiers.sqlite_stats import MemoryRow, MemoryTable

__all__ = ["KeywordIndex"]

logger = logging.getLogger("langgraph_tiered_memory.store.tiers.sqlite_keywords")

_SPAN = 1 << 32
"""Rowids of one namespace: `num * _SPAN + seq`."""

_SEP = "|"  # between the columns' terms in `toks`: a separator, so never inside a term

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS kw_ns (
    num INTEGER PRIMARY KEY, prefix TEXT NOT NULL, nsid TEXT NOT NULL,
    rows INTEGER NOT NULL DEFAULT 0, tokens INTEGER NOT NULL DEFAULT 0,
    UNIQUE (prefix, nsid)
);
CREATE VIRTUAL TABLE IF NOT EXISTS kw USING fts5(text, context, time, tokenize='{FTS_TOKENIZE}');
CREATE TABLE IF NOT EXISTS kw_t (rowid INTEGER PRIMARY KEY, toks TEXT NOT NULL, n INTEGER NOT NULL);
"""

_OLD = (
    "SELECT name, sql FROM sqlite_master WHERE type='table' AND (name IN ('kw_docs',"
    " 'kw_own', 'kw_retired') OR (name LIKE 'fts\\_%' ESCAPE '\\' AND sql LIKE 'CREATE"
    " VIRTUAL TABLE%'))"
)
"""Tables of the earlier layouts (FTS5 ones, not their shadow tables)."""

_NONE = (0, 0, 0)  # a phrase's counts in the three columns of a row not holding it


class KeywordIndex:
    """The keyword entries of every namespace. Methods run with the file's lock held.

    Args:
        db: The shared file (an older layout in it is converted here).
        memories: The statistics table whose rows the index entries belong to.
    """

    def __init__(self, db: SqliteFile, memories: MemoryTable) -> None:
        db.create(_SCHEMA)
        self._c = db.conn
        self._mem = memories
        if self._c.execute(_OLD).fetchone() is not None:
            with db.transaction(immediate=True):
                self._convert()

    def _ns(self, prefix: str, nsid: str) -> tuple[int, int, int] | None:
        """(first rowid, rows, tokens) of a namespace that has had entries."""
        row = self._c.execute(
            "SELECT num, rows, tokens FROM kw_ns WHERE prefix=? AND nsid=?", (prefix, nsid)
        ).fetchone()
        return None if row is None else (int(row[0]) * _SPAN, int(row[1]), int(row[2]))

    def _base(self, prefix: str, nsid: str) -> int:
        """First rowid of the namespace (numbered now if it has none)."""
        self._c.execute("INSERT OR IGNORE INTO kw_ns (prefix, nsid) VALUES (?, ?)", (prefix, nsid))
        return self._ns(prefix, nsid)[0]  # type: ignore[index]

    # ------------------------------------------------------------------ writes
    def write(
        self, prefix: str, nsid: str, rows: Mapping[str, MemoryRow], deletes: Sequence[str]
    ) -> None:
        """Upsert memories (statistics rows and entries), drop `deletes` not among them."""
        gone = self._mem.remove(prefix, nsid, [k for k in deletes if k not in rows])
        if gone:  # each successor written with a context gets its new predecessor's text
            base = self._base(prefix, nsid)
            self._drop([base + seq for _, seq in gone])
            nexts = {n[0]: n for n in (self._next_after(base, s) for _, s in gone) if n and n[2]}
            for rowid, text, _, time in nexts.values():
                self._put([(rowid, text, self._text_before(base, rowid - base) or "", time)])
        if rows:
            seqs = self._mem.upsert(prefix, nsid, rows)
            base = self._base(prefix, nsid)
            self._put([(base + seqs[k], r.text, r.context, r.time_text) for k, r in rows.items()])

    def _put(self, entries: Sequence[tuple[int, str, str, str]]) -> None:
        """Write (rowid, text, context, time) entries, replacing those with their rowids."""
        self._drop([e[0] for e in entries])
        terms = fts_terms_many([text for e in entries for text in e[1:]])
        rows = []
        for i, entry in enumerate(entries):
            cols = terms[3 * i : 3 * i + 3]
            toks = _SEP.join("".join(f" {t} " for t in c) for c in cols)
            rows.append((entry[0], toks, sum(map(len, cols))))
        self._c.executemany("INSERT INTO kw (rowid, text, context, time) VALUES (?, ?, ?, ?)",
                            entries)  # fmt: skip
        self._c.executemany("INSERT INTO kw_t (rowid, toks, n) VALUES (?, ?, ?)", rows)
        self._count([(r[0], 1, r[-1]) for r in rows])

    def _drop(self, rowids: Sequence[int]) -> None:
        if len(rowids) > 500:  # bound the `IN (...)` list
            self._drop(rowids[500:])
            rowids = rowids[:500]
        sizes = self._c.execute(
            f"SELECT rowid, n FROM kw_t WHERE rowid IN ({marks(len(rowids))})", rowids
        ).fetchall()
        for table in ("kw", "kw_t"):
            self._c.executemany(f"DELETE FROM {table} WHERE rowid=?", [(r,) for r, _ in sizes])
        self._count([(r, -1, -n) for r, n in sizes])

    def _count(self, changes: Iterable[tuple[int, int, int]]) -> None:
        """Add each (rowid, rows, tokens) to the counts of the entry's namespace."""
        self._c.executemany("UPDATE kw_ns SET rows = rows + ?, tokens = tokens + ? WHERE num=?",
                            [(n, t, r // _SPAN) for r, n, t in changes])  # fmt: skip

    # ------------------------------------------------------------------ erasure
    def erase(self, prefix: str, nsid: str) -> None:
        """Drop a namespace's entries and statistics rows (inside a transaction).

        The deleted terms stay in the FTS5 index segments until `optimize`.
        """
        found = self._ns(prefix, nsid)
        if found is not None:
            base = found[0]
            for table in ("kw", "kw_t"):
                self._c.execute(f"DELETE FROM {table} WHERE rowid BETWEEN ? AND ?",
                                (base, base + _SPAN - 1))  # fmt: skip
            self._c.execute("DELETE FROM kw_ns WHERE num=?", (base // _SPAN,))
        self._c.execute("DELETE FROM mem WHERE prefix=? AND nsid=?", (prefix, nsid))

    def optimize(self) -> None:
        """Merge the index segments of `kw`, so deleted terms leave the file."""
        self._c.execute("INSERT INTO kw (kw) VALUES ('optimize')")

    # ------------------------------------------------------------------ reads
    def search(
        self, prefix: str, nsid: str, terms: Sequence[str], limit: int
    ) -> list[tuple[str, float]]:
        """BM25 search of one namespace for any of `terms` (see `DocMirror.keyword_search`)."""
        found = self._ns(prefix, nsid)
        if limit <= 0 or not terms or found is None or not found[1]:
            return []
        base, n_rows, n_tokens = found
        span = (base, base + _SPAN - 1)
        terms = list(dict.fromkeys(terms))
        firsts = fts_terms_many(terms)
        df: dict[str, int] = {}  # rows of the namespace holding each term
        count = "SELECT count(*) FROM kw WHERE kw MATCH ? AND rowid BETWEEN ? AND ?"
        for term, first in zip(terms, firsts, strict=True):
            if first and first[0] not in df:
                df[first[0]] = self._c.execute(count, (f'"{term}"', *span)).fetchone()[0]
        for stem in query_stems(terms):  # `kept_terms` looks counts up by these
            if stem and stem not in df:  # one FTS5 would stem otherwise (rare): scan
                df[stem] = self._c.execute(
                    "SELECT count(*) FROM kw_t WHERE rowid BETWEEN ? AND ? AND instr(toks, ?)",
                    (*span, f" {stem} "),
                ).fetchone()[0]
        keep = set(kept_terms(terms, df, self._mem.last_seq(prefix, nsid)))
        kept = [(t, f[0]) for t, f in zip(terms, firsts, strict=True) if t in keep and f]
        if not kept:
            return []
        phrases = [p for _, p in kept]
        padded = [f" {p} " for p in phrases]
        # Rarest phrases first; the rows not fetched yet hold only the phrases left, so
        # once those cannot lift a row to the limit-th score, the ranking is final.
        kept.sort(key=lambda tp: df[tp[1]])
        ceilings = [ceiling(n_rows, df[p]) for _, p in kept]
        rows: dict[int, tuple[str, int, int, list[int]]] = {}
        for i, (term, _) in enumerate(kept):
            if len(rows) >= limit:
                top = rank(rows.values(), phrases, n_rows, n_tokens, df, limit)
                if top[-1][1] >= sum(ceilings[i:]):
                    break
            for rowid, toks, size in self._c.execute(
                "SELECT t.rowid, t.toks, t.n FROM kw JOIN kw_t AS t ON t.rowid = kw.rowid"
                " WHERE kw MATCH ? AND kw.rowid BETWEEN ? AND ?",
                (f'"{term}"', *span),
            ):
                if rowid not in rows:
                    columns = toks.split(_SEP)
                    counts = [  # as `phrase_counts`
                        n
                        for p in padded
                        for n in ([c.count(p) for c in columns] if p in toks else _NONE)
                    ]
                    rows[rowid] = (str(rowid), rowid, size, counts)
        top = rank(rows.values(), phrases, n_rows, n_tokens, df, limit)
        keys = self._mem.keys_at(prefix, nsid, [int(r) - span[0] for r, _ in top])
        return [(keys[int(r) - span[0]], score) for r, score in top if int(r) - span[0] in keys]

    def context_successors(
        self, prefix: str, nsid: str, keys: Sequence[str], skip: Iterable[str]
    ) -> list[str]:
        """Memories right after `keys` that carry a context key, less `keys` and `skip`."""
        found = self._ns(prefix, nsid)
        if found is None:
            return []
        base = found[0]
        nxt = [self._next_after(base, seq) for seq in self._mem.seqs(prefix, nsid, keys)]
        seqs = [n[0] - base for n in nxt if n is not None and n[2]]
        gone = {*keys, *skip}
        by_seq = self._mem.keys_at(prefix, nsid, seqs)
        return list(dict.fromkeys(by_seq[s] for s in seqs if s in by_seq and by_seq[s] not in gone))

    def previous_text(self, prefix: str, nsid: str, key: str) -> str | None:
        """Own text of the memory written just before `key` (or the last one, when new)."""
        found = self._ns(prefix, nsid)
        if found is None:
            return None
        seqs = self._mem.seqs(prefix, nsid, [key])
        return self._text_before(found[0], seqs[0] if seqs else _SPAN)

    def _next_after(self, base: int, seq: int) -> Any:
        """(rowid, text, context, time) of the entry written right after `seq`, or None."""
        return self._c.execute(
            "SELECT rowid, text, context, time FROM kw WHERE rowid > ? AND rowid < ?"
            " ORDER BY rowid LIMIT 1",
            (base + seq, base + _SPAN),
        ).fetchone()

    def _text_before(self, base: int, seq: int) -> str | None:
        """Own text of the entry written right before `seq`."""
        row = self._c.execute(
            "SELECT text FROM kw WHERE rowid >= ? AND rowid < ? ORDER BY rowid DESC LIMIT 1",
            (base, base + seq),
        ).fetchone()
        return None if row is None else str(row[0])

    # ------------------------------------------------------------------ older layouts
    def _convert(self) -> None:
        """Copy the entries of the earlier layouts' tables into `kw`, then drop those tables.

        In the caller's transaction: a crash leaves the old tables whole, to convert at
        the next open. A memory's entry comes from its home (`kw_docs`, a table of
        `kw_own`), else from another FTS5 table holding its rowid (of a prefix 9e8229f
        did not move yet); retired tables are only dropped.
        """
        old = dict(self._c.execute(_OLD).fetchall())
        if not old:  # another process converted the file meanwhile
            return
        lower = {name.lower(): name for name in old}

        def listed(table: str) -> list[str]:
            names = self._c.execute(f"SELECT name FROM {table}") if table in old else []
            return [lower[str(n).lower()] for (n,) in names if str(n).lower() in lower]

        skip = set(listed("kw_retired"))
        fts = sorted(n for n, sql in old.items() if "fts5(" in sql.lower() and n not in skip)
        sources = (["kw_docs"] if "kw_docs" in old else []) + listed("kw_own") + fts
        done: set[int] = set()
        bases: dict[tuple[str, str], int] = {}
        for source in dict.fromkeys(sources):
            entries = []
            for rid, prefix, nsid, seq, *texts in self._c.execute(
                "SELECT m.rid, m.prefix, m.nsid, m.seq, s.text, s.context, s.time"
                f" FROM {ident(source)} AS s JOIN mem AS m ON m.rid = s.rowid"
            ).fetchall():
                if rid in done:
                    continue
                done.add(rid)
                if (prefix, nsid) not in bases:
                    bases[(prefix, nsid)] = self._base(prefix, nsid)
                entries.append((bases[(prefix, nsid)] + seq, *(t or "" for t in texts)))
            for at in range(0, len(entries), 500):
                self._put(entries[at : at + 500])
        for name in sorted(old, key=lambda n: "fts5vocab" not in old[n].lower()):
            self._c.execute(f"DROP TABLE IF EXISTS {ident(name)}")
        logger.info("keyword index converted to one table: %d entries of %d namespaces, %d old"
                    " tables dropped", len(done), len(bases), len(old))  # fmt: skip
